package study

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// display prints seed 000's progress and convergence displays from the
// loop's events. It is safe for concurrent use (task events arrive from
// the tasks' goroutines).
type display struct {
	mu        sync.Mutex
	w         io.Writer
	external  map[string]string
	max       int
	gaps      int
	criteria  []converge.Criterion
	coverage  float64
	conf      float64
	planTasks int // tasks of the current iteration
}

func (d *display) observe(e iterate.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch e := e.(type) {
	case iterate.LoopStarted:
		d.max = e.MaxIterations
		if e.Resumed {
			fmt.Fprintf(d.w, "↩️  Resuming session %s after iteration %d of %d (%.1fs done before)\n\n", e.Session, e.Completed, e.MaxIterations, e.Elapsed.Seconds())
		}
	case iterate.GapsFound:
		d.gaps = len(e.Gaps)
		a := e.Assessment
		d.criteria = converge.Evaluate(&a, thresholds)
		d.coverage, d.conf = a.CoverageRatio(), a.AverageConfidence()
	case iterate.Decided:
		if done := e.Iteration() - 1; done >= 1 || e.Decision.Stop() {
			d.convergence(done, e.Decision)
		}
	case iterate.Planned:
		d.plan(e.Iteration(), &e.Plan)
	case iterate.TaskEnded:
		if e.Err != nil && !errors.Is(e.Err, context.Canceled) {
			fmt.Fprintf(d.w, "⚠️  [%d/%d] %s failed: %v (gap unresolved - agent failure)\n", e.Task.Index+1, d.planTasks, agentName(&e.Task), e.Err)
		}
	case iterate.IterationEnded:
		fail := ""
		if e.FailedTasks > 0 {
			fail = fmt.Sprintf(", %d failed", e.FailedTasks)
		}
		fmt.Fprintf(d.w, "Iteration %d complete in %.1fs (%d agents%s)\n", e.Iteration(), e.Duration.Seconds(), e.Tasks, fail)
	case iterate.CheckpointSaved:
		if e.Err != nil {
			fmt.Fprintf(d.w, "⚠️  Checkpoint not saved: %v\n", e.Err)
		} else if e.Status == iterate.Running {
			fmt.Fprintf(d.w, "💾 Checkpoint saved: session %s, iteration %d (generation %d)\n\n", e.Session, e.Iteration(), e.Generation)
		}
	case iterate.Warned:
		fmt.Fprintf(d.w, "⚠️  %s\n", e.Message)
	}
}

// plan prints the progress display of an iteration.
func (d *display) plan(n int, p *iterate.Plan) {
	d.planTasks = len(p.Tasks)
	fmt.Fprintf(d.w, "🔄 Iteration %d - Refinement Analysis\n\n", n)
	fmt.Fprintf(d.w, "Gaps identified: %d\n", d.gaps)
	fmt.Fprintf(d.w, "Refinement agents: %d\n", len(p.Tasks))
	if len(p.Deferred) > 0 {
		fmt.Fprintf(d.w, "Deferred gaps: %d (next iteration)\n", len(p.Deferred))
	}
	fmt.Fprintln(d.w)
	for i := range p.Tasks {
		t := &p.Tasks[i]
		agent := agentName(t)
		if cmd, ok := d.external[string(t.Role)]; ok {
			agent += " (external: " + clip(cmd, 40) + ")"
		}
		fmt.Fprintf(d.w, "[%d/%d] %s - %s (Gap: %s)\n", i+1, len(p.Tasks), agent, taskSummary(t), gapLabel(t.Gap()))
	}
	fmt.Fprintf(d.w, "\nRunning refinement agents in parallel... ⏳\n")
}

// taskSummary describes what a task works on.
func taskSummary(t *iterate.Task) string {
	g := t.Gap()
	switch g.Kind {
	case "":
		return "Broad exploration of the most relevant files"
	case gap.Coverage:
		return fmt.Sprintf("%d unexplored files, %s", len(g.Focus), g.Detail)
	case gap.UnansweredQuestion:
		if g.Detail == "partially answered" {
			return clip(g.Target, 70) + " (partially answered)"
		}
		return clip(g.Target, 70)
	case gap.MissingContext:
		return "Trace " + clip(g.Target, 70)
	case gap.ConflictingFindings:
		return "Resolve " + g.Target + ": " + clip(g.Detail, 80)
	case gap.Pattern:
		if len(t.Gaps) > 1 {
			return fmt.Sprintf("Examples for %d patterns (%s, …)", len(t.Gaps), g.Target)
		}
		return "Examples for pattern " + g.Target
	case gap.Confidence, gap.Evidence:
		if len(t.Gaps) > 1 {
			return fmt.Sprintf("Evidence for %d findings (%s, …)", len(t.Gaps), g.Target)
		}
		return "Evidence for " + g.Target + ": " + clip(g.Detail, 60)
	}
	return clip(g.String(), 80)
}

// convergence prints the convergence display of the state after done
// iterations.
func (d *display) convergence(done int, dec converge.Decision) {
	if dec.Verdict == converge.EarlyExit {
		fmt.Fprintf(d.w, "✨ High Confidence Reached (Iteration %d)\n\n", done)
		fmt.Fprintf(d.w, "Coverage: %s (well above %s threshold)\n", pct(d.coverage), pct(thresholds.MinCoverage))
		fmt.Fprintf(d.w, "Confidence: %s (well above %s threshold)\n\n", pct(d.conf), pct(thresholds.MinConfidence))
		fmt.Fprintf(d.w, "Research quality is exceptionally high. Concluding early to save time.\n\n")
		fmt.Fprintf(d.w, "(Skipped %d potential iterations)\n\n", max(0, d.max-done))
		return
	}
	fmt.Fprintf(d.w, "📊 Convergence Status (Iteration %d)\n\nCriteria Assessment:\n", done)
	failing := 0
	for _, c := range d.criteria {
		mark := "✅"
		if !c.Met {
			mark = "❌"
			failing++
		}
		switch c.Name {
		case converge.CriterionCoverage:
			fmt.Fprintf(d.w, "  Coverage:             %-4s %s (threshold: %s)%s\n", pct(c.Value), mark, pct(c.Threshold), below(c))
		case converge.CriterionConfidence:
			fmt.Fprintf(d.w, "  Confidence:           %-4s %s (threshold: %s)%s\n", pct(c.Value), mark, pct(c.Threshold), below(c))
		case converge.CriterionConflicts:
			fmt.Fprintf(d.w, "  Unresolved Conflicts: %-4d %s (max: %d)\n", int(c.Value), mark, int(c.Threshold))
		case converge.CriterionQuestions:
			note := "all answered"
			if !c.Met {
				note = fmt.Sprintf("%d unanswered", int(c.Threshold-c.Value))
			}
			fmt.Fprintf(d.w, "  Critical Questions:   %-4s %s (%s)\n", fmt.Sprintf("%d/%d", int(c.Value), int(c.Threshold)), mark, note)
		}
	}
	fmt.Fprintln(d.w)
	switch dec.Verdict {
	case converge.Continue:
		fmt.Fprintf(d.w, "Overall: NOT CONVERGED (%s failing)\n", plural(failing, "criterion", "criteria"))
		fmt.Fprintf(d.w, "Action: Continue to Iteration %d\n\n", done+1)
	case converge.Converged:
		fmt.Fprintf(d.w, "Overall: ✅ CONVERGED (all criteria met)\n")
		fmt.Fprintf(d.w, "Action: Exit iteration loop → result aggregation (FULL CONVERGENCE)\n\n")
	case converge.MaxIterations:
		fmt.Fprintf(d.w, "Overall: NOT CONVERGED (%s failing)\n", plural(failing, "criterion", "criteria"))
		fmt.Fprintf(d.w, "⚠️  MAX ITERATIONS REACHED (%d of %d)\n", done, d.max)
		fmt.Fprintf(d.w, "Action: Exit iteration loop → result aggregation (PARTIAL CONVERGENCE)\n\n")
	default:
		fmt.Fprintf(d.w, "Overall: STOPPED (%s): %s\n", dec.Verdict, dec.Reason)
		fmt.Fprintf(d.w, "Action: Exit iteration loop → result aggregation (PARTIAL CONVERGENCE)\n\n")
	}
}

func below(c converge.Criterion) string {
	if c.Met {
		return ""
	}
	return " - BELOW"
}

// pct formats a ratio as a whole percentage, rounded down (so that a value
// just under a threshold never reads as the threshold).
func pct(v float64) string { return fmt.Sprintf("%d%%", int(math.Floor(v*100+1e-6))) }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
