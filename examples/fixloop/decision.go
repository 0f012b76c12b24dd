package main

import (
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
// (the answer) is copied, and the slices kept are cloned.
type planInfo struct {
	iteration int
	action    iterate.Action
	guidance  []string
	feedback  iterate.Feedback
	answer    string
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
		pi.feedback.Items = slices.Clone(pl.Feedback.Items)
		if len(pl.Tasks) > 0 {
			pi.answer = pl.Tasks[0].Answer
		}
		o.mu.Lock()
		o.last = pi
		o.mu.Unlock()
		if e.Iteration() == 1 {
			// The baseline is no attempt: its feedback goes to attempt 1.
			fmt.Fprintf(o.log, "feedback for attempt 1:\n%s\n", indent(pi.feedback.String(), "  "))
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
		{"feedback", feedbackDoc(pi.feedback)},
	}
	if pi.answer != "" {
		d = append(d, field{"answer", pi.answer})
	}
	return obj{{"decision", d}}
}

func feedbackDoc(f iterate.Feedback) obj {
	items := list{}
	for _, it := range f.Items {
		items = append(items, it)
	}
	return obj{{"summary", f.Summary}, {"actionable_items", items}, {"priority", f.Priority}}
}

// escalateDoc is seed 002's escalate decision, with the command that
// answers it.
func escalateDoc(taskID string, esc *iterate.Escalation, resume string) obj {
	return obj{{"decision", obj{
		{"action", "escalate"},
		{"task_id", taskID},
		{"iteration", esc.Iteration},
		{"reason", esc.Reason},
		{"context", obj{
			{"attempts_summary", block(strings.Join(esc.Attempts, "\n"))},
			{"pattern_detected", esc.Pattern},
		}},
		{"question", block(esc.Question)},
		{"feedback", feedbackDoc(esc.Feedback)},
		{"resume", resume},
	}}}
}

// reportDoc is seed 001's decision report on the loop's final state:
// whether the package needs another iteration, the triggers (the open
// gaps), the strategy, the budget, the improvement assessment of
// converge.Assess and the next steps. The gaps are those of the last
// assessment, also in a result Resume returns without iterating.
func reportDoc(cfg config, res *iterate.Result[state], last *planInfo, hint string, now time.Time) obj {
	gaps := res.Gaps
	success := res.Status.Success()
	fb := iterate.SynthesizeFeedback(gaps, cfg.FeedbackLimit)
	priority := fb.Priority
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

	im := converge.Assess(&h, gaps)
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
	for _, it := range fb.Items {
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
