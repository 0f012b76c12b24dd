package study

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/refine-go/refine/iterate"
)

// patterns is the PatternAgent: for each pattern finding of its gaps it
// scans the files of the tree that mention the pattern's identifier most
// (at most patternFiles), collects every call of it on a topic value,
// cites up to patternExamples of them spread over different files, and
// describes the similarities and variations (how the call is used).
func (w *researcher) patterns(ctx context.Context, s *Notes, t iterate.Task) (Notes, error) {
	part := Notes{}
	for _, g := range t.Gaps {
		f := s.find(g.Target)
		if f == nil || f.Kind != KindPattern {
			continue
		}
		sel := strings.TrimPrefix(f.Key, "pattern:")
		type site struct {
			file string
			callSite
		}
		var sites []site
		for _, p := range w.ix.rank([]Keyword{{Word: strings.ToLower(sel), Explicit: true}}, patternFiles, nil) {
			if ctx.Err() != nil {
				return Notes{}, context.Cause(ctx)
			}
			pf, err := parseFile(w.ix.root, p)
			if err != nil {
				continue
			}
			for _, cs := range callSites(pf, sel, s.Topic) {
				sites = append(sites, site{p, cs})
			}
		}
		if len(sites) == 0 {
			continue
		}
		slices.SortFunc(sites, func(a, b site) int {
			if c := strings.Compare(a.file, b.file); c != 0 {
				return c
			}
			return cmp.Compare(a.Line, b.Line)
		})
		// Examples: the first of each file, round after round, so that they
		// show the pattern across the tree.
		var ex []string
		for round := 0; len(ex) < patternExamples; round++ {
			added := false
			seen := map[string]int{}
			for _, st := range sites {
				k := seen[st.file]
				seen[st.file]++
				if k == round && len(ex) < patternExamples {
					ex = append(ex, cite(st.file, st.Line))
					added = true
				}
			}
			if !added {
				break
			}
		}
		cs := make([]callSite, len(sites))
		files := map[string]bool{}
		for i, st := range sites {
			cs[i] = st.callSite
			files[st.file] = true
		}
		part.Findings = append(part.Findings, Finding{
			ID: f.ID, Key: f.Key, Kind: KindPattern,
			Description: patternDescription(sel, cs, len(sites), len(files)),
			Citations:   ex, Claims: []Claim{{Confidence: patternConfidence(len(sites))}},
			Impact: f.Impact, Relevance: f.Relevance, Tags: f.Tags, Examples: len(sites),
		})
	}
	return part, nil
}

// patternDescription returns e.g. "Callers use x.Done(): 12 examples in 9
// files (select case ×7, receive ×3, condition ×2)".
func patternDescription(sel string, sites []callSite, n, files int) string {
	counts := map[string]int{}
	var kinds []string
	var sample string
	for _, s := range sites {
		if counts[s.Variation] == 0 {
			kinds = append(kinds, s.Variation)
		}
		counts[s.Variation]++
		if sample == "" {
			sample = s.Text
		}
	}
	slices.SortStableFunc(kinds, func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ×%d", k, counts[k])
	}
	ex := "examples"
	if n == 1 {
		ex = "example"
	}
	fl := "files"
	if files == 1 {
		fl = "file"
	}
	return fmt.Sprintf("Callers use %s (%s): %d %s in %d %s (%s)", sel, sample, n, ex, files, fl, strings.Join(parts, ", "))
}
