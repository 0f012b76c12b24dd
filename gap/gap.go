// Package gap describes where the work of a refinement loop stands and what
// is still missing from it.
//
// A host reports the state of its work as an [Assessment]: metrics (coverage,
// confidence, a quality score), findings, conflicts, questions, the quality
// signals of its checks (validation, tests, review, feedback) and the work
// that remains. An [Analyzer] turns an assessment into [Gap] values, each with
// a [Kind], a [Priority], a severity and whether it can be fixed by another
// iteration, under the loop's [Thresholds]: the one declaration of the levels
// that the convergence policies of package converge decide by as well, so
// that whatever keeps a loop from converging is a gap. [Prioritize] orders gaps and [Select] chooses which of them an
// iteration should address.
package gap

import "strings"

// Kind names the type of a gap. The five gap types of research refinement and
// the quality triggers of output validation each have a constant; hosts may
// define kinds of their own.
type Kind string

// The five gap types of research refinement.
const (
	// Coverage: too little of the relevant material was examined.
	Coverage Kind = "coverage"
	// Confidence: the findings are, on average, not certain enough.
	Confidence Kind = "confidence"
	// ConflictingFindings: two sources reported contradictory findings.
	ConflictingFindings Kind = "conflicting_findings"
	// MissingContext: relationships, data flow or integration points are
	// still unclear.
	MissingContext Kind = "missing_context"
	// UnansweredQuestion: a critical question of the original request is
	// unanswered.
	UnansweredQuestion Kind = "unanswered_question"
)

// Refinements of the research gap types that select a different worker role.
const (
	// Evidence: a single finding lacks direct evidence (a confidence gap whose
	// cure is a citation).
	Evidence Kind = "missing_evidence"
	// Pattern: a pattern is uncertain and needs concrete examples.
	Pattern Kind = "unclear_pattern"
	// Security: a security-relevant area is uncertain.
	Security Kind = "security"
	// Performance: a performance-relevant area is uncertain.
	Performance Kind = "performance"
)

// The quality triggers of output validation, tests and review.
const (
	ValidationFailure Kind = "validation_failure"
	LowConfidence     Kind = "low_confidence"
	IncompleteOutput  Kind = "incomplete_output"
	ExplicitFeedback  Kind = "explicit_feedback"
	Hallucination     Kind = "hallucination_detected"
	RequirementUnmet  Kind = "requirement_unmet"
	QualityThreshold  Kind = "quality_threshold"
	UserRejection     Kind = "user_rejection"
	TestFailure       Kind = "test_failure"
	ReviewRejected    Kind = "review_rejected"
)

// Priority ranks a gap: P1 is always addressed, P2 when iterations remain,
// P3 when time permits. The zero value means "not yet prioritised"; [Prioritize]
// assigns one.
type Priority int

// The three priority levels.
const (
	P1 Priority = 1 // critical: always address
	P2 Priority = 2 // important: address if iterations remain
	P3 Priority = 3 // nice to have: address if time permits
)

// String returns "P1", "P2", "P3" or "P?" for an unset priority.
func (p Priority) String() string {
	switch p {
	case P1:
		return "P1"
	case P2:
		return "P2"
	case P3:
		return "P3"
	}
	return "P?"
}

// Impact classifies a finding.
type Impact int

// Finding impacts. The zero value is Informational.
const (
	Informational Impact = iota
	Important
	Critical
)

// String returns the impact's name in lower case.
func (i Impact) String() string {
	switch i {
	case Critical:
		return "critical"
	case Important:
		return "important"
	default:
		return "informational"
	}
}

// Gap is one thing still missing from the work. Gaps are plain values; they
// are compared with ==-free tools such as go-cmp, and copied freely.
type Gap struct {
	// Kind is the type of the gap.
	Kind Kind `json:"kind"`
	// Priority is P1, P2 or P3; zero until prioritised.
	Priority Priority `json:"priority,omitempty"`
	// Severity in [0, 1]: how much the gap hurts the result.
	Severity float64 `json:"severity"`
	// Fixable reports whether another iteration can be expected to close it.
	Fixable bool `json:"fixable"`
	// Target identifies what the gap is about: a finding or conflict ID, a
	// question, a requirement, a test name. Together with Kind it identifies
	// the gap across iterations.
	Target string `json:"target,omitempty"`
	// Detail is a human-readable explanation.
	Detail string `json:"detail,omitempty"`
	// Source names the check that detected the gap.
	Source string `json:"source,omitempty"`
	// Relevance in [0, 1] ranks gaps of the same priority by their relevance
	// to the user's request.
	Relevance float64 `json:"relevance,omitempty"`
	// Focus lists what a task addressing the gap should look at (missing
	// files, areas, claims).
	Focus []string `json:"focus,omitempty"`
}

// Key identifies the gap across iterations: its kind and target.
func (g Gap) Key() string { return string(g.Kind) + ":" + g.Target }

// String returns a one-line description such as
// "P1 unanswered_question: Is OAuth possible?".
func (g Gap) String() string {
	var b strings.Builder
	b.WriteString(g.Priority.String())
	b.WriteByte(' ')
	b.WriteString(string(g.Kind))
	if g.Target != "" {
		b.WriteString(" [")
		b.WriteString(g.Target)
		b.WriteByte(']')
	}
	if g.Detail != "" {
		b.WriteString(": ")
		b.WriteString(g.Detail)
	}
	return b.String()
}

// Finding is one result of the work, with the evidence behind it.
type Finding struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	Confidence  float64  `json:"confidence"`
	Impact      Impact   `json:"impact,omitempty"`
	Citations   []string `json:"citations,omitempty"`
	Sources     []string `json:"sources,omitempty"`
	// Pattern marks a finding that describes a recurring pattern; a low
	// confidence on it calls for examples rather than a citation.
	Pattern bool `json:"pattern,omitempty"`
	// Area tags the finding "security" or "performance" when it concerns one.
	Area string `json:"area,omitempty"`
	// Relevance in [0, 1] to the user's request.
	Relevance float64 `json:"relevance,omitempty"`
}

// Claim is one side of a conflict.
type Claim struct {
	Source    string `json:"source"`
	Statement string `json:"statement"`
	Evidence  string `json:"evidence,omitempty"`
}

// Conflict records two findings that disagree.
type Conflict struct {
	ID string `json:"id"`
	A  Claim  `json:"a"`
	B  Claim  `json:"b"`
	// Similarity of the two conclusions in [0, 1]; below 0.70 they conflict.
	// Zero means "not measured" and the conflict counts.
	Similarity float64 `json:"similarity,omitempty"`
	Resolved   bool    `json:"resolved,omitempty"`
}

// Question is a question of the original request.
type Question struct {
	Text     string `json:"text"`
	Critical bool   `json:"critical,omitempty"`
	Answered bool   `json:"answered,omitempty"`
	// Partial marks a question answered only in part; it still counts as
	// unanswered.
	Partial bool `json:"partial,omitempty"`
	// Relevance in [0, 1] to the user's request.
	Relevance float64 `json:"relevance,omitempty"`
}

// Assessment is where the work stands at the start of an iteration, as the
// host's worker reports it. Every field is optional: an analyzer looks only at
// what is set. The zero value is an assessment that measured nothing.
type Assessment struct {
	// Coverage in [0, 1]: the share of the relevant material examined. When
	// zero and EstimatedFiles > 0, [Assessment.CoverageRatio] computes it as
	// FilesAnalyzed / EstimatedFiles.
	Coverage       float64 `json:"coverage,omitempty"`
	FilesAnalyzed  int     `json:"files_analyzed,omitempty"`
	EstimatedFiles int     `json:"estimated_files,omitempty"`
	// Missing lists material known to be relevant but not yet examined.
	Missing []string `json:"missing,omitempty"`

	// Confidence in [0, 1], used when there are no Findings; otherwise
	// [Assessment.AverageConfidence] averages the findings.
	Confidence float64   `json:"confidence,omitempty"`
	Findings   []Finding `json:"findings,omitempty"`
	Citations  int       `json:"citations,omitempty"`

	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Context lists architectural relationships, data flows or integration
	// points still unclear.
	Context   []string   `json:"context,omitempty"`
	Questions []Question `json:"questions,omitempty"`

	// Signals are the results of quality checks on the output.
	Signals Signals `json:"signals,omitempty"`

	// Score is the primary quality score in [0, 1], tracked for plateaus.
	Score float64 `json:"score,omitempty"`
	// Scores holds further named scores for plateau detection over several
	// metrics at once. The map is read, never modified.
	Scores map[string]float64 `json:"scores,omitempty"`

	// WorkRemaining lists the items of work still open; a loop whose work
	// remaining does not change is stuck.
	WorkRemaining []string `json:"work_remaining,omitempty"`

	// Complete reports that the host judges the work finished.
	Complete bool `json:"complete,omitempty"`
}

// measuredNothing reports whether a holds nothing an analyzer could find a
// gap in (it may still carry a score, work remaining or completion).
func (a *Assessment) measuredNothing() bool {
	return a.Coverage == 0 && a.EstimatedFiles == 0 && a.Confidence == 0 &&
		len(a.Findings) == 0 && len(a.Conflicts) == 0 && len(a.Context) == 0 &&
		len(a.Questions) == 0 && a.Signals.Empty()
}

// CoverageRatio returns Coverage, or FilesAnalyzed/EstimatedFiles (at most 1)
// when Coverage is zero and EstimatedFiles is positive.
func (a *Assessment) CoverageRatio() float64 {
	if a.Coverage != 0 || a.EstimatedFiles <= 0 {
		return a.Coverage
	}
	r := float64(a.FilesAnalyzed) / float64(a.EstimatedFiles)
	if r > 1 {
		r = 1
	}
	return r
}

// AverageConfidence returns the mean confidence of the findings, or
// Confidence when there are none.
func (a *Assessment) AverageConfidence() float64 {
	if len(a.Findings) == 0 {
		return a.Confidence
	}
	var sum float64
	for i := range a.Findings {
		sum += a.Findings[i].Confidence
	}
	return sum / float64(len(a.Findings))
}

// UnresolvedConflicts counts the conflicts not yet resolved whose similarity
// is unmeasured or below 0.70.
func (a *Assessment) UnresolvedConflicts() int {
	n := 0
	for i := range a.Conflicts {
		if isConflicting(a.Conflicts[i]) {
			n++
		}
	}
	return n
}

// conflictSimilarity is the similarity below which two conclusions conflict
// (see [Conflict.Similarity]).
const conflictSimilarity = 0.70

func isConflicting(c Conflict) bool {
	return !c.Resolved && (c.Similarity == 0 || c.Similarity < conflictSimilarity)
}

// CriticalQuestions returns how many critical questions there are and how many
// of them are fully answered.
func (a *Assessment) CriticalQuestions() (answered, total int) {
	for i := range a.Questions {
		q := &a.Questions[i]
		if !q.Critical {
			continue
		}
		total++
		if q.Answered && !q.Partial {
			answered++
		}
	}
	return answered, total
}

// Metric returns the named metric: "coverage", "confidence", "score",
// "conflicts" (unresolved count), or a key of Scores. ok is false for an
// unknown name.
func (a *Assessment) Metric(name string) (v float64, ok bool) {
	switch name {
	case metricCoverage:
		return a.CoverageRatio(), true
	case metricConfidence:
		return a.AverageConfidence(), true
	case metricScore:
		return a.Score, true
	case metricConflicts:
		return float64(a.UnresolvedConflicts()), true
	}
	v, ok = a.Scores[name]
	return v, ok
}

// Names of the built-in metrics of [Assessment.Metric].
const (
	metricCoverage   = "coverage"
	metricConfidence = "confidence"
	metricScore      = "score"
	metricConflicts  = "conflicts"
)
