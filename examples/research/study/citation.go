package study

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/refine-go/refine/iterate"
)

// pin is the CitationAgent: for each finding of its gaps (at most
// pinsPerCitation), it re-reads the definition, pins it to its exact line
// (and those of its build-constraint variants) and looks for its uses in
// the files of its package and in the files analyzed so far, citing up to
// usesPerFinding of them.
func (w *researcher) pin(ctx context.Context, s *Notes, t iterate.Task) (Notes, error) {
	part := Notes{}
	files := map[string]*parsedFile{}
	srcs := map[string][]byte{}
	parse := func(p string) *parsedFile {
		if pf, ok := files[p]; ok {
			return pf
		}
		pf, err := parseFile(w.ix.root, p)
		if err != nil {
			pf = nil
		}
		files[p] = pf
		return pf
	}
	read := func(p string) []byte {
		if src, ok := srcs[p]; ok {
			return src
		}
		src, _ := os.ReadFile(filepath.Join(w.ix.root, filepath.FromSlash(p)))
		srcs[p] = src
		return src
	}
	pinned := 0
	for _, g := range t.Gaps {
		if ctx.Err() != nil {
			return Notes{}, context.Cause(ctx)
		}
		f := s.find(g.Target)
		if f == nil || f.Kind != KindDefinition || f.File == "" || pinned == pinsPerCitation {
			continue
		}
		pf := parse(f.File)
		if pf == nil {
			continue
		}
		i := slices.IndexFunc(pf.decls, func(d decl) bool { return d.symbol(pf.Dir) == f.Key })
		if i < 0 {
			continue // the definition is not where the finding says
		}
		pinned++
		d := &pf.decls[i]
		cites := []string{cite(pf.Path, d.Line)}
		for _, v := range f.Variants {
			if v.File == pf.Path {
				continue
			}
			if vf := parse(v.File); vf != nil {
				if j := slices.IndexFunc(vf.decls, func(x decl) bool { return x.symbol(vf.Dir) == f.Key }); j >= 0 {
					cites = append(cites, cite(vf.Path, vf.decls[j].Line))
				}
			}
		}

		// Uses: the package's files first, then the files analyzed.
		var where []string
		for _, k := range w.ix.byDir[pf.Dir] {
			where = append(where, w.ix.files[k].Path)
		}
		for _, p := range s.Analyzed {
			if path2dir(p) != pf.Dir {
				where = append(where, p)
			}
		}
		// A method whose name other types of the package declare too
		// (ServeHTTP, cancel) is called by that name on all of them: only
		// its calls on the receiver of a method of its own type are its
		// uses ((*deny).ServeHTTP is no use of timeoutHandler.ServeHTTP).
		shared := d.Recv != "" && w.sharedMethod(pf.Dir, d, read)
		uses := 0
		var useCites []string
		for _, p := range where {
			src := read(p)
			if len(src) == 0 || !strings.Contains(string(src), d.Name) {
				continue
			}
			from, to := 0, 0
			if p == pf.Path {
				from, to = d.Line, d.End
			}
			dotted := d.Recv != "" || path2dir(p) != pf.Dir
			for _, l := range wordLines(src, d.Name, dotted, from, to) {
				if slices.Contains(cites, cite(p, l)) || shared && !ownUse(parse(p), read(p), l, d, pf.Dir) {
					continue
				}
				uses++
				if len(useCites) < usesPerFinding {
					useCites = append(useCites, cite(p, l))
				}
			}
		}
		cites = append(cites, useCites...)

		desc := fmt.Sprintf("%s is defined at %s as `%s`", d.display(), cite(pf.Path, d.Line), d.Head)
		if sent := firstSentence(d.Doc); sent != "" {
			desc += "; " + sent
		}
		switch uses {
		case 0:
			desc += " No uses found in its package or the files analyzed."
		case 1:
			desc += fmt.Sprintf(" Used once (%s).", useCites[0])
		default:
			desc += fmt.Sprintf(" Used %d times, e.g. %s.", uses, strings.Join(useCites[:min(2, len(useCites))], ", "))
		}
		part.Findings = append(part.Findings, Finding{
			ID: f.ID, Key: f.Key, Kind: KindDefinition, Description: desc,
			Head: d.Head, File: pf.Path, Line: d.Line, End: d.End, Citations: cites,
			Claims: []Claim{{Confidence: citationConfidence(d.Doc != "", uses)}},
			Impact: f.Impact, Relevance: f.Relevance, Tags: f.Tags,
			Documented: d.Doc != "", Pinned: true, Uses: uses,
		})
	}
	return part, nil
}

// sharedMethod reports whether a type of package dir other than method
// d's declares a method of d's name.
func (w *researcher) sharedMethod(dir string, d *decl, read func(string) []byte) bool {
	re := regexp.MustCompile(`(?m)^func \(\w* ?\*?(\w+)(\[[^\]]*\])?\) ` + regexp.QuoteMeta(d.Name) + `[\[(]`)
	for _, k := range w.ix.byDir[dir] {
		for _, m := range re.FindAllSubmatch(read(w.ix.files[k].Path), -1) {
			if string(m[1]) != d.Recv {
				return true
			}
		}
	}
	return false
}

// ownUse reports whether line l of a file of package dir (parsed pf,
// source src) calls method d on the receiver of a method of d's type
// ("tw.writeHeaderLocked" in a method of timeoutWriter whose receiver is
// tw).
func ownUse(pf *parsedFile, src []byte, l int, d *decl, dir string) bool {
	if pf == nil || pf.Dir != dir {
		return false
	}
	for _, m := range pf.decls {
		if m.Kind == "method" && m.Recv == d.Recv && m.RecvVar != "" && m.Line <= l && l <= m.End {
			lines := bytes.Split(src, []byte("\n"))
			return l <= len(lines) && hasWord(lines[l-1], m.RecvVar+"."+d.Name, false)
		}
	}
	return false
}
