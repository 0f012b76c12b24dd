package study

import (
	"bytes"
	"context"
	"fmt"
	"go/build"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/refine-go/refine/iterate"
)

// platform is a build configuration the verifier evaluates constraints for.
type platform struct {
	os, arch string
	cgo      bool
}

// platforms are the configurations the verifier checks: the common ports,
// each with and without cgo.
var platforms = func() []platform {
	var out []platform
	for _, p := range []string{
		"aix/ppc64", "android/arm64", "darwin/amd64", "darwin/arm64", "dragonfly/amd64", "freebsd/386",
		"freebsd/amd64", "freebsd/arm64", "illumos/amd64", "ios/arm64", "js/wasm", "linux/386", "linux/amd64",
		"linux/arm", "linux/arm64", "linux/loong64", "linux/mips64le", "linux/ppc64le", "linux/riscv64",
		"linux/s390x", "netbsd/amd64", "openbsd/amd64", "openbsd/arm64", "plan9/386", "plan9/amd64",
		"solaris/amd64", "wasip1/wasm", "windows/386", "windows/amd64", "windows/arm64",
	} {
		os, arch, _ := strings.Cut(p, "/")
		out = append(out, platform{os, arch, true}, platform{os, arch, false})
	}
	return out
}()

// verify is the verification agent (PlanAgent): for each conflict of its
// gaps it reads every file of the identifier's package, finds every
// definition of the identifier, evaluates each file's build constraints
// (//go:build lines and _GOOS/_GOARCH file names) on every platform, and
// gives the ground truth: when no platform builds two different
// definitions, the findings are build-constraint variants that each hold
// on their platforms, and the conflict is resolved with all definitions
// cited. Otherwise the conflict is genuine and stays open.
func (w *researcher) verify(ctx context.Context, s *Notes, t iterate.Task) (Notes, error) {
	part := Notes{}
	for _, g := range t.Gaps {
		if ctx.Err() != nil {
			return Notes{}, context.Cause(ctx)
		}
		c := s.conflict(g.Target)
		if c == nil || c.Resolved {
			continue
		}
		f := s.find(c.Finding)
		if f == nil || f.File == "" {
			continue
		}
		dir := path2dir(f.File)
		var variants []Variant
		for _, i := range w.ix.byDir[dir] {
			p := w.ix.files[i].Path
			pf, err := parseFile(w.ix.root, p)
			if err != nil {
				continue
			}
			for _, d := range pf.decls {
				if d.symbol(pf.Dir) == f.Key {
					variants = append(variants, Variant{File: p, Line: d.Line, Head: d.Head, Source: agentName(&t), Task: t.ID()})
				}
			}
		}
		if len(variants) < 2 {
			continue
		}
		builds := make([][]bool, len(variants)) // builds[v][p]
		for v := range variants {
			builds[v] = w.buildsOn(variants[v].File)
			variants[v].Platforms = summarize(builds[v])
		}
		clash := ""
		for p := 0; p < len(platforms) && clash == ""; p++ {
			first := -1
			for v := range variants {
				if !builds[v][p] {
					continue
				}
				if first < 0 {
					first = v
				} else if variants[v].Head != variants[first].Head {
					pl := platforms[p]
					clash = fmt.Sprintf("%s/%s builds both %s and %s", pl.os, pl.arch, variants[first].File, variants[v].File)
					break
				}
			}
		}
		name := symbolName(f.Key)
		cites := make([]string, len(variants))
		var b strings.Builder
		for i, v := range variants {
			cites[i] = cite(v.File, v.Line)
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "`%s` on %s (%s)", v.Head, v.Platforms, cites[i])
		}
		if clash != "" {
			// Genuine: report the evidence, leave the conflict open.
			part.Findings = append(part.Findings, Finding{ID: f.ID, Key: f.Key, Kind: KindDefinition,
				Description: fmt.Sprintf("%s has conflicting definitions: %s; %s", name, b.String(), clash),
				Citations:   cites, Claims: []Claim{{Confidence: conflictConfidence}}, Tags: f.Tags, Impact: f.Impact})
			continue
		}
		resolution := fmt.Sprintf("%s is defined per platform by build constraints: %s. The definitions never build together, so each finding holds on its own platforms.",
			name, b.String())
		part.Findings = append(part.Findings, Finding{
			ID: f.ID, Key: f.Key, Kind: KindDefinition, Description: resolution,
			Head: f.Head, File: f.File, Line: f.Line, End: f.End,
			Citations: cites, Claims: []Claim{{Confidence: verifierConfidence}},
			Impact: f.Impact, Relevance: f.Relevance, Tags: f.Tags,
			Variants: variants, Resolves: c.ID, Resolution: resolution,
		})
	}
	return part, nil
}

// buildsOn reports, for each platform, whether the file is built there.
func (w *researcher) buildsOn(rel string) []bool {
	abs := filepath.Join(w.ix.root, filepath.FromSlash(rel))
	src, err := os.ReadFile(abs)
	out := make([]bool, len(platforms))
	if err != nil {
		return out
	}
	for i, p := range platforms {
		ctxt := build.Default
		ctxt.GOOS, ctxt.GOARCH, ctxt.CgoEnabled = p.os, p.arch, p.cgo
		ctxt.OpenFile = func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(src)), nil }
		ok, err := ctxt.MatchFile(filepath.Dir(abs), filepath.Base(abs))
		out[i] = err == nil && ok
	}
	return out
}

// summarize describes the platforms a file builds on: "all platforms",
// "linux, android", "windows/amd64", "linux (cgo)".
func summarize(builds []bool) string {
	all := true
	for _, b := range builds {
		all = all && b
	}
	if all {
		return "all platforms"
	}
	type osInfo struct {
		archs               []string
		total, cgoN, nocgoN int
	}
	var order []string
	info := map[string]*osInfo{}
	for i, p := range platforms {
		oi := info[p.os]
		if oi == nil {
			oi = &osInfo{}
			info[p.os] = oi
			order = append(order, p.os)
		}
		oi.total++
		if !builds[i] {
			continue
		}
		if !slices.Contains(oi.archs, p.arch) {
			oi.archs = append(oi.archs, p.arch)
		}
		if p.cgo {
			oi.cgoN++
		} else {
			oi.nocgoN++
		}
	}
	var parts []string
	for _, o := range order {
		oi := info[o]
		if oi.cgoN+oi.nocgoN == 0 {
			continue
		}
		archsAll := len(oi.archs)*2 == oi.total
		s := o
		if !archsAll {
			s = ""
			for i, a := range oi.archs {
				if i > 0 {
					s += ", "
				}
				s += o + "/" + a
			}
		}
		switch {
		case oi.cgoN > 0 && oi.nocgoN == 0:
			s += " (cgo)"
		case oi.nocgoN > 0 && oi.cgoN == 0:
			s += " (!cgo)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no platform"
	}
	return strings.Join(parts, ", ")
}
