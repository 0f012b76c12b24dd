package converge

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Any returns a policy that asks policies in order and returns the first
// decision that stops. The criteria of the Continue decisions before it are
// merged into that decision, ahead of its own, and when the stop is not a
// success ([Verdict.Success]) and some of those criteria are unmet, its
// Reason gets them appended: a partial convergence at the iteration limit
// reads "max iterations reached: 4 of 4, unmet: confidence 0.72 < 0.80".
// When no policy stops, Any returns Continue carrying every criterion.
//
// Order matters: put success checks before stop checks, so that success on
// the last allowed iteration is reported as success. Nil policies are
// skipped (and reported by Validate); Any with no policy never stops.
// Decide allocates only when criteria of several policies must be merged or
// a reason extended. The result has a Validate method that validates every
// policy (see [Validate]). It is safe for concurrent use when the policies
// are; the slice passed in is copied.
func Any(policies ...Policy) Policy { return anyOf(slices.Clone(policies)) }

// All returns a policy that stops only when every one of policies stops. It
// asks them in order and returns Continue at the first that continues (the
// rest are not asked); when all stop, it returns the verdict of the first,
// the non-empty reasons joined by "; ", and the criteria of all. Criteria of
// the decisions asked are always merged. Nil policies are skipped (and
// reported by Validate); All with no policy never stops. The result has a
// Validate method that validates every policy. It is safe for concurrent use
// when the policies are; the slice passed in is copied.
func All(policies ...Policy) Policy { return allOf(slices.Clone(policies)) }

// Default returns the policy a loop uses when configured with nothing else:
//
//	Any(Done{}, Passing{}, HighConfidence{}, ThresholdsMet{}, Failures{}, NoProgress{}, IterationLimit{})
//
// Success checks come first, so that work complete, checks passing, an early
// exit or full convergence on the last allowed iteration is a success and
// not a stop at the limit; then the failure threshold (3), stuck detection
// (2 unchanged assessments) and the iteration limit (partial convergence,
// listing the unmet thresholds). A Continue carries the four criteria of
// [ThresholdsMet] when the assessment measured any of them. The thresholds
// and the failure threshold are the loop's: [History.Thresholds] and
// [History.FailureThreshold].
func Default() Policy { return defaultPolicy }

// defaultPolicy is the one standard policy: a pointer, so that a call
// through the Policy interface reaches Decide without the wrapper a value
// receiver would need.
var defaultPolicy = &standard{}

// standard is Any(Done{}, Passing{}, HighConfidence{}, ThresholdsMet{},
// Failures{}, NoProgress{}, IterationLimit{}) with static calls: the same
// decisions, without seven dynamic dispatches per round.
type standard struct{}

// Settings describes the policy as a host configures it, for the
// fingerprint of a loop's settings and the changes a resume reports.
func (*standard) Settings() string { return "converge.Default()" }

// Decide asks each policy's predicate first and builds a policy's Decision
// only when that policy stops (or, for ThresholdsMet, has criteria to
// report), so that the common round (nothing measured, no counter near its
// limit) decides Continue without building seven Decisions. It returns
// exactly what the Any of the seven policies returns (see
// TestDefaultEqualsAny and TestDefaultEqualsAnySweep).
func (*standard) Decide(h *History) Decision {
	if h == nil {
		return Decision{}
	}
	a := &h.Current
	if a.Complete {
		return (Done{}).Decide(h)
	}
	if a.Signals.Passing() {
		return (Passing{}).Decide(h)
	}
	if _, _, _, _, ok := highConfidence(h); ok {
		return (HighConfidence{}).Decide(h)
	}
	var th Decision // ThresholdsMet: Continue with no criteria when unmeasured
	if researchMeasured(a) {
		if th = (ThresholdsMet{}).Decide(h); th.Stop() {
			return th
		}
	}
	var d Decision
	switch {
	case failing(h):
		d = (Failures{}).Decide(h)
	case NoProgress{}.stuck(h):
		d = (NoProgress{}).Decide(h)
	case atLimit(h):
		d = (IterationLimit{}).Decide(h)
	default:
		return th
	}
	if len(th.Criteria) == 0 {
		return d
	}
	// As Any does: the stop lists the criteria evaluated before it, and a
	// stop short of success names the unmet ones.
	d.Reason = withUnmet(d.Reason, th.Criteria)
	d.Criteria = append(th.Criteria[:len(th.Criteria):len(th.Criteria)], d.Criteria...)
	return d
}

type anyOf []Policy

// Decide returns the first stopping decision, or Continue.
func (a anyOf) Decide(h *History) Decision {
	var m merger
	for _, p := range a {
		if p == nil {
			continue
		}
		d := p.Decide(h)
		if !d.Stop() {
			m.add(d.Criteria)
			continue
		}
		if len(m.crit) == 0 {
			return d
		}
		earlier := m.crit
		m.add(d.Criteria)
		d.Criteria = m.crit
		if !d.Verdict.Success() {
			d.Reason = withUnmet(d.Reason, earlier)
		}
		return d
	}
	return Decision{Criteria: m.crit}
}

// Validate validates every policy.
func (a anyOf) Validate() error { return validateAll("Any", a, DefaultWindow) }

func (a anyOf) validateWindow(window int) error { return validateAll("Any", a, window) }

type allOf []Policy

// Decide returns Continue unless every policy stops.
func (a allOf) Decide(h *History) Decision {
	var m merger
	var first Decision
	var reasonBuf [8]string
	reasons := reasonBuf[:0]
	stopped := false
	for _, p := range a {
		if p == nil {
			continue
		}
		d := p.Decide(h)
		m.add(d.Criteria)
		if !d.Stop() {
			return Decision{Criteria: m.crit}
		}
		if !stopped {
			first, stopped = d, true
		}
		if d.Reason != "" {
			reasons = append(reasons, d.Reason)
		}
	}
	if !stopped {
		return Decision{Criteria: m.crit}
	}
	return Decision{Verdict: first.Verdict, Reason: strings.Join(reasons, "; "), Criteria: m.crit}
}

// Validate validates every policy.
func (a allOf) Validate() error { return validateAll("All", a, DefaultWindow) }

func (a allOf) validateWindow(window int) error { return validateAll("All", a, window) }

// validateAll validates policies for a history of the given window.
func validateAll(name string, policies []Policy, window int) error {
	var errs []error
	for i, p := range policies {
		if p == nil {
			errs = append(errs, invalid(name, "policies["+strconv.Itoa(i)+"]", "must not be nil"))
			continue
		}
		if err := ValidateWindow(p, window); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// merger collects criteria. It borrows the first non-empty slice it is given
// and copies only when a second one must be added, so that the common case
// (one policy with criteria) does not allocate.
type merger struct {
	crit  []Criterion
	owned bool
}

func (m *merger) add(c []Criterion) {
	switch {
	case len(c) == 0:
		return
	case len(m.crit) == 0:
		m.crit = c
		return
	case !m.owned:
		n := make([]Criterion, len(m.crit), len(m.crit)+len(c))
		copy(n, m.crit)
		m.crit, m.owned = n, true
	}
	m.crit = append(m.crit, c...)
}

// withUnmet appends ", unmet: a, b" to reason when some criteria are unmet.
func withUnmet(reason string, crit []Criterion) string {
	var sb strings.Builder
	for i := range crit {
		if crit[i].Met {
			continue
		}
		if sb.Len() == 0 {
			sb.WriteString(reason)
			if reason != "" {
				sb.WriteString(", ")
			}
			sb.WriteString("unmet: ")
		} else {
			sb.WriteString(", ")
		}
		sb.WriteString(crit[i].String())
	}
	if sb.Len() == 0 {
		return reason
	}
	return sb.String()
}
