package gap

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQuality(t *testing.T) {
	long := strings.Repeat("x", MaxFeedbackLength-1) + "é" // 'é' straddles the limit
	tests := []struct {
		name string
		th   Thresholds
		s    Signals
		want []Gap
	}{
		{name: "no_signals_no_gaps", want: nil},
		{
			name: "seed001/validation_critical_severity_1.0",
			s: Signals{Validation: []ValidationError{
				{Path: "$.analysis.security", Message: "Required field 'security' is missing", Critical: true},
			}},
			want: []Gap{{
				Kind: ValidationFailure, Severity: 1, Fixable: true, Target: "$.analysis.security",
				Detail: "$.analysis.security: Required field 'security' is missing", Source: sourceValidator,
			}},
		},
		{
			name: "seed001/validation_noncritical_severity_0.7",
			s:    Signals{Validation: []ValidationError{{Path: "$.a", Message: "too short", Code: "MIN_LENGTH"}}},
			want: []Gap{{
				Kind: ValidationFailure, Severity: 0.7, Fixable: true, Target: "$.a",
				Detail: "$.a: too short", Source: sourceValidator,
			}},
		},
		{
			name: "seed001/validation_TYPE_MISMATCH_not_fixable",
			s:    Signals{Validation: []ValidationError{{Path: "$.n", Message: "want number", Code: CodeTypeMismatch}}},
			want: []Gap{{
				Kind: ValidationFailure, Severity: 0.7, Fixable: false, Target: "$.n",
				Detail: "$.n: want number", Source: sourceValidator,
			}},
		},
		{
			name: "seed001/validation_SCHEMA_VIOLATION_not_fixable",
			s:    Signals{Validation: []ValidationError{{Message: "bad schema", Code: CodeSchemaViolation, Critical: true}}},
			want: []Gap{{
				Kind: ValidationFailure, Severity: 1, Fixable: false,
				Detail: "bad schema", Source: sourceValidator,
			}},
		},
		{
			name: "seed001/low_confidence_severity_1_minus_c",
			th:   Thresholds{MinSignalConfidence: 0.75},
			s:    Signals{Confidence: Float(0.62)},
			want: []Gap{{
				Kind: LowConfidence, Severity: 0.38, Fixable: true, Target: "confidence",
				Detail: "Confidence 62% below threshold 75%", Source: sourceConfidence,
			}},
		},
		{
			name: "low_confidence_threshold_defaults_to_MinConfidence",
			th:   Thresholds{MinConfidence: 0.9},
			s:    Signals{Confidence: Float(0.85)},
			want: []Gap{{
				Kind: LowConfidence, Severity: 0.15, Fixable: true, Target: "confidence",
				Detail: "Confidence 85% below threshold 90%", Source: sourceConfidence,
			}},
		},
		{
			name: "low_confidence_percent_rounds_half_up",
			s:    Signals{Confidence: Float(0.625)},
			want: []Gap{{
				Kind: LowConfidence, Severity: 0.375, Fixable: true, Target: "confidence",
				Detail: "Confidence 63% below threshold 80%", Source: sourceConfidence,
			}},
		},
		{
			name: "low_confidence_at_threshold_no_gap",
			s:    Signals{Confidence: Float(0.8)},
			want: nil,
		},
		{
			name: "low_confidence_disabled_with_MinConfidence",
			th:   Thresholds{MinConfidence: -1},
			s:    Signals{Confidence: Float(0.1)},
			want: nil,
		},
		{
			name: "seed001/hallucinations_warning_ignored_confirmed_1.0_else_0.7",
			s: Signals{Hallucinations: []HallucinationFinding{
				{Type: "fabricated_api", Claim: "jwt.magic()", Severity: HallucinationConfirmed},
				{Type: "citation", Claim: "RFC 9999", Severity: HallucinationWarning},
				{Type: "number", Claim: "42 users", Severity: HallucinationSuspected},
			}},
			want: []Gap{
				{
					Kind: Hallucination, Severity: 1, Fixable: true, Target: "jwt.magic()",
					Detail: "fabricated_api: jwt.magic()", Source: sourceHallucination,
				},
				{
					Kind: Hallucination, Severity: 0.7, Fixable: true, Target: "42 users",
					Detail: "number: 42 users", Source: sourceHallucination,
				},
			},
		},
		{
			name: "seed001/negative_feedback_severity_0.9",
			s:    Signals{Feedback: &Feedback{Negative: true, Message: "too vague"}},
			want: []Gap{{
				Kind: ExplicitFeedback, Severity: 0.9, Fixable: true, Target: "feedback",
				Detail: "too vague", Source: sourceUser,
			}},
		},
		{
			name: "seed001/positive_feedback_no_gap",
			s:    Signals{Feedback: &Feedback{Message: "great"}},
			want: nil,
		},
		{
			name: "seed001/requirements_required_0.9_optional_0.5_fixable_from_requirement",
			s: Signals{Requirements: []Requirement{
				{Description: "Must include performance analysis", Required: true, Fixable: true},
				{Description: "Met one", Required: true, Met: true},
				{Description: "Nice diagrams"},
			}},
			want: []Gap{
				{
					Kind: RequirementUnmet, Severity: 0.9, Fixable: true, Target: "Must include performance analysis",
					Detail: "Requirement not met: Must include performance analysis", Source: sourceRequirement,
				},
				{
					Kind: RequirementUnmet, Severity: 0.5, Fixable: false, Target: "Nice diagrams",
					Detail: "Requirement not met: Nice diagrams", Source: sourceRequirement,
				},
			},
		},
		{
			name: "seed001/incomplete_output_severity_1_minus_c",
			s:    Signals{Completeness: Float(0.6)},
			want: []Gap{{
				Kind: IncompleteOutput, Severity: 0.4, Fixable: true, Target: "completeness",
				Detail: "Output 60% complete, minimum 90%", Source: sourceCompleteness,
			}},
		},
		{
			name: "seed001/complete_at_minimum_no_gap",
			s:    Signals{Completeness: Float(0.9)},
			want: nil,
		},
		{
			name: "seed001/quality_threshold_severity_1_minus_q",
			s:    Signals{Quality: Float(0.55)},
			want: []Gap{{
				Kind: QualityThreshold, Severity: 0.45, Fixable: true, Target: "quality",
				Detail: "Quality 55% below threshold 70%", Source: sourceQuality,
			}},
		},
		{
			name: "quality_disabled",
			th:   Thresholds{MinQuality: -1, MinCompleteness: -1},
			s:    Signals{Quality: Float(0), Completeness: Float(0)},
			want: nil,
		},
		{
			name: "seed001/user_rejection_severity_1.0",
			s:    Signals{Rejected: "wrong language"},
			want: []Gap{{
				Kind: UserRejection, Severity: 1, Fixable: true, Target: "rejection",
				Detail: "wrong language", Source: sourceUser,
			}},
		},
		{
			name: "seed002/test_failure_per_parsed_failure",
			s: Signals{Tests: &TestResult{Failures: []TestCaseFailure{
				{Name: "login.test.ts", Expected: "token to contain userId", Received: "undefined"},
				{Name: "logout.test.ts", Message: "timeout"},
				{Name: "refresh.test.ts", Message: "assertion", Expected: "1", Received: "2"},
			}}},
			want: []Gap{
				{
					Kind: TestFailure, Severity: 0.9, Fixable: true, Target: "login.test.ts",
					Detail: "Expected: token to contain userId, Received: undefined", Source: sourceTests,
				},
				{
					Kind: TestFailure, Severity: 0.9, Fixable: true, Target: "logout.test.ts",
					Detail: "timeout", Source: sourceTests,
				},
				{
					Kind: TestFailure, Severity: 0.9, Fixable: true, Target: "refresh.test.ts",
					Detail: "assertion: Expected: 1, Received: 2", Source: sourceTests,
				},
			},
		},
		{
			name: "seed002/test_failure_generic_from_output",
			s:    Signals{Tests: &TestResult{Output: "FAIL src/auth/login.test.ts"}},
			want: []Gap{{
				Kind: TestFailure, Severity: 0.9, Fixable: true, Target: "tests",
				Detail: "FAIL src/auth/login.test.ts", Source: sourceTests,
			}},
		},
		{
			name: "seed002/test_output_truncated_to_feedback_max_length",
			s:    Signals{Tests: &TestResult{Output: long}},
			want: []Gap{{
				Kind: TestFailure, Severity: 0.9, Fixable: true, Target: "tests",
				Detail: long[:MaxFeedbackLength-1], Source: sourceTests,
			}},
		},
		{
			name: "seed002/test_failure_no_output",
			s:    Signals{Tests: &TestResult{}},
			want: []Gap{{
				Kind: TestFailure, Severity: 0.9, Fixable: true, Target: "tests",
				Detail: "tests failed", Source: sourceTests,
			}},
		},
		{
			name: "seed002/tests_passed_no_gap",
			s:    Signals{Tests: &TestResult{Passed: true, Failures: []TestCaseFailure{{Name: "stale"}}}},
			want: nil,
		},
		{
			name: "seed002/review_rejected_per_issue",
			s:    Signals{Review: &Review{Status: ReviewReject, Issues: []string{"missing error handling", "no tests"}}},
			want: []Gap{
				{
					Kind: ReviewRejected, Severity: 0.7, Fixable: true, Target: "missing error handling",
					Detail: "missing error handling", Source: sourceReviewer,
				},
				{
					Kind: ReviewRejected, Severity: 0.7, Fixable: true, Target: "no tests",
					Detail: "no tests", Source: sourceReviewer,
				},
			},
		},
		{
			name: "seed002/review_rejected_generic",
			s:    Signals{Review: &Review{Status: ReviewReject}},
			want: []Gap{{
				Kind: ReviewRejected, Severity: 0.7, Fixable: true, Target: "review",
				Detail: "review rejected", Source: sourceReviewer,
			}},
		},
		{
			name: "seed002/review_pending_or_approved_no_gap",
			s:    Signals{Review: &Review{Status: ReviewPending, Issues: []string{"x"}}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Quality{}.Analyze(context.Background(), Assessment{Signals: tt.s}, tt.th)
			if err != nil {
				t.Fatalf("Analyze: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("gaps mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQualityOrder(t *testing.T) {
	s := Signals{
		Validation:     []ValidationError{{Path: "p", Message: "m"}},
		Confidence:     Float(0.5),
		Hallucinations: []HallucinationFinding{{Claim: "c", Severity: HallucinationSuspected}},
		Feedback:       &Feedback{Negative: true},
		Requirements:   []Requirement{{Description: "r"}},
		Completeness:   Float(0.5),
		Quality:        Float(0.5),
		Rejected:       "no",
		Tests:          &TestResult{},
		Review:         &Review{Status: ReviewReject},
	}
	got, err := Quality{}.Analyze(context.Background(), Assessment{Signals: s}, Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	for _, g := range got {
		kinds = append(kinds, g.Kind)
	}
	want := []Kind{
		ValidationFailure, LowConfidence, Hallucination, ExplicitFeedback, RequirementUnmet,
		IncompleteOutput, QualityThreshold, UserRejection, TestFailure, ReviewRejected,
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if cap(got) != len(got) {
		t.Errorf("cap = %d, want exactly %d (counted before growing)", cap(got), len(got))
	}
}
