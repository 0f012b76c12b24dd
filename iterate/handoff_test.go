package iterate_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// Under a context that can end, the loop runs on a goroutine of its own and
// the lone task of an iteration on the loop's goroutine; these tests hold
// it to what a goroutine per task did: timeouts, panics, abandonment after
// the grace period (the caller's goroutine ending the run), and what the
// caller sees of a panic or runtime.Goexit on the loop's goroutine.

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

// TestAbandonedTaskRunEndsSaved: when the caller's goroutine ends a run
// whose lone task ignores cancellation, the run is saved as interrupted, the
// observers hear of the abandoned task, and Resume goes on to the result of
// an uninterrupted run.
func TestAbandonedTaskRunEndsSaved(t *testing.T) {
	for _, persist := range []iterate.Persist{0, iterate.Journal} {
		t.Run(fmt.Sprintf("persist=%d", persist), func(t *testing.T) {
			release := make(chan struct{})
			inTask := make(chan struct{})
			var hang atomic.Bool
			hang.Store(true)
			step := func(ctx context.Context, n int, r iterate.Round) (int, error) {
				if r.Iteration == 3 && hang.Load() {
					close(inTask)
					<-release // ignores its context
				}
				r.Charge(budget.Usage{Tokens: 10})
				return n + 1, nil
			}
			store := &checkpoint.Memory{}
			rec := &iteratetest.Recorder{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { <-inTask; cancel() }()
			newEngine := func(opts ...iterate.Option) iterate.Engine[int] {
				return iterate.New(iterate.Func(step), append([]iterate.Option{iterate.WithMaxIterations(6),
					iterate.WithGrace(10 * time.Millisecond), iterate.WithSession("s"),
					iterate.WithCheckpointer(store, persist)}, opts...)...)
			}
			res, err := newEngine(iterate.WithObserver(rec.Observe)).Run(ctx, 0)
			var ie *iterate.InterruptedError
			if !errors.As(err, &ie) || !errors.Is(ie.Last, iterate.ErrAbandoned) || res.Iterations != 2 || res.State != 2 {
				t.Fatalf("Run = %+v, %v; want interrupted after 2 iterations at state 2, the last error ErrAbandoned", res, err)
			}
			ended := iteratetest.Of[iterate.TaskEnded](rec)
			if last := ended[len(ended)-1]; last.Iteration() != 3 || !errors.Is(last.Err, iterate.ErrAbandoned) {
				t.Errorf("last TaskEnded = %+v, want iteration 3 abandoned", last)
			}
			stopped := iteratetest.Of[iterate.LoopStopped](rec)
			if len(stopped) != 1 || !stopped[0].Saved || stopped[0].Status != iterate.Interrupted {
				t.Errorf("LoopStopped = %+v, want one, interrupted and saved", stopped)
			}
			hang.Store(false)
			close(release)
			res, err = newEngine().Resume(context.Background())
			if err != nil || res.Iterations != 6 || res.State != 6 || res.Usage.Tokens != 60 {
				t.Fatalf("Resume = %+v, %v; want 6 iterations, state 6, 60 tokens", res, err)
			}
		})
	}
}

// TestLoopGoroutinePanicAndGoexitReachTheCaller: what ends the loop's own
// goroutine abnormally ends the caller's the same way. Observers, stores,
// codecs and the worker's methods are recovered (TestObserverPanicEndsRun);
// a zap core of the host's that panics is not: zap's contract is that
// cores do not panic but at the levels whose purpose it is.
func TestLoopGoroutinePanicAndGoexitReachTheCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Run("panic", func(t *testing.T) {
		logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
			zapcore.AddSync(panicWriter{}), zap.InfoLevel))
		defer func() {
			if v := recover(); v != "logger" {
				t.Errorf("recovered %v, want the logger's panic", v)
			}
		}()
		iterate.New(iterate.Func(step), iterate.WithLogger(logger)).Run(ctx, 0)
		t.Error("Run returned")
	})
	t.Run("goexit", func(t *testing.T) {
		exited := make(chan bool)
		go func() {
			returned := false
			defer func() { exited <- returned }()
			goexit := func(ctx context.Context, n int, r iterate.Round) (int, error) {
				runtime.Goexit()
				return n, nil
			}
			iterate.New(iterate.Func(goexit)).Run(ctx, 0)
			returned = true
		}()
		if <-exited {
			t.Error("Run returned after its loop's goroutine called runtime.Goexit")
		}
	})
}

// panicWriter is a log sink that panics.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("logger") }
