//go:build unix

package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// The throughput of a fleet, in sessions per minute, at 1, 2 and 4 worker
// processes (BENCHMARKS.md, "Fleet"):
//
//	go test -run TestThroughput -fleet.throughput -v
var (
	throughput     = flag.Bool("fleet.throughput", false, "measure the fleet's throughput (TestThroughput)")
	throughputRuns = flag.Int("fleet.runs", 3, "runs per fleet size for TestThroughput")
)

const (
	tpSessions    = 48
	tpIterations  = 6
	tpTaskMillis  = 50
	tpConcurrency = 4
)

func TestThroughput(t *testing.T) {
	if !*throughput {
		t.Skip("measures throughput only with -fleet.throughput")
	}
	for _, workers := range []int{1, 2, 4} {
		var rates []float64
		for range *throughputRuns {
			rates = append(rates, fleetRate(t, workers))
		}
		slices.Sort(rates)
		t.Logf("%d workers × concurrency %d: %.0f sessions/min (median of %d: %s)", workers, tpConcurrency,
			rates[len(rates)/2], len(rates), strings.Trim(fmt.Sprintf("%.0f", rates), "[]"))
	}
}

// fleetRate starts workers worker processes in a fresh schema, submits
// tpSessions sessions once all are ready, and returns the sessions per
// minute from the submission to the last session's convergence.
func fleetRate(t *testing.T, workers int) float64 {
	url := serverURL(t)
	pool := newPool(t)
	schema := newSchema(t, pool)
	ctx := context.Background()
	var procs []*proc
	for i := range workers {
		procs = append(procs, start(t, fmt.Sprintf("worker-%d", i+1), "serve", "--db", url, "--schema", schema,
			"--concurrency", fmt.Sprint(tpConcurrency), "--lease", "10s", "--poll", "100ms"))
	}
	for _, p := range procs {
		eventually(t, 30*time.Second, p.name+" not ready", func() bool { return strings.Contains(p.out.String(), "ready") })
	}
	store, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	begin := time.Now()
	run1(t, "submit", "--db", url, "--schema", schema, "--count", fmt.Sprint(tpSessions),
		"--iterations", fmt.Sprint(tpIterations), "--task-ms", fmt.Sprint(tpTaskMillis))
	eventually(t, 5*time.Minute, "not every session converged", func() bool {
		ss, err := store.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range ss {
			if s.Status == string(iterate.Converged) {
				n++
			}
		}
		return n == tpSessions
	})
	elapsed := time.Since(begin)
	for _, p := range procs {
		p.signal(t, syscall.SIGTERM)
		p.wait(t, 20*time.Second)
	}
	return float64(tpSessions) / elapsed.Minutes()
}
