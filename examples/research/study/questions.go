package study

import (
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// defaultQuestions is the question file used when Args.Questions is empty:
// a question about the Go standard library under $(go env GOROOT)/src.
//
//go:embed default.questions
var defaultQuestions string

// Keyword is one search term of a question. A plain word of the question
// text is reduced to a stem of at most six letters ("cancellation" →
// "cancel") and matches identifier words that start with it; an explicit
// keyword (listed in brackets, or an identifier such as WithCancel written
// in the question) matches identifiers that contain it.
type Keyword struct {
	Word     string `json:"word"`
	Explicit bool   `json:"explicit,omitempty"`
	// Name is an explicit keyword as written, e.g. "Done".
	Name string `json:"name,omitempty"`
	// Qual is what the question wrote before an identifier: its package
	// and type ("sync.WaitGroup" of sync.WaitGroup.Wait, "http" of
	// http.Server), or the qualified identifier a method name follows
	// ("http.Server" of "http.Server Shutdown"). A question with a
	// package qualifier is answered only by code of that package.
	Qual string `json:"qual,omitempty"`
}

// Question is a sub-question of the research.
type Question struct {
	Text     string    `json:"text"`
	Critical bool      `json:"critical,omitempty"`
	Keywords []Keyword `json:"keywords"`
	// Answered is set when a finding tagged with the question has a
	// definition citation of confidence ≥ answerConfidence; Partial when
	// tagged findings exist but none is strong enough yet.
	Answered bool `json:"answered,omitempty"`
	Partial  bool `json:"partial,omitempty"`
	// Answer lists the IDs of the findings that answer it, best first.
	Answer []string `json:"answer,omitempty"`
}

// questionFile is a parsed question file: the main question, its topic
// keywords and the sub-questions.
type questionFile struct {
	Question  string
	Topic     []Keyword
	Questions []Question
}

// ErrQuestionFile is matched by every *QuestionFileError.
var ErrQuestionFile = errors.New("invalid question file")

// QuestionFileError reports a problem of a question file.
type QuestionFileError struct {
	Name   string // file name
	Line   int    // 1-indexed; 0 for the whole file
	Reason string
}

// Error is "name:line: reason", or "name: reason" for the whole file.
func (e *QuestionFileError) Error() string {
	if e.Line > 0 {
		return e.Name + ":" + strconv.Itoa(e.Line) + ": " + e.Reason
	}
	return e.Name + ": " + e.Reason
}

// Is reports whether target is ErrQuestionFile.
func (e *QuestionFileError) Is(target error) bool { return target == ErrQuestionFile }

// parseQuestions parses a question file:
//
//	# comment
//	question: How does the Go standard library implement context cancellation?
//	critical: Where is the cancellation signal propagated to child contexts? [propagateCancel, children]
//	optional: Which packages accept a context? [context.Context]
//
// Exactly one "question:" line is required; "critical:" lines are the
// critical sub-questions that must be answered, "optional:" lines are
// reported but never block convergence. Brackets at the end of a line list
// explicit keywords. name labels errors.
func parseQuestions(name, text string) (*questionFile, error) {
	st := &questionFile{}
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		directive, rest, ok := strings.Cut(line, ":")
		if !ok {
			return nil, &QuestionFileError{Name: name, Line: i + 1, Reason: `want "question:", "critical:" or "optional:" before the text`}
		}
		body, explicit, err := splitKeywords(strings.TrimSpace(rest))
		if err != nil {
			return nil, &QuestionFileError{Name: name, Line: i + 1, Reason: err.Error()}
		}
		if body == "" {
			return nil, &QuestionFileError{Name: name, Line: i + 1, Reason: "empty question"}
		}
		kws := keywordsOf(body, explicit)
		switch strings.ToLower(strings.TrimSpace(directive)) {
		case "question":
			if st.Question != "" {
				return nil, &QuestionFileError{Name: name, Line: i + 1, Reason: "a second main question"}
			}
			if len(kws) == 0 {
				return nil, &QuestionFileError{Name: name, Line: i + 1, Reason: "no keywords in the main question; list some in brackets"}
			}
			st.Question, st.Topic = body, kws
		case "critical", "optional":
			if len(kws) == 0 {
				return nil, &QuestionFileError{Name: name, Line: i + 1, Reason: "no keywords in the question; list some in brackets"}
			}
			st.Questions = append(st.Questions, Question{Text: body, Critical: strings.EqualFold(strings.TrimSpace(directive), "critical"), Keywords: kws})
		default:
			return nil, &QuestionFileError{Name: name, Line: i + 1, Reason: fmt.Sprintf("unknown directive %q", directive)}
		}
	}
	if st.Question == "" {
		return nil, &QuestionFileError{Name: name, Reason: `no "question:" line`}
	}
	return st, nil
}

// splitKeywords separates a trailing "[a, b]" list from a question.
func splitKeywords(s string) (body string, explicit []string, err error) {
	if !strings.HasSuffix(s, "]") {
		if strings.ContainsAny(s, "[]") {
			return "", nil, errors.New("brackets must close at the end of the line")
		}
		return s, nil, nil
	}
	open := strings.LastIndexByte(s, '[')
	if open < 0 {
		return "", nil, errors.New("unbalanced ]")
	}
	for _, k := range strings.Split(s[open+1:len(s)-1], ",") {
		if k = strings.TrimSpace(k); k != "" {
			explicit = append(explicit, k)
		}
	}
	return strings.TrimSpace(s[:open]), explicit, nil
}

// stopwords are question words that say nothing about code.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the how does do did is are was were be been being what when where
		which who whom whose why there their this that these those it its of in on at to for from by with and or
		not no into onto about any all each every can could should would will shall may might must happens happen
		happening get gets use used uses using go golang standard library stdlib implement implements implemented
		implementation code codebase work works package packages function functions func type types method methods
		file files source sources find show explain describe tell me we our you your they them than then also
		other such some many much more most way ways`) {
		m[w] = true
	}
	return m
}()

// stemLen is the length to which plain question words are cut.
const stemLen = 6

// keywordsOf derives the keywords of a question: its significant words as
// stems, identifiers it names, and the explicit keywords, deduplicated in
// order of appearance.
func keywordsOf(text string, explicit []string) []Keyword {
	var out []Keyword
	seen := map[Keyword]bool{}
	add := func(k Keyword) {
		if k.Word == "" || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, k)
	}
	prevQualified := "" // the previous token, when a qualified identifier
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.' && r != '_'
	}) {
		tok = strings.Trim(tok, "._")
		if tok == "" {
			continue
		}
		after := prevQualified
		prevQualified = ""
		if isIdentifier(tok) {
			// "WithCancel", "io.Copy", "sync.WaitGroup.Wait": explicit
			// identifiers; a package qualifier becomes a stem, a type
			// qualifier an identifier too.
			parts := strings.Split(tok, ".")
			for i, p := range parts[:len(parts)-1] {
				switch {
				case p != "" && unicode.IsUpper([]rune(p)[0]):
					add(Keyword{Word: strings.ToLower(p), Explicit: true, Name: p, Qual: strings.Join(parts[:i], ".")})
				case len(p) >= 2:
					add(Keyword{Word: strings.ToLower(p)})
				}
			}
			last := parts[len(parts)-1]
			add(Keyword{Word: strings.ToLower(last), Explicit: true, Name: last, Qual: strings.Join(parts[:len(parts)-1], ".")})
			if len(parts) > 1 {
				prevQualified = tok
			}
			continue
		}
		if after != "" && unicode.IsUpper([]rune(tok)[0]) {
			// "http.Server Shutdown": a method of the identifier before.
			add(Keyword{Word: strings.ToLower(tok), Explicit: true, Name: tok, Qual: after})
			continue
		}
		w := strings.ToLower(tok)
		if len(w) < 3 || stopwords[w] || !isLetters(w) {
			continue
		}
		add(Keyword{Word: stem(w)})
	}
	for _, e := range explicit {
		parts := strings.Split(e, ".")
		for _, p := range parts[:len(parts)-1] {
			if p != "" {
				add(Keyword{Word: strings.ToLower(p)})
			}
		}
		last := parts[len(parts)-1]
		add(Keyword{Word: strings.ToLower(last), Explicit: true, Name: last, Qual: strings.Join(parts[:len(parts)-1], ".")})
	}
	return out
}

// stem reduces a word of a question: it strips a common suffix
// ("cancellation" → "cancell", "entries" → "entry", "evicted" → "evict")
// and cuts the rest to stemLen letters.
func stem(w string) string {
	for _, sfx := range []struct{ suffix, repl string }{
		{"ations", ""}, {"ation", ""}, {"ies", "y"}, {"ied", "y"}, {"ing", ""}, {"ed", ""},
		{"sses", "ss"}, {"xes", "x"}, {"ches", "ch"}, {"shes", "sh"}, {"s", ""},
	} {
		if strings.HasSuffix(w, sfx.suffix) && !strings.HasSuffix(w, "ss") && len(w)-len(sfx.suffix)+len(sfx.repl) >= 3 {
			w = w[:len(w)-len(sfx.suffix)] + sfx.repl
			break
		}
	}
	if len(w) > stemLen {
		return w[:stemLen]
	}
	return w
}

func isLetters(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// isIdentifier reports whether a token of a question reads as a Go
// identifier rather than an English word: it has an upper-case letter after
// the first, an underscore or a dot.
func isIdentifier(tok string) bool {
	if strings.ContainsAny(tok, "._") {
		return true
	}
	for i, r := range tok {
		if i > 0 && unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

// splitIdent splits an identifier into lower-case words: "propagateCancel"
// → [propagate cancel], "HTTPServer" → [http server], "max_files" → [max
// files].
func splitIdent(name string) []string {
	var words []string
	runes := []rune(name)
	start := 0
	flush := func(end int) {
		if end > start {
			words = append(words, strings.ToLower(string(runes[start:end])))
		}
		start = end
	}
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case r == '_':
			flush(i)
			start = i + 1
		case i > start && unicode.IsUpper(r):
			prevLower := unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1])
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if prevLower || (unicode.IsUpper(runes[i-1]) && nextLower) {
				flush(i)
			}
		}
	}
	flush(len(runes))
	return words
}

// Scoring of declarations against keywords.
const (
	scoreExact = 4 // the identifier is an explicit keyword
	scoreName  = 2 // a word of the identifier matches, or the doc comment names an explicit keyword
	scoreDoc   = 1 // the doc comment mentions the keyword
	// scorePattern is the match of a pattern finding with its question:
	// the calls of the identifier asked about answer "how do callers …".
	scorePattern = scoreExact + 2
	// relevantScore is the score from which a declaration is relevant.
	relevantScore = 3
)

// match scores one identifier and its (lower-case) doc comment against
// keywords. It returns the score and how many distinct keywords the doc
// comment mentions. Keywords of which one starts with the other (the stem
// "watche" and the identifier "watcher") count once, with the best score.
func match(name string, words []string, doc string, kws []Keyword) (score, docHits int) {
	lname := strings.ToLower(name)
	var bestBuf [16]int
	var docBuf [16]bool
	bests, docs := bestBuf[:0], docBuf[:0]
	for _, k := range kws {
		best, inDoc := 0, false
		switch {
		case k.Explicit && lname == k.Word:
			best = scoreExact
		case k.Explicit && len(k.Word) >= 4 && strings.Contains(lname, k.Word):
			best = scoreName
		case !k.Explicit && hasWordPrefix(words, k.Word):
			best = scoreName
		}
		if doc != "" && containsWord(doc, k.Word, k.Explicit) {
			inDoc = true
			switch {
			case k.Explicit && best < scoreName:
				best = scoreName // the doc names the identifier asked about
			case best == 0:
				best = scoreDoc
			}
		}
		bests, docs = append(bests, best), append(docs, inDoc)
	}
	// Fold overlapping keywords into the first of their group.
	for i := range kws {
		for j := 0; j < i; j++ {
			if strings.HasPrefix(kws[i].Word, kws[j].Word) || strings.HasPrefix(kws[j].Word, kws[i].Word) {
				bests[j], docs[j] = max(bests[j], bests[i]), docs[j] || docs[i]
				bests[i], docs[i] = 0, false
				break
			}
		}
	}
	for i := range bests {
		score += bests[i]
		if docs[i] {
			docHits++
		}
	}
	return score, docHits
}

func hasWordPrefix(words []string, stem string) bool {
	for _, w := range words {
		if strings.HasPrefix(w, stem) {
			return true
		}
	}
	return false
}

// containsWord reports whether lower-case text contains the keyword at the
// start of a word (a stem), or as a whole word (an explicit keyword).
func containsWord(text, word string, whole bool) bool {
	for off := 0; ; {
		i := strings.Index(text[off:], word)
		if i < 0 {
			return false
		}
		i += off
		startOK := i == 0 || !isWordByte(text[i-1])
		end := i + len(word)
		endOK := !whole || end == len(text) || !isWordByte(text[end])
		if startOK && endOK {
			return true
		}
		off = i + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}
