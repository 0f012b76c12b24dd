package iterate

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// Engine runs a refinement loop over a state of type S. [New] returns the
// default implementation.
type Engine[S any] interface {
	// Run starts a new session from initial and iterates until a policy
	// stops it, the budget runs out, a human is needed or ctx is done.
	//
	// Run returns a nil error for every stop the loop decides on its own
	// (converged, early exit, iteration limit, stuck, plateau, budget
	// exhausted); Result.Status tells them apart. It returns an
	// *EscalationError when a human is needed, an *InterruptedError when
	// ctx ends the loop (the state is saved as interrupted), a *StopError
	// when the loop aborts after failures or fails, and a *ConfigError for
	// invalid options.
	Run(ctx context.Context, initial S) (*Result[S], error)

	// Resume continues the session from its latest checkpoint: the
	// iteration count, convergence history, budget usage and the state are
	// restored, and the next iteration is the one after the last
	// completed. A session that ended for good returns its saved result
	// without iterating; an escalated session needs [WithAnswer] (without
	// it, the escalation is returned again).
	//
	// Resume needs a checkpointer. A session without a checkpoint gives an
	// error matching checkpoint.ErrNotFound; a damaged one,
	// checkpoint.ErrCorrupt; a checkpoint written under other settings, a
	// *SettingsChangedError unless [AllowSettingsChange] was given. Under a
	// context that has already ended it runs nothing and returns an
	// *InterruptedError (BeforeStart) with the session's saved state and
	// counters in the Result. With [ForkFrom], Resume starts the engine's
	// session afresh as a fork of a kept generation of another session.
	Resume(ctx context.Context, opts ...ResumeOption) (*Result[S], error)
}

// Worker is the host's domain logic: where the state stands, doing one task,
// and folding what tasks found back into the state.
//
// Assess and Integrate run in the loop's goroutine; Work runs concurrently for
// the tasks of one iteration (up to the parallelism limit), each call with its
// own task and a context that carries the task's timeout. Work must not modify
// s: it returns what its task found in Outcome.Part, and Integrate, called
// once per iteration with every outcome in task order, returns the new state.
// A panic in Work is recovered and reported as a failed task; a panic in
// Assess or Integrate is recovered and ends the run with a *PanicError.
type Worker[S any] interface {
	Assess(ctx context.Context, s S) (gap.Assessment, error)
	Work(ctx context.Context, s S, t Task) (Outcome[S], error)
	Integrate(ctx context.Context, s S, outcomes []Outcome[S]) (S, error)
}

// StageEnder is implemented by a [Worker] that wants to act between the
// stages of an iteration (see [Task.Stage]), e.g. to recover markers after a
// wave. EndStage is called, in the loop's goroutine, with the state at the
// start of the iteration and the outcomes of the stage's tasks; an error is
// reported as a warning.
type StageEnder[S any] interface {
	EndStage(ctx context.Context, s S, stage int, outcomes []Outcome[S]) error
}

// Concluder is implemented by a [Worker] that records how the loop ended in
// its state (a summary's "stuck_detected: true"). Conclude is called once
// when the loop stops, before the final checkpoint, with the status and the
// reason; an error is reported as a warning and the state kept.
type Concluder[S any] interface {
	Conclude(ctx context.Context, s S, status Status, reason string) (S, error)
}

// Outcome is the result of one task.
type Outcome[S any] struct {
	// Task is the task this outcome belongs to (set by the engine).
	Task Task
	// Part holds what the task found, as a value of the state type.
	Part S
	// Usage is what the task spent; the engine charges it to the budget.
	Usage budget.Usage
	// Warnings are reported by the engine as Warned events and warn-level
	// log entries, e.g. "prompt exceeds token budget: 120,000 > 100,000".
	Warnings []string
	// Err is the task's error (set by the engine): a failed, timed-out or
	// panicking task. Integrate sees failed outcomes too, so the host can
	// mark their gaps unresolved.
	Err error
	// Done reports that the task finished the whole work: once its outcome
	// is integrated, the loop's next assessment is complete (converging
	// with "work complete" under a policy with [converge.Done], as the
	// default), whatever the worker's Assess says. The flag is saved with
	// the loop, so a resumed loop honours it too.
	Done bool
	// Output is what the task printed, as the worker wants it kept: an AI
	// CLI's last message, a test run's summary. The iteration's record
	// keeps it whole up to 1,024 bytes and otherwise its tail: "…" and at
	// most its last 1,021 bytes, cut at a character boundary
	// (converge.TaskRun.Output), for viewers and inspectors; the engine
	// does not read it otherwise.
	Output string
	// Duration is how long the task ran (set by the engine; for a task
	// replayed from the journal, how long it ran before).
	Duration time.Duration
	// Actions are what the task did, as fingerprints the host chooses: a
	// tool call with its arguments, a command, a file changed ("edit
	// main.go", "run go test ./..."). The iteration's record keeps them
	// (converge.Attempt.Actions), and [converge.Repeating] stops a loop
	// that repeats the same actions without improving.
	Actions []string
}

// Failed reports whether the task failed.
func (o *Outcome[S]) Failed() bool { return o.Err != nil }

// Task is one targeted piece of work of an iteration: a gap to close, the
// role that should close it, and what it should be told.
type Task struct {
	// Iteration (1-indexed) and Index (0-indexed) place the task in the run;
	// MaxIterations is the iteration limit (0 when unlimited).
	Iteration     int
	Index         int
	MaxIterations int
	// Action is the strategy the task follows.
	Action Action
	// Role names the worker role: one of the default roles of [Adaptive]
	// ([RoleExplore], [RoleCitation], ... [RoleImplement]) or a host's.
	Role RoleName
	// Gaps are the gaps the task addresses; the first is the main one. A
	// broad task (no actionable gap) has none.
	Gaps []gap.Gap
	// Prompt is the role's instruction for this gap.
	Prompt string
	// Feedback is the synthesised feedback of the previous attempts (see
	// Plan.Feedback).
	Feedback string
	// Guidance lists the strategy's adjustments, e.g. "Verify all factual
	// claims before including".
	Guidance []string
	// Answer is a human's answer to an escalation, on the first iteration
	// after it.
	Answer string
	// Timeout bounds the task; 0 means none.
	Timeout time.Duration
	// Stage orders the tasks of one iteration: the tasks of a stage start
	// once every task of the lower stages has returned; the tasks of one
	// stage run in parallel (waves of a plan). Tasks of the same stage start
	// in task order. Most plans leave it 0: one stage.
	Stage int
	// Data carries host data from the Strategy to Work and Integrate (a
	// wave number, a share of a rate limit). It is not checkpointed.
	Data any
}

// ID returns a stable identifier of the task within its run, e.g. "3.1".
func (t *Task) ID() string {
	return strconv.Itoa(t.Iteration) + "." + strconv.Itoa(t.Index+1)
}

// Gap returns the main gap of the task, or the zero Gap for a broad task.
func (t *Task) Gap() gap.Gap {
	if len(t.Gaps) == 0 {
		return gap.Gap{}
	}
	return t.Gaps[0]
}

// GapAnalyzer finds the gaps of an assessment. [gap.Default] is the default.
type GapAnalyzer interface {
	Analyze(ctx context.Context, a gap.Assessment, t gap.Thresholds) ([]gap.Gap, error)
}

// Strategy plans an iteration: the action to take and the tasks to run.
// [Adaptive] is the default. Plan may keep no reference to sit after it
// returns, and hands the returned plan to the engine, which fills in each
// task's iteration, index, limit, timeout and answer in place: return a
// fresh Tasks slice (or one built on nothing the strategy keeps).
type Strategy interface {
	Plan(ctx context.Context, sit *Situation) (Plan, error)
}

// StrategyFunc adapts a function to a [Strategy].
type StrategyFunc func(ctx context.Context, sit *Situation) (Plan, error)

// Plan calls f(ctx, sit).
func (f StrategyFunc) Plan(ctx context.Context, sit *Situation) (Plan, error) { return f(ctx, sit) }

// ConvergencePolicy decides when the loop stops. [converge.Default] is the
// default; converge.PolicyFunc adapts a function.
type ConvergencePolicy interface {
	Decide(h *converge.History) converge.Decision
}

// Checkpointer saves and loads checkpoints. [checkpoint.Memory] and
// [checkpoint.Dir] implement it. A store is a contract the engine counts
// on, and checkpointtest.Run checks it:
//
//   - Save stores a copy of c (the store never modifies c, nor keeps it)
//     as generation max(c.Generation, newest+1), where newest is the
//     session's newest generation, so that the latest save wins even when
//     two writers' numbering differs; it never stores c.Skipped.
//   - Load returns a copy of the session's newest checkpoint, or an error
//     matching checkpoint.ErrNotFound when the session has none. A store
//     that keeps several generations may fall back past damaged ones; it
//     then sets Skipped to their generations, newest first.
//   - Save and Load under a context that has ended fail with its error
//     (context.Canceled), Save saving nothing; neither keeps ctx.
//
// A Checkpointer may also implement [Locker], to refuse a second concurrent
// run of a session and fence a writer that lost its lock, [Remover], to
// delete a session's checkpoints when a loop completes cleanly (see
// [Cleanup]), and [StreamSaver], to take a large state as a stream.
type Checkpointer interface {
	Save(ctx context.Context, c *checkpoint.Checkpoint) error
	Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error)
}

// Locker is implemented by a [Checkpointer] that can lock a session for one
// writer. Lock returns an error matching checkpoint.ErrLocked when another
// run holds it, and otherwise a fencing token that grows with every new
// holder: the engine stamps it on every checkpoint it saves, and a store
// refuses a save whose token is no longer current (checkpoint.ErrFenced),
// which stops the loop.
type Locker interface {
	Lock(ctx context.Context, session string) (token uint64, release func() error, err error)
}

// GenerationLoader is implemented by a [Checkpointer] that keeps a
// session's generations apart and can list and load any of them, as
// [checkpoint.Dir] and [checkpoint.Memory] do: Generations returns the
// envelopes of the session's kept generations (Engine and State nil),
// oldest first; LoadGeneration returns one generation whole, or an error
// matching checkpoint.ErrNotFound when it is not kept. Neither modifies the
// session. A fork ([ForkFrom]) needs it.
type GenerationLoader interface {
	Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error)
	LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error)
}

// Remover is implemented by a [Checkpointer] that can delete a session.
type Remover interface {
	Remove(ctx context.Context, session string) error
}

// Compile-time checks that the stores and policies of the leaf packages
// satisfy the engine's interfaces.
var (
	_ Checkpointer      = (*checkpoint.Memory)(nil)
	_ Checkpointer      = (*checkpoint.Dir)(nil)
	_ Locker            = (*checkpoint.Memory)(nil)
	_ Locker            = (*checkpoint.Dir)(nil)
	_ Remover           = (*checkpoint.Memory)(nil)
	_ Remover           = (*checkpoint.Dir)(nil)
	_ GenerationLoader  = (*checkpoint.Memory)(nil)
	_ GenerationLoader  = (*checkpoint.Dir)(nil)
	_ ConvergencePolicy = converge.PolicyFunc(nil)
)

// Round describes one iteration to a [Func] worker.
type Round struct {
	// Iteration is the 1-indexed iteration number; MaxIterations is 0 when
	// unlimited.
	Iteration, MaxIterations int
	// Task is the iteration's one task: the broad task when nothing more
	// specific was planned, else the plan's tasks merged into one, whose
	// Gaps list every gap the iteration should address, once each, in
	// priority order (P1 first), and whose Role and Prompt are those of
	// the plan's first task.
	Task Task

	// usage, done and output are where Charge, Done and Output report: the
	// fields of the outcome the engine is filling, or of a pooled
	// roundReport.
	usage   *budget.Usage
	done    *bool
	output  *string
	actions *[]string
}

type roundReport struct {
	usage   budget.Usage
	done    bool
	output  string
	actions []string
}

// reports recycles the reports of rounds called through Work, so that a
// Func step costs no allocation.
var reports = sync.Pool{New: func() any { return new(roundReport) }}

// Done says that this round finished the work: the loop converges ("work
// complete") after it instead of running more rounds (see Outcome.Done).
func (r Round) Done() {
	if r.done != nil {
		*r.done = true
	}
}

// Output records s as what the round printed, kept in the iteration's
// record (see Outcome.Output); a later call replaces it.
func (r Round) Output(s string) {
	if r.output != nil {
		*r.output = s
	}
}

// Did records what the round did, as fingerprints (see Outcome.Actions):
// a tool call with its arguments, a command, a file changed. Calls add up.
func (r Round) Did(actions ...string) {
	if r.actions != nil {
		*r.actions = append(*r.actions, actions...)
	}
}

// Charge adds usage (tokens, cost, external calls) the call spent; the engine charges it to
// the budget and the result's usage.
func (r Round) Charge(u budget.Usage) {
	if r.usage != nil {
		*r.usage = r.usage.Add(u)
	}
}

// warnKey is the context key of the loop's warner: the run itself, so that
// putting it in the context allocates nothing but the context.
type warnKey struct{}

// warner is what [Warn] finds under warnKey.
type warner interface{ hostWarn(msg string) }

// Warn reports a warning from inside a Worker's Work, Assess or Integrate
// under a loop's context: the engine emits it at once as a Warned event (from
// the calling goroutine) and logs it at warn level. It reports whether a
// loop took the warning; outside a loop it does nothing and returns false.
// For a warning that should wait for the task's end, use Outcome.Warnings.
func Warn(ctx context.Context, msg string) bool {
	w, ok := ctx.Value(warnKey{}).(warner)
	if ok {
		w.hostWarn(msg)
	}
	return ok
}

// FuncWorker is a [Worker] for the simplest loops: one function call per
// iteration that returns the next state. Do is required; AssessFunc is
// optional and, when nil, every assessment is empty (the loop then stops on
// the iteration limit, the budget, failures or cancellation).
//
// Do is called exactly once per iteration, whatever the assessment: when
// the strategy plans several tasks (an assessment with several gaps), the
// engine runs them as one, and the [Round]'s Task lists every gap they
// address. (Called through Work by other code, a FuncWorker is one call
// per task.)
//
// An error from Do fails the iteration (counted towards the consecutive
// failure threshold) and leaves the state unchanged.
type FuncWorker[S any] struct {
	Do         func(ctx context.Context, s S, r Round) (S, error)
	AssessFunc func(ctx context.Context, s S) (gap.Assessment, error)
}

// Func returns a [FuncWorker] calling do once per iteration; S is inferred
// from do.
func Func[S any](do func(ctx context.Context, s S, r Round) (S, error)) *FuncWorker[S] {
	return &FuncWorker[S]{Do: do}
}

// Assess calls AssessFunc, or returns an empty assessment.
func (w *FuncWorker[S]) Assess(ctx context.Context, s S) (gap.Assessment, error) {
	if w.AssessFunc == nil {
		return gap.Assessment{}, nil
	}
	return w.AssessFunc(ctx, s)
}

// Work calls Do with the task's iteration.
//
// The Round is valid only during the call: Do must not keep it.
func (w *FuncWorker[S]) Work(ctx context.Context, s S, t Task) (Outcome[S], error) {
	rep := reports.Get().(*roundReport)
	next, err := w.Do(ctx, s, Round{Iteration: t.Iteration, MaxIterations: t.MaxIterations, Task: t,
		usage: &rep.usage, done: &rep.done, output: &rep.output, actions: &rep.actions})
	out := Outcome[S]{Part: next, Usage: rep.usage, Done: rep.done, Output: rep.output, Actions: rep.actions}
	*rep = roundReport{}
	reports.Put(rep)
	return out, err
}

// workInto is Work for the engine, which gives the outcome to fill (set to
// what Work returns, but for Err): the round reports into it directly,
// with no report to recycle.
func (w *FuncWorker[S]) workInto(ctx context.Context, s S, t *Task, out *Outcome[S]) error {
	// Every field but Task, which the engine sets: zeroing the whole
	// outcome would clear the task twice.
	out.Usage, out.Done, out.Warnings, out.Err, out.Output, out.Duration, out.Actions = budget.Usage{}, false, nil, nil, "", 0, nil
	next, err := w.Do(ctx, s, Round{Iteration: t.Iteration, MaxIterations: t.MaxIterations, Task: *t,
		usage: &out.Usage, done: &out.Done, output: &out.Output, actions: &out.Actions})
	out.Part = next
	return err
}

// Integrate returns the Part of the last successful outcome, or s when every
// outcome failed.
func (w *FuncWorker[S]) Integrate(_ context.Context, s S, outcomes []Outcome[S]) (S, error) {
	for i := len(outcomes) - 1; i >= 0; i-- {
		if outcomes[i].Err == nil {
			return outcomes[i].Part, nil
		}
	}
	return s, nil
}
