package iterate

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/internal/byptr"
)

// New returns an [Engine] that refines states of type S with the worker w.
// S is inferred from w; options are plain values. With no options the loop
// runs at most [DefaultMaxIterations] iterations with the default gap
// analyzer ([gap.Default]), strategy ([Adaptive]) and convergence policy
// ([converge.Default]: completion, passing checks, early exit, thresholds,
// consecutive failures, stuck detection and the iteration limit), no
// budget limits and no checkpoints. The failure threshold of
// [WithFailureThreshold] holds under any policy.
//
// Invalid options do not panic: Run and Resume return a *ConfigError (all of
// them, joined) before doing anything.
//
// The engine is safe for concurrent use, but two runs of the same session
// must not overlap: with a [Locker] checkpointer the second is refused.
func New[S any](w Worker[S], opts ...Option) Engine[S] {
	e := &engine[S]{w: w, cfg: defaultConfig()} // configured in place: one allocation
	cfg := &e.cfg
	for _, o := range opts {
		if o != nil {
			o.apply(cfg)
		}
	}
	if w == nil {
		cfg.invalid("New", "nil worker")
	}
	e.stageEnder, _ = w.(StageEnder[S])
	e.concluder, _ = w.(Concluder[S])
	e.funcWorker, _ = w.(*FuncWorker[S])
	e.defaultAnalyzer = cfg.analyzer == nil || cfg.analyzer == gap.Default()
	e.err = cfg.finish()
	e.adaptive, _ = cfg.strategy.(*Adaptive) // set by finish when none is
	if cfg.checkpointer != nil {
		// Only checkpoints record the settings: without a checkpointer a
		// loop (often one run per request) need not describe them.
		if err := e.describeSettings(); err != nil && e.err == nil {
			e.err = err
		} else if err != nil {
			e.err = errors.Join(e.err, err)
		}
	}
	return e
}

// describeSettings records the settings and their fingerprint. Describing
// them calls host code (a policy's Settings or String method): a panic
// there is a *ConfigError wrapping the *PanicError, as Run and Resume
// report invalid options.
func (e *engine[S]) describeSettings() (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &ConfigError{Option: "New", Reason: "describing the settings panicked",
				Err: &PanicError{Where: "settings", Value: v, Stack: stack()}}
		}
	}()
	e.settings = settingsOf(&e.cfg)
	e.fingerprint = fingerprintOf(e.settings)
	return nil
}

type engine[S any] struct {
	w           Worker[S]
	cfg         config
	err         error
	settings    []setting
	fingerprint string
	// The optional interfaces of w, found once.
	stageEnder      StageEnder[S]
	concluder       Concluder[S]
	funcWorker      *FuncWorker[S] // w, when it is one: its steps fill outcomes in place
	defaultAnalyzer bool           // the analyzer is gap.Default()
	adaptive        *Adaptive      // the strategy, when it is an *Adaptive
}

// durationsWindow bounds the durations of recent iterations a run keeps.
const durationsWindow = 32

// unlimited is what Budget.Remaining reports for a budget without limits.
var unlimited = budget.Usage{Iterations: -1, Tokens: -1, Cost: -1, Wall: -1, Calls: -1}

// run is one call of Run or Resume.
type run[S any] struct {
	e     *engine[S]
	cfg   *config
	log   *zap.Logger
	quiet bool // log is the default, which logs nothing
	// assessesNothing: the worker is a FuncWorker without AssessFunc,
	// whose every assessment is empty.
	assessesNothing bool

	state  S
	hist   converge.History
	budget *budget.Budget
	sit    Situation
	// plans are the plans of the iteration under way and the one before,
	// alternating as taskBufs do: plans[n&1] (n%2) is iteration n's.
	plans      [2]Plan
	hasLast    bool
	decision   converge.Decision
	data       engineData
	durations  window[time.Duration]
	generation uint64
	outs       []Outcome[S]
	lone       [1]Outcome[S] // outs of one task
	// taskBufs alternate between iterations so that the previous plan's
	// tasks stay intact while the next plan reuses the other buffer.
	taskBufs  [2][]Task
	lastErr   error
	observing bool
	limited   bool // the budget has limits (else Remaining is constant)
	// limits are the run's budget limits, and settings and fingerprint
	// its settings: the engine's, but for a session whose budget was
	// raised in place (see ExtendBudget).
	limits      budget.Limits
	settings    []setting
	fingerprint string
	spent       budget.Usage               // what an unlimited budget has spent: no lock needed
	current     atomic.Int64               // the iteration under way, for warnings from host code
	hostPanic   atomic.Pointer[PanicError] // the first panic of an observer
	token       uint64                     // the fencing token of the session lock (0: none)
	// savedGen is the generation of the session whose state is r.state
	// after savedIter iterations: the latest saved (0: none yet).
	savedGen  uint64
	savedIter int
	genSynced bool              // syncGeneration ran
	origin    checkpoint.Origin // the generation the session was forked from
	// saveFailed is set when a save failed for good: nothing more is saved.
	saveFailed bool
	journal    journal   // finished tasks of the iteration in flight
	saver      *saver    // from the first save on
	clock      iterClock // times the iterations
	inflight   inflight  // the iteration whose tasks are running
	runSlab    runSlab   // the task runs of the records
	// handoff is set when the loop runs on a goroutine of its own, under a
	// context that can end (see drive).
	handoff *handoff
	loopCtx loopContext
	// lapAtTaskEnd is set when an iteration of one task, run on the loop's
	// goroutine, ends with its task: after it comes no host code (a Func's
	// integration is the engine's: it takes the step's state; no stage to
	// end, no observer, no journal to write), only the engine's
	// bookkeeping, which counts in the next iteration. The task's end is
	// then read once, for both (the iterations' durations still add up to
	// the run's time).
	lapAtTaskEnd bool
	// asyncJournal is set when the journal's saves of tasks run in
	// parallel are the writer's (see journal): under Journal, with a
	// store that takes the state as bytes (the writer's saves take the
	// iteration's state encoded once; a StreamSaver, such as
	// checkpoint.Dir, is given the state as a stream by each task's own
	// save, as iteratetest.Crash's store is), without WithCrashLoopBound
	// (whose saves record the tasks in flight).
	asyncJournal bool
}

func (e *engine[S]) newRun() (*run[S], error) {
	r := &run[S]{e: e, cfg: &e.cfg, log: e.cfg.logger, quiet: e.cfg.logger == nopLogger, observing: len(e.cfg.observers) > 0,
		durations: newWindow[time.Duration](durationsWindow),
		limited:   e.cfg.limits != (budget.Limits{}), limits: e.cfg.limits, settings: e.settings, fingerprint: e.fingerprint}
	if r.limited { // without limits, what is spent is a plain sum (r.spent)
		b, err := budget.New(e.cfg.limits)
		if err != nil {
			return nil, &ConfigError{Option: "WithBudget", Reason: "invalid limits", Err: err}
		}
		r.budget = b
	}
	r.outs = r.lone[:] // an iteration of one task, the usual, needs no allocation
	r.assessesNothing = e.funcWorker != nil && e.funcWorker.AssessFunc == nil
	r.lapAtTaskEnd = e.funcWorker != nil && e.stageEnder == nil && !r.observing && e.cfg.persist&Journal == 0
	_, streams := e.cfg.checkpointer.(StreamSaver)
	r.asyncJournal = e.cfg.persist&Journal != 0 && !streams && e.cfg.crashBound == 0
	r.configureHistory()
	r.configureRecycling()
	return r, nil
}

// Run starts a new session from initial. See [Engine].
//
// Run returns a nil error for every stop the loop decides on its own
// (converged, early exit, iteration limit, stuck, plateau, budget exhausted);
// Result.Status tells them apart. It returns an *EscalationError when a human
// is needed, an *InterruptedError when ctx ends the loop (the state is saved
// as interrupted), a *StopError when the loop aborts after failures or
// fails, and a *ConfigError for invalid options.
func (e *engine[S]) Run(ctx context.Context, initial S) (*Result[S], error) {
	if e.err != nil {
		return nil, e.err
	}
	if ctx.Err() != nil {
		return notStarted(initial, ctx)
	}
	r, err := e.newRun()
	if err != nil {
		return nil, err
	}
	release, err := r.lock(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return notStarted(initial, ctx)
		}
		return nil, err
	}
	defer release()
	r.state = initial
	r.data.StartedAt = time.Now()
	r.data.StateVersion = e.cfg.stateVersion
	if res, err := r.followLatest(ctx, initial); res != nil || err != nil {
		return res, err
	}
	if r.observing { // an event boxed for no observer would cost an allocation
		r.emit(LoopStarted{it: r.at(0), Session: e.cfg.session, Context: ctx, MaxIterations: e.cfg.maxIterations, Time: r.data.StartedAt,
			StartedAt: r.data.StartedAt, FailureThreshold: e.cfg.failureThreshold})
	}
	if ce := r.check(zap.InfoLevel, "loop started"); ce != nil {
		ce.Write(zap.String("session", e.cfg.session), zap.Int("max_iterations", e.cfg.maxIterations))
	}
	return r.drive(ctx)
}

// Resume continues the session from its latest checkpoint: the iteration
// count, convergence history, budget usage and the state are restored, and
// the next iteration is the one after the last completed. A session that
// ended for good returns its saved result without iterating; an escalated
// session needs [WithAnswer] (without it, the escalation is returned again).
//
// Resume needs a checkpointer. A session without a checkpoint gives an error
// matching checkpoint.ErrNotFound; a damaged one, checkpoint.ErrCorrupt; a
// checkpoint written under other settings, a *SettingsChangedError unless
// [AllowSettingsChange] was given. Under a context that has already ended
// it runs nothing and returns an *InterruptedError (BeforeStart) with the
// session's saved state and counters in the Result.
//
// With [ForkFrom], Resume starts the engine's session afresh as a fork of a
// kept generation of another session instead (see ForkFrom).
func (e *engine[S]) Resume(ctx context.Context, opts ...ResumeOption) (*Result[S], error) {
	if e.err != nil {
		return nil, e.err
	}
	if e.cfg.checkpointer == nil {
		return nil, &ConfigError{Option: "WithCheckpointer", Reason: "Resume needs a checkpointer"}
	}
	if ctx.Err() != nil {
		return e.resumeNotStarted(ctx)
	}
	var rc resumeConfig
	for _, o := range opts {
		if o != nil {
			o.applyResume(&rc)
		}
	}
	if err := e.checkFork(&rc); err != nil {
		return nil, err
	}
	r, err := e.newRun()
	if err != nil {
		return nil, err
	}
	if rc.fork != nil {
		return r.fork(ctx, &rc)
	}
	release, err := r.lock(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return e.resumeNotStarted(ctx)
		}
		return nil, err
	}
	defer release()
	c, err := storeLoad(ctx, e.cfg.checkpointer, e.cfg.session)
	if err != nil {
		if ctx.Err() != nil {
			return e.resumeNotStarted(ctx)
		}
		return nil, fmt.Errorf("iterate: resume session %q: %w", e.cfg.session, err)
	}
	r.recovered(c)
	if err := r.restore(ctx, c); err != nil {
		return nil, err
	}
	extended, err := r.checkSettings(r.data.Settings, c.Fingerprint, &rc)
	if err != nil {
		return nil, err
	}
	status := Status(c.Status)
	if res, err := r.steer(ctx, status, c.Reason, &rc); res != nil || err != nil { // steer.go
		return res, err
	}
	if status.Final() && !(extended && status == BudgetExhausted) {
		return r.result(status, c.Reason, r.finalErr(status, c.Reason)), r.finalErr(status, c.Reason)
	}
	if status == Escalated {
		if !rc.hasAnswer {
			res := r.result(Escalated, c.Reason, nil)
			res.Escalation = r.data.Escalation
			err := &EscalationError{Escalation: r.data.Escalation}
			res.Err = err
			return res, err
		}
		r.data.Answer = rc.answer
		r.data.AnsweredAt = r.hist.Iteration
		r.data.Escalation = nil
	}
	r.applyLimit()
	if r.observing {
		r.emit(LoopStarted{it: r.at(r.hist.Iteration), Session: e.cfg.session, Context: ctx, MaxIterations: r.hist.MaxIterations,
			Resumed: true, Completed: r.hist.Iteration, Elapsed: r.data.Elapsed, Time: time.Now(), StartedAt: r.data.StartedAt,
			ConsecutiveFailures: r.hist.ConsecutiveFailures, FailureThreshold: e.cfg.failureThreshold,
			Durations: append([]time.Duration(nil), r.durations.values()...), LastIterationAt: r.data.LastIterationAt})
	}
	if ce := r.check(zap.InfoLevel, "loop resumed"); ce != nil {
		ce.Write(zap.String("session", e.cfg.session), zap.Int("iteration", r.hist.Iteration), zap.String("from_status", c.Status))
	}
	return r.drive(ctx)
}

// notStarted is the result of a run whose context ended before it started:
// interrupted, nothing saved.
func notStarted[S any](s S, ctx context.Context) (*Result[S], error) {
	err := &InterruptedError{Cause: context.Cause(ctx), BeforeStart: true}
	return &Result[S]{State: s, Status: Interrupted, Reason: "interrupted before starting: " + err.Cause.Error(), Err: err}, err
}

// resumeNotStarted is the result of a Resume whose context ended before
// it started: interrupted, nothing run and nothing saved, but with the
// session's saved state and counters (iterations, usage, history, totals)
// when its latest checkpoint can be read, as a resumed loop interrupted at
// once would report them. The checkpoint is read without the session lock
// and under a context that has not ended, bounded by the grace period of
// [WithGrace]; when it cannot be read, the state is S's zero value.
func (e *engine[S]) resumeNotStarted(ctx context.Context) (*Result[S], error) {
	var zero S
	r, err := e.newRun()
	if err != nil {
		return notStarted(zero, ctx)
	}
	loadCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.grace)
	defer cancel()
	c, err := storeLoad(loadCtx, e.cfg.checkpointer, e.cfg.session)
	if err != nil || r.restore(loadCtx, c) != nil {
		return notStarted(zero, ctx)
	}
	ie := &InterruptedError{Iteration: r.hist.Iteration, Cause: context.Cause(ctx), BeforeStart: true}
	return r.result(Interrupted, "interrupted before starting: "+ie.Cause.Error(), ie), ie
}

// applyLimit sets the effective iteration limit: an answer opens a fresh
// allowance of iterations.
func (r *run[S]) applyLimit() {
	if r.cfg.maxIterations == 0 {
		r.hist.MaxIterations = 0
		return
	}
	r.hist.MaxIterations = r.data.AnsweredAt + r.cfg.maxIterations
}

func (r *run[S]) finalErr(status Status, reason string) error {
	switch status {
	case Aborted, Failed:
		return &StopError{Status: status, Reason: reason}
	}
	return nil
}

// loop is the refinement loop proper. It runs in the caller's goroutine,
// or in one of its own under a context that can end (see drive); ctx is
// the loop's context, which carries Warn.
func (r *run[S]) loop(ctx context.Context) (*Result[S], error) {
	r.clock.start = time.Now()
	a := new(gap.Assessment)    // each iteration's, assessed in place
	canEnd := ctx.Done() != nil // nil: ctx can never be cancelled (context.Context's Done)
	for {
		if canEnd && ctx.Err() != nil {
			return r.interrupt(ctx)
		}
		if err := r.hostPanicked(); err != nil {
			return r.fail(ctx, "an observer panicked", err)
		}
		n := r.hist.Iteration + 1
		r.current.Store(int64(n))

		if err := r.assess(ctx, a); err != nil {
			return r.fail(ctx, "assessment failed", err)
		}
		gaps, err := r.analyze(ctx, a)
		if err != nil {
			return r.fail(ctx, "gap analysis failed", err)
		}
		observeHistory(&r.hist, a, gaps) // History.Observe, without copying *a on the way
		if r.cfg.keepBest != nil {
			r.observeBest(a)
		}
		if r.observing {
			r.emit(GapsFound{it: r.at(n), Assessment: r.hist.Current, Gaps: gaps})
		}

		d, err := r.decide()
		if err != nil {
			return r.fail(ctx, "convergence decision failed", err)
		}
		r.decision = d
		r.recordDecision(d)
		if r.observing {
			r.emit(Decided{it: r.at(n), Decision: d})
		}
		if d.Verdict == converge.Escalate {
			return r.escalate(ctx, d, nil)
		}
		if d.Stop() {
			return r.stop(ctx, statusOf(d.Verdict), d.Reason)
		}

		var reservation budget.Reservation // zero: settles nothing (no limits)
		if r.limited {
			if ex := r.budget.Exhausted(); ex != 0 {
				return r.atLimit(ctx, ex, "budget exhausted: "+ex.String()+" limit reached") // park.go
			}
			var warnings []budget.Warning
			reservation, warnings, err = r.budget.Reserve(r.estimate())
			for _, w := range warnings {
				r.warn(n, "budget: "+w.String())
			}
			if err != nil {
				return r.atLimit(ctx, reachedOf(err), "budget exhausted: "+err.Error())
			}
		}

		plan := &r.plans[n&1] // not a local: the tasks may outlive this goroutine (see drive)
		err = r.plan(ctx, n, d, plan)
		if err != nil {
			reservation.Release()
			return r.fail(ctx, "planning failed", err)
		}
		if plan.Warning != "" {
			r.warn(n, plan.Warning)
		}
		switch plan.Action {
		case Escalate:
			reservation.Release()
			return r.escalate(ctx, d, plan)
		case Stop:
			reservation.Release()
			reason := plan.Reason
			if reason == "" {
				reason = "stuck: the strategy sees no way forward"
			}
			return r.stop(ctx, Stuck, reason)
		}

		if err := r.iterate(ctx, n, plan, reservation); err != nil {
			return r.fail(ctx, "iteration failed", err)
		}
		if err := r.hostPanicked(); err != nil {
			return r.fail(ctx, "an observer panicked", err)
		}
		if r.cfg.persist&Journal != 0 {
			if err := r.journal.failure(); err != nil {
				return r.storageFailed(ctx, err)
			}
		}
		if canEnd && ctx.Err() != nil {
			return r.interrupt(ctx)
		}
		if r.cfg.checkpointer != nil {
			if err := r.save(ctx, Running, ""); r.fatalSave(err) {
				return r.storageFailed(ctx, err)
			}
		}
	}
}

// iterate runs the plan's tasks and integrates their outcomes. It returns an
// error only for what ends the run (a permanent error or a panic in
// Integrate); failed tasks fail the iteration, not the run.
func (r *run[S]) iterate(ctx context.Context, n int, plan *Plan, reservation budget.Reservation) error {
	fl := &r.inflight
	*fl = inflight{n: n, plan: plan, reservation: reservation}
	if r.observing {
		r.emit(IterationStarted{it: r.at(n), Time: r.clock.at(r.clock.last)})
	}
	if ce := r.check(zap.DebugLevel, "iteration started"); ce != nil {
		ce.Write(zap.Int("iteration", n), zap.String("phase", "execute"), zap.String("action", string(plan.Action)), zap.Int("tasks", len(plan.Tasks)))
	}

	execCtx := ctx
	if left, ok := r.wallLeft(); ok {
		// A hard wall-time limit bounds the tasks in flight too: they are
		// cancelled when it runs out, and the next round stops the loop.
		var cancel context.CancelFunc
		execCtx, cancel = context.WithTimeoutCause(ctx, left, errWallTime)
		defer cancel()
	}
	return r.integrateIteration(ctx, fl, r.execute(execCtx, plan.Tasks))
}

// inflight is the iteration whose tasks are running: what integrating it
// needs besides their outcomes.
type inflight struct {
	n           int
	plan        *Plan
	reservation budget.Reservation
}

// integrateIteration ends the iteration it with the outcomes of its tasks:
// it integrates them, charges the budget and records the iteration.
func (r *run[S]) integrateIteration(ctx context.Context, fl *inflight, outs []Outcome[S]) error {
	n, plan, reservation := fl.n, fl.plan, fl.reservation
	var usage budget.Usage
	failedTasks, actions := 0, 0
	var taskErr error
	for i := range outs {
		if i == 0 {
			usage = outs[0].Usage // what Add would give, without the additions
		} else {
			addUsage(&usage, &outs[i].Usage)
		}
		actions += len(outs[i].Actions)
		for _, w := range outs[i].Warnings {
			r.warn(n, w)
		}
		if outs[i].Err != nil {
			failedTasks++
			taskErr = outs[i].Err
			if IsPermanent(outs[i].Err) {
				r.flushJournal()
				r.settle(reservation, &usage)
				return outs[i].Err
			}
		}
	}
	integCtx := ctx
	if ctx.Err() != nil {
		if failedTasks > 0 {
			// Cancelled mid-iteration: the iteration in flight is lost
			// (Resume runs it again, taking the journaled tasks' outcomes);
			// what it spent is not, except what the journal will charge
			// again when it is replayed.
			r.flushJournal()
			unjournaled := usage.Sub(r.journal.usage(n))
			r.settle(reservation, &unjournaled)
			r.lastErr = taskErr
			return nil
		}
		// Every task finished before the cancellation was noticed: keep
		// their work.
		integCtx = context.WithoutCancel(ctx)
	}

	// The host's Integrate may run while the journal's writer saves the
	// tasks that ended first (see journal): it reads neither the state,
	// encoded before, nor what follows, which waits for it.
	next, integErr := r.integrate(integCtx, outs)
	if integErr != nil && (IsPermanent(integErr) || errors.Is(integErr, ErrPanic)) {
		r.flushJournal()
		r.settle(reservation, &usage)
		return integErr
	}
	if r.asyncJournal {
		r.journal.close() // the loop saves the iteration next
	}

	if integErr == nil {
		r.state = next
		for i := range outs {
			if outs[i].Done && outs[i].Err == nil {
				r.data.Complete = true
			}
		}
	}
	failed := integErr != nil || (len(outs) > 0 && failedTasks == len(outs))
	iterErr := integErr
	if iterErr == nil && failed {
		iterErr = taskErr
	}
	if iterErr != nil {
		r.lastErr = iterErr
	}

	dur := r.clock.lap()
	usage.Iterations++
	usage.Wall += dur
	r.settle(reservation, &usage)
	addUsage(&r.data.Completed, &usage)
	// History.Complete, with the attempt set in its slot rather than
	// copied there.
	attempt := completeHistory(&r.hist, failed)
	*attempt = converge.Attempt{Failed: failed, Action: string(plan.Action), Duration: dur,
		Tasks: len(outs), FailedTasks: failedTasks, Tokens: usage.Tokens, Cost: usage.Cost, Calls: usage.Calls,
		TaskRuns: taskRuns(&r.runSlab, outs, n, r.oldestRecord())}
	if actions > 0 {
		attempt.Actions = actionsOf(outs)
	}
	if r.cfg.persist&Journal != 0 {
		r.journal.forget()
	}
	r.data.Elapsed += dur
	r.pushDuration(dur)

	// Failed tasks leave their gaps unresolved for the next plan.
	r.data.Unresolved = r.data.Unresolved[:0]
	for i := range outs {
		if outs[i].Err != nil && len(outs[i].Task.Gaps) > 0 {
			r.data.Unresolved = append(r.data.Unresolved, outs[i].Task.Gaps[0])
		}
	}
	r.sit.Unresolved = r.data.Unresolved
	r.data.Answer = ""
	r.hasLast = true
	r.ended(&iterationEnd{n: n, action: plan.Action, tasks: len(outs), failedTasks: failedTasks,
		failed: failed, err: iterErr, dur: dur, usage: usage})
	return nil
}

// The methods of the engine's dependencies that it calls on every
// iteration, in forms that copy no large value (see package byptr).
var (
	// observeHistory is converge.History.Observe with a pointer to the
	// assessment.
	observeHistory = byptr.Observe.(func(*converge.History, *gap.Assessment, []gap.Gap))
	// completeHistory is converge.History.Complete returning the pending
	// attempt's slot, for the engine to fill in place.
	completeHistory = byptr.Complete.(func(*converge.History, bool) *converge.Attempt)
	// analyzeDefault is gap.Default's Analyze with a pointer to the
	// assessment.
	analyzeDefault = byptr.Analyze.(func(context.Context, *gap.Assessment, gap.Thresholds) ([]gap.Gap, error))
)

// oldestRecord returns the iteration of the oldest record in the
// history's window (-1 when there is none).
func (r *run[S]) oldestRecord() int {
	if len(r.hist.Recent) == 0 {
		return -1
	}
	return r.hist.Recent[0].Iteration
}

// configureRecycling lets the run use its task runs' slabs again (see
// runSlab) when no host code can keep a record: the engine's own policy
// and strategy, which keep none, no observer, no checkpointer (a saved
// checkpoint's history), no keep-best. The Result's records, the last
// ones, are never recycled: the run has ended.
func (r *run[S]) configureRecycling() {
	c := r.cfg
	r.runSlab.recycle = c.policy == converge.Default() && c.strategy == defaultStrategy && !r.observing &&
		c.checkpointer == nil && c.keepBest == nil
}

// iterClock times a run's iterations with one reading of the monotonic
// clock each: an iteration lasts from the end of the one before (or the
// start of the run) to the integration of its tasks, its assessment,
// analysis, decision, planning and the previous iteration's checkpoint
// included, so that the iterations' durations add up to the run's time.
type iterClock struct {
	start  time.Time     // when the run started, with a monotonic reading
	last   time.Duration // when the latest iteration ended, after start
	lapped bool          // an iteration ended in this run
	// taskEnd is when the iteration's only task ended, after start, when
	// taskEnded (see run.lapAtTaskEnd).
	taskEnd   time.Duration
	taskEnded bool
}

// at returns the instant d after the start.
func (c *iterClock) at(d time.Duration) time.Time { return c.start.Add(d) }

// lap ends an iteration and returns its duration: now, or at the end of
// its only task when that was taken as its end (see run.lapAtTaskEnd).
func (c *iterClock) lap() time.Duration {
	var now time.Duration
	if c.taskEnded {
		now, c.taskEnded = c.taskEnd, false
	} else {
		now = time.Since(c.start)
	}
	dur := now - c.last
	c.last, c.lapped = now, true
	return dur
}

// lastEnd returns when the latest iteration of the run ended.
func (c *iterClock) lastEnd() time.Time { return c.at(c.last) }

// iterationEnd is how an iteration went, as the engine counts, reports and
// logs it.
type iterationEnd struct {
	n, tasks, failedTasks int
	action                Action
	failed                bool
	err                   error
	dur                   time.Duration
	usage                 budget.Usage
}

// ended counts a completed iteration in the totals, emits IterationEnded
// and logs it.
func (r *run[S]) ended(e *iterationEnd) {
	r.data.Totals.Iterations++
	r.data.Totals.Tasks += e.tasks
	r.data.Totals.FailedTasks += e.failedTasks
	r.data.Totals.Duration += e.dur

	if r.observing {
		r.emit(IterationEnded{it: r.at(e.n), Time: r.clock.lastEnd(), Duration: e.dur, Failed: e.failed, Err: e.err,
			Tasks: e.tasks, FailedTasks: e.failedTasks, ConsecutiveFailures: r.hist.ConsecutiveFailures,
			Usage: e.usage})
	}
	if e.failed {
		if ce := r.check(zap.WarnLevel, "iteration failed"); ce != nil {
			ce.Write(zap.Int("iteration", e.n), zap.String("phase", "integrate"), zap.Duration("duration", e.dur),
				zap.String("outcome", "failed"), zap.Int("consecutive_failures", r.hist.ConsecutiveFailures), zap.Error(e.err))
		}
	} else if ce := r.check(zap.InfoLevel, "iteration completed"); ce != nil {
		ce.Write(zap.Int("iteration", e.n), zap.String("phase", "integrate"), zap.Duration("duration", e.dur),
			zap.String("outcome", "succeeded"), zap.String("action", string(e.action)), zap.Int("tasks", e.tasks), zap.Int("failed_tasks", e.failedTasks))
	}
}

func (r *run[S]) pushDuration(d time.Duration) {
	r.durations.push(d)
}

// assess sets *a to the assessment of the state.
func (r *run[S]) assess(ctx context.Context, a *gap.Assessment) (err error) {
	if r.assessesNothing {
		*a = gap.Assessment{Complete: r.data.Complete} // what its Assess returns, without the call
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Where: "assess", Value: v, Stack: stack()}
		}
	}() // not recoverInto: a call less, on every iteration
	*a, err = r.e.w.Assess(ctx, r.state)
	if r.data.Complete {
		a.Complete = true
	}
	return err
}

func (r *run[S]) analyze(ctx context.Context, a *gap.Assessment) (gaps []gap.Gap, err error) {
	if r.assessesNothing && r.e.defaultAnalyzer {
		// The default analyzer finds no gap in an empty assessment
		// (TestDefaultAnalyzerFindsNothingUnmeasured): skip the call, not
		// its check of the context.
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Where: "analyze", Value: v, Stack: stack()}
		}
	}() // not recoverInto: a call less, on every iteration
	if r.e.defaultAnalyzer {
		return analyzeDefault(ctx, a, r.cfg.thresholds) // without copying *a
	}
	return r.cfg.analyzer.Analyze(ctx, *a, r.cfg.thresholds)
}

// decide asks the convergence policy, and enforces the engine's own limits
// whatever the policy, in the order of [converge.Default]: a success (work
// complete, converged, early exit) stands; then the failure threshold of
// [WithFailureThreshold] aborts a loop the policy would continue, or stop
// short of success (at the iteration limit, stuck, on a plateau); then the
// iteration limit of [WithMaxIterations] stops a loop the policy would
// continue. An escalation stands: it stops the loop too.
func (r *run[S]) decide() (d converge.Decision, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Where: "decide", Value: v, Stack: stack()}
		}
	}() // not recoverInto: a call less, on every iteration
	h := &r.hist
	d = r.cfg.policy.Decide(h)
	switch {
	case d.Verdict.Success() || d.Verdict == converge.Aborted || d.Verdict == converge.Escalate:
	case h.ConsecutiveFailures >= r.cfg.failureThreshold:
		d = overrule(d, converge.Failures{}, h)
	case d.Verdict == converge.Continue && h.MaxIterations > 0 && h.Iteration >= h.MaxIterations:
		d = overrule(d, converge.IterationLimit{}, h)
	}
	return d, nil
}

// overrule returns the decision of rule, which stops, in place of the
// policy's decision d: as [converge.Any] would, the stop carries d's
// criteria ahead of its own and names the unmet ones in its reason.
func overrule(d converge.Decision, rule converge.Policy, h *converge.History) converge.Decision {
	if d.Stop() {
		d.Verdict, d.Reason = converge.Continue, "" // what the rule stops in place of
	}
	return converge.Any(converge.PolicyFunc(func(*converge.History) converge.Decision { return d }), rule).Decide(h)
}

// recordDecision keeps d's verdict and unmet criteria in the record of the
// state it was taken on, the history's latest.
func (r *run[S]) recordDecision(d converge.Decision) {
	rec := r.hist.Last()
	if rec == nil {
		return
	}
	rec.Verdict, rec.Unmet = d.Verdict, nil
	for _, c := range d.Criteria {
		if !c.Met {
			rec.Unmet = append(rec.Unmet, c)
		}
	}
}

func (r *run[S]) integrate(ctx context.Context, outs []Outcome[S]) (s S, err error) {
	if fw := r.e.funcWorker; fw != nil {
		// The engine's own code, which only reads the outcomes: nothing
		// to recover.
		return fw.Integrate(ctx, r.state, outs)
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Where: "integrate", Value: v, Stack: stack()}
		}
	}() // not recoverInto: a call less, on every iteration
	return r.e.w.Integrate(ctx, r.state, outs)
}

// plan asks the strategy for the plan of iteration n, into p (a slot of
// the run, so that the plan is not copied on its way).
func (r *run[S]) plan(ctx context.Context, n int, d converge.Decision, p *Plan) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Where: "plan", Value: v, Stack: stack()}
		}
	}() // not recoverInto: a call less, on every iteration
	r.fillSituation(n, d)
	if r.e.adaptive != nil {
		r.e.adaptive.plan(&r.sit, p) // Plan, without copying the plan
	} else if *p, err = r.cfg.strategy.Plan(ctx, &r.sit); err != nil {
		return err
	}
	if cap(p.Tasks) > 0 {
		r.taskBufs[n&1] = p.Tasks[:0]
	}
	if p.Action == "" {
		p.Action = Refine
	}
	if len(p.Tasks) == 0 && p.Action != Escalate && p.Action != Stop {
		p.Tasks = append(p.Tasks, Task{Action: p.Action, Role: broadRole.Name, Feedback: p.Feedback, Guidance: p.Guidance})
	}
	if len(p.Tasks) > 1 && r.e.funcWorker != nil {
		// A Func is one call per iteration, whatever the plan.
		p.Tasks = oneTask(p.Tasks)
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		t.Iteration, t.Index, t.MaxIterations = n, i, r.hist.MaxIterations
		if t.Action == "" {
			t.Action = p.Action
		}
		if t.Timeout == 0 {
			t.Timeout = r.cfg.taskTimeout
		}
		if r.data.Answer != "" && t.Answer == "" {
			t.Answer = r.data.Answer
		}
	}
	if r.observing {
		ev := *p
		ev.Tasks = slices.Clone(p.Tasks) // the engine reuses the plan's task buffer
		r.emit(Planned{it: r.at(n), Plan: ev})
	}
	if ce := r.check(zap.DebugLevel, "planned"); ce != nil {
		ce.Write(zap.Int("iteration", n), zap.String("phase", "plan"), zap.String("action", string(p.Action)),
			zap.Int("tasks", len(p.Tasks)), zap.Int("deferred", len(p.Deferred)), zap.String("reason", p.Reason))
	}
	return nil
}

// oneTask merges the tasks of a plan into its first, for a [FuncWorker]:
// the task addresses every gap of the plan, once each, in priority order (P1
// first; within a priority, in task order), and runs with no stage and the
// longest timeout of the tasks (0, the loop's default, when one has 0).
func oneTask(tasks []Task) []Task {
	n := 0
	for i := range tasks {
		n += len(tasks[i].Gaps)
	}
	gaps := make([]gap.Gap, 0, n) // the tasks' gaps may be the analyzer's: not theirs to append to
	seen := make(map[string]bool, n)
	for i := range tasks {
		for _, g := range tasks[i].Gaps {
			if k := g.Key(); !seen[k] {
				seen[k] = true
				gaps = append(gaps, g)
			}
		}
	}
	slices.SortStableFunc(gaps, func(a, b gap.Gap) int { return priorityRank(a.Priority) - priorityRank(b.Priority) })
	t := tasks[0]
	for i := range tasks[1:] {
		if d := tasks[i+1].Timeout; t.Timeout > 0 && (d == 0 || d > t.Timeout) {
			t.Timeout = d
		}
	}
	t.Gaps, t.Stage = gaps, 0
	if len(gaps) == 0 {
		t.Gaps = nil
	}
	clear(tasks[1:])
	tasks[0] = t
	return tasks[:1]
}

// priorityRank orders priorities P1, P2, P3, then unprioritised gaps.
func priorityRank(p gap.Priority) int {
	if p >= gap.P1 && p <= gap.P3 {
		return int(p - gap.P1)
	}
	return int(gap.P3-gap.P1) + 1
}

func (r *run[S]) fillSituation(n int, d converge.Decision) {
	s := &r.sit
	s.Iteration = n
	s.History = &r.hist
	s.Decision = d
	if r.limited {
		s.Budget = r.budget.Remaining()
	} else {
		s.Budget = unlimited
	}
	s.Last = nil
	if r.hasLast {
		s.Last = &r.plans[(n-1)&1]
	}
	s.tasks = r.taskBufs[n&1][:0]
	s.Answer = r.data.Answer
	s.AnsweredAt = r.data.AnsweredAt
}

// errWallTime is the cause given to tasks cancelled by the wall-time limit.
var errWallTime = fmt.Errorf("iterate: wall-time budget ran out: %w", budget.ErrExceeded)

// wallLeft returns the wall time left under a hard wall-time limit.
func (r *run[S]) wallLeft() (time.Duration, bool) {
	if !r.limited {
		return 0, false
	}
	l := &r.limits
	if l.Wall <= 0 || l.WarnOnly&budget.Wall != 0 {
		return 0, false
	}
	return max(l.Wall-r.usage().Wall, 0), true
}

// estimate returns what the next iteration is expected to spend: the
// host's estimate, or the mean of the completed iterations' tokens, cost,
// calls and wall time (what an interrupted attempt spent is not theirs),
// so that an iteration the budget cannot afford is not started.
func (r *run[S]) estimate() budget.Usage {
	if r.cfg.estimated {
		return r.cfg.estimate
	}
	est := budget.Usage{Iterations: 1}
	spent := &r.data.Completed
	if n := int64(spent.Iterations); n > 0 {
		est.Tokens = (spent.Tokens + n - 1) / n
		est.Cost = spent.Cost / float64(n)
		est.Calls = (spent.Calls + n - 1) / n
		est.Wall = spent.Wall / time.Duration(n)
	}
	return est
}

// settle records what an iteration spent: against its reservation when the
// budget has limits, in a plain sum otherwise.
func (r *run[S]) settle(res budget.Reservation, u *budget.Usage) {
	if r.limited {
		res.Settle(*u)
		return
	}
	addUsage(&r.spent, u)
}

// addUsage adds u to *dst: *dst = dst.Add(*u), in place, without copying
// the two Usages in and the sum out (TestAddUsage keeps it so).
func addUsage(dst, u *budget.Usage) {
	dst.Iterations += u.Iterations
	dst.Tokens += u.Tokens
	dst.Cost += u.Cost
	dst.Wall += u.Wall
	dst.Calls += u.Calls
	dst.InputTokens += u.InputTokens
	dst.OutputTokens += u.OutputTokens
	dst.CacheReadTokens += u.CacheReadTokens
	dst.CacheWriteTokens += u.CacheWriteTokens
}

// usage returns what the loop has spent.
func (r *run[S]) usage() budget.Usage {
	if r.limited {
		return r.budget.Spent()
	}
	return r.spent
}

// recoverInto turns a panic of host code into a *PanicError.
func recoverInto(err *error, where string) {
	if v := recover(); v != nil {
		*err = &PanicError{Where: where, Value: v, Stack: stack()}
	}
}

// escalate stops the loop with a question for a human.
func (r *run[S]) escalate(ctx context.Context, d converge.Decision, plan *Plan) (*Result[S], error) {
	var esc *Escalation
	if plan != nil && plan.Escalation != nil {
		esc = plan.Escalation
	} else {
		// The policy escalated: let the strategy phrase the question.
		var p Plan
		err := r.plan(ctx, r.hist.Iteration+1, d, &p)
		if err == nil && p.Escalation != nil {
			esc = p.Escalation
		} else {
			esc = buildEscalation(&r.hist, d.Reason, 0)
		}
	}
	if esc.Iteration == 0 {
		esc.Iteration = r.hist.Iteration
	}
	r.data.Escalation = r.applyDeadline(esc)
	return r.stop(ctx, Escalated, esc.Reason)
}

// stop ends the loop with a status decided by the loop itself.
func (r *run[S]) stop(ctx context.Context, status Status, reason string) (*Result[S], error) {
	saveCtx := ctx
	if ctx.Err() != nil {
		saveCtx = context.WithoutCancel(ctx)
	}
	r.conclude(saveCtx, status, reason)
	var saveErr error
	if r.cfg.checkpointer != nil && !r.saveFailed {
		saveErr = r.save(saveCtx, status, reason)
		if saveErr == nil && r.cfg.persist&Cleanup != 0 && (status.Success() || status == MaxIterations) {
			if rm, ok := r.cfg.checkpointer.(Remover); ok {
				if err := storeRemove(saveCtx, rm, r.cfg.session); err != nil {
					r.warn(r.hist.Iteration, fmt.Sprintf("removing the checkpoints of session %q failed: %v", r.cfg.session, err))
				}
			}
		}
	}
	r.sendSuperseded() // when no save sent them
	var err error
	switch status {
	case Escalated:
		err = &EscalationError{Escalation: r.data.Escalation}
	case Interrupted:
		err = &InterruptedError{Iteration: r.hist.Iteration, Cause: context.Cause(ctx), Last: r.lastErr}
	case Aborted, Failed:
		err = &StopError{Status: status, Reason: reason, Err: r.lastErr}
	}
	if err == nil && r.fatalSave(saveErr) {
		status, reason = Failed, "checkpoint failed: "+saveErr.Error()
		err = &StopError{Status: Failed, Reason: reason, Err: saveErr}
	}
	res := r.result(status, reason, err)
	if status == Escalated {
		res.Escalation = r.data.Escalation
	}
	if r.observing {
		r.emit(LoopStopped{it: r.at(r.hist.Iteration), Status: status, Reason: reason, Elapsed: r.data.Elapsed, Time: time.Now(),
			ConsecutiveFailures: r.hist.ConsecutiveFailures,
			Saved:               r.cfg.checkpointer != nil && saveErr == nil && !r.saveFailed, SaveErr: saveErr})
	}
	level := zapcore.InfoLevel
	if err != nil {
		level = zapcore.WarnLevel
	}
	if ce := r.check(level, "loop stopped"); ce != nil {
		ce.Write(zap.String("session", r.cfg.session), zap.Int("iteration", r.hist.Iteration), zap.String("phase", "stop"),
			zap.String("outcome", string(status)), zap.String("reason", reason), zap.Duration("duration", r.data.Elapsed), zap.Error(err))
	}
	return res, err
}

// conclude lets a Concluder record how the loop ended.
func (r *run[S]) conclude(ctx context.Context, status Status, reason string) {
	c := r.e.concluder
	if c == nil {
		return
	}
	next, err := func() (s S, err error) {
		defer recoverInto(&err, "conclude")
		return c.Conclude(ctx, r.state, status, reason)
	}()
	if err != nil {
		r.warn(r.hist.Iteration, fmt.Sprintf("concluding: %v", err))
		return
	}
	r.state = next
}

func (r *run[S]) interrupt(ctx context.Context) (*Result[S], error) {
	return r.stop(ctx, Interrupted, "interrupted: "+context.Cause(ctx).Error())
}

// fail ends the run on an error. The context's end is an interruption, not a
// failure.
func (r *run[S]) fail(ctx context.Context, what string, err error) (*Result[S], error) {
	if ctx.Err() != nil {
		if r.lastErr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			r.lastErr = err
		}
		return r.interrupt(ctx)
	}
	r.lastErr = err
	return r.stop(ctx, Failed, what)
}

func (r *run[S]) result(status Status, reason string, err error) *Result[S] {
	res := &Result[S]{
		State:      r.state,
		Status:     status,
		Reason:     reason,
		Iterations: r.hist.Iteration,
		Decision:   r.decision,
		Usage:      r.usage(),
		History:    r.hist,
		Err:        err,
	}
	res.Totals = r.data.Totals
	res.Extensions = r.data.Extensions
	if r.cfg.keepBest != nil {
		res.Best = r.bestResult()
	}
	return res
}

// check is r.log.Check, without the call for the default logger, which
// logs nothing.
func (r *run[S]) check(level zapcore.Level, msg string) *zapcore.CheckedEntry {
	if r.quiet {
		return nil
	}
	return r.log.Check(level, msg)
}

// hostWarn is the Warn of host code under the loop's context; it may be
// called from task goroutines.
func (r *run[S]) hostWarn(msg string) { r.warn(int(r.current.Load()), msg) }

func (r *run[S]) warn(n int, msg string) {
	if ce := r.check(zap.WarnLevel, msg); ce != nil {
		ce.Write(zap.Int("iteration", n))
	}
	if r.observing {
		r.emit(Warned{it: r.at(n), Message: msg})
	}
}

// followLatest reads the session's newest checkpoint before a new session
// starts over it: the run's saves are numbered above it, and, under
// RefuseResumable, one that can still be resumed is refused. It returns a
// result or an error only when the run must not start (s is the state a
// run not started reports).
func (r *run[S]) followLatest(ctx context.Context, s S) (*Result[S], error) {
	latest, err := r.latest(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return notStarted(s, ctx)
		}
		return nil, err
	}
	if latest != nil {
		r.generation = newestGeneration(latest)
		if r.cfg.persist&RefuseResumable != 0 && !Status(latest.Status).Final() {
			return nil, &ResumableError{Checkpoint: latest}
		}
	}
	return nil, nil
}

// at returns the header of an event of iteration n of this run's loop.
func (r *run[S]) at(n int) it { return it{N: n, session: r.cfg.session} }

func (r *run[S]) emit(e Event) {
	for _, fn := range r.cfg.observers {
		r.observe(fn, e)
	}
}

// hostPanicked returns the first panic of an observer, if any (see observe).
func (r *run[S]) hostPanicked() error {
	if p := r.hostPanic.Load(); p != nil {
		return p
	}
	return nil
}

func stack() []byte { return debug.Stack() }

// taskRuns describes each task of outs, as the iteration's record keeps
// it (nil without tasks), in a slice carved from slab.
func taskRuns[S any](slab *runSlab, outs []Outcome[S], iter, oldest int) []converge.TaskRun {
	if len(outs) == 0 {
		return nil
	}
	runs := slab.carve(len(outs), iter, oldest)
	for i := range outs {
		o, t := &outs[i], &runs[i] // t is zero: set what is not
		t.Role = string(o.Task.Role)
		if len(o.Task.Gaps) > 0 {
			g := &o.Task.Gaps[0]
			t.Kind, t.Target = g.Kind, g.Target
		}
		t.Duration, t.Tokens = o.Duration, o.Usage.Tokens
		if o.Output != "" {
			t.Output = outputTail(o.Output)
		}
		if o.Err != nil {
			t.Err = o.Err.Error()
			if t.Err == "" {
				t.Err = "failed (an error without a message)"
			}
		}
	}
	return runs
}

// actionsOf returns the actions the tasks of outs reported, sorted and
// once each (nil when none did).
func actionsOf[S any](outs []Outcome[S]) []string {
	var all []string
	for i := range outs {
		all = append(all, outs[i].Actions...)
	}
	if len(all) == 0 {
		return nil
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// outputKept is how much of a task's output its record keeps: the tail.
const outputKept = 1024

// outputTail returns the last outputKept bytes of s at most, from the start
// of a UTF-8 character, after "…" when s was cut.
func outputTail(s string) string {
	if len(s) <= outputKept {
		return s
	}
	s = s[len(s)-outputKept+len("…"):]
	for i := 0; i < utf8.UTFMax && i < len(s); i++ {
		if utf8.RuneStart(s[i]) {
			return "…" + s[i:]
		}
	}
	return "…" + s
}
