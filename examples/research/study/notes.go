package study

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Notes is the findings database of a research session: the state of the
// refinement loop, saved in every checkpoint. Work returns a partial Notes
// (the findings, files and resolutions of one task); Integrate folds the
// parts into the whole.
type Notes struct {
	Root      string     `json:"root"`
	Question  string     `json:"question"`
	Topic     []Keyword  `json:"topic"`
	Questions []Question `json:"questions"`
	// Estimate lists the files relevant to the topic, most relevant first:
	// computed once from the tree when the session starts.
	Estimate []string `json:"estimate"`
	// Analyzed lists every file read so far, sorted.
	Analyzed  []string      `json:"analyzed,omitempty"`
	Findings  []Finding     `json:"findings,omitempty"`
	Conflicts []Conflict    `json:"conflicts,omitempty"`
	Context   []ContextItem `json:"context,omitempty"`
	// Citations numbers every location cited: citation n is Citations[n-1].
	Citations []string `json:"citations,omitempty"`
	// Log records what each agent of each iteration contributed.
	Log []AgentLog `json:"log,omitempty"`
	// Progress records what each iteration added (seed 000's per-iteration
	// metrics), oldest first.
	Progress []Progress `json:"progress,omitempty"`
	// TotalFiles is the number of Go files in the tree.
	TotalFiles int `json:"total_files,omitempty"`
}

// Finding kinds.
const (
	KindDefinition = "definition" // a declaration relevant to the question
	KindPattern    = "pattern"    // a recurring use, with examples
	KindClaim      = "claim"      // a statement of an external agent
)

// Finding is one result of the research.
type Finding struct {
	ID          string `json:"id"`
	Key         string `json:"key"` // identity: the symbol, "pattern:Done", ...
	Kind        string `json:"kind"`
	Description string `json:"description"`
	// Head is the definition on one line; File and Line its location and
	// End the last line of the declaration.
	Head string `json:"head,omitempty"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	End  int    `json:"end,omitempty"`
	// Citations are "file:line" locations, the definition first; Refs their
	// numbers in Notes.Citations; SeeAlso the findings they cross-reference.
	Citations []string `json:"citations"`
	Refs      []int    `json:"refs,omitempty"`
	SeeAlso   []string `json:"see_also,omitempty"`
	// Claims hold the confidence each agent gave the finding.
	Claims     []Claim `json:"claims"`
	Confidence float64 `json:"confidence"`
	Impact     string  `json:"impact"` // "critical", "important", "informational"
	// Area is "security" or "performance" when the finding concerns one
	// (an agent says so), "" otherwise.
	Area      string  `json:"area,omitempty"`
	Relevance float64 `json:"relevance,omitempty"`
	// Tags lists the questions the finding bears on, with how well it
	// matches each.
	Tags []Tag `json:"tags,omitempty"`
	// Evidence is what the verification of the cited code found for each
	// tagged question (the question's keywords in it); only a finding with
	// evidence answers a question.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Iteration is the iteration that discovered the finding.
	Iteration int `json:"iteration"`

	Documented bool `json:"documented,omitempty"`
	Pinned     bool `json:"pinned,omitempty"` // the citation worker confirmed the definition
	Uses       int  `json:"uses,omitempty"`
	Examples   int  `json:"examples,omitempty"`

	// Variants are the definitions of the same identifier in different
	// files (build-constraint variants).
	Variants []Variant `json:"variants,omitempty"`
	// Conflict is the ID of the open conflict on this finding.
	Conflict string `json:"conflict,omitempty"`
	// Calls are relevant functions the definition calls that are defined in
	// other files of its package.
	Calls []SymbolRef `json:"calls,omitempty"`

	// Resolves names the conflict a verifier's finding settles (in parts
	// only), Resolution how.
	Resolves   string `json:"resolves,omitempty"`
	Resolution string `json:"resolution,omitempty"`
}

// Claim is one agent's confidence in a finding.
type Claim struct {
	Source     string  `json:"source"` // the agent, e.g. "ExploreAgent"
	Task       string  `json:"task"`   // the task, e.g. "1.2"
	Confidence float64 `json:"confidence"`
}

// Variant is one definition of an identifier.
type Variant struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Head      string `json:"head"`
	Source    string `json:"source,omitempty"`
	Task      string `json:"task,omitempty"`
	Platforms string `json:"platforms,omitempty"` // set by the verifier
}

// Tag links a finding to a question (its index) with the score of the
// match.
type Tag struct {
	Question int `json:"q"`
	Score    int `json:"score"`
}

// tag returns the score of the finding for question qi, or -1.
func (f *Finding) tag(qi int) int {
	for _, t := range f.Tags {
		if t.Question == qi {
			return t.Score
		}
	}
	return -1
}

// mergeTags adds tags, keeping the best score per question; it reports
// whether something changed.
func mergeTags(dst *[]Tag, add []Tag) bool {
	changed := false
	for _, t := range add {
		i := slices.IndexFunc(*dst, func(x Tag) bool { return x.Question == t.Question })
		switch {
		case i < 0:
			*dst = append(*dst, t)
			changed = true
		case t.Score > (*dst)[i].Score:
			(*dst)[i].Score = t.Score
			changed = true
		}
	}
	slices.SortFunc(*dst, func(a, b Tag) int { return cmp.Compare(a.Question, b.Question) })
	return changed
}

// SymbolRef is a function called by a finding's definition.
type SymbolRef struct {
	Name string `json:"name"`
	File string `json:"file"`
	Line int    `json:"line"`
}

// Conflict is two findings that disagree about one identifier.
type Conflict struct {
	ID         string `json:"id"`
	Key        string `json:"key"`
	Finding    string `json:"finding"`
	A          Side   `json:"a"`
	B          Side   `json:"b"`
	Iteration  int    `json:"iteration"`
	Resolved   bool   `json:"resolved,omitempty"`
	ResolvedBy string `json:"resolved_by,omitempty"` // "PlanAgent 2.2"
	ResolvedAt int    `json:"resolved_at,omitempty"`
	Resolution string `json:"resolution,omitempty"`
}

// Side is one side of a conflict.
type Side struct {
	Source    string `json:"source"`
	Statement string `json:"statement"`
	Evidence  string `json:"evidence"`
}

// ContextItem is an architectural relationship still unclear: a relevant
// function that a critical finding calls, defined in a file not yet read.
type ContextItem struct {
	Text    string `json:"text"`
	From    string `json:"from"` // finding ID
	Name    string `json:"name"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Explain string `json:"explain,omitempty"`
}

// Progress is what one iteration added to the notes: the estimated
// relevant files it analyzed first, the findings and the citations it added.
// The report joins it with the engine's record of the iteration
// (Result.History.Recent: coverage, confidence, action, agents, duration).
type Progress struct {
	Iteration    int `json:"iteration"`
	NewFiles     int `json:"new_files,omitempty"`
	NewFindings  int `json:"new_findings,omitempty"`
	NewCitations int `json:"new_citations,omitempty"`
}

// progress returns what the notes n added to the notes before.
func (n *Notes) progress(before *Notes, iteration int) Progress {
	files, _ := n.coverage()
	was, _ := before.coverage()
	return Progress{Iteration: iteration, NewFiles: files - was,
		NewFindings: len(n.Findings) - len(before.Findings), NewCitations: len(n.Citations) - len(before.Citations)}
}

// progressOf returns the progress of an iteration (zero when it added
// nothing or was not recorded).
func (n *Notes) progressOf(iteration int) Progress {
	i, found := slices.BinarySearchFunc(n.Progress, iteration, func(p Progress, it int) int { return cmp.Compare(p.Iteration, it) })
	if !found {
		return Progress{Iteration: iteration}
	}
	return n.Progress[i]
}

// AgentLog is what one task contributed.
type AgentLog struct {
	Iteration  int    `json:"iteration"`
	Task       string `json:"task"`
	Agent      string `json:"agent"`
	Role       string `json:"role"`
	Gap        string `json:"gap,omitempty"`
	External   bool   `json:"external,omitempty"`
	New        int    `json:"new,omitempty"`
	Enhanced   int    `json:"enhanced,omitempty"`
	Duplicates int    `json:"duplicates,omitempty"`
	Conflicts  int    `json:"conflicts,omitempty"`
	Resolved   int    `json:"resolved,omitempty"`
	Citations  int    `json:"citations,omitempty"`
	Files      int    `json:"files,omitempty"`
	Patterns   int    `json:"patterns,omitempty"`
	Dropped    int    `json:"dropped,omitempty"` // findings or citations that failed validation
	Error      string `json:"error,omitempty"`
}

// Confidence model. Each agent claims a confidence from its own evidence;
// a finding's confidence is the best claim plus corroborationBonus for each
// further agent that reported it, at most maxConfidence, and at most
// conflictConfidence while a conflict on it is open.
const (
	corroborationBonus = 0.05
	maxCorroboration   = 0.10
	maxConfidence      = 0.95
	conflictConfidence = 0.55
	// answerConfidence is the confidence from which a finding answers the
	// questions it bears on.
	answerConfidence = 0.60
)

// explorerConfidence is what the explorer claims for a definition it
// located: 0.55 (inferred from names: single agent, weak citation), +0.10
// when documented, +0.10 when the doc comment mentions two or more keywords,
// +0.05 when it saw the identifier used in the files it read.
func explorerConfidence(documented bool, docHits int, used bool) float64 {
	c := 0.55
	if documented {
		c += 0.10
	}
	if docHits >= 2 {
		c += 0.10
	}
	if used {
		c += 0.05
	}
	return round2(c)
}

// citationConfidence is what the citation worker claims for a definition it
// pinned: 0.75 (direct code evidence), +0.05 documented, +0.05 with a use,
// +0.05 with three or more uses.
func citationConfidence(documented bool, uses int) float64 {
	c := 0.75
	if documented {
		c += 0.05
	}
	if uses >= 1 {
		c += 0.05
	}
	if uses >= 3 {
		c += 0.05
	}
	return round2(c)
}

// patternConfidence grows with the number of concrete examples: below
// three a pattern is uncertain (0.50 + 0.05 each); three make it 0.80,
// five 0.85, eight 0.90.
func patternConfidence(examples int) float64 {
	switch {
	case examples >= 8:
		return 0.90
	case examples >= 5:
		return 0.85
	case examples >= 3:
		return 0.80
	}
	return round2(0.50 + 0.05*float64(examples))
}

// verifierConfidence is what the verifier claims for a conflict it
// resolved from ground truth.
const verifierConfidence = 0.90

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// sources returns the distinct agents of the claims, sorted.
func (f *Finding) sources() []string {
	var out []string
	for _, c := range f.Claims {
		if !slices.Contains(out, c.Source) {
			out = append(out, c.Source)
		}
	}
	slices.Sort(out)
	return out
}

// score recomputes the finding's confidence from its claims.
func (f *Finding) score() {
	best := 0.0
	for _, c := range f.Claims {
		best = max(best, c.Confidence)
	}
	bonus := min(maxCorroboration, corroborationBonus*float64(len(f.sources())-1))
	c := min(maxConfidence, best+bonus)
	if f.Conflict != "" {
		c = min(c, conflictConfidence)
	}
	f.Confidence = round2(c)
}

// addClaim records a claim, keeping each agent's best.
func (f *Finding) addClaim(c Claim) bool {
	for i := range f.Claims {
		if f.Claims[i].Source == c.Source {
			if c.Confidence > f.Claims[i].Confidence {
				f.Claims[i] = c
				return true
			}
			return false
		}
	}
	f.Claims = append(f.Claims, c)
	return true
}

func impactRank(s string) int {
	switch s {
	case "critical":
		return 2
	case "important":
		return 1
	}
	return 0
}

// unionStrings appends to dst the elements of add it does not hold yet; it
// reports how many were added.
func unionStrings(dst *[]string, add []string) int {
	n := 0
	for _, s := range add {
		if !slices.Contains(*dst, s) {
			*dst = append(*dst, s)
			n++
		}
	}
	return n
}

// find returns the finding with the given ID or key, or nil.
func (n *Notes) find(id string) *Finding {
	for i := range n.Findings {
		if n.Findings[i].ID == id {
			return &n.Findings[i]
		}
	}
	return nil
}

func (n *Notes) byKey(key string) *Finding {
	for i := range n.Findings {
		if n.Findings[i].Key == key {
			return &n.Findings[i]
		}
	}
	return nil
}

func (n *Notes) conflict(id string) *Conflict {
	for i := range n.Conflicts {
		if n.Conflicts[i].ID == id {
			return &n.Conflicts[i]
		}
	}
	return nil
}

func (n *Notes) analyzed(p string) bool {
	_, ok := slices.BinarySearch(n.Analyzed, p)
	return ok
}

// coverage returns how many estimated files were analyzed.
func (n *Notes) coverage() (analyzed, estimated int) {
	for _, p := range n.Estimate {
		if n.analyzed(p) {
			analyzed++
		}
	}
	return analyzed, len(n.Estimate)
}

// averageConfidence returns the mean confidence of the findings (0 when
// there are none).
func (n *Notes) averageConfidence() float64 {
	if len(n.Findings) == 0 {
		return 0
	}
	var sum float64
	for i := range n.Findings {
		sum += n.Findings[i].Confidence
	}
	return sum / float64(len(n.Findings))
}

// evidenceCount is the number of the question's keywords the finding's
// verified evidence holds.
func evidenceCount(f *Finding, qi int) int {
	terms, _ := f.evidenceFor(qi)
	return len(terms)
}

// answerQuestions recomputes which questions are answered. An answer must
// be earned: a question is answered by its tagged findings of confidence
// ≥ answerConfidence, with no open conflict and with citations, whose
// verified evidence (Finding.Evidence: the question's keywords found in the
// code they cite) covers every identifier the question names, or, for a
// question that names none, holds two of its keywords, one distinctive, in
// findings of two files (see earned). A question with tagged findings but no such evidence
// stays open, partially answered.
func (n *Notes) answerQuestions() {
	for qi := range n.Questions {
		q := &n.Questions[qi]
		var tagged []*Finding
		for i := range n.Findings {
			if n.Findings[i].tag(qi) >= 0 {
				tagged = append(tagged, &n.Findings[i])
			}
		}
		slices.SortStableFunc(tagged, func(a, b *Finding) int {
			if c := cmp.Compare(evidenceCount(b, qi), evidenceCount(a, qi)); c != 0 {
				return c
			}
			if c := cmp.Compare(b.tag(qi), a.tag(qi)); c != 0 {
				return c
			}
			if c := cmp.Compare(b.Confidence, a.Confidence); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		q.Answer = q.Answer[:0]
		q.Answered, q.Partial = false, false
		var qualifying []*Finding
		for _, f := range tagged {
			if f.Confidence >= answerConfidence && f.Conflict == "" && len(f.Citations) > 0 && f.evidence(qi) != nil {
				qualifying = append(qualifying, f)
			}
		}
		counted := earned(q, qi, qualifying)
		if len(q.packages()) > 0 {
			counted = earnedScoped(qi, qualifying)
		}
		if n.inConflict(q) {
			counted = nil
		}
		if len(counted) > 0 {
			q.Answered = true
			for _, f := range counted[:min(len(counted), 4)] {
				q.Answer = append(q.Answer, f.ID)
			}
		}
		if !q.Answered && len(tagged) > 0 {
			q.Partial = true
			for _, f := range tagged[:min(len(tagged), 4)] {
				q.Answer = append(q.Answer, f.ID)
			}
		}
		if len(q.Answer) == 0 {
			q.Answer = nil
		}
	}
}

// maxContext bounds the architectural context items tracked at once.
const maxContext = 3

// findContext recomputes the missing-context items: relevant functions
// called by critical findings, defined in files of their package that no
// agent has read yet.
func (n *Notes) findContext() {
	n.Context = n.Context[:0]
	seen := map[string]bool{}
	for i := range n.Findings {
		f := &n.Findings[i]
		if f.Impact != "critical" {
			continue
		}
		for _, c := range f.Calls {
			if n.analyzed(c.File) || seen[c.File+":"+c.Name] || n.byKey(path2dir(c.File)+"."+c.Name) != nil {
				continue
			}
			seen[c.File+":"+c.Name] = true
			n.Context = append(n.Context, ContextItem{
				Text: "how " + symbolName(f.Key) + " reaches " + c.Name + " (" + c.File + ")",
				From: f.ID, Name: c.Name, File: c.File, Line: c.Line,
			})
			if len(n.Context) == maxContext {
				return
			}
		}
	}
	if len(n.Context) == 0 {
		n.Context = nil
	}
}

// symbolName strips the package directory from a key: "context.cancelCtx.cancel" → "cancelCtx.cancel".
func symbolName(key string) string {
	if strings.HasPrefix(key, "pattern:") {
		return key
	}
	slash := strings.LastIndexByte(key, '/')
	rest := key[slash+1:]
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		return rest[i+1:]
	}
	return rest
}

func path2dir(file string) string {
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		return file[:i]
	}
	return "."
}

// crossReference numbers the citations and links findings that share a
// cited location, or where one cites a line inside the other's definition
// (a use inside its body).
func (n *Notes) crossReference() {
	num := map[string]int{}
	for i, c := range n.Citations {
		num[c] = i + 1
	}
	for i := range n.Findings {
		f := &n.Findings[i]
		f.Refs = f.Refs[:0]
		for _, c := range f.Citations {
			k, ok := num[c]
			if !ok {
				n.Citations = append(n.Citations, c)
				k = len(n.Citations)
				num[c] = k
			}
			f.Refs = append(f.Refs, k)
		}
	}
	for i := range n.Findings {
		f := &n.Findings[i]
		f.SeeAlso = f.SeeAlso[:0]
		for j := range n.Findings {
			if i == j {
				continue
			}
			if related(f, &n.Findings[j]) || related(&n.Findings[j], f) {
				f.SeeAlso = append(f.SeeAlso, n.Findings[j].ID)
			}
		}
		if len(f.SeeAlso) == 0 {
			f.SeeAlso = nil
		}
		if len(f.Refs) == 0 {
			f.Refs = nil
		}
	}
}

// related reports whether a cites a location inside b's definition or a
// location b cites too.
func related(a, b *Finding) bool {
	for _, c := range a.Citations {
		file, line, ok := splitCitation(c)
		if !ok {
			continue
		}
		if b.Kind == KindDefinition && file == b.File && line >= b.Line && line <= b.End {
			return true
		}
		if slices.Contains(b.Citations, c) && c != cite(a.File, a.Line) {
			return true
		}
	}
	return false
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// nextID returns the next free ID with the prefix: "F001", "C1".
func nextID(prefix string, width, count int) string {
	s := strconv.Itoa(count + 1)
	for len(s) < width {
		s = "0" + s
	}
	return prefix + s
}
