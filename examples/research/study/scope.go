package study

import (
	"go/ast"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// A question that qualifies an identifier with its package ("http.Server
// Shutdown", "context.AfterFunc", "sync.WaitGroup.Wait") is scoped: only
// the code of that package that is about the identifier it asks about (its
// subject) answers it, and each answer cites the line of that code that
// does the work. Issue 32: syscall.Shutdown for http.Server Shutdown,
// time.AfterFunc for context.AfterFunc and runtime finalizer queues for
// WaitGroup.Wait were answers.

// packages returns the packages that qualify the question's identifiers
// ("http" of http.Server), sorted; nil for an unscoped question.
func (q *Question) packages() []string {
	var out []string
	for _, k := range q.Keywords {
		if k.Qual == "" {
			continue
		}
		first, _, _ := strings.Cut(k.Qual, ".")
		if first != "" && !unicode.IsUpper([]rune(first)[0]) && !slices.Contains(out, first) {
			out = append(out, first)
		}
	}
	slices.Sort(out)
	return out
}

// subject returns the identifier the question asks about, the last one it
// names ("Shutdown" of "http.Server Shutdown"), and the type that
// qualifies it, if any ("Server").
func (q *Question) subject() (name, recv string) {
	for _, k := range q.Keywords {
		if identifierKeyword(k) {
			name, recv = k.Name, ""
			if i := strings.LastIndexByte(k.Qual, '.'); k.Qual != "" {
				if t := k.Qual[i+1:]; t != "" && unicode.IsUpper([]rune(t)[0]) {
					recv = t
				}
			}
		}
	}
	return name, recv
}

// workKeywords returns the keywords of the question a line of code that
// does the work holds: not the identifiers it names, nor the words of its
// subject, nor its packages ("wait", "active", "connec" of "How does
// http.Server Shutdown wait for active connections to close?").
func (q *Question) workKeywords() []Keyword {
	var idWords []string
	for _, k := range q.Keywords {
		if identifierKeyword(k) {
			idWords = append(idWords, splitIdent(k.Name)...)
		}
	}
	pkgs := q.packages()
	var out []Keyword
	for _, k := range q.Keywords {
		if identifierKeyword(k) || slices.ContainsFunc(pkgs, func(p string) bool { return wordMatches(p, k.Word) }) ||
			slices.ContainsFunc(idWords, func(w string) bool { return wordMatches(w, k.Word) }) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// wordMatches reports whether a word of code matches a stem of a question:
// it starts with the stem, or the two share a prefix of four letters or
// more that leaves at most one letter of the shorter ("conns" and
// "connec", "timed" and "timeou").
func wordMatches(word, stem string) bool {
	if strings.HasPrefix(word, stem) {
		return true
	}
	n := 0
	for n < len(word) && n < len(stem) && word[n] == stem[n] {
		n++
	}
	return n >= 4 && n >= min(len(word), len(stem))-1
}

// scope is what a scoped question allows as answers: the declarations of
// its packages that its subject's code reaches.
type scope struct {
	pkgs    []string
	subject string
	// reach holds "Name" and "Recv.Name" of the declarations of the
	// packages about the subject: its definitions (and, for a type, its
	// methods), what they reference in two steps (one for a type's
	// methods), and the declarations that use a field or helper named
	// after it in another case (disallowUnknownFields for
	// DisallowUnknownFields).
	reach map[string]int
	// funcs holds the names of the functions and methods of the packages.
	funcs map[string]bool
	// doc holds the words of the subject's doc comments (docWords): they
	// tell apart the lines that match the question as well.
	doc []string
}

// calls reports whether name is a function or method of the scope's
// packages.
func (sc *scope) calls(name string) bool { return sc.funcs[name] }

// scopes caches the scopes of the questions, by question text: a pure
// function of the tree and the question.
type scopes struct {
	mu sync.Mutex
	m  map[string]*scope
}

// scopeOf returns the scope of question q, or nil when q names no
// package.
func (w *researcher) scopeOf(q *Question) *scope {
	pkgs := q.packages()
	if len(pkgs) == 0 {
		return nil
	}
	if w.scopes == nil {
		return w.buildScope(q, pkgs)
	}
	w.scopes.mu.Lock()
	defer w.scopes.mu.Unlock()
	if sc, ok := w.scopes.m[q.Text]; ok {
		return sc
	}
	sc := w.buildScope(q, pkgs)
	if w.scopes.m == nil {
		w.scopes.m = map[string]*scope{}
	}
	w.scopes.m[q.Text] = sc
	return sc
}

// inPackages reports whether a file lies in one of the packages (the last
// element of its directory).
func (sc *scope) inPackages(file string) bool {
	return file != "" && slices.Contains(sc.pkgs, path.Base(path.Dir(file)))
}

// about reports whether a finding is about the scope's subject: a
// declaration of its packages that the subject's code reaches.
func (sc *scope) about(f *Finding) bool {
	if f.Kind != KindDefinition || !sc.inPackages(f.File) {
		return false
	}
	_, ok := sc.reach[strings.TrimPrefix(f.Key, path.Dir(f.File)+".")]
	return ok
}

type declRef struct {
	pf *parsedFile
	d  *decl
}

func (r declRef) key() string {
	if r.d.Recv != "" {
		return r.d.Recv + "." + r.d.Name
	}
	return r.d.Name
}

// buildScope parses the files of the packages and walks the references
// from the subject's definitions.
func (w *researcher) buildScope(q *Question, pkgs []string) *scope {
	subject, recv := q.subject()
	sc := &scope{pkgs: pkgs, subject: subject, reach: map[string]int{}, funcs: map[string]bool{}}
	if subject == "" {
		return sc
	}
	byName := map[string][]declRef{}
	var all []declRef
	for dir, files := range w.ix.byDir {
		if !slices.Contains(pkgs, path.Base(dir)) {
			continue
		}
		for _, i := range files {
			pf, err := parseFile(w.ix.root, w.ix.files[i].Path)
			if err != nil {
				continue
			}
			for j := range pf.decls {
				r := declRef{pf, &pf.decls[j]}
				byName[r.d.Name] = append(byName[r.d.Name], r)
				all = append(all, r)
				if r.d.Kind == "func" || r.d.Kind == "method" {
					sc.funcs[r.d.Name] = true
				}
			}
		}
	}
	type item struct {
		r     declRef
		depth int
	}
	var queue []item
	add := func(r declRef, depth int) {
		if _, ok := sc.reach[r.key()]; !ok {
			sc.reach[r.key()] = depth
			queue = append(queue, item{r, depth})
		}
	}
	limit, subjectType := maxReach, false
	var docs []string
	for _, r := range byName[subject] {
		if recv != "" && r.d.Recv != recv {
			continue
		}
		docs = append(docs, r.d.Doc)
		if r.d.Kind == "type" {
			limit = 2 // its methods, and what they reference
			subjectType = true
		}
		add(r, 0)
		if r.d.Kind == "type" {
			for _, m := range all {
				if m.d.Recv == subject {
					add(m, 1)
				}
			}
		}
	}
	// A helper named after the subject in another case (e.marshal for
	// Marshal) is about it; so is the code that reads a field so named
	// (d.disallowUnknownFields for DisallowUnknownFields).
	lower := strings.ToLower(subject)
	for name, rs := range byName {
		if name != subject && strings.ToLower(name) == lower {
			for _, r := range rs {
				if r.d.Kind == "func" || r.d.Kind == "method" {
					add(r, 1)
				}
			}
		}
	}
	for _, r := range all {
		rf := references(r.d.body)
		if slices.ContainsFunc(selNames(rf.sels), func(n string) bool {
			return n != subject && strings.ToLower(n) == lower && !sc.funcs[n]
		}) {
			add(r, 2)
		}
	}
	sc.doc = docWords(docs, q)
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if it.depth >= limit || it.r.d.body == nil {
			continue
		}
		rf := references(it.r.d.body)
		for _, name := range rf.names {
			for _, r := range byName[name] {
				if r.d.Kind == "func" {
					add(r, it.depth+1)
				}
			}
		}
		// A method selected on the receiver is of its type; on anything
		// else, of the subject's type or of a type the body builds: a
		// method name alone (Lock, Close) says nothing of its type.
		types := rf.built
		if subjectType {
			types = append(types, subject)
		}
		if it.depth == 0 {
			// What the subject builds and returns works through its
			// methods (TimeoutHandler's &timeoutHandler{...}).
			for _, m := range all {
				if m.d.Kind == "method" && slices.Contains(rf.built, m.d.Recv) {
					add(m, 1)
				}
			}
		}
		for _, x := range rf.sels {
			for _, r := range byName[x.name] {
				if r.d.Kind == "method" && (x.x != "" && x.x == it.r.d.RecvVar && r.d.Recv == it.r.d.Recv || slices.Contains(types, r.d.Recv)) {
					add(r, it.depth+1)
				}
			}
		}
	}
	return sc
}

// maxReach is how many steps of references from the subject's
// definitions the scope follows.
const maxReach = 4

// refs are what a body refers to.
type refs struct {
	names []string // plain identifiers (functions called or passed)
	sels  []sel    // x.name selections
	built []string // the types it builds (&cancelCtx{...})
}

type sel struct{ x, name string }

// references returns what a body refers to.
func references(body *ast.BlockStmt) refs {
	var r refs
	if body == nil {
		return r
	}
	seen := map[string]bool{}
	selected := map[*ast.Ident]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			selected[n.Sel] = true
			x := ""
			if id, ok := n.X.(*ast.Ident); ok {
				x = id.Name
			}
			r.sels = append(r.sels, sel{x, n.Sel.Name})
		case *ast.Ident:
			if !selected[n] && !seen[n.Name] {
				seen[n.Name] = true
				r.names = append(r.names, n.Name)
			}
		case *ast.CompositeLit:
			if id, ok := n.Type.(*ast.Ident); ok && !slices.Contains(r.built, id.Name) {
				r.built = append(r.built, id.Name)
			}
		}
		return true
	})
	return r
}

// codeOf returns a line of Go without its trailing comment, and the text
// of its string literals.
func codeOf(line string) (code, literals string) {
	var lit strings.Builder
	inStr := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inStr != 0:
			if c == '\\' && inStr == '"' && i+1 < len(line) {
				lit.WriteByte(line[i+1])
				i++
				continue
			}
			if c == inStr {
				inStr = 0
				lit.WriteByte(' ')
				continue
			}
			lit.WriteByte(c)
		case c == '"' || c == '`':
			inStr = c
		case c == '/' && i+1 < len(line) && line[i+1] == '/':
			return line[:i], lit.String()
		}
	}
	return line, lit.String()
}

// work is the line of a definition that does the work a question asks
// about (see workLine).
type work struct {
	Line  int
	Code  string
	Score int
	// Ambiguous is set when a line of another branch of the same switch
	// or select, with other code, matches the question as well (its doc
	// words too): the question's words do not tell which branch answers
	// it (tw.code = StatusOK under case <-done and
	// w.WriteHeader(StatusServiceUnavailable) under case <-ctx.Done() for
	// http.TimeoutHandler's status, without its doc).
	Ambiguous bool
}

// workLine returns the line of a definition that does the work the
// question asks about: among the lines of its body (comments and braces
// aside), the one that holds the most of the question's work keywords
// (each counting two, three when a message names it: "stopped after 10
// redirects"; one when only the name of a function of the package it calls
// holds it, since the work is in that function: c.propagateCancel), plus
// the words of its subject on a line that does not name the subject itself
// (d.disallowUnknownFields leads to the line that does the work). Lines
// that match as well are told apart by the words of the subject's doc
// comment they hold (doc: "responds with a 503 Service Unavailable error"
// for w.WriteHeader(StatusServiceUnavailable) over tw.code = StatusOK);
// when that leaves a line of another branch (see alternatives), the result
// is Ambiguous. calls reports whether a name is a function or method of
// the package (nil: none is); doc holds the subject's doc words (nil:
// none); rare is rareKeywords of the file (nil: computed). Its Score is 0
// when no line holds any.
func workLine(lines []string, from, to int, q *Question, calls func(string) bool, doc []string, rare []bool) work {
	kws := q.workKeywords()
	subject, _ := q.subject()
	subjWords := splitIdent(subject)
	lowSubject := strings.ToLower(subject)
	if rare == nil {
		rare = rareKeywords(lines, kws)
	}
	var best work
	bestDoc := 0
	var tied []int     // the lines, of other code, that match as well as best
	var above []string // the words of the comment right above the line
	for l := max(from, 1); l <= min(to, len(lines)); l++ {
		raw := strings.TrimSpace(lines[l-1])
		if comment, ok := strings.CutPrefix(raw, "//"); ok {
			above = append(above, codeWords(comment)...)
			continue
		}
		comment := above
		above = nil
		text, literals := codeOf(raw)
		if text = strings.TrimSpace(text); strings.Trim(text, "{}()") == "" {
			continue
		}
		own, called := lineWords(text, calls)
		litWords := codeWords(literals)
		s := 0
		for i, k := range kws {
			match := func(w string) bool { return wordMatches(w, k.Word) }
			switch {
			case slices.ContainsFunc(own, match):
				s += 2
				if rare[i] {
					s++
				}
				if slices.ContainsFunc(litWords, match) {
					s++
				}
			case slices.ContainsFunc(called, match):
				s++
			}
			// The comment above a line says what it does.
			if slices.ContainsFunc(comment, match) {
				s++
			}
		}
		if declaration.MatchString(text) {
			continue // a field or variable declared, not work done
		}
		if s == 0 && subject != "" && !slices.ContainsFunc(codeTokens(text), func(t string) bool { return strings.ToLower(t) == lowSubject }) {
			for _, sw := range subjWords {
				if len(sw) >= 3 && slices.ContainsFunc(own, func(w string) bool { return len(w) >= 3 && (wordMatches(w, sw) || wordMatches(sw, w)) }) {
					s++
				}
			}
		}
		if s == 0 {
			continue
		}
		d := docHits(text, doc)
		switch {
		case s > best.Score || s == best.Score && d > bestDoc:
			best, bestDoc, tied = work{Line: l, Code: text, Score: s}, d, tied[:0]
		case s == best.Score && d == bestDoc && text != best.Code:
			tied = append(tied, l)
		}
	}
	best.Ambiguous = slices.ContainsFunc(tied, func(l int) bool { return alternatives(lines, best.Line, l) })
	return best
}

// alternatives reports whether lines a < b of gofmt-formatted code lie in
// two clauses of the same switch or select statement: only one of them
// runs. The clauses are found by indentation: a line lies in the clause
// of the nearest "case" or "default" line above it (or itself) indented
// as much as the clause, and the two clauses belong to one statement when
// no line between them other than a clause's head is indented as little.
func alternatives(lines []string, a, b int) bool {
	if a > b {
		a, b = b, a
	}
	if a < 1 || b > len(lines) {
		return false
	}
	for c := 0; c <= min(tabs(lines[a-1]), tabs(lines[b-1])); c++ {
		ha, hb := clauseHead(lines, a, c), clauseHead(lines, b, c)
		if ha == 0 || hb == 0 || ha == hb {
			continue
		}
		same := true
		for l := ha + 1; l < hb && same; l++ {
			raw := lines[l-1]
			t := strings.TrimSpace(raw)
			same = t == "" || strings.HasPrefix(t, "//") || tabs(raw) > c || tabs(raw) == c && isClauseHead(t)
		}
		if same {
			return true
		}
	}
	return false
}

// clauseHead returns the line of the "case" or "default" indented by c
// tabs whose clause holds line l (l itself when it is one), or 0.
func clauseHead(lines []string, l, c int) int {
	for ; l >= 1; l-- {
		raw := lines[l-1]
		t := strings.TrimSpace(raw)
		if t == "" || strings.HasPrefix(t, "//") || tabs(raw) > c {
			continue
		}
		if tabs(raw) == c && isClauseHead(t) {
			return l
		}
		return 0
	}
	return 0
}

// tabs returns how many tabs start a line.
func tabs(line string) int { return len(line) - len(strings.TrimLeft(line, "\t")) }

// isClauseHead reports whether a trimmed line starts a clause of a switch
// or select.
func isClauseHead(t string) bool {
	return strings.HasPrefix(t, "case ") || strings.HasPrefix(t, "default:")
}

// docHits returns how many distinct words of a line of code (the parts
// of its identifiers: "err" of tw.err, "service" and "unavailable" of
// StatusServiceUnavailable) a doc comment's words (see docWords) hold.
func docHits(text string, doc []string) int {
	var seen []string
	for _, tok := range codeTokens(text) {
		for _, w := range splitIdent(tok) {
			if len(w) < 3 || slices.Contains(seen, w) {
				continue
			}
			seen = append(seen, w)
		}
	}
	n := 0
	for _, w := range seen {
		if slices.ContainsFunc(doc, func(dw string) bool { return wordMatches(w, dw) || wordMatches(dw, w) }) {
			n++
		}
	}
	return n
}

// docWords returns the words of the doc comments of a question's subject
// (the parts of their identifiers: "err" of [ErrHandlerTimeout]) that say
// what it does beyond the question: not stopwords, not the question's
// keywords nor the words of the subject's name, of three letters or more,
// each once.
func docWords(docs []string, q *Question) []string {
	subject, _ := q.subject()
	skip := splitIdent(subject)
	var out []string
	for _, doc := range docs {
		for _, tok := range codeTokens(doc) {
			for _, w := range splitIdent(tok) {
				if len(w) < 3 || stopwords[w] || !isLetters(w) || slices.Contains(out, w) || slices.Contains(skip, w) ||
					slices.ContainsFunc(q.Keywords, func(k Keyword) bool { return wordMatches(w, k.Word) }) {
					continue
				}
				out = append(out, w)
			}
		}
	}
	return out
}

// declaration matches a line that only declares a name and its type.
var declaration = regexp.MustCompile(`^[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\s+[\w.*\[\]]+$`)

// rareShare: a keyword held by at most 1/rareShare of a file's lines of
// code is rare in it.
const rareShare = 50

// lineWords returns the words of a line of code (as codeWords): those of
// its own code, with "goroutine" for a go statement (the line that starts
// one), and those of the calls of the package's functions it makes.
func lineWords(text string, calls func(string) bool) (own, called []string) {
	for i := 0; i < len(text); {
		r := rune(text[i])
		if !(unicode.IsLetter(r) || r == '_' || r >= 0x80) {
			i++
			continue
		}
		j := i
		for j < len(text) && (isWordByte(text[j]) || text[j] >= 0x80) {
			j++
		}
		tok := text[i:j]
		words := append(splitIdent(tok), strings.ToLower(tok))
		if calls != nil && j < len(text) && text[j] == '(' && calls(tok) {
			called = append(called, words...)
		} else {
			own = append(own, words...)
		}
		i = j
	}
	if strings.HasPrefix(text, "go ") {
		own = append(own, "goroutine")
	}
	return own, called
}

// codeTokens returns the identifiers of a line of code.
func codeTokens(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
}

// reaches reports whether the subject reaches the declaration of key
// ("Name" or "Recv.Name").
func (sc *scope) reaches(key string) bool {
	_, ok := sc.reach[key]
	return ok
}

// selNames returns the names of selections.
func selNames(sels []sel) []string {
	out := make([]string, len(sels))
	for i, x := range sels {
		out[i] = x.name
	}
	return out
}

// rareKeywords reports which of the work keywords of a question few lines
// of a file hold (at most 1/rareShare of its lines of code): a rare one
// breaks ties ("goroutine", a go statement, over "cancel" in context.go).
func rareKeywords(lines []string, kws []Keyword) []bool {
	rare := make([]bool, len(kws))
	if len(kws) == 0 {
		return rare
	}
	counts, code := make([]int, len(kws)), 0
	for _, raw := range lines {
		text, _ := codeOf(strings.TrimSpace(raw))
		if strings.Trim(text, " \t{}()") == "" {
			continue
		}
		code++
		words, _ := lineWords(text, nil)
		for i, k := range kws {
			if slices.ContainsFunc(words, func(w string) bool { return wordMatches(w, k.Word) }) {
				counts[i]++
			}
		}
	}
	for i := range kws {
		rare[i] = counts[i]*rareShare <= code
	}
	return rare
}
