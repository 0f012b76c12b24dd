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
	// color is true when the lines console writes itself may be coloured:
	// w is a terminal and NO_COLOR is not set (see useColor).
	color bool
}

// ANSI colours of the console's own WARNING and ERROR lines.
const (
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	reset  = "\x1b[0m"
)

// useColor reports whether output to a terminal may be coloured: not with
// NO_COLOR set to anything but "" (https://no-color.org), nor on a dumb
// terminal.
func useColor(tty bool, getenv func(string) string) bool {
	return tty && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// paint colours line when the console may.
func (c *console) paint(color, line string) string {
	if !c.color {
		return line
	}
	return color + line + reset
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

func (c *console) warn(msg string) { c.print(c.paint(yellow, "WARNING: "+msg)) }

func (c *console) error(msg string) { c.print(c.paint(red, "ERROR: "+msg)) }

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
	case iterate.MaxIterations, iterate.Converged:
		// "Reached max iterations: 3 (...)", or "Work complete: the AI CLI
		// printed the completion marker ... (2 iterations, total: ...)".
		r.progress(e)
		// The engine removed the checkpoints (iterate.Cleanup) if it could save
		// the final one; the summary goes with them.
		if r.summary != nil && e.Saved {
			if err := r.summary.remove(); err != nil {
				r.out.warn(fmt.Sprintf("state summary not removed: %v", err))
			}
		}
	case iterate.BudgetExhausted:
		// "Budget exhausted: cost limit reached (4 iterations, total:
		// ...)": a limit the user set, not an error. The state is kept
		// (a final one, not resumable).
		r.progress(e)
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
		r.out.printAt(e.Time, r.out.paint(red, fmt.Sprintf("ERROR: Stopped (%s: %s) after %d iterations (total: %s)", e.Status, e.Reason, e.Iteration(), e.Elapsed.Round(time.Second))))
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
		s.st.ElapsedPerIteration = append(s.st.ElapsedPerIteration, seconds(d))
	}
}

func (s *summary) iterationEnded(e iterate.IterationEnded) {
	s.st.Iteration = e.Iteration()
	s.st.ConsecutiveFailures = e.ConsecutiveFailures
	s.st.LastIterationAt = e.Time.UTC()
	s.st.ElapsedPerIteration = append(s.st.ElapsedPerIteration, seconds(e.Duration))
}

// seconds formats d as seed 004 does: seconds with one decimal, "45.2s".
func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

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

// finalResult is the final result written with --json.
type finalResult struct {
	// Status is the engine's status (max_iterations, aborted, interrupted,
	// ...), or "error" when the loop did not run.
	Status     string `json:"status"`
	Reason     string `json:"reason"`
	Iterations int    `json:"iterations"`
	// Succeeded counts the iterations that succeeded, across resumes.
	Succeeded int         `json:"succeeded"`
	Usage     resultUsage `json:"usage"`
	ExitCode  int         `json:"exit_code"`
	// Error is the error that ended the run; LastError the error of its
	// last failed iteration.
	Error     string `json:"error,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// resultUsage is what the loop spent, across resumes: the tokens the AI CLI
// reported (input and output), or the estimates of the prompts it was
// sent (input), and the cost it reported in US dollars.
type resultUsage struct {
	Tokens       int64   `json:"tokens"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	WallSeconds  float64 `json:"wall_seconds"`
}

// writeResult writes the final result of a run as one line of JSON; res
// and rep are nil when the loop did not run.
//
// errLine is the program's first error line, reported as "error" when the
// run's own error does not say why it ended.
func writeResult(w io.Writer, code int, res *iterate.Result[loopState], err error, rep *reporter, errLine string) {
	r := finalResult{Status: "error", ExitCode: code}
	if res != nil {
		r.Status, r.Reason, r.Iterations = string(res.Status), res.Reason, res.Iterations
		r.Succeeded = res.State.Succeeded
		r.Usage = resultUsage{Tokens: res.Usage.Tokens, InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
			CostUSD: res.Usage.Cost, WallSeconds: res.Usage.Wall.Seconds()}
	}
	switch {
	case err != nil:
		r.Error = err.Error()
	case errLine != "":
		r.Error = errLine
	}
	if rep != nil && rep.lastErr != nil {
		r.LastError = withReason(rep.lastErr)
	}
	data, _ := json.Marshal(r) // plain fields: cannot fail
	fmt.Fprintf(w, "%s\n", data)
}
