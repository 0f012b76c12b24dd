//go:build unix

package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// workerEnv, when set, makes the test binary a fleet worker process (see
// workerMain) instead of running tests.
const workerEnv = "FLEET_TEST_WORKER"

// workerMain is a worker process of TestFleetUnderFire: the synthetic kind,
// with the ledger, on the schema and lease the test gives, until SIGTERM.
func workerMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	lease, err := time.ParseDuration(os.Getenv("FLEET_TEST_LEASE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg, err := pgxpool.ParseConfig(os.Getenv("REFINE_PG_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.MaxConns = 24
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	schema := os.Getenv("FLEET_TEST_SCHEMA")
	f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.Lease(lease), fleet.Poll(100*time.Millisecond),
		fleet.Holder(os.Getenv(workerEnv)), fleet.Concurrency(3), fleet.StoreOptions(pgcheckpoint.Keep(100000)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Store().Close()
	var rec recorder
	if os.Getenv("FLEET_TEST_LEDGER") != "off" {
		rec = &ledger{pool: pool, q: pgx.Identifier{schema}.Sanitize()}
	}
	registerSynth(f, rec)
	fmt.Println("ready")
	if err := f.Work(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// The fleet under fire, on the real server, with a Worker type defined in
// this test: 3 worker processes, 50 sessions of parallel tasks with the
// journal; 10 SIGKILLs and 3 SIGTERMs of random workers, each replaced; one server
// restart as a crash would (pg_ctl -m immediate) mid-run; one task longer
// than the lease; one escalation answered from this process; one
// cancellation. At the end: every session but the cancelled one converged
// with exactly the state, usage and counters of an uninterrupted run;
// every completed job has a final checkpoint; no iteration integrated by a
// holder after it was committed, and no task run twice under one lease (the
// ledger); tokens never go back across a session's generations (never two
// holders at once).
//
// Mutations it catches: completing a job whose session is not durably
// final (the durable check in jobWorker.Work, removed: the restart leaves
// sessions "running" with completed jobs); a job timeout (the long task
// never finishes); no rescue by lease (the sessions of a killed worker
// wait 24 h). A session's usage may exceed the uninterrupted run's by the
// attempts of failing tasks that a SIGTERM cut short (a task that fails
// once the loop's context has ended is interrupted, not failed: it runs and
// is paid for again), and by nothing else (interruptedFailures).
func TestFleetUnderFire(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns worker processes")
	}
	url := serverURL(t)
	restart := os.Getenv("REFINE_PG_RESTART")
	if restart == "" && (os.Getenv("REFINE_PG_REQUIRED") != "" || os.Getenv("CI") != "") {
		t.Fatal("REFINE_PG_RESTART is not set: start the server with .ci/postgres.sh")
	}
	const (
		sessions   = 50
		iterations = 8
		taskMillis = 150
		lease      = 2 * time.Second
		kills      = 10 // in faults below
		sigterms   = 3
	)
	pool := newPool(t, 8)
	schema := newSchema(t, pool)
	q := pgx.Identifier{schema}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	client, _ := startFleet(t, url, schema, fleet.Lease(lease))
	if _, err := pool.Exec(ctx, fmt.Sprintf(ledgerDDL, q)); err != nil {
		t.Fatal(err)
	}
	kind := registerSynth(client, nil)

	// Workers.
	var mu sync.Mutex
	procs := map[string]*exec.Cmd{}
	n := 0
	startWorker := func() string {
		mu.Lock()
		n++
		name := fmt.Sprintf("worker-%d", n)
		mu.Unlock()
		cmd := startWorkerProcess(t, name, schema, lease)
		mu.Lock()
		procs[name] = cmd
		mu.Unlock()
		return name
	}
	t.Cleanup(func() {
		for _, c := range procs {
			c.Process.Signal(syscall.SIGTERM)
		}
		for _, c := range procs {
			c.Wait()
		}
	})
	for range 3 {
		startWorker()
	}

	// Sessions: one with a task longer than the lease, one escalating, one
	// to be cancelled.
	const slow, asks, doomed = "s-07", "s-13", "s-21"
	args := map[string]synthArgs{}
	for i := range sessions {
		name := fmt.Sprintf("s-%02d", i)
		a := synthArgs{Name: name, Iterations: iterations, TaskMillis: taskMillis}
		switch name {
		case slow:
			a.LongMillis = int(lease.Milliseconds() * 5 / 4)
		case asks:
			a.EscalateAt = 3
		case doomed:
			a.Iterations = 10000
		default:
			if i%10 == 9 {
				// Long sessions, so that the faults fall while sessions run
				// however fast the machine is.
				a.Iterations = 100
			}
		}
		args[name] = a
		if _, err := kind.Submit(ctx, name, a); err != nil {
			t.Fatal(err)
		}
	}

	// held returns the sessions whose live lease names holder, with tokens.
	held := func(holder string) map[string]int64 {
		rows, err := pool.Query(ctx, `SELECT session, token FROM `+q+`.leases WHERE holder LIKE $1 AND expires_at > clock_timestamp()`, holder+" #%")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		var s string
		var tok int64
		if _, err := pgx.ForEachRow(rows, []any{&s, &tok}, func() error { m[s] = tok; return nil }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// pickups measures how long each session held by a killed worker waits
	// for a new holder.
	var pickups []time.Duration
	var pickupWG sync.WaitGroup
	watchPickup := func(session string, token int64, killed time.Time) {
		defer pickupWG.Done()
		for ctx.Err() == nil {
			var tok int64
			var status string
			pool.QueryRow(ctx, `SELECT coalesce((SELECT token FROM `+q+`.leases WHERE session = $1), 0),
				coalesce((SELECT status FROM `+q+`.checkpoints WHERE session = $1 ORDER BY generation DESC LIMIT 1), '')`, session).Scan(&tok, &status)
			if tok > token {
				mu.Lock()
				pickups = append(pickups, time.Since(killed))
				mu.Unlock()
				return
			}
			time.Sleep(50 * time.Millisecond) // polling the server, not timing
		}
	}

	rng := rand.New(rand.NewPCG(7, 19))
	// pick takes a random worker out of procs if it holds sessions, and
	// returns it with the sessions it holds; cmd is nil if it holds none.
	pick := func() (name string, cmd *exec.Cmd, sessions map[string]int64) {
		mu.Lock()
		names := slices.Sorted(maps.Keys(procs))
		mu.Unlock()
		name = names[rng.IntN(len(names))]
		if sessions = held(name); len(sessions) == 0 {
			return name, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		cmd = procs[name]
		delete(procs, name)
		return name, cmd, sessions
	}
	// The faults, in this order, at least faultGap apart while sessions
	// run: SIGKILLs (K), SIGTERMs (T) and the server restart (R).
	const faultGap = 600 * time.Millisecond
	faults := "KKTKKRKTKKKTKK"
	next, lastFault := 0, time.Now()
	killed, terms, answered, cancelled, restarted := 0, 0, false, false, restart == ""
	deadline := time.Now().Add(6 * time.Minute)
	for {
		list, err := client.Sessions(ctx)
		if err != nil {
			if !restarted || time.Now().After(deadline) {
				t.Fatalf("Sessions: %v", err)
			}
			time.Sleep(200 * time.Millisecond) // the server restarts
			continue
		}
		done := 0
		for _, s := range list {
			switch {
			case s.Name == asks && s.Status == iterate.Escalated && !answered:
				if err := client.Answer(ctx, asks, "left"); err != nil {
					t.Fatalf("Answer: %v", err)
				}
				answered = true
			case s.Name == doomed && s.Iteration >= 3 && !cancelled:
				if err := client.Cancel(ctx, doomed); err != nil {
					t.Fatalf("Cancel: %v", err)
				}
				cancelled = true
			}
			if s.Status == iterate.Converged || s.Status == fleet.Cancelled {
				done++
			}
		}
		if done == sessions {
			break
		}
		if time.Now().After(deadline) {
			for _, s := range list {
				t.Logf("%s: %s at %d, job %s (attempt %d) %s", s.Name, s.Status, s.Iteration, s.Job, s.Attempt, s.LastError)
			}
			t.Fatalf("after 6 minutes, %d of %d sessions done", done, sessions)
		}
		if next == len(faults) || time.Since(lastFault) < faultGap {
			time.Sleep(200 * time.Millisecond) // polling the server, not timing
			continue
		}
		switch faults[next] {
		case 'K':
			// SIGKILL a random worker holding sessions; replace it.
			_, cmd, before := pick()
			if cmd == nil {
				break
			}
			at := time.Now()
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			killed++
			next++
			for s, tok := range before {
				pickupWG.Add(1)
				go watchPickup(s, tok, at)
			}
			startWorker()
		case 'T':
			// SIGTERM a worker holding sessions (a deploy): its loops stop
			// at a safe point, saved as interrupted, and go on elsewhere
			// having spent exactly what they would have uninterrupted.
			victim, cmd, _ := pick()
			if cmd == nil {
				break
			}
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("%s after SIGTERM: %v", victim, err)
			}
			terms++
			next++
			startWorker()
		case 'R':
			next++
			if restarted {
				break
			}
			t.Logf("restarting the server (pg_ctl -m immediate stop, 3 s, start)")
			if out, err := exec.Command("bash", restart, "3").CombinedOutput(); err != nil {
				t.Fatalf("restart: %v: %s", err, out)
			}
			restarted = true
		}
		lastFault = time.Now()
		time.Sleep(200 * time.Millisecond) // polling the server, not timing
	}
	pickupWG.Wait()
	if killed < kills || terms < sigterms || !answered || !cancelled {
		t.Errorf("killed %d of %d workers, stopped %d of %d, answered %v, cancelled %v: the run ended before the faults",
			killed, kills, terms, sigterms, answered, cancelled)
	}
	slices.Sort(pickups)
	if len(pickups) > 0 {
		t.Logf("pickup after SIGKILL (lease %v): %d sessions, median %v, max %v", lease, len(pickups),
			pickups[len(pickups)/2].Round(10*time.Millisecond), pickups[len(pickups)-1].Round(10*time.Millisecond))
	}

	// Every session but the cancelled one ends exactly as uninterrupted.
	for name, a := range args {
		res, err := kind.Result(ctx, name)
		if name == doomed {
			if res == nil || res.Status != fleet.Cancelled {
				t.Errorf("%s: %v, %v; want cancelled", name, res, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		answer := ""
		if name == asks {
			answer = "left"
		}
		want, got := reference(t, name, a, answer), summarize(res)
		if extra := got.Usage.Sub(want.Usage); !extra.IsZero() && interruptedFailures(ctx, t, pool, q, name, extra) {
			got.Usage = want.Usage
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s differs from an uninterrupted run (-want +got):\n%s", name, diff)
		}
	}

	// Every completed job has a final checkpoint.
	var bad int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.fleet_sessions s JOIN `+q+`.river_job j ON j.id = s.job_id
		JOIN LATERAL (SELECT status FROM `+q+`.checkpoints c WHERE c.session = s.session ORDER BY generation DESC LIMIT 1) c ON true
		WHERE j.state = 'completed' AND c.status IN ('running', 'interrupted', '')`).Scan(&bad); err != nil || bad != 0 {
		t.Errorf("%d completed jobs without a final checkpoint (%v)", bad, err)
	}
	// Tokens never go back across a session's generations.
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT token < lag(token) OVER (PARTITION BY session ORDER BY generation) AS back
		FROM `+q+`.checkpoints) x WHERE back`).Scan(&bad); err != nil || bad != 0 {
		t.Errorf("%d generations saved with an older token than the one before (%v)", bad, err)
	}
	// No iteration integrated by a holder after a lower one committed it:
	// the committing token of iteration i is the token of the first
	// generation at iteration ≥ i.
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.test_integrations i
		WHERE i.token > (SELECT c.token FROM `+q+`.checkpoints c WHERE c.session = i.session AND c.iteration >= i.iteration
			ORDER BY c.generation LIMIT 1)`).Scan(&bad); err != nil || bad != 0 {
		t.Errorf("%d iterations integrated again after they were committed (%v)", bad, err)
	}
	// No task ran twice under one lease.
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+q+`.test_task_runs
		GROUP BY session, iteration, task, token HAVING count(*) > 1) x`).Scan(&bad); err != nil || bad != 0 {
		t.Errorf("%d tasks ran twice under one lease (%v)", bad, err)
	}
	var lost, redone int
	pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.test_integrations i
		WHERE i.token < (SELECT c.token FROM `+q+`.checkpoints c WHERE c.session = i.session AND c.iteration >= i.iteration
			ORDER BY c.generation LIMIT 1)`).Scan(&lost)
	pool.QueryRow(ctx, `SELECT count(*) - count(DISTINCT (session, iteration, task)) FROM `+q+`.test_task_runs`).Scan(&redone)
	t.Logf("%d SIGKILLs, %d SIGTERMs, a server restart: %d integrations lost to a kill and redone; %d task runs repeated (in flight at a kill)", killed, terms, lost, redone)
}

// startWorkerProcess starts a worker process of the test binary (see
// workerMain), in its own process group, with env added to its
// environment, and waits until it is ready.
func startWorkerProcess(t testing.TB, name, schema string, lease time.Duration, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), workerEnv+"="+name, "FLEET_TEST_SCHEMA="+schema, "FLEET_TEST_LEASE="+lease.String()), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("%s: %q", name, line)
	}
	return cmd
}

// interruptedFailures reports whether extra, what session spent beyond an
// uninterrupted run, is the usage of attempts of failing tasks that ran
// more than once (the ledger's repeated runs): attempts interrupted by a
// SIGTERM as they failed, charged, and run again.
func interruptedFailures(ctx context.Context, t *testing.T, pool *pgxpool.Pool, q, session string, extra budget.Usage) bool {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT iteration, task, count(*) FROM `+q+`.test_task_runs WHERE session = $1
		GROUP BY iteration, task HAVING count(*) > 1`, session)
	if err != nil {
		t.Errorf("%s: reading the ledger: %v", session, err)
		return false
	}
	defer rows.Close()
	var candidates []budget.Usage
	for rows.Next() {
		var it, idx, n int
		if err := rows.Scan(&it, &idx, &n); err != nil {
			t.Errorf("%s: reading the ledger: %v", session, err)
			return false
		}
		for range n - 1 {
			if synthFails(it, idx) {
				candidates = append(candidates, synthUsage(it, idx))
			}
		}
	}
	var sums func(i int, left budget.Usage) bool
	sums = func(i int, left budget.Usage) bool {
		if left.IsZero() {
			return true
		}
		if i == len(candidates) || left.Tokens < 0 || left.Calls < 0 {
			return false
		}
		return sums(i+1, left.Sub(candidates[i])) || sums(i+1, left)
	}
	ok := extra.Iterations == 0 && extra.Cost == 0 && sums(0, extra)
	if ok {
		t.Logf("%s: %d tokens, %d calls beyond the uninterrupted run, of failing tasks interrupted as they failed", session, extra.Tokens, extra.Calls)
	}
	return ok
}
