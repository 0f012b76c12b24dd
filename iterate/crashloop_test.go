package iterate_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// TestCrashLoopIgnoresInterruptions guards: only a crash counts. A run
// interrupted while its lone task ignores the context (abandoned after
// the grace period, still running) saves the session interrupted; under
// a bound of 1, the resume runs the task again instead of failing the
// session. Mutation caught: counting the tasks in flight in a checkpoint
// saved at a stop (the resume fails with a *CrashLoopError).
func TestCrashLoopIgnoresInterruptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpoint.Memory{}
		release := make(chan struct{})
		var stuck atomic.Bool
		stuck.Store(true)
		eng := iterate.New(iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) {
			if r.Iteration == 2 && stuck.Load() {
				<-release // ignores ctx
			}
			if r.Iteration == 3 {
				r.Done()
			}
			return n + 1, nil
		}), iterate.WithCheckpointer(store), iterate.WithGrace(time.Second), iterate.WithCrashLoopBound(1))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for {
				if c, err := store.Load(context.Background(), "default"); err == nil && c.Iteration == 1 {
					cancel()
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		res, err := eng.Run(ctx, 0)
		if !errors.Is(err, iterate.ErrInterrupted) {
			t.Fatalf("run: %v, %s", err, res.Status)
		}
		stuck.Store(false)
		close(release)
		synctest.Wait()
		res, err = eng.Resume(context.Background())
		if err != nil || res.Status != iterate.Converged || res.Iterations != 3 {
			t.Fatalf("resume: %v, %s after %d", err, res.Status, res.Iterations)
		}
	})
}
