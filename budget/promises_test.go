package budget_test

import (
	"testing"

	"github.com/refine-go/refine/budget"
)

// TestContextDefaults (issue 20, item 9): the defaults of the context
// budget are exported next to the settings they are the defaults of, with
// seed 003's values (8,000 tokens per completed phase, 6,000 per remaining
// one, a 90% threshold), and a zero setting means them.
func TestContextDefaults(t *testing.T) {
	if budget.DefaultTokensPerCompleted != 8000 || budget.DefaultTokensPerRemaining != 6000 || budget.DefaultContextThreshold != 0.90 {
		t.Fatalf("defaults %d, %d, %g; want seed 003's 8000, 6000, 0.90",
			budget.DefaultTokensPerCompleted, budget.DefaultTokensPerRemaining, budget.DefaultContextThreshold)
	}
	tests := []struct {
		completed, remaining int
		per, perRemaining    int64
		want                 int64
	}{
		{1, 0, 0, 0, budget.DefaultTokensPerCompleted},
		{0, 1, 0, 0, budget.DefaultTokensPerRemaining},
		{3, 2, 0, 0, 3*budget.DefaultTokensPerCompleted + 2*budget.DefaultTokensPerRemaining},
		{3, 2, -1, -1, 3*budget.DefaultTokensPerCompleted + 2*budget.DefaultTokensPerRemaining},
		{3, 2, 100, 10, 320},
	}
	for _, tt := range tests {
		if got := budget.EstimateContext(tt.completed, tt.remaining, tt.per, tt.perRemaining); got != tt.want {
			t.Errorf("EstimateContext(%d, %d, %d, %d) = %d, want %d", tt.completed, tt.remaining, tt.per, tt.perRemaining, got, tt.want)
		}
	}
	def, explicit := budget.ContextWindow{Size: 200_000}, budget.ContextWindow{Size: 200_000, Threshold: budget.DefaultContextThreshold}
	for _, tokens := range []int64{179_999, 180_000, 180_001} {
		if def.Exhausted(tokens) != explicit.Exhausted(tokens) || def.Exhausted(tokens) != (tokens >= 180_000) {
			t.Errorf("%d tokens of 200,000: exhausted %t with the zero threshold, %t with DefaultContextThreshold; want %t",
				tokens, def.Exhausted(tokens), explicit.Exhausted(tokens), tokens >= 180_000)
		}
	}
}
