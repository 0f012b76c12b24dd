// Package oteliterate traces and measures refinement loops with
// OpenTelemetry: an [Observer] turns the events of package iterate into
// spans and metrics.
//
//	obs := oteliterate.New() // the global providers; or WithTracerProvider, WithMeterProvider
//	eng := iterate.New(worker, iterate.WithSession("build"), iterate.WithObserver(obs.Observe))
//
// # Spans
//
// Each run (Run, or one Resume) is a span "refine.run"; each iteration a
// child "refine.iteration", from IterationStarted to IterationEnded, with
// children for its phases: "refine.assess" (the assessment and gap
// analysis that let it run), "refine.plan" (the convergence decision and
// the plan) and "refine.integrate" (from the last task's end to the
// iteration's); each task a child of its iteration, named as the GenAI
// conventions name an agent's invocation, "invoke_agent {role}", from
// TaskStarted to TaskEnded; each checkpoint save a child of the run,
// "refine.checkpoint.save", with its duration. The assessment that ends a
// loop (a stop decided before any task) is a "refine.assess" child of the
// run. All are of kind Internal, and carry the attribute refine.session.
//
//   - refine.run: refine.resumed, refine.max_iterations, refine.started_at
//     (the session's first start, RFC 3339), refine.completed_iterations
//     (iterations done before a resume); at the stop refine.status,
//     refine.reason, refine.iteration (the last completed),
//     refine.iterations (completed in this run), refine.elapsed (seconds of
//     all iterations, across resumes), refine.consecutive_failures,
//     refine.checkpoint.saved, the usage of this run's iterations, and
//     refine.coverage and refine.confidence of the last assessment. Its
//     status is Error for the stops failed and aborted, with the reason as
//     description; an interruption (the caller ended the context: Resume
//     continues it) is not an error, and is marked refine.interrupted. A
//     final checkpoint that could not be saved is recorded as an error
//     event. Recoveries from damaged checkpoints and warnings are span
//     events ("refine.recovered", "refine.warning"; a warning goes on the
//     iteration in progress, if any; those that Resume reports before the
//     run starts go on the run).
//   - refine.iteration: refine.iteration, refine.action, refine.decision
//     (the convergence verdict that let it run), refine.gaps (how many gaps
//     the assessment before it found), refine.coverage and refine.confidence
//     of that assessment ([gap.Assessment.CoverageRatio],
//     [gap.Assessment.AverageConfidence]); when it ends refine.tasks,
//     refine.tasks.failed, refine.failed and its usage. A failed iteration has
//     status Error and its error recorded.
//   - invoke_agent {role}: gen_ai.operation.name ("invoke_agent"),
//     gen_ai.agent.name (the task's role), refine.task.id ("2.1"),
//     refine.iteration, refine.task.role, refine.action, refine.gap.kind and
//     refine.gap.priority ("P1") of its main gap (none for a broad task),
//     and its usage. A failed task has its error recorded (span.RecordError)
//     and status Error.
//   - refine.checkpoint.save: refine.iteration, refine.checkpoint.generation,
//     refine.status (the status saved), refine.checkpoint.bytes (engine
//     record and state); a failed save has its error recorded and status
//     Error. A task's journal save ([iterate.Journal]) is one too.
//
// The phases are timed by the arrival of their events, which the loop sends
// from its goroutine as each phase ends. A run that stops while an
// iteration is in flight (an interruption) ends the open iteration and task
// spans with the run, with status Error and the stop's reason: no span is
// left open.
//
// # Parents
//
// A run started under a context that carries a span (Run or Resume called
// with a request's context: [iterate.LoopStarted].Context) is that span's
// child, with a link to the session's span context (below, refine.link
// "session"). Otherwise the run is a child of the session's span context.
//
// # Usage attributes
//
// The OpenTelemetry GenAI conventions count tokens as
// gen_ai.usage.input_tokens and gen_ai.usage.output_tokens, and have no
// total, no cost and no call count. Usage is recorded under refine's own
// names, refine.usage.tokens (the total), refine.usage.cost (in the unit the
// worker reports) and refine.usage.calls, and, when the worker split its
// tokens ([budget.Usage].InputTokens, OutputTokens), under the GenAI names
// too.
//
// # Resumed runs
//
// Every run of a session (the first and each resume) is a child of, or
// linked to, one remote span context derived from the session's name and
// [iterate.LoopStarted].StartedAt, which a resume restores from the
// checkpoint: the runs of a session without a request span share one
// trace ID, even across processes, and a trace backend shows them together
// (under a parent it never receives). That parent is marked sampled, so
// parent-based samplers (the SDK's default) record every run. A resumed
// run also has a link to the run it continues: to that run's span when
// this Observer ended it, and otherwise (a resume in another process) to
// the session's span context, with the attribute refine.link
// ("previous_run" or "session").
//
// # Metrics
//
// Counters refine.iterations, refine.tasks, refine.failures (attribute
// refine.scope: "iteration" or "task"), refine.tokens (input and output
// tokens apart, with gen_ai.token.type "input" or "output", when the worker
// split them) and refine.cost;
// histograms refine.iteration.duration and refine.task.duration, in
// seconds. All carry refine.session, the task metrics (and a task's
// failures) refine.task.role too. Tokens and cost are counted per task, when
// it ends, so the spending of an iteration that is interrupted counts too; a
// task replayed from the journal on resume ([iterate.Journal]) is not
// counted again (its span, marked refine.task.replayed, carries the usage
// recorded when it ran). The session is an attribute of
// every metric: a service that runs many short sessions makes many series.
//
// # Concurrency
//
// An Observer is safe for concurrent use: the loops' goroutines, the tasks'
// goroutines and host code may deliver events at once. Every event names
// its session ([iterate.SessionOf]), so one Observer follows any number of
// loops at once, each session's run apart: a fleet worker running fifty
// sessions needs one. Two runs of one session at once are not told apart:
// the second LoopStarted ends the first run's span.
package oteliterate
