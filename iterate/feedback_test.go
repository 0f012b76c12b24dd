package iterate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
)

// TestSynthesizeFeedbackSeed002 names seed 002's feedback rules.
func TestSynthesizeFeedbackSeed002(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name  string
		gaps  []gap.Gap
		limit int
		want  feedback
	}{
		{"seed002/extract_actionable_items_from_tests", []gap.Gap{
			{Kind: gap.TestFailure, Target: "TestLogin", Detail: "Expected: token to contain userId, Received: undefined", Severity: 0.9},
		}, 0, feedback{
			summary:  "Test failed: Expected: token to contain userId, Received: undefined",
			items:    []string{"TestLogin: Expected: token to contain userId, Received: undefined"},
			priority: "high",
		}},
		{"seed002/prioritize_by_severity", []gap.Gap{
			{Kind: gap.ReviewRejected, Target: "review", Detail: "name the error", Severity: 0.7},
			{Kind: gap.TestFailure, Target: "TestB", Detail: "got 1 want 2", Severity: 0.9},
		}, 0, feedback{
			summary:  "Test failed: got 1 want 2 (2 issues)",
			items:    []string{"TestB: got 1 want 2", "name the error"},
			priority: "high",
		}},
		{"seed002/feedback_max_length_500", []gap.Gap{
			{Kind: gap.TestFailure, Target: "T1", Detail: long, Severity: 0.9},
			{Kind: gap.TestFailure, Target: "T2", Detail: long, Severity: 0.8},
		}, 500, feedback{priority: "high"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := synthesizeFeedback(tt.gaps, tt.limit)
			limit := tt.limit
			if limit == 0 {
				limit = DefaultFeedbackLimit
			}
			if n := len(got.String()); n > limit {
				t.Fatalf("feedback is %d bytes, limit %d", n, limit)
			}
			if tt.want.summary == "" {
				// The summary is cut short; the most severe item fits, the
				// other does not.
				if len(got.items) != 1 || !strings.HasPrefix(got.items[0], "T1: ") || !strings.Contains(got.summary, "…") {
					t.Errorf("over-long feedback not bounded as expected: %+v", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(feedback{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestFeedbackText holds the text of a plan's feedback, written in one
// pass, to the rendering of synthesizeFeedback.
func TestFeedbackText(t *testing.T) {
	long := strings.Repeat("y", 200)
	kinds := []gap.Kind{gap.TestFailure, gap.ReviewRejected, gap.ValidationFailure, gap.Coverage, gap.MissingContext, "custom_kind"}
	details := []string{"", "got 1 want 2", "first line\nsecond line", long, "  spaced  ", "ünï " + long}
	var all []gap.Gap
	for i, k := range kinds {
		for j, d := range details {
			all = append(all, gap.Gap{Kind: k, Target: "T" + strings.Repeat("x", i), Detail: d,
				Severity: float64((i+j)%5) / 4, Priority: gap.Priority(j % 4)})
		}
	}
	for start := range all {
		for n := 1; n <= 6 && start+n <= len(all); n++ {
			gaps := all[start : start+n]
			for _, limit := range []int{0, 5, 40, 120, 300} {
				if got, want := feedbackText(gaps, limit), synthesizeFeedback(gaps, limit).String(); got != want {
					t.Fatalf("feedbackText(%v, %d) = %q, want %q", gaps, limit, got, want)
				}
			}
		}
	}
	if got := feedbackText(nil, 0); got != "" {
		t.Errorf("feedbackText(nil) = %q", got)
	}
}
