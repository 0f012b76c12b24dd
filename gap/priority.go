package gap

import (
	"cmp"
	"slices"
)

// Priority boundaries of research refinement.
const (
	// criticalCoverage is the coverage below which a coverage gap is P1.
	criticalCoverage = 0.50
	// lowConfidence is the confidence below which a finding's gap is P2
	// rather than P3 when the finding is unknown.
	lowConfidence = 0.70
)

// Severity boundaries for gaps ranked by severity.
const (
	severityP1 = 0.9
	severityP2 = 0.6
)

// Prioritize assigns a Priority to every gap whose Priority is not P1, P2 or
// P3, then sorts gaps in place, stably, by Priority (P1 first), Relevance
// (highest first) and Severity (highest first). It returns gaps. Gaps that
// already have a valid Priority keep it. a is the assessment the gaps were
// found in; it is used to look up coverage and findings.
//
// The rules come from the gap prioritisation of research refinement; the
// cases it leaves open are decided as marked (*):
//
//	Kind                 Condition                                   Priority
//	UnansweredQuestion   critical, unanswered or partially answered  P1
//	Security             always (potential vulnerability)            P1
//	Coverage             coverage below 0.50                         P1
//	                     coverage 0.50 to 0.70                       P2
//	                     * coverage 0.70 and up (raised threshold)   P2
//	                       (it blocks convergence: never left to P3)
//	                     * coverage not measured in a                P2
//	ConflictingFindings  always                                      P2
//	MissingContext       always                                      P2
//	Confidence, Evidence, Pattern, Performance, whose Target is a finding of a:
//	                     critical finding, confidence below 0.70     P2
//	                     * critical finding, 0.70 and up             P2
//	                     * important finding                         P2
//	                     Pattern on a non-critical finding           P3
//	                     informational finding, confidence 0.70-0.79 P3
//	                     * informational finding, below 0.70         P3
//	Confidence, Evidence, Pattern, Performance, whose Target is no finding
//	(such as the average-confidence gap):
//	                     * Pattern                                   P3
//	                     * average confidence below 0.70, or none    P2
//	                     * average confidence 0.70 and up            P3
//	TestFailure          * always (the work does not pass)           P1
//	ReviewRejected       * always (the work does not pass)           P1
//	* any other kind (the quality triggers of [Quality], host kinds):
//	                     Severity 0.9 and up                         P1
//	                     Severity 0.6 and up                         P2
//	                     otherwise (and NaN)                         P3
//
// Prioritize does not allocate. The sort is skipped when gaps are already in
// order.
func Prioritize(gaps []Gap, a Assessment) []Gap { return prioritize(gaps, &a) }

func prioritize(gaps []Gap, a *Assessment) []Gap {
	for i := range gaps {
		if !validPriority(gaps[i].Priority) {
			gaps[i].Priority = priorityOf(&gaps[i], a)
		}
	}
	if !sorted(gaps) {
		slices.SortStableFunc(gaps, compareGaps)
	}
	return gaps
}

// sorted reports whether gaps are in the order of compareGaps, as
// slices.IsSortedFunc(gaps, compareGaps) does, without copying the gaps.
func sorted(gaps []Gap) bool {
	for i := 1; i < len(gaps); i++ {
		if compareGapsAt(&gaps[i], &gaps[i-1]) < 0 {
			return false
		}
	}
	return true
}

// prioritized reports whether every gap has a valid Priority.
func prioritized(gaps []Gap) bool {
	for i := range gaps {
		if !validPriority(gaps[i].Priority) {
			return false
		}
	}
	return true
}

func validPriority(p Priority) bool { return p >= P1 && p <= P3 }

// compareGaps orders by priority ascending, relevance descending, severity
// descending. cmp.Compare orders NaN first, so the order stays total.
func compareGaps(x, y Gap) int { return compareGapsAt(&x, &y) }

// compareGapsAt is compareGaps of *x and *y.
func compareGapsAt(x, y *Gap) int {
	if c := cmp.Compare(x.Priority, y.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(y.Relevance, x.Relevance); c != 0 {
		return c
	}
	return cmp.Compare(y.Severity, x.Severity)
}

// priorityOf applies the rules of [Prioritize] to one gap.
func priorityOf(g *Gap, a *Assessment) Priority {
	switch g.Kind {
	case UnansweredQuestion, Security, TestFailure, ReviewRejected:
		return P1
	case ConflictingFindings, MissingContext:
		return P2
	case Coverage:
		if !coverageMeasured(a) {
			return P2
		}
		if a.CoverageRatio() < criticalCoverage {
			return P1
		}
		return P2 // below the loop's threshold, whatever it is
	case Confidence, Evidence, Pattern, Performance:
		if f := findFinding(a, g.Target); f != nil {
			switch {
			case f.Impact == Critical:
				return P2
			case g.Kind == Pattern:
				return P3
			case f.Impact == Important:
				return P2
			}
			return P3
		}
		if g.Kind == Pattern {
			return P3
		}
		if confidenceMeasured(a) && a.AverageConfidence() >= lowConfidence {
			return P3
		}
		return P2
	}
	switch {
	case g.Severity >= severityP1:
		return P1
	case g.Severity >= severityP2:
		return P2
	}
	return P3
}

// findFinding returns the first finding of a with the given ID, or nil.
func findFinding(a *Assessment, id string) *Finding {
	if id == "" {
		return nil
	}
	for i := range a.Findings {
		if a.Findings[i].ID == id {
			return &a.Findings[i]
		}
	}
	return nil
}

// Select chooses the gaps an iteration addresses, following the selection
// logic of research refinement:
//
//   - remaining iterations >= 2, or remaining < 0 (unlimited): P1 and P2
//     gaps, and P3 gaps only if slots remain after them (always, when slots
//     are unlimited);
//   - remaining == 1: P1 gaps only (focus on the critical);
//   - remaining == 0: nothing.
//
// Of those, at most slots gaps (slots <= 0: no limit) are taken in order: by
// priority, then relevance to the user's request, then severity, as
// [Prioritize] sorts them. Every other gap is deferred, in order.
//
// Select expects gaps prioritised by [Prioritize]. If some gap has no valid
// Priority, Select calls Prioritize(gaps, Assessment{}) itself, which
// cannot look up coverage or findings (see its rules); if the gaps are not
// in order, it sorts them. Either way gaps is reordered in place.
//
// Select does not allocate: selected and deferred are the two parts of
// gaps (selected := gaps[:n:n], deferred := gaps[n:]), so they share its
// backing array; selected is clipped, so appending to it does not overwrite
// deferred. A part that is empty is nil.
func Select(gaps []Gap, remaining, slots int) (selected, deferred []Gap) {
	if !prioritized(gaps) {
		prioritize(gaps, &Assessment{}) // also sorts
	} else if !sorted(gaps) {
		slices.SortStableFunc(gaps, compareGaps)
	}

	// gaps is sorted, so each priority level is a run: count P1 and P1+P2.
	n1, n12 := 0, 0
	for i := range gaps {
		switch gaps[i].Priority {
		case P1:
			n1++
			n12++
		case P2:
			n12++
		}
	}

	var n int
	switch {
	case remaining == 0:
		n = 0
	case remaining == 1:
		n = n1
	case slots <= 0 || slots > n12:
		n = len(gaps) // P3 fills the slots left
	default:
		n = n12
	}
	if slots > 0 && n > slots {
		n = slots
	}

	if n > 0 {
		selected = gaps[:n:n]
	}
	if n < len(gaps) {
		deferred = gaps[n:]
	}
	return selected, deferred
}
