package converge

import (
	"math"
	"strconv"
	"strings"

	"github.com/refine-go/refine/gap"
)

// Defaults of the policies. A zero field of a policy selects its default.
// The thresholds' defaults are gap's (see [gap.Thresholds]).
const (
	// defaultStuckAfter is the number of consecutive unchanged assessments
	// after which [NoProgress] halts.
	defaultStuckAfter = 2
	// DefaultFailureThreshold is the number of consecutive failed
	// iterations after which [Failures] aborts, unless the loop sets
	// [History.FailureThreshold].
	DefaultFailureThreshold = 3
)

// Criterion names of [ThresholdsMet] and [HighConfidence]. Coverage,
// confidence and conflicts are also metric names ([Record.Metric]).
const (
	CriterionCoverage   = "coverage"
	CriterionConfidence = "confidence"
	CriterionConflicts  = "conflicts"
	CriterionQuestions  = "questions"
)

// tolerance is gap.Tolerance: a gap is found exactly when a criterion is unmet.
const tolerance = gap.Tolerance

func atLeast(v, min float64) bool { return v >= min-tolerance }

func countOr(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// ThresholdsMet is the required convergence check of research refinement:
// the loop has converged when, by the loop's thresholds (h.Thresholds, the
// same values its gap analysis used),
//
//  1. coverage ≥ MinCoverage (default 0.70),
//  2. average confidence ≥ MinConfidence (default 0.80),
//  3. unresolved conflicts ≤ MaxConflicts (default 2), and
//  4. every critical question is fully answered (unless AllowUnanswered).
//
// Decide reads the latest assessment (h.Current). When all four criteria are
// met it returns Converged with a reason listing them, e.g. "converged:
// coverage 0.88 ≥ 0.70, confidence 0.91 ≥ 0.80, conflicts 0 ≤ 2, questions
// 2/2 answered"; otherwise Continue carrying all four criteria, so that
// [Decision.Unmet] lists the failing ones (a Continue has no Reason). An
// assessment that measured none of the four (no coverage, confidence,
// findings, conflicts or questions, as in loops that do not assess) is not
// judged: Decide returns Continue with no criteria, so that the reason of a
// later stop does not list thresholds the loop never measured.
//
// Ratios are compared with a tolerance of [gap.Tolerance]. A coverage or
// confidence that is NaN never meets its threshold (and counts as measured);
// +Inf meets any.
type ThresholdsMet struct{}

// researchMeasured reports whether a measured anything the thresholds judge.
func researchMeasured(a *gap.Assessment) bool {
	return a.Coverage != 0 || a.EstimatedFiles > 0 || a.Confidence != 0 || len(a.Findings) > 0 ||
		len(a.Conflicts) > 0 || len(a.Questions) > 0
}

// defaults are the effective thresholds of the zero [gap.Thresholds]: the
// value a zero field of the loop's thresholds stands for.
var defaults = gap.Thresholds{}.Effective()

// orDefault returns v, or def when v is zero, as [gap.Thresholds.Effective]
// fills a field.
func orDefault[T int | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// limits returns the effective limits of *t. It reads the three fields it
// needs rather than copying the whole of t.Effective().
func limits(t *gap.Thresholds) (minCov, minConf float64, maxConflicts int) {
	return max(orDefault(t.MinCoverage, defaults.MinCoverage), 0),
		max(orDefault(t.MinConfidence, defaults.MinConfidence), 0),
		max(orDefault(t.MaxConflicts, defaults.MaxConflicts), 0)
}

// earlyLevels returns the effective EarlyCoverage and EarlyConfidence of *t.
func earlyLevels(t *gap.Thresholds) (minCov, minConf float64) {
	return orDefault(t.EarlyCoverage, defaults.EarlyCoverage), orDefault(t.EarlyConfidence, defaults.EarlyConfidence)
}

// Evaluate returns the criteria, in the order coverage, confidence,
// conflicts, questions, evaluated against a (nil is an assessment that
// measured nothing) under t. Coverage is judged only when a measured it
// (Coverage or EstimatedFiles set) and confidence only when a did (Findings
// or Confidence set), exactly as the gap analysis reports their gaps: what
// a loop does not measure neither blocks it nor is a gap. The questions
// criterion has Value = answered and Threshold = total critical questions.
// The slice is newly allocated.
func Evaluate(a *gap.Assessment, t gap.Thresholds) []Criterion {
	if a == nil {
		a = &gap.Assessment{}
	}
	return evaluate(a, &t)
}

// evaluate is [Evaluate] of a non-nil a, reading t in place.
func evaluate(a *gap.Assessment, t *gap.Thresholds) []Criterion {
	minCov, minConf, maxConflicts := limits(t)
	conflicts := a.UnresolvedConflicts()
	answered, total := a.CriticalQuestions()

	covMeasured := a.Coverage != 0 || a.EstimatedFiles > 0
	confMeasured := a.Confidence != 0 || len(a.Findings) > 0
	n := 2
	if covMeasured {
		n++
	}
	if confMeasured {
		n++
	}
	// Sized exactly and set in place, field by field (the slice is new, so
	// zero): one allocation, no appends, no Criterion copied in.
	crit := make([]Criterion, n)
	c := crit
	if covMeasured {
		c[0].set(CriterionCoverage, a.CoverageRatio(), minCov)
		c = c[1:]
	}
	if confMeasured {
		c[0].set(CriterionConfidence, a.AverageConfidence(), minConf)
		c = c[1:]
	}
	c[0].Name, c[0].Value, c[0].Threshold, c[0].Met = CriterionConflicts, float64(conflicts), float64(maxConflicts), conflicts <= maxConflicts
	c[1].Name, c[1].Value, c[1].Threshold, c[1].Met = CriterionQuestions, float64(answered), float64(total), t.AllowUnanswered || answered >= total
	return crit
}

// set makes c, zero, the criterion name of a ratio v held to at least min.
func (c *Criterion) set(name string, v, min float64) {
	c.Name, c.Value, c.Threshold, c.Met = name, v, min, atLeast(v, min)
}

// Decide returns Converged when every criterion is met by h.Current, and
// Continue with the criteria otherwise. A nil h continues.
func (ThresholdsMet) Decide(h *History) Decision {
	if h == nil || !researchMeasured(&h.Current) {
		return Decision{}
	}
	crit := evaluate(&h.Current, &h.Thresholds)
	for i := range crit {
		if !crit[i].Met {
			return Decision{Criteria: crit}
		}
	}
	return Decision{Verdict: Converged, Reason: joinCriteria("converged: ", crit), Criteria: crit}
}

// appendComparison appends e.g. "0.88 ≥ 0.70" or "0.65 < 0.70". Values are
// shown with two decimals, or more when two decimals would make an unmet
// comparison read "0.70 < 0.70".
func appendComparison(b []byte, v, min float64, met bool) []byte {
	prec := 2
	if !met {
		for ; prec < 6; prec++ {
			if !sameFixed(v, min, prec) {
				break
			}
		}
	}
	b = appendFixed(b, v, prec)
	if met {
		b = append(b, " ≥ "...)
	} else {
		b = append(b, " < "...)
	}
	return appendFixed(b, min, prec)
}

var pow10 = [...]float64{1, 10, 100, 1e3, 1e4, 1e5, 1e6}

// scaled returns v·10^prec rounded to an integer, and false when that cannot
// be done exactly as strconv would: v negative or large, prec large, or the
// scaled value on a tie (x.5), where the product's rounding hides on which
// side of the tie v lies. Rounding is monotonic, so off a tie the product
// rounds like v.
func scaled(v float64, prec int) (uint64, bool) {
	if !(v >= 0 && v < 1e9) || prec >= len(pow10) {
		return 0, false
	}
	r := v * pow10[prec]
	if r-math.Floor(r) == 0.5 {
		return 0, false
	}
	return uint64(math.Round(r)), true
}

// sameFixed reports whether v and w read the same with prec decimals.
func sameFixed(v, w float64, prec int) bool {
	if n, ok := scaled(v, prec); ok {
		if m, ok := scaled(w, prec); ok {
			return n == m
		}
	}
	var vb, wb [32]byte
	return string(strconv.AppendFloat(vb[:0], v, 'f', prec, 64)) == string(strconv.AppendFloat(wb[:0], w, 'f', prec, 64))
}

// appendFixed appends v with prec decimals exactly as
// strconv.AppendFloat(b, v, 'f', prec, 64) does, several times faster for
// the small non-negative values of criteria.
func appendFixed(b []byte, v float64, prec int) []byte {
	n, ok := scaled(v, prec)
	if !ok {
		return strconv.AppendFloat(b, v, 'f', prec, 64)
	}
	scale := uint64(pow10[prec])
	b = strconv.AppendUint(b, n/scale, 10)
	if prec == 0 {
		return b
	}
	b = append(b, '.')
	frac := n % scale
	for d := scale / 10; d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return b
}

// joinCriteria returns prefix followed by the criteria, e.g.
// "converged: coverage 0.88 ≥ 0.70, confidence 0.91 ≥ 0.80".
func joinCriteria(prefix string, crit []Criterion) string {
	b := make([]byte, 0, 128)
	b = append(b, prefix...)
	for i := range crit {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, crit[i].Name...)
		n := len(b)
		if b = crit[i].appendDetail(append(b, ' ')); len(b) == n+1 {
			b = b[:n]
		}
	}
	return string(b)
}

// HighConfidence stops a loop whose quality is exceptionally high: coverage ≥
// h.Thresholds.EarlyCoverage (default 0.85) and average confidence ≥
// h.Thresholds.EarlyConfidence (default 0.90) in the latest assessment
// (h.Current). It then returns verdict EarlyExit with the two criteria and a
// reason such as "high confidence reached: coverage 0.88 ≥ 0.85, confidence
// 0.92 ≥ 0.90 (skipped 2 potential iterations)"; the skipped iterations are
// mentioned when the loop has a limit and some remain. Otherwise it returns
// Continue with no criteria (those of [ThresholdsMet] say what is missing).
// A negative level disables the early exit. A NaN never reaches a level;
// +Inf reaches any.
type HighConfidence struct{}

// Decide returns EarlyExit when both levels are reached, Continue otherwise.
func (HighConfidence) Decide(h *History) Decision {
	cov, conf, minCov, minConf, ok := highConfidence(h)
	if !ok {
		return Decision{}
	}
	crit := []Criterion{
		{Name: CriterionCoverage, Value: cov, Threshold: minCov, Met: true},
		{Name: CriterionConfidence, Value: conf, Threshold: minConf, Met: true},
	}
	reason := joinCriteria("high confidence reached: ", crit)
	if r := h.Remaining(); r > 0 {
		reason += " (skipped " + plural(r, "potential iteration") + ")"
	}
	return Decision{Verdict: EarlyExit, Reason: reason, Criteria: crit}
}

// highConfidence reports whether [HighConfidence] exits early from h, with
// the measured coverage and confidence and the levels they are held to.
func highConfidence(h *History) (cov, conf, minCov, minConf float64, ok bool) {
	if h == nil {
		return 0, 0, 0, 0, false
	}
	minCov, minConf = earlyLevels(&h.Thresholds)
	if minCov < 0 || minConf < 0 {
		return 0, 0, 0, 0, false
	}
	cov, conf = h.Current.CoverageRatio(), h.Current.AverageConfidence()
	return cov, conf, minCov, minConf, atLeast(cov, minCov) && atLeast(conf, minConf)
}

// plural returns e.g. "1 potential iteration" or "2 potential iterations".
func plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}

// IterationLimit stops a loop that has run h.MaxIterations iterations
// (h.Iteration ≥ h.MaxIterations) without another policy stopping it first:
// partial convergence, verdict MaxIterations with a reason such as "max
// iterations reached: 4 of 4". With Escalate it returns Escalate instead,
// handing the decision to a human. A MaxIterations of 0 (or less) means
// unlimited: IterationLimit then never stops.
//
// The zero value reports MaxIterations. IterationLimit is a plain value, safe
// for concurrent use.
type IterationLimit struct {
	Escalate bool `json:"escalate,omitempty"`
}

// Decide returns MaxIterations (or Escalate) at the limit, Continue before it.
func (l IterationLimit) Decide(h *History) Decision {
	if !atLimit(h) {
		return Decision{}
	}
	reason := "max iterations reached: " + strconv.Itoa(h.Iteration) + " of " + strconv.Itoa(h.MaxIterations)
	if l.Escalate {
		return Decision{Verdict: Escalate, Reason: reason + "; escalating"}
	}
	return Decision{Verdict: MaxIterations, Reason: reason}
}

// atLimit reports whether h has run its iteration limit: whether
// [IterationLimit] stops.
func atLimit(h *History) bool {
	return h != nil && h.MaxIterations > 0 && h.Iteration >= h.MaxIterations
}

// NoProgress halts a loop whose work remaining has not changed for After
// consecutive assessments (h.Unchanged ≥ After; default 2): verdict Stuck,
// reason e.g. "stuck: work remaining unchanged for 2 iterations: Phase_6
// Phase_7". Only a non-empty work remaining can be stuck (see
// [History.Observe]).
//
// A zero After selects the default. NoProgress is a plain value, safe for
// concurrent use.
type NoProgress struct {
	After int `json:"after,omitempty"`
}

// Validate returns an error matching [ErrInvalidPolicy] when After is
// negative.
func (s NoProgress) Validate() error { return checkCount("NoProgress", "After", s.After) }

// Decide returns Stuck once the work remaining has been unchanged long enough.
func (s NoProgress) Decide(h *History) Decision {
	if !s.stuck(h) {
		return Decision{}
	}
	return Decision{Verdict: Stuck, Reason: "stuck: work remaining unchanged for " +
		plural(h.Unchanged, "iteration") + ": " + strings.Join(h.WorkRemaining, " ")}
}

// stuck reports whether the work remaining of h has been unchanged long
// enough to stop.
func (s NoProgress) stuck(h *History) bool {
	after := countOr(s.After, defaultStuckAfter)
	return h != nil && h.Unchanged >= after && after >= 0
}

// Failures aborts a loop after h.FailureThreshold consecutive failed
// iterations (h.ConsecutiveFailures ≥ the threshold; default 3, the engine
// sets it from its failure threshold): verdict Aborted, reason e.g.
// "aborting after 3 consecutive failures". A successful iteration resets the
// count ([History.Complete]). A negative threshold never aborts.
type Failures struct{}

// Decide returns Aborted once the consecutive failures reach the threshold.
func (Failures) Decide(h *History) Decision {
	if !failing(h) {
		return Decision{}
	}
	return Decision{Verdict: Aborted, Reason: "aborting after " + plural(h.ConsecutiveFailures, "consecutive failure")}
}

// failing reports whether the consecutive failures of h reach its failure
// threshold: whether [Failures] aborts.
func failing(h *History) bool {
	if h == nil {
		return false
	}
	threshold := countOr(h.FailureThreshold, DefaultFailureThreshold)
	return h.ConsecutiveFailures >= threshold && threshold >= 0
}

// Done converges when the host reports its work complete
// (h.Current.Complete): verdict Converged, reason "work complete".
type Done struct{}

// Decide returns Converged when the latest assessment is complete.
func (Done) Decide(h *History) Decision {
	if h == nil || !h.Current.Complete {
		return Decision{}
	}
	return Decision{Verdict: Converged, Reason: "work complete"}
}

// Passing converges when the quality checks pass
// (h.Current.Signals.Passing(): the tests, if run, passed and the review, if
// any, approved): verdict Converged, reason "tests passed and review
// approved" (or "tests passed", "review approved" when only one was run).
// This is the "proceed" decision of a validation loop.
type Passing struct{}

// Decide returns Converged when the latest assessment's checks pass.
func (Passing) Decide(h *History) Decision {
	if h == nil || !h.Current.Signals.Passing() {
		return Decision{}
	}
	s := &h.Current.Signals
	reason := "tests passed and review approved"
	switch {
	case s.Review == nil:
		reason = "tests passed"
	case s.Tests == nil:
		reason = "review approved"
	}
	return Decision{Verdict: Converged, Reason: reason}
}
