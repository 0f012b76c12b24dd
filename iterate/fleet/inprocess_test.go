package fleet_test

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/refine-go/refine/iterate/fleet"
)

var inProcessRounds = flag.Int("fleet.ab", 0, "TestThroughputInterleaved: A/B rounds per worker count (0 skips the test)")

// Interleaved throughput: sizes and settings. A worker of either kind runs
// abConcurrency at once and fetches as the fleet's River client does at
// Poll(abPoll): polling every abPoll, at most one fetch per abPoll/10.
const (
	abSessions    = 200
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
// weighs on both alike. It logs each round's ratio and their median
// (BENCHMARKS.md, "Fleet: throughput against River's no-op jobs"). On
// demand:
//
//	go test -run TestThroughputInterleaved -fleet.ab 5 -v
func TestThroughputInterleaved(t *testing.T) {
	if *inProcessRounds == 0 {
		t.Skip("measures on demand: -fleet.ab ROUNDS")
	}
	for _, workers := range []int{1, 2} {
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

// fleetRate runs abSessions no-op sessions on workers Fleets of this
// process, submitted at once once they work, and returns the sessions per
// second from the submission to the last completion.
func fleetRate(t *testing.T, workers int) float64 {
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	opts := []fleet.Option{fleet.Schema(schema), fleet.Poll(abPoll), fleet.Concurrency(abConcurrency)}
	var kind *fleet.Kind[int, noopState]
	var stops []func()
	for i := range workers {
		p := newPool(t, 2*abConcurrency+10)
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
	subs := make([]fleet.Submission[int], abSessions)
	for i := range subs {
		subs[i] = fleet.Submission[int]{Session: fmt.Sprintf("ab-%04d", i), Args: i}
	}
	time.Sleep(200 * time.Millisecond) // the workers' River clients started
	begin := time.Now()
	if _, err := kind.SubmitMany(context.Background(), subs); err != nil {
		t.Fatal(err)
	}
	waitCompleted(t, pool, schema, abSessions)
	return float64(abSessions) / time.Since(begin).Seconds()
}

// noopRate runs abSessions River no-op jobs on workers River clients of
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
		p := newPool(t, 2*abConcurrency+10)
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
	params := make([]river.InsertManyParams, abSessions)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{N: i}}
	}
	time.Sleep(200 * time.Millisecond) // the clients started
	begin := time.Now()
	if _, err := rc.InsertMany(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	waitCompleted(t, pool, schema, abSessions)
	return float64(abSessions) / time.Since(begin).Seconds()
}
