package iterate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/sync/errgroup"
)

// execute runs the tasks of one iteration and returns their outcomes in
// task order. Tasks run in parallel under the parallelism limit, stage by
// stage, starting in task order; a task that fails, times out or panics
// yields an outcome with Err set and the others go on. execute returns when
// every task has returned or been abandoned.
//
// A single task without a timeout of its own runs on the loop's goroutine:
// there is nothing to wait for concurrently (see workReleased for how it is
// still abandoned when the loop's context ends).
func (r *run[S]) execute(ctx context.Context, tasks []Task) []Outcome[S] {
	if cap(r.outs) < len(tasks) {
		r.outs = make([]Outcome[S], len(tasks))
	}
	// runTask sets each outcome whole; tasks read a copy of the state: an
	// abandoned task must not race the loop.
	outs, state := r.outs[:len(tasks)], r.state
	r.clock.taskEnded = false // not this iteration's task's end yet
	if len(tasks) == 0 {
		return outs
	}
	if len(tasks) == 1 {
		r.runTask(ctx, state, &tasks[0], &outs[0], true)
		r.endStage(ctx, state, tasks[0].Stage, outs)
		return outs
	}
	staged := false
	for i := range tasks {
		if tasks[i].Stage != tasks[0].Stage {
			staged = true
			break
		}
	}
	if !staged {
		r.runStage(ctx, state, tasks, outs, nil)
		r.endStage(ctx, state, tasks[0].Stage, outs)
		return outs
	}
	// Stages in ascending order; each runs its tasks, in task order, in
	// parallel under the limit, and ends before the next starts.
	idx := make([]int, 0, len(tasks))
	for stage, ok := minStage(tasks, math.MinInt); ok; stage, ok = minStage(tasks, stage) {
		idx = idx[:0]
		for i := range tasks {
			if tasks[i].Stage == stage {
				idx = append(idx, i)
			}
		}
		r.runStage(ctx, state, tasks, outs, idx)
		stageOuts := make([]Outcome[S], len(idx))
		for j, i := range idx {
			stageOuts[j] = outs[i]
		}
		r.endStage(ctx, state, stage, stageOuts)
	}
	return outs
}

// minStage returns the lowest stage above after among tasks.
func minStage(tasks []Task, after int) (int, bool) {
	best, ok := 0, false
	for i := range tasks {
		if s := tasks[i].Stage; s > after && (!ok || s < best) {
			best, ok = s, true
		}
	}
	return best, ok
}

// runStage runs the tasks listed in idx (all when idx is nil) in parallel
// under the limit and waits for them.
func (r *run[S]) runStage(ctx context.Context, state S, tasks []Task, outs []Outcome[S], idx []int) {
	n := len(tasks)
	if idx != nil {
		n = len(idx)
	}
	var g errgroup.Group
	limit := r.cfg.parallelism
	if limit <= 0 || limit > n {
		limit = n
	}
	g.SetLimit(limit)
	for j := range n {
		i := j
		if idx != nil {
			i = idx[j]
		}
		if ctx.Err() != nil {
			outs[i] = Outcome[S]{Task: tasks[i], Err: fmt.Errorf("task %s not started: %w", tasks[i].ID(), context.Cause(ctx))}
			continue
		}
		g.Go(func() error {
			r.runTask(ctx, state, &tasks[i], &outs[i], false)
			return nil
		})
	}
	_ = g.Wait() // tasks report their errors in their outcomes
}

// endStage calls the worker's StageEnder, if any.
func (r *run[S]) endStage(ctx context.Context, state S, stage int, outs []Outcome[S]) {
	se := r.e.stageEnder
	if se == nil {
		return
	}
	err := func() (err error) {
		defer recoverInto(&err, "end stage")
		return se.EndStage(ctx, state, stage, outs)
	}()
	if err != nil {
		r.warn(outs[0].Task.Iteration, fmt.Sprintf("ending stage %d: %v", stage, err))
	}
}

// runTask runs one task with its timeout, recovering a panic. When the
// task's context ends and Work does not return within the grace period, the
// task is abandoned: its outcome reports ErrAbandoned and its goroutine is
// left to finish on its own. lone is set for the only task of an iteration,
// run from the loop's goroutine: under the loop's own context it runs right
// there (see workReleased), under a timeout of its own on a goroutine.
func (r *run[S]) runTask(ctx context.Context, state S, t *Task, out *Outcome[S], lone bool) {
	tctx := ctx
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	start := r.clock.since() // for out.Duration: one reading of the monotonic clock
	if r.observing {
		r.emit(TaskStarted{it: r.at(t.Iteration), Task: *t})
	}
	replayed := r.cfg.persist&Journal != 0 && r.replay(t, out)
	if r.cfg.crashBound > 0 && !replayed { // WithCrashLoopBound (steer.go)
		r.taskStarting(ctx, t)
	}
	cancellable := tctx.Done() != nil
	switch {
	case replayed:
	case !cancellable && !lone:
		// Work runs on the stage's goroutine, which a Work that calls
		// runtime.Goexit ends: the task still ends, failed (see work).
		defer r.endTask(ctx, t, out, false, false, start)
		r.work(tctx, state, t, out)
		return
	case !cancellable:
		r.work(tctx, state, t, out)
	case lone && r.handoff != nil && tctx == r.handoff.ctx:
		r.workReleased(tctx, state, t, out, start)
	default:
		r.workCancellable(tctx, state, t, out)
	}
	r.endTask(ctx, t, out, replayed, lone, start)
}

// endTask completes the outcome of t, journals it unless it was replayed,
// and reports the task's end.
func (r *run[S]) endTask(ctx context.Context, t *Task, out *Outcome[S], replayed, lone bool, start time.Duration) {
	out.Task = *t
	if !replayed {
		if r.cfg.crashBound > 0 { // WithCrashLoopBound (steer.go)
			r.taskEnding(t)
		}
		end := r.clock.since()
		out.Duration = end - start
		if lone && r.lapAtTaskEnd {
			// The only task, on the loop's goroutine, and nothing after it
			// but the engine's own bookkeeping: its end is the iteration's
			// (see integrateIteration).
			r.clock.taskEnd, r.clock.taskEnded = end, true
		}
		if r.cfg.persist&Journal != 0 && r.record(ctx, t, out, lone) {
			return // its TaskEnded is sent once its save has returned (see record)
		}
	}
	if r.observing {
		r.emit(r.taskEnded(ctx, t, out, replayed))
	}
}

// taskEnded returns the TaskEnded event of t, ended with out.
func (r *run[S]) taskEnded(ctx context.Context, t *Task, out *Outcome[S], replayed bool) TaskEnded {
	return TaskEnded{it: r.at(t.Iteration), Task: *t, Err: out.Err, Usage: out.Usage, Duration: out.Duration, Replayed: replayed,
		Interrupted: !replayed && interruptedBy(ctx, out.Err)}
}

func (r *run[S]) workCancellable(ctx context.Context, state S, t *Task, out *Outcome[S]) {
	done := make(chan Outcome[S], 1)
	// The goroutine, which may be abandoned, has its own copy of the task
	// and its own outcome to fill (a Func step's round points into it), in
	// one allocation.
	own := &struct {
		task Task
		out  Outcome[S]
	}{task: *t}
	go func() {
		defer func() { done <- own.out }() // also when Work calls runtime.Goexit
		r.work(ctx, state, &own.task, &own.out)
	}()
	if !r.await(ctx, t, done, out) {
		*out = r.abandoned(ctx, t)
	}
}

// await waits for the outcome of t on done, until the grace period after
// ctx ends; it reports whether the outcome came.
func (r *run[S]) await(ctx context.Context, t *Task, done <-chan Outcome[S], out *Outcome[S]) bool {
	select {
	case *out = <-done:
		return true
	case <-ctx.Done():
	}
	grace := time.NewTimer(r.cfg.grace)
	defer grace.Stop()
	select {
	case *out = <-done:
		return true
	case <-grace.C:
		return false
	}
}

// abandoned is the outcome of a task abandoned after the grace period.
func (r *run[S]) abandoned(ctx context.Context, t *Task) Outcome[S] {
	return Outcome[S]{Err: fmt.Errorf("task %s: %w after %v (%v)", t.ID(), ErrAbandoned, r.cfg.grace, context.Cause(ctx))}
}

// errGoexit is the cause of the error of a task whose Work called
// runtime.Goexit (as a test's t.FailNow does) on a goroutine of the
// engine's.
var errGoexit = errors.New("iterate: Work called runtime.Goexit")

// work calls the worker into out, turning a panic into a *PanicError. A
// Work that calls runtime.Goexit leaves out failed, with errGoexit, and
// the goroutine ends: the caller finishes the task in a deferred call (a
// lone task's Goexit on the loop's goroutine is repeated on the caller's,
// see drive).
func (r *run[S]) work(ctx context.Context, state S, t *Task, out *Outcome[S]) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if v := recover(); v != nil {
			*out = Outcome[S]{Err: &PanicError{Where: "work", Value: v, Stack: stack()}}
		} else {
			*out = Outcome[S]{Err: fmt.Errorf("task %s: %w", t.ID(), errGoexit)}
		}
	}()
	var err error
	if fw := r.e.funcWorker; fw != nil {
		err = fw.workInto(ctx, state, t, out)
	} else {
		*out, err = r.e.w.Work(ctx, state, *t)
	}
	if err != nil {
		out.Err = err
	}
	returned = true
}
