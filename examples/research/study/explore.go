package study

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// explore is the ExploreAgent: it chooses at most filesPerTask files for
// its gap, reads and parses them, and reports the declarations most
// relevant to the question (and to its gap's focus) that are not findings
// yet, plus the uses of the questions' identifiers it saw (patterns).
//
// Files by gap: a coverage gap reads the estimated files not analyzed yet
// (the gap's Focus, most relevant first); an unanswered question reads the
// files that best match the question's keywords, analyzed or not; missing
// context reads the file that defines the function to trace; any other (or
// no) gap reads the most relevant files not analyzed yet.
func (w *researcher) explore(ctx context.Context, s *Notes, t iterate.Task) (Notes, error) {
	g := t.Gap()
	focusQ := -1
	var files []string
	var traceName string
	switch g.Kind {
	case gap.Coverage:
		for _, p := range g.Focus {
			if !s.analyzed(p) && len(files) < w.filesPerTask {
				files = append(files, p)
			}
		}
	case gap.UnansweredQuestion:
		focusQ = slices.IndexFunc(s.Questions, func(q Question) bool { return q.Text == g.Target })
		if focusQ >= 0 {
			q := &s.Questions[focusQ]
			var outside func(string) bool
			if sc := w.scopeOf(q); sc != nil {
				outside = func(p string) bool { return !sc.inPackages(p) }
			}
			files = w.ix.rank(q.Keywords, w.filesPerTask, outside)
		}
	case gap.MissingContext:
		if i := slices.IndexFunc(s.Context, func(c ContextItem) bool { return c.Text == g.Target }); i >= 0 {
			files = []string{s.Context[i].File}
			traceName = s.Context[i].Name
		}
	}
	if len(files) == 0 && g.Kind != gap.UnansweredQuestion {
		files = w.ix.rank(allKeywords(s), w.filesPerTask, s.analyzed)
	}

	var parsed []*parsedFile
	part := Notes{}
	for _, p := range files {
		if ctx.Err() != nil {
			return Notes{}, context.Cause(ctx)
		}
		pf, err := parseFile(w.ix.root, p)
		if err != nil {
			continue // unreadable: not analyzed
		}
		parsed = append(parsed, pf)
		part.Analyzed = append(part.Analyzed, p)
	}
	slices.Sort(part.Analyzed)

	type cand struct {
		pf      *parsedFile
		d       *decl
		focus   int // score for the task's focus
		total   int // topic score + best question score
		topic   int
		docHits int
		tags    []Tag
		work    int // the best score of its line that does the work for a scoped question
	}
	var cands []cand
	scopes := make([]*scope, len(s.Questions))
	for qi := range s.Questions {
		scopes[qi] = w.scopeOf(&s.Questions[qi])
	}
	for _, pf := range parsed {
		var lines []string
		var rare map[int][]bool // by question
		for i := range pf.decls {
			d := &pf.decls[i]
			words := splitIdent(d.Name)
			doc := strings.ToLower(docBody(d.Doc, d.Name))
			// A method's receiver type counts for the topic: the Err method
			// of cancelCtx is about cancellation.
			topic, topicDoc := match(d.Name, append(splitIdent(d.Recv), words...), doc, s.Topic)
			c := cand{pf: pf, d: d, topic: topic, docHits: topicDoc}
			best := 0
			for qi := range s.Questions {
				qs, qdoc := match(d.Name, words, doc, s.Questions[qi].Keywords)
				// A declaration answers a question when it matches the
				// question and relates to the topic at all.
				if sc := scopes[qi]; sc != nil && sc.inPackages(pf.Path) && sc.reaches(declRef{pf, d}.key()) {
					// Code of the package the question names that its
					// subject reaches: tagged by the line that does the
					// work, if one does.
					if lines == nil {
						lines = strings.Split(string(pf.src), "\n")
						rare = map[int][]bool{}
					}
					if rare[qi] == nil {
						rare[qi] = rareKeywords(lines, s.Questions[qi].workKeywords())
					}
					if ws := workLine(lines, d.Line+1, d.End, &s.Questions[qi], scopes[qi].calls, scopes[qi].doc, rare[qi]).Score; ws > 0 {
						qs = max(qs, relevantScore) + ws
						c.work = max(c.work, ws)
					}
				}
				// A question that names a package is about that package's
				// code only.
				sc := scopes[qi]
				if qs >= relevantScore && (sc == nil && topic > 0 || sc != nil && sc.inPackages(pf.Path)) {
					c.tags = append(c.tags, Tag{Question: qi, Score: qs})
				}
				best = max(best, qs)
				if qi == focusQ {
					c.focus = qs
				}
				c.docHits = max(c.docHits, qdoc)
			}
			if traceName != "" && d.Name == traceName {
				c.focus = 100
			}
			c.total = topic + best
			if focusQ < 0 && traceName == "" {
				c.focus = c.total
			}
			if topic < relevantScore && len(c.tags) == 0 && c.focus < 100 {
				continue
			}
			if f := s.byKey(d.symbol(pf.Dir)); f != nil &&
				slices.ContainsFunc(f.Variants, func(v Variant) bool { return v.File == pf.Path }) {
				continue // already a finding; a definition in another file is news
			}
			cands = append(cands, c)
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.work, a.work); c != 0 {
			return c
		}
		if c := cmp.Compare(b.focus, a.focus); c != 0 {
			return c
		}
		if c := cmp.Compare(b.total, a.total); c != 0 {
			return c
		}
		if c := strings.Compare(a.pf.Path, b.pf.Path); c != 0 {
			return c
		}
		return cmp.Compare(a.d.Line, b.d.Line)
	})
	// Keep the best; a build-constraint twin of a kept declaration is kept
	// too, so that the definitions are reported side by side.
	var keep []cand
	kept := map[string]bool{}
	for _, c := range cands {
		key := c.d.symbol(c.pf.Dir)
		if len(keep) >= findingsPerExplore && !kept[key] {
			continue
		}
		kept[key] = true
		keep = append(keep, c)
	}

	for _, c := range keep {
		d := c.d
		used := false
		for _, pf := range parsed {
			from, to := 0, 0
			if pf == c.pf {
				from, to = d.Line, d.End
			}
			if len(wordLines(pf.src, d.Name, d.Recv != "", from, to)) > 0 {
				used = true
				break
			}
		}
		impact := "informational"
		switch {
		case len(c.tags) > 0:
			impact = "critical"
		case c.topic >= 5:
			impact = "important"
		}
		f := Finding{
			Key: d.symbol(c.pf.Dir), Kind: KindDefinition,
			Description: describe(d, c.pf.Path),
			Head:        d.Head, File: c.pf.Path, Line: d.Line, End: d.End,
			Citations:  []string{cite(c.pf.Path, d.Line)},
			Claims:     []Claim{{Confidence: explorerConfidence(d.Doc != "", c.docHits, used)}},
			Impact:     impact,
			Relevance:  min(1, float64(c.total)/10),
			Tags:       c.tags,
			Documented: d.Doc != "",
		}
		if impact == "critical" {
			f.Calls = w.relevantCalls(s, c.pf, d)
		}
		part.Findings = append(part.Findings, f)
	}
	part.Findings = append(part.Findings, w.seenPatterns(s, parsed)...)
	return part, nil
}

// docBody returns a doc comment without its leading "Name " (or "A Name ",
// "The Name "), as Go doc comments start: the identifier's own name is no
// evidence of what it does.
func docBody(doc, name string) string {
	for _, p := range []string{"", "A ", "An ", "The "} {
		if rest, ok := strings.CutPrefix(doc, p+name+" "); ok {
			return rest
		}
	}
	return doc
}

// describe returns e.g. "func propagateCancel (context/context.go:474):
// propagateCancel arranges for child to be canceled when parent is."
func describe(d *decl, file string) string {
	s := d.display() + " (" + cite(file, d.Line) + ")"
	if sent := firstSentence(d.Doc); sent != "" {
		s += ": " + sent
	} else {
		s += ": " + d.Head
	}
	return s
}

// allKeywords returns the topic's keywords and every question's.
func allKeywords(s *Notes) []Keyword {
	kws := slices.Clone(s.Topic)
	for _, q := range s.Questions {
		for _, k := range q.Keywords {
			if !slices.Contains(kws, k) {
				kws = append(kws, k)
			}
		}
	}
	return kws
}

// relevantCalls returns the relevant functions d calls that are defined in
// other files of its package.
func (w *researcher) relevantCalls(s *Notes, pf *parsedFile, d *decl) []SymbolRef {
	kws := allKeywords(s)
	var out []SymbolRef
	for _, name := range callees(d.body) {
		if name == d.Name || slices.ContainsFunc(pf.decls, func(x decl) bool { return x.Name == name }) {
			continue
		}
		if sc, _ := match(name, splitIdent(name), "", kws); sc < scoreName {
			continue
		}
		if file, line := w.definedIn(pf.Dir, name, pf.Path); file != "" {
			out = append(out, SymbolRef{Name: name, File: file, Line: line})
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}

// definedIn finds the file of package directory dir (other than except)
// that declares the function or method name, by text search.
func (w *researcher) definedIn(dir, name, except string) (string, int) {
	re := regexp.MustCompile(`^func (\([^)]*\) )?` + regexp.QuoteMeta(name) + `[\[(]`)
	for _, i := range w.ix.byDir[dir] {
		p := w.ix.files[i].Path
		if p == except {
			continue
		}
		src, err := os.ReadFile(filepath.Join(w.ix.root, filepath.FromSlash(p)))
		if err != nil || !strings.Contains(string(src), name) {
			continue
		}
		for n, l := range strings.Split(string(src), "\n") {
			if re.MatchString(l) {
				return p, n + 1
			}
		}
	}
	return "", 0
}

// seenPatterns reports, for each explicit keyword of a question that names
// a method or function (capitalised), the calls of it on topic values in
// the files read: a pattern finding whose confidence grows with the number
// of examples.
func (w *researcher) seenPatterns(s *Notes, parsed []*parsedFile) []Finding {
	var out []Finding
	for qi, q := range s.Questions {
		for _, k := range q.Keywords {
			sel := patternSelector(k)
			if sel == "" {
				continue
			}
			var ex []string
			var sites []callSite
			files := 0
			for _, pf := range parsed {
				cs := callSites(pf, sel, s.Topic)
				if len(cs) > 0 {
					files++
				}
				for _, c := range cs {
					ex = append(ex, cite(pf.Path, c.Line))
					sites = append(sites, c)
				}
			}
			if len(ex) == 0 {
				continue
			}
			n := len(ex)
			if len(ex) > patternExamples {
				ex = ex[:patternExamples]
			}
			out = append(out, Finding{
				Key: "pattern:" + sel, Kind: KindPattern,
				Description: patternDescription(sel, sites, n, files),
				Citations:   ex, Claims: []Claim{{Confidence: patternConfidence(min(n, 2))}},
				Impact: "critical", Relevance: 1, Tags: []Tag{{Question: qi, Score: scorePattern}}, Examples: n,
			})
		}
	}
	return out
}

// patternSelector returns the identifier an explicit keyword names when it
// is capitalised (a method or function such as Done), or "".
func patternSelector(k Keyword) string {
	if !k.Explicit || k.Name == "" || !unicode.IsUpper([]rune(k.Name)[0]) {
		return ""
	}
	return k.Name
}
