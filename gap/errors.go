package gap

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalidAssessment is matched (with [errors.Is]) by every
// [*InvalidAssessmentError].
var ErrInvalidAssessment = errors.New("gap: invalid assessment")

// ErrInvalidThreshold is matched (with [errors.Is]) by the errors of
// [Thresholds.Validate] and of the analyzers given invalid thresholds: a
// field of [Thresholds] that is NaN or greater than 1. (Zero selects the
// default and a negative value disables the check, so neither is an error.)
// The message names the field and its value, e.g. "gap: invalid threshold:
// MinCoverage = 1.5, want a ratio <= 1 (0 for the default, negative to
// disable)".
var ErrInvalidThreshold = errors.New("gap: invalid threshold")

// InvalidAssessmentError reports a field of an [Assessment] that an analyzer
// cannot use: a ratio that is NaN or outside [0, 1], or a negative count.
// Analyzers validate only the fields they read.
type InvalidAssessmentError struct {
	// Field is the Go path of the field, such as "Coverage",
	// "Findings[2].Confidence" or "Signals.Quality".
	Field string
	// Value is the offending value.
	Value float64
}

// Error describes the field, its value and the values allowed.
func (e *InvalidAssessmentError) Error() string {
	want := "a ratio in [0, 1]"
	if isCountField(e.Field) {
		want = "a count >= 0"
	}
	return "gap: invalid assessment: " + e.Field + " = " +
		strconv.FormatFloat(e.Value, 'g', -1, 64) + ", want " + want
}

// Is reports whether target is [ErrInvalidAssessment].
func (e *InvalidAssessmentError) Is(target error) bool { return target == ErrInvalidAssessment }

func isCountField(f string) bool { return f == "FilesAnalyzed" || f == "EstimatedFiles" }

// invalidThreshold returns an error matching [ErrInvalidThreshold] that
// names the threshold field and its value.
func invalidThreshold(field string, value float64) error {
	return fmt.Errorf("%w: %s = %s, want a ratio <= 1 (0 for the default, negative to disable)",
		ErrInvalidThreshold, field, strconv.FormatFloat(value, 'g', -1, 64))
}

// inUnit reports whether v is a ratio in [0, 1]; it is false for NaN.
func inUnit(v float64) bool { return v >= 0 && v <= 1 }

// indexed returns prefix[i].field, e.g. "Findings[2].Confidence".
func indexed(prefix string, i int, field string) string {
	return prefix + "[" + strconv.Itoa(i) + "]." + field
}
