package iterate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
)

// journal records the finished tasks of the iteration in flight (see
// the Journal setting) and replays them after a resume.
//
// With several tasks in flight and a store that takes the state as bytes
// (run.asyncJournal), the journal's saves are a group commit written by
// a goroutine of its own, the writer, so that a task's end does not wait
// for another's save: the writer waits journalLinger, then saves every
// task that ended by then; a task that ends while a save is in flight is
// saved by the next one, with every other that ended meanwhile; and when
// the loop has integrated the iteration in the meantime, the iteration's
// own save, which holds their work, takes the place of the next (see
// close). A finished task is thus durable at most journalLinger later
// than it would be were each task saved in turn.
type journal struct {
	mu      sync.Mutex
	entries []entry // of the iteration in flight
	err     error   // a save that must end the run (strict, or lock lost)

	// The writer's, under mu.
	idle    sync.Cond // signalled when writing ends; its L is &mu
	writing bool      // a journal save is in flight
	saved   int       // entries[:saved] were in the latest journal save
	closing bool      // the loop saves the iteration next: the writer saves no more
	// closed wakes a writer that lingers (see journalLinger) when the loop
	// closes the journal; made with the writer's first run.
	closed chan struct{}
	// state is the iteration's state, encoded once for the writer's
	// saves (the loop does not change it until the iteration's tasks have
	// ended, and may hand it to the host's Integrate while a save is in
	// flight); stateErr is why it could not be.
	state    []byte
	stateErr error
	encoded  bool
	// ends are the TaskEnded events of the tasks whose entries the writer
	// took, sent once a save holding them has returned (by the writer, or
	// by the loop's save that took its place).
	ends []pendingEnd
}

// pendingEnd is a TaskEnded event to send once the first upto entries
// are saved.
type pendingEnd struct {
	upto int
	e    TaskEnded
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
// from task goroutines; saves are serialized. A lone task (the only one of
// its iteration, on the loop's goroutine) is saved before record returns;
// with the writer (see journal and run.asyncJournal), the other tasks' are
// saved by it.
//
// A failed task is journaled too (its error's message and its usage), so
// that a resumed iteration does not run and pay for it again; but not one
// interrupted by the end of the run's context, which must run again.
//
// record reports whether it leaves the task's TaskEnded to the writer,
// which sends it once the task's entry is saved, as a task's own save
// sends it after it returned.
func (r *run[S]) record(ctx context.Context, t *Task, out *Outcome[S], lone bool) (deferred bool) {
	if r.cfg.checkpointer == nil || interruptedBy(ctx, out.Err) {
		return false
	}
	part, err := marshal(r.cfg.codec, out.Part)
	if err != nil {
		r.hostWarn(fmt.Sprintf("journaling task %s: encoding its outcome: %v", t.ID(), err))
		return false
	}
	e := entry{Iteration: t.Iteration, Index: t.Index, Role: string(t.Role), Part: part, Usage: out.Usage, Done: out.Done,
		Duration: out.Duration, Output: outputTail(out.Output), Actions: out.Actions}
	if out.Err != nil {
		e.Err, e.Permanent = out.Err.Error(), IsPermanent(out.Err)
	}
	if len(t.Gaps) > 0 {
		e.Key = t.Gaps[0].Key()
	}
	j := &r.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
	if j.err != nil {
		return false // the run ends after this iteration; save nothing more
	}
	if r.asyncJournal && !lone {
		if r.observing {
			j.ends = append(j.ends, pendingEnd{upto: len(j.entries), e: r.taskEnded(ctx, t, out, false)})
		}
		if !j.encoded {
			// The state, encoded once for the iteration's journal, now:
			// no task changes r.state, and the loop does not until every
			// task has ended.
			j.state, j.stateErr = marshal(r.cfg.codec, r.state)
			j.encoded = true
		}
		if !j.writing {
			j.writing = true
			if j.closed == nil {
				j.closed = make(chan struct{}, 1)
			}
			go r.writeJournal(context.WithoutCancel(ctx), t.Iteration)
		}
		return r.observing
	}
	j.waitIdle()
	var start time.Time
	if r.observing {
		start = time.Now()
	}
	err = r.saveRetrying(context.WithoutCancel(ctx), Running, "", j.entries)
	j.saved = len(j.entries)
	if err != nil {
		r.hostWarn(fmt.Sprintf("journaling task %s: %v", t.ID(), err))
		if r.fatalSave(err) {
			j.err = err
		}
	}
	if r.observing { // a journal save is a save attempt too (see CheckpointSaved)
		r.emit(CheckpointSaved{it: r.at(t.Iteration), Session: r.cfg.session, Generation: r.generation, Status: Running,
			Completed: r.hist.Iteration, Err: err,
			Duration: time.Since(start), Bytes: r.savedBytes()})
	}
	return false
}

// journalLinger is how long the journal's writer waits, once a task has
// ended with no save in flight, before it saves: for the other tasks to
// end, so that one save holds them all, and for the loop to integrate the
// iteration, so that the iteration's save holds them (a group commit). A
// task's work is made durable that much later at most; against a task
// that runs for seconds, nothing; against a save, less than its round
// trip to a database.
const journalLinger = time.Millisecond

// writeJournal is the journal's writer: it lingers (journalLinger), then
// saves the entries not yet saved, one save for all of those that ended by
// the time it starts, until none is left, or the loop is about to save the
// iteration itself, or a save failed for good. n is the iteration.
func (r *run[S]) writeJournal(ctx context.Context, n int) {
	j := &r.journal
	t := time.NewTimer(journalLinger)
	select {
	case <-t.C:
	case <-j.closed:
		t.Stop()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for len(j.entries) > j.saved && !j.closing && j.err == nil {
		entries := j.entries[:len(j.entries):len(j.entries)] // what follows is appended, never changed
		var start time.Time
		if r.observing {
			start = time.Now()
		}
		err := r.saveJournal(ctx, entries)
		j.saved = len(entries)
		if err != nil {
			r.hostWarn(fmt.Sprintf("journaling %d finished tasks: %v", len(entries), err))
			if r.fatalSave(err) {
				j.err = err
			}
		}
		if r.observing {
			r.emit(CheckpointSaved{it: r.at(n), Session: r.cfg.session, Generation: r.generation, Status: Running,
				Completed: r.hist.Iteration, Err: err,
				Duration: time.Since(start), Bytes: r.savedBytes()})
			r.sendEnds(j.saved)
		}
	}
	if j.err != nil {
		r.sendEnds(len(j.entries)) // saved by no one: the run ends
	}
	j.writing = false
	j.idle.Broadcast()
}

// sendEnds sends, with the journal's lock held, the TaskEnded events of
// the tasks among the first saved entries.
func (r *run[S]) sendEnds(saved int) {
	j := &r.journal
	k := 0
	for _, p := range j.ends {
		if p.upto <= saved {
			r.emit(p.e)
		} else {
			j.ends[k] = p
			k++
		}
	}
	clear(j.ends[k:])
	j.ends = j.ends[:k]
}

// sendSuperseded sends the TaskEnded events the writer left to the loop's
// save (see journal.close), after it.
func (r *run[S]) sendSuperseded() {
	if !r.asyncJournal || !r.observing {
		return
	}
	j := &r.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	r.sendEnds(math.MaxInt)
}

// saveJournal saves entries with the iteration's encoded state, retrying as
// saveRetrying does. Called by the writer, with the journal's lock held;
// the lock is released while the store writes, and only then (what the
// loop may change meanwhile is not read).
func (r *run[S]) saveJournal(ctx context.Context, entries []entry) error {
	j := &r.journal
	wait := saveBackoff
	for attempt := 1; ; attempt++ {
		err := j.stateErr
		if err != nil {
			err = fmt.Errorf("encoding state: %w", err)
		} else {
			var c *checkpoint.Checkpoint
			c, err = r.encodeSave(Running, "", entries, j.state)
			if err == nil {
				j.mu.Unlock()
				err = storeSave(ctx, r.cfg.checkpointer, c)
				j.mu.Lock()
				c.State = nil
				err = r.saved(ctx, c, err)
			}
		}
		if err == nil || r.cfg.persist&Strict == 0 || attempt == saveAttempts || errors.Is(err, checkpoint.ErrFenced) {
			return err
		}
		j.mu.Unlock()
		time.Sleep(wait) // ctx never ends (see record); as saveRetrying waits
		j.mu.Lock()
		wait *= 2
	}
}

// waitIdle waits, with the journal's lock held, until the writer is idle.
func (j *journal) waitIdle() {
	if j.idle.L == nil {
		j.idle.L = &j.mu
	}
	for j.writing {
		j.idle.Wait()
	}
}

// flushJournal waits until the journal's writer, if any, has saved every
// entry and is idle.
func (r *run[S]) flushJournal() {
	if !r.asyncJournal {
		return
	}
	j := &r.journal
	j.mu.Lock()
	j.waitIdle()
	j.mu.Unlock()
}

// close waits until the writer is idle, and tells it to save no more of
// the entries: the loop, which has integrated the iteration, saves it
// next, with their work. The writer then leaves unsaved what ended while
// its last save was in flight, which the loop's save starts no later than
// the writer's next would have, or, when it lingered still, every entry,
// which the loop's save holds no more than journalLinger later than the
// writer's would have.
func (j *journal) close() {
	j.mu.Lock()
	j.closing = true
	if j.writing {
		select {
		case j.closed <- struct{}{}: // a lingering writer saves nothing
		default:
		}
	}
	j.waitIdle()
	select {
	case <-j.closed: // not taken by a writer past its linger
	default:
	}
	j.mu.Unlock()
}

// forget drops the journal once its iteration is integrated (or lost).
func (j *journal) forget() {
	j.mu.Lock()
	j.entries, j.saved, j.closing = nil, 0, false // j.ends are sent after the loop's save
	j.state, j.stateErr, j.encoded = nil, nil, false
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
