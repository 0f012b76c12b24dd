package iterate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// waves runs the tasks of its plan in stages and records the order of
// events; it also concludes by recording the final status.
type waves struct {
	mu  sync.Mutex
	log []string
}

func (w *waves) note(s string) {
	w.mu.Lock()
	w.log = append(w.log, s)
	w.mu.Unlock()
}

func (w *waves) Assess(context.Context, []string) (gap.Assessment, error) {
	return gap.Assessment{}, nil
}

func (w *waves) Work(_ context.Context, _ []string, t iterate.Task) (iterate.Outcome[[]string], error) {
	// Later tasks of a stage finish first; stages must still not overlap.
	time.Sleep(time.Duration(10-t.Index) * time.Second)
	w.note(fmt.Sprintf("task %s stage %d data %v", t.ID(), t.Stage, t.Data))
	return iterate.Outcome[[]string]{Part: []string{t.ID()}}, nil
}

func (w *waves) Integrate(_ context.Context, s []string, outs []iterate.Outcome[[]string]) ([]string, error) {
	for _, o := range outs {
		s = append(s, o.Part...)
	}
	return s, nil
}

func (w *waves) EndStage(_ context.Context, _ []string, stage int, outs []iterate.Outcome[[]string]) error {
	w.note(fmt.Sprintf("end stage %d (%d tasks)", stage, len(outs)))
	return nil
}

func (w *waves) Conclude(_ context.Context, s []string, status iterate.Status, reason string) ([]string, error) {
	return append(s, "concluded: "+string(status)), nil
}

// TestStagesRunInOrder: the tasks of a stage start once the lower stages are
// done, EndStage runs between stages, outcomes fold in task order, and the
// Concluder records the stop.
func TestStagesRunInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
			return iterate.Plan{Action: iterate.Expand, Tasks: []iterate.Task{
				{Stage: 2, Data: "c"}, {Stage: 1, Data: "a"}, {Stage: 1, Data: "b"},
			}}, nil
		})
		w := &waves{}
		res, err := iterate.New[[]string](w, iterate.WithMaxIterations(1), iterate.WithStrategy(plan)).Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"task 1.3 stage 1 data b", "task 1.2 stage 1 data a", "end stage 1 (2 tasks)",
			"task 1.1 stage 2 data c", "end stage 2 (1 tasks)",
		}
		if diff := cmp.Diff(want, w.log); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"1.1", "1.2", "1.3", "concluded: max_iterations"}, res.State); diff != "" {
			t.Errorf("state (-want +got):\n%s", diff)
		}
	})
}

// TestCancelledBeforeStart: a context that ended before Run or Resume gives
// an interrupted result and nothing is saved.
func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	store := checkpoint.NewDir(t.TempDir())
	eng := iterate.New(iterate.Func(func(context.Context, int, iterate.Round) (int, error) { return 1, nil }),
		iterate.WithCheckpointer(store))
	for name, call := range map[string]func() (*iterate.Result[int], error){
		"run":    func() (*iterate.Result[int], error) { return eng.Run(ctx, 7) },
		"resume": func() (*iterate.Result[int], error) { return eng.Resume(ctx) },
	} {
		res, err := call()
		var ie *iterate.InterruptedError
		if !errors.As(err, &ie) || !ie.BeforeStart {
			t.Errorf("%s: %v does not say it never started", name, err)
		}
		if !errors.Is(err, iterate.ErrInterrupted) || !errors.Is(err, context.Canceled) || res == nil || res.Status != iterate.Interrupted {
			t.Errorf("%s: %v, %+v", name, err, res)
		}
	}
	if _, err := store.Load(context.Background(), iterate.DefaultSession); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("something was saved: %v", err)
	}
}
