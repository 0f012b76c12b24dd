package iterate_test

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// TestCtrlCDuringCommandIsNotAFailure guards "a task cut short because the
// loop was interrupted is interrupted, not failed, whatever error it
// returns": a Func running exec.CommandContext, whose error is "signal:
// killed" when the context ends, interrupted twice and then resumed to the
// end, counts no failure and runs the command again each time, with the
// lone task on the loop's goroutine and with a task timeout of its own.
// Mutation caught: journaling the killed command's error as a failed
// attempt (the resumed loop starts at "consecutive failures: 1/3", and
// after three interruptions aborts having never failed).
func TestCtrlCDuringCommandIsNotAFailure(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	for _, timeout := range []time.Duration{0, time.Hour} {
		t.Run("task timeout "+timeout.String(), func(t *testing.T) {
			store := &checkpoint.Memory{}
			opts := []iterate.Option{iterate.WithCheckpointer(store, iterate.Journal), iterate.WithMaxIterations(2),
				iterate.WithFailureThreshold(2), iterate.WithTaskTimeout(timeout)}
			var killed []error
			var mu sync.Mutex
			var ended []iterate.TaskEnded
			opts = append(opts, iterate.WithObserver(func(e iterate.Event) {
				if te, ok := e.(iterate.TaskEnded); ok {
					mu.Lock()
					ended = append(ended, te)
					mu.Unlock()
				}
			}))
			for i := range 3 {
				ctx, cancel := context.WithCancel(context.Background())
				step := func(ctx context.Context, s int, _ iterate.Round) (int, error) {
					cmd := exec.CommandContext(ctx, "sleep", "60")
					if err := cmd.Start(); err != nil {
						return s, err
					}
					cancel() // Ctrl+C while the agent runs
					err := cmd.Wait()
					killed = append(killed, err)
					return s, err
				}
				var err error
				if i == 0 {
					_, err = iterate.New(iterate.Func(step), opts...).Run(ctx, 0)
				} else {
					_, err = iterate.New(iterate.Func(step), opts...).Resume(ctx)
				}
				cancel()
				if !errors.Is(err, iterate.ErrInterrupted) {
					t.Fatalf("interrupted run: %v", err)
				}
			}
			if len(killed) != 3 || killed[0] == nil || errors.Is(killed[0], context.Canceled) {
				t.Fatalf("the command's errors %v: want 3 that are not the context's", killed)
			}
			for i, te := range ended {
				if !te.Interrupted || te.Err == nil {
					t.Errorf("TaskEnded %d: Interrupted %v, Err %v: want an interrupted task with the command's error", i, te.Interrupted, te.Err)
				}
			}
			ended = nil
			calls := 0
			res, err := iterate.New(iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) {
				calls++
				return s + 1, nil
			}), opts...).Resume(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != iterate.MaxIterations || res.State != 2 || calls != 2 {
				t.Errorf("status %s, state %d after %d calls: want max_iterations, 2, 2", res.Status, res.State, calls)
			}
			if len(ended) != 2 || ended[0].Interrupted || ended[1].Interrupted {
				t.Errorf("resumed run's TaskEnded events %+v: want 2, not interrupted", ended)
			}
			if res.History.Failures != 0 || res.Totals.FailedTasks != 0 {
				t.Errorf("%d failed iterations, %d failed tasks: want none", res.History.Failures, res.Totals.FailedTasks)
			}
		})
	}
}

// TestTaskPastItsOwnTimeoutFails: the other side of the rule above — a
// command killed by the task's own timeout, under a loop whose context is
// live, is a failed attempt, counted and journaled. (Mutation caught:
// treating every killed command as interrupted, which would retry a task
// that always times out forever.)
func TestTaskPastItsOwnTimeoutFails(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	res, err := iterate.New(iterate.Func(func(ctx context.Context, s int, _ iterate.Round) (int, error) {
		return s, exec.CommandContext(ctx, "sleep", "60").Run()
	}), iterate.WithCheckpointer(&checkpoint.Memory{}, iterate.Journal), iterate.WithTaskTimeout(50*time.Millisecond),
		iterate.WithFailureThreshold(2)).Run(context.Background(), 0)
	if !errors.Is(err, iterate.ErrAborted) || res.History.Failures != 2 {
		t.Fatalf("err %v after %d failures, want aborted after 2", err, res.History.Failures)
	}
}
