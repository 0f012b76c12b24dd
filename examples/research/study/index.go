package study

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// fileInfo is what the index knows of one Go file.
type fileInfo struct {
	Path  string // slash-separated, relative to the root
	Dir   string // path.Dir(Path)
	Lines int
	// Hits counts the occurrences of each index word (case-insensitive) in
	// the file's content; a word in the file's path counts pathBonus more.
	Hits []int32
}

// index is a read-only text index of the Go files of a tree: built once per
// process (it is not part of the checkpointed state: it is a pure function
// of the tree and the keywords), then shared by the concurrent tasks.
type index struct {
	root   string
	words  []string
	wordAt map[string]int
	files  []fileInfo // sorted by Path
	byPath map[string]int
	byDir  map[string][]int
}

// pathBonus is the weight of a keyword in a file's path: a file named after
// a keyword is relevant however rarely its content repeats the word.
const pathBonus = 5

// ErrNoFiles is returned when the tree holds no Go file to research.
var ErrNoFiles = errors.New("no Go files")

// buildIndex walks root and counts, in every non-test Go file outside the
// skipped directories (and outside directories whose name starts with "." or
// "_"), the occurrences of each word.
func buildIndex(ctx context.Context, root string, skip map[string]bool, words []string) (*index, error) {
	ix := &index{root: root, words: words, wordAt: map[string]int{}, byPath: map[string]int{}, byDir: map[string][]int{}}
	for i, w := range words {
		ix.wordAt[w] = i
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // unreadable entries are skipped
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (skip[name] || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		ix.files = append(ix.files, fileInfo{Path: rel, Dir: path.Dir(rel)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", root, err)
	}
	if len(ix.files) == 0 {
		return nil, fmt.Errorf("%s: %w", root, ErrNoFiles)
	}
	slices.SortFunc(ix.files, func(a, b fileInfo) int { return strings.Compare(a.Path, b.Path) })

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0) * 2)
	for i := range ix.files {
		g.Go(func() error {
			if gctx.Err() != nil {
				return context.Cause(gctx)
			}
			f := &ix.files[i]
			src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
			if err != nil {
				return nil // vanished or unreadable: no hits
			}
			f.Lines = countLines(src)
			low := bytes.ToLower(src)
			lpath := strings.ToLower(f.Path)
			f.Hits = make([]int32, len(words))
			for j, w := range words {
				n := int32(bytes.Count(low, []byte(w)))
				if strings.Contains(lpath, w) {
					n += pathBonus
				}
				f.Hits[j] = n
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i := range ix.files {
		ix.byPath[ix.files[i].Path] = i
		ix.byDir[ix.files[i].Dir] = append(ix.byDir[ix.files[i].Dir], i)
	}
	return ix, nil
}

// countLines returns the number of lines of src (a last line without a
// newline counts).
func countLines(src []byte) int {
	n := bytes.Count(src, []byte{'\n'})
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// hits returns the occurrences of word in file i.
func (ix *index) hits(i int, word string) int {
	j, ok := ix.wordAt[word]
	if !ok {
		return 0
	}
	return int(ix.files[i].Hits[j])
}

// Estimate rule: a file is relevant to the topic when at least
// min(2, len(topic)) topic keywords each occur estimateHits times in it (a
// keyword in its path counts as that many).
const estimateHits = 4

// estimate returns the files relevant to the topic, most relevant first:
// the estimate of relevant files that coverage is measured against.
func (ix *index) estimate(topic []Keyword) []string {
	if pkgs := (&Question{Keywords: topic}).packages(); len(pkgs) > 0 {
		return ix.estimateScoped(topic, pkgs)
	}
	topic = ix.uncommon(topic)
	need := min(2, len(topic))
	type cand struct {
		path  string
		score int
	}
	var cands []cand
	for i := range ix.files {
		strong, score := 0, 0
		for _, k := range topic {
			h := ix.hits(i, k.Word)
			if h >= estimateHits {
				strong++
			}
			score += min(h, 50)
		}
		if strong >= need {
			cands = append(cands, cand{ix.files[i].Path, score})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.path
	}
	return out
}

// estimateScoped is the estimate of a topic that names the packages of
// its identifiers ("sync.Once"): the files of those packages in which one
// of its identifiers occurs estimateHits times, most hits first. Issue 32:
// the words of the question ("make", "sure", "runs", "only") made 506 files
// of the tree relevant to sync.Once, a coverage no research reaches.
func (ix *index) estimateScoped(topic []Keyword, pkgs []string) []string {
	type cand struct {
		path  string
		score int
	}
	var cands []cand
	for i := range ix.files {
		if !slices.Contains(pkgs, path.Base(ix.files[i].Dir)) {
			continue
		}
		best := 0
		for _, k := range topic {
			if identifierKeyword(k) {
				best = max(best, ix.hits(i, k.Word))
			}
		}
		if best >= estimateHits {
			cands = append(cands, cand{ix.files[i].Path, best})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.path
	}
	return out
}

// commonShare is the share of the tree's files beyond which a topic word
// is too common to say which files are relevant ("run", "only", "make").
const commonShare = 10

// uncommon returns the topic's keywords held by at most 1/commonShare of
// the files, or all of them when every one is more common.
func (ix *index) uncommon(topic []Keyword) []Keyword {
	var out []Keyword
	for _, k := range topic {
		j, ok := ix.wordAt[k.Word]
		if !ok {
			continue
		}
		df := 0
		for i := range ix.files {
			if ix.files[i].Hits[j] > 0 {
				df++
			}
		}
		if df*commonShare <= len(ix.files) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return topic
	}
	return out
}

// rank returns the files in which at least min(2, len(kws)) of the
// keywords occur, by descending score (explicit keywords weigh double), at
// most n of them, skipping those for which skip returns true.
func (ix *index) rank(kws []Keyword, n int, skip func(path string) bool) []string {
	need := min(2, len(kws))
	type cand struct {
		path  string
		score int
	}
	var cands []cand
	for i := range ix.files {
		if skip != nil && skip(ix.files[i].Path) {
			continue
		}
		present, score := 0, 0
		for _, k := range kws {
			h := ix.hits(i, k.Word)
			if h == 0 {
				continue
			}
			present++
			w := 1
			if k.Explicit {
				w = 2
			}
			score += w * min(h, 20)
		}
		if present >= need && score > 0 {
			cands = append(cands, cand{ix.files[i].Path, score})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	if len(cands) > n {
		cands = cands[:n]
	}
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.path
	}
	return out
}

// lineCounter validates citations: it knows the line counts of the indexed
// files and counts those of other files under the root on demand. Safe for
// concurrent use.
type lineCounter struct {
	ix    *index
	mu    sync.Mutex
	extra map[string]int // -1: missing
}

// lines returns the line count of rel, or -1 when it is not a readable file
// inside the root.
func (lc *lineCounter) lines(rel string) int {
	if i, ok := lc.ix.byPath[rel]; ok {
		return lc.ix.files[i].Lines
	}
	if rel == "" || path.IsAbs(rel) || strings.HasPrefix(path.Clean(rel), "..") || path.Clean(rel) != rel {
		return -1
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if n, ok := lc.extra[rel]; ok {
		return n
	}
	if lc.extra == nil {
		lc.extra = map[string]int{}
	}
	n := -1
	if src, err := os.ReadFile(filepath.Join(lc.ix.root, filepath.FromSlash(rel))); err == nil {
		n = countLines(src)
	}
	lc.extra[rel] = n
	return n
}

// valid reports whether a citation "file:line" names an existing line.
func (lc *lineCounter) valid(citation string) bool {
	file, line, ok := splitCitation(citation)
	if !ok {
		return false
	}
	n := lc.lines(file)
	return n >= 1 && line >= 1 && line <= n
}

// splitCitation splits "file:line".
func splitCitation(c string) (file string, line int, ok bool) {
	i := strings.LastIndexByte(c, ':')
	if i <= 0 {
		return "", 0, false
	}
	n := 0
	for _, r := range c[i+1:] {
		if r < '0' || r > '9' || n > 1e8 {
			return "", 0, false
		}
		n = n*10 + int(r-'0')
	}
	if i+1 == len(c) {
		return "", 0, false
	}
	return c[:i], n, true
}

func cite(file string, line int) string { return fmt.Sprintf("%s:%d", file, line) }
