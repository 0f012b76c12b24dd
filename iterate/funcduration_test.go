package iterate_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/refine-go/refine/iterate"
)

// TestFuncTaskEndsItsIteration guards the durations of a Func's
// iterations, whose end is read once, at the end of their only task (the
// engine's iterClock and run.lapAtTaskEnd): each record's task ran as
// long as its step slept, the iteration lasted as long as its task, and
// the iterations add up to the session's time. Exact: the steps sleep in
// a synctest bubble. Mutations caught: the iteration's end taken at the
// task's start (the iterations last 0 s), the task's duration read from its
// end alone (the time since the run's start).
func TestFuncTaskEndsItsIteration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		step := func(_ context.Context, n int, r iterate.Round) (int, error) {
			time.Sleep(time.Duration(r.Iteration) * time.Second)
			return n + 1, nil
		}
		res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(4)).Run(context.Background(), 0)
		if err != nil || res.Iterations != 4 {
			t.Fatal(err, res.Iterations)
		}
		var sum time.Duration
		for _, rec := range res.History.Recent[1:] {
			want := time.Duration(rec.Iteration) * time.Second
			if rec.Duration != want || len(rec.TaskRuns) != 1 || rec.TaskRuns[0].Duration != want {
				t.Errorf("iteration %d: lasted %v, its task %v; want %v both", rec.Iteration, rec.Duration, rec.TaskRuns, want)
			}
			sum += rec.Duration
		}
		if want := 10 * time.Second; sum != want || res.Totals.Duration != want {
			t.Errorf("the iterations lasted %v, the totals say %v; want %v", sum, res.Totals.Duration, want)
		}
	})
}
