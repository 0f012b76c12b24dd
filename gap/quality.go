package gap

import (
	"context"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Sources of the gaps found by [Quality], listed in its doc.
const (
	sourceValidator     = "output-validator"
	sourceConfidence    = "confidence-scorer"
	sourceHallucination = "hallucination-detector"
	sourceUser          = "user"
	sourceRequirement   = "requirement-checker"
	sourceCompleteness  = "completeness-checker"
	sourceQuality       = "quality-scorer"
	sourceTests         = "test-runner"
	sourceReviewer      = "reviewer"
)

// MaxFeedbackLength is the length in bytes to which [Quality] truncates raw
// test output in a gap's Detail (the iteration control default
// feedback_max_length).
const MaxFeedbackLength = 500

// Quality is the [Analyzer] of output quality: it turns the [Signals] of an
// assessment into iteration triggers under the [Thresholds] given to Analyze,
// in this order.
//
//	Kind               Condition                     Severity             Fixable
//	ValidationFailure  each validation error         1.0 if Critical,     unless Code is
//	                                                 else 0.7             TYPE_MISMATCH or
//	                                                                      SCHEMA_VIOLATION
//	LowConfidence      Confidence below              1 - Confidence       yes
//	                   MinSignalConfidence
//	Hallucination      each non-warning finding      1.0 if confirmed,    yes
//	                                                 else 0.7
//	ExplicitFeedback   Feedback.Negative             0.9                  yes
//	RequirementUnmet   each requirement not Met      0.9 if Required,     Requirement.Fixable
//	                                                 else 0.5
//	IncompleteOutput   Completeness below            1 - Completeness     yes
//	                   MinCompleteness
//	QualityThreshold   Quality below MinQuality      1 - Quality          yes
//	UserRejection      Rejected != ""                1.0                  yes
//	TestFailure        Tests run and not Passed      0.9                  yes
//	ReviewRejected     Review.Status is reject       0.7                  yes
//
// Details and targets:
//
//   - ValidationFailure: Target the path, Detail "path: message" (just the
//     message when the path is empty).
//   - LowConfidence: Target "confidence", Detail
//     "Confidence 62% below threshold 80%" (percentages rounded half up).
//   - Hallucination: Target the claim, Detail "type: claim". A severity
//     other than warning and confirmed counts as suspected.
//   - ExplicitFeedback: Target "feedback", Detail the message. Positive
//     feedback is no gap.
//   - RequirementUnmet: Target the description, Detail
//     "Requirement not met: description".
//   - IncompleteOutput: Target "completeness", Detail
//     "Output 62% complete, minimum 90%".
//   - QualityThreshold: Target "quality", Detail
//     "Quality 55% below threshold 70%".
//   - UserRejection: Target "rejection", Detail the reason.
//   - TestFailure: one gap per parsed failure, Target the test name, Detail
//     "Expected: X, Received: Y" (prefixed with the message and ": " when
//     both are present) or the message; with no parsed failure, one gap with
//     Target "tests" and Detail the raw output (truncated to
//     [MaxFeedbackLength] bytes, "tests failed" when empty). A run that
//     Passed has no gaps even if it lists failures.
//   - ReviewRejected: one gap per issue (Target and Detail the issue), or
//     with no issue one gap with Target "review", Detail "review rejected".
//     Approve and pending reviews have no gaps.
//
// Each gap's Source names the check that detected it: "output-validator"
// (ValidationFailure), "confidence-scorer" (LowConfidence),
// "hallucination-detector" (Hallucination), "user" (ExplicitFeedback,
// UserRejection), "requirement-checker" (RequirementUnmet),
// "completeness-checker" (IncompleteOutput), "quality-scorer"
// (QualityThreshold), "test-runner" (TestFailure) and "reviewer"
// (ReviewRejected).
// No gap has a Priority (see [Prioritize]). Unset signals are not checked,
// so an assessment without signals has no gaps.
//
// Analyze returns an [*InvalidAssessmentError] when Signals.Confidence,
// Signals.Completeness or Signals.Quality is NaN or outside [0, 1], and an
// error matching [ErrInvalidThreshold] for invalid thresholds. It does not consult ctx.
//
// Quality is safe for concurrent use.
type Quality struct{}

// Analyze returns the quality gaps of a under t, unprioritised.
func (q Quality) Analyze(_ context.Context, a Assessment, t Thresholds) ([]Gap, error) {
	return q.appendGaps(nil, &a, t)
}

func (q Quality) appendGaps(dst []Gap, a *Assessment, t Thresholds) ([]Gap, error) {
	p, err := q.plan(a, t)
	if err != nil || p.n == 0 {
		return dst, err
	}
	return p.fill(slices.Grow(dst, p.n), a), nil
}

// qualityPlan is what Quality found in an assessment before building the
// gaps: counting first lets the caller grow its slice once.
type qualityPlan struct {
	t                         Thresholds
	lowConfidence, incomplete bool
	lowQuality, negative      bool
	testsFailed, rejected     bool
	n                         int // number of gaps
}

// plan validates the thresholds and the signals of *a, and counts the gaps.
func (Quality) plan(a *Assessment, th Thresholds) (qualityPlan, error) {
	if err := th.Validate(); err != nil {
		return qualityPlan{}, err
	}
	s := &a.Signals
	if err := validateSignals(s); err != nil {
		return qualityPlan{}, err
	}
	p := qualityPlan{t: th.withDefaults()}
	t := &p.t
	p.lowConfidence = s.Confidence != nil && below(*s.Confidence, t.MinSignalConfidence)
	p.incomplete = s.Completeness != nil && below(*s.Completeness, t.MinCompleteness)
	p.lowQuality = s.Quality != nil && below(*s.Quality, t.MinQuality)
	p.negative = s.Feedback != nil && s.Feedback.Negative
	p.testsFailed = s.Tests != nil && !s.Tests.Passed
	p.rejected = s.Review != nil && s.Review.Status == ReviewReject

	n := len(s.Validation) + b2i(p.lowConfidence) + b2i(p.negative) + b2i(p.incomplete) +
		b2i(p.lowQuality) + b2i(s.Rejected != "")
	for i := range s.Hallucinations {
		if s.Hallucinations[i].Severity != HallucinationWarning {
			n++
		}
	}
	for i := range s.Requirements {
		if !s.Requirements[i].Met {
			n++
		}
	}
	if p.testsFailed {
		n += max(len(s.Tests.Failures), 1)
	}
	if p.rejected {
		n += max(len(s.Review.Issues), 1)
	}
	p.n = n
	return p, nil
}

// fill appends the planned gaps of *a to dst.
func (p *qualityPlan) fill(dst []Gap, a *Assessment) []Gap {
	s := &a.Signals
	t := &p.t
	lowConfidence, incomplete, lowQuality := p.lowConfidence, p.incomplete, p.lowQuality
	negative, testsFailed, rejected := p.negative, p.testsFailed, p.rejected

	for i := range s.Validation {
		e := &s.Validation[i]
		g := Gap{
			Kind:     ValidationFailure,
			Severity: 0.7,
			Fixable:  e.Code != CodeTypeMismatch && e.Code != CodeSchemaViolation,
			Target:   e.Path,
			Detail:   e.Message,
			Source:   sourceValidator,
		}
		if e.Critical {
			g.Severity = 1
		}
		if e.Path != "" {
			g.Detail = e.Path + ": " + e.Message
		}
		dst = append(dst, g)
	}

	if lowConfidence {
		c := *s.Confidence
		dst = append(dst, Gap{
			Kind:     LowConfidence,
			Severity: 1 - c,
			Fixable:  true,
			Target:   metricConfidence,
			Detail:   percentDetail("Confidence ", c, "% below threshold ", t.MinSignalConfidence, "%"),
			Source:   sourceConfidence,
		})
	}

	for i := range s.Hallucinations {
		h := &s.Hallucinations[i]
		if h.Severity == HallucinationWarning {
			continue
		}
		g := Gap{
			Kind:     Hallucination,
			Severity: 0.7,
			Fixable:  true,
			Target:   h.Claim,
			Detail:   h.Type + ": " + h.Claim,
			Source:   sourceHallucination,
		}
		if h.Severity == HallucinationConfirmed {
			g.Severity = 1
		}
		dst = append(dst, g)
	}

	if negative {
		dst = append(dst, Gap{
			Kind:     ExplicitFeedback,
			Severity: 0.9,
			Fixable:  true,
			Target:   "feedback",
			Detail:   s.Feedback.Message,
			Source:   sourceUser,
		})
	}

	for i := range s.Requirements {
		r := &s.Requirements[i]
		if r.Met {
			continue
		}
		g := Gap{
			Kind:     RequirementUnmet,
			Severity: 0.5,
			Fixable:  r.Fixable,
			Target:   r.Description,
			Detail:   "Requirement not met: " + r.Description,
			Source:   sourceRequirement,
		}
		if r.Required {
			g.Severity = 0.9
		}
		dst = append(dst, g)
	}

	if incomplete {
		c := *s.Completeness
		dst = append(dst, Gap{
			Kind:     IncompleteOutput,
			Severity: 1 - c,
			Fixable:  true,
			Target:   "completeness",
			Detail:   percentDetail("Output ", c, "% complete, minimum ", t.MinCompleteness, "%"),
			Source:   sourceCompleteness,
		})
	}

	if lowQuality {
		v := *s.Quality
		dst = append(dst, Gap{
			Kind:     QualityThreshold,
			Severity: 1 - v,
			Fixable:  true,
			Target:   "quality",
			Detail:   percentDetail("Quality ", v, "% below threshold ", t.MinQuality, "%"),
			Source:   sourceQuality,
		})
	}

	if s.Rejected != "" {
		dst = append(dst, Gap{
			Kind:     UserRejection,
			Severity: 1,
			Fixable:  true,
			Target:   "rejection",
			Detail:   s.Rejected,
			Source:   sourceUser,
		})
	}

	if testsFailed {
		for i := range s.Tests.Failures {
			f := &s.Tests.Failures[i]
			dst = append(dst, Gap{
				Kind:     TestFailure,
				Severity: 0.9,
				Fixable:  true,
				Target:   f.Name,
				Detail:   testDetail(f),
				Source:   sourceTests,
			})
		}
		if len(s.Tests.Failures) == 0 {
			detail := truncate(s.Tests.Output, MaxFeedbackLength)
			if detail == "" {
				detail = "tests failed"
			}
			dst = append(dst, Gap{
				Kind:     TestFailure,
				Severity: 0.9,
				Fixable:  true,
				Target:   "tests",
				Detail:   detail,
				Source:   sourceTests,
			})
		}
	}

	if rejected {
		for _, issue := range s.Review.Issues {
			dst = append(dst, Gap{
				Kind:     ReviewRejected,
				Severity: 0.7,
				Fixable:  true,
				Target:   issue,
				Detail:   issue,
				Source:   sourceReviewer,
			})
		}
		if len(s.Review.Issues) == 0 {
			dst = append(dst, Gap{
				Kind:     ReviewRejected,
				Severity: 0.7,
				Fixable:  true,
				Target:   "review",
				Detail:   "review rejected",
				Source:   sourceReviewer,
			})
		}
	}
	return dst
}

// validateSignals checks the ratios of s.
func validateSignals(s *Signals) error {
	if s.Confidence != nil && !inUnit(*s.Confidence) {
		return &InvalidAssessmentError{Field: "Signals.Confidence", Value: *s.Confidence}
	}
	if s.Completeness != nil && !inUnit(*s.Completeness) {
		return &InvalidAssessmentError{Field: "Signals.Completeness", Value: *s.Completeness}
	}
	if s.Quality != nil && !inUnit(*s.Quality) {
		return &InvalidAssessmentError{Field: "Signals.Quality", Value: *s.Quality}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendPercent appends v as a whole percentage, rounded half up (as
// JavaScript's toFixed(0) does for these values).
func appendPercent(b []byte, v float64) []byte {
	return strconv.AppendFloat(b, math.Floor(v*100+0.5), 'f', 0, 64)
}

// percentDetail returns a+pct(v)+b+pct(min)+c.
func percentDetail(a string, v float64, b string, min float64, c string) string {
	var buf [64]byte
	out := append(buf[:0], a...)
	out = appendPercent(out, v)
	out = append(out, b...)
	out = appendPercent(out, min)
	out = append(out, c...)
	return string(out)
}

// testDetail describes a failing test.
func testDetail(f *TestCaseFailure) string {
	if f.Expected == "" && f.Received == "" {
		return f.Message
	}
	msg := ""
	if f.Message != "" {
		msg = f.Message + ": "
	}
	return msg + "Expected: " + f.Expected + ", Received: " + f.Received
}

// truncate shortens s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
