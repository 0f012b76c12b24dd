package gap

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestThresholdsDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Thresholds
		want Thresholds
	}{
		{
			name: "seed000/zero_value_defaults_coverage_0.70_confidence_0.80",
			want: Thresholds{
				MinCoverage: 0.70, MinConfidence: 0.80, MaxConflicts: 2, EarlyCoverage: 0.85, EarlyConfidence: 0.90,
				MinCompleteness: 0.90, MinQuality: 0.70, MinSignalConfidence: 0.80,
			},
		},
		{
			name: "signal_confidence_follows_MinConfidence",
			in:   Thresholds{MinConfidence: 0.6},
			want: Thresholds{
				MinCoverage: 0.70, MinConfidence: 0.6, MaxConflicts: 2, EarlyCoverage: 0.85, EarlyConfidence: 0.90,
				MinCompleteness: 0.90, MinQuality: 0.70, MinSignalConfidence: 0.6,
			},
		},
		{
			name: "negative_kept_disabled",
			in: Thresholds{
				MinCoverage: -1, MinConfidence: -1, MaxConflicts: -1, EarlyCoverage: -1, EarlyConfidence: -1,
				MinCompleteness: -1, MinQuality: -1,
			},
			want: Thresholds{
				MinCoverage: -1, MinConfidence: -1, MaxConflicts: -1, EarlyCoverage: -1, EarlyConfidence: -1,
				MinCompleteness: -1, MinQuality: -1, MinSignalConfidence: -1,
			},
		},
		{
			name: "explicit_values_kept",
			in: Thresholds{
				MinCoverage: 0.5, MinConfidence: 0.9, MaxConflicts: 5, AllowUnanswered: true, EarlyCoverage: 0.95, EarlyConfidence: 0.99,
				MinCompleteness: 1, MinQuality: 0.3, MinSignalConfidence: 0.75,
			},
			want: Thresholds{
				MinCoverage: 0.5, MinConfidence: 0.9, MaxConflicts: 5, AllowUnanswered: true, EarlyCoverage: 0.95, EarlyConfidence: 0.99,
				MinCompleteness: 1, MinQuality: 0.3, MinSignalConfidence: 0.75,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.in.Effective()); diff != "" {
				t.Errorf("Effective (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, tt.in.withDefaults()); diff != "" {
				t.Errorf("withDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestThresholdsValidate(t *testing.T) {
	tests := []struct {
		name string
		th   Thresholds
		want error // nil or the error of invalidThreshold
	}{
		{"zero_ok", Thresholds{}, nil},
		{"negative_ok", Thresholds{MinQuality: math.Inf(-1)}, nil},
		{"one_ok", Thresholds{MinCoverage: 1}, nil},
		{"coverage_above_one", Thresholds{MinCoverage: 1.01}, invalidThreshold("MinCoverage", 1.01)},
		{"confidence_inf", Thresholds{MinConfidence: math.Inf(1)}, invalidThreshold("MinConfidence", math.Inf(1))},
		{"quality_NaN", Thresholds{MinQuality: math.NaN()}, invalidThreshold("MinQuality", math.NaN())},
		{"above_one", Thresholds{MinCompleteness: 1.2}, invalidThreshold("MinCompleteness", 1.2)},
		{"NaN", Thresholds{MinSignalConfidence: math.NaN()}, invalidThreshold("MinSignalConfidence", math.NaN())},
		{"early_negative_ok", Thresholds{EarlyCoverage: -1, EarlyConfidence: -0.5, MaxConflicts: -1}, nil},
		{"early_one_ok", Thresholds{EarlyCoverage: 1, EarlyConfidence: 1}, nil},
		{"early_coverage_above_one", Thresholds{EarlyCoverage: 1.5}, invalidThreshold("EarlyCoverage", 1.5)},
		{"early_coverage_NaN", Thresholds{EarlyCoverage: math.NaN()}, invalidThreshold("EarlyCoverage", math.NaN())},
		{"early_confidence_above_one", Thresholds{EarlyConfidence: 1.01}, invalidThreshold("EarlyConfidence", 1.01)},
		{"early_confidence_NaN", Thresholds{EarlyConfidence: math.NaN()}, invalidThreshold("EarlyConfidence", math.NaN())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.th.Validate()
			if diff := cmp.Diff(errString(tt.want), errString(err)); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
			if tt.want == nil {
				return
			}
			if !errors.Is(err, ErrInvalidThreshold) {
				t.Errorf("errors.Is(%v, ErrInvalidThreshold) = false", err)
			}
			for _, an := range []Analyzer{Research{}, Quality{}, Default(), Combine(Research{}, Quality{})} {
				gaps, err := an.Analyze(context.Background(), Assessment{Coverage: 0.1}, tt.th)
				if gaps != nil || !errors.Is(err, ErrInvalidThreshold) {
					t.Errorf("%T.Analyze = %v, %v; want nil, ErrInvalidThreshold", an, gaps, err)
				}
			}
		})
	}
}

// errString returns err's message, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
