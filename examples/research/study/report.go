package study

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// Report is the final report of a research session (NewReport), for
// people (WriteText) or programs (WriteJSON).
type Report struct {
	Question      string `json:"question"`
	Root          string `json:"root"`
	Session       string `json:"session"`
	StateDir      string `json:"state_dir"`
	Status        string `json:"status"`
	Convergence   string `json:"convergence"` // "full", "partial" or "none"
	Reason        string `json:"reason"`
	Iterations    int    `json:"iterations"`
	MaxIterations int    `json:"max_iterations"`
	// Escalation is the question for a human when the loop escalated. The
	// default strategy research runs does not escalate (when the same gaps
	// survive every strategy it stops as stuck, a partial convergence); the
	// field stays for a strategy that does.
	Escalation string `json:"escalation,omitempty"`
	// AllFailed reports that every agent task of the session failed;
	// LastError is then the last task's error.
	AllFailed bool   `json:"all_failed,omitempty"`
	LastError string `json:"last_error,omitempty"`

	Coverage       float64 `json:"coverage"`
	FilesAnalyzed  int     `json:"files_analyzed"` // estimated relevant files analyzed
	EstimatedFiles int     `json:"estimated_files"`
	FilesRead      int     `json:"files_read"`
	TotalFiles     int     `json:"total_files"`
	Confidence     float64 `json:"confidence"`

	Questions []ReportQuestion     `json:"questions"`
	Findings  []Finding            `json:"findings"`
	Citations []string             `json:"citations"`
	Conflicts []Conflict           `json:"conflicts"`
	Context   []ContextItem        `json:"context,omitempty"`
	Unmet     []converge.Criterion `json:"unmet"`
	Gaps      []gap.Gap            `json:"gaps"`
	Agents    []AgentSummary       `json:"agents"`
	Metrics   []IterationReport    `json:"metrics"`
	Totals    TotalsReport         `json:"totals"`
	Log       []AgentLog           `json:"log"`
}

// ReportQuestion is a question with its answer.
type ReportQuestion struct {
	Number   int            `json:"number"`
	Text     string         `json:"text"`
	Critical bool           `json:"critical"`
	Status   string         `json:"status"` // "answered", "partially answered", "unanswered"
	Answer   []ReportAnswer `json:"answer"`
}

// ReportAnswer is a finding that answers a question.
type ReportAnswer struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	Confidence  float64  `json:"confidence"`
	Citations   []string `json:"citations"`
	// Work is the line of the finding's code that does the work the
	// question asks about, "file:line: code"; empty when none does.
	Work string `json:"work,omitempty"`
}

// AgentSummary is an agent's contribution over the session.
type AgentSummary struct {
	Agent     string `json:"agent"`
	Tasks     int    `json:"tasks"`
	Failed    int    `json:"failed,omitempty"`
	Findings  int    `json:"findings"`
	Enhanced  int    `json:"enhanced"`
	Citations int    `json:"citations"`
	Files     int    `json:"files"`
	Patterns  int    `json:"patterns,omitempty"`
	Resolved  int    `json:"resolved,omitempty"`
	Conflicts int    `json:"conflicts,omitempty"`
	Dropped   int    `json:"dropped,omitempty"`
}

// IterationReport holds the metrics of one iteration.
type IterationReport struct {
	Iteration      int     `json:"iteration"`
	Action         string  `json:"action,omitempty"`
	Agents         int     `json:"agents"`
	Failed         int     `json:"failed,omitempty"`
	NewFiles       int     `json:"new_files"` // estimated relevant files newly analyzed
	NewFindings    int     `json:"new_findings"`
	NewCitations   int     `json:"new_citations"`
	Coverage       float64 `json:"coverage"`
	CoverageGain   float64 `json:"coverage_gain"`
	Confidence     float64 `json:"confidence"`
	ConfidenceGain float64 `json:"confidence_gain"`
	Seconds        float64 `json:"seconds"`
}

// TotalsReport holds the cumulative metrics.
type TotalsReport struct {
	Iterations int     `json:"iterations"`
	Agents     int     `json:"agents"`
	Failed     int     `json:"failed,omitempty"`
	Files      int     `json:"files"`
	Findings   int     `json:"findings"`
	Seconds    float64 `json:"seconds"`
	// Tokens and Cost are what external agents reported spending.
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
}

// NewReport assembles the report of a research result: res is what the
// engine returned, session the session's name, store where the sessions
// are kept (a directory or a URL without its password, as the report names
// it) and maxIterations the iteration limit the loop ran with.
func NewReport(res *iterate.Result[Notes], session, store string, maxIterations int) *Report {
	n := &res.State
	analyzed, estimated := n.coverage()
	r := &Report{
		Question: n.Question, Root: n.Root, Session: session, StateDir: store,
		Status: string(res.Status), Reason: res.Reason, Iterations: res.Iterations, MaxIterations: maxIterations,
		FilesAnalyzed: analyzed, EstimatedFiles: estimated, FilesRead: len(n.Analyzed), TotalFiles: n.TotalFiles,
		Confidence: round4(n.averageConfidence()),
		Findings:   n.Findings, Citations: n.Citations, Conflicts: n.Conflicts, Context: n.Context,
		Gaps: res.History.Gaps, Log: n.Log,
	}
	if estimated > 0 {
		r.Coverage = round4(float64(analyzed) / float64(estimated))
	}
	switch {
	case res.Status.Success():
		r.Convergence = "full"
	case res.Status == iterate.MaxIterations || res.Status == iterate.Stuck || res.Status == iterate.Plateau ||
		res.Status == iterate.BudgetExhausted || res.Status == iterate.Escalated:
		r.Convergence = "partial"
		r.Unmet = res.Decision.Unmet()
	default:
		r.Convergence = "none"
		r.Unmet = res.Decision.Unmet()
	}
	if res.Escalation != nil {
		r.Escalation = res.Escalation.Question
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	if r.Conflicts == nil {
		r.Conflicts = []Conflict{}
	}
	if r.Unmet == nil {
		r.Unmet = []converge.Criterion{}
	}
	if r.Gaps == nil {
		r.Gaps = []gap.Gap{}
	}
	for i, q := range n.Questions {
		rq := ReportQuestion{Number: i + 1, Text: q.Text, Critical: q.Critical, Status: "unanswered", Answer: []ReportAnswer{}}
		switch {
		case q.Answered:
			rq.Status = "answered"
		case q.Partial:
			rq.Status = "partially answered"
		}
		for _, id := range q.Answer {
			if f := n.find(id); f != nil {
				a := ReportAnswer{ID: f.ID, Description: f.Description, Confidence: f.Confidence, Citations: f.Citations}
				if e := f.evidence(i); e != nil && e.Work != "" {
					a.Work = e.Work + ": " + e.Code
				}
				rq.Answer = append(rq.Answer, a)
			}
		}
		r.Questions = append(r.Questions, rq)
	}

	agents := map[string]*AgentSummary{}
	var order []string
	for _, l := range n.Log {
		a := agents[l.Agent]
		if a == nil {
			a = &AgentSummary{Agent: l.Agent}
			agents[l.Agent] = a
			order = append(order, l.Agent)
		}
		a.Tasks++
		if l.Error != "" {
			a.Failed++
		}
		a.Findings += l.New
		a.Enhanced += l.Enhanced
		a.Citations += l.Citations
		a.Files += l.Files
		a.Patterns += l.Patterns
		a.Resolved += l.Resolved
		a.Conflicts += l.Conflicts
		a.Dropped += l.Dropped
	}
	for _, a := range order {
		r.Agents = append(r.Agents, *agents[a])
	}
	r.AllFailed, r.LastError = allFailed(n.Log)

	// Per-iteration metrics: the engine's records (Result.History.Recent,
	// kept across resumes; a bounded window of the most recent
	// assessments) give the coverage and confidence each iteration reached,
	// its action, agents and duration; the notes what it added
	// (Notes.Progress). A record's gains are measured from the record
	// before it, so the oldest record of the window is only a baseline.
	recent := res.History.Recent
	for i := 1; i < len(recent); i++ {
		m, prev := &recent[i], &recent[i-1]
		if m.Iteration < 1 || prev.Iteration != m.Iteration-1 {
			continue
		}
		p := n.progressOf(m.Iteration)
		r.Metrics = append(r.Metrics, IterationReport{
			Iteration: m.Iteration, Action: m.Action, Agents: m.Tasks, Failed: m.FailedTasks,
			NewFiles: p.NewFiles, NewFindings: p.NewFindings, NewCitations: p.NewCitations,
			Coverage: round4(m.Coverage), CoverageGain: round4(m.Coverage - prev.Coverage),
			Confidence: round4(m.Confidence), ConfidenceGain: round4(m.Confidence - prev.Confidence),
			Seconds: round4(m.Duration.Seconds()),
		})
	}
	r.Totals = TotalsReport{Iterations: res.Iterations, Agents: res.Totals.Tasks, Failed: res.Totals.FailedTasks,
		Files: len(n.Analyzed), Findings: len(n.Findings), Seconds: round4(res.Totals.Duration.Seconds()),
		Tokens: res.Usage.Tokens, Cost: res.Usage.Cost}
	return r
}

// allFailed reports whether there were agent tasks and every one failed,
// with the last one's error.
func allFailed(log []AgentLog) (bool, string) {
	if len(log) == 0 {
		return false, ""
	}
	for _, l := range log {
		if l.Error == "" {
			return false, ""
		}
	}
	return true, log[len(log)-1].Error
}

// WriteJSON prints the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteText prints the report for humans.
func (r *Report) WriteText(w io.Writer) {
	rule := strings.Repeat("═", 72)
	fmt.Fprintf(w, "%s\n📋 Research Report\n%s\n\n", rule, rule)
	fmt.Fprintf(w, "Question: %s\nRoot: %s\n", r.Question, r.Root)
	status := r.Status
	switch r.Convergence {
	case "full":
		status += " (FULL CONVERGENCE)"
	case "partial":
		status += " (PARTIAL CONVERGENCE)"
	}
	fmt.Fprintf(w, "Status: %s\nReason: %s\n", status, r.Reason)
	if r.AllFailed {
		fmt.Fprintf(w, "⚠️  Every agent task failed (%d of %d); the last error: %s\n", r.Totals.Failed, r.Totals.Agents, r.LastError)
	}
	if r.Escalation != "" {
		fmt.Fprintf(w, "Escalation: %s\n", indent(r.Escalation, "  ")[2:])
	}
	fmt.Fprintf(w, "Iterations: %d of max %d\n", r.Iterations, r.MaxIterations)
	fmt.Fprintf(w, "Coverage: %s (%d of %d estimated relevant files; %d files read of %d)\n",
		pct(r.Coverage), r.FilesAnalyzed, r.EstimatedFiles, r.FilesRead, r.TotalFiles)
	fmt.Fprintf(w, "Average confidence: %.2f over %d findings, %d citations\n\n", r.Confidence, len(r.Findings), len(r.Citations))

	fmt.Fprintf(w, "Critical Questions\n")
	for _, q := range r.Questions {
		mark := "✅ ANSWERED"
		switch q.Status {
		case "partially answered":
			mark = "❌ PARTIALLY ANSWERED"
		case "unanswered":
			mark = "❌ UNANSWERED"
		}
		kind := ""
		if !q.Critical {
			kind = " (optional)"
		}
		fmt.Fprintf(w, "%d. %s%s %s\n", q.Number, q.Text, kind, mark)
		for _, a := range q.Answer {
			fmt.Fprintf(w, "   - %s [%.2f] %s\n", a.ID, a.Confidence, a.Description)
			fmt.Fprintf(w, "     %s\n", strings.Join(a.Citations, ", "))
			if a.Work != "" {
				fmt.Fprintf(w, "     the work: %s\n", a.Work)
			}
		}
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "Findings by Category\n")
	for _, impact := range []string{"critical", "important", "informational"} {
		var fs []Finding
		for _, f := range r.Findings {
			if f.Impact == impact {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(b.Confidence, a.Confidence) })
		fmt.Fprintf(w, "  %s:\n", strings.ToUpper(impact))
		for _, f := range fs {
			refs := make([]string, len(f.Refs))
			for i, x := range f.Refs {
				refs[i] = fmt.Sprint(x)
			}
			fmt.Fprintf(w, "  - %s [%.2f] %s\n", f.ID, f.Confidence, clip(f.Description, 160))
			fmt.Fprintf(w, "      sources: %s; citations [%s]", strings.Join(f.sources(), ", "), strings.Join(refs, ", "))
			if len(f.SeeAlso) > 0 {
				fmt.Fprintf(w, "; see also %s", strings.Join(f.SeeAlso, ", "))
			}
			fmt.Fprintf(w, "; iteration %d\n", f.Iteration)
		}
	}
	fmt.Fprintln(w)

	if len(r.Conflicts) > 0 {
		fmt.Fprintf(w, "Conflicts\n")
		for _, c := range r.Conflicts {
			state := "UNRESOLVED"
			if c.Resolved {
				state = fmt.Sprintf("resolved by %s in iteration %d", c.ResolvedBy, c.ResolvedAt)
			}
			fmt.Fprintf(w, "  %s (%s, iteration %d): %s\n", c.ID, c.Finding, c.Iteration, state)
			fmt.Fprintf(w, "    %s: %s (%s)\n    %s: %s (%s)\n", c.A.Source, c.A.Statement, c.A.Evidence, c.B.Source, c.B.Statement, c.B.Evidence)
			if c.Resolution != "" {
				fmt.Fprintf(w, "    → %s\n", c.Resolution)
			}
		}
		fmt.Fprintln(w)
	}

	if r.Convergence != "full" {
		fmt.Fprintf(w, "Unmet Criteria\n")
		if len(r.Unmet) == 0 {
			fmt.Fprintf(w, "  (none)\n")
		}
		for _, c := range r.Unmet {
			fmt.Fprintf(w, "  ❌ %s\n", c)
		}
		fmt.Fprintf(w, "Open Gaps\n")
		if len(r.Gaps) == 0 {
			fmt.Fprintf(w, "  (none)\n")
		}
		for _, g := range r.Gaps {
			fmt.Fprintf(w, "  - %s\n", clip(g.String(), 150))
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "Agent Contributions\n")
	for _, a := range r.Agents {
		fmt.Fprintf(w, "  - %s: %d tasks, %d new findings, %d enhanced, %d citations, %d files", a.Agent, a.Tasks, a.Findings, a.Enhanced, a.Citations, a.Files)
		if a.Patterns > 0 {
			fmt.Fprintf(w, ", %d patterns", a.Patterns)
		}
		if a.Conflicts > 0 {
			fmt.Fprintf(w, ", %d conflicts found", a.Conflicts)
		}
		if a.Resolved > 0 {
			fmt.Fprintf(w, ", %d conflicts resolved", a.Resolved)
		}
		if a.Dropped > 0 {
			fmt.Fprintf(w, ", %d unverifiable dropped", a.Dropped)
		}
		if a.Failed > 0 {
			fmt.Fprintf(w, ", %d failed", a.Failed)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "Iteration Metrics\n")
	if len(r.Metrics) > 0 && r.Metrics[0].Iteration > 1 {
		fmt.Fprintf(w, "  (iterations 1-%d not kept)\n", r.Metrics[0].Iteration-1)
	}
	fmt.Fprintf(w, "  %-5s %-7s %-7s %-6s %-9s %-10s %-9s %-11s %-10s %s\n", "Iter", "Action", "Agents", "Files", "Findings", "Citations", "Coverage", "Confidence", "Δcoverage", "Duration")
	for _, m := range r.Metrics {
		agents := fmt.Sprint(m.Agents)
		if m.Failed > 0 {
			agents += fmt.Sprintf("(%d!)", m.Failed)
		}
		fmt.Fprintf(w, "  %-5d %-7s %-7s %-6s %-9s %-10s %-9s %-11s %-10s %.1fs\n", m.Iteration, m.Action, agents,
			fmt.Sprintf("+%d", m.NewFiles), fmt.Sprintf("+%d", m.NewFindings), fmt.Sprintf("+%d", m.NewCitations),
			pct(m.Coverage), fmt.Sprintf("%.2f", m.Confidence), fmt.Sprintf("%+.0fpp", m.CoverageGain*100), m.Seconds)
	}
	fmt.Fprintf(w, "  Total: %d iterations, %d agents", r.Totals.Iterations, r.Totals.Agents)
	if r.Totals.Failed > 0 {
		fmt.Fprintf(w, " (%d failed)", r.Totals.Failed)
	}
	fmt.Fprintf(w, ", %d files, %d findings, %.1fs", r.Totals.Files, r.Totals.Findings, r.Totals.Seconds)
	if r.Totals.Tokens > 0 {
		fmt.Fprintf(w, ", %d tokens reported by external agents", r.Totals.Tokens)
	}
	fmt.Fprintln(w)
}
