package study

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// decl is one top-level declaration of a Go file.
type decl struct {
	Name, Recv string // Recv is the receiver's type name for a method
	RecvVar    string // the receiver's name, "" when it has none
	Kind       string // "func", "method", "type", "const", "var"
	Line, End  int
	Doc        string // the doc comment, as text
	Head       string // the definition on one line, e.g. "const maxOpenFiles = 256"
	body       *ast.BlockStmt
}

// symbol returns the identity of the declaration in package directory dir:
// "context.propagateCancel" or "context.cancelCtx.propagateCancel".
func (d *decl) symbol(dir string) string {
	if d.Recv != "" {
		return dir + "." + d.Recv + "." + d.Name
	}
	return dir + "." + d.Name
}

// display returns e.g. "func (*cancelCtx).propagateCancel" or "const maxOpenFiles".
func (d *decl) display() string {
	switch {
	case d.Recv != "":
		return "method " + d.Recv + "." + d.Name
	default:
		return d.Kind + " " + d.Name
	}
}

// parsedFile is a parsed Go file with its declarations.
type parsedFile struct {
	Path  string // relative, slash-separated
	Dir   string
	src   []byte
	fset  *token.FileSet
	file  *ast.File
	decls []decl
}

// parseFile reads and parses root/rel.
func parseFile(root, rel string) (*parsedFile, error) {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil && f == nil {
		return nil, err
	}
	pf := &parsedFile{Path: rel, Dir: path.Dir(rel), src: src, fset: fset, file: f}
	pf.decls = declsOf(fset, f)
	return pf, nil
}

func declsOf(fset *token.FileSet, f *ast.File) []decl {
	var out []decl
	line := func(p token.Pos) int { return fset.Position(p).Line }
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			dc := decl{Name: d.Name.Name, Kind: "func", Line: line(d.Name.Pos()), End: line(d.End()), Doc: d.Doc.Text(), body: d.Body}
			if d.Recv != nil && len(d.Recv.List) > 0 {
				dc.Kind = "method"
				dc.Recv = recvName(d.Recv.List[0].Type)
				if names := d.Recv.List[0].Names; len(names) > 0 {
					dc.RecvVar = names[0].Name
				}
			}
			head := *d
			head.Body, head.Doc = nil, nil
			dc.Head = oneLine(fset, &head)
			out = append(out, dc)
		case *ast.GenDecl:
			kind := d.Tok.String()
			if kind == "import" {
				continue
			}
			for _, spec := range d.Specs {
				doc := d.Doc.Text()
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Doc != nil {
						doc = s.Doc.Text()
					}
					out = append(out, decl{Name: s.Name.Name, Kind: "type", Line: line(s.Name.Pos()), End: line(s.End()),
						Doc: doc + s.Comment.Text(), Head: "type " + oneLine(fset, s)})
				case *ast.ValueSpec:
					if s.Doc != nil {
						doc = s.Doc.Text()
					}
					head := kind + " " + oneLine(fset, &ast.ValueSpec{Names: s.Names, Type: s.Type, Values: s.Values})
					for _, n := range s.Names {
						if n.Name == "_" {
							continue
						}
						out = append(out, decl{Name: n.Name, Kind: kind, Line: line(n.Pos()), End: line(s.End()),
							Doc: doc + s.Comment.Text(), Head: head})
					}
				}
			}
		}
	}
	return out
}

func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}

var spaces = regexp.MustCompile(`\s+`)

// oneLine prints a node on one line, at most maxHead bytes; a multi-line
// node keeps its first line followed by " … }".
func oneLine(fset *token.FileSet, n ast.Node) string {
	var buf bytes.Buffer
	if err := (&printer.Config{Mode: printer.RawFormat}).Fprint(&buf, fset, n); err != nil {
		return ""
	}
	s := buf.String()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " … }"
	}
	s = spaces.ReplaceAllString(strings.TrimSpace(s), " ")
	const maxHead = 160
	if len(s) > maxHead {
		s = s[:maxHead] + "…"
	}
	return s
}

// firstSentence returns the first sentence of a doc comment, on one line.
func firstSentence(doc string) string {
	doc = spaces.ReplaceAllString(strings.TrimSpace(doc), " ")
	for i := 0; i+1 < len(doc); i++ {
		if doc[i] == '.' && doc[i+1] == ' ' {
			return doc[:i+1]
		}
	}
	const maxSentence = 200
	if len(doc) > maxSentence {
		return doc[:maxSentence] + "…"
	}
	return doc
}

// callees returns the names of the functions and methods called in body by
// plain name (f()) or through a selector on an identifier (x.m()), sorted and
// deduplicated.
func callees(body *ast.BlockStmt) []string {
	if body == nil {
		return nil
	}
	seen := map[string]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch f := c.Fun.(type) {
		case *ast.Ident:
			seen[f.Name] = true
		case *ast.SelectorExpr:
			if _, ok := f.X.(*ast.Ident); ok {
				seen[f.Sel.Name] = true
			}
		}
		return true
	})
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// callSite is one call x.Sel(...) on a value whose declared type (or whose
// package) matches the topic.
type callSite struct {
	Line      int
	Variation string // "select case", "receive", "condition", "return", "argument", "assignment", "statement"
	Text      string // e.g. "ctx.Done()"
}

// callSites returns the calls of method sel in the file on identifiers
// declared with a type whose text mentions a topic stem (parameters,
// results, var declarations), or on an imported package whose name matches
// one.
func callSites(pf *parsedFile, sel string, topic []Keyword) []callSite {
	if pf.file == nil {
		return nil
	}
	matchesTopic := func(s string) bool {
		ls := strings.ToLower(s)
		for _, k := range topic {
			if strings.Contains(ls, k.Word) {
				return true
			}
		}
		return false
	}
	pkgs := map[string]bool{}
	for _, im := range pf.file.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		if matchesTopic(name) {
			pkgs[name] = true
		}
	}
	var out []callSite
	for _, d := range pf.file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		typed := map[string]bool{}
		addFields := func(fl *ast.FieldList) {
			if fl == nil {
				return
			}
			for _, f := range fl.List {
				if matchesTopic(exprText(pf.fset, f.Type)) {
					for _, n := range f.Names {
						typed[n.Name] = true
					}
				}
			}
		}
		addFields(fd.Type.Params)
		addFields(fd.Type.Results)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				addFields(n.Type.Params)
			case *ast.ValueSpec:
				if n.Type != nil && matchesTopic(exprText(pf.fset, n.Type)) {
					for _, id := range n.Names {
						typed[id.Name] = true
					}
				}
			}
			return true
		})
		var stack []ast.Node
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			s, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || s.Sel.Name != sel {
				return true
			}
			x, ok := s.X.(*ast.Ident)
			if !ok || !(typed[x.Name] || pkgs[x.Name]) {
				return true
			}
			out = append(out, callSite{Line: pf.fset.Position(c.Pos()).Line, Variation: variation(stack), Text: x.Name + "." + sel + "()"})
			return true
		})
	}
	return out
}

// variation classifies a call by the node that holds it (stack ends with
// the call).
func variation(stack []ast.Node) string {
	for i := len(stack) - 2; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.UnaryExpr:
			if p.Op != token.ARROW {
				continue
			}
			for j := i - 1; j >= 0 && j >= i-3; j-- {
				if _, ok := stack[j].(*ast.CommClause); ok {
					return "select case"
				}
			}
			return "receive"
		case *ast.CommClause:
			return "select case"
		case *ast.IfStmt, *ast.BinaryExpr, *ast.SwitchStmt:
			return "condition"
		case *ast.ReturnStmt:
			return "return"
		case *ast.CallExpr:
			return "argument"
		case *ast.AssignStmt, *ast.ValueSpec:
			return "assignment"
		case *ast.ExprStmt:
			return "statement"
		case *ast.ParenExpr:
			continue
		default:
			return "expression"
		}
	}
	return "expression"
}

func exprText(fset *token.FileSet, e ast.Expr) string {
	var buf bytes.Buffer
	if err := printer.Fprint(&buf, fset, e); err != nil {
		return ""
	}
	return buf.String()
}

// wordLines returns the 1-indexed lines of src on which word occurs as a
// whole word (after a dot when dotted), skipping lines in [from, to].
func wordLines(src []byte, word string, dotted bool, from, to int) []int {
	var out []int
	line := 1
	start := 0
	for i := 0; i <= len(src); i++ {
		if i < len(src) && src[i] != '\n' {
			continue
		}
		if line < from || line > to {
			if hasWord(src[start:i], word, dotted) {
				out = append(out, line)
			}
		}
		line++
		start = i + 1
	}
	return out
}

func hasWord(b []byte, word string, dotted bool) bool {
	w := []byte(word)
	for off := 0; ; {
		i := bytes.Index(b[off:], w)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(w)
		before := i == 0 || !isWordByte(b[i-1])
		if dotted {
			before = i > 0 && b[i-1] == '.'
		}
		if before && (end == len(b) || !isWordByte(b[end])) {
			return true
		}
		off = i + 1
	}
}
