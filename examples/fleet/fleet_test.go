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

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// The fleet under fire, on the real server: three workers, 30 sessions;
// one worker SIGKILLed mid-run, another SIGTERMed, a replacement started.
// At the end every session has finished exactly as an uninterrupted run
// in this process, no committed iteration was executed again, and no save
// was accepted from a holder after a newer one took over.
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
	out := run1(t, "submit", "--db", url, "--schema", schema, "--count", fmt.Sprint(e2eSessions),
		"--iterations", fmt.Sprint(e2eIterations), "--task-ms", fmt.Sprint(e2eTaskMillis))
	if !strings.Contains(out, fmt.Sprintf("%d sessions enqueued, 0 already known", e2eSessions)) {
		t.Fatalf("submit: %s", out)
	}
	// Submitting again enqueues nothing: jobs are unique by session.
	out = run1(t, "submit", "--db", url, "--schema", schema, "--count", fmt.Sprint(e2eSessions),
		"--iterations", fmt.Sprint(e2eIterations), "--task-ms", fmt.Sprint(e2eTaskMillis))
	if !strings.Contains(out, fmt.Sprintf("0 sessions enqueued, %d already known", e2eSessions)) {
		t.Fatalf("second submit: %s", out)
	}

	// held returns the sessions whose live lease names holder.
	held := func(holder string) []string {
		rows, err := pool.Query(ctx, `SELECT session FROM `+q+`.leases WHERE holder LIKE $1 AND expires_at > clock_timestamp() ORDER BY session`, holder+" #%")
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	progressed := func(holder string) bool {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.fleet_integrations WHERE holder LIKE $1`, holder+" #%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n >= 2
	}

	// SIGKILL worker-1 in the middle of its sessions.
	var killedHeld []string
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
	var termHeld []string
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
	var interrupted int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.checkpoints c WHERE c.status = 'interrupted'
		AND c.token IN (SELECT token FROM `+q+`.fleet_task_runs r WHERE r.session = c.session AND r.holder LIKE 'worker-2 #%')`).Scan(&interrupted); err != nil {
		t.Fatal(err)
	}
	if interrupted == 0 {
		t.Errorf("no session saved as interrupted by worker-2")
	}

	w4 := worker("worker-4")

	// All sessions finish; their jobs complete.
	store, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema), pgcheckpoint.Keep(100000))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	eventually(t, 150*time.Second, "not every session converged (see the workers' output)", func() bool {
		ss, err := store.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range ss {
			if s.Status == string(iterate.Converged) {
				n++
			}
		}
		return n == e2eSessions
	})
	finished := time.Since(begin)
	eventually(t, 30*time.Second, "not every job completed", func() bool {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.river_job WHERE kind = $1 AND state = 'completed'`, jobKind).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == e2eSessions
	})
	t.Logf("%v: all %d sessions converged", finished.Round(time.Millisecond), e2eSessions)

	// The SIGKILLed worker's sessions were taken over with a higher token;
	// say how long after the kill.
	for _, s := range killedHeld {
		var at time.Time
		err := pool.QueryRow(ctx, `SELECT min(stored_at) FROM `+q+`.checkpoints WHERE session = $1 AND token > (
			SELECT coalesce(max(token), 0) FROM `+q+`.fleet_task_runs WHERE session = $1 AND holder LIKE 'worker-1 #%')`, s).Scan(&at)
		if err != nil {
			t.Fatalf("session %s, held by the killed worker: no later checkpoint: %v", s, err)
		}
		t.Logf("session %s (worker-1's at the kill) saved by a new holder %v after the kill", s, at.Sub(killedAt).Round(time.Millisecond))
	}

	// Every session, read back through the engine, ends as the
	// uninterrupted run in this process.
	for i := 1; i <= e2eSessions; i++ {
		sp := spec{Session: fmt.Sprintf("synthetic-%03d", i), Iterations: e2eIterations, TaskMillis: e2eTaskMillis}
		want := reference(t, sp)
		res, err := newEngine(sp, store, nil).Resume(ctx)
		if err != nil {
			t.Fatalf("resuming the finished session %s: %v", sp.Session, err)
		}
		if diff := cmp.Diff(want, summarize(res)); diff != "" {
			t.Errorf("session %s differs from the uninterrupted run (-want +got):\n%s", sp.Session, diff)
		}
	}

	audit(t, pool, q)

	// Status lists them all.
	out = run1(t, "status", "--db", url, "--schema", schema)
	if !strings.Contains(out, fmt.Sprintf("%d sessions, %d converged", e2eSessions, e2eSessions)) {
		t.Errorf("status:\n%s", out)
	}

	for _, w := range []*proc{w3, w4} {
		w.signal(t, syscall.SIGTERM)
		if err := w.wait(t, 20*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", w.name, err)
		}
	}
}

// reference is the session run uninterrupted in this process.
func reference(t testing.TB, sp spec) summary {
	t.Helper()
	sp.TaskMillis = 0 // time is not compared
	res, err := newEngine(sp, new(checkpoint.Memory), nil).Run(context.Background(), initial(sp))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != iterate.Converged || res.Iterations != sp.Iterations {
		t.Fatalf("uninterrupted run of %s: %s after %d iterations", sp.Session, res.Status, res.Iterations)
	}
	if diff := cmp.Diff(model(sp, sp.Iterations), res.State); diff != "" {
		t.Fatalf("uninterrupted run of %s: state differs from the model (-want +got):\n%s", sp.Session, diff)
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
// Integrations and task runs under an earlier token that never committed
// (a holder killed or stopped before its save) are work lost, reported.
func audit(t *testing.T, pool *pgxpool.Pool, q string) {
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

	rows, err = pool.Query(ctx, `SELECT session, iteration, task, token, count(*) FROM `+q+`.fleet_task_runs GROUP BY 1, 2, 3, 4`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		var n, task, count int
		var token int64
		if err := rows.Scan(&s, &n, &task, &token, &count); err != nil {
			t.Fatal(err)
		}
		tasks += count
		c, ok := commit[s]
		switch {
		case !ok || n < 1 || n > e2eIterations:
			t.Errorf("task %d.%d of session %s: no such session or iteration", n, task+1, s)
		case count > 1:
			t.Errorf("task %d.%d of session %s ran %d times under token %d", n, task+1, s, count, token)
		case token > c[n]:
			t.Errorf("task %d.%d of session %s ran under token %d after its iteration was committed under token %d", n, task+1, s, token, c[n])
		case token < c[n]:
			lostTasks++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var want int
	for n := 1; n <= e2eIterations; n++ {
		want += len(plan(n).Tasks)
	}
	if tasks < want*e2eSessions {
		t.Errorf("%d task runs in the ledger, fewer than the %d of the sessions", tasks, want*e2eSessions)
	}
	t.Logf("audit: %d sessions, %d holders (tokens) in all; %d iterations each committed once; work lost to the kill and the stop: %d integrations and %d task runs never committed, redone by the next holder",
		len(gens), holders, e2eIterations, lostIntegrations, lostTasks)
}

// TestSyntheticLoop checks the synthetic loop and the naming of sessions,
// without a server.
func TestSyntheticLoop(t *testing.T) {
	sp := spec{Session: "synthetic-001", Iterations: 5}
	got := reference(t, sp)
	if got.Totals.FailedTasks == 0 {
		t.Errorf("no task failed: the loop should exercise failures too")
	}
	other := reference(t, spec{Session: "synthetic-002", Iterations: 5})
	if got.State.Sum == other.State.Sum {
		t.Errorf("two sessions end in the same state")
	}
	if _, err := newEngine(sp, new(checkpoint.Memory), nil).Resume(context.Background()); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Resume of an unknown session: %v, want ErrNotFound", err)
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
