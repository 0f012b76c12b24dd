package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Rule: workers starting together on a fresh schema all create or find the
// ledger's tables. Eight at once, five times. (Mutation caught: the
// ledger's CREATE TABLE IF NOT EXISTS without the advisory lock, as before
// — one of two `serve` starting together crashed 1 time in 4 on
// "duplicate key value violates unique constraint pg_type_typname_nsp_index".)
func TestLedgerConcurrentCreate(t *testing.T) {
	pool := newPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for round := range 5 {
		schema := newSchema(t, pool)
		if _, err := pool.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = newLedger(ctx, pool, schema, "w")
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, worker %d: %v", round, i, err)
			}
		}
	}
}
