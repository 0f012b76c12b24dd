package converge

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalidPolicy is matched (with [errors.Is]) by every error of a
// policy's Validate method and of [Validate]: a policy setting that cannot
// work, such as a negative patience or a NaN minimum delta. (The thresholds
// are validated by [gap.Thresholds.Validate].) The message names the policy
// and the field, e.g. "converge: invalid policy: EarlyStopping.Patience must
// not be negative, got -1". Decide never returns an error: an invalid policy
// decides as best it can and never panics.
var ErrInvalidPolicy = errors.New("converge: invalid policy")

// invalid returns an error matching ErrInvalidPolicy that names the policy
// and its field, and says what is wrong.
func invalid(policy, field, reason string) error {
	return fmt.Errorf("%w: %s.%s %s", ErrInvalidPolicy, policy, field, reason)
}

// Validate checks the configuration of p: it returns an error matching
// [ErrInvalidPolicy] for a nil policy, the result of p's Validate method
// when p has one (every configurable policy of this package does, and [Any]
// and [All] validate their children, joining their errors), and nil
// otherwise.
func Validate(p Policy) error {
	if p == nil {
		return invalid("Policy", "policy", "must not be nil")
	}
	if v, ok := p.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

// ValidateWindow is [Validate] for a policy that decides over a history
// window of the given size (History.Window; 0 or less means
// [DefaultWindow]), as a loop configured with a window other than the
// default does: an [EarlyStopping]'s Patience must be less than window,
// through [Any] and [All] too, or its patience block would never fill and
// the loop never plateau. The engine calls it with the loop's window before
// the loop starts.
func ValidateWindow(p Policy, window int) error {
	if window <= 0 {
		window = DefaultWindow
	}
	if v, ok := p.(windowValidator); ok {
		return v.validateWindow(window)
	}
	return Validate(p)
}

// windowValidator is a policy whose validity depends on the history window.
type windowValidator interface {
	validateWindow(window int) error
}

// checkCount returns an error when n is negative.
func checkCount(policy, field string, n int) error {
	if n < 0 {
		return invalid(policy, field, "must not be negative, got "+strconv.Itoa(n))
	}
	return nil
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
