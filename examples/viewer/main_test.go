package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// Environment of the PostgreSQL tests, as for checkpoint/pgcheckpoint.
const (
	urlEnv      = "REFINE_PG_URL"
	requiredEnv = "REFINE_PG_REQUIRED"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A toy loop saves the sessions served: it reads a file per iteration
// (coverage) and spends tokens.

type state struct {
	Read int `json:"read"`
}

type worker struct{}

func (worker) Assess(_ context.Context, s state) (gap.Assessment, error) {
	a := gap.Assessment{FilesAnalyzed: s.Read, EstimatedFiles: 4}
	for i := s.Read; i < 4; i++ {
		a.Missing = append(a.Missing, fmt.Sprintf("f%d.go", i))
	}
	return a, nil
}

func (worker) Work(context.Context, state, iterate.Task) (iterate.Outcome[state], error) {
	return iterate.Outcome[state]{Part: state{Read: 1}, Usage: budget.Usage{Tokens: 300, Calls: 1}}, nil
}

func (worker) Integrate(_ context.Context, s state, outs []iterate.Outcome[state]) (state, error) {
	for _, o := range outs {
		if o.Err == nil {
			s.Read = min(s.Read+o.Part.Read, 4)
		}
	}
	return s, nil
}

// runLoop runs the toy loop as session in store, escalating with a
// question after two iterations when escalate is set.
func runLoop(t *testing.T, store iterate.Checkpointer, session string, escalate bool) {
	t.Helper()
	opts := []iterate.Option{iterate.WithCheckpointer(store), iterate.WithSession(session),
		iterate.WithBudget(budget.Limits{Tokens: 10000})}
	if escalate {
		opts = append(opts, iterate.WithMaxIterations(2), iterate.WithConvergence(converge.IterationLimit{Escalate: true}))
	}
	res, err := iterate.New(worker{}, opts...).Run(context.Background(), state{})
	if res == nil {
		t.Fatal(err)
	}
}

// server runs the command with args until the test ends and returns its
// base URL.
func server(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out, &errOut, func(a string) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("exit %d: %s", code, errOut.String())
		}
	})
	select {
	case a := <-addr:
		if !strings.Contains(out.String(), "serving http://"+a+"/") {
			t.Errorf("stdout %q", out.String())
		}
		return "http://" + a
	case code := <-done:
		done <- code
		t.Fatalf("exit %d before serving: %s", code, errOut.String())
	}
	return ""
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fetch GETs url and returns its status and body.
func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "give one of --dir and --db"},
		{"both", []string{"--dir", dir, "--db", "postgres://x"}, "give one of --dir and --db"},
		{"not_a_dir", []string{"--dir", file}, "is not a directory"},
		{"schema_with_dir", []string{"--dir", dir, "--schema", "s"}, "go with --db"},
		{"answers_without_fleet", []string{"--db", "postgres://x", "--answers"}, "--answers needs --fleet-schema"},
		{"extend_without_fleet", []string{"--dir", dir, "--extend"}, "--extend needs --fleet-schema"},
		{"riverui_without_fleet", []string{"--db", "postgres://x", "--riverui"}, "--riverui needs --fleet-schema"},
		// riverui keeps the viewer's loopback default.
		{"riverui_every_interface", []string{"--db", "postgres://x", "--fleet-schema", "s", "--riverui", "--addr", ":8080"}, "not a loopback address"},
		{"every_interface", []string{"--dir", dir, "--addr", ":8080"}, "listens on every interface, not a loopback address"},
		{"remote", []string{"--dir", dir, "--addr", "192.0.2.1:80"}, "add --allow-remote"},
		{"arguments", []string{"--dir", dir, "x"}, "unexpected arguments"},
		{"empty_metric", []string{"--dir", dir, "--metric", " "}, "an empty metric name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(context.Background(), tt.args, &out, &errOut, nil); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tt.want)
			}
		})
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:80", "localhost:8080"} {
		if err := checkAddr(addr, false); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := checkAddr("0.0.0.0:0", true); err != nil {
		t.Errorf("--allow-remote: %v", err)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	runLoop(t, checkpoint.NewDir(dir), "done", false)
	runLoop(t, checkpoint.NewDir(dir), "asked", true)
	base := server(t, "--dir", dir)
	code, body := fetch(t, base+"/")
	if code != http.StatusOK || !strings.Contains(body, `data-session="done"`) || !strings.Contains(body, `data-session="asked"`) {
		t.Fatalf("listing: %d %s", code, body)
	}
	code, body = fetch(t, base+"/session/asked")
	if code != http.StatusOK || !strings.Contains(body, `id="question"`) || !strings.Contains(body, `id="timeline"`) {
		t.Fatalf("session: %d %s", code, body)
	}
	if strings.Contains(body, `<form id="answer"`) {
		t.Error("an answer form over a directory")
	}
	if code, _ := fetch(t, base+"/session/nosuch"); code != http.StatusNotFound {
		t.Errorf("unknown session: %d", code)
	}
}

// TestMetricFlag: --metric declares a session page's charts, in order,
// coverage with the loop's threshold and any other metric without one;
// without it the page charts what the loop recorded.
func TestMetricFlag(t *testing.T) {
	dir := t.TempDir()
	runLoop(t, checkpoint.NewDir(dir), "done", false)
	charts := func(args ...string) []string {
		t.Helper()
		base := server(t, append([]string{"--dir", dir}, args...)...)
		code, body := fetch(t, base+"/session/done")
		if code != http.StatusOK {
			t.Fatalf("session: %d %s", code, body)
		}
		var out []string
		for _, m := range regexp.MustCompile(`<svg class="chart"[^>]* data-metric="([^"]*)"[^>]*?( data-threshold="[^"]*")?>`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1]+m[2])
		}
		return out
	}
	if got, want := fmt.Sprint(charts("--metric", "coverage", "--metric", "tokens", "--metric", "gaps:coverage")),
		`[coverage data-threshold="0.7" tokens gaps:coverage]`; got != want {
		t.Errorf("charts %s, want %s", got, want)
	}
	// The toy loop measures coverage, and no confidence.
	if got := charts(); len(got) == 0 || got[0] != `coverage data-threshold="0.7"` || slices.Contains(got, "confidence") {
		t.Errorf("default charts %q", got)
	}
}

// serverURL returns the test server's URL, skipping the test when there is
// none, or failing it when one is required.
func serverURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(urlEnv)
	if url == "" {
		msg := "no PostgreSQL server: set " + urlEnv + " to a connection URL (or source .ci/postgres.sh)"
		if os.Getenv(requiredEnv) == "1" || os.Getenv("CI") != "" {
			t.Fatal(msg + "; a server is required here (" + requiredEnv + "=1 or CI set)")
		}
		t.Skip(msg)
	}
	return url
}

func TestPostgres(t *testing.T) {
	url := serverURL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "viewer_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	store, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	runLoop(t, store, "pg-done", false)
	runLoop(t, store, "pg-asked", true)
	base := server(t, "--db", url, "--schema", schema)
	code, body := fetch(t, base+"/?status=escalated")
	if code != http.StatusOK || !strings.Contains(body, `data-session="pg-asked"`) || strings.Contains(body, `data-session="pg-done"`) {
		t.Fatalf("listing: %d %s", code, body)
	}
	code, body = fetch(t, base+"/session/pg-done")
	if code != http.StatusOK || !strings.Contains(body, "converged") || !strings.Contains(body, `id="generations"`) {
		t.Fatalf("session: %d %s", code, body)
	}
	maybeScreenshot(t, "postgres-listing.png", base+"/")
}
