package converge

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
)

func TestEarlyStopping(t *testing.T) {
	plateau := func(reason string) Decision { return Decision{Verdict: Plateau, Reason: reason} }
	multi := func(pairs ...[2]float64) []step {
		steps := make([]step, len(pairs))
		for i, p := range pairs {
			steps[i] = step{a: gap.Assessment{Score: p[0], Scores: map[string]float64{"quality": p[1]}}}
		}
		return steps
	}
	conflicts := func(counts ...int) []step {
		steps := make([]step, len(counts))
		for i, n := range counts {
			steps[i].a.Conflicts = make([]gap.Conflict, n)
		}
		return steps
	}
	tests := []struct {
		name   string
		p      EarlyStopping
		window int
		steps  []step
		want   Decision
	}{
		{name: "keras/patience_3_no_improvement", steps: scored(0.5, 0.6, 0.6, 0.6, 0.6),
			want: plateau("plateau: score did not improve for 3 iterations")},
		{name: "keras/patience_3_improved_within_patience", steps: scored(0.5, 0.6, 0.6, 0.6),
			want: Decision{}},
		{name: "keras/patience_3_needs_patience_plus_1_records", steps: scored(0.5, 0.5, 0.5),
			want: Decision{}},
		{name: "keras/patience_3_worse_values_do_not_improve", steps: scored(0.9, 0.8, 0.7, 0.6),
			want: plateau("plateau: score did not improve for 3 iterations")},
		{name: "keras/reference_is_best_earlier_record", p: EarlyStopping{Patience: 2}, steps: scored(0.2, 0.9, 0.3, 0.8, 0.85),
			want: plateau("plateau: score did not improve for 2 iterations")},
		{name: "keras/min_delta_small_gains_do_not_count", p: EarlyStopping{MinDelta: 0.01}, steps: scored(0.5, 0.6, 0.605, 0.609, 0.6),
			want: plateau("plateau: score did not improve for 3 iterations (min delta 0.01)")},
		{name: "keras/min_delta_zero_any_gain_counts", steps: scored(0.5, 0.6, 0.605, 0.609, 0.6),
			want: Decision{}},
		{name: "keras/min_delta_gain_must_be_strictly_more", p: EarlyStopping{Patience: 2, MinDelta: 0.25}, steps: scored(0.5, 0.75, 0.75, 1),
			want: plateau("plateau: score did not improve for 2 iterations (min delta 0.25)")},
		{name: "keras/min_delta_gain_more_than_delta_counts", p: EarlyStopping{Patience: 2, MinDelta: 0.25}, steps: scored(0.5, 0.75, 0.75, 1.0625),
			want: Decision{}},
		{name: "keras/baseline_never_exceeded", p: EarlyStopping{Patience: 2, Baseline: ptr(0.8)}, steps: scored(0.5, 0.6, 0.7),
			want: plateau("plateau: score did not improve for 2 iterations (baseline 0.8)")},
		{name: "keras/baseline_patience_counts_iterations_not_initial_state", p: EarlyStopping{Patience: 2, Baseline: ptr(0.8)}, steps: scored(0.5, 0.6),
			want: Decision{}},
		{name: "keras/baseline_exceeded_continues", p: EarlyStopping{Patience: 2, Baseline: ptr(0.8)}, steps: scored(0.5, 0.6, 0.85),
			want: Decision{}},
		{name: "keras/baseline_must_be_exceeded_by_min_delta", p: EarlyStopping{Patience: 2, Baseline: ptr(0.5), MinDelta: 0.25}, steps: scored(0, 0.5, 0.75),
			want: plateau("plateau: score did not improve for 2 iterations (min delta 0.25, baseline 0.5)")},
		{name: "keras/baseline_lower_than_earlier_best_uses_best", p: EarlyStopping{Patience: 2, Baseline: ptr(0.1)}, steps: scored(0.9, 0.5, 0.6),
			want: plateau("plateau: score did not improve for 2 iterations (baseline 0.1)")},
		{name: "keras/warm_up_ignores_early_records", p: EarlyStopping{Patience: 2, WarmUp: 2}, steps: scored(0.9, 0.5, 0.5, 0.5),
			want: Decision{}},
		{name: "keras/warm_up_then_patience", p: EarlyStopping{Patience: 2, WarmUp: 2}, steps: scored(0.9, 0.5, 0.5, 0.5, 0.5),
			want: plateau("plateau: score did not improve for 2 iterations")},
		{name: "keras/without_warm_up_early_high_score_stops", p: EarlyStopping{Patience: 2}, steps: scored(0.9, 0.5, 0.5),
			want: plateau("plateau: score did not improve for 2 iterations")},
		{name: "keras/no_plateau_until_more_than_warm_up_iterations", p: EarlyStopping{Patience: 1, WarmUp: 2, Baseline: ptr(1)}, steps: scored(0.5, 0.5, 0.5),
			want: Decision{}},
		{name: "keras/warm_up_with_baseline", p: EarlyStopping{Patience: 1, WarmUp: 2, Baseline: ptr(1)}, steps: scored(0.5, 0.5, 0.5, 0.5),
			want: plateau("plateau: score did not improve for 1 iteration (baseline 1)")},
		{name: "keras/minimize_conflicts_flat", p: EarlyStopping{Metrics: []string{CriterionConflicts}, Minimize: true}, steps: conflicts(3, 2, 2, 2, 2),
			want: plateau("plateau: conflicts did not improve for 3 iterations")},
		{name: "keras/minimize_conflicts_decreasing", p: EarlyStopping{Metrics: []string{CriterionConflicts}, Minimize: true}, steps: conflicts(3, 2, 2, 2, 1),
			want: Decision{}},
		{name: "multi_metric/one_improving_continues", p: EarlyStopping{Metrics: []string{"score", "quality"}},
			steps: multi([2]float64{0.5, 0.1}, [2]float64{0.5, 0.2}, [2]float64{0.5, 0.3}, [2]float64{0.5, 0.4}),
			want:  Decision{}},
		{name: "multi_metric/plateau_when_none_improves", p: EarlyStopping{Metrics: []string{"score", "quality"}},
			steps: multi([2]float64{0.5, 0.4}, [2]float64{0.5, 0.4}, [2]float64{0.5, 0.3}, [2]float64{0.5, 0.4}),
			want:  plateau("plateau: score, quality did not improve for 3 iterations")},
		{name: "multi_metric/missing_metric_never_plateaus", p: EarlyStopping{Metrics: []string{"score", "missing"}}, steps: scored(0.5, 0.5, 0.5, 0.5, 0.5),
			want: Decision{}},
		{name: "window_smaller_than_patience_never_plateaus", window: 3, steps: scored(0.5, 0.5, 0.5, 0.5, 0.5, 0.5),
			want: Decision{}},
		{name: "reference_limited_to_window", p: EarlyStopping{Patience: 2}, window: 3, steps: scored(0.9, 0.3, 0.4, 0.5),
			want: Decision{}},
		{name: "reference_from_whole_default_window", p: EarlyStopping{Patience: 2}, steps: scored(0.9, 0.3, 0.4, 0.5),
			want: plateau("plateau: score did not improve for 2 iterations")},
		// Issue 28, item 5: a NaN counts as no improvement, as in Keras.
		// (Mutant caught: NaN records skipped, as before, which let a loop
		// of NaN scores run forever and stopped these one step late.)
		{name: "nan/counts_as_no_improvement", p: EarlyStopping{Patience: 2}, steps: scored(0.5, math.NaN(), 0.5),
			want: plateau("plateau: score did not improve for 2 iterations")},
		{name: "nan/every_score_nan_plateaus", p: EarlyStopping{Patience: 2}, steps: scored(math.NaN(), math.NaN(), math.NaN()),
			want: plateau("plateau: score did not improve for 2 iterations")},
		{name: "nan/is_never_the_reference", p: EarlyStopping{Patience: 2}, steps: scored(math.NaN(), math.NaN(), 0.1),
			want: Decision{}},
		{name: "nan/is_never_the_reference_minimize", p: EarlyStopping{Patience: 2, Minimize: true}, steps: scored(math.NaN(), 0.9, math.NaN()),
			want: Decision{}},
		{name: "nan/never_beats_a_baseline", p: EarlyStopping{Patience: 1, Baseline: ptr(-1.0)}, steps: scored(math.NaN(), math.NaN()),
			want: plateau("plateau: score did not improve for 1 iteration (baseline -1)")},
		{name: "inf/plus_inf_improves_on_any_value", p: EarlyStopping{Patience: 2}, steps: scored(0.5, 0.5, math.Inf(1)),
			want: Decision{}},
		{name: "inf/plus_inf_reference_is_never_beaten", p: EarlyStopping{Patience: 2}, steps: scored(math.Inf(1), 0.9, math.Inf(1)),
			want: plateau("plateau: score did not improve for 2 iterations")},
		{name: "inf/minus_inf_improves_when_minimizing", p: EarlyStopping{Patience: 2, Minimize: true}, steps: scored(0.5, 0.5, math.Inf(-1)),
			want: Decision{}},
		{name: "inf/minus_inf_is_a_reference_to_beat", p: EarlyStopping{Patience: 1}, steps: scored(math.Inf(-1), math.Inf(-1)),
			want: plateau("plateau: score did not improve for 1 iteration")},
		// Issue 28, docs: the baseline rule Keras lacks. A metric improving
		// below the baseline stops the loop after Patience iterations.
		{name: "baseline/improving_below_the_baseline_stops", p: EarlyStopping{Patience: 2, Baseline: ptr(0.9)}, steps: scored(0.1, 0.2, 0.3),
			want: plateau("plateau: score did not improve for 2 iterations (baseline 0.9)")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := run(0, tt.window, tt.steps...)
			if diff := cmp.Diff(tt.want, tt.p.Decide(h)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEarlyStoppingValidate(t *testing.T) {
	tests := []struct {
		name string
		p    EarlyStopping
		want *configErr // nil: valid
	}{
		{name: "zero_value_valid", p: EarlyStopping{}},
		{name: "full_config_valid", p: EarlyStopping{Metrics: []string{"score", "q"}, Patience: 31, MinDelta: 0.1, Baseline: ptr(0.5), WarmUp: 2, Minimize: true}},
		{name: "negative_patience", p: EarlyStopping{Patience: -1},
			want: &configErr{Policy: "EarlyStopping", Field: "Patience", Reason: "must not be negative, got -1"}},
		{name: "patience_not_below_window", p: EarlyStopping{Patience: DefaultWindow},
			want: &configErr{Policy: "EarlyStopping", Field: "Patience", Reason: "must be less than the history window (32), got 32"}},
		{name: "negative_min_delta", p: EarlyStopping{MinDelta: -0.1},
			want: &configErr{Policy: "EarlyStopping", Field: "MinDelta", Reason: "must be a finite value >= 0, got -0.1"}},
		{name: "nan_min_delta", p: EarlyStopping{MinDelta: math.NaN()},
			want: &configErr{Policy: "EarlyStopping", Field: "MinDelta", Reason: "must be a finite value >= 0, got NaN"}},
		{name: "negative_warm_up", p: EarlyStopping{WarmUp: -2},
			want: &configErr{Policy: "EarlyStopping", Field: "WarmUp", Reason: "must not be negative, got -2"}},
		{name: "infinite_baseline", p: EarlyStopping{Baseline: ptr(math.Inf(1))},
			want: &configErr{Policy: "EarlyStopping", Field: "Baseline", Reason: "must be finite, got +Inf"}},
		{name: "empty_metric", p: EarlyStopping{Metrics: []string{"score", ""}},
			want: &configErr{Policy: "EarlyStopping", Field: "Metrics[1]", Reason: "must not be empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("errors.Is(%v, ErrInvalidPolicy) = false", err)
			}
			if diff := cmp.Diff(tt.want.message(), err.Error()); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEarlyStoppingDoesNotAllocate(t *testing.T) {
	h := run(0, 0, scored(0.1, 0.2, 0.3, 0.4, 0.5, 0.6)...)
	p := EarlyStopping{Metrics: []string{"score", "coverage"}, MinDelta: 0.01}
	if got := testing.AllocsPerRun(100, func() { p.Decide(h) }); got != 0 {
		t.Errorf("allocs per Decide = %v, want 0", got)
	}
}
