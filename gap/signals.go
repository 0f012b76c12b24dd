package gap

// Signals are the results of the quality checks run on an iteration's output:
// validation, calibrated confidence, hallucination detection, user feedback,
// requirements, completeness, a quality score, tests and review. Every field
// is optional; a nil pointer or empty slice means "not checked".
type Signals struct {
	// Validation lists the validation errors of the output; empty means valid.
	Validation []ValidationError `json:"validation,omitempty"`
	// Confidence is the calibrated confidence in [0, 1].
	Confidence *float64 `json:"confidence,omitempty"`
	// Hallucinations lists suspicious claims.
	Hallucinations []HallucinationFinding `json:"hallucinations,omitempty"`
	// Feedback is explicit feedback from a user or reviewer.
	Feedback *Feedback `json:"feedback,omitempty"`
	// Requirements lists the requirements and whether each is met.
	Requirements []Requirement `json:"requirements,omitempty"`
	// Completeness in [0, 1] of the output.
	Completeness *float64 `json:"completeness,omitempty"`
	// Quality is an overall quality score in [0, 1].
	Quality *float64 `json:"quality,omitempty"`
	// Rejected holds the reason a user rejected the output; empty if not.
	Rejected string `json:"rejected,omitempty"`
	// Tests is the result of the test run.
	Tests *TestResult `json:"tests,omitempty"`
	// Review is the result of the review.
	Review *Review `json:"review,omitempty"`
}

// Empty reports whether no signal is set.
func (s *Signals) Empty() bool {
	return len(s.Validation) == 0 && s.Confidence == nil && len(s.Hallucinations) == 0 &&
		s.Feedback == nil && len(s.Requirements) == 0 && s.Completeness == nil &&
		s.Quality == nil && s.Rejected == "" && s.Tests == nil && s.Review == nil
}

// Passing reports whether the tests (if run) passed and the review (if any)
// approved: seed 002's "proceed" condition. With neither run it is false.
func (s *Signals) Passing() bool {
	if s.Tests == nil && s.Review == nil {
		return false
	}
	if s.Tests != nil && !s.Tests.Passed {
		return false
	}
	if s.Review != nil && s.Review.Status != ReviewApprove {
		return false
	}
	return true
}

// Float returns a pointer to v, for the optional fields of [Signals].
func Float(v float64) *float64 { return &v }

// Validation error codes that another attempt cannot fix.
const (
	CodeTypeMismatch    = "TYPE_MISMATCH"
	CodeSchemaViolation = "SCHEMA_VIOLATION"
)

// ValidationError is one validation failure of the output.
type ValidationError struct {
	Path     string `json:"path"`
	Message  string `json:"message"`
	Code     string `json:"code,omitempty"`
	Critical bool   `json:"critical,omitempty"`
}

// HallucinationSeverity grades a suspicious claim.
type HallucinationSeverity string

// Hallucination severities; warnings do not trigger an iteration.
const (
	HallucinationWarning   HallucinationSeverity = "warning"
	HallucinationSuspected HallucinationSeverity = "suspected"
	HallucinationConfirmed HallucinationSeverity = "confirmed"
)

// HallucinationFinding is one suspicious claim.
type HallucinationFinding struct {
	Type     string                `json:"type"`
	Claim    string                `json:"claim"`
	Severity HallucinationSeverity `json:"severity"`
}

// Feedback is explicit feedback on the output.
type Feedback struct {
	Negative bool   `json:"negative"`
	Message  string `json:"message"`
}

// Requirement is one requirement of the output.
type Requirement struct {
	Description string `json:"description"`
	// Required marks a mandatory requirement (severity 0.9 when unmet,
	// otherwise 0.5).
	Required bool `json:"required,omitempty"`
	Met      bool `json:"met"`
	Fixable  bool `json:"fixable,omitempty"`
}

// TestResult is the outcome of a test run.
type TestResult struct {
	Passed   bool              `json:"passed"`
	Failures []TestCaseFailure `json:"failures,omitempty"`
	// Output is the raw output, used when no failure could be parsed.
	Output string `json:"output,omitempty"`
}

// TestCaseFailure is one failing test, parsed into actionable parts.
type TestCaseFailure struct {
	Name     string `json:"name"`
	Expected string `json:"expected,omitempty"`
	Received string `json:"received,omitempty"`
	Message  string `json:"message,omitempty"`
}

// ReviewStatus is the verdict of a review.
type ReviewStatus string

// Review verdicts.
const (
	ReviewApprove ReviewStatus = "approve"
	ReviewReject  ReviewStatus = "reject"
	ReviewPending ReviewStatus = "pending"
)

// Review is the outcome of a review.
type Review struct {
	Status ReviewStatus `json:"status"`
	// Issues lists the specific issues the reviewer raised.
	Issues []string `json:"issues,omitempty"`
}
