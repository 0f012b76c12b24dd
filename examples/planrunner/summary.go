package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/examples/internal/textfmt"
)

// Signal is the orchestrator signal block that ends every iteration summary
// and the run's output (seed 003's "Signal for Orchestrator").
type Signal struct {
	// Complete is the number of complete phases (file mode: items).
	Complete       int
	PlanFile       string
	TopicPath      string
	SummaryPath    string
	WorkRemaining  []string
	ContextExhaust bool
	// ContextPercent is e.g. "33.4%".
	ContextPercent       string
	CheckpointPath       string
	RequiresContinuation bool
	Stuck                bool
}

// String renders the block: one "key: value" line per field, the work
// remaining space-separated or "0" when none.
func (s Signal) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "IMPLEMENTATION_COMPLETE: %d\n", s.Complete)
	fmt.Fprintf(&b, "plan_file: %s\n", s.PlanFile)
	fmt.Fprintf(&b, "topic_path: %s\n", s.TopicPath)
	fmt.Fprintf(&b, "summary_path: %s\n", orNone(s.SummaryPath))
	work := "0"
	if len(s.WorkRemaining) > 0 {
		work = strings.Join(s.WorkRemaining, " ")
	}
	fmt.Fprintf(&b, "work_remaining: %s\n", work)
	fmt.Fprintf(&b, "context_exhausted: %t\n", s.ContextExhaust)
	fmt.Fprintf(&b, "context_usage_percent: %s\n", s.ContextPercent)
	fmt.Fprintf(&b, "checkpoint_path: %s\n", orNone(s.CheckpointPath))
	fmt.Fprintf(&b, "requires_continuation: %t\n", s.RequiresContinuation)
	fmt.Fprintf(&b, "stuck_detected: %t\n", s.Stuck)
	return b.String()
}

// signalOf returns the signal of an iteration record. requires_continuation
// is the coordinator's view: work remains after the iteration.
func signalOf(r *runner, rec *IterationRecord) Signal {
	work := rec.WorkRemaining()
	complete := len(rec.Completed)
	if rec.FileMode {
		complete = rec.ItemsDone
	}
	return Signal{
		Complete:             complete,
		PlanFile:             r.plan,
		TopicPath:            r.topic,
		SummaryPath:          rec.Summary,
		WorkRemaining:        work,
		ContextExhaust:       rec.ContextExhausted,
		ContextPercent:       percent(budget.ContextWindow{Size: rec.ContextSize}.Usage(rec.ContextTokens)),
		CheckpointPath:       r.checkpoint,
		RequiresContinuation: len(work) > 0,
		Stuck:                rec.Stuck,
	}
}

// signalOfPlan returns the signal of a run that ran no iteration: the plan
// as it stands, no summary.
func signalOfPlan(r *runner, p *Plan) Signal {
	s := Signal{PlanFile: r.plan, TopicPath: r.topic, CheckpointPath: r.checkpoint, ContextPercent: percent(0)}
	if r.fileMode {
		for _, t := range p.Items {
			if t.Done {
				s.Complete++
			} else {
				s.WorkRemaining = append(s.WorkRemaining, "Line_"+strconv.Itoa(t.line+1))
			}
		}
	} else {
		complete, remaining := p.Split()
		s.Complete = len(complete)
		for _, ph := range remaining {
			s.WorkRemaining = append(s.WorkRemaining, phaseKey(ph.Num))
		}
	}
	s.RequiresContinuation = len(s.WorkRemaining) > 0
	return s
}

func percent(share float64) string { return fmt.Sprintf("%.1f%%", share*100) }

// completionLine returns e.g. "62.5% (5/8 phases complete)".
func completionLine(rec *IterationRecord) string {
	done, total, unit := len(rec.Completed), len(rec.Completed)+len(rec.Remaining), "phases"
	if rec.FileMode {
		done, total, unit = rec.ItemsDone, rec.ItemsDone+len(rec.ItemsOpen), "items"
	}
	share := 1.0
	if total > 0 {
		share = float64(done) / float64(total)
	}
	return fmt.Sprintf("%s (%d/%d %s complete)", percent(share), done, total, unit)
}

// renderSummary renders the iteration summary in the layout of seed 003:
// work status, the iteration's waves with their rate-limit coordination and
// marker recovery, the context estimation, the continuation, the
// checkpoint data and the signal block.
func renderSummary(r *runner, rec *IterationRecord) []byte {
	var b strings.Builder
	title := rec.Title
	if title == "" {
		title = "Plan"
	}
	fmt.Fprintf(&b, "# Implementation Summary: %s (Iteration %d)\n\n", title, rec.Iteration)
	b.WriteString("## Work Status\n\n")
	fmt.Fprintf(&b, "**Completion**: %s\n\n", completionLine(rec))
	if rec.FileMode {
		fmt.Fprintf(&b, "**Mode**: file-based (single pass, no waves, no phase marker recovery)\n\n")
		b.WriteString("**Remaining Items**:\n")
		for _, it := range rec.ItemsOpen {
			fmt.Fprintf(&b, "- ⏳ %s\n", it)
		}
		if len(rec.ItemsOpen) == 0 {
			b.WriteString("- none\n")
		}
	} else {
		b.WriteString("**Completed Phases**:\n")
		for _, ph := range rec.Completed {
			fmt.Fprintf(&b, "- ✅ %s: %s\n", phaseName(ph.Num), ph.Title)
		}
		if len(rec.Completed) == 0 {
			b.WriteString("- none\n")
		}
		b.WriteString("\n**Remaining Phases**:\n")
		for _, ph := range rec.Remaining {
			fmt.Fprintf(&b, "- ⏳ %s: %s\n", phaseName(ph.Num), ph.Title)
		}
		if len(rec.Remaining) == 0 {
			b.WriteString("- none\n")
		}
	}
	b.WriteString("\n---\n\n")

	fmt.Fprintf(&b, "## Iteration %d Execution\n\n", rec.Iteration)
	if rec.Continuation != "" {
		fmt.Fprintf(&b, "Continued from: %s\n\n", rec.Continuation)
	}
	for _, w := range rec.Waves {
		if rec.FileMode {
			b.WriteString("### File pass\n\n")
		} else {
			fmt.Fprintf(&b, "### Wave %d: %s\n\n", w.Wave, joinPhases(w.Phases))
		}
		b.WriteString("| Phase | Result | Tasks | External calls (share) | Local fallback |\n")
		b.WriteString("|-------|--------|-------|------------------------|----------------|\n")
		for _, ph := range rec.Phases {
			if ph.Wave != w.Wave {
				continue
			}
			name := phaseName(ph.Phase) + ": " + ph.Title
			if rec.FileMode {
				name = "file"
			}
			result := "in progress"
			switch {
			case ph.Blocked:
				result = "blocked"
			case ph.Err != "":
				result = "failed: " + strings.ReplaceAll(ph.Err, "|", `\|`)
			case ph.Complete && ph.Marked:
				result = "complete [COMPLETE]"
			case ph.Complete:
				result = "complete (marker missing)"
			}
			fmt.Fprintf(&b, "| %s | %s | %d/%d | %d (%d) | %d |\n", name, result, ph.Done, ph.Total, ph.External, ph.Share, ph.Local)
		}
		for _, ph := range rec.Phases {
			if ph.Wave == w.Wave && ph.Note != "" {
				fmt.Fprintf(&b, "\n**Note** (%s): %s\n", phaseName(ph.Phase), ph.Note)
			}
		}
		fmt.Fprintf(&b, "\n**Rate limit**: %d of %d external calls used (budget %d per wave); local fallback: %d\n", w.External, w.Budget, w.Budget, w.Local)
		if !rec.FileMode {
			fmt.Fprintf(&b, "**Markers**: %d/%d phases marked [COMPLETE]; recovered: %s\n", w.Marked, w.Total, orNone(joinPhases(w.Recovered)))
		}
		for _, wn := range w.Warnings {
			fmt.Fprintf(&b, "**Warning**: %s\n", wn)
		}
		b.WriteString("\n")
	}
	if len(rec.Deferred) > 0 {
		fmt.Fprintf(&b, "### Deferred to the next iteration (context threshold)\n\n%s\n\n", joinPhases(rec.Deferred))
	}

	b.WriteString("## Context Estimation\n\n")
	w := budget.ContextWindow{Size: rec.ContextSize, Threshold: rec.ContextThreshold}
	unit := "phase"
	if rec.FileMode {
		unit = "item"
	}
	fmt.Fprintf(&b, "**Current Context Usage**: ~%s / %s tokens (%s)\n\n", textfmt.Tokens(rec.ContextTokens), textfmt.Tokens(rec.ContextSize), percent(w.Usage(rec.ContextTokens)))
	fmt.Fprintf(&b, "**Remaining Context**: %s tokens\n\n", textfmt.Tokens(max(rec.ContextSize-rec.ContextTokens, 0)))
	fmt.Fprintf(&b, "**Threshold**: %s (%s tokens)\n\n", percent(rec.ContextThreshold), textfmt.Tokens(int64(float64(rec.ContextSize)*rec.ContextThreshold)))
	fmt.Fprintf(&b, "**Estimate**: %d %s(s) completed × %s + %d remaining × %s\n\n", rec.CompletedNow, unit,
		textfmt.Tokens(budget.DefaultTokensPerCompleted), len(rec.WorkRemaining()), textfmt.Tokens(budget.DefaultTokensPerRemaining))

	work := rec.WorkRemaining()
	if len(work) > 0 {
		b.WriteString("## Continuation\n\n")
		switch {
		case len(rec.Deferred) > 0:
			fmt.Fprintf(&b, "Another phase would have brought the context estimate to the threshold (%s): this iteration stopped early and checkpointed.\n", percent(rec.ContextThreshold))
		case rec.ContextExhausted:
			fmt.Fprintf(&b, "The context estimate reached the threshold (%s).\n", percent(rec.ContextThreshold))
		}
		fmt.Fprintf(&b, "Work remaining: %s. The next iteration starts with a fresh context and continues from this summary.\n\n", strings.Join(work, " "))
	}

	b.WriteString("## Checkpoint Data\n\n")
	fmt.Fprintf(&b, "**Iteration**: %s\n", iterLabel(rec.Iteration, rec.MaxIterations))
	if !rec.FileMode {
		fmt.Fprintf(&b, "**Phases Completed**: [%s]\n", joinNums(rec.Completed))
		fmt.Fprintf(&b, "**Phases Remaining**: [%s]\n", joinNums(rec.Remaining))
		names := make([]string, len(rec.Remaining))
		for i, ph := range rec.Remaining {
			names[i] = phaseName(ph.Num) + ": " + ph.Title
		}
		fmt.Fprintf(&b, "**Work Remaining**: %q\n", strings.Join(names, ", "))
	} else {
		fmt.Fprintf(&b, "**Work Remaining**: %q\n", strings.Join(work, " "))
	}
	fmt.Fprintf(&b, "**Context Exhausted**: %t\n", rec.ContextExhausted)
	fmt.Fprintf(&b, "**Stuck Detected**: %t\n", rec.Stuck)
	for _, wn := range rec.Warnings {
		fmt.Fprintf(&b, "**Warning**: %s\n", wn)
	}
	b.WriteString("\n---\n\n## Signal for Orchestrator\n\n```\n")
	b.WriteString(signalOf(r, rec).String())
	b.WriteString("```\n")
	return []byte(b.String())
}

func joinNums(phs []PhaseRef) string {
	s := make([]string, len(phs))
	for i, ph := range phs {
		s[i] = strconv.Itoa(ph.Num)
	}
	return strings.Join(s, ", ")
}
