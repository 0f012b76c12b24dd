package iterate_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/refine-go/refine/iterate"
)

// The lone task of an iteration under a context that can end runs on a
// goroutine that serves the whole run; these tests hold it to what a
// goroutine per task did: timeouts, panics, abandonment after the grace
// period, and a fresh goroutine after an abandoned one.

func TestLoneTaskTimeoutAndPanicUnderCancelableContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var failures []error
	step := func(ctx context.Context, n int, r iterate.Round) (int, error) {
		switch r.Iteration {
		case 2:
			<-ctx.Done() // the task's timeout
			return n, context.Cause(ctx)
		case 3:
			panic("boom")
		}
		return n + 1, nil
	}
	observe := func(e iterate.Event) {
		if e, ok := e.(iterate.IterationEnded); ok && e.Err != nil {
			failures = append(failures, e.Err)
		}
	}
	res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(5), iterate.WithTaskTimeout(20*time.Millisecond),
		iterate.WithObserver(observe)).Run(ctx, 0)
	if err != nil || res.Iterations != 5 || res.State != 3 {
		t.Fatalf("Run = %+v, %v; want 5 iterations, state 3", res, err)
	}
	var pe *iterate.PanicError
	if len(failures) != 2 || !errors.Is(failures[0], context.DeadlineExceeded) || !errors.As(failures[1], &pe) {
		t.Fatalf("failed iterations %v, want a timeout and a panic", failures)
	}
}

func TestLoneTaskAbandonedUnderCancelableContext(t *testing.T) {
	release := make(chan struct{})
	var started, returned atomic.Int32
	step := func(ctx context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration == 2 || r.Iteration == 4 {
			started.Add(1)
			<-release // ignores its context
			returned.Add(1)
			return n, nil
		}
		return n + 1, nil
	}
	t.Run("timeout", func(t *testing.T) {
		// A task that ignores its timeout is abandoned; the next
		// iterations run on a new goroutine.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var abandoned atomic.Int32
		observe := func(e iterate.Event) {
			if e, ok := e.(iterate.IterationEnded); ok && errors.Is(e.Err, iterate.ErrAbandoned) {
				abandoned.Add(1)
			}
		}
		res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(5), iterate.WithTaskTimeout(10*time.Millisecond),
			iterate.WithGrace(50*time.Millisecond), iterate.WithObserver(observe)).Run(ctx, 0)
		if err != nil || res.Iterations != 5 || res.State != 3 || abandoned.Load() != 2 {
			t.Fatalf("Run = %+v, %v, %d abandoned; want 5 iterations, state 3, 2 abandoned", res, err, abandoned.Load())
		}
	})
	t.Run("cancel", func(t *testing.T) {
		// A task that ignores the loop's cancellation is abandoned and
		// the run returns, interrupted, after the grace period.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		before := started.Load()
		go func() {
			for started.Load() == before {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		begin := time.Now()
		res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(5), iterate.WithGrace(20*time.Millisecond)).Run(ctx, 0)
		var ie *iterate.InterruptedError
		if !errors.As(err, &ie) || !errors.Is(ie.Last, iterate.ErrAbandoned) || res.Iterations != 1 {
			t.Fatalf("Run = %+v, %v; want interrupted after 1 iteration, the last error ErrAbandoned", res, err)
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Errorf("Run returned after %v", d)
		}
	})
	close(release)
	for returned.Load() != started.Load() { // goleak checks the abandoned goroutines end
		time.Sleep(time.Millisecond)
	}
}
