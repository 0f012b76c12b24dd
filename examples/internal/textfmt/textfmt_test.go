package textfmt_test

import (
	"math"
	"testing"

	"github.com/refine-go/refine/examples/internal/textfmt"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		want string
	}{
		{"seed004/token_count_display", 4230, "4,230"},
		{"seed004/token_budget_display", 100000, "100,000"},
		{"zero", 0, "0"},
		{"three_digits", 999, "999"},
		{"four_digits", 1000, "1,000"},
		{"seven_digits", 1234567, "1,234,567"},
		{"negative", -4230, "-4,230"},
		{"negative_small", -7, "-7"},
		{"max", math.MaxInt64, "9,223,372,036,854,775,807"},
		{"min", math.MinInt64, "-9,223,372,036,854,775,808"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := textfmt.Tokens(tt.n); got != tt.want {
				t.Errorf("Tokens(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}
