package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/refine-go/refine/iterate/fleet"
)

// rowsTouched returns the rows a plan's nodes returned (times their loops)
// and removed by their filters: what a statement read, from EXPLAIN
// (ANALYZE, FORMAT JSON).
func rowsTouched(node map[string]any) float64 {
	n := 0.0
	rows, _ := node["Actual Rows"].(float64)
	loops, _ := node["Actual Loops"].(float64)
	removed, _ := node["Rows Removed by Filter"].(float64)
	n += rows*max(loops, 1) + removed*max(loops, 1)
	if plans, ok := node["Plans"].([]any); ok {
		for _, p := range plans {
			if m, ok := p.(map[string]any); ok {
				n += rowsTouched(m)
			}
		}
	}
	return n
}

// Rule (issue 30, the fleet in production): a worker's reconciliation,
// which runs every poll on every worker, reads what changed since its last
// poll, not every session finished (River keeps finished jobs a day: at
// 100,000 sessions a day a full pass read each of them every second on
// every worker; 3.5 µs a session here, 28 ms a poll at 8,000). Among 300
// sessions finished an hour ago the windowed statement reads a few rows,
// where the full one (a worker's first poll, and every
// fullReconcileEvery) reads them all; and among 300 sessions just
// finished, none answered, extended or cancelled, neither reads a
// checkpoint. (Mutations caught: the window not applied — every finished
// session read; the window's bound computed with clock_timestamp(), which
// no index can use — the fleet's sessions read by a sequential scan; the
// session's row not asked first — 300 checkpoints read.)
func TestReconcileReadsWhatChanged(t *testing.T) {
	const n = 300
	pool := newPool(t, 20)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)
	f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.Concurrency(8), fleet.Poll(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Store().Close() })
	kind := registerNoop(f, 1)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Work(wctx) }()
	subs := make([]fleet.Submission[int], n)
	for i := range subs {
		subs[i] = fleet.Submission[int]{Session: fmt.Sprintf("old-%03d", i), Args: i}
	}
	if _, err := kind.SubmitMany(ctx, subs); err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if _, err := kind.Wait(ctx, s.Session); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	// Finished an hour ago, and the planner told so.
	if _, err := pool.Exec(ctx, `UPDATE `+q+`.river_job SET finalized_at = finalized_at - interval '1 hour'
		WHERE finalized_at IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"river_job", "fleet_sessions", "fleet_answers", "fleet_extensions", "checkpoints"} {
		if _, err := pool.Exec(ctx, `ANALYZE `+q+`.`+table); err != nil {
			t.Fatal(err)
		}
	}
	touched := func(window time.Duration) float64 {
		t.Helper()
		sql, args := fleet.ReconcileQuery(f, window)
		var plan []map[string]any
		var out string
		if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+sql, args...).Scan(&out); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan) == 0 {
			t.Fatalf("plan %q: %v", out, err)
		}
		return rowsTouched(plan[0]["Plan"].(map[string]any))
	}
	if got := touched(0); got < n {
		t.Fatalf("a full reconciliation read %v rows among %d finished sessions: the count misses what it reads", got, n)
	}
	if got := touched(2 * time.Second); got > 10 {
		t.Errorf("a windowed reconciliation read %v rows among %d sessions finished an hour ago, want at most 10", got, n)
	}

	// Finished just now, inside every window, and none answered, extended
	// or cancelled: no checkpoint of theirs is read (at 300 sessions a
	// second a minute's window holds 18,000 jobs, each a look at its
	// newest checkpoint before the sessions' rows were asked first).
	if _, err := pool.Exec(ctx, `UPDATE `+q+`.river_job SET finalized_at = now() WHERE finalized_at IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE `+q+`.river_job`); err != nil {
		t.Fatal(err)
	}
	for _, window := range []time.Duration{0, 2 * time.Second} {
		sql, args := fleet.ReconcileQuery(f, window)
		var out string
		if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+sql, args...).Scan(&out); err != nil {
			t.Fatal(err)
		}
		var plan []map[string]any
		if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan) == 0 {
			t.Fatalf("plan %q: %v", out, err)
		}
		if got := relationRows(plan[0]["Plan"].(map[string]any), "checkpoints"); got > 0 {
			t.Errorf("window %v: the reconciliation read %v checkpoint rows of %d sessions just finished that nobody answered, extended or cancelled, want none", window, got, n)
		}
	}
}

// relationRows returns the rows the plan's nodes that scan relation
// returned (times their loops).
func relationRows(node map[string]any, relation string) float64 {
	n := 0.0
	if node["Relation Name"] == relation {
		rows, _ := node["Actual Rows"].(float64)
		loops, _ := node["Actual Loops"].(float64)
		n += rows * max(loops, 1)
	}
	if plans, ok := node["Plans"].([]any); ok {
		for _, p := range plans {
			if m, ok := p.(map[string]any); ok {
				n += relationRows(m, relation)
			}
		}
	}
	return n
}

// Rule (issue 30, upgrades): a schema made before the reconciliation's
// indexes existed gets them from the next fleet.New, though its version is
// unchanged (a process of the version before still finds it current).
// (Mutation caught: New taking the schema for current by its version alone
// — the indexes are never made.)
func TestNewAddsReconcileIndexes(t *testing.T) {
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)
	f, err := fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	f.Store().Close()
	q := pgx.Identifier{schema}.Sanitize()
	indexes := []string{"fleet_sessions_cancelled_at", "fleet_answers_answered_at", "fleet_extensions_extended_at"}
	for _, ix := range indexes {
		if _, err := pool.Exec(ctx, `DROP INDEX `+q+`.`+ix); err != nil {
			t.Fatal(err)
		}
	}
	f, err = fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	f.Store().Close()
	for _, ix := range indexes {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+"."+ix).Scan(&ok); err != nil || !ok {
			t.Errorf("index %s after New: %v, %v", ix, ok, err)
		}
	}
}
