package iterate

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// Action is the strategy of an iteration.
type Action string

// The actions a [Strategy] can choose.
const (
	// Retry: try again, fixing the reported issues.
	Retry Action = "retry"
	// Refine: focus on the specific issues that survived a retry, in more
	// detail.
	Refine Action = "refine"
	// Expand: gather more: evidence, sources, files, context.
	Expand Action = "expand"
	// Simplify: reduce the scope of the attempt to what can succeed.
	Simplify Action = "simplify"
	// Escalate: stop and ask a human.
	Escalate Action = "escalate"
	// Stop: end the run because iterating cannot help any more; the loop
	// stops with status Stuck and no error.
	Stop Action = "stop"
)

// Situation is what a [Strategy] knows when it plans an iteration. The
// engine owns it and reuses it between iterations: a Strategy must not keep
// it, or anything it points to, after Plan returns.
type Situation struct {
	// Iteration is the 1-indexed number of the iteration being planned.
	Iteration int
	// History is the convergence history: where the state stands
	// (History.Current) and its prioritised gaps (History.Gaps), the
	// iteration limit (History.MaxIterations) and the iterations left
	// including this one (History.Remaining()). Decision is the policy's
	// verdict for this round (Continue, or Escalate when the policy wants a
	// human).
	History  *converge.History
	Decision converge.Decision
	// Budget is what is left under each limit (-1 when unlimited).
	Budget budget.Usage
	// Last is the previous iteration's plan, nil on the first iteration of a
	// process (a resumed run has no Last; History's records carry the
	// actions taken).
	Last *Plan
	// Unresolved lists the gaps whose tasks failed in the previous iteration.
	Unresolved []gap.Gap
	// Answer is a human's answer to an escalation, set on the first
	// iteration after a resume with [WithAnswer]; AnsweredAt is the number of
	// iterations completed when the latest answer arrived (0 when none).
	Answer     string
	AnsweredAt int

	tasks []Task // reusable buffer for the default strategy
}

// Plan is a [Strategy]'s decision for one iteration.
type Plan struct {
	// Action is the iteration's strategy.
	Action Action
	// Tasks run in parallel, in this order for integration.
	Tasks []Task
	// Deferred lists gaps left for a later iteration.
	Deferred []gap.Gap
	// Feedback is the synthesised feedback passed to the tasks: a summary
	// line, then one "- item" line per actionable item, most severe first.
	Feedback string
	// Guidance lists adjustments for the tasks.
	Guidance []string
	// Reason explains the choice.
	Reason string
	// Warning is set when the plan is a degree of escalation short of asking
	// a human: the same problems survived the last attempt.
	Warning string
	// Escalation is set when Action is Escalate.
	Escalation *Escalation
}

// Escalation is what a human is asked when the loop cannot go on alone.
type Escalation struct {
	// Iteration is the number of completed iterations when escalating.
	Iteration int `json:"iteration"`
	// Reason says why the loop escalates.
	Reason string `json:"reason"`
	// Attempts summarises every attempt in the history window, one line each
	// ("Iteration 1: retry, 2 gaps: P1 test_failure [TestLogin]: ...").
	Attempts []string `json:"attempts,omitempty"`
	// Pattern is the problem that persisted across the attempts.
	Pattern string `json:"pattern,omitempty"`
	// Question is the decision needed from the human.
	Question string `json:"question"`
	// Feedback consolidates the open issues, as Plan.Feedback.
	Feedback string `json:"feedback,omitempty"`

	// The question's deadline (see [WithQuestionDeadline]; a strategy may
	// set them on its own escalation, and the engine's fill only those it
	// leaves zero). Deadline is when the question expires unanswered, zero
	// for never; OnExpiry and Default say what happens then. RemindAt is
	// when a [QuestionReminder] is due, zero for none; Reminded is when it
	// was sent. Extensions lists the answerers' extensions of the deadline
	// ([ExtendDeadline]). All are saved with the question.
	Deadline   time.Time           `json:"deadline,omitzero"`
	OnExpiry   Expiry              `json:"on_expiry,omitempty"`
	Default    string              `json:"default,omitempty"`
	RemindAt   time.Time           `json:"remind_at,omitzero"`
	Reminded   time.Time           `json:"reminded,omitzero"`
	Extensions []DeadlineExtension `json:"extensions,omitempty"`

	// Parked is set when the loop parked at its budget's limit
	// ([WithParkAtLimit]): the limit reached, the spend and the latest
	// scores. An [ExtendBudget] answers the question.
	Parked *Parked `json:"parked,omitempty"`
}

// feedback is synthesised, prioritised, length-bounded feedback for the next
// attempt (see synthesizeFeedback).
type feedback struct {
	summary string
	items   []string
	// priority is "critical", "high", "medium" or "low".
	priority string
}

// String renders the feedback as a summary line followed by one "- item"
// line per actionable item.
func (f feedback) String() string {
	if f.summary == "" && len(f.items) == 0 {
		return ""
	}
	if len(f.items) == 0 {
		return f.summary
	}
	n := len(f.summary)
	for _, it := range f.items {
		n += len("\n- ") + len(it)
	}
	var b strings.Builder
	b.Grow(n) // one allocation
	b.WriteString(f.summary)
	for _, it := range f.items {
		b.WriteString("\n- ")
		b.WriteString(it)
	}
	return b.String()
}

// synthesizeFeedback turns gaps into feedback for the next attempt: the
// actionable items of failed tests ("TestX: expected A, received B"), review
// issues and every other gap, most severe first, with a one-line summary and
// a priority. The rendered feedback is at most limit bytes
// (gap.MaxFeedbackLength, seed 002's feedback_max_length, when limit <= 0):
// items that do not fit are dropped, and a summary that alone is too long is
// cut with "…".
func synthesizeFeedback(gaps []gap.Gap, limit int) feedback {
	if len(gaps) == 0 {
		return feedback{}
	}
	sum, cut, priority, items := selectFeedback(gaps, limit, nil)
	f := feedback{summary: cut, items: items, priority: priority}
	if cut == "" {
		f.summary = sum.String()
	}
	return f
}

// feedbackText returns synthesizeFeedback(gaps, limit).String() in a
// single allocation, for the plan of every iteration: the items are
// selected into a small buffer on the stack and the text sized before it is
// written.
func feedbackText(gaps []gap.Gap, limit int) string {
	if len(gaps) == 0 {
		return ""
	}
	sum, cut, _, items := selectFeedback(gaps, limit, make([]string, 0, 8))
	if cut != "" {
		return cut
	}
	n := sum.len()
	for _, it := range items {
		n += len("\n- ") + len(it)
	}
	var b strings.Builder
	b.Grow(n)
	sum.writeTo(&b)
	for _, it := range items {
		b.WriteString("\n- ")
		b.WriteString(it)
	}
	return b.String()
}

// selectFeedback selects the feedback of gaps (not empty), as
// synthesizeFeedback describes: it returns the summary, the priority and
// the actionable items that fit, in order, appended to items; or, when the
// summary alone is too long, the summary cut to the limit and no item.
func selectFeedback(gaps []gap.Gap, limit int, items []string) (sum summary, cut, priority string, _ []string) {
	if limit <= 0 {
		limit = gap.MaxFeedbackLength
	}
	order := make([]int, len(gaps))
	for i := range order {
		order[i] = i
	}
	// Most severe first; ties keep the analyzer's (priority) order.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && feedbackBefore(&gaps[order[j]], &gaps[order[j-1]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	top := &gaps[order[0]]
	priority = severityPriority(top.Severity)
	sum = summaryOf(top, len(gaps))
	used := sum.len()
	if used > limit {
		return sum, truncate(sum.String(), limit), priority, items
	}
	first := len(items)
	for _, i := range order {
		it := actionable(&gaps[i])
		// The items already taken are few (they fit in limit bytes): a
		// scan finds a repeated one sooner than a map is made.
		if it == "" || slices.Contains(items[first:], it) {
			continue
		}
		if used+3+len(it) > limit { // "\n- " + item
			continue
		}
		used += 3 + len(it)
		items = append(items, it)
	}
	return sum, "", priority, items
}

func feedbackBefore(a, b *gap.Gap) bool {
	if a.Severity != b.Severity {
		return a.Severity > b.Severity
	}
	pa, pb := a.Priority, b.Priority
	if pa == 0 {
		pa = gap.P3 + 1
	}
	if pb == 0 {
		pb = gap.P3 + 1
	}
	return pa < pb
}

func severityPriority(s float64) string {
	switch {
	case s >= 0.95:
		return "critical"
	case s >= 0.7:
		return "high"
	case s >= 0.4:
		return "medium"
	default:
		return "low"
	}
}

// summary is the one-line summary of feedback, in parts: "what: detail",
// and " (n issues)" when there are several.
type summary struct {
	what, sep, detail string
	issues            int
}

func summaryOf(top *gap.Gap, n int) summary {
	s := summary{what: kindWords(top.Kind)}
	if d := firstLine(detailOf(top)); d != "" {
		s.sep, s.detail = ": ", truncate(d, summaryDetailLimit)
	}
	if n > 1 {
		s.issues = n
	}
	return s
}

// len returns the length of the summary.
func (s summary) len() int {
	n := len(s.what) + len(s.sep) + len(s.detail)
	if s.issues > 0 {
		n += len(" (") + len(strconv.Itoa(s.issues)) + len(" issues)")
	}
	return n
}

func (s summary) writeTo(b *strings.Builder) {
	b.WriteString(s.what)
	b.WriteString(s.sep)
	b.WriteString(s.detail)
	if s.issues > 0 {
		b.WriteString(" (")
		b.WriteString(strconv.Itoa(s.issues))
		b.WriteString(" issues)")
	}
}

func (s summary) String() string {
	var b strings.Builder
	b.Grow(s.len())
	s.writeTo(&b)
	return b.String()
}

// summaryDetailLimit keeps the summary short so the items fit the bound.
const summaryDetailLimit = 120

// kindWords names a kind of gap in the summary of feedback: "Test
// failed", "Review rejected", "Validation failed", or the kind with spaces
// for underscores ("unanswered question"), spelled out for the built-in
// kinds so that a summary costs no allocation.
func kindWords(k gap.Kind) string {
	switch k {
	case gap.TestFailure:
		return "Test failed"
	case gap.ReviewRejected:
		return "Review rejected"
	case gap.ValidationFailure:
		return "Validation failed"
	case gap.Coverage, gap.Confidence, gap.Security, gap.Performance:
		return string(k) // no underscore
	case gap.ConflictingFindings:
		return "conflicting findings"
	case gap.MissingContext:
		return "missing context"
	case gap.UnansweredQuestion:
		return "unanswered question"
	case gap.Evidence:
		return "missing evidence"
	case gap.Pattern:
		return "unclear pattern"
	case gap.LowConfidence:
		return "low confidence"
	case gap.IncompleteOutput:
		return "incomplete output"
	case gap.ExplicitFeedback:
		return "explicit feedback"
	case gap.Hallucination:
		return "hallucination detected"
	case gap.RequirementUnmet:
		return "requirement unmet"
	case gap.QualityThreshold:
		return "quality threshold"
	case gap.UserRejection:
		return "user rejection"
	}
	return strings.ReplaceAll(string(k), "_", " ")
}

func detailOf(g *gap.Gap) string {
	if g.Detail != "" {
		return g.Detail
	}
	return g.Target
}

func actionable(g *gap.Gap) string {
	d := firstLine(detailOf(g))
	switch {
	case d == "":
		return ""
	case g.Kind == gap.TestFailure && g.Target != "" && !strings.Contains(d, g.Target):
		return g.Target + ": " + d
	default:
		return d
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// truncate cuts s to at most n bytes, ending in "…", at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	if n < len(ell) {
		return ""
	}
	cut := n - len(ell)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ell
}
