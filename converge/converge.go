// Package converge decides when a refinement loop should stop.
//
// The engine keeps a [History] of the loop: counters, the best score and a
// bounded window of recent [Record] values. A [Policy] reads it and returns a
// [Decision]: continue, or stop with a [Verdict] and a reason. The policies of
// this package combine with [Any] and [All]; [Default] is the combination a
// loop uses when configured with nothing else.
//
// # Policies
//
//   - [ThresholdsMet]: full convergence (coverage, confidence, conflicts,
//     critical questions) → Converged.
//   - [HighConfidence]: exceptionally high quality → EarlyExit.
//   - [IterationLimit]: the iteration limit → MaxIterations (partial
//     convergence) or Escalate.
//   - [NoProgress]: work remaining unchanged → Stuck.
//   - [Repeating]: the same actions (Attempt.Actions) repeated without
//     improvement, the thrashing of agent loops → Stuck.
//   - [EarlyStopping]: metrics stopped improving (Keras style) → Plateau.
//   - [Diminishing]: the improvement outlook of [Forecast] → Plateau,
//     Escalate, ...
//   - [Failures]: consecutive failed iterations → Aborted.
//   - [Done] and [Passing]: the host reports completion, or the tests pass
//     and the review approves → Converged.
//
// The thresholds are not fields of the policies: they are declared once, in
// [gap.Thresholds], and the engine sets them as [History.Thresholds] (and
// the failure threshold as [History.FailureThreshold]), so that
// [ThresholdsMet], [HighConfidence] and [Evaluate] judge by the same values
// as the loop's gap analysis.
//
// # Scores that are not finite
//
// A host may report a NaN or an infinite score, coverage or confidence (a
// division by zero, a failed parse). The policies treat them as follows,
// each documented on the policy: a NaN never meets a threshold and +Inf
// meets any ([ThresholdsMet], [HighConfidence]); [EarlyStopping] counts a
// NaN as no improvement, as Keras does, and compares the infinities as
// numbers; [Forecast] and [Diminishing] leave non-finite scores out of the
// trend and the variance. The engine's keep-best (iterate.WithKeepBest)
// never keeps a state scored NaN. A [History] with such values is saved and
// resumed exactly: the engine saves them as the JSON strings "NaN", "+Inf"
// and "-Inf", which the UnmarshalJSON methods of [Record], [History] and
// [Criterion] read back.
//
// Policies are plain values; a zero field selects its documented default.
// Configurable policies have a Validate method returning an error that
// matches [ErrInvalidPolicy] and names the policy and the field; [Validate] checks any policy, through
// combinators too. Decide never panics, not even on a nil [History].
package converge

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/internal/byptr"
)

// Verdict is what a [Decision] concludes.
type Verdict int

// Verdicts. Continue is the zero value.
const (
	// Continue: run another iteration.
	Continue Verdict = iota
	// Converged: every required criterion is met (full convergence).
	Converged
	// EarlyExit: quality is exceptionally high; stop before the limit.
	EarlyExit
	// MaxIterations: the iteration limit was reached without convergence
	// (partial convergence; the unmet criteria are listed).
	MaxIterations
	// Stuck: the work remaining has not changed for too long.
	Stuck
	// Plateau: the scores stopped improving (diminishing returns).
	Plateau
	// Aborted: too many consecutive iterations failed.
	Aborted
	// Escalate: a human must decide how to go on.
	Escalate
)

var verdictNames = [...]string{"continue", "converged", "early_exit", "max_iterations", "stuck", "plateau", "aborted", "escalate"}

// String returns the verdict's name in snake case, e.g. "early_exit".
func (v Verdict) String() string {
	if v >= 0 && int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Success reports whether the verdict is a successful stop (Converged or
// EarlyExit).
func (v Verdict) Success() bool { return v == Converged || v == EarlyExit }

// Criterion is one convergence criterion evaluated against an assessment.
type Criterion struct {
	// Name is e.g. "coverage", "confidence", "conflicts", "questions".
	Name string `json:"name"`
	// Value is the measured value and Threshold the bound it is held to.
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Met       bool    `json:"met"`
	// Detail is a short human-readable statement such as "0.88 ≥ 0.70" or
	// "2/3 answered". The built-in policies leave it empty, so that a
	// decision costs no formatting: [Criterion.Describe] derives it from
	// the name and values when needed.
	Detail string `json:"detail,omitempty"`
}

// Describe returns Detail, or derives it: "0.88 ≥ 0.70" (coverage,
// confidence and other ratios), "0 ≤ 2" (conflicts), "2/3 answered"
// (questions).
func (c Criterion) Describe() string {
	if c.Detail != "" {
		return c.Detail
	}
	return string(c.appendDetail(nil))
}

func (c Criterion) appendDetail(b []byte) []byte {
	if c.Detail != "" {
		return append(b, c.Detail...)
	}
	switch c.Name {
	case CriterionConflicts:
		b = strconv.AppendInt(b, int64(c.Value), 10)
		if c.Met {
			b = append(b, " ≤ "...)
		} else {
			b = append(b, " > "...)
		}
		return strconv.AppendInt(b, int64(c.Threshold), 10)
	case CriterionQuestions:
		b = strconv.AppendInt(b, int64(c.Value), 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(c.Threshold), 10)
		b = append(b, " answered"...)
		if c.Met && c.Value < c.Threshold {
			b = append(b, " (not required)"...)
		}
		return b
	case CriterionCoverage, CriterionConfidence:
	default:
		if c.Value == 0 && c.Threshold == 0 {
			return b // nothing measured to describe
		}
	}
	return appendComparison(b, c.Value, c.Threshold, c.Met)
}

// String returns the name and the description, e.g. "coverage 0.88 ≥ 0.70"
// or "questions 2/3 answered".
func (c Criterion) String() string {
	b := append(make([]byte, 0, 32), c.Name...)
	n := len(b)
	b = c.appendDetail(append(b, ' '))
	if len(b) == n+1 {
		b = b[:n]
	}
	return string(b)
}

// Decision is the outcome of a [Policy].
type Decision struct {
	Verdict Verdict `json:"verdict"`
	// Reason explains the verdict for humans, e.g.
	// "converged: coverage 0.88 ≥ 0.70, confidence 0.91 ≥ 0.80".
	Reason string `json:"reason,omitempty"`
	// Criteria holds every criterion evaluated, met or not.
	Criteria []Criterion `json:"criteria,omitempty"`
}

// Stop reports whether the decision ends the loop (any verdict but Continue).
func (d Decision) Stop() bool { return d.Verdict != Continue }

// Unmet returns the criteria that are not met.
func (d Decision) Unmet() []Criterion {
	var out []Criterion
	for _, c := range d.Criteria {
		if !c.Met {
			out = append(out, c)
		}
	}
	return out
}

// Policy decides whether a loop should stop. Decide must not modify h or keep
// it after returning. Implementations are expected to be safe for concurrent
// use.
type Policy interface {
	Decide(h *History) Decision
}

// PolicyFunc adapts a function to a [Policy].
type PolicyFunc func(h *History) Decision

// Decide calls f(h).
func (f PolicyFunc) Decide(h *History) Decision { return f(h) }

// Record is what the history keeps of one assessment: the metrics of the
// state after Iteration completed iterations, and how that iteration went.
type Record struct {
	// Iteration is the number of iterations completed when the state was
	// assessed; 0 is the initial state.
	Iteration  int                `json:"iteration"`
	Coverage   float64            `json:"coverage,omitempty"`
	Confidence float64            `json:"confidence,omitempty"`
	Score      float64            `json:"score,omitempty"`
	Scores     map[string]float64 `json:"scores,omitempty"`
	Conflicts  int                `json:"conflicts,omitempty"`
	// Gaps and Fixable count the gaps found and how many of them are fixable.
	Gaps    int `json:"gaps,omitempty"`
	Fixable int `json:"fixable,omitempty"`
	// Triggers is a digest of the gaps' kinds, targets and details: two records
	// with the same digest found the same gaps.
	Triggers uint64 `json:"triggers,omitempty"`
	// Summary is a one-line account of the state: its most severe gap in
	// actionable form ("TestLogin: Expected: 123, Received: \"123\"").
	Summary string `json:"summary,omitempty"`
	// Kinds counts the gaps found by kind (nil when none was found), and
	// Priorities by priority: P1, P2 and P3, in that order (gaps not yet
	// prioritised are not counted).
	Kinds      map[gap.Kind]int `json:"kinds,omitempty"`
	Priorities [3]int           `json:"priorities,omitzero"`
	// Verdict is the convergence decision taken on this state, and Unmet
	// the criteria that decision found not met (set by the engine, which
	// decides after recording the assessment).
	Verdict Verdict     `json:"verdict,omitempty"`
	Unmet   []Criterion `json:"unmet,omitempty"`
	// Attempt is how the iteration which produced this state went: whether
	// it failed, its action, duration, what it spent, and each of its tasks
	// (zero for the initial state).
	Attempt
}

// Metric returns the named metric of the record, as [gap.Assessment.Metric]
// names them: "coverage", "confidence", "score", "conflicts" or a key of
// Scores.
func (r *Record) Metric(name string) (float64, bool) {
	switch name {
	case CriterionCoverage:
		return r.Coverage, true
	case CriterionConfidence:
		return r.Confidence, true
	case metricScore:
		return r.Score, true
	case CriterionConflicts:
		return float64(r.Conflicts), true
	}
	v, ok := r.Scores[name]
	return v, ok
}

// DefaultWindow is the number of records a [History] keeps when its Window is
// zero.
const DefaultWindow = 32

// History is everything convergence needs to know about a loop, kept in
// constant space: counters, the best score, and the most recent records in a
// bounded window. The engine updates it with [History.Observe] after each
// assessment and [History.Complete] after each iteration; it is saved in every
// checkpoint so that a resumed loop decides exactly as an uninterrupted one.
//
// The zero value is an empty history of an unlimited loop. A History is not
// safe for concurrent use. It has an unexported buffer: compare Histories
// with go-cmp using cmpopts.IgnoreUnexported(converge.History{}).
type History struct {
	// Iteration is the number of completed iterations.
	Iteration int `json:"iteration"`
	// MaxIterations is the iteration limit; 0 means unlimited.
	MaxIterations int `json:"max_iterations,omitempty"`
	// Window bounds Recent; 0 means DefaultWindow.
	Window int `json:"window,omitempty"`
	// Thresholds are the loop's thresholds, the same values its gap
	// analysis used; the engine sets them from its configuration.
	Thresholds gap.Thresholds `json:"-"`
	// FailureThreshold is the number of consecutive failed iterations that
	// aborts the loop ([Failures]); 0 means [DefaultFailureThreshold]. The
	// engine sets it from its configuration.
	FailureThreshold int `json:"-"`
	// Recent holds the latest records, oldest first, at most Window of them.
	Recent []Record `json:"recent,omitempty"`

	// ConsecutiveFailures counts the failed iterations since the last
	// successful one.
	ConsecutiveFailures int `json:"consecutive_failures,omitempty"`
	// Failures counts every failed iteration.
	Failures int `json:"failures,omitempty"`
	// Unchanged counts the consecutive assessments whose work remaining
	// equalled the one before (and was not empty).
	Unchanged int `json:"unchanged,omitempty"`
	// WorkRemaining is the work remaining of the latest assessment.
	WorkRemaining []string `json:"work_remaining,omitempty"`
	// BestScore is the best Score seen and BestIteration where; a NaN is
	// the best only until another score is seen.
	BestScore     float64 `json:"best_score,omitempty"`
	BestIteration int     `json:"best_iteration,omitempty"`

	// Current is the latest assessment and Gaps its gaps. They are not
	// saved: a resumed loop assesses its state afresh.
	Current gap.Assessment `json:"-"`
	Gaps    []gap.Gap      `json:"-"`

	// Pending describes the iteration completed since the last assessment;
	// the next [History.Observe] moves it into its record.
	Pending Attempt `json:"pending,omitzero"`

	// base is the backing array Recent slides over (see next).
	base []Record
	// spareKinds is the map of kinds of the record that last left the
	// window, for the next record (see next).
	spareKinds map[gap.Kind]int
}

// Attempt is how one iteration went, as [History.Complete] records it:
// whether it failed, the strategy it followed, how long it took, and its
// tasks. (iterate.Outcome is a task's result; an Attempt, an iteration's.)
//
// Attempts hold a slice: compare them with [Attempt.IsZero] or go-cmp.
type Attempt struct {
	Failed      bool          `json:"failed,omitempty"`
	Action      string        `json:"action,omitempty"`
	Duration    time.Duration `json:"duration,omitempty"`
	Tasks       int           `json:"tasks,omitempty"`
	FailedTasks int           `json:"failed_tasks,omitempty"`
	// Tokens, Cost and Calls are what the iteration's tasks spent, as the
	// engine charged it to the budget (budget.Usage's fields of the same
	// names): over a session's iterations they add up to its usage, but
	// for what an iteration interrupted in flight spent.
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
	Calls  int64   `json:"calls,omitempty"`
	// TaskRuns describes each of the iteration's tasks, in task order: its
	// role and main gap, how long it ran, what it spent, why it failed and
	// the tail of its output (nil for an iteration without tasks).
	TaskRuns []TaskRun `json:"task_runs,omitempty"`
	// Actions are what the iteration's tasks did, as fingerprints the host
	// reported (iterate.Outcome.Actions: a tool call with its arguments, a
	// command, a file changed), sorted and once each; nil when none was
	// reported. [Repeating] reads them.
	Actions []string `json:"actions,omitempty"`
}

// IsZero reports whether a is the zero Attempt (TaskRuns nil).
func (a *Attempt) IsZero() bool {
	return !a.Failed && a.Action == "" && a.Duration == 0 && a.Tasks == 0 && a.FailedTasks == 0 &&
		a.Tokens == 0 && a.Cost == 0 && a.Calls == 0 && a.TaskRuns == nil && a.Actions == nil
}

// TaskRun is one task of an iteration as the history keeps it: its role,
// the kind and target of its main gap (empty for a broad task), how long
// it ran, the tokens it spent, its error's message (empty when it
// succeeded) and the tail of the output its worker recorded, if any (see
// iterate.Outcome.Output).
type TaskRun struct {
	Role     string        `json:"role,omitempty"`
	Kind     gap.Kind      `json:"kind,omitempty"`
	Target   string        `json:"target,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Tokens   int64         `json:"tokens,omitempty"`
	Err      string        `json:"err,omitempty"`
	Output   string        `json:"output,omitempty"`
}

// Failed reports whether the task failed.
func (t *TaskRun) Failed() bool { return t.Err != "" }

// Remaining returns how many iterations may still run, or -1 when unlimited.
func (h *History) Remaining() int {
	if h.MaxIterations <= 0 {
		return -1
	}
	if r := h.MaxIterations - h.Iteration; r > 0 {
		return r
	}
	return 0
}

// Last returns the latest record, or nil when there is none.
func (h *History) Last() *Record {
	if len(h.Recent) == 0 {
		return nil
	}
	return &h.Recent[len(h.Recent)-1]
}

// Previous returns the record before the latest, or nil.
func (h *History) Previous() *Record {
	if len(h.Recent) < 2 {
		return nil
	}
	return &h.Recent[len(h.Recent)-2]
}

// Scores appends the named metric of the last n records (all when n <= 0),
// oldest first, to dst and returns it. Records without the metric are skipped.
func (h *History) Scores(dst []float64, metric string, n int) []float64 {
	recs := h.Recent
	if n > 0 && len(recs) > n {
		recs = recs[len(recs)-n:]
	}
	for i := range recs {
		if v, ok := recs[i].Metric(metric); ok {
			dst = append(dst, v)
		}
	}
	return dst
}

// triggerDigest returns an order-independent digest of the gaps' kinds,
// targets and details: equal digests mean, with overwhelming probability,
// the same set of problems, described the same way. A gap whose detail
// changed (coverage 0.40 → 0.60, a test failing with another value) counts
// as a different trigger: the work moved. An empty list digests to 0.
func triggerDigest(gaps []gap.Gap) uint64 {
	var sum uint64
	for i := range gaps {
		h := hashString(fnvOffset, string(gaps[i].Kind))
		h = hashString(h, gaps[i].Target)
		h = hashString(h, gaps[i].Detail)
		sum += mix(h)
	}
	return sum
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	h ^= 0xff // separator, so ("ab","c") and ("a","bc") differ
	h *= fnvPrime
	return h
}

// mix is a finaliser (from splitmix64) so that summing digests of different
// gaps does not cancel out.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Observe records the assessment a of the state after h.Iteration completed
// iterations and the gaps found in it: it updates Current, Gaps, the stuck
// counter (work remaining compared with the previous assessment), the best
// score, and appends a [Record] to the bounded window, dropping the oldest
// record when the window is full. It does not keep a reference to gaps beyond
// the next call; the record keeps its own copy of a.Scores.
//
// Observing the state of an iteration that is already recorded (the latest
// record has Iteration == h.Iteration, as when a resumed loop assesses its
// state afresh) replaces that record's metrics and refreshes Current and Gaps
// without counting the assessment twice: Unchanged is kept when the work
// remaining is the same as recorded and reset otherwise, and the outcome of
// the recorded iteration (Failed, Action, Duration) is kept.
func (h *History) Observe(a gap.Assessment, gaps []gap.Gap) { h.observe(&a, gaps) }

func init() {
	byptr.Observe = (*History).observe
	byptr.Complete = (*History).complete
}

// observe is Observe with a pointer to the assessment, which it does not
// keep: the engine's (see package byptr).
func (h *History) observe(a *gap.Assessment, gaps []gap.Gap) {
	h.Current = *a
	h.Gaps = gaps

	if last := h.Last(); last != nil && last.Iteration == h.Iteration {
		// Re-assessment of a recorded state: replace, do not count again.
		h.Pending = Attempt{}
		if !slices.Equal(a.WorkRemaining, h.WorkRemaining) {
			h.Unchanged = 0
			h.WorkRemaining = append(h.WorkRemaining[:0], a.WorkRemaining...)
		}
		last.set(h.Iteration, a, gaps, &last.Attempt)            // kept
		if a.Score > h.BestScore || h.BestScore != h.BestScore { // a NaN is never the best
			h.BestScore, h.BestIteration = a.Score, h.Iteration
		}
		return
	}

	if len(a.WorkRemaining) > 0 && len(h.Recent) > 0 && slices.Equal(a.WorkRemaining, h.WorkRemaining) {
		h.Unchanged++
	} else {
		h.Unchanged = 0
	}
	h.WorkRemaining = append(h.WorkRemaining[:0], a.WorkRemaining...)

	if len(h.Recent) == 0 || a.Score > h.BestScore || h.BestScore != h.BestScore { // a NaN is never the best
		h.BestScore, h.BestIteration = a.Score, h.Iteration
	}

	w := h.Window
	if w <= 0 {
		w = DefaultWindow
	}
	r := h.next(w)
	r.Kinds = h.spareKinds // for set to fill
	r.set(h.Iteration, a, gaps, &h.Pending)
	if r.Kinds != nil {
		h.spareKinds = nil
	}
	h.Pending = Attempt{}
}

// countKinds counts gaps by kind into m, cleared (or a new map if m is
// nil), and returns it; nil when there are no gaps.
func countKinds(m map[gap.Kind]int, gaps []gap.Gap) map[gap.Kind]int {
	if len(gaps) == 0 {
		return nil
	}
	if m == nil {
		m = make(map[gap.Kind]int, 4)
	} else {
		clear(m)
	}
	for i := range gaps {
		m[gaps[i].Kind]++
	}
	return m
}

// set makes r the record of the assessment a of the state after iteration
// completed iterations, its gaps, and the attempt *o that produced it. It
// assigns every field of r in place: r may be a reused slot of the window,
// and a Record built aside and then copied in would cost a second copy of
// it (with write barriers) on every observation. (o is a pointer for the
// same reason: an Attempt is 96 bytes.)
func (r *Record) set(iteration int, a *gap.Assessment, gaps []gap.Gap, o *Attempt) {
	r.Iteration = iteration
	r.Coverage = a.CoverageRatio()
	r.Confidence = a.AverageConfidence()
	r.Score = a.Score
	r.Scores = nil
	if len(a.Scores) > 0 {
		// The host may reuse its map; the record must not change with it.
		r.Scores = maps.Clone(a.Scores)
	}
	r.Conflicts = a.UnresolvedConflicts()
	r.Gaps = len(gaps)
	r.Fixable = 0
	r.Priorities = [3]int{}
	for i := range gaps {
		if gaps[i].Fixable {
			r.Fixable++
		}
		if p := gaps[i].Priority; p >= gap.P1 && p <= gap.P3 {
			r.Priorities[p-gap.P1]++
		}
	}
	r.Kinds = countKinds(r.Kinds, gaps) // the slot's map, reused
	r.Triggers = triggerDigest(gaps)
	r.Summary = ""
	if len(gaps) > 0 {
		r.Summary = summarize(&gaps[0])
	}
	r.Verdict, r.Unmet = Continue, nil // the engine records its decision
	r.Attempt = *o
}

// release drops the references r holds (its Scores, Summary, Kinds,
// Unmet, Action and TaskRuns), so that a record that left the window keeps
// nothing alive.
func (r *Record) release() {
	r.Scores, r.Summary, r.Kinds, r.Unmet, r.Action, r.TaskRuns, r.Actions = nil, "", nil, nil, "", nil, nil
}

// next appends a slot to the window of w records and returns it; the
// caller sets every field of the slot (see [Record.set]). The window slides
// over a backing array of 2w records, so that dropping the oldest record is
// a reslice and the records move only once every w observations: constant
// amortized cost, no allocation in the steady state.
func (h *History) next(w int) *Record {
	if len(h.Recent) >= w {
		drop := len(h.Recent) - w + 1
		// Release what the dropped records refer to.
		if drop == 1 {
			// The steady state: cheaper than clear. The dropped record's
			// map of kinds is the next record's, so that a full window
			// allocates none.
			if h.Recent[0].Kinds != nil {
				h.spareKinds = h.Recent[0].Kinds
			}
			h.Recent[0].release()
		} else {
			clear(h.Recent[:drop])
		}
		h.Recent = h.Recent[drop:]
	}
	if len(h.Recent) == cap(h.Recent) {
		size := 2 * w
		if n := 2 * len(h.Recent); n < w {
			// The window is still filling: grow as append would, so that
			// a short loop does not pay for a whole window up front.
			size = max(n, 4)
		}
		if cap(h.base) < size {
			h.base = make([]Record, 0, size)
		}
		n := copy(h.base[:cap(h.base)], h.Recent)
		clear(h.base[n:cap(h.base)])
		h.Recent = h.base[:n]
	}
	h.Recent = h.Recent[:len(h.Recent)+1]
	return &h.Recent[len(h.Recent)-1]
}

// summarize describes a gap in its actionable form: "TestLogin: Expected:
// 123, Received: \"123\"", or its detail, kind or target alone.
func summarize(g *gap.Gap) string {
	switch {
	case g.Detail == "":
		if g.Target != "" {
			return string(g.Kind) + ": " + g.Target
		}
		return string(g.Kind)
	case g.Target == "" || strings.Contains(g.Detail, g.Target):
		return g.Detail
	}
	return g.Target + ": " + g.Detail
}

// Complete records that one more iteration finished, and how it went; the
// next [History.Observe] files the outcome in the record of the state it
// produced. A successful iteration resets ConsecutiveFailures.
func (h *History) Complete(o Attempt) { *h.complete(o.Failed) = o }

// complete counts an attempt that failed or not and returns the slot of
// the pending attempt, for the caller to set: the engine's (see package
// byptr), which fills it in place.
func (h *History) complete(failed bool) *Attempt {
	h.Iteration++
	if failed {
		h.ConsecutiveFailures++
		h.Failures++
	} else {
		h.ConsecutiveFailures = 0
	}
	return &h.Pending
}
