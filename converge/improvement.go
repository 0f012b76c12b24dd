package converge

import (
	"strconv"

	"github.com/refine-go/refine/gap"
)

// Recommendation is what an [Improvement] assessment advises.
type Recommendation string

// Recommendations.
const (
	// RecommendIterate: another iteration is worth it.
	RecommendIterate Recommendation = "iterate"
	// RecommendAccept: accept the result as it is (out of iterations,
	// nothing left to fix, or too little to gain).
	RecommendAccept Recommendation = "accept"
	// RecommendEscalate: iterating does not help; a human must decide.
	RecommendEscalate Recommendation = "escalate"
	// RecommendAbort: give up. [Assess] never returns it (the rules it
	// follows have no abort case); it is there for hosts that make their own
	// assessments.
	RecommendAbort Recommendation = "abort"
)

// The constants of the improvement assessment.
const (
	// plateauVariance: the last plateauScores scores plateau when their
	// population variance is below it.
	plateauVariance = 0.02
	plateauScores   = 3
	// minTrend: a plateau whose trend is below it escalates.
	minTrend = 0.01
	// minExpectedGain: a smaller expected gain is not worth an iteration.
	minExpectedGain = 0.1
	// minFixableRatio: with fewer fixable gaps, escalate.
	minFixableRatio = 0.3
)

// Improvement is the assessment of how much another iteration can be
// expected to improve the work (see [Assess]).
type Improvement struct {
	// Likelihood in [0, 1] that another iteration improves the work:
	// FixableRatio, halved when the scores plateau.
	Likelihood float64 `json:"likelihood"`
	// ExpectedGain is FixableRatio × Severity × 0.7 (0.3 when the scores
	// plateau).
	ExpectedGain float64 `json:"expected_gain"`
	// Trend is the least-squares slope of the scores per iteration.
	Trend float64 `json:"trend"`
	// Variance is the population variance of the last 3 scores.
	Variance float64 `json:"variance"`
	// FixableRatio is the share of the gaps that are fixable (1 with no gaps).
	FixableRatio float64 `json:"fixable_ratio"`
	// Severity is the mean severity of the gaps (0 with no gaps).
	Severity float64 `json:"severity"`
	// Gaps is the number of gaps assessed.
	Gaps int `json:"gaps"`
	// Remaining is the number of iterations that may still run, or -1 when
	// unlimited ([History.Remaining]).
	Remaining int `json:"remaining"`
	// DiminishingReturns reports that the scores plateau: at least 3 scores
	// and a variance of the last 3 below 0.02.
	DiminishingReturns bool `json:"diminishing_returns"`
	// Recommendation is the advice.
	Recommendation Recommendation `json:"recommendation"`
}

// Assess estimates whether another iteration is worth running, from the
// quality scores of the records of h (Record.Score, the window h.Recent) and
// the gaps currently open:
//
//   - Trend is the least-squares slope of the scores against
//     Record.Iteration (score gained per iteration); 0 with fewer than two
//     scores or a single iteration.
//   - The scores plateau (DiminishingReturns) when there are at least 3 and
//     the population variance of the last 3 is below 0.02.
//   - FixableRatio = fixable gaps / gaps, Severity = mean severity of the
//     gaps; with no gaps, 1 and 0.
//   - ExpectedGain = FixableRatio × Severity × (0.3 if plateau, else 0.7).
//   - Likelihood = FixableRatio × (0.5 if plateau, else 1).
//
// The recommendation is the first that applies of: no iteration remains →
// accept; no gap → accept (nothing left to fix; the case is undefined in the
// original rules, which divide by zero); plateau and trend < 0.01 → escalate;
// expected gain < 0.1 → accept; fixable ratio < 0.3 → escalate; otherwise
// iterate.
//
// Hosts that do not report [gap.Assessment.Score] have flat scores of 0,
// which plateau from the third record on. A nil h is an empty history of an
// unlimited loop. Assess does not allocate.
func Assess(h *History, gaps []gap.Gap) Improvement {
	im := Improvement{Remaining: -1, Gaps: len(gaps)}
	scores := 0
	if h != nil {
		im.Remaining = h.Remaining()
		im.Trend = trend(h.Recent)
		im.Variance, scores = recentVariance(h.Recent, plateauScores)
	}
	im.DiminishingReturns = scores >= plateauScores && im.Variance < plateauVariance

	im.FixableRatio = gap.FixableRatio(gaps) // 1 with no gaps
	im.Severity = gap.MeanSeverity(gaps)     // 0 with no gaps
	factor := 0.7
	im.Likelihood = im.FixableRatio
	if im.DiminishingReturns {
		factor = 0.3
		im.Likelihood *= 0.5
	}
	im.ExpectedGain = im.FixableRatio * im.Severity * factor

	switch {
	case im.Remaining == 0, im.Gaps == 0:
		im.Recommendation = RecommendAccept
	case im.DiminishingReturns && im.Trend < minTrend:
		im.Recommendation = RecommendEscalate
	case im.ExpectedGain < minExpectedGain:
		im.Recommendation = RecommendAccept
	case im.FixableRatio < minFixableRatio:
		im.Recommendation = RecommendEscalate
	default:
		im.Recommendation = RecommendIterate
	}
	return im
}

// Reason explains which rule of [Assess] decided the recommendation, e.g.
// "diminishing returns: expected gain 0.05 < 0.10" or "scores plateaued:
// variance 0.0067 < 0.02, trend 0.002 < 0.01".
func (im Improvement) Reason() string {
	switch {
	case im.Remaining == 0:
		return "no iterations remain"
	case im.Gaps == 0:
		return "no gaps left to fix"
	case im.DiminishingReturns && im.Trend < minTrend:
		b := append([]byte("scores plateaued: variance "), compare(im.Variance, plateauVariance)...)
		b = append(b, ", trend "...)
		return string(append(b, compare(im.Trend, minTrend)...))
	case im.ExpectedGain < minExpectedGain:
		return "diminishing returns: expected gain " + compare(im.ExpectedGain, minExpectedGain)
	case im.FixableRatio < minFixableRatio:
		return "only " + percent(im.FixableRatio) + " of the gaps are fixable (< " + percent(minFixableRatio) + ")"
	}
	return "expected gain " + string(appendComparison(nil, im.ExpectedGain, minExpectedGain, true)) +
		", " + percent(im.FixableRatio) + " of the gaps fixable"
}

// compare returns "v < limit", with enough decimals to tell them apart.
func compare(v, limit float64) string { return string(appendComparison(nil, v, limit, false)) }

func percent(r float64) string { return strconv.FormatFloat(r*100, 'f', 0, 64) + "%" }

// trend returns the least-squares slope of Score against Iteration.
func trend(recs []Record) float64 {
	if len(recs) < 2 {
		return 0
	}
	var mx, my float64
	for i := range recs {
		mx += float64(recs[i].Iteration)
		my += recs[i].Score
	}
	n := float64(len(recs))
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range recs {
		dx := float64(recs[i].Iteration) - mx
		sxy += dx * (recs[i].Score - my)
		sxx += dx * dx
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// recentVariance returns the population variance of the scores of the last
// n records and how many scores that was.
func recentVariance(recs []Record, n int) (float64, int) {
	if len(recs) > n {
		recs = recs[len(recs)-n:]
	}
	if len(recs) == 0 {
		return 0, 0
	}
	var mean float64
	for i := range recs {
		mean += recs[i].Score
	}
	mean /= float64(len(recs))
	var v float64
	for i := range recs {
		d := recs[i].Score - mean
		v += d * d
	}
	return v / float64(len(recs)), len(recs)
}

// Diminishing stops a loop when [Assess] (over h and its open gaps h.Gaps)
// no longer recommends iterating:
//
//   - accept because no iteration remains → MaxIterations, "max iterations
//     reached: 4 of 4";
//   - accept because there is no gap → Converged, "no gaps left to fix";
//   - accept because of a small expected gain → Plateau, e.g. "diminishing
//     returns: expected gain 0.05 < 0.10";
//   - escalate → Escalate, e.g. "escalate: only 20% of the gaps are fixable
//     (< 30%)";
//   - iterate → Continue ([Assess] never recommends abort).
//
// It judges nothing before the second record (a trend needs two scores), so
// the initial assessment alone never stops a loop. It relies on the host
// reporting [gap.Assessment.Score] (see [Assess]). Decide does not allocate
// when it continues. Diminishing is not part of [Default].
type Diminishing struct{}

// Decide maps the recommendation of [Assess] to a decision.
func (Diminishing) Decide(h *History) Decision {
	if h == nil || len(h.Recent) < 2 {
		return Decision{}
	}
	im := Assess(h, h.Gaps)
	switch im.Recommendation {
	case RecommendAccept:
		switch {
		case im.Remaining == 0:
			return Decision{Verdict: MaxIterations, Reason: "max iterations reached: " +
				strconv.Itoa(h.Iteration) + " of " + strconv.Itoa(h.MaxIterations)}
		case im.Gaps == 0:
			return Decision{Verdict: Converged, Reason: im.Reason()}
		}
		return Decision{Verdict: Plateau, Reason: im.Reason()}
	case RecommendEscalate:
		return Decision{Verdict: Escalate, Reason: "escalate: " + im.Reason()}
	}
	return Decision{}
}
