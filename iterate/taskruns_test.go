package iterate_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// TestTaskRunsNeverChange: the task runs of a record, carved from a slab
// the engine shares between iterations, never change once a policy has
// seen them, nor once Run returned them in Result.History, and none of
// them can grow into another's.
func TestTaskRunsNeverChange(t *testing.T) {
	type kept struct {
		runs []converge.TaskRun // as the policy saw it
		copy []converge.TaskRun // its values then
	}
	var seen []kept
	watch := converge.PolicyFunc(func(h *converge.History) converge.Decision {
		if rec := h.Last(); rec != nil && rec.TaskRuns != nil {
			seen = append(seen, kept{rec.TaskRuns, append([]converge.TaskRun(nil), rec.TaskRuns...)})
		}
		return converge.Decision{}
	})
	step := func(_ context.Context, n int, r iterate.Round) (int, error) {
		r.Output("step " + strconv.Itoa(n))
		return n + 1, nil
	}
	const iterations = 300 // several slabs, the window wrapping many times
	res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(iterations), iterate.WithHistoryWindow(4),
		iterate.WithConvergence(converge.Any(converge.IterationLimit{}, watch))).Run(context.Background(), 0)
	if err != nil || res.Iterations != iterations {
		t.Fatal(err, res.Iterations)
	}
	if len(seen) < iterations-1 { // Any may stop on the limit before asking watch
		t.Fatalf("the policy saw %d records with task runs, want %d", len(seen), iterations-1)
	}
	for i, k := range seen {
		if diff := cmp.Diff(k.copy, k.runs); diff != "" {
			t.Errorf("record %d: task runs changed after the policy saw them (-then +now):\n%s", i+1, diff)
		}
		if cap(k.runs) != len(k.runs) {
			t.Errorf("record %d: task runs of length %d have capacity %d: an append would write into another's", i+1, len(k.runs), cap(k.runs))
		}
		if want := "step " + strconv.Itoa(i); len(k.runs) != 1 || k.runs[0].Output != want {
			t.Errorf("record %d: task runs %+v, want one with the output %q", i+1, k.runs, want)
		}
	}
	for i := range res.History.Recent {
		if runs := res.History.Recent[i].TaskRuns; cap(runs) != len(runs) {
			t.Errorf("Result.History.Recent[%d]: task runs of length %d have capacity %d", i, len(runs), cap(runs))
		}
	}
}
