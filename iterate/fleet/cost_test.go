package fleet_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// noopState is the state of a no-op session.
type noopState struct {
	Round int `json:"round"`
}

// noopLoop is a no-op session: iterations iterations of two tasks that do
// nothing, so that what a session costs is the fleet's own (its job, its
// lease, its checkpoints).
type noopLoop struct{ iterations int }

func (w noopLoop) Assess(_ context.Context, s noopState) (gap.Assessment, error) {
	return gap.Assessment{Complete: s.Round >= w.iterations}, nil
}

func (noopLoop) Work(context.Context, noopState, iterate.Task) (iterate.Outcome[noopState], error) {
	return iterate.Outcome[noopState]{}, nil
}

func (noopLoop) Integrate(_ context.Context, s noopState, _ []iterate.Outcome[noopState]) (noopState, error) {
	return noopState{Round: s.Round + 1}, nil
}

// registerNoop registers the kind "noop": sessions of iterations
// iterations of two empty tasks.
func registerNoop(f *fleet.Fleet, iterations int) *fleet.Kind[int, noopState] {
	return fleet.MustRegister(f, "noop", func(context.Context, int) (fleet.Loop[noopState], error) {
		return fleet.Loop[noopState]{
			Worker: noopLoop{iterations: iterations},
			Options: []iterate.Option{
				iterate.WithStrategy(iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
					return iterate.Plan{Action: iterate.Refine, Tasks: []iterate.Task{
						{Role: "noop", Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: "a"}}},
						{Role: "noop", Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: "b"}}},
					}}, nil
				})),
				iterate.WithMaxIterations(iterations + 1),
			},
		}, nil
	})
}

// counter is a pgx tracer counting the statements and round trips of a
// pool, by statement (its first words), apart for those that name one of
// the counted sessions (an argument "s-NNN") and the others (submission,
// River's fetches and completions, the workers' polls), shared by all.
type counter struct {
	mu      sync.Mutex
	on      bool
	own     tally // naming a session, but journal saves
	journal tally // a session's journal saves: their number depends on timing
	rest    tally // the others
}

// tally counts statements by their key, and round trips.
type tally struct {
	statements map[string]int
	roundTrips int
}

func (t *tally) total() (statements int) {
	for _, n := range t.statements {
		statements += n
	}
	return statements
}

var (
	spaces      = regexp.MustCompile(`\s+`)
	schemas     = regexp.MustCompile(`"?fleet_test_[0-9a-f]+"?\.`)
	sessionName = regexp.MustCompile(`^s-[0-9]{3}$`)
)

// key names a statement by its first 70 characters, its schema left out.
func key(sql string) string {
	s := schemas.ReplaceAllString(spaces.ReplaceAllString(strings.TrimSpace(sql), " "), "")
	if len(s) > 70 {
		s = s[:70]
	}
	return s
}

// names reports whether args name a counted session.
func names(args []any) bool {
	for _, a := range args {
		if s, ok := a.(string); ok && sessionName.MatchString(s) {
			return true
		}
	}
	return false
}

// journaled reports whether args hold an engine record with a journal:
// the save is a journal save.
func journaled(args []any) bool {
	for _, a := range args {
		if b, ok := a.([]byte); ok && bytes.Contains(b, []byte(`"journal":[`)) {
			return true
		}
	}
	return false
}

// add counts one round trip of the statements sqls.
func (c *counter) add(own, journal bool, sqls ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return
	}
	t := &c.rest
	switch {
	case own && journal:
		t = &c.journal
	case own:
		t = &c.own
	}
	t.roundTrips++
	for _, s := range sqls {
		t.statements[key(s)]++
	}
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	// A lease's renewals are paid by the time a session runs (one per a
	// third of the lease), not by the session: shared.
	renewal := strings.Contains(d.SQL, "SET expires_at = clock_timestamp() +")
	c.add(names(d.Args) && !renewal, false, d.SQL)
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var own, journal bool
	var sqls []string
	for _, q := range d.Batch.QueuedQueries {
		own = own || names(q.Arguments)
		journal = journal || journaled(q.Arguments)
		sqls = append(sqls, q.SQL)
	}
	c.add(own, journal, sqls...)
	return ctx
}

func (c *counter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *counter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	c.add(false, false, "COPY "+d.TableName.Sanitize())
	return ctx
}

func (c *counter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// start counts from now on.
func (c *counter) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = true
	c.own = tally{statements: map[string]int{}}
	c.journal = tally{statements: map[string]int{}}
	c.rest = tally{statements: map[string]int{}}
}

// stop stops counting and returns what was counted.
func (c *counter) stop() (own, journal, rest tally) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.own, c.journal, c.rest
}

// tracedPool opens a pool on the test server whose statements c counts:
// all its maxConns connections open (so that none opens as it is
// measured), each naming itself app (application_name).
func tracedPool(t testing.TB, c *counter, maxConns int32, app string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = maxConns, maxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Cost bounds: what one no-op session (4 iterations of 2 empty tasks)
// costs the database. Its own statements (those that name it: reading it,
// its lease, its checkpoints, its completion) are counted exactly and
// bounded by what it takes today; the shared ones (its submission in a
// batch of costSessions, River's fetches and completions, the worker's
// polls over the run) are divided among the sessions, logged and loosely
// bounded. BENCHMARKS.md ("Fleet: statements per session") quotes the
// figures TestSessionCost logs.
// costSessions is how many sessions TestSessionCost counts (at most 999:
// they are named s-000 to s-998); more measure the server's CPU more
// finely.
var costSessions = flag.Int("fleet.cost", 40, "TestSessionCost: sessions counted (at most 999)")

const (
	costIterations   = 4
	costWarm         = 8 // sessions run before counting
	maxOwnStatements = 13
	maxOwnRoundTrips = 6
	// A session's journal saves, 2 statements each: none as a rule, at
	// most 2 an iteration (see below); loosely bounded.
	maxJournalSaves = 2.0
	// The shared round trips include the workers' polls, which grow with
	// the run's time, longer on a loaded machine: loosely bounded.
	maxSharedRoundTrip = 8.0
)

// Rule: a session costs the database a bounded number of statements and
// round trips (issue 30's performance goal: "count the statements and
// round trips one session costs ... and cut it"): any statement added per
// session, per iteration or per checkpoint fails it. (Mutations checked:
// jobWorker.Work reading the session's row apart from LockLoad's round
// trip — 42 statements, 15 round trips; the run's last save not giving
// the lease back (Save, not SaveRelease) — 43, 15; the completion check
// run after a run that ended without an error — 43, 15 (these three
// against the bounds before the third cut, 42 and 14: each adds a round
// trip still); a save's settings as a statement of their own again, as
// before the third cut (pgcheckpoint at 680d698) — 42, 14 (13 and 6 since
// the fourth cut, journal saves apart); the journal's writer saving
// although the loop has integrated the iteration — 4 journal saves a
// session; no linger — 4; tasks saved in turn, as before the fourth cut
// — 8.)
//
// Since the fourth cut, how many journal saves a session makes depends on
// timing: iterate's journal writer waits 1 ms before its first save, and
// when the loop has integrated the iteration by then (two empty tasks),
// the iteration's save holds both tasks; a loop kept from running that
// long makes a journal save, two at most an iteration. The journal saves
// are counted apart (the round trips of a save whose engine record holds
// a journal), the session's other statements exactly.
func TestSessionCost(t *testing.T) {
	costSessions := min(max(*costSessions, 1), 999)
	c := &counter{}
	app := fmt.Sprintf("fleet-cost-%d", time.Now().UnixNano())
	pool := tracedPool(t, c, 20, app)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)
	f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.Concurrency(4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Store().Close() })
	kind := registerNoop(f, costIterations)
	wctx, stopWork := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Work(wctx) }()
	defer func() {
		stopWork()
		if err := <-done; err != nil {
			t.Errorf("Work: %v", err)
		}
	}()
	// Warm the pool's connections and statement caches: a batch of
	// sessions run before counting.
	warm := make([]fleet.Submission[int], costWarm)
	for i := range warm {
		warm[i] = fleet.Submission[int]{Session: fmt.Sprintf("warm-%d", i)}
	}
	if _, err := kind.SubmitMany(ctx, warm); err != nil {
		t.Fatal(err)
	}
	for _, w := range warm {
		if _, err := kind.Wait(ctx, w.Session); err != nil {
			t.Fatal(err)
		}
	}

	for end := time.Now().Add(10 * time.Second); pool.Stat().TotalConns() < pool.Stat().MaxConns() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond) // the pool opening its connections
	}
	conns := pool.Stat().NewConnsCount()
	backends := appBackends(ctx, pool, app)
	cpuBefore, cpuOK := backendsCPU(backends)
	c.start()
	subs := make([]fleet.Submission[int], costSessions)
	for i := range subs {
		subs[i] = fleet.Submission[int]{Session: fmt.Sprintf("s-%03d", i), Args: i}
	}
	if _, err := kind.SubmitMany(ctx, subs); err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	poll := newPool(t, 2) // counted apart: a pool of its own
	for {
		var n int
		if err := poll.QueryRow(ctx, `SELECT count(*) FROM `+q+`.river_job WHERE state = 'completed'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == costSessions+costWarm {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d sessions done", n-costWarm, costSessions)
		}
		time.Sleep(20 * time.Millisecond) // polling the server, not timing
	}
	own, journal, rest := c.stop()
	if cpuAfter, ok := backendsCPU(backends); ok && cpuOK {
		// Load-independent, roughly: the CPU time of the server
		// processes that serve the worker's pool (own and shared
		// statements; not the poll above, not autovacuum), per session.
		cpu := cpuAfter - cpuBefore
		t.Logf("server CPU of the worker's connections: %.3f ms per session (%v in all, %d connections, %d opened during the run)",
			float64(cpu)/float64(time.Millisecond)/float64(costSessions), cpu, len(backends), pool.Stat().NewConnsCount()-conns)
	}
	for _, s := range subs {
		res, err := kind.Result(ctx, s.Session)
		if err != nil || res.Status != iterate.Converged || res.Iterations != costIterations {
			t.Fatalf("session %s: %v, %v", s.Session, res, err)
		}
	}
	for _, x := range []struct {
		what string
		t    tally
	}{{"own", own}, {"journal", journal}, {"shared", rest}} {
		keys := slices.SortedFunc(maps.Keys(x.t.statements), func(a, b string) int { return x.t.statements[b] - x.t.statements[a] })
		for _, k := range keys {
			t.Logf("%s %6.2f  %s", x.what, float64(x.t.statements[k])/float64(costSessions), k)
		}
	}
	ownS, ownT := float64(own.total())/float64(costSessions), float64(own.roundTrips)/float64(costSessions)
	restS, restT := float64(rest.total())/float64(costSessions), float64(rest.roundTrips)/float64(costSessions)
	t.Logf("per session (%d sessions, 1 worker, concurrency 4): its own %.2f statements in %.2f round trips; shared %.2f statements in %.2f round trips",
		costSessions, ownS, ownT, restS, restT)
	if ownS > maxOwnStatements || ownT > maxOwnRoundTrips {
		t.Errorf("a session's own statements: %.2f in %.2f round trips, above the bounds %d and %d", ownS, ownT, maxOwnStatements, maxOwnRoundTrips)
	}
	journalT := float64(journal.roundTrips) / float64(costSessions)
	t.Logf("journal saves: %.2f a session, %.2f statements", journalT, float64(journal.total())/float64(costSessions))
	if journalT > maxJournalSaves {
		t.Errorf("a session's journal saves: %.2f, above %.1f", journalT, maxJournalSaves)
	}
	if restT > maxSharedRoundTrip {
		t.Errorf("a session's share of the other round trips: %.2f, above %.1f", restT, maxSharedRoundTrip)
	}
}

// appBackends returns the pids of the server processes of the connections
// that name themselves app.
func appBackends(ctx context.Context, pool *pgxpool.Pool, app string) []uint32 {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		return nil
	}
	pids, _ := pgx.CollectRows(rows, pgx.RowTo[int32])
	out := make([]uint32, len(pids))
	for i, p := range pids {
		out[i] = uint32(p)
	}
	return out
}
