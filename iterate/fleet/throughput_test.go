//go:build unix

package fleet_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/refine-go/refine/iterate/fleet"
)

var (
	throughputRuns = flag.Int("fleet.throughput", 0, "TestThroughput: runs per fleet size (0 skips the test)")
)

// noopEnv, when set beside workerEnv, makes the worker process a River
// client of no-op jobs (the baseline of TestThroughput).
const noopEnv = "FLEET_TEST_NOOP"

// Throughput sizes: every session is tpIterations iterations of 2 to 4
// tasks that do nothing, so that what is measured is the fleet's own cost
// (River's job, the lease, a checkpoint per iteration and per task).
const (
	tpSessions    = 120
	tpIterations  = 4
	tpConcurrency = 3 // as workerMain's
)

// TestThroughput measures the fleet's throughput, in sessions per second,
// at 1, 2 and 4 worker processes, beside River's own no-op jobs run by as
// many processes in the same run, and prints the ratio (BENCHMARKS.md,
// "Fleet"). On demand:
//
//	go test -run TestThroughput -fleet.throughput 3 -v
func TestThroughput(t *testing.T) {
	if *throughputRuns == 0 {
		t.Skip("measures on demand: -fleet.throughput RUNS")
	}
	url := serverURL(t)
	for _, workers := range []int{1, 2, 4} {
		var fleetRates, noopRates []float64
		for range *throughputRuns {
			fleetRates = append(fleetRates, rate(t, url, workers, false))
			noopRates = append(noopRates, rate(t, url, workers, true))
		}
		slices.Sort(fleetRates)
		slices.Sort(noopRates)
		f, n := fleetRates[len(fleetRates)/2], noopRates[len(noopRates)/2]
		t.Logf("%d workers × %d: fleet %.1f sessions/s (%d iterations each), River no-op %.1f jobs/s: ratio %.3f (medians of %d)",
			workers, tpConcurrency, f, tpIterations, n, f/n, len(fleetRates))
	}
}

// rate starts workers worker processes in a fresh schema, submits
// tpSessions sessions (or no-op jobs) once all are ready, and returns the
// sessions (jobs) per second from the submission to the last completion.
func rate(t *testing.T, url string, workers int, noop bool) float64 {
	pool := newPool(t, 8)
	schema := newSchema(t, pool)
	ctx := context.Background()
	client, _ := startFleet(t, url, schema)
	kind := registerSynth(client, nil)
	var procs []*exec.Cmd
	for i := range workers {
		env := []string{"FLEET_TEST_LEDGER=off"}
		if noop {
			env = append(env, noopEnv+"=1")
		}
		cmd := startWorkerProcess(t, fmt.Sprintf("tp-%d", i), schema, 30*time.Second, env...)
		procs = append(procs, cmd)
	}
	defer func() {
		for _, c := range procs {
			c.Process.Signal(syscall.SIGTERM)
		}
		for _, c := range procs {
			c.Wait()
		}
	}()
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if noop {
		params := make([]river.InsertManyParams, tpSessions)
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{N: i}}
		}
		if _, err := rc.InsertMany(ctx, params); err != nil {
			t.Fatal(err)
		}
	} else {
		for i := range tpSessions {
			name := fmt.Sprintf("tp-%03d", i)
			if _, err := kind.Submit(ctx, name, synthArgs{Name: name, Iterations: tpIterations}); err != nil {
				t.Fatal(err)
			}
		}
	}
	q := pgx.Identifier{schema}.Sanitize()
	for {
		var done int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+q+`.river_job WHERE state = 'completed'`).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done == tpSessions {
			break
		}
		if time.Since(begin) > 5*time.Minute {
			t.Fatalf("%d of %d done after 5 minutes", done, tpSessions)
		}
		time.Sleep(20 * time.Millisecond) // polling the server, not timing
	}
	return float64(tpSessions) / time.Since(begin).Seconds()
}

// noopArgs are the arguments of River's no-op jobs.
type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// noopMain is a worker process of River's no-op jobs, on the default
// queue, with the fleet's concurrency and poll interval, until SIGTERM.
func noopMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv("REFINE_PG_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	schema := os.Getenv("FLEET_TEST_SCHEMA")
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err == nil {
		_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: tpConcurrency}},
		Workers:           workers,
		FetchPollInterval: fleet.DefaultPoll / 10,
		FetchCooldown:     fleet.DefaultPoll / 100,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := client.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client.Stop(sctx)
	return 0
}
