package gap

import (
	"errors"
	"strconv"
)

// ErrInvalidAssessment is matched (with [errors.Is]) by every
// [*InvalidAssessmentError].
var ErrInvalidAssessment = errors.New("gap: invalid assessment")

// ErrInvalidThreshold is matched (with [errors.Is]) by every
// [*InvalidThresholdError].
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

// InvalidThresholdError reports a field of [Thresholds] that is NaN or
// greater than 1. (Zero selects the default and a negative value disables
// the check, so neither is an error.)
type InvalidThresholdError struct {
	// Field is the name of the threshold, such as "MinCoverage".
	Field string
	// Value is the offending value.
	Value float64
}

// Error describes the threshold and its value.
func (e *InvalidThresholdError) Error() string {
	return "gap: invalid threshold: " + e.Field + " = " +
		strconv.FormatFloat(e.Value, 'g', -1, 64) +
		", want a ratio <= 1 (0 for the default, negative to disable)"
}

// Is reports whether target is [ErrInvalidThreshold].
func (e *InvalidThresholdError) Is(target error) bool { return target == ErrInvalidThreshold }

// inUnit reports whether v is a ratio in [0, 1]; it is false for NaN.
func inUnit(v float64) bool { return v >= 0 && v <= 1 }

// indexed returns prefix[i].field, e.g. "Findings[2].Confidence".
func indexed(prefix string, i int, field string) string {
	return prefix + "[" + strconv.Itoa(i) + "]." + field
}
