package study

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// researcher is the iterate.Worker of the research: deterministic
// program-analysis agents over the files of a tree, or external commands
// standing in for any of them.
type researcher struct {
	ix    *index
	lines *lineCounter
	// agents maps a role to the external command that plays it.
	agents map[string]string
	// filesPerTask bounds the files an explorer reads per task.
	filesPerTask int
	// scopes caches the scopes of the questions that name a package.
	// (nil: none kept).
	scopes *scopes
}

var _ iterate.Worker[Notes] = (*researcher)(nil)

// thresholds are the levels of seed 000 the research is judged by (the
// defaults: coverage 0.70, confidence 0.80, conflicts 2, early exit at 0.85
// and 0.90), given to the engine once (iterate.WithThresholds), which hands
// the same values to the gap analysis and the convergence check.
var thresholds = gap.Thresholds{}.Effective()

// Bounds of the built-in agents, per task.
const (
	findingsPerExplore = 10 // new definition findings an explorer reports
	pinsPerCitation    = 30 // findings a citation worker pins
	usesPerFinding     = 5  // use citations per pinned finding
	patternFiles       = 60 // files a pattern worker scans
	patternExamples    = 8  // examples a pattern worker cites
)

// Assess reports where the research stands: coverage of the estimated
// relevant files, the findings with their confidence and citations, the
// conflicts, the architectural context still unclear and the questions.
func (w *researcher) Assess(_ context.Context, s Notes) (gap.Assessment, error) {
	a := gap.Assessment{EstimatedFiles: len(s.Estimate), Citations: len(s.Citations)}
	a.FilesAnalyzed, _ = s.coverage()
	limit := 3 * w.filesPerTask
	for _, p := range s.Estimate {
		if !s.analyzed(p) && len(a.Missing) < limit {
			a.Missing = append(a.Missing, p)
		}
	}
	var work []string
	if a.FilesAnalyzed < a.EstimatedFiles {
		work = append(work, fmt.Sprintf("coverage %d/%d", a.FilesAnalyzed, a.EstimatedFiles))
	}
	for i := range s.Findings {
		f := &s.Findings[i]
		a.Findings = append(a.Findings, gap.Finding{
			ID: f.ID, Description: f.Description, Confidence: f.Confidence, Impact: impactOf(f.Impact),
			Citations: f.Citations, Sources: f.sources(), Pattern: f.Kind == KindPattern, Relevance: f.Relevance, Area: f.Area,
		})
		// As the gap analysis judges it (within gap.Tolerance).
		if f.Confidence < thresholds.MinConfidence-gap.Tolerance {
			work = append(work, "confidence "+f.ID)
		}
	}
	for i := range s.Conflicts {
		c := &s.Conflicts[i]
		a.Conflicts = append(a.Conflicts, gap.Conflict{ID: c.ID, Resolved: c.Resolved,
			A: gap.Claim{Source: c.A.Source, Statement: c.A.Statement, Evidence: c.A.Evidence},
			B: gap.Claim{Source: c.B.Source, Statement: c.B.Statement, Evidence: c.B.Evidence}})
		if !c.Resolved {
			work = append(work, "conflict "+c.ID)
		}
	}
	for _, c := range s.Context {
		a.Context = append(a.Context, c.Text)
		work = append(work, "context "+c.Text)
	}
	for _, q := range s.Questions {
		a.Questions = append(a.Questions, gap.Question{Text: q.Text, Critical: q.Critical, Answered: q.Answered || q.Partial, Partial: q.Partial})
		if q.Critical && !q.Answered {
			work = append(work, "question "+q.Text)
		}
	}
	a.WorkRemaining = work
	return a, nil
}

func impactOf(s string) gap.Impact {
	switch s {
	case "critical":
		return gap.Critical
	case "important":
		return gap.Important
	}
	return gap.Informational
}

// Work runs one task: an external command when one plays the task's role,
// else the built-in agent of the role. It never modifies s.
func (w *researcher) Work(ctx context.Context, s Notes, t iterate.Task) (iterate.Outcome[Notes], error) {
	if cmd, ok := w.agents[string(t.Role)]; ok {
		return w.external(ctx, cmd, &s, t)
	}
	var part Notes
	var err error
	switch t.Role {
	case roleCitation:
		part, err = w.pin(ctx, &s, t)
	case rolePattern:
		part, err = w.patterns(ctx, &s, t)
	case roleVerify:
		part, err = w.verify(ctx, &s, t)
	default:
		// Explore, and the roles without a built-in agent (security,
		// performance): they explore what their gap points at.
		part, err = w.explore(ctx, &s, t)
	}
	return iterate.Outcome[Notes]{Part: part}, err
}

// Integrate folds the outcomes into the findings database in task order:
// it validates citations, deduplicates findings, merges their evidence,
// raises confidence on corroboration, flags contradictions as conflicts,
// applies the verifier's resolutions, updates coverage and the answers,
// cross-references the citations, and records what the iteration added
// (Notes.Progress).
func (w *researcher) Integrate(_ context.Context, s Notes, outcomes []iterate.Outcome[Notes]) (Notes, error) {
	n := s.clone()
	for i := range outcomes {
		o := &outcomes[i]
		log := AgentLog{Iteration: o.Task.Iteration, Task: o.Task.ID(), Agent: agentName(&o.Task), Role: string(o.Task.Role),
			Gap: gapLabel(o.Task.Gap()), External: w.agents[string(o.Task.Role)] != ""}
		if o.Failed() {
			log.Error = o.Err.Error()
			n.Log = append(n.Log, log)
			continue
		}
		w.merge(&n, &o.Part, &o.Task, &log)
		n.Log = append(n.Log, log)
	}
	for i := range n.Findings {
		n.Findings[i].score()
	}
	w.checkEvidence(&n)
	n.answerQuestions()
	n.findContext()
	n.crossReference()
	if len(outcomes) > 0 {
		// Seed 000's per-iteration metrics are the research's: the engine
		// records coverage, confidence, agents and duration
		// (Result.History.Recent), the notes what the iteration added.
		it := outcomes[0].Task.Iteration
		for len(n.Progress) > 0 && n.Progress[len(n.Progress)-1].Iteration >= it {
			n.Progress = n.Progress[:len(n.Progress)-1] // re-run after a resume: replace
		}
		n.Progress = append(n.Progress, n.progress(&s, it))
	}
	return n, nil
}

// clone copies the parts of the notes that Integrate modifies in place.
func (n *Notes) clone() Notes {
	c := *n
	c.Questions = slices.Clone(n.Questions)
	for i := range c.Questions {
		c.Questions[i].Answer = slices.Clone(c.Questions[i].Answer)
	}
	c.Analyzed = slices.Clone(n.Analyzed)
	c.Findings = slices.Clone(n.Findings)
	for i := range c.Findings {
		f := &c.Findings[i]
		f.Citations = slices.Clone(f.Citations)
		f.Refs = slices.Clone(f.Refs)
		f.SeeAlso = slices.Clone(f.SeeAlso)
		f.Claims = slices.Clone(f.Claims)
		f.Tags = slices.Clone(f.Tags)
		f.Evidence = slices.Clone(f.Evidence)
		f.Variants = slices.Clone(f.Variants)
		f.Calls = slices.Clone(f.Calls)
	}
	c.Conflicts = slices.Clone(n.Conflicts)
	c.Context = slices.Clone(n.Context)
	c.Citations = slices.Clone(n.Citations)
	c.Log = slices.Clone(n.Log)
	c.Progress = slices.Clone(n.Progress)
	return c
}

// merge folds one task's part into n.
func (w *researcher) merge(n *Notes, part *Notes, t *iterate.Task, log *AgentLog) {
	for _, p := range part.Analyzed {
		if w.lines.lines(p) < 0 {
			continue // an external agent named a file that does not exist
		}
		if i, found := slices.BinarySearch(n.Analyzed, p); !found {
			n.Analyzed = slices.Insert(n.Analyzed, i, p)
			log.Files++
		}
	}
	for i := range part.Findings {
		pf := part.Findings[i]
		// Every citation must name an existing file:line.
		valid := pf.Citations[:0:0]
		for _, c := range pf.Citations {
			if w.lines.valid(c) {
				valid = append(valid, c)
			} else {
				log.Dropped++
			}
		}
		pf.Citations = valid
		if pf.File != "" && !w.lines.valid(cite(pf.File, pf.Line)) {
			pf.File, pf.Line, pf.End = "", 0, 0
		}
		if len(pf.Citations) == 0 {
			log.Dropped++
			continue
		}
		if pf.Kind == KindPattern {
			log.Patterns++
		}
		w.mergeFinding(n, &pf, t, log)
	}
	for _, pc := range part.Conflicts {
		// An external verifier may settle a conflict without a finding.
		if c := n.conflict(pc.ID); c != nil && pc.Resolved && !c.Resolved {
			settle(n, c, pc.Resolution, t)
			log.Resolved++
		}
	}
}

// mergeFinding adds pf to n, or merges it into the finding with the same
// key: a duplicate, an enhancement or a contradiction.
func (w *researcher) mergeFinding(n *Notes, pf *Finding, t *iterate.Task, log *AgentLog) {
	claim := Claim{Source: agentName(t), Task: t.ID()}
	for _, c := range pf.Claims {
		claim.Confidence = max(claim.Confidence, c.Confidence)
	}
	ex := n.byKey(pf.Key)
	if ex == nil && pf.ID != "" {
		ex = n.find(pf.ID)
	}
	if ex == nil {
		f := *pf
		f.ID = nextID("F", 3, len(n.Findings))
		f.Iteration = t.Iteration
		f.Claims = []Claim{claim}
		f.Resolves, f.Resolution = "", ""
		if f.File != "" {
			f.Variants = []Variant{{File: f.File, Line: f.Line, Head: f.Head, Source: claim.Source, Task: t.ID()}}
		}
		log.New++
		log.Citations += unionStrings(&n.Citations, f.Citations)
		n.Findings = append(n.Findings, f)
		return
	}

	changed := false
	added := unionStrings(&ex.Citations, pf.Citations)
	log.Citations += unionStrings(&n.Citations, pf.Citations)
	changed = added > 0
	if ex.addClaim(claim) {
		changed = true
	}
	if mergeTags(&ex.Tags, pf.Tags) {
		changed = true
	}
	if impactRank(pf.Impact) > impactRank(ex.Impact) {
		ex.Impact, changed = pf.Impact, true
	}
	ex.Relevance = max(ex.Relevance, pf.Relevance)
	if pf.Area != "" && ex.Area == "" {
		ex.Area, changed = pf.Area, true
	}
	if pf.Documented && !ex.Documented {
		ex.Documented, changed = true, true
	}
	if pf.Pinned && !ex.Pinned {
		ex.Pinned, changed = true, true
		if pf.Description != "" {
			ex.Description = pf.Description
		}
	}
	if pf.Uses > ex.Uses {
		ex.Uses, changed = pf.Uses, true
	}
	if pf.Examples > ex.Examples {
		ex.Examples, changed = pf.Examples, true
		ex.Description = pf.Description
	}
	for _, c := range pf.Calls {
		if !slices.ContainsFunc(ex.Calls, func(x SymbolRef) bool { return x.Name == c.Name }) {
			ex.Calls = append(ex.Calls, c)
		}
	}

	switch {
	case pf.Resolves != "":
		// The verifier settles the conflict with the ground truth.
		if c := n.conflict(pf.Resolves); c != nil && !c.Resolved {
			ex.Variants = pf.Variants
			settle(n, c, pf.Resolution, t)
			log.Resolved++
			changed = true
		}
	case pf.File != "" && !slices.ContainsFunc(ex.Variants, func(v Variant) bool { return v.File == pf.File }):
		// The same identifier, defined in another file.
		v := Variant{File: pf.File, Line: pf.Line, Head: pf.Head, Source: claim.Source, Task: t.ID()}
		contradicts := ex.Kind == KindDefinition && pf.Head != "" &&
			!slices.ContainsFunc(ex.Variants, func(o Variant) bool { return o.Head == pf.Head })
		ex.Variants = append(ex.Variants, v)
		changed = true
		if contradicts && ex.Conflict == "" {
			first := ex.Variants[0]
			c := Conflict{
				ID: nextID("C", 1, len(n.Conflicts)), Key: ex.Key, Finding: ex.ID, Iteration: t.Iteration,
				A: Side{Source: first.Source + " " + first.Task, Statement: first.Head, Evidence: cite(first.File, first.Line)},
				B: Side{Source: claim.Source + " " + t.ID(), Statement: pf.Head, Evidence: cite(pf.File, pf.Line)},
			}
			n.Conflicts = append(n.Conflicts, c)
			ex.Conflict = c.ID
			log.Conflicts++
		}
	}
	if changed {
		log.Enhanced++
	} else {
		log.Duplicates++
	}
}

// settle marks a conflict resolved.
func settle(n *Notes, c *Conflict, resolution string, t *iterate.Task) {
	c.Resolved = true
	c.ResolvedBy = agentName(t) + " " + t.ID()
	c.ResolvedAt = t.Iteration
	c.Resolution = resolution
	if f := n.find(c.Finding); f != nil && f.Conflict == c.ID {
		f.Conflict = ""
		if resolution != "" {
			f.Description = resolution
		}
	}
}

// agentName names the agent of a task by its role (seed000Agents); a task
// of a role without an agent is the ExploreAgent's.
func agentName(t *iterate.Task) string {
	return agentOf(t.Role).Name
}

// gapLabel names a gap type as the seed's progress display does.
func gapLabel(g gap.Gap) string {
	switch g.Kind {
	case "":
		return "Broad"
	case gap.Coverage:
		return "Coverage"
	case gap.Confidence, gap.Evidence:
		return "Confidence"
	case gap.Pattern:
		return "Pattern clarity"
	case gap.ConflictingFindings:
		return "Conflict"
	case gap.MissingContext:
		return "Architecture"
	case gap.UnansweredQuestion:
		return "Question"
	case gap.Security:
		return "Security"
	case gap.Performance:
		return "Performance"
	}
	return strings.ReplaceAll(string(g.Kind), "_", " ")
}
