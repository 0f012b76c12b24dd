package iterate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
)

// Status is how a loop stands or why it stopped.
type Status string

// Statuses. Every stop has one, with a human-readable reason beside it in
// [Result.Reason].
const (
	// Running: the loop has not stopped (seen only in checkpoints).
	Running Status = "running"
	// Converged: every convergence criterion is met (full convergence).
	Converged Status = "converged"
	// EarlyExit: quality is exceptionally high; stopped before the limit.
	EarlyExit Status = "early_exit"
	// MaxIterations: the iteration limit was reached without convergence
	// (partial convergence; Result.Decision.Unmet() lists the unmet criteria).
	MaxIterations Status = "max_iterations"
	// Stuck: the work remaining stopped changing (the policy's verdict), or
	// the strategy sees no way forward (a plan with Action Stop; the
	// default [Adaptive] gives one when the same problems survive its
	// attempts, whatever the policy).
	Stuck Status = "stuck"
	// Plateau: the scores stopped improving.
	Plateau Status = "plateau"
	// BudgetExhausted: another iteration would exceed a hard budget limit.
	BudgetExhausted Status = "budget_exhausted"
	// Aborted: too many consecutive failed iterations ([WithFailureThreshold]),
	// or a policy's Aborted verdict.
	Aborted Status = "aborted"
	// Interrupted: the context was cancelled; Resume continues.
	Interrupted Status = "interrupted"
	// Escalated: a human must answer Result.Escalation.Question; Resume with
	// WithAnswer continues.
	Escalated Status = "escalated"
	// Failed: an error the loop cannot go on from (a worker's permanent
	// error, a failed strict checkpoint).
	Failed Status = "failed"
)

// Success reports whether s is a successful stop: Converged or EarlyExit.
func (s Status) Success() bool { return s == Converged || s == EarlyExit }

// Final reports whether a session with this status has ended for good:
// Resume of it returns the saved result without iterating.
func (s Status) Final() bool {
	switch s {
	case Running, Interrupted, Escalated, "":
		return false
	}
	return true
}

func statusOf(v converge.Verdict) Status {
	switch v {
	case converge.Converged:
		return Converged
	case converge.EarlyExit:
		return EarlyExit
	case converge.MaxIterations:
		return MaxIterations
	case converge.Stuck:
		return Stuck
	case converge.Plateau:
		return Plateau
	case converge.Aborted:
		return Aborted
	case converge.Escalate:
		return Escalated
	}
	return Running
}

// Result is the outcome of Run or Resume.
type Result[S any] struct {
	// State is the final state.
	State S
	// Status says why the loop stopped and Reason explains it, e.g.
	// "converged: coverage 0.88 ≥ 0.70, confidence 0.91 ≥ 0.80, ...".
	Status Status
	Reason string
	// Iterations is the number of completed iterations, across resumes.
	Iterations int
	// Decision is the last convergence decision; Decision.Unmet() lists the
	// criteria a partial convergence fell short of.
	Decision converge.Decision
	// Usage is what the loop spent, across resumes.
	Usage budget.Usage
	// History is the convergence history: History.Recent holds a record of
	// each of the most recent iterations (a window kept across resumes, so
	// that a loop of any length costs constant space), with the coverage
	// and confidence it reached, its gaps by kind and priority, the
	// decision taken on it, its action, duration, tokens, cost and calls,
	// and each of its tasks (role, duration, tokens, error, output);
	// History.Gaps are the gaps open at the last assessment.
	History converge.History
	// Totals sums over every iteration, across resumes.
	Totals Totals
	// Best is the best state the loop has seen, with [WithKeepBest]
	// (which says what best means for each status); nil without it.
	Best *Best[S]
	// Escalation is set when Status is Escalated.
	Escalation *Escalation
	// Extensions are the raises of the session's budget in place, oldest
	// first (see [ExtendBudget]).
	Extensions []Extension
	// Err is the error that ended the loop, if any (also returned by Run).
	Err error
}

// Totals are cumulative metrics of a session, across resumes: its completed
// iterations, their tasks and failed tasks, and their durations added up
// (see IterationEnded.Duration).
type Totals struct {
	Iterations  int
	Tasks       int
	FailedTasks int
	Duration    time.Duration
}

// ErrEscalated is matched by every *EscalationError.
var ErrEscalated = errors.New("iterate: escalated to a human")

// EscalationError is returned when the loop needs a human. Resume with
// [WithAnswer] continues.
type EscalationError struct {
	Escalation *Escalation
}

func (e *EscalationError) Error() string {
	msg := "iterate: escalated to a human after " + strconv.Itoa(e.Escalation.Iteration) + " iterations"
	switch {
	case e.Escalation.Reason != "":
		msg += ": " + e.Escalation.Reason
	case e.Escalation.Question != "":
		msg += ": " + e.Escalation.Question
	}
	return msg
}

// Is reports whether target is ErrEscalated.
func (e *EscalationError) Is(target error) bool { return target == ErrEscalated }

// ErrAborted is matched by a *StopError whose status is Aborted.
var ErrAborted = errors.New("iterate: aborted")

// ErrFailed is matched by a *StopError whose status is Failed.
var ErrFailed = errors.New("iterate: failed")

// StopError is returned when the loop stops on failures: Aborted after
// consecutive failures, or Failed. Err is the last error
// of the work, if any.
type StopError struct {
	Status Status
	Reason string
	Err    error
}

func (e *StopError) Error() string {
	msg := "iterate: " + string(e.Status) + ": " + e.Reason
	// A reason that already ends with the error (a failed checkpoint's)
	// does not repeat it.
	if e.Err != nil && !strings.HasSuffix(e.Reason, e.Err.Error()) {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is matches ErrAborted or ErrFailed by status.
func (e *StopError) Is(target error) bool {
	return (target == ErrAborted && e.Status == Aborted) || (target == ErrFailed && e.Status == Failed)
}

// Unwrap returns the last error of the work.
func (e *StopError) Unwrap() error { return e.Err }

// ErrInterrupted is matched by every *InterruptedError.
var ErrInterrupted = errors.New("iterate: interrupted")

// InterruptedError is returned when the context ends the loop. It unwraps to
// both the context's cause and the last error of the work, so
// errors.Is(err, context.Canceled) holds.
type InterruptedError struct {
	// Iteration is the number of completed iterations.
	Iteration int
	Cause     error
	Last      error
	// BeforeStart is true when the context had ended before Run or Resume
	// began: nothing ran and nothing was saved. (Resume still reports the
	// session's completed iterations, and its Result the saved state.)
	BeforeStart bool
}

func (e *InterruptedError) Error() string {
	msg := fmt.Sprintf("iterate: interrupted after %d iterations: %v", e.Iteration, e.Cause)
	if e.Last != nil {
		msg += " (last error: " + e.Last.Error() + ")"
	}
	return msg
}

// Is reports whether target is ErrInterrupted.
func (e *InterruptedError) Is(target error) bool { return target == ErrInterrupted }

// Unwrap returns the cause and the last error.
func (e *InterruptedError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Cause}
	}
	return []error{e.Cause, e.Last}
}

// ErrSettingsChanged is matched by every *SettingsChangedError.
var ErrSettingsChanged = errors.New("iterate: settings changed since the checkpoint")

// SettingsChangedError refuses a resume under settings that differ from the
// checkpoint's; [AllowSettingsChange] permits it.
type SettingsChangedError struct {
	Session string
	// Changes names each setting that differs, with its saved and current
	// value, exactly, e.g. "coverage threshold 0.3 → 0.9".
	Changes []string
}

func (e *SettingsChangedError) Error() string {
	what := "its settings changed"
	if len(e.Changes) > 0 {
		what = strings.Join(e.Changes, ", ")
	}
	return "iterate: session " + strconv.Quote(e.Session) + " was checkpointed under other settings: " + what + "; resume with AllowSettingsChange to continue anyway"
}

// Is reports whether target is ErrSettingsChanged.
func (e *SettingsChangedError) Is(target error) bool { return target == ErrSettingsChanged }

// ErrResumable is matched by every *ResumableError.
var ErrResumable = errors.New("iterate: session can be resumed")

// ResumableError is returned by Run under [RefuseResumable] when the
// session's latest checkpoint can still be resumed.
type ResumableError struct {
	Checkpoint *checkpoint.Checkpoint
}

func (e *ResumableError) Error() string {
	return fmt.Sprintf("iterate: session %q is %s after %d iterations; resume it or start afresh",
		e.Checkpoint.Session, e.Checkpoint.Status, e.Checkpoint.Iteration)
}

// Is reports whether target is ErrResumable.
func (e *ResumableError) Is(target error) bool { return target == ErrResumable }

// ErrPanic is matched by every *PanicError.
var ErrPanic = errors.New("iterate: panic")

// PanicError carries a recovered panic from host code.
type PanicError struct {
	// Where is "work", "assess", "integrate", "analyze", "plan", "decide",
	// "end stage", "conclude", "score" (a keep-best scorer), "observer",
	// "settings" (a Settings or String method describing the settings),
	// "encode" or "decode" (the codec), or "checkpointer " and the store's
	// method ("checkpointer Save", "checkpointer Lock", ...).
	Where string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("iterate: panic in %s: %v", e.Where, e.Value) }

// Is reports whether target is ErrPanic.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }

// ErrAbandoned is matched by the error of a task that ignored its cancelled
// context for longer than the grace period.
var ErrAbandoned = errors.New("iterate: task ignored cancellation and was abandoned")

// Permanent marks err as final: a task or worker step that returns it ends
// the run with status Failed instead of counting as a retryable failure.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err was marked with [Permanent].
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
