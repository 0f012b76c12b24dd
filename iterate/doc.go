// Package iterate runs bounded, resumable, adaptive refinement loops.
//
// A host describes its work with a [Worker] and calls [New], then Run (or
// Resume) under a context:
//
//	eng := iterate.New(researcher{}, // a Worker[Notes]: S = Notes is inferred
//		iterate.WithMaxIterations(4),
//		iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.8}),
//		iterate.WithCheckpointer(checkpoint.NewDir(".refine"), iterate.Journal),
//		iterate.WithBudget(budget.Limits{Tokens: 200_000}),
//		iterate.WithSession("auth-research"),
//	)
//	res, err := eng.Run(ctx, Notes{})
//
// # One place for each setting
//
// The loop's levels are declared once, in [WithThresholds] (a
// [gap.Thresholds]): the engine hands the same values to the gap analyzer
// and, as History.Thresholds, to the convergence policy, so whatever keeps
// the loop from converging is a gap its strategy targets. The failure
// threshold ([WithFailureThreshold]) and the iteration limit
// ([WithMaxIterations]) reach the policy the same way, and the engine
// enforces both whatever the policy, in the order of [converge.Default]:
// a success stands, then the failure threshold, then the iteration limit.
// The persistence settings go with their store ([WithCheckpointer] and
// [Persist]). Every setting that changes a decision is part of the resume
// fingerprint, by value: a resume under a changed threshold, limit, window
// or strategy or policy parameter is refused with a *SettingsChangedError
// naming what changed, with exact values ("coverage threshold 0.3 → 0.9"),
// unless Resume is given [AllowSettingsChange].
//
// # One iteration
//
// Each round the engine
//
//  1. assesses the state (Worker.Assess → gap.Assessment),
//  2. finds its gaps under the loop's thresholds ([GapAnalyzer], default
//     [gap.Default]),
//  3. decides whether to stop ([ConvergencePolicy], default: completion,
//     passing checks, early exit, thresholds, consecutive failures, stuck,
//     iteration limit; see [converge]),
//  4. reserves the iteration's estimate from the budget ([budget]),
//  5. plans the iteration ([Strategy], default [Adaptive]): an [Action]
//     and at most three targeted [Task] values, highest priority first,
//  6. runs the tasks in parallel under a limit (Worker.Work), each with an
//     optional timeout,
//  7. folds their outcomes into the state in task order (Worker.Integrate),
//  8. settles the usage, records the iteration in the history, and saves a
//     checkpoint ([Checkpointer]).
//
// Iteration numbers are 1-indexed in events, logs and tasks; counts of
// completed iterations (Result.Iterations, checkpoints) start at 0.
//
// # Stops
//
// Every stop has a [Status] and a reason. Converged and EarlyExit are
// successes, also on the last allowed iteration: convergence is checked
// before the limit. MaxIterations is a partial convergence whose unmet
// criteria are listed by Result.Decision.Unmet(). Stuck, Plateau and BudgetExhausted are
// stops the loop decides on its own, and so is Expired (a question passed
// its deadline, see [WithQuestionDeadline]); Run returns a nil error for
// all of these. Escalated (an *EscalationError: a human must answer), Interrupted (an
// *InterruptedError wrapping the context's cause and the last error),
// Aborted and Failed (a *StopError) come with an error.
//
// # Failures and panics
//
// A task that fails, times out or panics marks its gap unresolved; the
// iteration goes on with the others and Integrate sees the failed outcome.
// An iteration whose tasks all failed, or whose integration failed, counts
// as a failure; consecutive failures abort the loop (default 3, reset by a
// success). An error marked with [Permanent] ends the run at once. Panics in
// host code are recovered and reported as a *PanicError, on whichever
// goroutine they happen: in Work as a failed task; in a checkpointer or a
// codec as the error of that call (a save that fails: a warning, unless
// [Strict]); in an observer, or any other callback, as the end of the run,
// status Failed. (A panic in an observer of LoopStopped, the last event, is
// recovered and ignored.) A task that ignores its cancelled context is
// abandoned after a grace period ([WithGrace]).
//
// A task cut short by the end of the loop's context (Ctrl+C, the wall-time
// limit) is interrupted, not failed, whatever error Work returns — an
// exec.CommandContext killed with its context returns "signal: killed":
// it is neither counted as a failure nor journaled, and runs again when
// the session resumes. A task that runs past its own timeout fails.
//
// # Checkpoints and resume
//
// With a checkpointer, a checkpoint is saved after every iteration and at
// every stop, best effort unless [Strict] (then a failed save is retried
// and, if it keeps failing, ends the run without losing the last good
// checkpoint). A checkpoint is an envelope a store can read (session,
// generation, fencing token, status, iteration, time, open question,
// settings fingerprint) plus the engine's resume record and the state
// (encoded by a [Codec], JSON by default) as opaque bytes; a [StreamCodec]
// (JSON is one) encodes the state straight into a [StreamSaver] store
// (checkpoint.Dir and checkpoint.Memory are), so that a large state is never
// held encoded in memory. Cancelling
// the context stops promptly and saves the state as interrupted; Resume
// continues after the last completed iteration, so that an interrupted and
// resumed loop ends exactly where an uninterrupted one would. With
// [Journal], every finished task is journaled at once (within a
// millisecond, with a store that takes the state as bytes: a group commit,
// see Journal), so that an interruption or a crash in the middle of an
// iteration loses only the tasks still running. A [Checkpointer] that is also a [Locker] refuses a
// second concurrent run of a session and fences the first: a run whose lock
// was taken over cannot save and stops. A session whose newest checkpoint
// cannot be read for a reason other than damage (a newer format, a
// permission) is never started over: Run returns the error.
//
// Sessions live for days: [ExtendBudget] raises the budget of a session in
// place, keeping every counter (a budget_exhausted session continues);
// with [WithParkAtLimit] a limit reached parks the loop with a question
// ("195000 of 200000 tokens spent at coverage 0.72; extend the budget?")
// that ExtendBudget answers. [WithStateVersion] migrates the state of
// sessions saved before its type changed, step by step, refusing a newer
// version with a *StateVersionError. [WithQuestionDeadline] gives a question to a human a
// deadline saved with it: Resume sends a [QuestionReminder] when it is
// due and, past the deadline, stops the session as [Expired] or continues
// with the host's default answer; [ExtendDeadline] moves it.
// [WithCrashLoopBound] fails a session, with a *CrashLoopError naming the
// task, once a task has been in flight at that many crashes of the process.
//
// # The best result, and going back
//
// Loops regress: a fourth draft can be worse than the third. With
// [WithKeepBest] the engine keeps the best state seen, by the assessment's
// score or a [Scorer], and returns it in [Result.Best] beside the last; it
// is saved with the session, so it survives interruptions and resumes, and
// the checkpoint names the generation that holds it, which a store can be
// told to keep (checkpoint.KeepBest). Each iteration's record in the
// history carries what it spent, how long it took, its failed tasks and its
// state's gaps by kind and priority, so a session's history can be read
// back from its kept generations. Resume with [ForkFrom] starts a new
// session from any kept generation of another, perhaps with an edited
// state ([WithState]), a hint ([WithAnswer]) or other settings, leaving the
// original untouched; the store must be a [GenerationLoader] (every
// generation can be kept with checkpoint.KeepAll).
//
// # Stages and hooks
//
// The tasks of an iteration may be ordered in stages ([Task.Stage]): the
// tasks of a stage run in parallel once the lower stages are done, as the
// waves of a plan. [Task.Data] carries host data from the strategy to the
// worker. A worker may also implement [StageEnder] (called between stages)
// and [Concluder] (called once when the loop stops, to record how it ended),
// and report warnings with [Warn] (at once) or Outcome.Warnings (at the
// task's end), and usage with Round.Charge or Outcome.Usage. A [Func] step
// ends the loop as converged by calling Round.Done.
//
// # Goroutines
//
// Under a context that cannot end (context.Background), the loop runs in
// the caller's goroutine. Under one that can, it runs in a goroutine of its
// own while the caller's waits, so that the lone task of an iteration runs
// right in the loop's goroutine, without a goroutine of its own, and can
// still be abandoned when it ignores the end of the context: Run then
// returns, interrupted, within the grace period ([WithGrace]). A panic or
// runtime.Goexit in the loop's goroutine is repeated in the caller's. Task
// goroutines end before Run returns (except a task abandoned after ignoring
// cancellation). The engine holds no global state.
//
// # Observing
//
// [WithObserver] receives typed events ([LoopStarted], [IterationEnded],
// [Planned], ...); [Progress] prints progress lines; [WithLogger] takes a
// zap logger (default zap.NewNop()). Package iteratetest has a scripted
// worker and an event recorder for tests.
package iterate
