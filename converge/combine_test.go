package converge

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
)

// fixed returns a policy that always decides d.
func fixed(d Decision) Policy { return PolicyFunc(func(*History) Decision { return d }) }

func fourCriteria(cov, conf float64, covOK, confOK bool, covDetail, confDetail string) []Criterion {
	return []Criterion{
		crit("coverage", cov, 0.70, covOK, covDetail),
		crit("confidence", conf, 0.80, confOK, confDetail),
		crit("conflicts", 0, 2, true, "0 ≤ 2"),
		crit("questions", 0, 0, true, "0/0 answered"),
	}
}

func TestAny(t *testing.T) {
	unmetA := Criterion{Name: "a", Value: 1, Threshold: 2, Detail: "1 < 2"}
	metB := Criterion{Name: "b", Met: true, Detail: "ok"}
	unmetC := Criterion{Name: "c"}
	tests := []struct {
		name string
		p    Policy
		h    *History
		want Decision
	}{
		{
			name: "seed000/partial_at_max_lists_unmet",
			p:    Any(ThresholdsMet{}, IterationLimit{}),
			h:    at(4, 4, research(0.9, 0.72)),
			want: Decision{Verdict: MaxIterations, Reason: "max iterations reached: 4 of 4, unmet: confidence 0.72 < 0.80",
				Criteria: fourCriteria(0.9, 0.72, true, false, "0.90 ≥ 0.70", "0.72 < 0.80")},
		},
		{
			name: "first_stop_wins",
			p:    Any(Failures{}, IterationLimit{}),
			h:    failingAfter(1, run(1, 0, step{}, step{failed: true})),
			want: Decision{Verdict: Aborted, Reason: "aborting after 1 consecutive failure"},
		},
		{
			name: "none_stops_merges_all_criteria",
			p:    Any(fixed(Decision{Criteria: []Criterion{unmetA}}), Done{}, fixed(Decision{Criteria: []Criterion{metB, unmetC}})),
			h:    &History{},
			want: Decision{Criteria: []Criterion{unmetA, metB, unmetC}},
		},
		{
			name: "stop_gets_earlier_criteria_first_and_unmet_reason",
			p: Any(fixed(Decision{Criteria: []Criterion{unmetA, metB}}), fixed(Decision{Criteria: []Criterion{unmetC}}),
				fixed(Decision{Verdict: Stuck, Reason: "stuck: x", Criteria: []Criterion{metB}})),
			h: &History{},
			want: Decision{Verdict: Stuck, Reason: "stuck: x, unmet: a 1 < 2, c",
				Criteria: []Criterion{unmetA, metB, unmetC, metB}},
		},
		{
			name: "stop_with_all_earlier_criteria_met_keeps_reason",
			p:    Any(fixed(Decision{Criteria: []Criterion{metB}}), fixed(Decision{Verdict: Plateau, Reason: "plateau"})),
			h:    &History{},
			want: Decision{Verdict: Plateau, Reason: "plateau", Criteria: []Criterion{metB}},
		},
		{
			name: "success_stop_does_not_list_unmet",
			p:    Any(fixed(Decision{Criteria: []Criterion{unmetA}}), Done{}),
			h:    at(1, 0, gap.Assessment{Complete: true}),
			want: Decision{Verdict: Converged, Reason: "work complete", Criteria: []Criterion{unmetA}},
		},
		{
			name: "nil_policies_skipped",
			p:    Any(nil, IterationLimit{}, nil),
			h:    &History{Iteration: 2, MaxIterations: 2},
			want: Decision{Verdict: MaxIterations, Reason: "max iterations reached: 2 of 2"},
		},
		{name: "empty_never_stops", p: Any(), h: &History{Iteration: 9, MaxIterations: 1}, want: Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.p.Decide(tt.h), described); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnyDoesNotModifyPolicyCriteria(t *testing.T) {
	first := make([]Criterion, 1, 4) // spare capacity a careless append would use
	first[0] = Criterion{Name: "a"}
	p := Any(fixed(Decision{Criteria: first}), fixed(Decision{Criteria: []Criterion{{Name: "b"}}}))
	p.Decide(&History{})
	if diff := cmp.Diff([]Criterion{{Name: "a"}, {}}, first[:2], described); diff != "" {
		t.Errorf("first policy's backing array changed (-want +got):\n%s", diff)
	}
}

func TestAnyCopiesPolicies(t *testing.T) {
	policies := []Policy{IterationLimit{}}
	p := Any(policies...)
	policies[0] = Done{}
	want := Decision{Verdict: MaxIterations, Reason: "max iterations reached: 1 of 1"}
	if diff := cmp.Diff(want, p.Decide(&History{Iteration: 1, MaxIterations: 1}), described); diff != "" {
		t.Errorf("Decide (-want +got):\n%s", diff)
	}
}

func TestAll(t *testing.T) {
	failing := func(iteration, max int) *History {
		steps := make([]step, iteration+1)
		for i := 1; i < len(steps); i++ {
			steps[i].failed = i > iteration-3
		}
		return run(max, 0, steps...)
	}
	tests := []struct {
		name string
		p    Policy
		h    *History
		want Decision
	}{
		{
			name: "all_stop_first_verdict_reasons_joined",
			p:    All(IterationLimit{}, Failures{}),
			h:    failing(4, 4),
			want: Decision{Verdict: MaxIterations, Reason: "max iterations reached: 4 of 4; aborting after 3 consecutive failures"},
		},
		{name: "one_continues", p: All(IterationLimit{}, Failures{}), h: at(4, 4, gap.Assessment{}), want: Decision{}},
		{
			name: "criteria_merged_when_all_stop",
			p:    All(ThresholdsMet{}, IterationLimit{}),
			h:    at(4, 4, research(0.75, 0.85)),
			want: Decision{Verdict: Converged,
				Reason:   "converged: coverage 0.75 ≥ 0.70, confidence 0.85 ≥ 0.80, conflicts 0 ≤ 2, questions 0/0 answered; max iterations reached: 4 of 4",
				Criteria: fourCriteria(0.75, 0.85, true, true, "0.75 ≥ 0.70", "0.85 ≥ 0.80")},
		},
		{
			name: "continue_carries_criteria",
			p:    All(IterationLimit{}, ThresholdsMet{}),
			h:    at(4, 4, research(0.5, 0.85)),
			want: Decision{Criteria: fourCriteria(0.5, 0.85, false, true, "0.50 < 0.70", "0.85 ≥ 0.80")},
		},
		{name: "empty_never_stops", p: All(), h: &History{}, want: Decision{}},
		{name: "only_nil_never_stops", p: All(nil, nil), h: &History{}, want: Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.p.Decide(tt.h), described); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name  string
		h     *History
		want  Decision
		unmet []string
	}{
		{
			name: "seed000/test1_single_iteration_to_convergence",
			h:    at(1, 4, research(0.75, 0.85)),
			want: Decision{Verdict: Converged,
				Reason:   "converged: coverage 0.75 ≥ 0.70, confidence 0.85 ≥ 0.80, conflicts 0 ≤ 2, questions 0/0 answered",
				Criteria: fourCriteria(0.75, 0.85, true, true, "0.75 ≥ 0.70", "0.85 ≥ 0.80")},
		},
		{
			name: "seed000/converged_on_last_allowed_iteration_is_success",
			h:    at(4, 4, research(0.75, 0.85)),
			want: Decision{Verdict: Converged,
				Reason:   "converged: coverage 0.75 ≥ 0.70, confidence 0.85 ≥ 0.80, conflicts 0 ≤ 2, questions 0/0 answered",
				Criteria: fourCriteria(0.75, 0.85, true, true, "0.75 ≥ 0.70", "0.85 ≥ 0.80")},
		},
		{
			name: "seed000/test5_early_termination_at_iteration_2_of_4",
			h:    at(2, 4, research(0.9, 0.92)),
			want: Decision{Verdict: EarlyExit,
				Reason: "high confidence reached: coverage 0.90 ≥ 0.85, confidence 0.92 ≥ 0.90 (skipped 2 potential iterations)",
				Criteria: []Criterion{
					crit("coverage", 0.9, 0.85, true, "0.90 ≥ 0.85"),
					crit("confidence", 0.92, 0.90, true, "0.92 ≥ 0.90"),
				}},
		},
		{
			name:  "seed000/continue_while_below_max_carries_criteria",
			h:     at(2, 4, research(0.6, 0.85)),
			want:  Decision{Criteria: fourCriteria(0.6, 0.85, false, true, "0.60 < 0.70", "0.85 ≥ 0.80")},
			unmet: []string{"coverage"},
		},
		{
			name: "seed000/partial_at_max_lists_unmet",
			h:    at(4, 4, research(0.6, 0.72)),
			want: Decision{Verdict: MaxIterations,
				Reason:   "max iterations reached: 4 of 4, unmet: coverage 0.60 < 0.70, confidence 0.72 < 0.80",
				Criteria: fourCriteria(0.6, 0.72, false, false, "0.60 < 0.70", "0.72 < 0.80")},
			unmet: []string{"coverage", "confidence"},
		},
		{
			name: "seed004/abort_after_3_failures_before_limit",
			h:    run(10, 0, step{}, step{}, step{failed: true}, step{failed: true}, step{failed: true}),
			want: Decision{Verdict: Aborted, Reason: "aborting after 3 consecutive failures"},
		},
		{
			name:  "seed004/max_iterations_0_unlimited",
			h:     at(50, 0, research(0.5, 0.5)),
			want:  Decision{Criteria: fourCriteria(0.5, 0.5, false, false, "0.50 < 0.70", "0.50 < 0.80")},
			unmet: []string{"coverage", "confidence"},
		},
		{
			name: "seed003/stuck_after_2_unchanged",
			h: run(5, 0, step{a: gap.Assessment{WorkRemaining: []string{"Phase_8"}}},
				step{a: gap.Assessment{WorkRemaining: []string{"Phase_8"}}}, step{a: gap.Assessment{WorkRemaining: []string{"Phase_8"}}}),
			want: Decision{Verdict: Stuck, Reason: "stuck: work remaining unchanged for 2 iterations: Phase_8"},
		},
		{
			name: "seed002/proceed_on_last_iteration",
			h:    at(3, 3, gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{Passed: true}, Review: &gap.Review{Status: gap.ReviewApprove}}}),
			want: Decision{Verdict: Converged, Reason: "tests passed and review approved"},
		},
		{
			name: "seed003/work_complete",
			h:    at(1, 5, gap.Assessment{Complete: true}),
			want: Decision{Verdict: Converged, Reason: "work complete"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Default().Decide(tt.h)
			if diff := cmp.Diff(tt.want, got, described); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			var unmet []string
			for _, c := range got.Unmet() {
				unmet = append(unmet, c.Name)
			}
			if diff := cmp.Diff(tt.unmet, unmet, described); diff != "" {
				t.Errorf("Unmet (-want +got):\n%s", diff)
			}
		})
	}
}

// configErr is what a validation error names: the policy, the field and
// what is wrong.
type configErr struct{ Policy, Field, Reason string }

// message returns the error message of c, which wraps [ErrInvalidPolicy].
func (c *configErr) message() string {
	return "converge: invalid policy: " + c.Policy + "." + c.Field + " " + c.Reason
}

// messages returns the messages of want.
func messages(want ...*configErr) []string {
	var out []string
	for _, c := range want {
		out = append(out, c.message())
	}
	return out
}

// configErrors flattens err (joined or not) into the messages of its errors.
func configErrors(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, configErrors(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want []*configErr
	}{
		{name: "default_valid", p: Default()},
		{name: "policy_func_valid", p: PolicyFunc(func(*History) Decision { return Decision{} })},
		// The thresholds and the failure threshold are the loop's (History),
		// validated by gap.Thresholds.Validate and the engine: the policies
		// that read them have nothing to validate.
		{name: "field_less_policies_valid", p: Any(ThresholdsMet{}, HighConfidence{}, Failures{})},
		{name: "nil_policy", p: nil, want: []*configErr{{Policy: "Policy", Field: "policy", Reason: "must not be nil"}}},
		{name: "no_progress_negative", p: NoProgress{After: -1},
			want: []*configErr{{Policy: "NoProgress", Field: "After", Reason: "must not be negative, got -1"}}},
		{
			name: "any_validates_children_through_all",
			p:    Any(nil, EarlyStopping{Patience: -1}, Done{}, All(Failures{}, NoProgress{After: -1}, nil)),
			want: []*configErr{
				{Policy: "Any", Field: "policies[0]", Reason: "must not be nil"},
				{Policy: "EarlyStopping", Field: "Patience", Reason: "must not be negative, got -1"},
				{Policy: "NoProgress", Field: "After", Reason: "must not be negative, got -1"},
				{Policy: "All", Field: "policies[2]", Reason: "must not be nil"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.p)
			if (err != nil) != (tt.want != nil) {
				t.Fatalf("Validate() = %v, want error: %v", err, tt.want != nil)
			}
			if err != nil && !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("errors.Is(%v, ErrInvalidPolicy) = false", err)
			}
			if diff := cmp.Diff(messages(tt.want...), configErrors(err), described); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidPolicyMessage(t *testing.T) {
	err := EarlyStopping{Patience: -1}.Validate()
	want := "converge: invalid policy: EarlyStopping.Patience must not be negative, got -1"
	if diff := cmp.Diff(want, err.Error(), described); diff != "" {
		t.Errorf("Error (-want +got):\n%s", diff)
	}
}

func TestDefaultDecideAllocations(t *testing.T) {
	h := at(2, 10, research(0.6, 0.7))
	p := Default()
	// Continue: one allocation for the criteria, one for their details.
	if got := testing.AllocsPerRun(100, func() { p.Decide(h) }); got > 2 {
		t.Errorf("allocs per Decide = %v, want <= 2", got)
	}
}

func BenchmarkDefaultDecide(b *testing.B) {
	h := at(2, 10, research(0.6, 0.7))
	h.Observe(gap.Assessment{Coverage: 0.6, Confidence: 0.7, WorkRemaining: []string{"a", "b"},
		Questions: []gap.Question{{Critical: true, Answered: true}}}, nil)
	p := Default()
	b.ReportAllocs()
	for b.Loop() {
		if p.Decide(h).Stop() {
			b.Fatal("stopped")
		}
	}
}

func BenchmarkEarlyStoppingDecide(b *testing.B) {
	h := run(0, 0, scored(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)...)
	p := EarlyStopping{}
	b.ReportAllocs()
	for b.Loop() {
		if p.Decide(h).Stop() {
			b.Fatal("stopped")
		}
	}
}

// TestDefaultEqualsAny: Default decides exactly as the Any of its policies.
func TestDefaultEqualsAny(t *testing.T) {
	anyOfThem := Any(Done{}, Passing{}, HighConfidence{}, ThresholdsMet{}, Failures{}, NoProgress{}, IterationLimit{})
	histories := map[string]*History{
		"empty":          {},
		"research_low":   at(1, 4, research(0.5, 0.6)),
		"research_max":   at(4, 4, research(0.5, 0.6)),
		"research_full":  at(2, 4, research(0.8, 0.85)),
		"early_exit":     at(2, 4, research(0.9, 0.95)),
		"complete":       at(1, 4, gap.Assessment{Complete: true}),
		"failures":       run(10, 0, step{}, step{failed: true}, step{failed: true}, step{failed: true}),
		"failures_res":   run(10, 0, step{a: research(0.5, 0.5)}, step{a: research(0.5, 0.5), failed: true}, step{a: research(0.5, 0.5), failed: true}, step{a: research(0.5, 0.5), failed: true}),
		"stuck":          run(9, 0, step{a: gap.Assessment{WorkRemaining: []string{"x"}}}, step{a: gap.Assessment{WorkRemaining: []string{"x"}}}, step{a: gap.Assessment{WorkRemaining: []string{"x"}}}),
		"unmeasured_max": at(3, 3, gap.Assessment{}),
		"custom_met":     under(gap.Thresholds{MinCoverage: 0.4, MinConfidence: 0.5}, at(1, 4, research(0.5, 0.6))),
		"custom_unmet":   under(gap.Thresholds{MinCoverage: 0.9, MaxConflicts: -1}, at(4, 4, research(0.8, 0.85))),
		"early_disabled": under(gap.Thresholds{EarlyCoverage: -1}, at(2, 4, research(0.9, 0.95))),
		"early_custom":   under(gap.Thresholds{EarlyCoverage: 0.6, EarlyConfidence: 0.6}, at(1, 4, research(0.65, 0.65))),
		"failures_1":     failingAfter(1, run(10, 0, step{}, step{failed: true})),
		"failures_never": failingAfter(-1, run(10, 0, step{}, step{failed: true}, step{failed: true}, step{failed: true})),
	}
	for name, h := range histories {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(anyOfThem.Decide(h), Default().Decide(h)); diff != "" {
				t.Errorf("Default differs from Any (-any +default):\n%s", diff)
			}
		})
	}
}
