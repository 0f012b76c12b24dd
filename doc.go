// Package refine is the root of a module for bounded, resumable, adaptive
// refinement loops: the loop that sits around an AI agent, or any
// improvable work, and decides iteration by iteration what is still
// missing, what to try next, whether it is done, whether it can afford
// another round, and how to pick up again after a crash.
//
// The root package holds only this overview; import the packages below.
//
// # Packages
//
//   - [github.com/refine-go/refine/iterate]: the engine. [iterate.New] takes
//     a Worker (the host's domain logic) and options, and returns an Engine
//     whose Run and Resume drive the loop under a context. It defines the
//     five interfaces the engine consumes (Engine, GapAnalyzer, Strategy,
//     ConvergencePolicy, Checkpointer), the adaptive default strategy,
//     typed events and a progress printer.
//   - [github.com/refine-go/refine/iterate/iteratetest]: a scripted worker
//     and an event recorder for table-driven tests of loops.
//   - [github.com/refine-go/refine/gap]: where the work stands (Assessment)
//     and what is missing (Gap): coverage, confidence, conflicts, missing
//     context, unanswered questions and the quality signals of validation,
//     tests and review, with their P1/P2/P3 prioritisation and selection.
//   - [github.com/refine-go/refine/converge]: when to stop: thresholds,
//     early exit, iteration limit, stuck detection, plateaus, improvement
//     assessment, consecutive failures, and combinators.
//   - [github.com/refine-go/refine/budget]: limits on iterations, tokens,
//     cost, wall time and external calls, reserved before and settled after; context
//     windows; token estimates.
//   - [github.com/refine-go/refine/checkpoint]: the versioned, checksummed
//     Checkpoint envelope around opaque engine and state bytes; in-memory
//     and directory stores with atomic saves, generations, fallback, and
//     session locks with fencing tokens. It imports nothing of this module:
//     a store moves bytes.
//   - [github.com/refine-go/refine/checkpoint/checkpointtest]: a
//     conformance suite for custom checkpoint stores.
//   - [github.com/refine-go/refine/iterate/view]: an http.Handler showing
//     the sessions of any store, live: timelines, charts of the metrics a
//     host declares, and, if enabled, answers to escalations.
//
// Nested modules keep their dependencies out of this one:
// checkpoint/pgcheckpoint (a PostgreSQL store with leases and fencing,
// pgx), iterate/fleet (a host's own loops run on a pool of its processes,
// on River and pgcheckpoint) and iterate/oteliterate (OpenTelemetry traces
// and metrics).
//
// # Data flow
//
// Each iteration the engine assesses the state, analyzes its gaps, asks the
// convergence policy whether to stop, reserves the budget, plans targeted
// tasks, runs them in parallel under a limit, integrates their outcomes in
// task order, settles the usage and saves a checkpoint. Every stop has a
// status and a reason. The leaf packages (gap, converge, budget,
// checkpoint) never import iterate; checkpoint and checkpointtest import
// nothing of this module. The thresholds are declared once (gap.Thresholds)
// and read by both the gap analysis and the convergence policies.
package refine
