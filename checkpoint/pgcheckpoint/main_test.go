package pgcheckpoint_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

// Environment of the tests.
const (
	// urlEnv names the server the tests use (a connection URL); .ci/run
	// sets it, through .ci/postgres.sh. urlAliasEnv is read when it is
	// unset.
	urlEnv      = "REFINE_PG_URL"
	urlAliasEnv = "REFINE_TEST_POSTGRES"
	// requiredEnv=1 (or CI set) makes a missing server a failure, not a
	// skip.
	requiredEnv = "REFINE_PG_REQUIRED"
	// helperEnv, when set, makes the test binary a child process of
	// TestKilledHolder (see TestHelperHolder).
	helperEnv = "REFINE_PG_HELPER"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		// A child process: it is killed, never returns; no goleak.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// serverURL returns the test server's URL, skipping the test when there is
// none, or failing it when one is required.
func serverURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(urlEnv)
	if url == "" {
		url = os.Getenv(urlAliasEnv)
	}
	if url == "" {
		msg := "no PostgreSQL server: set " + urlEnv + " to a connection URL (or source .ci/postgres.sh, which starts a throwaway server and sets it)"
		if os.Getenv(requiredEnv) == "1" || os.Getenv("CI") != "" {
			t.Fatal(msg + "; a server is required here (" + requiredEnv + "=1 or CI set)")
		}
		t.Skip(msg)
	}
	return url
}

// newPool connects to the test server; the pool is closed when t ends.
func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := serverURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", urlEnv, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		t.Fatalf("connecting to %s: %v", urlEnv, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newSchema returns the name of a schema of its own for t, dropped when t
// ends.
func newSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "refine_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// newStore returns a store in a schema of its own, with its leases
// released when t ends.
func newStore(t testing.TB, opts ...pgcheckpoint.Option) *pgcheckpoint.Store {
	t.Helper()
	pool := newPool(t)
	return openStore(t, pool, newSchema(t, pool), opts...)
}

// openStore returns a store on pool in schema, with its leases released
// when t ends.
func openStore(t testing.TB, pool *pgxpool.Pool, schema string, opts ...pgcheckpoint.Option) *pgcheckpoint.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := pgcheckpoint.New(ctx, pool, append([]pgcheckpoint.Option{pgcheckpoint.Schema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// eventually polls cond every 20ms until it returns true or the deadline
// passes, then fails t with what.
func eventually(t testing.TB, deadline time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("after %v: %s", deadline, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
