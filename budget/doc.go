// Package budget limits what a refinement loop may spend: iterations,
// tokens, cost, wall time and external calls (API, tool or search calls, on
// which agents are commonly rate-limited).
//
// A [Budget] is checked and reserved before an iteration or a task (an
// estimate), and settled after it (the actual usage). Each resource has a hard
// limit or is warn-only. [ContextWindow] tells when a prompt nears the limit
// of a model's context window, and [EstimateTokens] estimates the tokens of a
// text.
//
// # Limits and checks
//
// A hard limit blocks an estimate when spent + reserved + estimate would be
// strictly greater than the limit: reaching a limit exactly is allowed. A
// zero limit means "no limit" for that resource. A warn-only resource
// ([Limits.WarnOnly]) never blocks; going over its limit is reported as a
// [Warning] with Exceeded set, and the work goes on (a prompt over its token
// budget is run anyway). Any limited resource warns once spent + reserved +
// estimate reaches [Limits.WarnAt] of its limit. Checks report resources in
// the order Iterations, Tokens, Cost, Wall, Calls.
//
// [Calls] counts external calls: reserve one call ([Usage.Calls] 1) before
// each API, tool or search call, so that parallel tasks share a rate limit,
// and settle it with the calls actually made.
//
// # Reservations
//
// [Budget.Reserve] sets an estimate aside so that parallel tasks cannot
// together overspend. The returned [Reservation] is then settled with the
// actual usage, which is recorded even when it overshoots the estimate or
// the limit: spending that already happened is never refused. Wall time is
// settled with durations measured by the caller; a Budget never reads a
// clock.
//
// # Checkpoints
//
// [Budget.Spent] is what a checkpoint stores and [Budget.Restore] puts it
// back when a loop resumes.
//
// # Context windows
//
// [EstimateContext] estimates the context a session needs from the work
// items done and left (8,000 tokens per completed item and 6,000 per
// remaining one by default), and [ContextWindow.Exhausted] tells when that
// reaches the threshold (90% by default) at which work should checkpoint and
// continue in a fresh iteration.
package budget
