package gap

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// approx compares floats computed at run time with constants computed
// exactly at compile time, and NaN with NaN.
var approx = cmp.Options{cmpopts.EquateApprox(0, 1e-12), cmpopts.EquateNaNs()}

func TestResearch(t *testing.T) {
	tests := []struct {
		name string
		th   Thresholds
		a    Assessment
		want []Gap
	}{
		{
			name: "empty_assessment_no_gaps",
			a:    Assessment{},
			want: nil,
		},
		{
			name: "seed000/coverage_gap_below_0.70",
			a: Assessment{
				FilesAnalyzed: 15, EstimatedFiles: 25,
				Missing: []string{"JwtService.cs", "AuthMiddleware.cs"},
			},
			want: []Gap{{
				Kind: Coverage, Severity: (0.70 - 0.60) / 0.70, Fixable: true,
				Target: "coverage", Detail: "coverage 0.60 below 0.70 (15 of 25 files)",
				Source: sourceResearch, Focus: []string{"JwtService.cs", "AuthMiddleware.cs"},
			}},
		},
		{
			name: "seed000/coverage_at_0.70_no_gap",
			a:    Assessment{Coverage: 0.70},
			want: nil,
		},
		{
			name: "seed000/coverage_0.88_converged_no_gap",
			a:    Assessment{FilesAnalyzed: 22, EstimatedFiles: 25},
			want: nil,
		},
		{
			name: "coverage_field_without_estimate",
			a:    Assessment{Coverage: 0.35},
			want: []Gap{{
				Kind: Coverage, Severity: 0.5, Fixable: true,
				Target: "coverage", Detail: "coverage 0.35 below 0.70", Source: sourceResearch,
			}},
		},
		{
			name: "coverage_zero_of_estimated_is_measured",
			a:    Assessment{EstimatedFiles: 25},
			want: []Gap{{
				Kind: Coverage, Severity: 1, Fixable: true,
				Target: "coverage", Detail: "coverage 0.00 below 0.70 (0 of 25 files)", Source: sourceResearch,
			}},
		},
		{
			name: "files_analyzed_without_estimate_not_measured",
			a:    Assessment{FilesAnalyzed: 5},
			want: nil,
		},
		{
			name: "coverage_threshold_custom",
			th:   Thresholds{MinCoverage: 0.9},
			a:    Assessment{Coverage: 0.45},
			want: []Gap{{
				Kind: Coverage, Severity: 0.5, Fixable: true,
				Target: "coverage", Detail: "coverage 0.45 below 0.90", Source: sourceResearch,
			}},
		},
		{
			name: "coverage_threshold_negative_disables",
			th:   Thresholds{MinCoverage: -1},
			a:    Assessment{Coverage: 0.1},
			want: nil,
		},
		{
			name: "seed000/confidence_average_at_0.80_no_gap",
			a: Assessment{Findings: []Finding{
				{ID: "f1", Confidence: 0.7, Citations: []string{"a.go:1"}},
				{ID: "f2", Confidence: 0.9, Citations: []string{"a.go:2"}},
			}},
			want: nil,
		},
		{
			name: "seed000/confidence_missing_evidence_no_citation",
			a: Assessment{Findings: []Finding{
				{ID: "f1", Description: "Uses caching", Confidence: 0.6, Relevance: 0.4},
				{ID: "f2", Confidence: 0.9, Citations: []string{"a.go:2"}, Sources: []string{"A", "B"}},
			}},
			want: []Gap{{
				Kind: Evidence, Severity: (0.8 - 0.6) / 0.8, Fixable: true, Target: "f1",
				Detail: "confidence 0.60 below 0.80 (missing evidence): Uses caching",
				Source: sourceResearch, Relevance: 0.4,
			}},
		},
		{
			name: "seed000/confidence_missing_evidence_single_source",
			a: Assessment{Findings: []Finding{
				{ID: "f1", Description: "d", Confidence: 0.6, Citations: []string{"x:1"}, Sources: []string{"ExploreAgent"}},
			}},
			want: []Gap{{
				Kind: Evidence, Severity: (0.8 - 0.6) / 0.8, Fixable: true, Target: "f1",
				Detail: "confidence 0.60 below 0.80 (missing evidence): d", Source: sourceResearch,
			}},
		},
		{
			name: "seed000/confidence_uncertain_pattern",
			a: Assessment{Findings: []Finding{
				{ID: "p1", Description: "Repository pattern", Confidence: 0.5, Pattern: true},
			}},
			want: []Gap{{
				Kind: Pattern, Severity: (0.8 - 0.5) / 0.8, Fixable: true, Target: "p1",
				Detail: "confidence 0.50 below 0.80 (unclear pattern): Repository pattern", Source: sourceResearch,
			}},
		},
		{
			name: "seed000/confidence_security_area_before_pattern",
			a: Assessment{Findings: []Finding{
				{ID: "s1", Description: "Token check", Confidence: 0.4, Area: "Security", Pattern: true},
				{ID: "p1", Description: "Hot loop", Confidence: 0.4, Area: "performance"},
			}},
			want: []Gap{
				{
					Kind: Security, Severity: 0.5, Fixable: true, Target: "s1",
					Detail: "confidence 0.40 below 0.80 (security uncertainty): Token check", Source: sourceResearch,
				},
				{
					Kind: Performance, Severity: 0.5, Fixable: true, Target: "p1",
					Detail: "confidence 0.40 below 0.80 (performance uncertainty): Hot loop", Source: sourceResearch,
				},
			},
		},
		{
			name: "seed000/confidence_conflicting_sources_verification",
			a: Assessment{Findings: []Finding{
				{ID: "f1", Description: "d", Confidence: 0.55, Citations: []string{"x:1"}, Sources: []string{"A", "B"}},
			}},
			want: []Gap{{
				Kind: Confidence, Severity: (0.8 - 0.55) / 0.8, Fixable: true, Target: "f1",
				Detail: "confidence 0.55 below 0.80 (needs verification): d", Source: sourceResearch,
			}},
		},
		{
			name: "confidence_without_findings_single_gap",
			a:    Assessment{Confidence: 0.6},
			want: []Gap{{
				Kind: Confidence, Severity: (0.8 - 0.6) / 0.8, Fixable: true, Target: "confidence",
				Detail: "average confidence 0.60 below 0.80", Source: sourceResearch,
			}},
		},
		{
			name: "confidence_threshold_negative_disables",
			th:   Thresholds{MinConfidence: -1},
			a:    Assessment{Confidence: 0.1},
			want: nil,
		},
		{
			name: "seed000/conflict_unresolved",
			a: Assessment{Conflicts: []Conflict{
				{
					ID: "c1",
					A:  Claim{Source: "ExploreAgent", Statement: "Uses SQL Server"},
					B:  Claim{Source: "PatternAgent", Statement: "Uses PostgreSQL"},
				},
				{ID: "c2", Similarity: 0.5, A: Claim{Statement: "x"}, B: Claim{Source: "B", Statement: "y"}},
			}},
			want: []Gap{
				{
					Kind: ConflictingFindings, Severity: 1, Fixable: true, Target: "c1",
					Detail: `ExploreAgent says "Uses SQL Server" vs PatternAgent says "Uses PostgreSQL"`,
					Source: sourceResearch,
				},
				{
					Kind: ConflictingFindings, Severity: 0.5, Fixable: true, Target: "c2",
					Detail: `unknown says "x" vs B says "y"`, Source: sourceResearch,
				},
			},
		},
		{
			name: "seed000/conflict_resolved_or_similar_no_gap",
			a: Assessment{Conflicts: []Conflict{
				{ID: "c1", Resolved: true},
				{ID: "c2", Similarity: 0.70},
				{ID: "c3", Similarity: 0.95},
			}},
			want: nil,
		},
		{
			name: "seed000/missing_context_one_per_item",
			a:    Assessment{Context: []string{"token validation flow", "", "refresh mechanism"}},
			want: []Gap{
				{
					Kind: MissingContext, Severity: 0.6, Fixable: true, Target: "token validation flow",
					Detail: "unclear: token validation flow", Source: sourceResearch,
				},
				{
					Kind: MissingContext, Severity: 0.6, Fixable: true, Target: "refresh mechanism",
					Detail: "unclear: refresh mechanism", Source: sourceResearch,
				},
			},
		},
		{
			name: "seed000/unanswered_critical_questions",
			a: Assessment{Questions: []Question{
				{Text: "How does the app handle password resets?", Critical: true, Answered: true},
				{Text: "Is it possible to add OAuth providers?", Critical: true, Relevance: 0.9},
				{Text: "What handles session management?", Critical: true, Answered: true, Partial: true},
				{Text: "Why is X?", Critical: false},
			}},
			want: []Gap{
				{
					Kind: UnansweredQuestion, Severity: 0.9, Fixable: true,
					Target: "Is it possible to add OAuth providers?", Detail: "unanswered",
					Source: sourceResearch, Relevance: 0.9,
				},
				{
					Kind: UnansweredQuestion, Severity: 0.6, Fixable: true,
					Target: "What handles session management?", Detail: "partially answered",
					Source: sourceResearch,
				},
			},
		},
		{
			name: "signals_ignored",
			a:    Assessment{Signals: Signals{Rejected: "no", Quality: Float(0.1)}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Research{}.Analyze(context.Background(), tt.a, tt.th)
			if err != nil {
				t.Fatalf("Analyze: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("gaps mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResearchOrder(t *testing.T) {
	a := Assessment{
		Coverage:  0.4,
		Findings:  []Finding{{ID: "f1", Confidence: 0.5}},
		Conflicts: []Conflict{{ID: "c1"}},
		Context:   []string{"flow"},
		Questions: []Question{{Text: "q", Critical: true}},
	}
	got, err := Research{}.Analyze(context.Background(), a, Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	for _, g := range got {
		kinds = append(kinds, g.Kind)
	}
	want := []Kind{Coverage, Evidence, ConflictingFindings, MissingContext, UnansweredQuestion}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if cap(got) != len(got) {
		t.Errorf("cap = %d, want exactly %d (counted before growing)", cap(got), len(got))
	}
}

func TestResearchFocusClipped(t *testing.T) {
	missing := make([]string, 1, 4)
	missing[0] = "a.go"
	got, err := Research{}.Analyze(context.Background(), Assessment{Coverage: 0.1, Missing: missing}, Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got[0].Focus, "b.go")
	if got := missing[:2][1]; got != "" {
		t.Errorf("appending to Focus wrote %q into the assessment's Missing array", got)
	}
}

func TestInvalidAssessment(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		an   Analyzer
		a    Assessment
		want *InvalidAssessmentError
	}{
		{"coverage_NaN", Research{}, Assessment{Coverage: nan}, &InvalidAssessmentError{Field: "Coverage", Value: nan}},
		{"coverage_above_1", Research{}, Assessment{Coverage: 1.5}, &InvalidAssessmentError{Field: "Coverage", Value: 1.5}},
		{"coverage_negative", Research{}, Assessment{Coverage: -0.1}, &InvalidAssessmentError{Field: "Coverage", Value: -0.1}},
		{"files_negative", Research{}, Assessment{FilesAnalyzed: -1}, &InvalidAssessmentError{Field: "FilesAnalyzed", Value: -1}},
		{"estimate_negative", Research{}, Assessment{EstimatedFiles: -2}, &InvalidAssessmentError{Field: "EstimatedFiles", Value: -2}},
		{"confidence_inf", Research{}, Assessment{Confidence: math.Inf(1)}, &InvalidAssessmentError{Field: "Confidence", Value: math.Inf(1)}},
		{
			"finding_confidence", Research{},
			Assessment{Findings: []Finding{{}, {Confidence: 2}}},
			&InvalidAssessmentError{Field: "Findings[1].Confidence", Value: 2},
		},
		{
			"finding_relevance", Research{},
			Assessment{Findings: []Finding{{Confidence: 1, Relevance: -1}}},
			&InvalidAssessmentError{Field: "Findings[0].Relevance", Value: -1},
		},
		{
			"conflict_similarity", Research{},
			Assessment{Conflicts: []Conflict{{Similarity: 1.1}}},
			&InvalidAssessmentError{Field: "Conflicts[0].Similarity", Value: 1.1},
		},
		{
			"question_relevance", Research{},
			Assessment{Questions: []Question{{Relevance: 3}}},
			&InvalidAssessmentError{Field: "Questions[0].Relevance", Value: 3},
		},
		{"signal_confidence", Quality{}, Assessment{Signals: Signals{Confidence: Float(nan)}}, &InvalidAssessmentError{Field: "Signals.Confidence", Value: nan}},
		{"signal_completeness", Quality{}, Assessment{Signals: Signals{Completeness: Float(-0.5)}}, &InvalidAssessmentError{Field: "Signals.Completeness", Value: -0.5}},
		{"signal_quality", Quality{}, Assessment{Signals: Signals{Quality: Float(7)}}, &InvalidAssessmentError{Field: "Signals.Quality", Value: 7}},
		{"default_research_first", Default(), Assessment{Coverage: 2, Signals: Signals{Quality: Float(7)}}, &InvalidAssessmentError{Field: "Coverage", Value: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gaps, err := tt.an.Analyze(context.Background(), tt.a, Thresholds{})
			if gaps != nil {
				t.Errorf("gaps = %v, want nil", gaps)
			}
			if !errors.Is(err, ErrInvalidAssessment) {
				t.Fatalf("err = %v, want ErrInvalidAssessment", err)
			}
			var ie *InvalidAssessmentError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %T, want *InvalidAssessmentError", err)
			}
			if diff := cmp.Diff(tt.want, ie, approx); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if ie.Error() == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestInvalidAssessmentErrorMessage(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&InvalidAssessmentError{Field: "Coverage", Value: 1.5}, "gap: invalid assessment: Coverage = 1.5, want a ratio in [0, 1]"},
		{&InvalidAssessmentError{Field: "FilesAnalyzed", Value: -1}, "gap: invalid assessment: FilesAnalyzed = -1, want a count >= 0"},
		{invalidThreshold("MinQuality", 2), "gap: invalid threshold: MinQuality = 2, want a ratio <= 1 (0 for the default, negative to disable)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
