package iterate

// This file holds WithCrashLoopBound (a task that crashes the process is
// not run forever) and steer, the one hook of Resume for it and for the
// deadlines of questions (deadline.go).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// WithCrashLoopBound fails a session whose task crashed the process n
// times: a resume that finds a task in flight in the session's latest
// checkpoint (the process died while it ran: SIGKILL, OOM, a crash)
// counts that, durably, for the task; the resume that counts the task's
// n-th crash runs nothing, saves the session as [Failed] and returns a
// *StopError whose Err is a *CrashLoopError naming the task. A task is
// "the same" when its iteration, index, role and main gap are (as the
// task journal identifies it).
//
// It is off by default because it costs a checkpoint save whenever a task
// starts (one write of the resume record and the state, as a journal
// entry's), on top of the journal's at its end; the kill harness, which
// kills a loop thousands of times, runs without it. With [Journal] the
// count is exact: a task is in flight from its start to its journal
// entry. Without it, a task that ended is in flight until the next save
// (another task's start, the iteration's end), so a crash of a sibling
// before then counts for it too. n must be at least 1; the bound is part
// of the settings that guard Resume.
func WithCrashLoopBound(n int) Option {
	return optionFunc(func(c *config) {
		if n < 1 {
			c.invalid("WithCrashLoopBound", "bound must be at least 1, got "+strconv.Itoa(n))
			return
		}
		c.crashBound = n
	})
}

// ErrCrashLoop is matched by every *CrashLoopError.
var ErrCrashLoop = errors.New("iterate: a task crashed the process repeatedly")

// CrashLoopError names the task that was in flight at Crashes crashes of
// the process, the bound of [WithCrashLoopBound]: the session failed
// instead of running it again. Task is the task's ID ("3.2") followed by
// its role and main gap.
type CrashLoopError struct {
	Task    string
	Crashes int
}

func (e *CrashLoopError) Error() string {
	return "iterate: task " + e.Task + " was in flight at " + crashesOf(e.Crashes) + " of the process; not run again"
}

// Is matches ErrCrashLoop.
func (e *CrashLoopError) Is(target error) bool { return target == ErrCrashLoop }

// crashesOf is "1 crash", "2 crashes".
func crashesOf(n int) string {
	if n == 1 {
		return "1 crash"
	}
	return strconv.Itoa(n) + " crashes"
}

// crashCount is a task in flight (Count 0), or how many resumes found it
// in flight after a crash.
type crashCount struct {
	Task      string `json:"task"`
	Iteration int    `json:"iteration"`
	Count     int    `json:"count,omitempty"`
}

// taskKey names t for the crash count: its ID, role and main gap.
func taskKey(t *Task) string {
	k := t.ID() + " " + string(t.Role)
	if len(t.Gaps) > 0 {
		k += " " + t.Gaps[0].Key()
	}
	return k
}

// steer is Resume's hook, after the settings check and before the
// session goes on: it counts the crashes of the tasks in flight, refuses
// ExtendDeadline of a session not escalated, handles an escalated
// session's question without an answer (deadline.go) and the question of
// a session parked at its budget's limit (park.go). It returns the
// result to return, or nil to go on.
func (r *run[S]) steer(ctx context.Context, status Status, reason string, rc *resumeConfig) (*Result[S], error) {
	if err := checkQuestionOptions(status, rc); err != nil {
		return nil, err
	}
	if res, err := r.countCrashes(ctx, status); res != nil || err != nil {
		return res, err
	}
	if status == Escalated && r.parked() {
		return r.steerParked(ctx, reason, rc) // park.go
	}
	if status == Escalated && !rc.hasAnswer {
		return r.unanswered(ctx, reason, rc)
	}
	return nil, nil
}

// countCrashes counts a crash for each task in flight in the checkpoint
// restored, and fails the session when one reaches the bound. Counts of
// completed iterations are dropped. Only a checkpoint saved Running
// counts: one saved at a stop (an interruption whose lone task was
// abandoned, still running) was written by a process alive to stop.
func (r *run[S]) countCrashes(ctx context.Context, status Status) (*Result[S], error) {
	inFlight := r.data.InFlight
	r.data.InFlight = nil
	if status != Running {
		inFlight = nil
	}
	if r.cfg.crashBound == 0 {
		r.data.Crashes = nil
		return nil, nil
	}
	kept := r.data.Crashes[:0]
	for _, c := range r.data.Crashes {
		if c.Iteration > r.hist.Iteration {
			kept = append(kept, c)
		}
	}
	r.data.Crashes = kept
	var worst *CrashLoopError
	for _, f := range inFlight {
		i := 0
		for i < len(r.data.Crashes) && r.data.Crashes[i].Task != f.Task {
			i++
		}
		if i == len(r.data.Crashes) {
			r.data.Crashes = append(r.data.Crashes, crashCount{Task: f.Task, Iteration: f.Iteration})
		}
		r.data.Crashes[i].Count++
		n := r.data.Crashes[i].Count
		r.warn(r.hist.Iteration, fmt.Sprintf("task %s was in flight when the process stopped (%s of %d)", f.Task, crashesOf(n), r.cfg.crashBound))
		if n >= r.cfg.crashBound && worst == nil {
			worst = &CrashLoopError{Task: f.Task, Crashes: n}
		}
	}
	if worst == nil {
		return nil, nil
	}
	why := worst.Error()
	r.lastErr = worst
	if err := r.save(ctx, Failed, why); err != nil && r.fatalSave(err) {
		return nil, fmt.Errorf("iterate: session %q: saving the failure: %w", r.cfg.session, err)
	}
	err := &StopError{Status: Failed, Reason: why, Err: worst}
	return r.result(Failed, why, err), err
}

// taskStarting records t in flight and saves, under WithCrashLoopBound.
// Called from task goroutines; saves are serialized by the journal's lock.
func (r *run[S]) taskStarting(ctx context.Context, t *Task) {
	if r.cfg.checkpointer == nil {
		return
	}
	r.journal.mu.Lock()
	defer r.journal.mu.Unlock()
	r.data.InFlight = append(r.data.InFlight, crashCount{Task: taskKey(t), Iteration: t.Iteration})
	if r.journal.err != nil {
		return
	}
	var start time.Time
	if r.observing {
		start = time.Now()
	}
	err := r.saveRetrying(context.WithoutCancel(ctx), Running, "", r.journal.entries)
	if err != nil {
		r.hostWarn(fmt.Sprintf("recording task %s in flight: %v", t.ID(), err))
		if r.fatalSave(err) {
			r.journal.err = err
		}
	}
	if r.observing {
		r.emit(CheckpointSaved{it: r.at(t.Iteration), Session: r.cfg.session, Generation: r.generation, Status: Running,
			Completed: r.hist.Iteration, Err: err, Duration: time.Since(start), Bytes: r.savedBytes()})
	}
}

// taskEnding takes t off the tasks in flight (saved by the next save: its
// journal entry's, with Journal).
func (r *run[S]) taskEnding(t *Task) {
	if r.cfg.checkpointer == nil {
		return
	}
	k := taskKey(t)
	r.journal.mu.Lock()
	defer r.journal.mu.Unlock()
	for i, f := range r.data.InFlight {
		if f.Task == k && f.Iteration == t.Iteration {
			r.data.InFlight = append(r.data.InFlight[:i], r.data.InFlight[i+1:]...)
			break
		}
	}
}

// steerSettings appends the settings of WithQuestionDeadline,
// WithCrashLoopBound and WithParkAtLimit, when set: sessions without them keep their
// fingerprints.
func steerSettings(c *config, s []setting) []setting {
	if d, ok := deadlineSetting(c); ok {
		s = append(s, d)
	}
	if c.crashBound > 0 {
		s = append(s, setting{"crash-loop bound", strconv.Itoa(c.crashBound)})
	}
	if p, ok := parkSetting(c); ok { // park.go
		s = append(s, p)
	}
	return s
}

// crashes encodes the crash-loop fields of the record (see encode).
func (j *jsonBuf) crashes(d *engineData) {
	if len(d.InFlight) > 0 {
		j.key("in_flight")
		j.marshal(d.InFlight)
	}
	if len(d.Crashes) > 0 {
		j.key("crashes")
		j.marshal(d.Crashes)
	}
}
