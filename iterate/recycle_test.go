package iterate_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// TestRecycledTaskRunsStayTheRecords guards the slabs of task runs used
// again in a loop whose records no host code can keep (the default policy
// and strategy, no observer, no checkpointer): every record of the
// Result's history still describes its own iteration's task, and no two
// records share a task run, with windows of several sizes and loops long
// enough to use every slab again many times. Mutation caught: slabs used
// again whatever the window holds, which leaves records with another
// iteration's output, or none (the exact condition on the window is
// TestRunSlabRecyclesOnlyWhatLeftTheWindow's).
func TestRecycledTaskRunsStayTheRecords(t *testing.T) {
	for _, window := range []int{2, 5, 32, 100} {
		for _, iterations := range []int{3, 64, 200, 1000} {
			step := func(_ context.Context, n int, r iterate.Round) (int, error) {
				r.Output("iteration " + strconv.Itoa(r.Iteration))
				return n + 1, nil
			}
			res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(iterations),
				iterate.WithHistoryWindow(window)).Run(context.Background(), 0)
			if err != nil {
				t.Fatalf("window %d: %v", window, err)
			}
			if res.Iterations != iterations {
				t.Fatalf("window %d: %d iterations, want %d", window, res.Iterations, iterations)
			}
			seen := map[*converge.TaskRun]int{}
			for _, rec := range res.History.Recent {
				if rec.Iteration == 0 {
					continue
				}
				if len(rec.TaskRuns) != 1 {
					t.Fatalf("window %d, %d iterations: iteration %d has %d task runs", window, iterations, rec.Iteration, len(rec.TaskRuns))
				}
				if want := "iteration " + strconv.Itoa(rec.Iteration); rec.TaskRuns[0].Output != want {
					t.Errorf("window %d, %d iterations: iteration %d's task says %q, want %q", window, iterations, rec.Iteration, rec.TaskRuns[0].Output, want)
				}
				if i, ok := seen[&rec.TaskRuns[0]]; ok {
					t.Errorf("window %d, %d iterations: iterations %d and %d share a task run", window, iterations, i, rec.Iteration)
				}
				seen[&rec.TaskRuns[0]] = rec.Iteration
			}
		}
	}
}
