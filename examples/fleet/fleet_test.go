//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// The fleet under fire, on the real server, through the program: three
// workers, 30 synthetic sessions; one worker SIGKILLed mid-run, another
// SIGTERMed, a replacement started. At the end every session has finished
// exactly as an uninterrupted run in this process (state, status, reason,
// iterations, counters and usage: nothing paid twice), no committed
// iteration was executed again, and no save was accepted from a holder
// after a newer one took over.
const (
	e2eSessions    = 30
	e2eIterations  = 8
	e2eTaskMillis  = 60
	e2eLease       = 2 * time.Second
	e2eConcurrency = 2
)

func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns worker processes")
	}
	url := serverURL(t)
	pool := newPool(t)
	schema := newSchema(t, pool)
	q := pgx.Identifier{schema}.Sanitize()
	ctx := context.Background()
	begin := time.Now()

	worker := func(name string) *proc {
		return start(t, name, "serve", "--db", url, "--schema", schema, "--holder", name,
			"--lease", e2eLease.String(), "--poll", "100ms", "--concurrency", fmt.Sprint(e2eConcurrency), "--keep", "100000")
	}
	w1, w2, w3 := worker("worker-1"), worker("worker-2"), worker("worker-3")
	submit := []string{"submit", "--db", url, "--schema", schema, "--count", fmt.Sprint(e2eSessions),
		"--iterations", fmt.Sprint(e2eIterations), "--task-ms", fmt.Sprint(e2eTaskMillis)}
	if out := run1(t, submit...); !strings.Contains(out, fmt.Sprintf("%d sessions enqueued, 0 already known", e2eSessions)) {
		t.Fatalf("submit: %s", out)
	}
	// Submitting again enqueues nothing: sessions are unique by name.
	if out := run1(t, submit...); !strings.Contains(out, fmt.Sprintf("0 sessions enqueued, %d already known", e2eSessions)) {
		t.Fatalf("second submit: %s", out)
	}

	// held returns the sessions whose live lease names holder, with the
	// lease's token.
	held := func(holder string) map[string]int64 {
		rows, err := pool.Query(ctx, `SELECT session, token FROM `+q+`.leases WHERE holder LIKE $1 AND expires_at > clock_timestamp()`, holder+" #%")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		var s string
		var token int64
		if _, err := pgx.ForEachRow(rows, []any{&s, &token}, func() error { m[s] = token; return nil }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	progressed := func(holder string) bool {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.fleet_integrations WHERE holder LIKE $1`, holder+" #%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n >= 2
	}

	// SIGKILL worker-1 in the middle of its sessions.
	var killedHeld map[string]int64
	eventually(t, 60*time.Second, "worker-1 never held a session after integrating iterations", func() bool {
		if !progressed("worker-1") {
			return false
		}
		killedHeld = held("worker-1")
		return len(killedHeld) > 0
	})
	w1.signal(t, syscall.SIGKILL)
	killedAt := time.Now()
	w1.wait(t, 10*time.Second)
	t.Logf("%v: SIGKILL worker-1 holding %v", time.Since(begin).Round(time.Millisecond), killedHeld)

	// SIGTERM worker-2 in the middle of its sessions: it stops them at
	// their next safe point, saved as interrupted, and exits cleanly.
	var termHeld map[string]int64
	eventually(t, 60*time.Second, "worker-2 never held a session after integrating iterations", func() bool {
		if !progressed("worker-2") {
			return false
		}
		termHeld = held("worker-2")
		return len(termHeld) > 0
	})
	w2.signal(t, syscall.SIGTERM)
	if err := w2.wait(t, 20*time.Second); err != nil {
		t.Fatalf("worker-2 after SIGTERM: %v\n%s", err, w2.out.String())
	}
	t.Logf("%v: SIGTERM worker-2 holding %v: exited cleanly", time.Since(begin).Round(time.Millisecond), termHeld)
	if !strings.Contains(w2.out.String(), "stopping loops at their next safe point") || !strings.Contains(w2.out.String(), "fleet serve: stopped") {
		t.Errorf("worker-2's output after SIGTERM:\n%s", w2.out.String())
	}
	if left := held("worker-2"); len(left) > 0 {
		t.Errorf("worker-2 exited still holding %v", left)
	}
	// The sessions it held were saved as interrupted under its lease.
	interrupted := 0
	for session, token := range termHeld {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.checkpoints WHERE session = $1 AND token = $2 AND status = 'interrupted'`,
			session, token).Scan(&n); err != nil {
			t.Fatal(err)
		}
		interrupted += min(n, 1)
	}
	if interrupted == 0 {
		t.Errorf("none of the sessions worker-2 held at SIGTERM (%v) was saved as interrupted under its lease", termHeld)
	}

	w4 := worker("worker-4")

	// All sessions finish; their jobs complete.
	h, err := (&common{db: url, schema: schema}).open(ctx, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	eventually(t, 150*time.Second, "not every session converged and completed its job (see the workers' output)", func() bool {
		list, err := h.fleet.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range list {
			if s.Status == iterate.Converged && s.Job == "completed" {
				n++
			}
		}
		return n == e2eSessions
	})
	t.Logf("%v: all %d sessions converged", time.Since(begin).Round(time.Millisecond), e2eSessions)

	// The SIGKILLed worker's sessions were taken over with a higher token;
	// say how long after the kill.
	for s, token := range killedHeld {
		var at time.Time
		err := pool.QueryRow(ctx, `SELECT min(stored_at) FROM `+q+`.checkpoints WHERE session = $1 AND token > $2`, s, token).Scan(&at)
		if err != nil {
			t.Fatalf("session %s, held by the killed worker: no later checkpoint: %v", s, err)
		}
		t.Logf("session %s (worker-1's at the kill, token %d) saved by a new holder %v after the kill", s, token, at.Sub(killedAt).Round(time.Millisecond))
	}

	redone := audit(t, pool, q)

	// Every session, read back through the fleet, ends exactly as the
	// uninterrupted run in this process, its books included — but for the
	// spend of the task runs that were redone and whose first run was
	// charged: a task that failed as the SIGTERM came counts as
	// interrupted (it may have failed of it: iterate's rule), so it runs
	// again, and both runs were paid. (The spend of a run the SIGKILL cut
	// off with its holder was never saved.)
	for i := 1; i <= e2eSessions; i++ {
		a := syntheticArgs{Name: fmt.Sprintf("synthetic-%03d", i), Iterations: e2eIterations, TaskMillis: e2eTaskMillis}
		res, err := h.synthetic.Result(ctx, a.Name)
		if err != nil {
			t.Fatalf("result of %s: %v", a.Name, err)
		}
		want, got := reference(t, a, ""), summarize(res)
		if diff := cmp.Diff(want, got); diff != "" && !chargedTwice(want, got, redone[a.Name]) {
			t.Errorf("session %s differs from the uninterrupted run (-want +got), by more than the spend of its redone task runs %v:\n%s",
				a.Name, redone[a.Name], diff)
		}
	}

	// Status lists them all.
	if out := run1(t, "status", "--db", url, "--schema", schema); !strings.Contains(out, fmt.Sprintf("%d sessions, %d converged\n", e2eSessions, e2eSessions)) {
		t.Errorf("status:\n%s", out)
	}

	for _, w := range []*proc{w3, w4} {
		w.signal(t, syscall.SIGTERM)
		if err := w.wait(t, 20*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.name, err)
		}
	}
}

// reference is the session run uninterrupted in this process, as the
// fleet runs it (Strict, with the journal), answered with answer if it
// asks.
func reference(t testing.TB, a syntheticArgs, answer string) summary {
	t.Helper()
	a.TaskMillis = 0 // time is not compared
	loop := syntheticLoop(a, nil)
	eng := iterate.New(loop.Worker, append(loop.Options,
		iterate.WithCheckpointer(new(checkpoint.Memory), iterate.Strict|iterate.Journal), iterate.WithSession(a.Name))...)
	res, err := eng.Run(context.Background(), loop.Initial)
	if res != nil && res.Status == iterate.Escalated {
		res, err = eng.Resume(context.Background(), iterate.WithAnswer(answer))
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != iterate.Converged || res.Iterations != a.Iterations {
		t.Fatalf("uninterrupted run of %s: %s after %d iterations", a.Name, res.Status, res.Iterations)
	}
	if a.EscalateAt == 0 {
		if diff := cmp.Diff(model(a, a.Iterations), res.State); diff != "" {
			t.Fatalf("uninterrupted run of %s: state differs from the model (-want +got):\n%s", a.Name, diff)
		}
	}
	return summarize(res)
}

// audit checks, from the store's checkpoints (every generation kept) and
// the fleet's ledger, that progress was exactly-once:
//
//   - in each session's generations, in order, fencing tokens and
//     completed iterations never go back: no save was accepted from a
//     holder after a newer holder's (one holder at a time);
//   - iteration n is committed by the first generation that counts it; the
//     holder that saved it (its token) integrated it exactly once, and no
//     holder with a later token integrated it, or ran any of its tasks,
//     again;
//   - no task ran twice under one lease.
//
// Integrations under an earlier token that never committed, and tasks run
// again (a holder killed or stopped before it saved or journaled them), are
// work lost, reported.
// chargedTwice reports whether got is want with the spend of some of the
// redone task runs added to its books, and nothing else changed.
func chargedTwice(want, got summary, redone []budget.Usage) bool {
	for subset := 1; subset < 1<<len(redone); subset++ {
		w := want
		for i, u := range redone {
			if subset&(1<<i) != 0 {
				w.Usage = w.Usage.Add(u)
			}
		}
		if cmp.Equal(w, got) {
			return true
		}
	}
	return false
}

func audit(t *testing.T, pool *pgxpool.Pool, q string) (redone map[string][]budget.Usage) {
	t.Helper()
	ctx := context.Background()
	type gen struct {
		generation, token int64
		iteration         int
		status            string
	}
	rows, err := pool.Query(ctx, `SELECT session, generation, token, iteration, status FROM `+q+`.checkpoints ORDER BY session, generation`)
	if err != nil {
		t.Fatal(err)
	}
	gens := map[string][]gen{}
	for rows.Next() {
		var s string
		var g gen
		if err := rows.Scan(&s, &g.generation, &g.token, &g.iteration, &g.status); err != nil {
			t.Fatal(err)
		}
		gens[s] = append(gens[s], g)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(gens) != e2eSessions {
		t.Fatalf("%d sessions with checkpoints, want %d", len(gens), e2eSessions)
	}
	// commit[session][n] is the token that committed iteration n.
	commit := map[string][]int64{}
	holders := 0
	for s, gs := range gens {
		c := make([]int64, e2eIterations+1)
		tokens := map[int64]bool{}
		for i, g := range gs {
			tokens[g.token] = true
			if g.token == 0 {
				t.Errorf("session %s generation %d saved without a lease", s, g.generation)
			}
			if i > 0 && (g.token < gs[i-1].token || g.iteration < gs[i-1].iteration) {
				t.Errorf("session %s went back at generation %d: token %d iteration %d after token %d iteration %d",
					s, g.generation, g.token, g.iteration, gs[i-1].token, gs[i-1].iteration)
			}
			if g.iteration > e2eIterations {
				t.Errorf("session %s generation %d: iteration %d", s, g.generation, g.iteration)
				continue
			}
			for n := 1; n <= g.iteration; n++ {
				if c[n] == 0 {
					c[n] = g.token
				}
			}
		}
		holders += len(tokens)
		commit[s] = c
	}

	var lostIntegrations, lostTasks, tasks int
	rows, err = pool.Query(ctx, `SELECT session, iteration, token, count(*) FROM `+q+`.fleet_integrations GROUP BY 1, 2, 3`)
	if err != nil {
		t.Fatal(err)
	}
	integrated := map[string]map[int]int{} // by the committing holder
	for rows.Next() {
		var s string
		var n, count int
		var token int64
		if err := rows.Scan(&s, &n, &token, &count); err != nil {
			t.Fatal(err)
		}
		c, ok := commit[s]
		switch {
		case !ok || n < 1 || n > e2eIterations:
			t.Errorf("integration of session %s iteration %d: no such session or iteration", s, n)
		case token == c[n]:
			if integrated[s] == nil {
				integrated[s] = map[int]int{}
			}
			integrated[s][n] += count
		case token > c[n]:
			t.Errorf("session %s iteration %d, committed under token %d, integrated again under token %d", s, n, c[n], token)
		default:
			lostIntegrations += count
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for s := range commit {
		for n := 1; n <= e2eIterations; n++ {
			if got := integrated[s][n]; got != 1 {
				t.Errorf("session %s iteration %d: integrated %d times by the holder that committed it, want 1", s, n, got)
			}
		}
	}

	rows, err = pool.Query(ctx, `SELECT session, iteration, task, token, count(*) FROM `+q+`.fleet_task_runs GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`)
	if err != nil {
		t.Fatal(err)
	}
	type taskKey struct {
		session   string
		iteration int
		task      int
	}
	runs := map[taskKey][]int64{} // the tokens each task ran under
	for rows.Next() {
		var k taskKey
		var count int
		var token int64
		if err := rows.Scan(&k.session, &k.iteration, &k.task, &token, &count); err != nil {
			t.Fatal(err)
		}
		tasks += count
		c, ok := commit[k.session]
		switch {
		case !ok || k.iteration < 1 || k.iteration > e2eIterations:
			t.Errorf("task %d.%d of session %s: no such session or iteration", k.iteration, k.task+1, k.session)
		case count > 1:
			t.Errorf("task %d.%d of session %s ran %d times under token %d", k.iteration, k.task+1, k.session, count, token)
		case token > c[k.iteration]:
			t.Errorf("task %d.%d of session %s ran under token %d after its iteration was committed under token %d", k.iteration, k.task+1, k.session, token, c[k.iteration])
		}
		runs[k] = append(runs[k], token)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	redone = map[string][]budget.Usage{}
	for k, tokens := range runs {
		lostTasks += len(tokens) - 1
		for range len(tokens) - 1 {
			redone[k.session] = append(redone[k.session], taskUsage(k.iteration, k.task))
		}
	}
	var want int
	for n := 1; n <= e2eIterations; n++ {
		want += len(plan(n).Tasks)
	}
	if tasks < want*e2eSessions {
		t.Errorf("%d task runs in the ledger, fewer than the %d of the sessions", tasks, want*e2eSessions)
	}
	t.Logf("audit: %d sessions, %d holders (tokens) in all; %d iterations each committed once; work lost to the kill and the stops: %d integrations never committed and %d task runs, redone by the next holder",
		len(gens), holders, e2eIterations, lostIntegrations, lostTasks)
	return redone
}

// TestSyntheticLoop checks the synthetic loop and the naming of sessions,
// without a server.
func TestSyntheticLoop(t *testing.T) {
	a := syntheticArgs{Name: "synthetic-001", Iterations: 5}
	got := reference(t, a, "")
	if got.Totals.FailedTasks == 0 {
		t.Errorf("no task failed: the loop should exercise failures too")
	}
	other := reference(t, syntheticArgs{Name: "synthetic-002", Iterations: 5}, "")
	if got.State.Sum == other.State.Sum {
		t.Errorf("two sessions end in the same state")
	}
	asked := reference(t, syntheticArgs{Name: "synthetic-003", Iterations: 5, EscalateAt: 2}, "left")
	if asked.State.Answer != "left" {
		t.Errorf("answered session's state: %+v", asked.State)
	}
	if _, err := syntheticKind(nil)(context.Background(), syntheticArgs{Name: "x"}); err == nil {
		t.Errorf("a session of no iterations is accepted")
	}
	for q, want := range map[string]string{
		"How does the auth flow refresh tokens?": "q-how-does-the-auth-flow-refresh-tokens-",
		"???":                                    "q-",
	} {
		s := questionSession(q)
		if !strings.HasPrefix(s, want) || checkpoint.ValidateSession(s) != nil || s != questionSession(q) {
			t.Errorf("questionSession(%q) = %q", q, s)
		}
	}
	if a, b := questionSession("a b"), questionSession("a  b!"); a == b {
		t.Errorf("two questions, one session %q", a)
	}
}

// cancelOn is a recorder that cancels the loop when a given task has run.
type cancelOn struct {
	it, idx int
	cancel  context.CancelFunc
}

func (c *cancelOn) task(_ context.Context, it, idx int) {
	if it == c.it && idx == c.idx {
		c.cancel()
	}
}

func (c *cancelOn) integrated(context.Context, int) {}

// TestGracefulInterruptBooks: a loop interrupted gracefully just as a task
// fails ends, once resumed, as the uninterrupted run, but for the books of
// that task: it failed once the loop's context had ended, so it was
// interrupted, not failed (iterate's rule since issue 28: exec's "signal:
// killed" cannot be told from a failure of its own), is not journaled, and
// runs — and is charged — again. The session counts its failure once.
func TestGracefulInterruptBooks(t *testing.T) {
	a := syntheticArgs{Name: "synthetic-001", Iterations: 4, TaskMillis: 20}
	if !fails(1, 1) || fails(1, 0) {
		t.Fatal("the loop changed: task 1.2 should fail and 1.1 not")
	}
	want := reference(t, a, "")
	// Task 1.2's interrupted attempt, charged, and run again on resume.
	want.Usage = want.Usage.Add(taskUsage(1, 1))
	store := new(checkpoint.Memory)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	engine := func(rec recorder) iterate.Engine[state] {
		loop := syntheticLoop(a, rec)
		return iterate.New(loop.Worker, append(loop.Options,
			iterate.WithCheckpointer(store, iterate.Strict|iterate.Journal), iterate.WithSession(a.Name))...)
	}
	if _, err := engine(&cancelOn{it: 1, idx: 1, cancel: cancel}).Run(ctx, initial(a)); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatalf("Run: %v, want interrupted", err)
	}
	res, err := engine(nil).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, summarize(res)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
