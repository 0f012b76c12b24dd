package fleet_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/refine-go/refine/iterate/fleet"
)

var (
	inProcessRounds = flag.Int("fleet.ab", 0, "TestThroughputInterleaved: A/B rounds per worker count (0 skips the test)")
	sampleWaits     = flag.Bool("fleet.waits", false, "TestThroughputInterleaved: log what the server's backends wait on during the fleet's rounds")
	onlyWorkers     = flag.Int("fleet.workers", 0, "TestThroughputInterleaved: measure at this many workers only (0: at 1 and at 2)")
	logJobs         = flag.Bool("fleet.jobs", false, "TestThroughputInterleaved: log the CPU time a session and a job cost, and how long the fleet's jobs waited and ran")
	abSessions      = flag.Int("fleet.round", 600, "TestThroughputInterleaved: sessions (jobs) measured a round, after the warm-up")
)

// Interleaved throughput: sizes and settings. A worker of either kind runs
// abConcurrency at once and fetches as the fleet's River client does at
// Poll(abPoll): polling every abPoll, at most one fetch per abPoll/10.
const (
	abWarm        = 40
	abIterations  = 4
	abConcurrency = fleet.DefaultConcurrency
	abPoll        = 100 * time.Millisecond
)

// TestThroughputInterleaved measures, in this one process, the fleet's
// no-op sessions (abIterations iterations of two empty tasks) per second
// against River's own no-op jobs per second, at 1 and 2 workers (a Fleet,
// or a River client, each on a pool of its own, all with the same
// concurrency and fetch settings), interleaved: each round runs both, in
// alternating order, on fresh schemas, so that a machine loaded by others
// weighs on both alike. Each side runs in the steady state: its pools'
// connections all open (warmPool) and abWarm sessions (jobs) run before
// -fleet.round (600) are measured. It logs each round's ratio and their median
// (BENCHMARKS.md, "Throughput beside River, interleaved in one process");
// -fleet.jobs adds each side's CPU time per session (job). On demand:
//
//	go test -run TestThroughputInterleaved -fleet.ab 5 -fleet.jobs -v
func TestThroughputInterleaved(t *testing.T) {
	if *inProcessRounds == 0 {
		t.Skip("measures on demand: -fleet.ab ROUNDS")
	}
	for _, workers := range []int{1, 2} {
		if *onlyWorkers != 0 && workers != *onlyWorkers {
			continue
		}
		var ratios, fleetRates, noopRates []float64
		for round := range *inProcessRounds {
			var f, n float64
			if round%2 == 0 {
				f, n = fleetRate(t, workers), noopRate(t, workers)
			} else {
				n, f = noopRate(t, workers), fleetRate(t, workers)
			}
			t.Logf("%d workers, round %d: fleet %.1f sessions/s, River %.1f no-op jobs/s: ratio %.3f", workers, round, f, n, f/n)
			ratios, fleetRates, noopRates = append(ratios, f/n), append(fleetRates, f), append(noopRates, n)
		}
		t.Logf("%d workers × %d: median fleet %.1f sessions/s, River %.1f jobs/s, median ratio %.3f (range %.3f–%.3f, %d rounds)",
			workers, abConcurrency, median(fleetRates), median(noopRates), median(ratios), slices.Min(ratios), slices.Max(ratios), len(ratios))
	}
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// warmPool returns a pool of n connections, all open, as a worker's pool
// is once it has run for a while: the server processes a round starts
// are not counted in its time (they cost the server as much CPU as a few
// sessions each, and a short round would weigh them far above what a
// long-running fleet pays).
func warmPool(t *testing.T, n int32) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = n, n
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for deadline := time.Now().Add(30 * time.Second); pool.Stat().TotalConns() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections open after 30 s", pool.Stat().TotalConns(), n)
		}
		time.Sleep(10 * time.Millisecond) // the pool opening its connections
	}
	return pool
}

// waitCompleted waits until n jobs of schema are completed.
func waitCompleted(t *testing.T, pool *pgxpool.Pool, schema string, n int) {
	t.Helper()
	q := pgx.Identifier{schema}.Sanitize()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var done int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+q+`.river_job WHERE state = 'completed'`).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d done after 5 minutes", done, n)
		}
		time.Sleep(5 * time.Millisecond) // polling the server, not timing
	}
}

// fleetRate runs -fleet.round no-op sessions on workers Fleets of this
// process, submitted at once once they work, and returns the sessions per
// second from the submission to the last completion.
func fleetRate(t *testing.T, workers int) float64 {
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	opts := []fleet.Option{fleet.Schema(schema), fleet.Poll(abPoll), fleet.Concurrency(abConcurrency)}
	var kind *fleet.Kind[int, noopState]
	var stops []func()
	for i := range workers {
		p := warmPool(t, 2*abConcurrency+10)
		// Closed when the round ends (after the stops below), not at the
		// test's: a run of many rounds would otherwise keep every round's
		// connections and exceed the server's max_connections.
		defer p.Close()
		f, err := fleet.New(context.Background(), p, append(opts, fleet.Holder(fmt.Sprintf("ab-%d", i)))...)
		if err != nil {
			t.Fatal(err)
		}
		k := registerNoop(f, abIterations)
		if kind == nil {
			kind = k
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.Work(ctx) }()
		stops = append(stops, func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			f.Store().Close()
		})
	}
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	submit := func(prefix string, n int) {
		subs := make([]fleet.Submission[int], n)
		for i := range subs {
			subs[i] = fleet.Submission[int]{Session: fmt.Sprintf("%s-%04d", prefix, i), Args: i}
		}
		if _, err := kind.SubmitMany(context.Background(), subs); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the workers' River clients started
	// Warm-up, not measured: the workers' connections are opened and
	// their server processes have read the tables and planned the
	// statements, as in a fleet that has been running.
	submit("warm", abWarm)
	waitCompleted(t, pool, schema, abWarm)
	if *sampleWaits {
		defer waitSampler(t, fmt.Sprintf("%d workers", workers))()
	}
	meter := startCPU()
	begin := time.Now()
	submit("ab", *abSessions)
	waitCompleted(t, pool, schema, abWarm+*abSessions)
	elapsed := time.Since(begin)
	if *logJobs {
		what := fmt.Sprintf("%d workers, fleet", workers)
		meter.log(t, what, *abSessions)
		logJobTimes(t, pool, schema, what, begin, elapsed, workers*abConcurrency)
	}
	return float64(*abSessions) / elapsed.Seconds()
}

// logJobTimes logs, from River's jobs of schema, how long a job ran
// (attempted to finalized) and waited (created to attempted), and how
// full the slots were over elapsed.
func logJobTimes(t *testing.T, pool *pgxpool.Pool, schema, what string, since time.Time, elapsed time.Duration, slots int) {
	var ran, waited, p50, p90, first, last float64
	if err := pool.QueryRow(context.Background(), `SELECT
		sum(extract(epoch FROM finalized_at - attempted_at)), avg(extract(epoch FROM attempted_at - created_at)),
		extract(epoch FROM min(attempted_at) - min(created_at)), extract(epoch FROM max(finalized_at) - min(created_at)),
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finalized_at - attempted_at)),
		percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM finalized_at - attempted_at))
		FROM `+pgx.Identifier{schema}.Sanitize()+`.river_job WHERE created_at >= $1`, since).Scan(&ran, &waited, &first, &last, &p50, &p90); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: a job ran %.1f ms (median; p90 %.1f ms) after waiting %.1f ms (mean); slots busy %.0f%% of %v; first attempt %.0f ms, last end %.0f ms after the first insert",
		what, p50*1000, p90*1000, waited*1000, 100*ran/(elapsed.Seconds()*float64(slots)), elapsed.Round(time.Millisecond), first*1000, last*1000)
}

// waitSampler samples, every millisecond until the returned stop is
// called, what the server's client backends other than its own do (their
// state and wait event, and the statement's first words), and the stop
// logs the tally: where a session's time goes on the server's side.
func waitSampler(t *testing.T, what string) (stop func()) {
	pool := newPool(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan map[string]int)
	go func() {
		tally, samples := map[string]int{}, 0
		defer func() { tally["(samples)"] = samples; done <- tally }()
		for ctx.Err() == nil {
			rows, err := pool.Query(ctx, `SELECT state || ' ' || coalesce(wait_event_type || ':' || wait_event, '-') || ' ' ||
				CASE WHEN state = 'idle' THEN '' ELSE left(regexp_replace(query, '\s+', ' ', 'g'), 50) END
				FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
				AND backend_type = 'client backend' AND application_name <> 'sampler'`)
			if err != nil {
				return
			}
			keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return
			}
			samples++
			for _, k := range keys {
				tally[k]++
			}
			time.Sleep(time.Millisecond) // a sampling period, not timing
		}
	}()
	return func() {
		cancel()
		tally := <-done
		n := tally["(samples)"]
		keys := slices.SortedFunc(maps.Keys(tally), func(a, b string) int { return tally[b] - tally[a] })
		for _, k := range keys[:min(len(keys), 15)] {
			t.Logf("%s: %6.2f backends on average  %s", what, float64(tally[k])/float64(max(n, 1)), k)
		}
	}
}

// noopRate runs -fleet.round River no-op jobs on workers River clients of
// this process, inserted at once once they work, and returns the jobs per
// second from the insertion to the last completion.
func noopRate(t *testing.T, workers int) float64 {
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	// The fleet's New migrates River's tables: the same schema as the
	// fleet's run.
	if _, err := fleet.New(context.Background(), pool, fleet.Schema(schema)); err != nil {
		t.Fatal(err)
	}
	var stops []func()
	for range workers {
		p := warmPool(t, 2*abConcurrency+10)
		// Closed when the round ends (after the stops below), not at the
		// test's: a run of many rounds would otherwise keep every round's
		// connections and exceed the server's max_connections.
		defer p.Close()
		ws := river.NewWorkers()
		river.AddWorker(ws, noopWorker{})
		c, err := river.NewClient(riverpgxv5.New(p), &river.Config{
			Schema:            schema,
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: abConcurrency}},
			Workers:           ws,
			FetchPollInterval: abPoll,
			FetchCooldown:     abPoll / 10,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		stops = append(stops, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c.Stop(ctx)
		})
	}
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(n int) {
		params := make([]river.InsertManyParams, n)
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{N: i}}
		}
		if _, err := rc.InsertMany(context.Background(), params); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the clients started
	insert(abWarm)                     // warm-up, not measured, as the fleet's
	waitCompleted(t, pool, schema, abWarm)
	meter := startCPU()
	begin := time.Now()
	insert(*abSessions)
	waitCompleted(t, pool, schema, abWarm+*abSessions)
	if *logJobs {
		meter.log(t, fmt.Sprintf("%d workers, River", workers), *abSessions)
	}
	return float64(*abSessions) / time.Since(begin).Seconds()
}
