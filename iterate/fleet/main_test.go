package fleet_test

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
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		if os.Getenv(noopEnv) != "" {
			os.Exit(noopMain())
		}
		os.Exit(workerMain())
	}
	goleak.VerifyTestMain(m,
		// pgx's pool health check and River's background goroutines end
		// asynchronously after Close/Stop.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("github.com/jackc/puddle/v2.(*Pool[...]).Acquire.func1"),
	)
}

// serverURL returns the test server's URL, skipping the test without one
// unless a server is required (REFINE_PG_REQUIRED or CI set).
func serverURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("REFINE_PG_URL")
	if url == "" {
		if os.Getenv("REFINE_PG_REQUIRED") != "" || os.Getenv("CI") != "" {
			t.Fatal("REFINE_PG_URL is not set, and a server is required")
		}
		t.Skip("REFINE_PG_URL not set: start a server with `source .ci/postgres.sh`")
	}
	return url
}

// newPool opens a pool on the test server, closed at the test's end.
func newPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newSchema returns the name of a schema of the test's own, dropped at its
// end.
func newSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	name := "fleet_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
	})
	return name
}
