package gap

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// sourceResearch is the Source of every gap found by [Research].
const sourceResearch = "research"

// Severities of the research gaps that have no measured shortfall.
const (
	severityUnanswered     = 0.9 // a critical question with no answer
	severityPartial        = 0.6 // a critical question answered in part
	severityMissingContext = 0.6 // an unclear relationship or flow
)

// Research is the [Analyzer] of research refinement: it finds the five gap
// types of an [Assessment] under the [Thresholds] given to Analyze, in this
// order.
//
//   - [Coverage]: one gap when coverage was measured and
//     [Assessment.CoverageRatio] is below MinCoverage. Coverage counts as
//     measured when Coverage is non-zero or EstimatedFiles is positive, so
//     0 of 25 estimated files is a measured coverage of 0; a FilesAnalyzed
//     count without an estimate (or a coverage) has no denominator and is
//     not a measurement. Target "coverage", Detail such as
//     "coverage 0.60 below 0.70 (15 of 25 files)", Focus the Missing list
//     (shared, clipped), Severity the shortfall (min-coverage)/min.
//   - Confidence: when confidence was measured (there are findings, or
//     Confidence is non-zero) and [Assessment.AverageConfidence] is below
//     MinConfidence, one gap per finding whose confidence is below
//     MinConfidence, with Target the finding's ID, Relevance the finding's
//     and Severity its shortfall. Its kind follows the action table of
//     research refinement, first match wins: Area "security" ([Security]),
//     Area "performance" ([Performance]) — both case-insensitive, as the
//     area calls for a specialist even when the finding is a pattern —,
//     Pattern ([Pattern]), no citation or a single source ([Evidence]),
//     else [Confidence] (verification). When no finding is below the
//     threshold (or there are no findings) a single [Confidence] gap with
//     Target "confidence" reports the average.
//   - [ConflictingFindings]: one gap per conflict that is unresolved and
//     whose similarity is unmeasured or below 0.70. Target
//     the conflict ID, Detail `A says "X" vs B says "Y"`, Severity
//     1-Similarity (1 when unmeasured).
//   - [MissingContext]: one gap per non-empty Context item, Target the item,
//     Severity 0.6.
//   - [UnansweredQuestion]: one gap per critical question not fully answered
//     (a Partial answer counts as unanswered; its Detail says "partially
//     answered"). Target the question, Relevance the question's, Severity 0.9
//     (0.6 when partial).
//
// Every gap is Fixable, has Source "research" and no Priority (see
// [Prioritize]). Signals are ignored (see [Quality]). An assessment that
// measured nothing has no gaps.
//
// Analyze returns an [*InvalidAssessmentError] when a field it reads is out
// of range: Coverage, Confidence, a finding's Confidence or Relevance, a
// conflict's Similarity or a question's Relevance that is NaN or outside
// [0, 1], or a negative FilesAnalyzed or EstimatedFiles. It returns an
// error matching [ErrInvalidThreshold] for invalid thresholds. It does not consult ctx.
//
// Research is safe for concurrent use.
type Research struct{}

// Analyze returns the research gaps of a under t, unprioritised.
func (r Research) Analyze(_ context.Context, a Assessment, t Thresholds) ([]Gap, error) {
	return r.appendGaps(nil, &a, t)
}

func (r Research) appendGaps(dst []Gap, a *Assessment, t Thresholds) ([]Gap, error) {
	p, err := r.plan(a, t)
	if err != nil || p.n == 0 {
		return dst, err
	}
	return p.fill(slices.Grow(dst, p.n), a), nil
}

// researchPlan is what Research found in an assessment before building the
// gaps: counting first lets the caller grow its slice once.
type researchPlan struct {
	t                          Thresholds
	coverage, avg              float64
	coverageGap, confidenceGap bool
	lowFindings                int
	n                          int // number of gaps
}

// plan validates the thresholds and *a, and counts the gaps.
func (Research) plan(a *Assessment, th Thresholds) (researchPlan, error) {
	if err := th.Validate(); err != nil {
		return researchPlan{}, err
	}
	if err := validateResearch(a); err != nil {
		return researchPlan{}, err
	}
	p := researchPlan{t: th.withDefaults()}
	t := &p.t
	p.coverage = a.CoverageRatio()
	p.coverageGap = coverageMeasured(a) && below(p.coverage, t.MinCoverage)
	p.avg = a.AverageConfidence()
	p.confidenceGap = confidenceMeasured(a) && below(p.avg, t.MinConfidence)
	if p.confidenceGap {
		for i := range a.Findings {
			if a.Findings[i].Confidence < t.MinConfidence {
				p.lowFindings++
			}
		}
	}
	n := p.lowFindings
	if p.coverageGap {
		n++
	}
	if p.confidenceGap && p.lowFindings == 0 {
		n++
	}
	for i := range a.Conflicts {
		if isConflicting(a.Conflicts[i]) {
			n++
		}
	}
	for _, c := range a.Context {
		if c != "" {
			n++
		}
	}
	for i := range a.Questions {
		if unanswered(&a.Questions[i]) {
			n++
		}
	}
	p.n = n
	return p, nil
}

// fill appends the planned gaps of *a to dst.
func (p *researchPlan) fill(dst []Gap, a *Assessment) []Gap {
	t := &p.t
	coverage, avg, lowFindings := p.coverage, p.avg, p.lowFindings
	if p.coverageGap {
		dst = append(dst, Gap{
			Kind:     Coverage,
			Severity: shortfall(coverage, t.MinCoverage),
			Fixable:  true,
			Target:   metricCoverage,
			Detail:   coverageDetail(a, coverage, t.MinCoverage),
			Source:   sourceResearch,
			Focus:    a.Missing[:len(a.Missing):len(a.Missing)],
		})
	}

	if p.confidenceGap {
		for i := range a.Findings {
			f := &a.Findings[i]
			if f.Confidence >= t.MinConfidence {
				continue
			}
			kind, reason := findingKind(f)
			dst = append(dst, Gap{
				Kind:      kind,
				Severity:  shortfall(f.Confidence, t.MinConfidence),
				Fixable:   true,
				Target:    f.ID,
				Detail:    confidenceDetail("confidence ", f.Confidence, t.MinConfidence, reason, f.Description),
				Source:    sourceResearch,
				Relevance: f.Relevance,
			})
		}
		if lowFindings == 0 {
			dst = append(dst, Gap{
				Kind:     Confidence,
				Severity: shortfall(avg, t.MinConfidence),
				Fixable:  true,
				Target:   metricConfidence,
				Detail:   confidenceDetail("average confidence ", avg, t.MinConfidence, "", ""),
				Source:   sourceResearch,
			})
		}
	}

	for i := range a.Conflicts {
		c := &a.Conflicts[i]
		if !isConflicting(*c) {
			continue
		}
		dst = append(dst, Gap{
			Kind:     ConflictingFindings,
			Severity: 1 - c.Similarity,
			Fixable:  true,
			Target:   c.ID,
			Detail:   conflictDetail(c),
			Source:   sourceResearch,
		})
	}

	for _, c := range a.Context {
		if c == "" {
			continue
		}
		dst = append(dst, Gap{
			Kind:     MissingContext,
			Severity: severityMissingContext,
			Fixable:  true,
			Target:   c,
			Detail:   "unclear: " + c,
			Source:   sourceResearch,
		})
	}

	for i := range a.Questions {
		q := &a.Questions[i]
		if !unanswered(q) {
			continue
		}
		g := Gap{
			Kind:      UnansweredQuestion,
			Severity:  severityUnanswered,
			Fixable:   true,
			Target:    q.Text,
			Detail:    "unanswered",
			Source:    sourceResearch,
			Relevance: q.Relevance,
		}
		if q.Partial {
			g.Severity = severityPartial
			g.Detail = "partially answered"
		}
		dst = append(dst, g)
	}
	return dst
}

// validateResearch checks the fields Research reads.
func validateResearch(a *Assessment) error {
	if !inUnit(a.Coverage) {
		return &InvalidAssessmentError{Field: "Coverage", Value: a.Coverage}
	}
	if a.FilesAnalyzed < 0 {
		return &InvalidAssessmentError{Field: "FilesAnalyzed", Value: float64(a.FilesAnalyzed)}
	}
	if a.EstimatedFiles < 0 {
		return &InvalidAssessmentError{Field: "EstimatedFiles", Value: float64(a.EstimatedFiles)}
	}
	if !inUnit(a.Confidence) {
		return &InvalidAssessmentError{Field: "Confidence", Value: a.Confidence}
	}
	for i := range a.Findings {
		f := &a.Findings[i]
		if !inUnit(f.Confidence) {
			return &InvalidAssessmentError{Field: indexed("Findings", i, "Confidence"), Value: f.Confidence}
		}
		if !inUnit(f.Relevance) {
			return &InvalidAssessmentError{Field: indexed("Findings", i, "Relevance"), Value: f.Relevance}
		}
	}
	for i := range a.Conflicts {
		if s := a.Conflicts[i].Similarity; !inUnit(s) {
			return &InvalidAssessmentError{Field: indexed("Conflicts", i, "Similarity"), Value: s}
		}
	}
	for i := range a.Questions {
		if r := a.Questions[i].Relevance; !inUnit(r) {
			return &InvalidAssessmentError{Field: indexed("Questions", i, "Relevance"), Value: r}
		}
	}
	return nil
}

// coverageMeasured reports whether a carries a coverage measurement: a
// non-zero Coverage or an estimate of the relevant files.
func coverageMeasured(a *Assessment) bool { return a.Coverage != 0 || a.EstimatedFiles > 0 }

// confidenceMeasured reports whether a carries a confidence measurement:
// findings, or a non-zero overall Confidence.
func confidenceMeasured(a *Assessment) bool { return len(a.Findings) > 0 || a.Confidence != 0 }

// unanswered reports whether q is a critical question not fully answered.
func unanswered(q *Question) bool { return q.Critical && (!q.Answered || q.Partial) }

// shortfall returns how far v falls short of min, as a share of min,
// clamped to [0, 1]. min is positive.
func shortfall(v, min float64) float64 {
	s := (min - v) / min
	switch {
	case s < 0:
		return 0
	case s > 1:
		return 1
	}
	return s
}

// findingKind chooses the kind of a low-confidence finding's gap, and the
// reason shown in its Detail.
func findingKind(f *Finding) (Kind, string) {
	switch {
	case strings.EqualFold(f.Area, "security"):
		return Security, "security uncertainty"
	case strings.EqualFold(f.Area, "performance"):
		return Performance, "performance uncertainty"
	case f.Pattern:
		return Pattern, "unclear pattern"
	case len(f.Citations) == 0 || len(f.Sources) == 1:
		return Evidence, "missing evidence"
	}
	return Confidence, "needs verification"
}

func coverageDetail(a *Assessment, coverage, min float64) string {
	var buf [96]byte
	b := append(buf[:0], "coverage "...)
	b = appendFixed2(b, coverage)
	b = append(b, " below "...)
	b = appendFixed2(b, min)
	if a.EstimatedFiles > 0 {
		b = append(b, " ("...)
		b = strconv.AppendInt(b, int64(a.FilesAnalyzed), 10)
		b = append(b, " of "...)
		b = strconv.AppendInt(b, int64(a.EstimatedFiles), 10)
		b = append(b, " files)"...)
	}
	return string(b)
}

// confidenceDetail returns e.g.
// `confidence 0.60 below 0.80 (missing evidence): Uses JWT`.
func confidenceDetail(prefix string, v, min float64, reason, desc string) string {
	var buf [128]byte
	b := append(buf[:0], prefix...)
	b = appendFixed2(b, v)
	b = append(b, " below "...)
	b = appendFixed2(b, min)
	if reason != "" {
		b = append(b, " ("...)
		b = append(b, reason...)
		b = append(b, ')')
	}
	if desc != "" {
		b = append(b, ": "...)
		b = append(b, desc...)
	}
	return string(b)
}

// conflictDetail returns e.g. `ExploreAgent says "X" vs PatternAgent says "Y"`.
func conflictDetail(c *Conflict) string {
	var buf [128]byte
	b := appendClaim(buf[:0], &c.A)
	b = append(b, " vs "...)
	b = appendClaim(b, &c.B)
	return string(b)
}

func appendClaim(b []byte, c *Claim) []byte {
	if c.Source != "" {
		b = append(b, c.Source...)
	} else {
		b = append(b, "unknown"...)
	}
	b = append(b, " says "...)
	return strconv.AppendQuote(b, c.Statement)
}
