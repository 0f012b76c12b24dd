package iterate

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// Event is something that happened in a loop, delivered to the observers of
// [WithObserver]. Events are values an observer may keep, but the slices
// they hold (gaps, tasks) are shared with the engine and must not be
// modified. The concrete types are LoopStarted, LoopStopped,
// IterationStarted, GapsFound, Decided, Planned, TaskStarted, TaskEnded,
// IterationEnded, CheckpointSaved, Recovered, Warned, QuestionReminder and
// QuestionExpired; switch on them.
//
// Every event a loop sends names the loop's session ([SessionOf]), so that
// one observer can follow every loop of a process.
type Event interface {
	// Iteration is the 1-indexed iteration the event belongs to (0 before
	// the first).
	Iteration() int
}

// It is embedded in every event: the iteration, and the session of the loop
// that sent it.
type it struct {
	N       int
	session string
}

// Iteration returns the event's 1-indexed iteration.
func (e it) Iteration() int { return e.N }

func (e it) sessionName() string { return e.session }

// SessionOf returns the session of the loop that sent e (as [WithSession]
// names it). For an event made outside a loop, as a test makes one, it is
// the event's Session field (LoopStarted, CheckpointSaved), or "".
func SessionOf(e Event) string {
	if s, ok := e.(interface{ sessionName() string }); ok && s.sessionName() != "" {
		return s.sessionName()
	}
	switch e := e.(type) {
	case LoopStarted:
		return e.Session
	case CheckpointSaved:
		return e.Session
	}
	return ""
}

// LoopStarted is sent when Run or Resume starts iterating.
type LoopStarted struct {
	it
	Session       string
	MaxIterations int
	// Resumed is true for Resume; Completed is then the number of iterations
	// already done and Elapsed their total duration.
	Resumed   bool
	Completed int
	Elapsed   time.Duration
	Time      time.Time
	// StartedAt is when the session first started (before any resume).
	StartedAt time.Time
	// ConsecutiveFailures (restored on resume) and the FailureThreshold
	// that aborts the loop ([WithFailureThreshold]).
	ConsecutiveFailures, FailureThreshold int
	// Durations are the durations of the most recent completed iterations
	// (restored on resume), LastIterationAt when the last one ended.
	Durations       []time.Duration
	LastIterationAt time.Time
	// Context is the context Run or Resume was called with, for observers
	// that trace: a span it carries is the run's parent. It is the
	// caller's; an observer must not keep it past the run's LoopStopped.
	Context context.Context
}

// LoopStopped is sent when the loop ends, whatever the reason.
type LoopStopped struct {
	it
	Status  Status
	Reason  string
	Elapsed time.Duration // total of all iterations, across resumes
	Time    time.Time
	// ConsecutiveFailures when the loop stopped.
	ConsecutiveFailures int
	// Saved reports that the final checkpoint was saved; SaveErr is why
	// not, when a checkpointer is set.
	Saved   bool
	SaveErr error
}

// IterationStarted is sent before an iteration's tasks start. Time is when
// the iteration started: when the one before ended, or the run started
// (see IterationEnded.Duration).
type IterationStarted struct {
	it
	Time time.Time
}

// GapsFound is sent after the assessment with the prioritised gaps.
type GapsFound struct {
	it
	Assessment gap.Assessment
	Gaps       []gap.Gap
}

// Decided is sent with the convergence decision of each round.
type Decided struct {
	it
	Decision converge.Decision
}

// Planned is sent with the plan of an iteration. It is also sent, with
// Action Escalate and no tasks, for the plan that phrases an escalation the
// convergence policy decided; observers printing per-attempt decisions can
// skip it.
type Planned struct {
	it
	Plan Plan
}

// TaskStarted is sent when a task starts, from the task's goroutine.
type TaskStarted struct {
	it
	Task Task
}

// TaskEnded is sent when a task ends, from the task's goroutine. Under
// [Journal] it is sent once a save holding the task's outcome has returned,
// so that a crash after it does not run the task again: after the task's
// own save, or, when the journal's goroutine or the iteration's save took
// the task (see Journal), from the goroutine that saved, after that save's
// CheckpointSaved (for the iteration's save, after its IterationEnded).
type TaskEnded struct {
	it
	Task     Task
	Err      error
	Usage    budget.Usage
	Duration time.Duration
	// Replayed says the task did not run: a resumed iteration replayed
	// its outcome from the journal ([Journal]), and Usage and Duration are
	// those recorded when it ran, already reported then.
	Replayed bool
	// Interrupted says the task was cut short by the end of the loop's
	// context (Err is whatever Work returned then, often not the
	// context's error): it is not a failure, is not journaled, and runs
	// again when the session resumes.
	Interrupted bool
}

// IterationEnded is sent after an iteration's results are integrated.
type IterationEnded struct {
	it
	// Time is when the iteration ended, and Duration how long it took from
	// the end of the one before (or the start of the run, or of the resumed
	// run): its assessment, gap analysis, decision, plan, tasks and
	// integration, and the checkpoint saved after the one before. The
	// durations of a run's iterations add up to the run's time.
	Time     time.Time
	Duration time.Duration
	// Failed is true when the iteration counted as a failure (every task
	// failed, or integration failed); Err is the last error.
	Failed bool
	Err    error
	// Tasks and FailedTasks count the iteration's tasks.
	Tasks, FailedTasks int
	// ConsecutiveFailures after this iteration.
	ConsecutiveFailures int
	Usage               budget.Usage
}

// CheckpointSaved is sent after every save attempt, Err set when it failed:
// the loop's save after each iteration and at its stop, and, under
// [Journal], the saves of finished tasks (from the task's goroutine or the
// journal's own, with Status Running). A save retried under [Strict] is
// one attempt.
//
// Iteration() is the iteration the save belongs to: for the loop's saves,
// the one the checkpoint completes (its Completed); for a journal's save,
// the iteration in flight whose finished task it records, one more than
// Completed.
type CheckpointSaved struct {
	it
	Session    string
	Generation uint64
	Status     Status
	// Completed is the number of completed iterations the checkpoint
	// holds (checkpoint.Checkpoint.Iteration).
	Completed int
	Err       error
	// Duration is how long the save took, its retries included; Bytes, how
	// many bytes of engine record and state the last attempt gave the
	// store.
	Duration time.Duration
	Bytes    int64
}

// Recovered is sent when the session's newest checkpoint generations were
// damaged (Skipped, newest first) and the loop went on from an older one
// (Generation). A Warned event says the same in words.
type Recovered struct {
	it
	Generation uint64
	Skipped    []uint64
}

// Warned is sent with a warning: a budget running low, a checkpoint that
// could not be saved, a fallback to an older checkpoint, problems that
// persist.
type Warned struct {
	it
	Message string
}

// Progress returns an observer that prints progress lines in the style of
// seed 004 to w, 1-indexed, with the wall-clock time:
//
//	[10:00:00] Starting session: build (max 3 iterations)
//	[10:00:00] Iteration 1/3 starting...
//	[10:00:45] Iteration 1/3 completed in 45.2s
//	[10:02:10] WARNING: AI CLI failed (exit 1), consecutive failures: 1/3
//	[10:02:16] Reached max iterations: 3 (total: 2m16s)
//
// The iteration that reaches the failure threshold is followed directly by
// the "ERROR: Aborting after 3 consecutive failures" line. Write errors are
// ignored. The observer is safe for concurrent use.
func Progress(w io.Writer, opts ...ProgressOption) func(Event) {
	p := &progress{w: w, noun: "session"}
	for _, o := range opts {
		if o != nil {
			o(p)
		}
	}
	return p.observe
}

// ProgressOption configures [Progress].
type ProgressOption func(*progress)

// ProgressNoun names what runs, e.g. "procedure" for "Starting procedure:
// build (max 3 iterations)"; the default is "session".
func ProgressNoun(noun string) ProgressOption {
	return func(p *progress) { p.noun = noun }
}

// ProgressResumeHint adds the command that resumes an interrupted loop to
// the interruption line: "Interrupted. State saved. Resume with: CMD".
func ProgressResumeHint(cmd string) ProgressOption {
	return func(p *progress) { p.resume = cmd }
}

type progress struct {
	mu     sync.Mutex
	w      io.Writer
	noun   string
	resume string
	// From LoopStarted: the iteration limit and the failure threshold.
	max, threshold int
}

func iterLabel(n, max int) string {
	if max > 0 {
		return fmt.Sprintf("Iteration %d/%d", n, max)
	}
	return fmt.Sprintf("Iteration %d", n)
}

func limitLabel(max int) string {
	if max > 0 {
		return fmt.Sprintf("max %d iterations", max)
	}
	return "unlimited iterations"
}

func (p *progress) observe(e Event) {
	var line string
	var at time.Time
	switch e := e.(type) {
	case LoopStarted:
		at = e.Time
		p.max, p.threshold = e.MaxIterations, e.FailureThreshold
		if e.Resumed {
			limit := "unlimited"
			if e.MaxIterations > 0 {
				limit = fmt.Sprintf("max %d", e.MaxIterations)
			}
			line = fmt.Sprintf("Resuming %s: %s from iteration %d (%s)", p.noun, e.Session, e.Completed, limit)
			line += fmt.Sprintf("\n[%s] Previous session: %s completed in %s", clock(at), plural(e.Completed, "iteration"), formatDuration(e.Elapsed))
		} else {
			line = fmt.Sprintf("Starting %s: %s (%s)", p.noun, e.Session, limitLabel(e.MaxIterations))
		}
	case IterationStarted:
		at = e.Time
		line = iterLabel(e.N, p.max) + " starting..."
	case IterationEnded:
		at = e.Time
		if e.Failed && e.Err != nil {
			p.print(at, fmt.Sprintf("WARNING: %v, consecutive failures: %d/%d", e.Err, e.ConsecutiveFailures, p.threshold))
		}
		if e.Failed && p.threshold > 0 && e.ConsecutiveFailures >= p.threshold {
			return // the abort line follows
		}
		line = fmt.Sprintf("%s completed in %s", iterLabel(e.N, p.max), formatSeconds(e.Duration))
	case Warned:
		at = time.Now()
		line = "WARNING: " + e.Message
	case LoopStopped:
		at = e.Time
		line = p.stopLine(e)
	default:
		return
	}
	p.print(at, line)
}

func (p *progress) stopLine(e LoopStopped) string {
	total := formatDuration(e.Elapsed)
	switch e.Status {
	case MaxIterations:
		return fmt.Sprintf("Reached max iterations: %d (total: %s)", e.N, total)
	case Aborted:
		what := capitalize(e.Reason)
		if p.threshold > 0 && e.ConsecutiveFailures >= p.threshold {
			what = fmt.Sprintf("Aborting after %d consecutive failures", e.ConsecutiveFailures)
		}
		return fmt.Sprintf("ERROR: %s (%s completed, total: %s)", what, plural(e.N, "iteration"), total)
	case Interrupted:
		switch {
		case e.SaveErr != nil:
			return "Interrupted. State not saved: " + e.SaveErr.Error()
		case !e.Saved:
			return "Interrupted."
		case p.resume != "":
			return "Interrupted. State saved. Resume with: " + p.resume
		}
		return "Interrupted. State saved."
	default:
		reason := e.Reason
		if reason == "" {
			reason = string(e.Status)
		}
		return fmt.Sprintf("%s (%s, total: %s)", capitalize(reason), plural(e.N, "iteration"), total)
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	s = strings.ReplaceAll(s, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

func (p *progress) print(at time.Time, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%s] %s\n", clock(at), line)
}

func clock(t time.Time) string { return t.Format("15:04:05") }

// formatSeconds formats d as seconds with one decimal, e.g. "45.2s".
func formatSeconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// formatDuration formats d compactly in whole seconds: "2m16s", "45s",
// "1h2m3s"; durations under a second print as "0s".
func formatDuration(d time.Duration) string {
	return d.Round(time.Second).String()
}
