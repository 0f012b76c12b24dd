package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/iterate/fleet"
)

// Rule (issue 31): Fleet.SessionsAfter pages through Fleet.Sessions: the
// sessions after the cursor, by name, at most limit, each as Sessions
// tells it (its checkpoint, job and status). Every page of every size,
// chained from "" through each page's last name, is checked against the
// whole list. Mutation caught (checked to fail): "session >= $1" (the
// cursor's session listed again).
func TestSessionsAfterPagesSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := newPool(t, 8)
	schema := newSchema(t, pool)
	f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.Poll(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Store().Close() })
	kind := registerNoop(f, 2)
	// Three sessions run to their end (checkpoints, completed jobs), the
	// others queued, their names out of order.
	for _, name := range []string{"m-run", "b-run", "x-run"} {
		if _, err := kind.Submit(ctx, name, 0); err != nil {
			t.Fatal(err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Work(wctx) }()
	for _, name := range []string{"m-run", "b-run", "x-run"} {
		if _, err := kind.Wait(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var subs []fleet.Submission[int]
	for i := 19; i >= 0; i-- {
		subs = append(subs, fleet.Submission[int]{Session: fmt.Sprintf("q-%02d", i*7%20)})
	}
	if _, err := kind.SubmitMany(ctx, subs); err != nil {
		t.Fatal(err)
	}
	if err := f.Cancel(ctx, "q-03"); err != nil {
		t.Fatal(err)
	}
	all, err := f.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 23 {
		t.Fatalf("%d sessions, want 23", len(all))
	}
	ignore := cmpopts.IgnoreFields(fleet.Session{}, "Age")
	for _, limit := range []int{1, 2, 5, 22, 23, 100} {
		var got []fleet.Session
		after := ""
		for pages := 0; ; pages++ {
			page, err := f.SessionsAfter(ctx, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("limit %d: a page of %d sessions", limit, len(page))
			}
			got = append(got, page...)
			if len(page) < limit || pages > len(all) {
				break
			}
			after = page[len(page)-1].Name
		}
		if d := cmp.Diff(all, got, ignore); d != "" {
			t.Errorf("limit %d: the pages differ from Sessions (-want +got):\n%s", limit, d)
		}
	}
	if page, err := f.SessionsAfter(ctx, "q-05", 3); err != nil || len(page) != 3 || page[0].Name != "q-06" {
		t.Errorf("SessionsAfter(q-05, 3) = %v, %v; want q-06 first", page, err)
	}
	if page, err := f.SessionsAfter(ctx, "", 0); err != nil || len(page) != 0 {
		t.Errorf("SessionsAfter(\"\", 0) = %v, %v; want none", page, err)
	}
}

// sqlRecorder records the statements a pool runs, with their arguments.
type sqlRecorder struct {
	mu   sync.Mutex
	sql  []string
	args [][]any
}

func (s *sqlRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql, s.args = append(s.sql, d.SQL), append(s.args, d.Args)
	return ctx
}

func (s *sqlRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Rule (issue 31): a page of SessionsAfter reads the page's sessions
// only, however many the fleet has: its statement, run under EXPLAIN
// ANALYZE among 20,000 sessions, reads the sessions table through its
// primary key under a Limit (no sequential scan of it, no node reading
// more than the page's rows of it). Mutation caught (checked to fail):
// the page's subquery without "ORDER BY session LIMIT $2", the page cut
// from every session after the cursor in Go (a merge join over all of
// them, 127 ms).
func TestSessionsAfterReadsItsPage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := &sqlRecorder{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	schema := newSchema(t, pool)
	f, err := fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Store().Close() })
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, `INSERT INTO `+q+`.fleet_sessions (session, kind, args)
		SELECT 's' || lpad(i::text, 6, '0'), 'noop', '0' FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE `+q+`.fleet_sessions`); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	rec.sql, rec.args = nil, nil
	rec.mu.Unlock()
	page, err := f.SessionsAfter(ctx, "s001000", 100)
	if err != nil || len(page) != 100 || page[0].Name != "s001001" {
		t.Fatalf("SessionsAfter: %d sessions, %v", len(page), err)
	}
	rec.mu.Lock()
	var sql string
	var args []any
	for i, s := range rec.sql {
		if strings.Contains(s, "fleet_sessions") {
			sql, args = s, rec.args[i]
		}
	}
	rec.mu.Unlock()
	if sql == "" {
		t.Fatal("no statement of SessionsAfter recorded")
	}
	rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) `+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "Seq Scan on fleet_sessions") || !strings.Contains(plan, "Limit") ||
		!strings.Contains(plan, "fleet_sessions_pkey") {
		t.Errorf("the page does not read the sessions' primary key under a limit:\n%s", plan)
	}
	for _, l := range lines {
		var n int
		if i := strings.Index(l, "rows="); strings.Contains(l, "fleet_sessions") && i >= 0 {
			fmt.Sscanf(l[i:], "rows=%d", &n)
			if n > 101 {
				t.Errorf("a node reads %d sessions for a page of 100:\n%s", n, plan)
			}
		}
	}
	t.Logf("plan:\n%s", plan)
}
