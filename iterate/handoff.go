package iterate

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// This file holds how a run under a context that can end keeps its lone
// tasks on the loop's goroutine and still returns within the grace period
// when a task ignores the end of the context.
//
// The loop runs on a goroutine of its own; the caller's goroutine waits for
// its result. The loop's goroutine holds the run (handoff.mu) at all times
// but while a lone task's Work runs on it. When the context ends and the
// loop has not returned within the grace period, the caller's goroutine
// takes the run: if the loop's goroutine is inside a task, the task is
// abandoned and the caller's goroutine ends the run, interrupted, as the
// loop would have; the loop's goroutine, once the task returns, finds the
// run taken and exits without touching it. Otherwise (the loop is in host
// code that is not a task, or saving) the caller waits for it, as a loop on
// the caller's goroutine would have.
//
// A task of an iteration of several, or with a timeout of its own, runs on
// a goroutine of its own, as before: the loop abandons it itself.

// handoff is what the loop's goroutine and the caller's share.
type handoff struct {
	mu sync.Mutex
	// ctx is the loop's context: a lone task under it (no timeout of its
	// own, no wall-time limit) runs on the loop's goroutine.
	ctx context.Context
	// held is set while the loop's goroutine holds mu; only it reads it.
	held bool
	// task is the lone task the loop's goroutine runs without mu (in the
	// plan, which does not change meanwhile), and start when it started,
	// when observing.
	task  *Task
	start time.Duration // after the run's start (iterClock.since)
	// taken is set, under mu, when the caller's goroutine took the run.
	taken bool
}

// loopExit is how the loop's goroutine ended.
type loopExit[S any] struct {
	res *Result[S]
	err error
	// panicked: the loop panicked with value; goexit: it called
	// runtime.Goexit (a test's t.FailNow in host code).
	panicked bool
	value    any
	goexit   bool
}

// drive runs the loop: on the caller's goroutine under a context that
// cannot end, on a goroutine of its own otherwise (see the top of this
// file). A panic or runtime.Goexit on the loop's goroutine is repeated on
// the caller's.
func (r *run[S]) drive(ctx context.Context) (*Result[S], error) {
	r.loopCtx = loopContext{Context: ctx, w: r}
	ctx = &r.loopCtx
	if ctx.Done() == nil {
		return r.loop(ctx)
	}
	h := &handoff{ctx: ctx, held: true}
	r.handoff = h
	h.mu.Lock() // for the loop's goroutine, which unlocks it when it ends
	exits := make(chan loopExit[S], 1)
	go r.runLoop(ctx, exits)

	select {
	case x := <-exits:
		return x.unwrap()
	case <-ctx.Done():
	}
	grace := time.NewTimer(r.cfg.grace)
	defer grace.Stop()
	select {
	case x := <-exits:
		return x.unwrap()
	case <-grace.C:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case x := <-exits: // the loop ended before it let go of the run
		return x.unwrap()
	default:
	}
	// The loop's goroutine is in a lone task that ignores the end of the
	// context: end the run here.
	h.taken = true
	return r.abandonTask(ctx, *h.task, h.start)
}

// runLoop runs the loop on its own goroutine and sends how it ended.
func (r *run[S]) runLoop(ctx context.Context, exits chan<- loopExit[S]) {
	h := r.handoff
	var x loopExit[S]
	returned := false
	defer func() {
		if !returned {
			x.value = recover()
			x.panicked, x.goexit = x.value != nil, x.value == nil
		}
		if !h.held {
			h.mu.Lock() // a task's Work panicked through or called Goexit
		}
		if !h.taken {
			exits <- x // before unlocking: the caller sees it once it has mu
		}
		h.mu.Unlock()
	}()
	x.res, x.err = r.loop(ctx)
	returned = true
}

// unwrap returns the loop's result, or repeats its panic or Goexit.
func (x loopExit[S]) unwrap() (*Result[S], error) {
	switch {
	case x.panicked:
		panic(x.value)
	case x.goexit:
		runtime.Goexit()
	}
	return x.res, x.err
}

// workReleased runs a lone task on the loop's goroutine, letting go of the
// run meanwhile so that the caller's goroutine can take it if the task
// ignores the end of the context. If it did, the task's outcome is
// dropped and the goroutine exits.
func (r *run[S]) workReleased(ctx context.Context, state S, t *Task, out *Outcome[S], start time.Duration) {
	h := r.handoff
	h.task, h.start, h.held = t, start, false
	h.mu.Unlock()
	r.work(ctx, state, t, out)
	h.mu.Lock()
	h.held = true
	if h.taken {
		runtime.Goexit() // the deferred function of runLoop unlocks mu
	}
}

// abandonTask ends, on the caller's goroutine, a run whose loop is stuck in
// task t past the grace period: the task is abandoned, as one on a
// goroutine of its own would be, and the run stops interrupted.
func (r *run[S]) abandonTask(ctx context.Context, t Task, start time.Duration) (*Result[S], error) {
	out := r.abandoned(ctx, &t)
	out.Task, out.Duration = t, r.clock.since()-start
	if r.observing {
		r.emit(TaskEnded{it: r.at(t.Iteration), Task: t, Err: out.Err, Duration: out.Duration})
	}
	r.endStage(ctx, r.state, t.Stage, []Outcome[S]{out})
	loopCtx := r.handoff.ctx
	if err := r.integrateIteration(loopCtx, &r.inflight, []Outcome[S]{out}); err != nil {
		return r.fail(loopCtx, "iteration failed", err)
	}
	if r.cfg.persist&Journal != 0 {
		if err := r.journal.failure(); err != nil {
			return r.storageFailed(loopCtx, err)
		}
	}
	return r.interrupt(loopCtx)
}

// loopContext is the loop's context: the host's, carrying the run for
// [Warn]. It lives in the run, so that it costs no allocation.
type loopContext struct {
	context.Context
	w warner
}

// Value returns the run for warnKey, the host context's value otherwise.
func (c *loopContext) Value(key any) any {
	if key == (warnKey{}) {
		return c.w
	}
	return c.Context.Value(key)
}
