package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	neturl "net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

// Environment of the PostgreSQL tests, as for checkpoint/pgcheckpoint and
// examples/fleet.
const (
	// pgURLEnv names the server (a connection URL); .ci/run sets it
	// through .ci/postgres.sh.
	pgURLEnv = "REFINE_PG_URL"
	// pgRequiredEnv=1 makes a missing server a failure, not a skip. (CI
	// alone does not: .ci/run also runs these tests from a fresh clone
	// before it starts a server.)
	pgRequiredEnv = "REFINE_PG_REQUIRED"
)

// pgURL returns the test server's URL, skipping the test when there is
// none, or failing it when one is required.
func pgURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(pgURLEnv)
	if u == "" {
		msg := "no PostgreSQL server: set " + pgURLEnv + " to a connection URL (or source .ci/postgres.sh, which starts a throwaway server and sets it)"
		if os.Getenv(pgRequiredEnv) == "1" {
			t.Fatal(msg + "; a server is required here (" + pgRequiredEnv + "=1)")
		}
		t.Skip(msg)
	}
	return u
}

// withPassword returns rawURL with a password in its user information:
// its own, or a made-up one, which a server that trusts its loopback
// clients (.ci/postgres.sh) ignores, so that the tests can check that no
// output holds it.
func withPassword(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.User == nil {
		return rawURL
	}
	if _, ok := u.User.Password(); ok {
		return rawURL
	}
	u.User = neturl.UserPassword(u.User.Username(), "not-to-be-printed-"+hex.EncodeToString([]byte(t.Name()))[:8])
	return u.String()
}

// pgSession returns a session name of t's own, removed from the server's
// store when t ends.
func pgSession(t *testing.T, url string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	session := "research-pg-test-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer pool.Close()
		store, err := pgcheckpoint.New(ctx, pool)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer store.Close()
		if err := store.Remove(ctx, session); err != nil {
			t.Errorf("cleanup: removing session %s: %v", session, err)
		}
	})
	return session
}

// pgArgs returns the flags that run a fixture scenario of testdata with
// its sessions kept in the PostgreSQL store at url.
func pgArgs(name, url, session string) []string {
	return []string{"--root", "testdata/" + name + "/src", "--questions", "testdata/" + name + "/questions.txt", "--store", url, "--session", session}
}

// TestPostgresInterruptAndResume: with --store postgres://..., Ctrl+C in
// the middle of iteration 2 saves the state of iteration 1 in the
// database and exits 130; --resume with the same store continues there and
// ends exactly where an uninterrupted run (in a checkpoint directory) ends.
func TestPostgresInterruptAndResume(t *testing.T) {
	url := withPassword(t, pgURL(t))
	session := pgSession(t, url)
	args := pgArgs("5_early", url, session)
	// The citation agent of iteration 2 hangs until it is killed.
	out := interruptInIteration2(t, args)
	where := redactURL(url)
	if u, _ := neturl.Parse(url); u != nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" && strings.Contains(out, pw) {
			t.Errorf("the output holds the password:\n%s", out)
		}
	}
	for _, w := range []string{
		"Session: " + session + " (sessions kept in " + where + ")",
		"⏸️  Interrupted after 1 completed iteration(s). State saved in " + where + " (session " + session + ")",
		"Resume with: research --root testdata/5_early/src",
	} {
		if !hasLine(out, w) {
			t.Errorf("no %q in:\n%s", w, out)
		}
	}

	resumed, rr := runJSON(t, nil, append(args, "--resume")...)
	if rr.code != exitOK {
		t.Fatalf("resume exit %d: %s", rr.code, rr.stderr)
	}
	if !hasLine(rr.stderr, "↩️  Resuming session "+session) || !hasLine(rr.stderr, "after iteration 1 of 4") {
		t.Errorf("no resume display:\n%s", rr.stderr)
	}
	if strings.Contains(rr.stderr, "🔄 Iteration 1 ") {
		t.Errorf("the resumed run repeated iteration 1:\n%s", rr.stderr)
	}
	if resumed.StateDir != where {
		t.Errorf("the report's state_dir is %q, want %q", resumed.StateDir, where)
	}
	straight, _ := runJSON(t, nil, scenarioArgs(t, "5_early", t.TempDir(), "--session", session)...)
	if diff := cmp.Diff(straight, resumed, ignoreTiming()); diff != "" {
		t.Errorf("interrupted+resumed run in PostgreSQL differs from an uninterrupted one (-straight +resumed):\n%s", diff)
	}

	// Resuming the finished session prints its report without iterating.
	again, ar := runJSON(t, nil, append(args, "--resume")...)
	if strings.Contains(ar.stderr, "Refinement Analysis") {
		t.Errorf("resuming a finished session iterated:\n%s", ar.stderr)
	}
	if again.Status != "early_exit" || again.Iterations != 2 || len(again.Findings) != len(straight.Findings) {
		t.Errorf("finished session: %s after %d iterations with %d findings", again.Status, again.Iterations, len(again.Findings))
	}
}

// TestPostgresResumeWithoutCheckpoint: --resume of a session the database
// does not have says so, naming the store without a password.
func TestPostgresResumeWithoutCheckpoint(t *testing.T) {
	url := pgURL(t)
	session := pgSession(t, url)
	r := runBinary(t, nil, append(pgArgs("1_single", url, session), "--resume")...)
	if r.code != exitError {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitError, r.stderr)
	}
	if want := "no checkpoint of session " + session + " in " + redactURL(url); !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
}

// TestPostgresUnreachable: a server that does not answer is an error that
// names the store.
func TestPostgresUnreachable(t *testing.T) {
	url := "postgres://nobody:secret@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"
	r := runBinary(t, nil, append(pgArgs("1_single", url, "research-unreachable"), "--resume")...)
	if r.code != exitError {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitError, r.stderr)
	}
	if !strings.Contains(r.stderr, "--store postgres://nobody@127.0.0.1:1/none") || strings.Contains(r.stderr, "secret") {
		t.Errorf("stderr does not name the store without its password:\n%s", r.stderr)
	}
}
