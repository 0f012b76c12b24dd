package iterate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/refine-go/refine/budget"
)

// journal records the finished tasks of the iteration in flight (see
// the Journal setting) and replays them after a resume.
type journal struct {
	mu      sync.Mutex
	entries []entry // of the iteration in flight
	err     error   // a save that must end the run (strict, or lock lost)
}

// failure returns the journal save failure that must end the run, if any.
func (j *journal) failure() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// entry is one finished task of the iteration in flight, journaled in the
// engine's resume record.
type entry struct {
	// Iteration (1-indexed) and Index (0-indexed) place the task; Role and
	// Key (the main gap's kind and target) identify it, so that a replanned
	// iteration reuses the entry only for the same task.
	Iteration int    `json:"iteration"`
	Index     int    `json:"index"`
	Role      string `json:"role,omitempty"`
	Key       string `json:"key,omitempty"`
	// Part is what the task found, encoded like the state.
	Part []byte `json:"part,omitempty"`
	// Usage is what the task spent.
	Usage budget.Usage `json:"usage"`
	// Done is the outcome's Done.
	Done bool `json:"done,omitempty"`
	// Err is the message of a failed task's error; Permanent says it was
	// marked with [Permanent]. A replayed failure fails again, with an
	// error of the same message, without running (or charging) the task
	// again.
	Err       string `json:"err,omitempty"`
	Permanent bool   `json:"permanent,omitempty"`
	// Duration and Output are the outcome's, Output cut to its tail as
	// the history keeps it: a replayed task's record tells how the task
	// went when it ran.
	Duration time.Duration `json:"duration,omitempty"`
	Output   string        `json:"output,omitempty"`
	// Actions are the outcome's.
	Actions []string `json:"actions,omitempty"`
}

// entryFor returns the journaled entry of t, if any.
func (j *journal) entryFor(t *Task) (entry, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	g := t.Gap()
	key := g.Key()
	if len(t.Gaps) == 0 {
		key = ""
	}
	for _, e := range j.entries {
		if e.Iteration == t.Iteration && e.Index == t.Index && e.Role == string(t.Role) && e.Key == key {
			return e, true
		}
	}
	return entry{}, false
}

// usage returns what the journaled tasks of iteration n spent.
func (j *journal) usage(n int) budget.Usage {
	j.mu.Lock()
	defer j.mu.Unlock()
	var u budget.Usage
	for _, e := range j.entries {
		if e.Iteration == n {
			u = u.Add(e.Usage)
		}
	}
	return u
}

// replay sets out to the journaled outcome of t, decoded, if there is one.
func (r *run[S]) replay(t *Task, out *Outcome[S]) bool {
	e, ok := r.journal.entryFor(t)
	if !ok {
		return false
	}
	var part S
	if err := unmarshal(r.cfg.codec, e.Part, &part); err != nil {
		r.hostWarn(fmt.Sprintf("journaled task %s unreadable, running it again: %v", t.ID(), err))
		return false
	}
	*out = Outcome[S]{Part: part, Usage: e.Usage, Done: e.Done, Duration: e.Duration, Output: e.Output, Actions: e.Actions}
	if e.Err != "" {
		out.Err = errors.New(e.Err)
		if e.Permanent {
			out.Err = Permanent(out.Err)
		}
	}
	return true
}

// record journals a finished task and saves a checkpoint with it. Called
// from task goroutines; saves are serialized.
//
// A failed task is journaled too (its error's message and its usage), so
// that a resumed iteration does not run and pay for it again; but not one
// interrupted by the end of the run's context, which must run again.
func (r *run[S]) record(ctx context.Context, t *Task, out *Outcome[S]) {
	if r.cfg.checkpointer == nil || interruptedBy(ctx, out.Err) {
		return
	}
	part, err := marshal(r.cfg.codec, out.Part)
	if err != nil {
		r.hostWarn(fmt.Sprintf("journaling task %s: encoding its outcome: %v", t.ID(), err))
		return
	}
	e := entry{Iteration: t.Iteration, Index: t.Index, Role: string(t.Role), Part: part, Usage: out.Usage, Done: out.Done,
		Duration: out.Duration, Output: outputTail(out.Output), Actions: out.Actions}
	if out.Err != nil {
		e.Err, e.Permanent = out.Err.Error(), IsPermanent(out.Err)
	}
	if len(t.Gaps) > 0 {
		e.Key = t.Gaps[0].Key()
	}
	r.journal.mu.Lock()
	defer r.journal.mu.Unlock()
	r.journal.entries = append(r.journal.entries, e)
	if r.journal.err != nil {
		return // the run ends after this iteration; save nothing more
	}
	var start time.Time
	if r.observing {
		start = time.Now()
	}
	err = r.saveRetrying(context.WithoutCancel(ctx), Running, "", r.journal.entries)
	if err != nil {
		r.hostWarn(fmt.Sprintf("journaling task %s: %v", t.ID(), err))
		if r.fatalSave(err) {
			r.journal.err = err
		}
	}
	if r.observing { // a journal save is a save attempt too (see CheckpointSaved)
		r.emit(CheckpointSaved{it: r.at(t.Iteration), Session: r.cfg.session, Generation: r.generation, Status: Running,
			Completed: r.hist.Iteration, Err: err,
			Duration: time.Since(start), Bytes: r.savedBytes()})
	}
}

// forget drops the journal once its iteration is integrated (or lost).
func (j *journal) forget() {
	j.mu.Lock()
	j.entries = nil
	j.mu.Unlock()
}

// interruptedBy reports whether a task that failed with err was cut short
// by the end of the run's context ctx (the caller's cancellation, the
// wall-time limit): then the task is interrupted, not failed, whatever err
// is — an exec.CommandContext killed with its context returns "signal:
// killed", not the context's error. A task that ran past its own timeout,
// under a run whose context has not ended, failed.
func interruptedBy(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil
}
