package gap

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPriorityRules(t *testing.T) {
	findings := []Finding{
		{ID: "crit", Impact: Critical, Confidence: 0.6},
		{ID: "crit75", Impact: Critical, Confidence: 0.75},
		{ID: "imp", Impact: Important, Confidence: 0.6},
		{ID: "info", Impact: Informational, Confidence: 0.75},
		{ID: "info50", Impact: Informational, Confidence: 0.5},
	}
	tests := []struct {
		name string
		g    Gap
		a    Assessment
		want Priority
	}{
		{"seed000/P1_unanswered_critical_question", Gap{Kind: UnansweredQuestion}, Assessment{}, P1},
		{"seed000/P1_security_gap", Gap{Kind: Security, Target: "info"}, Assessment{Findings: findings}, P1},
		{"seed000/P1_coverage_below_0.50", Gap{Kind: Coverage}, Assessment{Coverage: 0.49}, P1},
		{"seed000/P1_coverage_zero_of_estimate", Gap{Kind: Coverage}, Assessment{EstimatedFiles: 10}, P1},
		{"seed000/P2_coverage_0.50", Gap{Kind: Coverage}, Assessment{Coverage: 0.50}, P2},
		{"seed000/P2_coverage_0.69", Gap{Kind: Coverage}, Assessment{FilesAnalyzed: 69, EstimatedFiles: 100}, P2},
		{"coverage_above_0.70_raised_threshold_P2_blocks_convergence", Gap{Kind: Coverage}, Assessment{Coverage: 0.8}, P2},
		{"coverage_unmeasured_P2", Gap{Kind: Coverage}, Assessment{}, P2},
		{"seed000/P2_confidence_below_0.70_critical_finding", Gap{Kind: Evidence, Target: "crit"}, Assessment{Findings: findings}, P2},
		{"critical_finding_0.75_P2", Gap{Kind: Confidence, Target: "crit75"}, Assessment{Findings: findings}, P2},
		{"important_finding_P2", Gap{Kind: Evidence, Target: "imp"}, Assessment{Findings: findings}, P2},
		{"performance_important_finding_P2", Gap{Kind: Performance, Target: "imp"}, Assessment{Findings: findings}, P2},
		{"seed000/P3_confidence_0.70-0.79_informational_finding", Gap{Kind: Evidence, Target: "info"}, Assessment{Findings: findings}, P3},
		{"informational_below_0.70_P3", Gap{Kind: Confidence, Target: "info50"}, Assessment{Findings: findings}, P3},
		{"seed000/P3_pattern_clarification", Gap{Kind: Pattern, Target: "imp"}, Assessment{Findings: findings}, P3},
		{"pattern_on_critical_finding_P2", Gap{Kind: Pattern, Target: "crit"}, Assessment{Findings: findings}, P2},
		{"pattern_unknown_finding_P3", Gap{Kind: Pattern, Target: "nope"}, Assessment{}, P3},
		{"average_confidence_below_0.70_P2", Gap{Kind: Confidence, Target: "confidence"}, Assessment{Confidence: 0.65}, P2},
		{"average_confidence_0.75_P3", Gap{Kind: Confidence, Target: "confidence"}, Assessment{Confidence: 0.75}, P3},
		{"confidence_unmeasured_P2", Gap{Kind: Confidence, Target: "x"}, Assessment{}, P2},
		{"seed000/P2_conflicting_findings", Gap{Kind: ConflictingFindings}, Assessment{}, P2},
		{"seed000/P2_missing_context", Gap{Kind: MissingContext}, Assessment{}, P2},
		{"seed002/P1_test_failure", Gap{Kind: TestFailure, Severity: 0.1}, Assessment{}, P1},
		{"seed002/P1_review_rejected", Gap{Kind: ReviewRejected, Severity: 0.1}, Assessment{}, P1},
		{"seed001/severity_1.0_P1", Gap{Kind: ValidationFailure, Severity: 1}, Assessment{}, P1},
		{"seed001/severity_0.9_P1", Gap{Kind: ExplicitFeedback, Severity: 0.9}, Assessment{}, P1},
		{"seed001/severity_0.7_P2", Gap{Kind: Hallucination, Severity: 0.7}, Assessment{}, P2},
		{"seed001/severity_0.6_P2", Gap{Kind: IncompleteOutput, Severity: 0.6}, Assessment{}, P2},
		{"seed001/severity_0.5_P3", Gap{Kind: RequirementUnmet, Severity: 0.5}, Assessment{}, P3},
		{"host_kind_by_severity", Gap{Kind: "custom", Severity: 0.95}, Assessment{}, P1},
		{"severity_NaN_P3", Gap{Kind: "custom", Severity: math.NaN()}, Assessment{}, P3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Prioritize([]Gap{tt.g}, tt.a)
			if diff := cmp.Diff(tt.want, got[0].Priority); diff != "" {
				t.Errorf("priority (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrioritizeKeepsAndReassigns(t *testing.T) {
	tests := []struct {
		name string
		in   Priority
		want Priority
	}{
		{"P3_kept", P3, P3},
		{"P1_kept", P1, P1},
		{"zero_assigned", 0, P2},
		{"out_of_range_high_reassigned", 7, P2},
		{"out_of_range_negative_reassigned", -1, P2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Prioritize([]Gap{{Kind: MissingContext, Priority: tt.in}}, Assessment{})
			if diff := cmp.Diff(tt.want, got[0].Priority); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrioritizeOrder(t *testing.T) {
	in := []Gap{
		{Target: "p3", Priority: P3, Severity: 1},
		{Target: "p2-low", Priority: P2, Severity: 0.2},
		{Target: "p1-rel0", Priority: P1},
		{Target: "p2-high", Priority: P2, Severity: 0.8},
		{Target: "p1-rel9", Priority: P1, Relevance: 0.9},
		{Target: "p2-rel5-a", Priority: P2, Relevance: 0.5, Severity: 0.5},
		{Target: "p2-rel5-b", Priority: P2, Relevance: 0.5, Severity: 0.5},
	}
	got := Prioritize(in, Assessment{})
	var targets []string
	for _, g := range got {
		targets = append(targets, g.Target)
	}
	want := []string{"p1-rel9", "p1-rel0", "p2-rel5-a", "p2-rel5-b", "p2-high", "p2-low", "p3"}
	if diff := cmp.Diff(want, targets); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if &got[0] != &in[0] {
		t.Error("Prioritize did not sort in place")
	}
}

func TestPrioritizeEmpty(t *testing.T) {
	if got := Prioritize(nil, Assessment{}); got != nil {
		t.Errorf("Prioritize(nil) = %v, want nil", got)
	}
}

func TestPrioritizeNoAllocs(t *testing.T) {
	gaps := []Gap{
		{Kind: Coverage}, {Kind: UnansweredQuestion}, {Kind: Evidence, Target: "f"},
		{Kind: ValidationFailure, Severity: 0.7}, {Kind: MissingContext, Relevance: 0.3},
	}
	a := Assessment{Coverage: 0.3, Findings: []Finding{{ID: "f", Confidence: 0.5}}}
	work := make([]Gap, len(gaps))
	allocs := testing.AllocsPerRun(100, func() {
		copy(work, gaps)
		Prioritize(work, a)
	})
	if allocs != 0 {
		t.Errorf("Prioritize allocs = %v, want 0", allocs)
	}
}

func targets(gaps []Gap) []string {
	if gaps == nil {
		return nil
	}
	out := []string{}
	for _, g := range gaps {
		out = append(out, g.Target)
	}
	return out
}

func TestSelect(t *testing.T) {
	// Already prioritised and in order.
	gaps := []Gap{
		{Target: "a1", Priority: P1},
		{Target: "b1", Priority: P1},
		{Target: "c2", Priority: P2},
		{Target: "d2", Priority: P2},
		{Target: "e3", Priority: P3},
	}
	tests := []struct {
		name         string
		remaining    int
		slots        int
		wantSelected []string
		wantDeferred []string
	}{
		{"seed000/select_two_iterations_remaining_P1_P2", 2, 4, []string{"a1", "b1", "c2", "d2"}, []string{"e3"}},
		{"seed000/select_two_iterations_P3_when_slots_remain", 3, 5, []string{"a1", "b1", "c2", "d2", "e3"}, nil},
		{"seed000/select_P3_fills_spare_slots_only", 2, 10, []string{"a1", "b1", "c2", "d2", "e3"}, nil},
		{"seed000/select_unlimited_slots_includes_P3", 2, 0, []string{"a1", "b1", "c2", "d2", "e3"}, nil},
		{"seed000/select_unlimited_iterations", -1, 4, []string{"a1", "b1", "c2", "d2"}, []string{"e3"}},
		{"seed000/select_one_iteration_remaining_P1_only", 1, 0, []string{"a1", "b1"}, []string{"c2", "d2", "e3"}},
		{"seed000/select_one_iteration_slots_limit_P1", 1, 1, []string{"a1"}, []string{"b1", "c2", "d2", "e3"}},
		{"seed000/select_zero_iterations_nothing", 0, 3, nil, []string{"a1", "b1", "c2", "d2", "e3"}},
		{"seed000/select_agents_fewer_than_gaps_max_3", 4, 3, []string{"a1", "b1", "c2"}, []string{"d2", "e3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]Gap(nil), gaps...)
			sel, def := Select(in, tt.remaining, tt.slots)
			if diff := cmp.Diff(tt.wantSelected, targets(sel)); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeferred, targets(def)); diff != "" {
				t.Errorf("deferred (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectEmpty(t *testing.T) {
	sel, def := Select(nil, 3, 3)
	if sel != nil || def != nil {
		t.Errorf("Select(nil) = %v, %v; want nil, nil", sel, def)
	}
}

func TestSelectRanksByRelevanceWithinLevel(t *testing.T) {
	// seed 000: "IF agents_available < gaps_count: rank within priority
	// level by user prompt relevance".
	in := []Gap{
		{Target: "p2-irrelevant", Kind: MissingContext},
		{Target: "p1-low", Kind: UnansweredQuestion, Relevance: 0.1},
		{Target: "p1-high", Kind: UnansweredQuestion, Relevance: 0.9},
		{Target: "p2-relevant", Kind: ConflictingFindings, Relevance: 0.8},
	}
	sel, def := Select(in, 2, 3) // unprioritised: Select prioritises
	if diff := cmp.Diff([]string{"p1-high", "p1-low", "p2-relevant"}, targets(sel)); diff != "" {
		t.Errorf("selected (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p2-irrelevant"}, targets(def)); diff != "" {
		t.Errorf("deferred (-want +got):\n%s", diff)
	}
}

func TestSelectSortsUnsorted(t *testing.T) {
	in := []Gap{
		{Target: "p3", Priority: P3},
		{Target: "p1", Priority: P1},
		{Target: "p2", Priority: P2},
	}
	sel, def := Select(in, 2, 2)
	if diff := cmp.Diff([]string{"p1", "p2"}, targets(sel)); diff != "" {
		t.Errorf("selected (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p3"}, targets(def)); diff != "" {
		t.Errorf("deferred (-want +got):\n%s", diff)
	}
}

func TestSelectAliasing(t *testing.T) {
	in := []Gap{{Target: "a", Priority: P1}, {Target: "b", Priority: P2}}
	sel, def := Select(in, 1, 0)
	if &sel[0] != &in[0] || &def[0] != &in[1] {
		t.Fatal("selected and deferred do not share the input's array")
	}
	if cap(sel) != len(sel) {
		t.Errorf("cap(selected) = %d, want %d (clipped)", cap(sel), len(sel))
	}
	_ = append(sel, Gap{Target: "new"})
	if in[1].Target != "b" {
		t.Errorf("appending to selected overwrote deferred: %q", in[1].Target)
	}
}

func TestSelectNoAllocs(t *testing.T) {
	gaps := []Gap{
		{Target: "c", Priority: P3}, {Target: "a", Priority: P1}, {Kind: MissingContext},
	}
	work := make([]Gap, len(gaps))
	allocs := testing.AllocsPerRun(100, func() {
		copy(work, gaps)
		Select(work, 2, 2)
	})
	if allocs != 0 {
		t.Errorf("Select allocs = %v, want 0", allocs)
	}
}
