package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/refine-go/refine/iterate"
)

// console prints seed 004's progress lines, "[15:04:05] ...", and is the
// writer of iterate.Progress, so that their lines never interleave. Safe for
// concurrent use; write errors are ignored.
type console struct {
	mu sync.Mutex
	w  io.Writer
	// tty is true when w is a terminal, which echoes ^C without a newline.
	tty bool
}

// Write writes p at once.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

func (c *console) printAt(at time.Time, line string) {
	fmt.Fprintf(c, "[%s] %s\n", at.Format("15:04:05"), line)
}

// breakLine ends the line a terminal's ^C echo left open.
func (c *console) breakLine() {
	if c.tty {
		io.WriteString(c, "\n")
	}
}

func (c *console) print(line string) { c.printAt(time.Now(), line) }

func (c *console) warn(msg string) { c.print("WARNING: " + msg) }

// reporter observes the engine's events: iterate.Progress prints the
// progress lines of seed 004, and the reporter keeps the procedure's state
// file up to date. It prints itself only a stop other than the iteration
// limit, an abort or an interruption, as an ERROR line (Progress words it
// as a plain summary).
type reporter struct {
	out      *console
	progress func(iterate.Event)
	summary  *summary // nil when state is not persisted
	// lastErr is the error of the last failed iteration of this run.
	lastErr error
}

func newReporter(out *console, set *settings, persisted bool) *reporter {
	r := &reporter{
		out:      out,
		progress: iterate.Progress(out, iterate.ProgressNoun("procedure"), iterate.ProgressResumeHint(set.ResumeHint)),
	}
	if persisted {
		r.summary = &summary{path: filepath.Join(set.StateDir, set.Procedure+".json")}
	}
	return r
}

// observe is the iterate.WithObserver hook. Warned events may arrive from
// the iteration's goroutine (Progress is safe for concurrent use); the
// events that touch the summary all arrive in the loop's goroutine.
func (r *reporter) observe(e iterate.Event) {
	switch e := e.(type) {
	case iterate.LoopStarted:
		r.progress(e)
		if r.summary != nil {
			r.summary.started(e)
		}
	case iterate.IterationEnded:
		if e.Failed {
			r.lastErr = e.Err
		}
		r.progress(e)
		if r.summary != nil {
			r.summary.iterationEnded(e)
		}
	case iterate.CheckpointSaved:
		if e.Err == nil && r.summary != nil {
			if err := r.summary.write(e.Iteration(), e.Status); err != nil {
				r.out.warn(fmt.Sprintf("state summary not written: %v", err))
			}
		}
	case iterate.LoopStopped:
		r.stopped(e)
	default:
		r.progress(e)
	}
}

func (r *reporter) stopped(e iterate.LoopStopped) {
	switch e.Status {
	case iterate.MaxIterations:
		r.progress(e)
		// The engine removed the checkpoints (WithCleanup) if it could save
		// the final one; the summary goes with them.
		if r.summary != nil && e.Saved {
			if err := r.summary.remove(); err != nil {
				r.out.warn(fmt.Sprintf("state summary not removed: %v", err))
			}
		}
	case iterate.Aborted:
		// Only the failure threshold aborts: "Aborting after 3 consecutive
		// failures (...)".
		r.progress(e)
	case iterate.Interrupted:
		// "Interrupted. State saved. Resume with: ...", or "Interrupted.
		// State not saved: <why>", or "Interrupted." without persistence
		// (warned about at the start).
		r.out.breakLine()
		r.progress(e)
	default:
		r.out.printAt(e.Time, fmt.Sprintf("ERROR: Stopped (%s: %s) after %d iterations (total: %s)", e.Status, e.Reason, e.Iteration(), iterate.FormatDuration(e.Elapsed)))
	}
}

// limit describes an iteration limit: "max 3" or "unlimited".
func limit(max int) string {
	if max > 0 {
		return fmt.Sprintf("max %d", max)
	}
	return "unlimited"
}

// stateFile is seed 004's StateFile: a human-readable summary of a
// procedure's state, <workspace>/.agentloop/state/<procedure>.json. The
// resumable data is in the checkpoints beside it; this file is written after
// every saved checkpoint and never read back, except for the durations of
// earlier iterations on resume.
type stateFile struct {
	Iteration           int       `json:"iteration"`
	MaxIterations       int       `json:"max_iterations"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	FailureThreshold    int       `json:"failure_threshold"`
	StartedAt           time.Time `json:"started_at"`
	LastIterationAt     time.Time `json:"last_iteration_at,omitzero"`
	Status              string    `json:"status"`
	ProcedureName       string    `json:"procedure_name"`
	ElapsedPerIteration []string  `json:"elapsed_per_iteration"`
}

// summary maintains the state file of one run, from the engine's events.
type summary struct {
	path string
	st   stateFile
}

// started begins the summary of a run. A resumed run carries on the
// counters and timings of the run it resumes; the event has the durations of
// the most recent iterations only, so those of every earlier iteration come
// from the previous state file when it is up to date.
func (s *summary) started(e iterate.LoopStarted) {
	s.st = stateFile{
		Iteration:           e.Completed,
		MaxIterations:       e.MaxIterations,
		ConsecutiveFailures: e.ConsecutiveFailures,
		FailureThreshold:    e.FailureThreshold,
		StartedAt:           e.StartedAt.UTC(),
		LastIterationAt:     e.LastIterationAt.UTC(),
		Status:              "running",
		ProcedureName:       e.Session,
		ElapsedPerIteration: []string{},
	}
	if !e.Resumed {
		return
	}
	var prev stateFile
	if data, err := os.ReadFile(s.path); err == nil && json.Unmarshal(data, &prev) == nil &&
		prev.Iteration == e.Completed && len(prev.ElapsedPerIteration) == e.Completed {
		s.st.ElapsedPerIteration = prev.ElapsedPerIteration
		return
	}
	for _, d := range e.Durations {
		s.st.ElapsedPerIteration = append(s.st.ElapsedPerIteration, iterate.FormatSeconds(d))
	}
}

func (s *summary) iterationEnded(e iterate.IterationEnded) {
	s.st.Iteration = e.Iteration()
	s.st.ConsecutiveFailures = e.ConsecutiveFailures
	s.st.FailureThreshold = e.FailureThreshold
	s.st.LastIterationAt = e.Time.UTC()
	s.st.ElapsedPerIteration = append(s.st.ElapsedPerIteration, iterate.FormatSeconds(e.Duration))
}

// statusName maps the engine's statuses to seed 004's LoopStatus.
func statusName(s iterate.Status) string {
	switch s {
	case iterate.Running:
		return "running"
	case iterate.Interrupted:
		return "interrupted"
	case iterate.MaxIterations, iterate.Converged, iterate.EarlyExit:
		return "completed"
	}
	return "aborted"
}

// write saves the summary atomically (temporary file, then rename).
func (s *summary) write(completed int, status iterate.Status) error {
	s.st.Iteration = completed
	s.st.Status = statusName(status)
	data, err := json.MarshalIndent(&s.st, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	dir, base := filepath.Split(s.path)
	f, err := os.CreateTemp(dir, "."+base+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func (s *summary) remove() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
