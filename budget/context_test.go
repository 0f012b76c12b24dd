package budget_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/refine-go/refine/budget"
)

func TestContextWindow(t *testing.T) {
	tests := []struct {
		name          string
		w             budget.ContextWindow
		tokens        int64
		wantUsage     float64
		wantExhausted bool
	}{
		{"seed003/context_threshold_90_percent/below", budget.ContextWindow{Size: 200000}, 179999, 0.899995, false},
		{"seed003/context_threshold_90_percent/at", budget.ContextWindow{Size: 200000}, 180000, 0.9, true},
		{"seed003/context_threshold_90_percent/over", budget.ContextWindow{Size: 200000}, 190000, 0.95, true},
		{"seed003/context_threshold_90_percent/explicit", budget.ContextWindow{Size: 200000, Threshold: 0.90}, 180000, 0.9, true},
		{"seed003/context_usage_33.4_percent_continues", budget.ContextWindow{Size: 200000}, 66889, 0.334445, false},
		{"custom_threshold_below", budget.ContextWindow{Size: 1000, Threshold: 0.5}, 499, 0.499, false},
		{"custom_threshold_at", budget.ContextWindow{Size: 1000, Threshold: 0.5}, 500, 0.5, true},
		{"threshold_one_full_window", budget.ContextWindow{Size: 1000, Threshold: 1}, 1000, 1, true},
		{"threshold_one_below_full", budget.ContextWindow{Size: 1000, Threshold: 1}, 999, 0.999, false},
		{"over_the_window", budget.ContextWindow{Size: 1000}, 3000, 3, true},
		{"unknown_size_never_exhausted", budget.ContextWindow{}, math.MaxInt64, 0, false},
		{"zero_tokens", budget.ContextWindow{Size: 1000}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := struct {
				Usage     float64
				Exhausted bool
			}{tt.w.Usage(tt.tokens), tt.w.Exhausted(tt.tokens)}
			want := got
			want.Usage, want.Exhausted = tt.wantUsage, tt.wantExhausted
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%+v with %d tokens (-want +got):\n%s", tt.w, tt.tokens, diff)
			}
		})
	}
}

// TestContextThresholdExactForEveryWindow checks that the token count at
// exactly the threshold share is exhausted and one less is not, whatever the
// window size: the comparison must not suffer from float rounding.
func TestContextThresholdExactForEveryWindow(t *testing.T) {
	t.Run("seed003/context_threshold_90_percent/every_size", func(t *testing.T) {
		for size := int64(10); size <= 1_000_000; size += 10 {
			w := budget.ContextWindow{Size: size}
			at := size / 10 * 9
			if !w.Exhausted(at) || w.Exhausted(at-1) {
				t.Fatalf("size %d: Exhausted(%d) = %v, Exhausted(%d) = %v; want true, false",
					size, at, w.Exhausted(at), at-1, w.Exhausted(at-1))
			}
		}
	})
}

func TestContextWindowValidate(t *testing.T) {
	tests := []struct {
		name string
		w    budget.ContextWindow
		want *fieldErr
	}{
		{"zero", budget.ContextWindow{}, nil},
		{"typical", budget.ContextWindow{Size: 200000, Threshold: 0.9}, nil},
		{"threshold_one", budget.ContextWindow{Size: 1, Threshold: 1}, nil},
		{"negative_size", budget.ContextWindow{Size: -1}, &fieldErr{Field: "Size", Reason: "negative (-1)"}},
		{"negative_threshold", budget.ContextWindow{Size: 10, Threshold: -0.5}, &fieldErr{Field: "Threshold", Reason: "outside [0, 1] (-0.5)"}},
		{"threshold_over_one", budget.ContextWindow{Size: 10, Threshold: 90}, &fieldErr{Field: "Threshold", Reason: "outside [0, 1] (90)"}},
		{"threshold_nan", budget.ContextWindow{Size: 10, Threshold: math.NaN()}, &fieldErr{Field: "Threshold", Reason: "outside [0, 1] (NaN)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.w.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, budget.ErrInvalidLimits) {
				t.Fatalf("Validate() = %v, want ErrInvalidLimits", err)
			}
			if diff := cmp.Diff(tt.want.message(budget.ErrInvalidLimits), err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEstimateContext(t *testing.T) {
	tests := []struct {
		name                       string
		completed, remaining       int
		perCompleted, perRemaining int64
		want                       int64
	}{
		{"seed003/estimate_8k_completed_6k_remaining", 5, 3, 0, 0, 5*8000 + 3*6000},
		{"seed003/estimate_completed_only", 4, 0, 0, 0, 32000},
		{"seed003/estimate_remaining_only", 0, 4, 0, 0, 24000},
		{"nothing", 0, 0, 0, 0, 0},
		{"custom_per_item", 2, 3, 1000, 500, 3500},
		{"negative_per_item_means_default", 1, 1, -1, -1, 14000},
		{"negative_counts_count_as_zero", -3, 2, 0, 0, 12000},
		{"saturates", math.MaxInt, math.MaxInt, 0, 0, math.MaxInt64},
		{"saturates_on_sum", 1, 1, math.MaxInt64 - 10, 100, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := budget.EstimateContext(tt.completed, tt.remaining, tt.perCompleted, tt.perRemaining)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("EstimateContext(%d, %d, %d, %d) mismatch (-want +got):\n%s",
					tt.completed, tt.remaining, tt.perCompleted, tt.perRemaining, diff)
			}
		})
	}
}

// TestContextCheckpoint combines the seed 003 estimate with its threshold:
// with a 200,000-token window, work halts and checkpoints once the estimate
// reaches 180,000 tokens.
func TestContextCheckpoint(t *testing.T) {
	w := budget.ContextWindow{Size: 200000}
	tests := []struct {
		name                 string
		completed, remaining int
		wantHalt             bool
	}{
		{"seed003/halt_at_threshold", 12, 14, true},         // 96,000 + 84,000 = 180,000
		{"seed003/continue_below_threshold", 12, 13, false}, // 174,000
		{"seed003/halt_over_threshold", 20, 10, true},       // 220,000
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.Exhausted(budget.EstimateContext(tt.completed, tt.remaining, 0, 0))
			if diff := cmp.Diff(tt.wantHalt, got); diff != "" {
				t.Errorf("halt mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
