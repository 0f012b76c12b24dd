package gap

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGapString(t *testing.T) {
	tests := []struct {
		g    Gap
		want string
	}{
		{Gap{Kind: UnansweredQuestion, Priority: P1, Target: "Is OAuth possible?", Detail: "unanswered"}, "P1 unanswered_question [Is OAuth possible?]: unanswered"},
		{Gap{Kind: MissingContext, Priority: P2}, "P2 missing_context"},
		{Gap{Kind: Pattern, Priority: P3, Detail: "d"}, "P3 unclear_pattern: d"},
		{Gap{Kind: Coverage, Priority: 9}, "P? coverage"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.g.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := (Gap{Kind: TestFailure, Target: "TestLogin"}).Key(); got != "test_failure:TestLogin" {
		t.Errorf("Key = %q", got)
	}
}

func TestImpactString(t *testing.T) {
	got := []string{Informational.String(), Important.String(), Critical.String()}
	if diff := cmp.Diff([]string{"informational", "important", "critical"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAssessmentMetrics(t *testing.T) {
	a := Assessment{
		FilesAnalyzed: 30, EstimatedFiles: 25, // capped at 1
		Findings: []Finding{{Confidence: 0.5}, {Confidence: 0.9}},
		Conflicts: []Conflict{
			{ID: "unmeasured"}, {ID: "similar", Similarity: 0.8}, {ID: "resolved", Resolved: true}, {ID: "differ", Similarity: 0.3},
		},
		Questions: []Question{
			{Critical: true, Answered: true}, {Critical: true, Answered: true, Partial: true}, {Critical: true}, {Answered: true},
		},
		Score:  0.6,
		Scores: map[string]float64{"lint": 0.9},
	}
	answered, total := a.CriticalQuestions()
	type metrics struct {
		Coverage, Confidence, Score, Conflicts, Lint float64
		Unresolved, Answered, Total                  int
		UnknownOK                                    bool
	}
	get := func(name string) float64 { v, _ := a.Metric(name); return v }
	_, unknownOK := a.Metric("nope")
	got := metrics{
		Coverage: get(metricCoverage), Confidence: get(metricConfidence), Score: get(metricScore),
		Conflicts: get(metricConflicts), Lint: get("lint"),
		Unresolved: a.UnresolvedConflicts(), Answered: answered, Total: total, UnknownOK: unknownOK,
	}
	want := metrics{
		Coverage: 1, Confidence: 0.7, Score: 0.6, Conflicts: 2, Lint: 0.9,
		Unresolved: 2, Answered: 1, Total: 3, UnknownOK: false,
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSignalsEmptyPassing(t *testing.T) {
	tests := []struct {
		name        string
		s           Signals
		wantEmpty   bool
		wantPassing bool
	}{
		{"nothing_checked", Signals{}, true, false},
		{"seed002/proceed_tests_pass_review_approve", Signals{Tests: &TestResult{Passed: true}, Review: &Review{Status: ReviewApprove}}, false, true},
		{"tests_pass_no_review", Signals{Tests: &TestResult{Passed: true}}, false, true},
		{"seed002/retry_tests_fail", Signals{Tests: &TestResult{}, Review: &Review{Status: ReviewApprove}}, false, false},
		{"seed002/retry_review_reject", Signals{Tests: &TestResult{Passed: true}, Review: &Review{Status: ReviewReject}}, false, false},
		{"review_pending", Signals{Review: &Review{Status: ReviewPending}}, false, false},
		{"quality_only", Signals{Quality: Float(0.9)}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []bool{tt.s.Empty(), tt.s.Passing()}
			if diff := cmp.Diff([]bool{tt.wantEmpty, tt.wantPassing}, got); diff != "" {
				t.Errorf("(Empty, Passing) (-want +got):\n%s", diff)
			}
		})
	}
}
