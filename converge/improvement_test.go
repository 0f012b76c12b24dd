package converge

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/gap"
)

// gaps returns n gaps of the given severity, the first fixable of them
// fixable.
func gaps(n, fixable int, severity float64) []gap.Gap {
	out := make([]gap.Gap, n)
	for i := range out {
		out[i] = gap.Gap{Kind: gap.Coverage, Target: string(rune('a' + i)), Severity: severity, Fixable: i < fixable}
	}
	return out
}

// loop returns a history with the scores (one per iteration from 0) and the
// gaps open at the last assessment.
func loop(max int, g []gap.Gap, scores ...float64) *History {
	steps := scored(scores...)
	steps[len(steps)-1].gaps = g
	return run(max, 0, steps...)
}

func TestForecast(t *testing.T) {
	tests := []struct {
		name       string
		h          *History
		gaps       []gap.Gap
		want       Outlook
		wantReason string
	}{
		{
			name: "seed001/plateau_variance_below_0.02", h: loop(0, nil, 0.5, 0.6, 0.7), gaps: gaps(2, 2, 0.8),
			want: Outlook{Likelihood: 0.5, ExpectedGain: 0.24, trend: 0.1, variance: 0.02 / 3, fixableRatio: 1, severity: 0.8,
				gaps: 2, remaining: -1, DiminishingReturns: true, Recommendation: RecommendIterate},
			wantReason: "expected gain 0.24 ≥ 0.10, 100% of the gaps fixable",
		},
		{
			name: "seed001/variance_above_0.02_no_plateau", h: loop(0, nil, 0.2, 0.5, 0.6), gaps: gaps(2, 2, 0.8),
			want: Outlook{Likelihood: 1, ExpectedGain: 0.56, trend: 0.2, variance: 0.26 / 9, fixableRatio: 1, severity: 0.8,
				gaps: 2, remaining: -1, Recommendation: RecommendIterate},
			wantReason: "expected gain 0.56 ≥ 0.10, 100% of the gaps fixable",
		},
		{
			name: "seed001/plateau_needs_3_scores", h: loop(0, nil, 0.5, 0.5), gaps: gaps(2, 2, 0.8),
			want: Outlook{Likelihood: 1, ExpectedGain: 0.56, fixableRatio: 1, severity: 0.8,
				gaps: 2, remaining: -1, Recommendation: RecommendIterate},
			wantReason: "expected gain 0.56 ≥ 0.10, 100% of the gaps fixable",
		},
		{
			name: "seed001/recommendation_accept_when_no_iterations_remain", h: loop(2, nil, 0.2, 0.5, 0.6), gaps: gaps(2, 2, 0.8),
			want: Outlook{Likelihood: 1, ExpectedGain: 0.56, trend: 0.2, variance: 0.26 / 9, fixableRatio: 1, severity: 0.8,
				gaps: 2, remaining: 0, Recommendation: RecommendAccept},
			wantReason: "no iterations remain",
		},
		{
			name: "seed001/recommendation_escalate_when_plateau_and_trend_below_0.01", h: loop(5, nil, 0.6, 0.6, 0.6), gaps: gaps(1, 1, 0.9),
			want: Outlook{Likelihood: 0.5, ExpectedGain: 0.27, fixableRatio: 1, severity: 0.9,
				gaps: 1, remaining: 3, DiminishingReturns: true, Recommendation: RecommendEscalate},
			wantReason: "scores plateaued: variance 0.00 < 0.02, trend 0.00 < 0.01",
		},
		{
			name: "seed001/recommendation_accept_when_expected_gain_below_0.1", h: loop(0, nil, 0.2, 0.5, 0.6), gaps: gaps(1, 1, 0.1),
			want: Outlook{Likelihood: 1, ExpectedGain: 0.07, trend: 0.2, variance: 0.26 / 9, fixableRatio: 1, severity: 0.1,
				gaps: 1, remaining: -1, Recommendation: RecommendAccept},
			wantReason: "diminishing returns: expected gain 0.07 < 0.10",
		},
		{
			name: "seed001/recommendation_escalate_when_fixability_below_0.3", h: loop(0, nil, 0.2, 0.5, 0.8), gaps: gaps(4, 1, 0.9),
			want: Outlook{Likelihood: 0.25, ExpectedGain: 0.1575, trend: 0.3, variance: 0.06, fixableRatio: 0.25, severity: 0.9,
				gaps: 4, remaining: -1, Recommendation: RecommendEscalate},
			wantReason: "only 25% of the gaps are fixable (< 30%)",
		},
		{
			name: "no_gaps_accept_nothing_to_fix", h: loop(0, nil, 0.2, 0.5, 0.6),
			want: Outlook{Likelihood: 1, trend: 0.2, variance: 0.26 / 9, fixableRatio: 1,
				remaining: -1, Recommendation: RecommendAccept},
			wantReason: "no gaps left to fix",
		},
		{
			name: "no_gaps_accept_even_when_plateau", h: loop(0, nil, 0.6, 0.6, 0.6),
			want:       Outlook{Likelihood: 0.5, fixableRatio: 1, remaining: -1, DiminishingReturns: true, Recommendation: RecommendAccept},
			wantReason: "no gaps left to fix",
		},
		{
			name: "trend_is_least_squares_slope", h: loop(0, nil, 0.2, 0.4, 0.9), gaps: gaps(2, 2, 0.5),
			want: Outlook{Likelihood: 1, ExpectedGain: 0.35, trend: 0.35, variance: 0.26 / 3, fixableRatio: 1, severity: 0.5,
				gaps: 2, remaining: -1, Recommendation: RecommendIterate},
			wantReason: "expected gain 0.35 ≥ 0.10, 100% of the gaps fixable",
		},
		{
			name: "variance_of_last_3_trend_over_window", h: loop(0, nil, 0.0, 1.0, 0.5, 0.5, 0.5), gaps: gaps(1, 1, 1),
			want: Outlook{Likelihood: 0.5, ExpectedGain: 0.3, trend: 0.05, variance: 0, fixableRatio: 1, severity: 1,
				gaps: 1, remaining: -1, DiminishingReturns: true, Recommendation: RecommendIterate},
			wantReason: "expected gain 0.30 ≥ 0.10, 100% of the gaps fixable",
		},
		{
			name: "nil_history", gaps: gaps(2, 1, 0.5),
			want: Outlook{Likelihood: 0.5, ExpectedGain: 0.175, fixableRatio: 0.5, severity: 0.5,
				gaps: 2, remaining: -1, Recommendation: RecommendIterate},
			wantReason: "expected gain 0.17 ≥ 0.10, 50% of the gaps fixable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Forecast(tt.h, tt.gaps)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(Outlook{}), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("Forecast (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantReason, got.Reason()); diff != "" {
				t.Errorf("Reason (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiminishing(t *testing.T) {
	tests := []struct {
		name string
		h    *History
		want Decision
	}{
		{name: "initial_assessment_alone_never_stops", h: loop(0, nil, 0.5), want: Decision{}},
		{name: "seed001/iterate_continues", h: loop(0, gaps(2, 2, 0.8), 0.2, 0.5, 0.6), want: Decision{}},
		{name: "seed001/accept_small_gain_is_plateau", h: loop(0, gaps(1, 1, 0.1), 0.2, 0.5, 0.6),
			want: Decision{Verdict: Plateau, Reason: "diminishing returns: expected gain 0.07 < 0.10"}},
		{name: "seed001/accept_out_of_iterations_is_max_iterations", h: loop(2, gaps(2, 2, 0.8), 0.2, 0.5, 0.6),
			want: Decision{Verdict: MaxIterations, Reason: "max iterations reached: 2 of 2"}},
		{name: "accept_no_gaps_is_converged", h: loop(0, nil, 0.2, 0.5),
			want: Decision{Verdict: Converged, Reason: "no gaps left to fix"}},
		{name: "seed001/escalate_on_flat_plateau", h: loop(0, gaps(1, 1, 0.9), 0.6, 0.6, 0.6),
			want: Decision{Verdict: Escalate, Reason: "escalate: scores plateaued: variance 0.00 < 0.02, trend 0.00 < 0.01"}},
		{name: "seed001/escalate_on_low_fixability", h: loop(0, gaps(4, 1, 0.9), 0.2, 0.5, 0.8),
			want: Decision{Verdict: Escalate, Reason: "escalate: only 25% of the gaps are fixable (< 30%)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, (Diminishing{}).Decide(tt.h)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiminishingDoesNotAllocateWhenContinuing(t *testing.T) {
	h := loop(0, gaps(2, 2, 0.8), 0.2, 0.5, 0.6)
	if got := testing.AllocsPerRun(100, func() { (Diminishing{}).Decide(h) }); got != 0 {
		t.Errorf("allocs per Decide = %v, want 0", got)
	}
}

// TestForecastLeavesNonFiniteScoresOut (issue 28, item 5): the trend and
// the variance of Forecast are those of the finite scores; a NaN or an
// infinity neither hides a plateau nor makes the trend NaN. (Mutants
// caught: either of the finite checks of trend or recentVariance
// dropped, which made the trend or the variance NaN.)
func TestForecastLeavesNonFiniteScoresOut(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	h := run(0, 0, scored(0.2, nan, 0.4, inf, 0.6, math.Inf(-1))...)
	if tr := trend(h.Recent); math.Abs(tr-0.1) > 1e-9 {
		t.Errorf("trend %v, want 0.1 (scores 0.2, 0.4, 0.6 at iterations 0, 2, 4)", tr)
	}
	if v, n := recentVariance(h.Recent, 3); n != 3 || math.Abs(v-0.08/3) > 1e-9 {
		t.Errorf("variance %v of %d scores, want %v of 3", v, n, 0.08/3)
	}
	flat := run(0, 0, scored(0.5, 0.5, nan, 0.5, inf)...)
	o := Forecast(flat, []gap.Gap{{Fixable: true, Severity: 1}})
	if !o.DiminishingReturns || o.Recommendation != RecommendEscalate {
		t.Errorf("flat finite scores among NaN and +Inf: %+v, want a plateau, escalate", o)
	}
	if tr, _ := recentVariance(run(0, 0, scored(nan, inf)...).Recent, 3); tr != 0 {
		t.Errorf("no finite score: variance %v, want 0", tr)
	}
	if tr := trend(run(0, 0, scored(0.5, nan, inf)...).Recent); tr != 0 {
		t.Errorf("one finite score: trend %v, want 0", tr)
	}
}

func TestStats(t *testing.T) {
	tests := []struct {
		name         string
		gaps         []gap.Gap
		wantFixable  float64
		wantSeverity float64
	}{
		{"seed001/empty_fixable_1_severity_0", nil, 1, 0},
		{"seed001/fixability_ratio_and_average_severity", []gap.Gap{
			{Fixable: true, Severity: 1},
			{Fixable: false, Severity: 0.7},
			{Fixable: true, Severity: 0.4},
			{Fixable: true, Severity: 0.5},
		}, 0.75, 0.65},
		{"none_fixable", []gap.Gap{{Severity: 0.2}}, 0, 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []float64{fixableRatio(tt.gaps), meanSeverity(tt.gaps)}
			if diff := cmp.Diff([]float64{tt.wantFixable, tt.wantSeverity}, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("(fixableRatio, meanSeverity) (-want +got):\n%s", diff)
			}
		})
	}
}
