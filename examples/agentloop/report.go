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

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// console prints seed 004's progress lines, "[15:04:05] ...". Safe for
// concurrent use; write errors are ignored.
type console struct {
	mu sync.Mutex
	w  io.Writer
	// tty is true when w is a terminal, which echoes ^C without a newline.
	tty bool
}

func (c *console) printAt(at time.Time, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, "[%s] %s\n", at.Format("15:04:05"), line)
}

// breakLine ends the line a terminal's ^C echo left open.
func (c *console) breakLine() {
	if c.tty {
		c.mu.Lock()
		defer c.mu.Unlock()
		io.WriteString(c.w, "\n")
	}
}

func (c *console) print(line string) { c.printAt(time.Now(), line) }

func (c *console) warn(msg string) { c.print("WARNING: " + msg) }

// reporter observes the engine's events: it prints the progress lines of
// seed 004 and keeps the procedure's state summary file up to date.
//
// iterate.Progress prints the same kind of lines but says "session", cannot
// name the resume command and prints a completion line for the iteration
// that reaches the failure threshold; see requests.md.
type reporter struct {
	out        *console
	procedure  string
	resumeHint string
	summary    *summary // nil when state is not persisted

	failures  int   // consecutive failures after the last iteration
	saved     bool  // the last checkpoint was saved
	saveErr   error // why it was not
	persisted bool  // a checkpointer is configured
}

// observe is the iterate.WithObserver hook. The events it handles all
// arrive in the loop's goroutine.
func (r *reporter) observe(e iterate.Event) {
	switch e := e.(type) {
	case iterate.LoopStarted:
		if e.Resumed {
			r.out.printAt(e.Time, fmt.Sprintf("Resuming procedure: %s from iteration %d (%s)", r.procedure, e.Completed, limit(e.MaxIterations)))
			r.out.printAt(e.Time, fmt.Sprintf("Previous session: %d iterations completed in %s", e.Completed, iterate.FormatDuration(e.Elapsed)))
		} else {
			r.out.printAt(e.Time, fmt.Sprintf("Starting procedure: %s (%s iterations)", r.procedure, limit(e.MaxIterations)))
		}
		if r.summary != nil {
			r.summary.started(e)
		}
	case iterate.IterationStarted:
		r.out.printAt(e.Time, label(e.Iteration(), e.MaxIterations)+" starting...")
	case iterate.IterationEnded:
		now := time.Now()
		r.failures = e.ConsecutiveFailures
		if e.Failed {
			msg := "iteration failed"
			if e.Err != nil {
				msg = e.Err.Error()
			}
			r.out.printAt(now, fmt.Sprintf("WARNING: %s, consecutive failures: %d/%d", msg, e.ConsecutiveFailures, e.FailureThreshold))
		}
		// Seed 004, example 2: the iteration that reaches the threshold is
		// followed by the abort line, not by a completion line.
		if !e.Failed || e.ConsecutiveFailures < e.FailureThreshold {
			r.out.printAt(now, fmt.Sprintf("%s completed in %s", label(e.Iteration(), e.MaxIterations), iterate.FormatSeconds(e.Duration)))
		}
		if r.summary != nil {
			r.summary.iterationEnded(e, now)
		}
	case iterate.CheckpointSaved:
		r.saved, r.saveErr = e.Err == nil, e.Err
		if e.Err == nil && r.summary != nil {
			if err := r.summary.write(e.Iteration(), e.Status); err != nil {
				r.out.warn(fmt.Sprintf("state summary not written: %v", err))
			}
		}
	case iterate.Warned:
		r.out.warn(e.Message)
	case iterate.LoopStopped:
		r.stopped(e)
	}
}

func (r *reporter) stopped(e iterate.LoopStopped) {
	total := iterate.FormatDuration(e.Elapsed)
	switch e.Status {
	case iterate.MaxIterations:
		r.out.printAt(e.Time, fmt.Sprintf("Reached max iterations: %d (total: %s)", e.Iteration(), total))
		// The engine removed the checkpoints (WithCleanup) if it could save
		// the final one; the summary goes with them.
		if r.summary != nil && r.saved {
			if err := r.summary.remove(); err != nil {
				r.out.warn(fmt.Sprintf("state summary not removed: %v", err))
			}
		}
	case iterate.Aborted:
		r.out.printAt(e.Time, fmt.Sprintf("ERROR: Aborting after %d consecutive failures (%d iterations completed, total: %s)", r.failures, e.Iteration(), total))
	case iterate.Interrupted:
		r.out.breakLine()
		switch {
		case r.persisted && r.saved:
			r.out.printAt(e.Time, "Interrupted. State saved. Resume with: "+r.resumeHint)
		case r.persisted:
			r.out.printAt(e.Time, fmt.Sprintf("Interrupted. State not saved: %v", r.saveErr))
		default:
			r.out.printAt(e.Time, "Interrupted. State not saved (state persistence unavailable).")
		}
	default:
		r.out.printAt(e.Time, fmt.Sprintf("ERROR: Stopped (%s: %s) after %d iterations (total: %s)", e.Status, e.Reason, e.Iteration(), total))
	}
}

// limit describes an iteration limit: "max 3" or "unlimited".
func limit(max int) string {
	if max > 0 {
		return fmt.Sprintf("max %d", max)
	}
	return "unlimited"
}

// label is "Iteration 2/3", or "Iteration 2" when unlimited.
func label(n, max int) string {
	if max > 0 {
		return fmt.Sprintf("Iteration %d/%d", n, max)
	}
	return fmt.Sprintf("Iteration %d", n)
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

// summary maintains the state file of one run.
type summary struct {
	path string
	st   stateFile
}

// newSummary returns the summary of a procedure whose state lives in dir.
// For a resumed run, saved is the checkpoint resumed from: its counters and
// timings carry over, with the durations of every earlier iteration taken
// from the previous summary when it covers them all.
func newSummary(dir, procedure string, threshold int, saved *checkpoint.Checkpoint) *summary {
	s := &summary{path: filepath.Join(dir, procedure+".json")}
	s.st = stateFile{ProcedureName: procedure, FailureThreshold: threshold, Status: "running", ElapsedPerIteration: []string{}}
	if saved == nil {
		return s
	}
	s.st.Iteration = saved.Iteration
	s.st.MaxIterations = saved.MaxIterations
	s.st.ConsecutiveFailures = saved.ConsecutiveFailures
	s.st.StartedAt = saved.StartedAt.UTC()
	s.st.LastIterationAt = saved.LastIterationAt.UTC()
	var prev stateFile
	if data, err := os.ReadFile(s.path); err == nil && json.Unmarshal(data, &prev) == nil && len(prev.ElapsedPerIteration) == saved.Iteration {
		s.st.ElapsedPerIteration = prev.ElapsedPerIteration
	} else {
		// The checkpoint keeps the most recent durations only.
		for _, d := range saved.Durations {
			s.st.ElapsedPerIteration = append(s.st.ElapsedPerIteration, iterate.FormatSeconds(d))
		}
	}
	return s
}

func (s *summary) started(e iterate.LoopStarted) {
	s.st.MaxIterations = e.MaxIterations
	if !e.Resumed {
		s.st.StartedAt = e.Time.UTC()
	}
}

func (s *summary) iterationEnded(e iterate.IterationEnded, now time.Time) {
	s.st.Iteration = e.Iteration()
	s.st.ConsecutiveFailures = e.ConsecutiveFailures
	s.st.FailureThreshold = e.FailureThreshold
	s.st.LastIterationAt = now.UTC()
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
