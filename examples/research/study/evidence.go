package study

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Evidence is what the verification of a finding against one question
// found: the question's keywords that occur in the code the finding cites
// (its definition, its citations), read from the files themselves. A
// finding answers a question only with such evidence (see answerQuestions).
type Evidence struct {
	// Question is the index of the question.
	Question int `json:"q"`
	// Terms are the keywords of the question found in the cited code: the
	// identifiers it names as written ("ReadTimeout"), the stems of its
	// other words ("discon").
	Terms []string `json:"terms"`
	// Rare are the terms of Terms that are distinctive in the tree: the
	// keywords of the question that the fewest files hold (see
	// distinctive), such as "discon" in net/http, where "reques" and
	// "client" are everywhere.
	Rare []string `json:"rare,omitempty"`
	// Work is the line of the finding's code that does the work the
	// question asks about ("file:line"), Code its text and WorkScore how
	// well it matches (see workLine); empty when no line of it does.
	Work      string `json:"work,omitempty"`
	Code      string `json:"code,omitempty"`
	WorkScore int    `json:"work_score,omitempty"`
	// Ambiguous is set when a line of another branch of the same switch
	// or select in the finding's code matches the question as well as
	// Work (see workLine): the code does not tell which one answers, and
	// a scoped question whose best answers include such a finding stays
	// open (see earnedScoped).
	Ambiguous bool `json:"ambiguous,omitempty"`
	// About is set, for a question that names a package (a scoped one),
	// when the finding is code of that package about the identifier the
	// question asks about: only such a finding answers it.
	About bool `json:"about,omitempty"`
}

// Bounds of the code the evidence check reads per finding.
const (
	evidenceSpan    = 400 // lines of a definition
	evidenceContext = 2   // lines around a citation that is not a definition
)

// checkEvidence verifies the findings of n against the questions they are
// tagged with: it reads the code each finding cites and records, per
// question, the question's keywords found there (Finding.Evidence). It
// replaces what an earlier iteration recorded, since findings grow.
func (w *researcher) checkEvidence(n *Notes) {
	files := map[string][]string{}
	rares := map[string][]bool{} // by file and question
	read := func(rel string) []string {
		if lines, ok := files[rel]; ok {
			return lines
		}
		var lines []string
		if w.lines.lines(rel) >= 0 {
			if src, err := os.ReadFile(filepath.Join(w.ix.root, filepath.FromSlash(rel))); err == nil {
				lines = strings.Split(string(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))), "\n")
			}
		}
		files[rel] = lines
		return lines
	}
	for i := range n.Findings {
		f := &n.Findings[i]
		f.Evidence = nil
		if len(f.Tags) == 0 {
			continue
		}
		code := citedCode(f, read)
		if code == "" {
			continue
		}
		words := codeWords(code)
		for _, t := range f.Tags {
			if t.Question < 0 || t.Question >= len(n.Questions) {
				continue
			}
			q := &n.Questions[t.Question]
			kws := q.Keywords
			terms := termsIn(kws, code, words)
			e := Evidence{Question: t.Question, Terms: terms}
			sc := w.scopeOf(q)
			// Functions do the work; a type or a variable only holds it.
			if f.Kind == KindDefinition && f.File != "" && f.Line > 0 && strings.HasPrefix(f.Head, "func ") {
				var calls func(string) bool
				var doc []string
				if sc != nil {
					calls, doc = sc.calls, sc.doc
				}
				key := f.File + "\x00" + strconv.Itoa(t.Question)
				if rares[key] == nil {
					rares[key] = rareKeywords(read(f.File), q.workKeywords())
				}
				if wl := workLine(read(f.File), f.Line+1, max(f.End, f.Line), q, calls, doc, rares[key]); wl.Score > 0 {
					e.Work, e.Code, e.WorkScore, e.Ambiguous = cite(f.File, wl.Line), clip(wl.Code, 160), wl.Score, wl.Ambiguous
				}
			}
			if sc != nil {
				e.About = sc.about(f)
			}
			if len(terms) == 0 && e.Work == "" {
				continue
			}
			for _, k := range w.distinctive(kws) {
				if slices.Contains(terms, keywordLabel(k)) {
					e.Rare = append(e.Rare, keywordLabel(k))
				}
			}
			f.Evidence = append(f.Evidence, e)
		}
	}
}

// distinctive returns the keywords of a question, other than the
// identifiers it names, that few files of the tree hold: those in at most
// half as many files as the most common of them, or, when none is, the
// least common ones. A keyword no file holds is none of them.
func (w *researcher) distinctive(kws []Keyword) []Keyword {
	df := make([]int, len(kws))
	most := 0
	for i, k := range kws {
		if identifierKeyword(k) {
			continue
		}
		wi, ok := w.ix.wordAt[k.Word]
		if !ok {
			continue
		}
		for _, f := range w.ix.files {
			if wi < len(f.Hits) && f.Hits[wi] > 0 {
				df[i]++
			}
		}
		most = max(most, df[i])
	}
	least := most
	for i := range kws {
		if df[i] > 0 {
			least = min(least, df[i])
		}
	}
	limit := max(most/2, least)
	var out []Keyword
	for i, k := range kws {
		if df[i] > 0 && df[i] <= limit {
			out = append(out, k)
		}
	}
	return out
}

// citedCode returns the code a finding cites: its definition (File, Line
// to End) and the lines around each other citation, within bounds.
func citedCode(f *Finding, read func(string) []string) string {
	var b strings.Builder
	add := func(file string, from, to int) {
		lines := read(file)
		from, to = max(from, 1), min(to, len(lines), from+evidenceSpan-1)
		for l := from; l <= to; l++ {
			b.WriteString(lines[l-1])
			b.WriteByte('\n')
		}
	}
	if f.File != "" && f.Line > 0 {
		add(f.File, f.Line, max(f.End, f.Line))
	}
	for _, c := range f.Citations {
		file, line, ok := splitCitation(c)
		if !ok || (file == f.File && line >= f.Line && line <= f.End) {
			continue
		}
		add(file, line-evidenceContext, line+evidenceContext)
	}
	return b.String()
}

// codeWords returns the lower-case words of the identifiers in code
// ("shuttingDown" → shutting, down), for the stems of a question.
func codeWords(code string) []string {
	seen := map[string]bool{}
	var out []string
	for _, tok := range strings.FieldsFunc(code, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		for _, w := range append(splitIdent(tok), strings.ToLower(tok)) {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// termsIn returns the keywords found in code: an identifier the question
// names must occur as a whole word, as written; an acronym ("HTTP") or a
// stem must start a word of an identifier.
func termsIn(kws []Keyword, code string, words []string) []string {
	var out []string
	for _, k := range kws {
		found := false
		if identifierKeyword(k) {
			found = containsWordExact(code, k.Name)
		} else {
			found = hasWordPrefix(words, k.Word)
		}
		if found {
			out = append(out, keywordLabel(k))
		}
	}
	return out
}

// identifierKeyword reports whether a keyword names an identifier to be
// found as written: an explicit keyword that is not an acronym such as
// "HTTP", which reads as a word.
func identifierKeyword(k Keyword) bool {
	if !k.Explicit || k.Name == "" {
		return false
	}
	for _, r := range k.Name {
		if unicode.IsLower(r) {
			return true
		}
	}
	return false
}

// keywordLabel is the keyword as an evidence term: the identifier as
// written, else the stem.
func keywordLabel(k Keyword) string {
	if identifierKeyword(k) {
		return k.Name
	}
	return k.Word
}

// containsWordExact reports whether text holds word as a whole word, case
// included.
func containsWordExact(text, word string) bool {
	for off := 0; ; {
		i := strings.Index(text[off:], word)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(word)
		if (i == 0 || !isWordByte(text[i-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		off = i + 1
	}
}

// evidenceFor returns the terms a finding's verified evidence holds for
// question qi, and the distinctive ones among them; nil when it has none.
func (f *Finding) evidenceFor(qi int) (terms, rare []string) {
	for _, e := range f.Evidence {
		if e.Question == qi {
			return e.Terms, e.Rare
		}
	}
	return nil, nil
}

// minWorkScore is the score of a line that does the work from which it
// answers: one of the question's words, not only those of its subject.
const minWorkScore = 2

// evidence returns the finding's verified evidence for question qi, or
// nil.
func (f *Finding) evidence(qi int) *Evidence {
	for i := range f.Evidence {
		if f.Evidence[i].Question == qi {
			return &f.Evidence[i]
		}
	}
	return nil
}

// earnedScoped returns the findings that answer a scoped question (one
// that names a package): code of that package about the identifier it asks
// about, with the line that does the work, best line first; none when the
// best lines are Ambiguous.
func earnedScoped(qi int, qualifying []*Finding) []*Finding {
	// (qualifying comes in the order of answerQuestions; the sort below
	// keeps it among equal lines.)
	var counted []*Finding
	for _, f := range qualifying {
		if e := f.evidence(qi); e != nil && e.About && e.Work != "" {
			counted = append(counted, f)
		}
	}
	slices.SortStableFunc(counted, func(a, b *Finding) int {
		return b.evidence(qi).WorkScore - a.evidence(qi).WorkScore
	})
	if len(counted) == 0 || counted[0].evidence(qi).WorkScore < minWorkScore {
		return nil
	}
	// An answer is earned only when the code singles out its line: a best
	// line tied with one of another branch of a switch or select leaves
	// open which one the question's case takes.
	top := counted[0].evidence(qi).WorkScore
	for _, f := range counted {
		if e := f.evidence(qi); e.WorkScore == top && e.Ambiguous {
			return nil
		}
	}
	return counted
}

// inConflict reports whether an identifier the question names (in its
// packages, for a scoped question) is in an open conflict: the question
// is not answered until the conflict is resolved.
func (n *Notes) inConflict(q *Question) bool {
	pkgs := q.packages()
	for i := range n.Findings {
		f := &n.Findings[i]
		if f.Conflict == "" || f.Kind != KindDefinition {
			continue
		}
		if c := n.conflict(f.Conflict); c != nil && c.Resolved {
			continue
		}
		if len(pkgs) > 0 && !slices.Contains(pkgs, path.Base(path2dir(findingFile(f)))) {
			continue
		}
		name := symbolName(f.Key)
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		for _, k := range q.Keywords {
			if identifierKeyword(k) && k.Name == name {
				return true
			}
		}
	}
	return false
}

// earned reports whether the verified evidence of the qualifying findings
// answers question q: every identifier the question names is found in
// the code they cite; a question that names none needs, in the code of each
// finding, at least two of its keywords, one of them distinctive
// (Evidence.Rare), and findings in two files (corroboration across files).
// It returns the findings that count.
func earned(q *Question, qi int, qualifying []*Finding) []*Finding {
	var idents []string
	for _, k := range q.Keywords {
		if identifierKeyword(k) {
			idents = append(idents, k.Name)
		}
	}
	var counted []*Finding
	covered := map[string]bool{}
	files := map[string]bool{}
	for _, f := range qualifying {
		terms, rare := f.evidenceFor(qi)
		hasIdent := false
		for _, t := range terms {
			if slices.Contains(idents, t) {
				covered[t], hasIdent = true, true
			}
		}
		if len(idents) > 0 && !hasIdent || len(idents) == 0 && (len(terms) < min(2, len(q.Keywords)) || len(rare) == 0) {
			continue
		}
		counted = append(counted, f)
		files[findingFile(f)] = true
	}
	switch {
	case len(counted) == 0:
		return nil
	case len(idents) > 0 && len(covered) < len(idents):
		return nil
	case len(idents) == 0 && len(files) < 2:
		return nil
	}
	return counted
}

// findingFile is the file of a finding: its definition's, else its first
// citation's.
func findingFile(f *Finding) string {
	if f.File != "" {
		return f.File
	}
	if len(f.Citations) > 0 {
		file, _, _ := splitCitation(f.Citations[0])
		return file
	}
	return ""
}
