package iterate_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// goexiter plans the tasks of its plan each iteration; the task whose
// index is exitIndex calls runtime.Goexit (as a host's t.FailNow does) in
// iteration exitAt. It keeps the outcomes each iteration integrated.
type goexiter struct {
	exitAt, exitIndex int
	mu                sync.Mutex
	integrated        [][]iterate.Outcome[int]
}

func (w *goexiter) Assess(context.Context, int) (gap.Assessment, error) {
	return gap.Assessment{Missing: []string{"more"}}, nil
}

func (w *goexiter) Work(_ context.Context, _ int, t iterate.Task) (iterate.Outcome[int], error) {
	if t.Iteration == w.exitAt && t.Index == w.exitIndex {
		runtime.Goexit()
	}
	return iterate.Outcome[int]{Part: 100*t.Iteration + t.Index}, nil
}

func (w *goexiter) Integrate(_ context.Context, s int, outs []iterate.Outcome[int]) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.integrated = append(w.integrated, append([]iterate.Outcome[int](nil), outs...))
	return s + 1, nil
}

// TestTaskGoexit: a task of a parallel iteration whose Work calls
// runtime.Goexit is a failed outcome of its own, whatever the context; it is
// neither the previous iteration's outcome of the same slot, integrated as
// a success (under a context that cannot end, before the fix: the outcome
// slice is reused and the slot never assigned), nor a hang until the
// context ends (under one that can). A lone task with a timeout of its own
// runs on a goroutine of its own too and must not be abandoned after its
// timeout instead.
func TestTaskGoexit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tasks       int
		timeout     time.Duration
		cancellable bool
	}{
		{"parallel", 3, 0, false},
		{"parallel_cancellable_context", 3, 0, true},
		{"parallel_with_timeouts", 3, time.Hour, false},
		{"lone_with_timeout", 1, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := &goexiter{exitAt: 2, exitIndex: tc.tasks - 1}
				plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
					tasks := make([]iterate.Task, tc.tasks)
					for i := range tasks {
						tasks[i].Timeout = tc.timeout
					}
					return iterate.Plan{Action: iterate.Expand, Tasks: tasks}, nil
				})
				ctx := context.Background()
				if tc.cancellable {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				start := time.Now()
				res, err := iterate.New[int](w, iterate.WithMaxIterations(3), iterate.WithStrategy(plan)).Run(ctx, 0)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("Run took %v of fake time, want none (no task waited for)", d)
				}
				if len(w.integrated) != 3 {
					t.Fatalf("%d iterations integrated, want 3", len(w.integrated))
				}
				outs := w.integrated[1]
				for i, o := range outs {
					if i == w.exitIndex {
						if o.Err == nil || !strings.Contains(o.Err.Error(), "runtime.Goexit") {
							t.Errorf("outcome of the task that called Goexit: part %d, err %v; want a failure naming runtime.Goexit", o.Part, o.Err)
						}
						if o.Task.Iteration != 2 || o.Task.Index != i {
							t.Errorf("outcome of the task that called Goexit is of task %s, want 2.%d", o.Task.ID(), i+1)
						}
						continue
					}
					if o.Err != nil || o.Part != 200+i {
						t.Errorf("outcome %d: part %d, err %v; want part %d", i, o.Part, o.Err, 200+i)
					}
				}
				if res.Totals.FailedTasks != 1 {
					t.Errorf("FailedTasks = %d, want 1", res.Totals.FailedTasks)
				}
			})
		})
	}
}
