package converge

import (
	"math"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
)

func crit(name string, v, t float64, met bool, detail string) Criterion {
	return Criterion{Name: name, Value: v, Threshold: t, Met: met, Detail: detail}
}

// described compares criteria by what they say: a criterion whose Detail is
// left for Describe to derive equals one that spells it out.
var described = cmp.Transformer("Describe", func(c Criterion) Criterion {
	c.Detail = c.Describe()
	return c
})

func TestThresholdsMet(t *testing.T) {
	answered := []gap.Question{{Text: "a", Critical: true, Answered: true}, {Text: "b", Critical: true, Answered: true}}
	good := func() gap.Assessment {
		return gap.Assessment{Coverage: 0.88, Confidence: 0.91, Questions: answered}
	}
	tests := []struct {
		name string
		th   gap.Thresholds
		a    gap.Assessment
		want Decision
	}{
		{
			name: "seed000/converged_all_four_criteria",
			a:    good(),
			want: Decision{Verdict: Converged,
				Reason: "converged: coverage 0.88 ≥ 0.70, confidence 0.91 ≥ 0.80, conflicts 0 ≤ 2, questions 2/2 answered",
				Criteria: []Criterion{
					crit("coverage", 0.88, 0.70, true, "0.88 ≥ 0.70"),
					crit("confidence", 0.91, 0.80, true, "0.91 ≥ 0.80"),
					crit("conflicts", 0, 2, true, "0 ≤ 2"),
					crit("questions", 2, 2, true, "2/2 answered"),
				}},
		},
		{
			name: "seed000/coverage_below_0.70",
			a:    func() gap.Assessment { a := good(); a.Coverage = 0.65; return a }(),
			want: Decision{Criteria: []Criterion{
				crit("coverage", 0.65, 0.70, false, "0.65 < 0.70"),
				crit("confidence", 0.91, 0.80, true, "0.91 ≥ 0.80"),
				crit("conflicts", 0, 2, true, "0 ≤ 2"),
				crit("questions", 2, 2, true, "2/2 answered"),
			}},
		},
		{
			name: "seed000/coverage_files_analyzed_over_estimated_0.70_passes",
			a:    gap.Assessment{FilesAnalyzed: 7, EstimatedFiles: 10, Confidence: 0.8},
			want: Decision{Verdict: Converged,
				Reason: "converged: coverage 0.70 ≥ 0.70, confidence 0.80 ≥ 0.80, conflicts 0 ≤ 2, questions 0/0 answered",
				Criteria: []Criterion{
					crit("coverage", 0.7, 0.70, true, "0.70 ≥ 0.70"),
					crit("confidence", 0.8, 0.80, true, "0.80 ≥ 0.80"),
					crit("conflicts", 0, 2, true, "0 ≤ 2"),
					crit("questions", 0, 0, true, "0/0 answered"),
				}},
		},
		{
			name: "seed000/confidence_is_average_of_findings_below_0.80",
			a: gap.Assessment{Coverage: 0.9, Confidence: 0.99, Questions: answered,
				Findings: []gap.Finding{{ID: "1", Confidence: 0.9}, {ID: "2", Confidence: 0.6}}},
			want: Decision{Criteria: []Criterion{
				crit("coverage", 0.9, 0.70, true, "0.90 ≥ 0.70"),
				crit("confidence", 0.75, 0.80, false, "0.75 < 0.80"),
				crit("conflicts", 0, 2, true, "0 ≤ 2"),
				crit("questions", 2, 2, true, "2/2 answered"),
			}},
		},
		{
			name: "seed000/unresolved_conflicts_3_above_max_2",
			a: func() gap.Assessment {
				a := good()
				a.Conflicts = []gap.Conflict{{ID: "1"}, {ID: "2", Similarity: 0.5}, {ID: "3"}, {ID: "4", Resolved: true}, {ID: "5", Similarity: 0.9}}
				return a
			}(),
			want: Decision{Criteria: []Criterion{
				crit("coverage", 0.88, 0.70, true, "0.88 ≥ 0.70"),
				crit("confidence", 0.91, 0.80, true, "0.91 ≥ 0.80"),
				crit("conflicts", 3, 2, false, "3 > 2"),
				crit("questions", 2, 2, true, "2/2 answered"),
			}},
		},
		{
			name: "seed000/critical_question_partially_answered_is_unanswered",
			a: func() gap.Assessment {
				a := good()
				a.Questions = []gap.Question{{Critical: true, Answered: true}, {Critical: true, Answered: true, Partial: true}, {Critical: false}}
				return a
			}(),
			want: Decision{Criteria: []Criterion{
				crit("coverage", 0.88, 0.70, true, "0.88 ≥ 0.70"),
				crit("confidence", 0.91, 0.80, true, "0.91 ≥ 0.80"),
				crit("conflicts", 0, 2, true, "0 ≤ 2"),
				crit("questions", 1, 2, false, "1/2 answered"),
			}},
		},
		{
			name: "seed000/no_measurement_does_not_converge_nor_judge",
			want: Decision{},
		},
		{
			name: "close_values_shown_with_more_decimals",
			a:    func() gap.Assessment { a := good(); a.Coverage = 0.699; return a }(),
			want: Decision{Criteria: []Criterion{
				crit("coverage", 0.699, 0.70, false, "0.699 < 0.700"),
				crit("confidence", 0.91, 0.80, true, "0.91 ≥ 0.80"),
				crit("conflicts", 0, 2, true, "0 ≤ 2"),
				crit("questions", 2, 2, true, "2/2 answered"),
			}},
		},
		{
			name: "rounding_error_within_tolerance_meets",
			a:    func() gap.Assessment { a := good(); a.Coverage = 0.1 + 0.6; return a }(),
			want: Decision{Verdict: Converged,
				Reason: "converged: coverage 0.70 ≥ 0.70, confidence 0.91 ≥ 0.80, conflicts 0 ≤ 2, questions 2/2 answered",
				Criteria: []Criterion{
					crit("coverage", 0.1+0.6, 0.70, true, "0.70 ≥ 0.70"),
					crit("confidence", 0.91, 0.80, true, "0.91 ≥ 0.80"),
					crit("conflicts", 0, 2, true, "0 ≤ 2"),
					crit("questions", 2, 2, true, "2/2 answered"),
				}},
		},
		{
			name: "custom_thresholds_no_conflicts_allowed",
			th:   gap.Thresholds{MinCoverage: 0.5, MinConfidence: 0.6, MaxConflicts: -1},
			a: func() gap.Assessment {
				a := research(0.5, 0.6)
				a.Conflicts = []gap.Conflict{{ID: "1"}}
				return a
			}(),
			want: Decision{Criteria: []Criterion{
				crit("coverage", 0.5, 0.5, true, "0.50 ≥ 0.50"),
				crit("confidence", 0.6, 0.6, true, "0.60 ≥ 0.60"),
				crit("conflicts", 1, 0, false, "1 > 0"),
				crit("questions", 0, 0, true, "0/0 answered"),
			}},
		},
		{
			name: "unmeasured_coverage_and_confidence_not_judged",
			a:    gap.Assessment{Questions: []gap.Question{{Critical: true, Answered: true}}},
			want: Decision{Verdict: Converged,
				Reason: "converged: conflicts 0 ≤ 2, questions 1/1 answered",
				Criteria: []Criterion{
					crit("conflicts", 0, 2, true, "0 ≤ 2"),
					crit("questions", 1, 1, true, "1/1 answered"),
				}},
		},
		{
			name: "allow_unanswered_and_negative_minimums",
			th:   gap.Thresholds{MinCoverage: -1, MinConfidence: -1, MaxConflicts: 5, AllowUnanswered: true},
			a:    gap.Assessment{EstimatedFiles: 4, Confidence: 0.01, Questions: []gap.Question{{Critical: true}}},
			want: Decision{Verdict: Converged,
				Reason: "converged: coverage 0.00 ≥ 0.00, confidence 0.01 ≥ 0.00, conflicts 0 ≤ 5, questions 0/1 answered (not required)",
				Criteria: []Criterion{
					crit("coverage", 0, 0, true, "0.00 ≥ 0.00"),
					crit("confidence", 0.01, 0, true, "0.01 ≥ 0.00"),
					crit("conflicts", 0, 5, true, "0 ≤ 5"),
					crit("questions", 0, 1, true, "0/1 answered (not required)"),
				}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ThresholdsMet{}.Decide(under(tt.th, at(1, 4, tt.a)))
			if diff := cmp.Diff(tt.want, got, described); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if tt.want.Criteria == nil {
				return // not judged: Evaluate still reports, Decide does not
			}
			if diff := cmp.Diff(tt.want.Criteria, Evaluate(&tt.a, tt.th), described); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestThresholdsNeverMetByNaN (issue 28, item 5): a NaN coverage or
// confidence never meets its threshold nor the early-exit level; +Inf
// meets both. (Mutant caught: atLeast written as !(v < min-tolerance).)
func TestThresholdsNeverMetByNaN(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tt := range []struct {
		name      string
		cov, conf float64
		want      Verdict
	}{
		{"nan_coverage", nan, 0.95, Continue},
		{"nan_confidence", 0.95, nan, Continue},
		{"inf_coverage", inf, 0.95, EarlyExit},
	} {
		h := run(0, 0, step{a: research(tt.cov, tt.conf)})
		got := Any(ThresholdsMet{}, HighConfidence{}).Decide(h)
		if tt.want == EarlyExit && got.Verdict != Converged && got.Verdict != EarlyExit || tt.want == Continue && got.Verdict != Continue {
			t.Errorf("%s: %v (%s), want %v", tt.name, got.Verdict, got.Reason, tt.want)
		}
		if got := (HighConfidence{}).Decide(h); (got.Verdict == EarlyExit) != (tt.want == EarlyExit) {
			t.Errorf("%s: HighConfidence %v, want %v", tt.name, got.Verdict, tt.want)
		}
	}
}

func TestThresholdsMetNil(t *testing.T) {
	if diff := cmp.Diff(Decision{}, (ThresholdsMet{}).Decide(nil)); diff != "" {
		t.Errorf("Decide(nil) (-want +got):\n%s", diff)
	}
	want := Evaluate(&gap.Assessment{}, gap.Thresholds{})
	if diff := cmp.Diff(want, Evaluate(nil, gap.Thresholds{})); diff != "" {
		t.Errorf("Evaluate(nil) (-want +got):\n%s", diff)
	}
}

func TestHighConfidence(t *testing.T) {
	tests := []struct {
		name           string
		th             gap.Thresholds
		iteration, max int
		a              gap.Assessment
		want           Decision
	}{
		{
			name: "seed000/early_exit_0.85_0.90", iteration: 2, max: 4, a: research(0.88, 0.92),
			want: Decision{Verdict: EarlyExit,
				Reason: "high confidence reached: coverage 0.88 ≥ 0.85, confidence 0.92 ≥ 0.90 (skipped 2 potential iterations)",
				Criteria: []Criterion{
					crit("coverage", 0.88, 0.85, true, "0.88 ≥ 0.85"),
					crit("confidence", 0.92, 0.90, true, "0.92 ≥ 0.90"),
				}},
		},
		{
			name: "seed000/early_exit_exactly_at_levels_one_skipped", iteration: 3, max: 4, a: research(0.85, 0.90),
			want: Decision{Verdict: EarlyExit,
				Reason: "high confidence reached: coverage 0.85 ≥ 0.85, confidence 0.90 ≥ 0.90 (skipped 1 potential iteration)",
				Criteria: []Criterion{
					crit("coverage", 0.85, 0.85, true, "0.85 ≥ 0.85"),
					crit("confidence", 0.90, 0.90, true, "0.90 ≥ 0.90"),
				}},
		},
		{
			name: "seed000/early_exit_unlimited_loop_no_skipped_count", iteration: 1, a: research(0.9, 0.95),
			want: Decision{Verdict: EarlyExit,
				Reason: "high confidence reached: coverage 0.90 ≥ 0.85, confidence 0.95 ≥ 0.90",
				Criteria: []Criterion{
					crit("coverage", 0.9, 0.85, true, "0.90 ≥ 0.85"),
					crit("confidence", 0.95, 0.90, true, "0.95 ≥ 0.90"),
				}},
		},
		{name: "seed000/early_exit_needs_confidence_0.90", iteration: 2, max: 4, a: research(0.95, 0.89), want: Decision{}},
		{name: "seed000/early_exit_needs_coverage_0.85", iteration: 2, max: 4, a: research(0.84, 0.99), want: Decision{}},
		{
			name: "custom_levels", th: gap.Thresholds{EarlyCoverage: 0.5, EarlyConfidence: 0.5}, iteration: 4, max: 4, a: research(0.5, 0.5),
			want: Decision{Verdict: EarlyExit,
				Reason: "high confidence reached: coverage 0.50 ≥ 0.50, confidence 0.50 ≥ 0.50",
				Criteria: []Criterion{
					crit("coverage", 0.5, 0.5, true, "0.50 ≥ 0.50"),
					crit("confidence", 0.5, 0.5, true, "0.50 ≥ 0.50"),
				}},
		},
		{
			name: "convergence_thresholds_do_not_move_early_levels", th: gap.Thresholds{MinCoverage: 0.5, MinConfidence: 0.5},
			iteration: 2, max: 4, a: research(0.84, 0.99), want: Decision{},
		},
		{name: "negative_early_coverage_disables", th: gap.Thresholds{EarlyCoverage: -1}, iteration: 1, max: 4, a: research(1, 1), want: Decision{}},
		{name: "negative_early_confidence_disables", th: gap.Thresholds{EarlyConfidence: -0.5}, iteration: 1, max: 4, a: research(1, 1), want: Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HighConfidence{}.Decide(under(tt.th, at(tt.iteration, tt.max, tt.a)))
			if diff := cmp.Diff(tt.want, got, described); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIterationLimit(t *testing.T) {
	tests := []struct {
		name           string
		p              IterationLimit
		iteration, max int
		want           Decision
	}{
		{name: "seed004/max_iterations_0_unlimited", iteration: 1000, max: 0, want: Decision{}},
		{name: "seed004/max_iterations_1_single_iteration", iteration: 1, max: 1,
			want: Decision{Verdict: MaxIterations, Reason: "max iterations reached: 1 of 1"}},
		{name: "seed004/max_iterations_1_runs_the_first", iteration: 0, max: 1, want: Decision{}},
		{name: "seed000/continue_while_below_max_4", iteration: 3, max: 4, want: Decision{}},
		{name: "seed000/partial_at_max_4", iteration: 4, max: 4,
			want: Decision{Verdict: MaxIterations, Reason: "max iterations reached: 4 of 4"}},
		{name: "seed002/escalate_at_max_3", p: IterationLimit{Escalate: true}, iteration: 3, max: 3,
			want: Decision{Verdict: Escalate, Reason: "max iterations reached: 3 of 3; escalating"}},
		{name: "seed002/retry_below_max_3", p: IterationLimit{Escalate: true}, iteration: 2, max: 3, want: Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{Iteration: tt.iteration, MaxIterations: tt.max}
			if diff := cmp.Diff(tt.want, tt.p.Decide(h), described); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoProgress(t *testing.T) {
	work := func(items ...string) step { return step{a: gap.Assessment{WorkRemaining: items}} }
	tests := []struct {
		name  string
		p     NoProgress
		steps []step
		want  Decision
	}{
		{
			name:  "seed003/stuck_after_2_unchanged",
			steps: []step{work("Phase_6", "Phase_7"), work("Phase_6", "Phase_7"), work("Phase_6", "Phase_7")},
			want:  Decision{Verdict: Stuck, Reason: "stuck: work remaining unchanged for 2 iterations: Phase_6 Phase_7"},
		},
		{
			name:  "seed003/one_unchanged_continues",
			steps: []step{work("Phase_5", "Phase_6"), work("Phase_6", "Phase_7"), work("Phase_6", "Phase_7")},
			want:  Decision{},
		},
		{
			name:  "seed003/progress_resets_count",
			steps: []step{work("a", "b"), work("a", "b"), work("b"), work("b")},
			want:  Decision{},
		},
		{
			name:  "seed003/empty_work_remaining_never_stuck",
			steps: []step{work(), work(), work(), work()},
			want:  Decision{},
		},
		{
			name:  "custom_after_1",
			p:     NoProgress{After: 1},
			steps: []step{work("x"), work("x")},
			want:  Decision{Verdict: Stuck, Reason: "stuck: work remaining unchanged for 1 iteration: x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.p.Decide(run(0, 0, tt.steps...))); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	outcomes := func(failed ...bool) []step {
		steps := []step{{}}
		for _, f := range failed {
			steps = append(steps, step{failed: f})
		}
		return steps
	}
	tests := []struct {
		name      string
		threshold int // History.FailureThreshold
		steps     []step
		want      Decision
	}{
		{name: "seed004/abort_after_3_consecutive_failures", steps: outcomes(false, false, false, true, true, true),
			want: Decision{Verdict: Aborted, Reason: "aborting after 3 consecutive failures"}},
		{name: "seed004/2_failures_continue", steps: outcomes(true, true), want: Decision{}},
		{name: "seed004/failures_reset_on_success", steps: outcomes(true, true, false, true, true), want: Decision{}},
		{name: "custom_threshold_1", threshold: 1, steps: outcomes(true),
			want: Decision{Verdict: Aborted, Reason: "aborting after 1 consecutive failure"}},
		{name: "negative_threshold_never_aborts", threshold: -1, steps: outcomes(true, true, true, true), want: Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Failures{}.Decide(failingAfter(tt.threshold, run(0, 0, tt.steps...)))); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDoneAndPassing(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		a    gap.Assessment
		want Decision
	}{
		{name: "done/complete", p: Done{}, a: gap.Assessment{Complete: true},
			want: Decision{Verdict: Converged, Reason: "work complete"}},
		{name: "done/incomplete", p: Done{}, want: Decision{}},
		{name: "seed002/proceed_tests_pass_review_approve", p: Passing{},
			a:    gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{Passed: true}, Review: &gap.Review{Status: gap.ReviewApprove}}},
			want: Decision{Verdict: Converged, Reason: "tests passed and review approved"}},
		{name: "seed002/tests_only_pass", p: Passing{},
			a:    gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{Passed: true}}},
			want: Decision{Verdict: Converged, Reason: "tests passed"}},
		{name: "seed002/review_only_approve", p: Passing{},
			a:    gap.Assessment{Signals: gap.Signals{Review: &gap.Review{Status: gap.ReviewApprove}}},
			want: Decision{Verdict: Converged, Reason: "review approved"}},
		{name: "seed002/retry_on_test_fail", p: Passing{},
			a:    gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{}, Review: &gap.Review{Status: gap.ReviewApprove}}},
			want: Decision{}},
		{name: "seed002/retry_on_review_pending", p: Passing{},
			a:    gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{Passed: true}, Review: &gap.Review{Status: gap.ReviewPending}}},
			want: Decision{}},
		{name: "seed002/no_checks_run_continue", p: Passing{}, want: Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.p.Decide(at(1, 3, tt.a))); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNilHistoryContinues(t *testing.T) {
	policies := map[string]Policy{
		"ThresholdsMet": ThresholdsMet{}, "HighConfidence": HighConfidence{}, "IterationLimit": IterationLimit{},
		"NoProgress": NoProgress{}, "Failures": Failures{}, "Done": Done{}, "Passing": Passing{},
		"EarlyStopping": EarlyStopping{}, "Diminishing": Diminishing{}, "Default": Default(),
		"All": All(Done{}, Passing{}),
	}
	for name, p := range policies {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(Decision{}, p.Decide(nil), described); diff != "" {
				t.Errorf("Decide(nil) (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		v       Verdict
		name    string
		success bool
	}{
		{Continue, "continue", false}, {Converged, "converged", true}, {EarlyExit, "early_exit", true},
		{MaxIterations, "max_iterations", false}, {Stuck, "stuck", false}, {Plateau, "plateau", false},
		{Aborted, "aborted", false}, {Escalate, "escalate", false}, {Verdict(42), "verdict(42)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.name, tt.v.String(), described); diff != "" {
				t.Errorf("String (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.success, tt.v.Success(), described); diff != "" {
				t.Errorf("Success (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendFixedMatchesStrconv(t *testing.T) {
	values := []float64{0, 0.001, 0.005, 0.175, 0.125, 0.375, 2.5, 0.0625, 0.03125, 0.0149, 0.1 + 0.6, 0.285, 0.5, 0.699, 0.7, 0.72, 0.845, 0.88, 0.9999, 0.99999999, 1, 2, 17, 1234.5678, -0.05, 1e12}
	for i := 0; i <= 2000; i++ {
		values = append(values, float64(i)/2000, float64(i)*0.0005, float64(i)/1000+0.0005)
	}
	for _, v := range values {
		for prec := 0; prec <= 7; prec++ {
			want := strconv.FormatFloat(v, 'f', prec, 64)
			if got := string(appendFixed(nil, v, prec)); got != want {
				t.Errorf("appendFixed(%v, %d) = %q, want %q", v, prec, got, want)
			}
		}
	}
}
