package converge

import (
	"errors"
	"strconv"
)

// ErrInvalidPolicy is matched (with [errors.Is]) by every [*ConfigError].
var ErrInvalidPolicy = errors.New("converge: invalid policy")

// ConfigError reports a policy setting that cannot work, such as a negative
// patience or a NaN minimum delta. (The thresholds are validated by
// [gap.Thresholds.Validate].) The Validate methods of the policies
// return it; Decide never does (an invalid policy decides as best it can and
// never panics).
type ConfigError struct {
	// Policy names the policy type, e.g. "Plateau" or "Any".
	Policy string
	// Field names the setting, e.g. "Patience" or "policies[2]".
	Field string
	// Reason says what is wrong, e.g. "must be less than the history
	// window (32), got 40".
	Reason string
}

// Error returns e.g.
// "converge: invalid Plateau.Patience: must not be negative, got -1".
func (e *ConfigError) Error() string {
	return "converge: invalid " + e.Policy + "." + e.Field + ": " + e.Reason
}

// Is reports whether target is [ErrInvalidPolicy].
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidPolicy }

// Validate checks the configuration of p: it returns a [*ConfigError] for a
// nil policy, the result of p's Validate method when p has one (every
// configurable policy of this package does, and [Any] and [All] validate
// their children), and nil otherwise.
func Validate(p Policy) error {
	if p == nil {
		return &ConfigError{Policy: "Policy", Field: "policy", Reason: "must not be nil"}
	}
	if v, ok := p.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

// checkCount returns a *ConfigError when n is negative.
func checkCount(policy, field string, n int) error {
	if n < 0 {
		return &ConfigError{Policy: policy, Field: field,
			Reason: "must not be negative, got " + strconv.Itoa(n)}
	}
	return nil
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
