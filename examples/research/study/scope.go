package study

import (
	"go/ast"
	"path"
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
	reach map[string]bool
}

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
	return sc.reach[strings.TrimPrefix(f.Key, path.Dir(f.File)+".")]
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
	sc := &scope{pkgs: pkgs, subject: subject, reach: map[string]bool{}}
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
			}
		}
	}
	type item struct {
		r     declRef
		depth int
	}
	var queue []item
	add := func(r declRef, depth int) {
		if !sc.reach[r.key()] {
			sc.reach[r.key()] = true
			queue = append(queue, item{r, depth})
		}
	}
	for _, r := range byName[subject] {
		if recv != "" && r.d.Recv != recv {
			continue
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
	lower := strings.ToLower(subject)
	for _, r := range all {
		if r.d.body != nil && slices.ContainsFunc(references(r.d.body), func(n string) bool {
			return n != subject && strings.ToLower(n) == lower
		}) {
			add(r, 2)
		}
	}
	// A body reaches the functions it names, the types it names with their
	// methods, and the methods it selects of its own receiver's type, of
	// the subject's type or of a type it names (c.propagateCancel after
	// &cancelCtx{}): a method name alone (Lock) says nothing of its type.
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if it.depth >= maxReach || it.r.d.body == nil {
			continue
		}
		names := references(it.r.d.body)
		types := []string{it.r.d.Recv, recv, subject}
		for _, name := range names {
			for _, r := range byName[name] {
				if r.d.Kind == "type" {
					types = append(types, name)
				}
			}
		}
		for _, name := range names {
			methods := 0
			for _, r := range byName[name] {
				if r.d.Kind == "method" {
					methods++
				}
			}
			for _, r := range byName[name] {
				switch {
				case r.d.Kind == "func":
					add(r, it.depth+1)
				case r.d.Kind == "method" && (methods == 1 || slices.Contains(types, r.d.Recv)):
					// e.marshal: the only method of its name.
					add(r, it.depth+1)
				}
			}
		}
		for _, m := range all {
			if m.d.Kind == "method" && m.d.Recv != "" && m.d.Recv != it.r.d.Recv && slices.Contains(types[3:], m.d.Recv) {
				add(m, it.depth+1)
			}
		}
	}
	return sc
}

// maxReach is how many steps of references from the subject's
// definitions the scope follows.
const maxReach = 3

// references returns the identifiers a body names (calls, selectors,
// plain names), deduplicated.
func references(body *ast.BlockStmt) []string {
	seen := map[string]bool{}
	var out []string
	ast.Inspect(body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && !seen[id.Name] {
			seen[id.Name] = true
			out = append(out, id.Name)
		}
		return true
	})
	return out
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

// workLine returns the line of a definition that does the work the
// question asks about: among the lines of its body (comments and braces
// aside), the one that holds the most of the question's work keywords
// (each counting two), or else the most words of its subject on a line
// that does not name the subject itself (the line a flag named after it
// leads to). It returns the line's number, its code and its score; 0 when
// no line holds any.
func workLine(lines []string, from, to int, q *Question) (line int, code string, score int) {
	kws := q.workKeywords()
	subject, _ := q.subject()
	subjWords := splitIdent(subject)
	lowSubject := strings.ToLower(subject)
	// A keyword few lines of the file hold weighs double: "goroutine" (a go
	// statement) over "cancel" in context.go.
	rare := make([]bool, len(kws))
	if len(kws) > 0 {
		counts := make([]int, len(kws))
		code := 0
		for _, raw := range lines {
			text, _ := codeOf(strings.TrimSpace(raw))
			if strings.Trim(text, " \t{}()") == "" {
				continue
			}
			code++
			words := lineWords(text)
			for i, k := range kws {
				if slices.ContainsFunc(words, func(w string) bool { return wordMatches(w, k.Word) }) {
					counts[i]++
				}
			}
		}
		for i := range kws {
			rare[i] = counts[i]*rareShare <= code
		}
	}
	for l := max(from, 1); l <= min(to, len(lines)); l++ {
		text, literals := codeOf(strings.TrimSpace(lines[l-1]))
		if text = strings.TrimSpace(text); strings.Trim(text, "{}()") == "" {
			continue
		}
		words, litWords := lineWords(text), codeWords(literals)
		s := 0
		for i, k := range kws {
			if slices.ContainsFunc(words, func(w string) bool { return wordMatches(w, k.Word) }) {
				s += 2
				if rare[i] {
					s += 2
				}
				// A message that names it states what the code does
				// ("stopped after 10 redirects").
				if slices.ContainsFunc(litWords, func(w string) bool { return wordMatches(w, k.Word) }) {
					s++
				}
			}
		}
		// The words of the subject, on a line that does not name it as a
		// whole (d.disallowUnknownFields leads to the line that does the
		// work).
		if subject != "" && !slices.ContainsFunc(codeTokens(text), func(t string) bool { return strings.ToLower(t) == lowSubject }) {
			for _, sw := range subjWords {
				if len(sw) >= 3 && slices.ContainsFunc(words, func(w string) bool { return wordMatches(w, sw) || wordMatches(sw, w) }) {
					s++
				}
			}
		}
		if s > score {
			line, code, score = l, text, s
		}
	}
	return line, code, score
}

// rareShare: a keyword held by at most 1/rareShare of a file's lines of
// code is rare in it.
const rareShare = 50

// lineWords returns the words of a line of code (codeWords), plus
// "goroutine" for a go statement: the line that starts one.
func lineWords(text string) []string {
	words := codeWords(text)
	if strings.HasPrefix(text, "go ") {
		words = append(words, "goroutine")
	}
	return words
}

// codeTokens returns the identifiers of a line of code.
func codeTokens(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
}
