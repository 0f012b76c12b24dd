package budget

import "math"

// Defaults of [ContextWindow] and [EstimateContext]: seed 003's context
// budget.
const (
	// DefaultContextThreshold is the share of a context window at which
	// work should checkpoint, when [ContextWindow].Threshold is 0.
	DefaultContextThreshold = 0.90
	// DefaultTokensPerCompleted is the context a completed work item is
	// assumed to take, when [EstimateContext] is given 0 for it.
	DefaultTokensPerCompleted = 8000
	// DefaultTokensPerRemaining is the context a remaining work item is
	// assumed to take, when [EstimateContext] is given 0 for it.
	DefaultTokensPerRemaining = 6000
)

// ContextWindow describes a model's context window and the share of it at
// which work should checkpoint and continue in a fresh iteration.
// ContextWindow is a plain value; its zero value is a window of unknown size
// that is never exhausted.
type ContextWindow struct {
	// Size in tokens; 0 means unknown (never exhausted).
	Size int64
	// Threshold in (0, 1]; 0 means [DefaultContextThreshold] (0.90).
	Threshold float64
}

// Validate returns an error matching [ErrInvalidLimits], naming the field
// ("Size" or "Threshold"), when Size is negative or Threshold is NaN or
// outside [0, 1].
func (w ContextWindow) Validate() error {
	switch {
	case w.Size < 0:
		return invalidLimits("Size", "negative ("+formatAmount(Tokens, float64(w.Size))+")")
	case math.IsNaN(w.Threshold) || w.Threshold < 0 || w.Threshold > 1:
		return invalidLimits("Threshold", "outside [0, 1] ("+formatFloat(w.Threshold)+")")
	}
	return nil
}

// Usage returns tokens as a share of Size (0 when Size is 0 or negative).
func (w ContextWindow) Usage(tokens int64) float64 {
	if w.Size <= 0 {
		return 0
	}
	return float64(tokens) / float64(w.Size)
}

// Exhausted reports whether tokens reach the threshold share of the window:
// with a 200,000-token window and the default threshold, 180,000 tokens are
// exhausted and 179,999 are not. A window of unknown size is never exhausted.
func (w ContextWindow) Exhausted(tokens int64) bool {
	if w.Size <= 0 {
		return false
	}
	th := w.Threshold
	if th == 0 {
		th = DefaultContextThreshold
	}
	// The division is correctly rounded, so a share exactly equal to the
	// threshold compares equal to it.
	return w.Usage(tokens) >= th
}

// EstimateContext estimates the context tokens a session needs: completed
// work items at perCompleted tokens each plus remaining ones at perRemaining
// tokens each. A perCompleted or perRemaining of 0 or less means the default
// ([DefaultTokensPerCompleted], 8,000, and [DefaultTokensPerRemaining],
// 6,000: seed 003's estimate); negative counts count as 0. The result saturates
// at the largest int64 instead of overflowing.
func EstimateContext(completed, remaining int, perCompleted, perRemaining int64) int64 {
	if perCompleted <= 0 {
		perCompleted = DefaultTokensPerCompleted
	}
	if perRemaining <= 0 {
		perRemaining = DefaultTokensPerRemaining
	}
	c := satMul(int64(max(completed, 0)), perCompleted)
	r := satMul(int64(max(remaining, 0)), perRemaining)
	return satAdd(c, r, math.MaxInt64)
}

// satMul returns a * b for non-negative a and positive b, saturating at the
// largest int64.
func satMul(a, b int64) int64 {
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
