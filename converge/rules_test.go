package converge

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
)

// gapKinds maps a criterion of [ThresholdsMet] to the kinds of research gap
// that target it.
var gapKinds = map[string][]gap.Kind{
	CriterionCoverage:   {gap.Coverage},
	CriterionConfidence: {gap.Confidence, gap.Evidence, gap.Pattern, gap.Security, gap.Performance},
	CriterionConflicts:  {gap.ConflictingFindings},
	CriterionQuestions:  {gap.UnansweredQuestion},
}

// targets reports whether gaps holds a gap that targets criterion name.
func targets(gaps []gap.Gap, name string) bool {
	for _, g := range gaps {
		if slices.Contains(gapKinds[name], g.Kind) {
			return true
		}
	}
	return false
}

// checkBlockersAreGaps fails t unless every criterion d leaves unmet is
// targeted by a gap. For coverage and confidence, which are measured in a,
// it also fails when a met criterion has a gap: gap and criterion are one
// comparison against one threshold.
func checkBlockersAreGaps(t *testing.T, d Decision, gaps []gap.Gap) {
	t.Helper()
	for _, c := range d.Criteria {
		has := targets(gaps, c.Name)
		if !c.Met && !has {
			t.Errorf("criterion %s unmet (%s) but no gap targets it; gaps: %v", c.Name, c.Describe(), gaps)
		}
		if c.Met && has && (c.Name == CriterionCoverage || c.Name == CriterionConfidence) {
			t.Errorf("criterion %s met (%s) but a gap targets it; gaps: %v", c.Name, c.Describe(), gaps)
		}
	}
}

// TestOneThresholdsDeclaration: the thresholds are declared once
// (gap.Thresholds, History.Thresholds); the gap analysis and the convergence
// decision read the same values, so a blocker of convergence is always a gap
// the strategy can target.
func TestOneThresholdsDeclaration(t *testing.T) {
	finding := func(id string, conf float64) gap.Finding {
		return gap.Finding{ID: id, Confidence: conf, Citations: []string{id + ":1"}, Sources: []string{"A", "B"}}
	}
	tests := []struct {
		name      string
		th        gap.Thresholds
		a         gap.Assessment
		wantKinds []gap.Kind // kinds of the research gaps, in order
		wantUnmet []string
		wantTh    map[string]float64 // thresholds the criteria report
	}{
		{
			name:      "coverage_0.80_below_0.90_is_gap_and_blocks",
			th:        gap.Thresholds{MinCoverage: 0.9},
			a:         research(0.80, 0.85),
			wantKinds: []gap.Kind{gap.Coverage},
			wantUnmet: []string{CriterionCoverage},
			wantTh:    map[string]float64{CriterionCoverage: 0.9, CriterionConfidence: 0.8},
		},
		{
			name:   "coverage_0.95_meets_0.90_no_gap",
			th:     gap.Thresholds{MinCoverage: 0.9},
			a:      research(0.95, 0.85),
			wantTh: map[string]float64{CriterionCoverage: 0.9},
		},
		{
			name:   "coverage_0.80_meets_default_0.70",
			a:      research(0.80, 0.85),
			wantTh: map[string]float64{CriterionCoverage: gap.Thresholds{}.Effective().MinCoverage, CriterionConfidence: gap.Thresholds{}.Effective().MinConfidence},
		},
		{
			name:      "coverage_from_files_below_0.90",
			th:        gap.Thresholds{MinCoverage: 0.9},
			a:         gap.Assessment{FilesAnalyzed: 8, EstimatedFiles: 10, Confidence: 0.85},
			wantKinds: []gap.Kind{gap.Coverage},
			wantUnmet: []string{CriterionCoverage},
		},
		{
			name:   "coverage_within_tolerance_meets",
			th:     gap.Thresholds{MinCoverage: 0.7},
			a:      research(0.1+0.6, 0.85),
			wantTh: map[string]float64{CriterionCoverage: 0.7},
		},
		{
			name:   "coverage_disabled_requires_nothing",
			th:     gap.Thresholds{MinCoverage: -1},
			a:      research(0.05, 0.85),
			wantTh: map[string]float64{CriterionCoverage: 0},
		},
		{
			name:      "confidence_0.85_below_0.95_is_gap_and_blocks",
			th:        gap.Thresholds{MinConfidence: 0.95},
			a:         research(0.9, 0.85),
			wantKinds: []gap.Kind{gap.Confidence},
			wantUnmet: []string{CriterionConfidence},
			wantTh:    map[string]float64{CriterionConfidence: 0.95},
		},
		{
			name:   "confidence_0.97_meets_0.95_no_gap",
			th:     gap.Thresholds{MinConfidence: 0.95},
			a:      research(0.9, 0.97),
			wantTh: map[string]float64{CriterionConfidence: 0.95},
		},
		{
			name: "confidence_average_of_findings_below_0.90",
			th:   gap.Thresholds{MinConfidence: 0.9},
			a: gap.Assessment{Coverage: 0.9,
				Findings: []gap.Finding{finding("f1", 0.8), finding("f2", 0.95)}}, // average 0.875
			wantKinds: []gap.Kind{gap.Confidence}, // f1
			wantUnmet: []string{CriterionConfidence},
		},
		{
			name:   "confidence_disabled_requires_nothing",
			th:     gap.Thresholds{MinConfidence: -1},
			a:      research(0.9, 0.1),
			wantTh: map[string]float64{CriterionConfidence: 0},
		},
		{
			name:      "both_below_both_gaps",
			th:        gap.Thresholds{MinCoverage: 0.9, MinConfidence: 0.9},
			a:         research(0.5, 0.5),
			wantKinds: []gap.Kind{gap.Coverage, gap.Confidence},
			wantUnmet: []string{CriterionCoverage, CriterionConfidence},
		},
		{
			name:   "both_disabled_no_gap_converges",
			th:     gap.Thresholds{MinCoverage: -1, MinConfidence: -1},
			a:      research(0.01, 0.01),
			wantTh: map[string]float64{CriterionCoverage: 0, CriterionConfidence: 0},
		},
		{
			name: "negative_max_conflicts_tolerates_none",
			th:   gap.Thresholds{MaxConflicts: -1},
			a: gap.Assessment{Coverage: 0.9, Confidence: 0.9,
				Conflicts: []gap.Conflict{{ID: "c1", A: gap.Claim{Source: "A", Statement: "x"}, B: gap.Claim{Source: "B", Statement: "y"}}}},
			wantKinds: []gap.Kind{gap.ConflictingFindings},
			wantUnmet: []string{CriterionConflicts},
			wantTh:    map[string]float64{CriterionConflicts: 0},
		},
		{
			// A conflict within the tolerance is still a gap to work on; it
			// does not block convergence.
			name: "conflict_within_default_tolerance",
			a: gap.Assessment{Coverage: 0.9, Confidence: 0.9,
				Conflicts: []gap.Conflict{{ID: "c1", A: gap.Claim{Source: "A", Statement: "x"}, B: gap.Claim{Source: "B", Statement: "y"}}}},
			wantKinds: []gap.Kind{gap.ConflictingFindings},
			wantTh:    map[string]float64{CriterionConflicts: float64(gap.Thresholds{}.Effective().MaxConflicts)},
		},
		{
			name:      "unanswered_critical_question_blocks",
			a:         gap.Assessment{Coverage: 0.9, Confidence: 0.9, Questions: []gap.Question{{Text: "q", Critical: true}}},
			wantKinds: []gap.Kind{gap.UnansweredQuestion},
			wantUnmet: []string{CriterionQuestions},
		},
		{
			name:      "allow_unanswered_reports_the_gap_without_blocking",
			th:        gap.Thresholds{AllowUnanswered: true},
			a:         gap.Assessment{Coverage: 0.9, Confidence: 0.9, Questions: []gap.Question{{Text: "q", Critical: true}}},
			wantKinds: []gap.Kind{gap.UnansweredQuestion},
		},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := under(tt.th, at(1, 4, tt.a))
			gaps, err := gap.Default().Analyze(ctx, h.Current, h.Thresholds)
			if err != nil {
				t.Fatalf("Analyze: %v", err)
			}
			var kinds []gap.Kind
			for _, g := range gaps {
				kinds = append(kinds, g.Kind)
			}
			if diff := cmp.Diff(tt.wantKinds, kinds); diff != "" {
				t.Errorf("gap kinds (-want +got):\n%s", diff)
			}

			d := ThresholdsMet{}.Decide(h)
			var unmet []string
			for _, c := range d.Unmet() {
				unmet = append(unmet, c.Name)
			}
			if diff := cmp.Diff(tt.wantUnmet, unmet); diff != "" {
				t.Errorf("unmet criteria (-want +got):\n%s", diff)
			}
			if want := len(tt.wantUnmet) == 0; (d.Verdict == Converged) != want {
				t.Errorf("verdict %v, converged want %v (reason %q)", d.Verdict, want, d.Reason)
			}
			for _, c := range d.Criteria {
				if want, ok := tt.wantTh[c.Name]; ok && c.Threshold != want {
					t.Errorf("criterion %s threshold = %v, want %v", c.Name, c.Threshold, want)
				}
			}
			checkBlockersAreGaps(t, d, gaps)
		})
	}
}

// TestOneThresholdsDeclarationSweep checks the rule of
// TestOneThresholdsDeclaration over a grid of measured coverages and
// confidences and of thresholds (default, disabled, explicit, 1).
func TestOneThresholdsDeclarationSweep(t *testing.T) {
	levels := []float64{0, 0.3, 0.6999999999, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1}
	mins := []float64{0, -1, 0.3, 0.7, 0.8, 0.9, 1}
	ctx := context.Background()
	for _, minCov := range mins {
		for _, minConf := range mins {
			th := gap.Thresholds{MinCoverage: minCov, MinConfidence: minConf}
			t.Run(fmt.Sprintf("min_%v_%v", minCov, minConf), func(t *testing.T) {
				for _, cov := range levels {
					for _, conf := range levels {
						// Files and a finding make both metrics measured, even at 0.
						a := gap.Assessment{
							FilesAnalyzed: int(cov * 1e10), EstimatedFiles: 1e10,
							Findings: []gap.Finding{{ID: "f", Confidence: conf, Citations: []string{"f:1"}, Sources: []string{"A", "B"}}},
						}
						h := under(th, at(1, 4, a))
						gaps, err := gap.Default().Analyze(ctx, h.Current, h.Thresholds)
						if err != nil {
							t.Fatalf("Analyze(coverage %v, confidence %v): %v", cov, conf, err)
						}
						d := ThresholdsMet{}.Decide(h)
						if len(d.Criteria) != 4 {
							t.Fatalf("coverage %v, confidence %v: %d criteria, want 4", cov, conf, len(d.Criteria))
						}
						checkBlockersAreGaps(t, d, gaps)
						if (d.Verdict == Converged) != (len(gaps) == 0) {
							t.Errorf("coverage %v, confidence %v: verdict %v with gaps %v", cov, conf, d.Verdict, gaps)
						}
					}
				}
			})
		}
	}
}

// TestFailuresReadsHistoryThreshold: the failure threshold is the loop's
// (History.FailureThreshold, set by the engine); 0 selects
// DefaultFailureThreshold, a negative value never aborts. Failures and the
// Default policy read the same value.
func TestFailuresReadsHistoryThreshold(t *testing.T) {
	failures := func(n int) *History {
		steps := make([]step, n+1)
		for i := 1; i <= n; i++ {
			steps[i].failed = true
		}
		return run(0, 0, steps...)
	}
	tests := []struct {
		name      string
		threshold int
		failed    int
		want      Decision
	}{
		{name: "zero_default_3_continues_at_2", threshold: 0, failed: DefaultFailureThreshold - 1},
		{name: "zero_default_3_aborts_at_3", threshold: 0, failed: DefaultFailureThreshold,
			want: Decision{Verdict: Aborted, Reason: "aborting after 3 consecutive failures"}},
		{name: "1_aborts_at_1", threshold: 1, failed: 1,
			want: Decision{Verdict: Aborted, Reason: "aborting after 1 consecutive failure"}},
		{name: "5_continues_at_4", threshold: 5, failed: 4},
		{name: "5_aborts_at_5", threshold: 5, failed: 5,
			want: Decision{Verdict: Aborted, Reason: "aborting after 5 consecutive failures"}},
		{name: "negative_never_aborts", threshold: -1, failed: 100},
		{name: "no_failures_continue", threshold: 1, failed: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := failingAfter(tt.threshold, failures(tt.failed))
			for name, p := range map[string]Policy{
				"Failures": Failures{}, "Default": Default(), "Any": Any(Failures{}, IterationLimit{}),
			} {
				if diff := cmp.Diff(tt.want, p.Decide(h)); diff != "" {
					t.Errorf("%s.Decide (-want +got):\n%s", name, diff)
				}
			}
		})
	}
	// One policy value, two loops: the decision follows the history.
	p := Failures{}
	if d := p.Decide(failingAfter(2, failures(2))); d.Verdict != Aborted {
		t.Errorf("threshold 2, 2 failures: %v, want aborted", d.Verdict)
	}
	if d := p.Decide(failingAfter(4, failures(2))); d.Stop() {
		t.Errorf("threshold 4, 2 failures: %v, want continue", d.Verdict)
	}
}
