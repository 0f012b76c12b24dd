package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// proceedMessage is seed 002's message of the proceed decision.
const proceedMessage = "Validation passed. Proceeding to next task."

// planInfo is what the observer keeps of the latest plan. The engine reuses
// the memory of a plan's tasks for the next plan, so what is needed of them
// (the answer, the priority of the gaps addressed) is copied, and the
// slices kept are cloned.
type planInfo struct {
	iteration int
	action    iterate.Action
	guidance  []string
	// feedback is the plan's feedback text (a summary line, then "- item"
	// lines); priority the word of its most severe gap (feedbackPriority).
	feedback string
	priority string
	answer   string
}

// observer turns the engine's events into seed 002's decisions: after each
// attempt, proceed (the checks pass) or retry (with the plan's feedback).
// The escalation is printed by the caller from the *iterate.EscalationError.
// Safe for concurrent use.
type observer struct {
	p      *printer
	log    io.Writer
	taskID string

	mu        sync.Mutex
	last      *planInfo
	proceeded bool
}

func (o *observer) observe(e iterate.Event) {
	switch e := e.(type) {
	case iterate.Decided:
		if e.Decision.Verdict.Success() {
			o.mu.Lock()
			o.proceeded = true
			o.mu.Unlock()
			o.p.print(proceedDoc(o.taskID, e.Iteration()-1))
		}
	case iterate.Planned:
		pl := e.Plan
		// An escalation (also the plan, without tasks, that phrases one the
		// convergence policy decided) is printed from the
		// *iterate.EscalationError; a stop from the result.
		if pl.Action == iterate.Escalate || pl.Action == iterate.Stop {
			return
		}
		pi := &planInfo{iteration: e.Iteration(), action: pl.Action,
			guidance: slices.Clone(pl.Guidance), feedback: pl.Feedback}
		// The feedback is synthesised from the gaps the tasks address (the
		// implementer role groups them all into the one task).
		var addressed []gap.Gap
		for i := range pl.Tasks {
			addressed = append(addressed, pl.Tasks[i].Gaps...)
		}
		pi.priority = feedbackPriority(addressed)
		if len(pl.Tasks) > 0 {
			pi.answer = pl.Tasks[0].Answer
		}
		o.mu.Lock()
		o.last = pi
		o.mu.Unlock()
		if e.Iteration() == 1 {
			// The baseline is no attempt: its feedback goes to attempt 1.
			fmt.Fprintf(o.log, "feedback for attempt 1:\n%s\n", indent(pi.feedback, "  "))
			return
		}
		o.p.print(retryDoc(o.taskID, pi))
	}
}

// lastPlan returns the latest plan seen, or nil.
func (o *observer) lastPlan() *planInfo {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

// proceedPrinted reports whether a proceed decision was printed.
func (o *observer) proceedPrinted() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.proceeded
}

func indent(s, pad string) string {
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// proceedDoc is seed 002's proceed decision after the given attempt.
func proceedDoc(taskID string, iteration int) obj {
	return obj{{"decision", obj{
		{"action", "proceed"},
		{"task_id", taskID},
		{"iteration", iteration},
		{"message", proceedMessage},
	}}}
}

// retryDoc is seed 002's retry decision: the iteration about to run and
// the prioritised feedback it gets. strategy is the library's action for
// it (retry, refine, simplify, expand), answer the human's answer if any.
func retryDoc(taskID string, pi *planInfo) obj {
	d := obj{
		{"action", "retry"},
		{"task_id", taskID},
		{"iteration", pi.iteration},
		{"strategy", string(pi.action)},
		{"feedback", feedbackDoc(pi.feedback, pi.priority)},
	}
	if pi.answer != "" {
		d = append(d, field{"answer", pi.answer})
	}
	return obj{{"decision", d}}
}

// feedbackDoc is seed 002's feedback: the summary and actionable items of
// the feedback text, and the priority word of its gaps.
func feedbackDoc(text, priority string) obj {
	summary, its := parseFeedback(text)
	items := list{}
	for _, it := range its {
		items = append(items, it)
	}
	return obj{{"summary", summary}, {"actionable_items", items}, {"priority", priority}}
}

// parseFeedback splits the engine's feedback text into its summary (the
// first line) and its actionable items (the lines starting "- ", without
// that prefix).
func parseFeedback(text string) (summary string, items []string) {
	if text == "" {
		return "", nil
	}
	summary, rest, _ := strings.Cut(text, "\n")
	for l := range strings.SplitSeq(rest, "\n") {
		if it, ok := strings.CutPrefix(l, "- "); ok {
			items = append(items, it)
		}
	}
	return summary, items
}

// feedbackPriority is the priority word of feedback on gaps, from the
// severity of the most severe one: "critical" from 0.95, "high" from 0.7,
// "medium" from 0.4, otherwise "low"; "" without gaps. (The rule the
// library's feedback synthesis used when it still returned a priority.)
func feedbackPriority(gaps []gap.Gap) string {
	if len(gaps) == 0 {
		return ""
	}
	top := gaps[0].Severity
	for _, g := range gaps[1:] {
		top = max(top, g.Severity)
	}
	switch {
	case top >= 0.95:
		return "critical"
	case top >= 0.7:
		return "high"
	case top >= 0.4:
		return "medium"
	default:
		return "low"
	}
}

// escalateDoc is seed 002's escalate decision, with the command that
// answers it; gaps are the open gaps its feedback consolidates, diff what
// the attempts changed in the working copy (seed 002's
// escalation_includes_diff), left out when "".
func escalateDoc(taskID string, esc *iterate.Escalation, gaps []gap.Gap, diff, resume string) obj {
	context := obj{
		{"attempts_summary", block(strings.Join(esc.Attempts, "\n"))},
		{"pattern_detected", esc.Pattern},
	}
	if diff != "" {
		context = append(context, field{"diff", block(strings.TrimSuffix(diff, "\n"))})
	}
	return obj{{"decision", obj{
		{"action", "escalate"},
		{"task_id", taskID},
		{"iteration", esc.Iteration},
		{"reason", esc.Reason},
		{"context", context},
		{"question", block(esc.Question)},
		{"feedback", feedbackDoc(esc.Feedback, feedbackPriority(gaps))},
		{"resume", resume},
	}}}
}

// reportDoc is seed 001's decision report on the loop's final state:
// whether the package needs another iteration, the triggers (the open
// gaps), the strategy, the budget, the improvement outlook of
// converge.Forecast and the next steps. The gaps are those of the last
// assessment, also in a result Resume returns without iterating.
func reportDoc(cfg config, res *iterate.Result[state], last *planInfo, hint string, now time.Time) obj {
	gaps := res.History.Gaps
	success := res.Status.Success()
	priority := feedbackPriority(gaps)
	if priority == "" {
		priority = "low"
	}

	triggers := list{}
	for _, g := range gaps {
		triggers = append(triggers, obj{
			{"type", string(g.Kind)},
			{"source", g.Source},
			{"severity", g.Severity},
			{"details", g.Detail},
			{"fixable", g.Fixable},
		})
	}

	strategy := obj{{"type", "none"}, {"modifications", list{}}, {"contextAdjustments", list{}}}
	if !success {
		mods := list{}
		adjust := list{}
		typ := "retry"
		if res.Status == iterate.Escalated {
			typ = "escalate"
			reason := res.Reason
			if res.Escalation != nil {
				reason = res.Escalation.Reason
			}
			mods = append(mods, obj{{"type", "flag_for_human"}, {"reason", reason}})
		} else if last != nil {
			typ = string(last.action)
			for _, g := range last.guidance {
				adjust = append(adjust, obj{{"type", "add_guidance"}, {"content", g}})
			}
		}
		if t := targets(gaps, gap.TestFailure); len(t) > 0 {
			mods = append(mods, obj{{"type", "fix_errors"}, {"targets", t}})
		}
		if t := targets(gaps, gap.ReviewRejected); len(t) > 0 {
			mods = append(mods, obj{{"type", "address_review"}, {"targets", t}})
		}
		strategy = obj{{"type", typ}, {"modifications", mods}, {"contextAdjustments", adjust}}
	}

	remainingTokens := int64(-1)
	if cfg.TokenBudget > 0 {
		remainingTokens = max(0, cfg.TokenBudget-res.Usage.Tokens)
	}
	h := res.History
	budgetDoc := obj{
		{"maxIterations", h.MaxIterations},
		{"currentIteration", res.Iterations},
		{"remainingIterations", h.Remaining()},
		{"tokenBudget", cfg.TokenBudget},
		{"usedTokens", res.Usage.Tokens},
		{"remainingTokens", remainingTokens},
	}

	im := converge.Forecast(&h, gaps)
	assessment := obj{
		{"likelihood", im.Likelihood},
		{"expectedGain", im.ExpectedGain},
		{"diminishingReturns", im.DiminishingReturns},
		{"recommendation", string(im.Recommendation)},
		{"reason", im.Reason()},
	}

	next := list{}
	switch {
	case success:
		next = append(next, "Proceed to the next task", "Review the repaired working copy in "+cfg.Workdir)
	case res.Status == iterate.Escalated:
		next = append(next, "Answer the question: "+hint)
	}
	for _, it := range openItems(res, last, cfg.FeedbackLimit) {
		next = append(next, "Fix "+it)
	}

	return obj{{"iterationDecision", obj{
		{"taskId", cfg.TaskID},
		{"outputId", fmt.Sprintf("attempt-%d", res.Iterations)},
		{"decidedAt", now.UTC().Format(time.RFC3339)},
		{"status", string(res.Status)},
		{"decision", obj{{"needsIteration", !success}, {"priority", priority}}},
		{"triggers", triggers},
		{"strategy", strategy},
		{"budget", budgetDoc},
		{"assessment", assessment},
		{"nextSteps", next},
	}}}
}

// targets lists the targets of the gaps of a kind.
func targets(gaps []gap.Gap, k gap.Kind) list {
	var l list
	for _, g := range gaps {
		if g.Kind == k && !slices.Contains(l, any(g.Target)) {
			l = append(l, g.Target)
		}
	}
	return l
}

// openItems are the actionable items on the gaps open at the end, none for
// a success. The library no longer synthesises feedback for a host, so they
// come from the text the loop produced last on these gaps: the escalation's,
// which consolidates them all; or the latest plan's when it was made on
// them: a plan whose attempt did not complete (an interrupt), or the last
// plan of a stuck loop (the same problems survived its attempt). Otherwise
// (the budget stopped the loop before it planned again) they are phrased
// from the gaps themselves (gapItems), within limit bytes.
func openItems(res *iterate.Result[state], last *planInfo, limit int) []string {
	var text string
	switch {
	case res.Status.Success() || len(res.History.Gaps) == 0:
		return nil
	case res.Escalation != nil:
		text = res.Escalation.Feedback
	case last != nil && (last.iteration > res.Iterations || res.Status == iterate.Stuck):
		text = last.feedback
	default:
		return gapItems(res.History.Gaps, limit)
	}
	_, items := parseFeedback(text)
	return items
}

// gapItems phrases the actionable items of gaps as the engine's feedback
// does: most severe first (ties in the analyzer's order), the first line of
// the detail (or else the target), a failing test's name before it, each
// once; as many as fit in limit bytes of "\n- item" lines.
func gapItems(gaps []gap.Gap, limit int) []string {
	if limit <= 0 {
		limit = iterate.DefaultFeedbackLimit
	}
	order := slices.Clone(gaps)
	slices.SortStableFunc(order, func(a, b gap.Gap) int { return cmp.Compare(b.Severity, a.Severity) })
	var items []string
	used := 0
	for _, g := range order {
		d := g.Detail
		if strings.TrimSpace(d) == "" {
			d = g.Target
		}
		d, _, _ = strings.Cut(strings.TrimSpace(d), "\n")
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		if g.Kind == gap.TestFailure && g.Target != "" && !strings.Contains(d, g.Target) {
			d = g.Target + ": " + d
		}
		if slices.Contains(items, d) || used+3+len(d) > limit {
			continue
		}
		used += 3 + len(d)
		items = append(items, d)
	}
	return items
}

// noAutoRetry is the policy of seed 002's auto_retry_on_test_fail and
// auto_retry_on_review_reject when cfg turns them off: an attempt (not the
// baseline, before which h.Iteration is 0) whose tests fail, or whose review rejects it,
// escalates to the human at once instead of retrying.
//
// After the human's answer, the engine decides again before the next
// attempt: the escalation is not repeated until an attempt was made since
// the answer (the iteration limit moved to the answer's iteration plus
// MaxIterations tells when it came; in the same process, the policy also
// remembers where it escalated).
func noAutoRetry(cfg config) converge.Policy {
	var mu sync.Mutex
	escalatedAt := -1
	return converge.PolicyFunc(func(h *converge.History) converge.Decision {
		mu.Lock()
		defer mu.Unlock()
		answeredAt := 0
		if cfg.MaxIterations > 0 && h.MaxIterations > cfg.MaxIterations {
			answeredAt = h.MaxIterations - cfg.MaxIterations
		}
		if h.Iteration < 1 || h.Iteration <= answeredAt || h.Iteration == escalatedAt {
			return converge.Decision{Verdict: converge.Continue}
		}
		for _, g := range h.Gaps {
			if (g.Kind == gap.TestFailure && cfg.NoRetryOnTestFail) || (g.Kind == gap.ReviewRejected && cfg.NoRetryOnReviewReject) {
				escalatedAt = h.Iteration
				break
			}
		}
		for _, g := range h.Gaps {
			switch {
			case g.Kind == gap.TestFailure && cfg.NoRetryOnTestFail:
				return converge.Decision{Verdict: converge.Escalate,
					Reason: fmt.Sprintf("escalate: the tests failed after attempt %d and auto_retry_on_test_fail is off", h.Iteration)}
			case g.Kind == gap.ReviewRejected && cfg.NoRetryOnReviewReject:
				return converge.Decision{Verdict: converge.Escalate,
					Reason: fmt.Sprintf("escalate: the review rejected attempt %d and auto_retry_on_review_reject is off", h.Iteration)}
			}
		}
		return converge.Decision{Verdict: converge.Continue}
	})
}
