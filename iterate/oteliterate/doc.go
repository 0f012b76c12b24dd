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
// child "refine.iteration", from IterationStarted to IterationEnded; each
// task a child of its iteration, "refine.task", from TaskStarted to
// TaskEnded. All are of kind Internal, and carry the attribute
// refine.session.
//
//   - refine.run: refine.resumed, refine.max_iterations, refine.started_at
//     (the session's first start, RFC 3339), refine.completed_iterations
//     (iterations done before a resume); at the stop refine.status,
//     refine.reason, refine.iteration (the last completed),
//     refine.iterations (completed in this run), refine.elapsed (seconds of
//     all iterations, across resumes), refine.consecutive_failures,
//     refine.checkpoint.saved, the usage of this run's iterations, and
//     refine.coverage and refine.confidence of the last assessment. Its status is Error for the stops failed, aborted and
//     interrupted, with the reason as description; a checkpoint that could
//     not be saved is recorded as an error event. Checkpoints saved,
//     recoveries from damaged checkpoints and warnings are span events
//     ("refine.checkpoint", "refine.recovered", "refine.warning"; a warning
//     goes on the iteration in progress, if any; those that Resume reports
//     before the run starts go on the run).
//   - refine.iteration: refine.iteration, refine.action, refine.decision
//     (the convergence verdict that let it run), refine.gaps (how many gaps
//     the assessment before it found), refine.coverage and refine.confidence
//     of that assessment ([gap.Assessment.CoverageRatio],
//     [gap.Assessment.AverageConfidence]); when it ends refine.tasks,
//     refine.tasks.failed, refine.failed and its usage. A failed iteration has
//     status Error and its error recorded.
//   - refine.task: refine.task.id ("2.1"), refine.iteration, refine.task.role,
//     refine.action, refine.gap.kind and refine.gap.priority ("P1") of its main
//     gap (none for a broad task), and its usage. A failed task has its error
//     recorded (span.RecordError) and status Error.
//
// A run that stops while an iteration is in flight (an interruption) ends
// the open iteration and task spans with the run, with status Error and the
// stop's reason: no span is left open.
//
// # Usage attributes
//
// The OpenTelemetry GenAI conventions count tokens as
// gen_ai.usage.input_tokens and gen_ai.usage.output_tokens, and have no
// total, no cost and no call count. A [budget.Usage] holds only a total, so
// usage is recorded under refine's own names: refine.usage.tokens,
// refine.usage.cost (in the unit the worker reports) and refine.usage.calls.
//
// # Resumed runs
//
// Every run of a session (the first and each resume) is a child of one
// remote span context derived from the session's name and
// [iterate.LoopStarted].StartedAt, which a resume restores from the
// checkpoint: all runs of a session share one trace ID, even across
// processes, and a trace backend shows them together (under a parent it
// never receives). That parent is marked sampled, so parent-based samplers
// (the SDK's default) record every run. A resumed run also has a link to the
// run it continues: to that run's span when this Observer ended it, and
// otherwise (a resume in another process) to the session's span context,
// with the attribute refine.link ("previous_run" or "session").
//
// # Metrics
//
// Counters refine.iterations, refine.tasks, refine.failures (attribute
// refine.scope: "iteration" or "task"), refine.tokens and refine.cost;
// histograms refine.iteration.duration and refine.task.duration, in
// seconds. All carry refine.session, the task metrics (and a task's
// failures) refine.task.role too. Tokens and cost are counted per task, when
// it ends, so the spending of an iteration that is interrupted counts too; a
// task replayed from the journal on resume ([iterate.Journal]) reports its
// recorded usage again and is counted again. The session is an attribute of
// every metric: a service that runs many short sessions makes many series.
//
// # Concurrency
//
// An Observer is safe for concurrent use: the loop's goroutine, the tasks'
// goroutines and host code may deliver events at once. It follows one loop
// at a time, though: the events of iterate do not name their session (only
// LoopStarted and LoopStopped do), so the events of two loops running at
// once cannot be told apart. Give each concurrent loop its own Observer; New
// is cheap, and Observers built from the same providers share their
// instruments.
package oteliterate
