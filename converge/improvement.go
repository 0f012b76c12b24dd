package converge

import (
	"strconv"

	"github.com/refine-go/refine/gap"
)

// Recommendation is what an [Outlook] advises.
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
)

// The constants of the forecast (see [Forecast]).
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

// Outlook is what [Forecast] expects of another iteration: how likely it is
// to improve the work, how much it may gain, and the advice that follows.
// [Outlook.Reason] explains the advice, quoting the values it was decided by
// (score trend and variance, fixable share of the gaps).
type Outlook struct {
	// Likelihood in [0, 1] that another iteration improves the work: the
	// share of the gaps that are fixable (1 with no gaps), halved when the
	// scores plateau.
	Likelihood float64 `json:"likelihood"`
	// ExpectedGain is fixable share × mean gap severity × 0.7 (0.3 when the
	// scores plateau).
	ExpectedGain float64 `json:"expected_gain"`
	// DiminishingReturns reports that the scores plateau: at least 3 scores
	// and a population variance of the last 3 below 0.02.
	DiminishingReturns bool `json:"diminishing_returns"`
	// Recommendation is the advice.
	Recommendation Recommendation `json:"recommendation"`

	// trend is the least-squares slope of the scores per iteration.
	trend float64
	// variance is the population variance of the last 3 scores.
	variance float64
	// fixableRatio is the share of the gaps that are fixable (1 with no
	// gaps) and severity their mean severity (0 with no gaps).
	fixableRatio, severity float64
	// gaps is the number of gaps assessed; remaining the iterations that may
	// still run, or -1 when unlimited ([History.Remaining]).
	gaps, remaining int
}

// Forecast estimates whether another iteration is worth running (the
// improvement assessment of seed 001), from the quality scores of the
// records of h (Record.Score, the window h.Recent) and the gaps currently
// open:
//
//   - the trend is the least-squares slope of the scores against
//     Record.Iteration (score gained per iteration); 0 with fewer than two
//     scores or a single iteration;
//   - the scores plateau (DiminishingReturns) when there are at least 3 and
//     the population variance of the last 3 is below 0.02;
//   - the fixable ratio is fixable gaps / gaps and the severity the mean
//     severity of the gaps; with no gaps, 1 and 0;
//   - ExpectedGain = fixable ratio × severity × (0.3 if plateau, else 0.7);
//   - Likelihood = fixable ratio × (0.5 if plateau, else 1).
//
// The recommendation is the first that applies of: no iteration remains →
// accept; no gap → accept (nothing left to fix; the case is undefined in the
// original rules, which divide by zero); plateau and trend < 0.01 → escalate;
// expected gain < 0.1 → accept; fixable ratio < 0.3 → escalate; otherwise
// iterate.
//
// Hosts that do not report [gap.Assessment.Score] have flat scores of 0,
// which plateau from the third record on. A score that is not finite (NaN,
// ±Inf) is no measurement of a trend: the records that have one are left
// out of the trend and the variance, which are those of the other scores
// (the last 3 finite ones for the variance). A nil h is an empty history
// of an unlimited loop. Forecast does not allocate.
func Forecast(h *History, gaps []gap.Gap) Outlook {
	o := Outlook{remaining: -1, gaps: len(gaps)}
	scores := 0
	if h != nil {
		o.remaining = h.Remaining()
		o.trend = trend(h.Recent)
		o.variance, scores = recentVariance(h.Recent, plateauScores)
	}
	o.DiminishingReturns = scores >= plateauScores && o.variance < plateauVariance

	o.fixableRatio = fixableRatio(gaps) // 1 with no gaps
	o.severity = meanSeverity(gaps)     // 0 with no gaps
	factor := 0.7
	o.Likelihood = o.fixableRatio
	if o.DiminishingReturns {
		factor = 0.3
		o.Likelihood *= 0.5
	}
	o.ExpectedGain = o.fixableRatio * o.severity * factor

	switch {
	case o.remaining == 0, o.gaps == 0:
		o.Recommendation = RecommendAccept
	case o.DiminishingReturns && o.trend < minTrend:
		o.Recommendation = RecommendEscalate
	case o.ExpectedGain < minExpectedGain:
		o.Recommendation = RecommendAccept
	case o.fixableRatio < minFixableRatio:
		o.Recommendation = RecommendEscalate
	default:
		o.Recommendation = RecommendIterate
	}
	return o
}

// fixableRatio returns the share of gaps that are Fixable: the fixability
// ratio with which iteration detection estimates the likelihood that another
// iteration improves the work. It is 1 for no gaps (nothing stands in the
// way).
func fixableRatio(gaps []gap.Gap) float64 {
	if len(gaps) == 0 {
		return 1
	}
	n := 0
	for i := range gaps {
		if gaps[i].Fixable {
			n++
		}
	}
	return float64(n) / float64(len(gaps))
}

// meanSeverity returns the average Severity of gaps (the average trigger
// severity of iteration detection), or 0 for no gaps.
func meanSeverity(gaps []gap.Gap) float64 {
	if len(gaps) == 0 {
		return 0
	}
	var sum float64
	for i := range gaps {
		sum += gaps[i].Severity
	}
	return sum / float64(len(gaps))
}

// Reason explains which rule of [Forecast] decided the recommendation, e.g.
// "no iterations remain", "no gaps left to fix", "diminishing returns:
// expected gain 0.05 < 0.10", "scores plateaued: variance 0.0067 < 0.02,
// trend 0.002 < 0.01", "only 20% of the gaps are fixable (< 30%)" or
// "expected gain 0.24 ≥ 0.10, 100% of the gaps fixable".
func (o Outlook) Reason() string {
	switch {
	case o.remaining == 0:
		return "no iterations remain"
	case o.gaps == 0:
		return "no gaps left to fix"
	case o.DiminishingReturns && o.trend < minTrend:
		b := append([]byte("scores plateaued: variance "), compare(o.variance, plateauVariance)...)
		b = append(b, ", trend "...)
		return string(append(b, compare(o.trend, minTrend)...))
	case o.ExpectedGain < minExpectedGain:
		return "diminishing returns: expected gain " + compare(o.ExpectedGain, minExpectedGain)
	case o.fixableRatio < minFixableRatio:
		return "only " + percent(o.fixableRatio) + " of the gaps are fixable (< " + percent(minFixableRatio) + ")"
	}
	return "expected gain " + string(appendComparison(nil, o.ExpectedGain, minExpectedGain, true)) +
		", " + percent(o.fixableRatio) + " of the gaps fixable"
}

// compare returns "v < limit", with enough decimals to tell them apart.
func compare(v, limit float64) string { return string(appendComparison(nil, v, limit, false)) }

func percent(r float64) string { return strconv.FormatFloat(r*100, 'f', 0, 64) + "%" }

// finite reports whether f is neither NaN nor infinite.
func finite(f float64) bool { return f-f == 0 }

// trend returns the least-squares slope of Score against Iteration, over
// the records whose Score is finite.
func trend(recs []Record) float64 {
	var mx, my float64
	n := 0
	for i := range recs {
		if finite(recs[i].Score) {
			mx += float64(recs[i].Iteration)
			my += recs[i].Score
			n++
		}
	}
	if n < 2 {
		return 0
	}
	mx, my = mx/float64(n), my/float64(n)
	var sxy, sxx float64
	for i := range recs {
		if finite(recs[i].Score) {
			dx := float64(recs[i].Iteration) - mx
			sxy += dx * (recs[i].Score - my)
			sxx += dx * dx
		}
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// recentVariance returns the population variance of the last n finite
// scores of the records and how many scores that was.
func recentVariance(recs []Record, n int) (float64, int) {
	start, k := len(recs), 0
	for start > 0 && k < n {
		start--
		if finite(recs[start].Score) {
			k++
		}
	}
	if k == 0 {
		return 0, 0
	}
	recs = recs[start:]
	var mean float64
	for i := range recs {
		if finite(recs[i].Score) {
			mean += recs[i].Score
		}
	}
	mean /= float64(k)
	var v float64
	for i := range recs {
		if finite(recs[i].Score) {
			d := recs[i].Score - mean
			v += d * d
		}
	}
	return v / float64(k), k
}

// Diminishing stops a loop when [Forecast] (over h and its open gaps h.Gaps)
// no longer recommends iterating:
//
//   - accept because no iteration remains → MaxIterations, "max iterations
//     reached: 4 of 4";
//   - accept because there is no gap → Converged, "no gaps left to fix";
//   - accept because of a small expected gain → Plateau, e.g. "diminishing
//     returns: expected gain 0.05 < 0.10";
//   - escalate → Escalate, e.g. "escalate: only 20% of the gaps are fixable
//     (< 30%)";
//   - iterate → Continue.
//
// It judges nothing before the second record (a trend needs two scores), so
// the initial assessment alone never stops a loop. It relies on the host
// reporting [gap.Assessment.Score] (see [Forecast]). Decide does not allocate
// when it continues. Diminishing is not part of [Default].
type Diminishing struct{}

// Decide maps the recommendation of [Forecast] to a decision.
func (Diminishing) Decide(h *History) Decision {
	if h == nil || len(h.Recent) < 2 {
		return Decision{}
	}
	o := Forecast(h, h.Gaps)
	switch o.Recommendation {
	case RecommendAccept:
		switch {
		case o.remaining == 0:
			return Decision{Verdict: MaxIterations, Reason: "max iterations reached: " +
				strconv.Itoa(h.Iteration) + " of " + strconv.Itoa(h.MaxIterations)}
		case o.gaps == 0:
			return Decision{Verdict: Converged, Reason: o.Reason()}
		}
		return Decision{Verdict: Plateau, Reason: o.Reason()}
	case RecommendEscalate:
		return Decision{Verdict: Escalate, Reason: "escalate: " + o.Reason()}
	}
	return Decision{}
}
