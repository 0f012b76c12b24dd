package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/view"
)

// BenchmarkPostgresPages serves the first page of the list and the page
// of one session, "target" (a toy loop's, every generation kept as the
// store keeps them), of a pgcheckpoint store of 100 sessions and of many
// (VIEW_BENCH_SESSIONS, 10,000 by default; BENCHMARKS.md gives 100,000:
// the fixture is one INSERT … SELECT of copies of one envelope-only
// checkpoint, a few seconds at 100,000). Issue 31, item 10: server time
// within 2× of 100 sessions, a page bounded in bytes.
func BenchmarkPostgresPages(b *testing.B) {
	url := serverURL(b)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	schema := "viewer_bench_" + hex.EncodeToString(rb[:])
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			b.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	store, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema))
	if err != nil {
		b.Fatal(err)
	}
	res, err := iterate.New(worker{}, iterate.WithCheckpointer(store), iterate.WithSession("target")).Run(ctx, state{})
	if res == nil {
		b.Fatal(err)
	}
	if err := store.Save(ctx, &checkpoint.Checkpoint{Session: "proto", Generation: 1, Status: "converged",
		Iteration: 5, Reason: "done", Time: time.Now()}); err != nil {
		b.Fatal(err)
	}
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("VIEW_BENCH_SESSIONS")); err == nil && v > 100 {
		n = v
	}
	table := pgx.Identifier{schema, "checkpoints"}.Sanitize()
	have := 2
	for _, size := range []int{100, n} {
		// Copies of proto, s0000000…, up to size sessions in all.
		if _, err := pool.Exec(ctx, `INSERT INTO `+table+`
			SELECT (jsonb_populate_record(c, jsonb_build_object('session', 's' || lpad(i::text, 7, '0')))).*
			FROM `+table+` c, generate_series($1::int, $2::int) i WHERE c.session = 'proto'`, have, size-1); err != nil {
			b.Fatal(err)
		}
		have = size
		if _, err := pool.Exec(ctx, `ANALYZE `+table); err != nil {
			b.Fatal(err)
		}
		h, err := view.New(store)
		if err != nil {
			b.Fatal(err)
		}
		for _, page := range []struct{ name, path string }{{"list", "/"}, {"session", "/session/target"}} {
			b.Run(fmt.Sprintf("page=%s/sessions=%d", page.name, size), func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, "http://localhost"+page.path, nil)
				bytes := 0
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d %s", page.path, rec.Code, rec.Body)
					}
					bytes = rec.Body.Len()
				}
				b.ReportMetric(float64(bytes), "bytes/page")
			})
		}
	}
}
