package iterate

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
)

// execute runs the tasks of one iteration and returns their outcomes in
// task order. Tasks run in parallel under the parallelism limit; a task that
// fails, times out or panics yields an outcome with Err set and the others
// go on. execute returns when every task has returned or been abandoned.
//
// A single task without a timeout under a context that cannot be cancelled
// runs in the caller's goroutine: there is nothing to wait for concurrently.
func (r *run[S]) execute(ctx context.Context, tasks []Task) []Outcome[S] {
	if cap(r.outs) < len(tasks) {
		r.outs = make([]Outcome[S], len(tasks))
	}
	outs := r.outs[:len(tasks)]
	clear(outs)
	state := r.state // tasks read this copy: an abandoned task must not race the loop
	if len(tasks) == 1 {
		outs[0] = r.runTask(ctx, state, &tasks[0])
		return outs
	}
	var g errgroup.Group
	limit := r.cfg.parallelism
	if limit <= 0 || limit > len(tasks) {
		limit = len(tasks)
	}
	g.SetLimit(limit)
	for i := range tasks {
		if ctx.Err() != nil {
			outs[i] = Outcome[S]{Task: tasks[i], Err: fmt.Errorf("task %s not started: %w", tasks[i].ID(), context.Cause(ctx))}
			continue
		}
		g.Go(func() error {
			outs[i] = r.runTask(ctx, state, &tasks[i])
			return nil
		})
	}
	_ = g.Wait() // tasks report their errors in their outcomes
	return outs
}

// runTask runs one task with its timeout, recovering a panic. When the
// task's context ends and Work does not return within the grace period, the
// task is abandoned: its outcome reports ErrAbandoned and its goroutine is
// left to finish on its own.
func (r *run[S]) runTask(ctx context.Context, state S, t *Task) Outcome[S] {
	tctx := ctx
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	var start time.Time
	if r.observing {
		start = time.Now()
		r.emit(TaskStarted{it: it{t.Iteration}, Task: *t})
	}
	var out Outcome[S]
	if tctx.Done() == nil {
		out = r.work(tctx, state, t)
	} else {
		out = r.workCancellable(tctx, state, t)
	}
	out.Task = *t
	if r.observing {
		r.emit(TaskEnded{it: it{t.Iteration}, Task: *t, Err: out.Err, Usage: out.Usage, Duration: time.Since(start)})
	}
	return out
}

func (r *run[S]) workCancellable(ctx context.Context, state S, t *Task) Outcome[S] {
	done := make(chan Outcome[S], 1)
	task := *t // the abandoned goroutine keeps its own copy
	go func() { done <- r.work(ctx, state, &task) }()
	select {
	case out := <-done:
		return out
	case <-ctx.Done():
	}
	grace := time.NewTimer(r.cfg.grace)
	defer grace.Stop()
	select {
	case out := <-done:
		return out
	case <-grace.C:
		return Outcome[S]{Err: fmt.Errorf("task %s: %w after %v (%v)", t.ID(), ErrAbandoned, r.cfg.grace, context.Cause(ctx))}
	}
}

// work calls the worker, turning a panic into a *PanicError.
func (r *run[S]) work(ctx context.Context, state S, t *Task) (out Outcome[S]) {
	defer func() {
		if v := recover(); v != nil {
			out = Outcome[S]{Err: &PanicError{Where: "work", Value: v, Stack: stack()}}
		}
	}()
	o, err := r.e.w.Work(ctx, state, *t)
	if err != nil {
		o.Err = err
	}
	return o
}
