package study

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

func TestStem(t *testing.T) {
	tests := []struct{ word, want string }{
		{"cancellation", "cancel"},
		{"entries", "entry"},
		{"evicted", "evict"},
		{"retried", "retry"},
		{"expires", "expire"},
		{"contexts", "contex"},
		{"jobs", "job"},
		{"process", "proces"},
		{"caching", "cach"},
		{"need", "need"},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			if got := stem(tt.word); got != tt.want {
				t.Errorf("stem(%q) = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
}

func TestKeywordsOf(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		explicit []string
		want     []Keyword
	}{
		{"stopwords_dropped", "How does the Go standard library implement context cancellation?", nil,
			[]Keyword{{Word: "contex"}, {Word: "cancel"}}},
		{"identifiers_are_explicit", "What does io.Copy do with WithCancel?", nil,
			[]Keyword{{Word: "io"}, {Word: "copy", Explicit: true, Name: "Copy", Qual: "io"}, {Word: "withcancel", Explicit: true, Name: "WithCancel"}}},
		// Issue 32: the package and type a question names scope its answer.
		{"type_qualifier_is_an_identifier", "How does sync.WaitGroup.Wait block?", nil,
			[]Keyword{{Word: "sync"}, {Word: "waitgroup", Explicit: true, Name: "WaitGroup", Qual: "sync"},
				{Word: "wait", Explicit: true, Name: "Wait", Qual: "sync.WaitGroup"}, {Word: "block"}}},
		{"method_after_its_type", "How does http.Server Shutdown wait for Active connections?", nil,
			[]Keyword{{Word: "http"}, {Word: "server", Explicit: true, Name: "Server", Qual: "http"},
				{Word: "shutdown", Explicit: true, Name: "Shutdown", Qual: "http.Server"}, {Word: "wait"}, {Word: "active"}, {Word: "connec"}}},
		{"bracket_keywords", "How do callers observe cancellation?", []string{"Done", "context.Cause"},
			[]Keyword{{Word: "caller"}, {Word: "observ"}, {Word: "cancel"}, {Word: "done", Explicit: true, Name: "Done"},
				{Word: "context"}, {Word: "cause", Explicit: true, Name: "Cause", Qual: "context"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, keywordsOf(tt.text, tt.explicit)); diff != "" {
				t.Errorf("keywords (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseQuestions(t *testing.T) {
	st, err := parseQuestions("default", defaultQuestions)
	if err != nil {
		t.Fatal(err)
	}
	if st.Question == "" || len(st.Questions) != 3 || !st.Questions[0].Critical {
		t.Errorf("default questions = %+v", st)
	}
	bad := []struct{ name, text, want string }{
		{"no_main_question", "critical: Where? [x]\n", `f: no "question:" line`},
		{"second_main_question", "question: a cache?\nquestion: a queue?\n", "f:2: a second main question"},
		{"unknown_directive", "question: a cache?\nasks: what\n", `f:2: unknown directive "asks"`},
		{"missing_directive", "question: a cache?\nwhere is it\n", "f:2: want"},
		{"unbalanced_brackets", "question: a cache? [x\n", "f:1: brackets must close"},
		{"empty_question", "question: [cache]\n", "f:1: empty question"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseQuestions("f", tt.text)
			var qe *QuestionFileError
			if !errors.As(err, &qe) || !errors.Is(err, ErrQuestionFile) {
				t.Fatalf("error %v, want a *QuestionFileError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestSplitIdent(t *testing.T) {
	tests := map[string][]string{
		"propagateCancel": {"propagate", "cancel"},
		"HTTPServer":      {"http", "server"},
		"max_open_files":  {"max", "open", "files"},
		"cancelCtx":       {"cancel", "ctx"},
		"Err":             {"err"},
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if diff := cmp.Diff(want, splitIdent(in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	kws := []Keyword{{Word: "watche"}, {Word: "subscr"}, {Word: "watcher", Explicit: true, Name: "Watcher"}}
	tests := []struct {
		name, ident, doc   string
		wantScore, wantDoc int
	}{
		{"exact_identifier", "Watcher", "", scoreExact, 0},
		{"overlapping_keywords_count_once", "fileChanged", "reports a changed file to the watcher.", scoreName, 1},
		{"name_and_doc", "Subscribe", "adds a subscriber to the watcher", scoreName + scoreName, 2},
		{"unrelated", "Title", "capitalises s", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score, doc := match(tt.ident, splitIdent(tt.ident), tt.doc, kws)
			if score != tt.wantScore || doc != tt.wantDoc {
				t.Errorf("match = %d, %d; want %d, %d", score, doc, tt.wantScore, tt.wantDoc)
			}
		})
	}
}

// TestConfidence checks seed 000's confidence rules: a single agent with a
// weak citation scores low, corroboration by a second agent with a strong
// citation raises it, conflicting information lowers it.
func TestConfidence(t *testing.T) {
	tests := []struct {
		name   string
		claims []Claim
		open   bool
		want   float64
	}{
		{"seed000_single_agent_weak_citation", []Claim{{Source: "ExploreAgent", Confidence: explorerConfidence(false, 0, false)}}, false, 0.55},
		{"explorer_documented_with_keywords_and_uses", []Claim{{Source: "ExploreAgent", Confidence: explorerConfidence(true, 2, true)}}, false, 0.80},
		{"seed000_confirmed_by_second_agent_strong_citation", []Claim{
			{Source: "ExploreAgent", Confidence: explorerConfidence(true, 0, false)},
			{Source: "CitationAgent", Confidence: citationConfidence(true, 1)}}, false, 0.90},
		{"same_agent_twice_is_no_corroboration", []Claim{{Source: "ExploreAgent", Confidence: 0.65}, {Source: "ExploreAgent", Confidence: 0.65}}, false, 0.65},
		{"corroboration_bonus_is_bounded", []Claim{{Source: "A", Confidence: 0.9}, {Source: "B", Confidence: 0.9}, {Source: "C", Confidence: 0.9}, {Source: "D", Confidence: 0.9}}, false, 0.95},
		{"seed000_conflicting_information", []Claim{{Source: "ExploreAgent", Confidence: 0.80}}, true, 0.55},
		{"pattern_three_examples", []Claim{{Source: "PatternAgent", Confidence: patternConfidence(3)}}, false, 0.80},
		{"pattern_two_examples_uncertain", []Claim{{Source: "ExploreAgent", Confidence: patternConfidence(2)}}, false, 0.60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Finding{}
			for _, c := range tt.claims {
				f.addClaim(c)
			}
			if tt.open {
				f.Conflict = "C1"
			}
			f.score()
			if f.Confidence != tt.want {
				t.Errorf("confidence = %.2f, want %.2f", f.Confidence, tt.want)
			}
		})
	}
}

// fixture returns a researcher over testdata/<name>/src and the notes of a
// fresh session on its questions.
func fixture(t *testing.T, name string) (*researcher, Notes) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name, "questions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseQuestions(name, string(b))
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", "testdata", name, "src"))
	if err != nil {
		t.Fatal(err)
	}
	n := Notes{Root: root, Question: st.Question, Topic: st.Topic, Questions: st.Questions}
	var words []string
	for _, k := range allKeywords(&n) {
		words = append(words, k.Word)
	}
	ix, err := buildIndex(context.Background(), root, map[string]bool{"testdata": true}, words)
	if err != nil {
		t.Fatal(err)
	}
	n.Estimate = ix.estimate(st.Topic)
	return &researcher{ix: ix, lines: &lineCounter{ix: ix}, filesPerTask: 20}, n
}

func outcome(iteration, index int, role iterate.RoleName, part Notes) iterate.Outcome[Notes] {
	return iterate.Outcome[Notes]{Task: iterate.Task{Iteration: iteration, Index: index, Role: role}, Part: part}
}

func def(key, file string, line int, head string, conf float64, cites ...string) Finding {
	return Finding{Key: key, Kind: KindDefinition, Description: key, Head: head, File: file, Line: line, End: line,
		Citations: append([]string{cite(file, line)}, cites...), Claims: []Claim{{Confidence: conf}}, Impact: "critical",
		Tags: []Tag{{Question: 0, Score: 4}}}
}

// TestIntegrate checks seed 000's integration process: deduplication,
// merged evidence raising confidence, contradictions flagged as conflicts,
// the verifier's resolution, citation validation, cross-references and the
// coverage update, in task order.
func TestIntegrate(t *testing.T) {
	w, start := fixture(t, "4_conflict")
	ctx := context.Background()
	integrate := func(t *testing.T, s Notes, outs ...iterate.Outcome[Notes]) Notes {
		t.Helper()
		n, err := w.Integrate(ctx, s, outs)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	linux := def("pool.maxOpenHandles", "pool/limit_linux.go", 6, "const maxOpenHandles = 1024", 0.80)
	windows := def("pool.maxOpenHandles", "pool/limit_windows.go", 7, "const maxOpenHandles = 512", 0.80)
	open := def("pool.Pool.Open", "pool/pool.go", 18, "func (p *Pool) Open() (int, error)", 0.65)

	t.Run("seed000_duplicate_skipped", func(t *testing.T) {
		n := integrate(t, start,
			outcome(1, 0, "explore", Notes{Findings: []Finding{open}}),
			outcome(1, 1, "explore", Notes{Findings: []Finding{open}}))
		if len(n.Findings) != 1 || n.Log[1].Duplicates != 1 || n.Findings[0].Confidence != 0.65 {
			t.Errorf("findings %+v, log %+v: want one finding and one duplicate", n.Findings, n.Log)
		}
	})
	t.Run("seed000_enhancement_merges_evidence_and_raises_confidence", func(t *testing.T) {
		pinned := def("pool.Pool.Open", "pool/pool.go", 18, "func (p *Pool) Open() (int, error)", 0.85, "pool/pool.go:32")
		pinned.Pinned = true
		n := integrate(t, start, outcome(1, 0, "explore", Notes{Findings: []Finding{open}}))
		n = integrate(t, n, outcome(2, 0, "citation", Notes{Findings: []Finding{pinned}}))
		f := n.Findings[0]
		if diff := cmp.Diff([]string{"pool/pool.go:18", "pool/pool.go:32"}, f.Citations); diff != "" {
			t.Errorf("citations (-want +got):\n%s", diff)
		}
		if f.Confidence != 0.90 || !f.Pinned || n.Log[1].Enhanced != 1 {
			t.Errorf("confidence %.2f pinned %v log %+v; want 0.90 from two agents", f.Confidence, f.Pinned, n.Log[1])
		}
		if diff := cmp.Diff([]string{"CitationAgent", "ExploreAgent"}, f.sources()); diff != "" {
			t.Errorf("sources (-want +got):\n%s", diff)
		}
	})
	t.Run("seed000_contradiction_flags_conflict", func(t *testing.T) {
		n := integrate(t, start,
			outcome(1, 0, "explore", Notes{Findings: []Finding{linux}}),
			outcome(1, 1, "explore", Notes{Findings: []Finding{windows}}))
		want := []Conflict{{ID: "C1", Key: "pool.maxOpenHandles", Finding: "F001", Iteration: 1,
			A: Side{Source: "ExploreAgent 1.1", Statement: "const maxOpenHandles = 1024", Evidence: "pool/limit_linux.go:6"},
			B: Side{Source: "ExploreAgent 1.2", Statement: "const maxOpenHandles = 512", Evidence: "pool/limit_windows.go:7"}}}
		if diff := cmp.Diff(want, n.Conflicts); diff != "" {
			t.Errorf("conflicts (-want +got):\n%s", diff)
		}
		if f := n.Findings[0]; f.Conflict != "C1" || f.Confidence != conflictConfidence || len(f.Variants) != 2 {
			t.Errorf("finding %+v: want the open conflict to hold it at %.2f", f, conflictConfidence)
		}
		if n.Questions[0].Answered {
			t.Errorf("a question answered only by a conflicted finding counts as answered")
		}

		// The verifier settles it from the tree's build constraints.
		part, err := w.verify(ctx, &n, iterate.Task{Iteration: 2, Role: "verify",
			Gaps: []gap.Gap{{Kind: gap.ConflictingFindings, Target: "C1"}}})
		if err != nil {
			t.Fatal(err)
		}
		n = integrate(t, n, outcome(2, 1, "verify", part))
		c := n.Conflicts[0]
		if !c.Resolved || c.ResolvedBy != "PlanAgent 2.2" || c.ResolvedAt != 2 {
			t.Errorf("conflict %+v: want resolved by PlanAgent 2.2", c)
		}
		if f := n.Findings[0]; f.Conflict != "" || f.Confidence < 0.90 || f.Description != c.Resolution {
			t.Errorf("finding %+v after resolution", f)
		}
		for _, want := range []string{"`const maxOpenHandles = 1024` on android, linux (pool/limit_linux.go:6)",
			"`const maxOpenHandles = 512` on windows (pool/limit_windows.go:7)"} {
			if !strings.Contains(c.Resolution, want) {
				t.Errorf("resolution %q lacks %q", c.Resolution, want)
			}
		}
	})
	t.Run("same_definition_twice_is_no_conflict", func(t *testing.T) {
		twin := linux
		twin.File, twin.Line, twin.Citations = "pool/limit_windows.go", 7, []string{"pool/limit_windows.go:7"}
		n := integrate(t, start,
			outcome(1, 0, "explore", Notes{Findings: []Finding{linux}}),
			outcome(1, 1, "explore", Notes{Findings: []Finding{twin}}))
		if len(n.Conflicts) != 0 || len(n.Findings[0].Variants) != 2 {
			t.Errorf("conflicts %+v, variants %+v", n.Conflicts, n.Findings[0].Variants)
		}
	})
	t.Run("every_citation_must_exist", func(t *testing.T) {
		bogus := def("pool.Pool.Close", "pool/pool.go", 27, "func (p *Pool) Close()", 0.7, "pool/pool.go:9999", "nope.go:1", "pool/pool.go")
		ghost := Finding{Key: "claim:x", Kind: KindClaim, Citations: []string{"ghost.go:3"}, Claims: []Claim{{Confidence: 0.9}}}
		n := integrate(t, start, outcome(1, 0, "explore", Notes{Findings: []Finding{bogus, ghost}}))
		if len(n.Findings) != 1 || len(n.Findings[0].Citations) != 1 || n.Log[0].Dropped != 5 {
			t.Errorf("findings %+v log %+v: want the bad citations and the uncited finding dropped", n.Findings, n.Log[0])
		}
	})
	t.Run("seed000_citation_cross_referencing", func(t *testing.T) {
		// Open's body (lines 18-24) uses maxOpenHandles: a citation of it
		// inside Open links the two findings.
		use := linux
		use.Citations = append(use.Citations, "pool/pool.go:19")
		n := integrate(t, start, outcome(1, 0, "explore", Notes{Findings: []Finding{use, func() Finding {
			f := open
			f.End = 24
			return f
		}()}}))
		if diff := cmp.Diff([]string{"F002"}, n.Findings[0].SeeAlso); diff != "" {
			t.Errorf("see also (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int{1, 2}, n.Findings[0].Refs); diff != "" {
			t.Errorf("citation numbers (-want +got):\n%s", diff)
		}
	})
	t.Run("seed000_coverage_update", func(t *testing.T) {
		n := integrate(t, start,
			outcome(1, 0, "explore", Notes{Analyzed: []string{"pool/pool.go", "pool/limit_linux.go"}}),
			outcome(1, 1, "explore", Notes{Analyzed: []string{"pool/limit_linux.go", "nope.go"}}))
		if diff := cmp.Diff([]string{"pool/limit_linux.go", "pool/pool.go"}, n.Analyzed); diff != "" {
			t.Errorf("analyzed (-want +got):\n%s", diff)
		}
		if a, e := n.coverage(); a != 2 || e != 4 {
			t.Errorf("coverage %d of %d files, want 2 of 4", a, e)
		}
	})
	t.Run("seed000_agent_failure_logged", func(t *testing.T) {
		failed := outcome(1, 0, "explore", Notes{})
		failed.Err = errors.New("boom")
		n := integrate(t, start, failed, outcome(1, 1, "explore", Notes{Analyzed: []string{"pool/pool.go"}}))
		if n.Log[0].Error != "boom" || len(n.Analyzed) != 1 || n.Log[1].Error != "" {
			t.Errorf("log %+v analyzed %v", n.Log, n.Analyzed)
		}
	})
	t.Run("integrate_leaves_the_state_alone", func(t *testing.T) {
		n := integrate(t, start, outcome(1, 0, "explore", Notes{Findings: []Finding{open}}))
		before := n.clone()
		_ = integrate(t, n, outcome(2, 0, "citation", Notes{Findings: []Finding{linux, windows}}))
		if diff := cmp.Diff(before, n); diff != "" {
			t.Errorf("Integrate modified its input (-before +after):\n%s", diff)
		}
	})
}

// TestAssess checks the assessment the gap analysis reads.
func TestAssess(t *testing.T) {
	w, n := fixture(t, "4_conflict")
	n.Analyzed = []string{"pool/pool.go", "unrelated.go"}
	// The finding's evidence, as the verification records it: the
	// identifier the question names is in the code it cites.
	n.Findings = []Finding{{ID: "F001", Description: "d", Confidence: 0.6, Citations: []string{"pool/pool.go:8"},
		Claims: []Claim{{Source: "ExploreAgent"}}, Impact: "critical", Relevance: 1, Tags: []Tag{{Question: 0, Score: 3}},
		Evidence: []Evidence{{Question: 0, Terms: []string{"maxOpenHandles"}}}}}
	n.Conflicts = []Conflict{{ID: "C1", A: Side{Source: "ExploreAgent 1.1", Statement: "x"}, B: Side{Source: "ExploreAgent 1.2", Statement: "y"}}}
	n.Context = []ContextItem{{Text: "how a reaches b (pool/x.go)"}}
	n.answerQuestions()
	a, err := w.Assess(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	if a.FilesAnalyzed != 1 || a.EstimatedFiles != 4 || a.CoverageRatio() != 0.25 || len(a.Missing) != 3 {
		t.Errorf("coverage: %d of %d, missing %v", a.FilesAnalyzed, a.EstimatedFiles, a.Missing)
	}
	if q := a.Questions[0]; !q.Critical || !q.Answered || q.Partial {
		t.Errorf("question 1 = %+v, want answered by F001 (0.60)", q)
	}
	if q := a.Questions[1]; !q.Critical || q.Answered {
		t.Errorf("question 2 = %+v, want unanswered", q)
	}
	gaps, err := gap.Default().Analyze(context.Background(), a, thresholds)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []gap.Kind
	for _, g := range gaps {
		kinds = append(kinds, g.Kind)
	}
	// The five gap types of seed 000, highest priority first (P1, then P2
	// by relevance to the question and severity).
	want := []gap.Kind{gap.UnansweredQuestion, gap.Coverage, gap.Evidence, gap.ConflictingFindings, gap.MissingContext}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("gap kinds (-want +got):\n%s", diff)
	}
	if len(a.WorkRemaining) == 0 {
		t.Errorf("no work remaining")
	}
}

// TestAssessThresholdMetExactly: findings of confidence 0.80 average to
// 0.7999999999999999; the gap analysis and the convergence check agree that
// the 0.80 threshold is met (seed 000: confidence ≥ 0.80), so no confidence
// gap is planned for next to a met criterion.
func TestAssessThresholdMetExactly(t *testing.T) {
	w, n := fixture(t, "4_conflict")
	n.Analyzed = slices.Sorted(slices.Values(n.Estimate))
	for i := range 6 {
		n.Findings = append(n.Findings, Finding{ID: nextID("F", 3, i), Description: "d", Confidence: 0.80,
			Citations: []string{"pool/pool.go:8"}, Claims: []Claim{{Source: "ExploreAgent"}}, Impact: "critical", Relevance: 1})
	}
	a, err := w.Assess(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	if avg := a.AverageConfidence(); avg >= 0.80 {
		t.Fatalf("average confidence %v: the test needs one rounded below 0.80", avg)
	}
	gaps, err := gap.Default().Analyze(context.Background(), a, thresholds)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gaps {
		if g.Kind == gap.Confidence || g.Kind == gap.Evidence {
			t.Errorf("seed000_confidence_0.80_meets_threshold: confidence gap %+v", g)
		}
	}
	d := converge.ThresholdsMet{}.Decide(&converge.History{Current: a, Thresholds: thresholds})
	i := slices.IndexFunc(d.Criteria, func(c converge.Criterion) bool { return c.Name == converge.CriterionConfidence })
	if i < 0 || !d.Criteria[i].Met {
		t.Errorf("seed000_confidence_0.80_meets_threshold: criteria %+v", d.Criteria)
	}
}

func TestPartialAnswer(t *testing.T) {
	n := Notes{Questions: []Question{{Text: "q", Critical: true}}, Findings: []Finding{
		{ID: "F001", Confidence: 0.55, Citations: []string{"a.go:1"}, Tags: []Tag{{Question: 0, Score: 3}}}}}
	n.answerQuestions()
	if q := n.Questions[0]; q.Answered || !q.Partial || len(q.Answer) != 1 {
		t.Errorf("question = %+v, want partially answered by F001", q)
	}
}

func TestSummarize(t *testing.T) {
	only := func(keep func(p platform) bool) []bool {
		out := make([]bool, len(platforms))
		for i, p := range platforms {
			out[i] = keep(p)
		}
		return out
	}
	tests := []struct {
		name   string
		builds []bool
		want   string
	}{
		{"all", only(func(platform) bool { return true }), "all platforms"},
		{"none", only(func(platform) bool { return false }), "no platform"},
		{"one_os", only(func(p platform) bool { return p.os == "windows" }), "windows"},
		{"one_port", only(func(p platform) bool { return p.os == "linux" && p.arch == "arm64" }), "linux/arm64"},
		{"cgo_only", only(func(p platform) bool { return p.os == "darwin" && p.cgo }), "darwin (cgo)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.builds); got != tt.want {
				t.Errorf("summarize = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCallSites(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "context"

func f(ctx context.Context, other interface{ Done() <-chan struct{} }) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	<-ctx.Done()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	<-other.Done()
	return nil
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := parseFile(dir, "p.go")
	if err != nil {
		t.Fatal(err)
	}
	topic := []Keyword{{Word: "contex"}}
	tests := []struct {
		sel  string
		want []callSite
	}{
		{"Done", []callSite{{7, "select case", "ctx.Done()"}, {11, "receive", "ctx.Done()"}}},
		{"Err", []callSite{{8, "return", "ctx.Err()"}, {12, "condition", "ctx.Err()"}}},
		{"Cause", []callSite{{13, "return", "context.Cause()"}}},
	}
	for _, tt := range tests {
		t.Run(tt.sel, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, callSites(pf, tt.sel, topic), cmp.AllowUnexported(callSite{})); diff != "" {
				t.Errorf("call sites (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitCitation(t *testing.T) {
	tests := []struct {
		in   string
		file string
		line int
		ok   bool
	}{
		{"context/context.go:474", "context/context.go", 474, true},
		{"c:/x.go:3", "c:/x.go", 3, true},
		{"a.go", "", 0, false},
		{"a.go:", "", 0, false},
		{"a.go:x", "", 0, false},
		{":3", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			file, line, ok := splitCitation(tt.in)
			if file != tt.file || line != tt.line || ok != tt.ok {
				t.Errorf("splitCitation(%q) = %q, %d, %v", tt.in, file, line, ok)
			}
		})
	}
}

// TestConvergenceDisplay pins the convergence displays of seed 000.
func TestConvergenceDisplay(t *testing.T) {
	assessment := gap.Assessment{Coverage: 0.88, Findings: []gap.Finding{{Confidence: 0.76}},
		Questions: []gap.Question{{Critical: true, Answered: true}, {Critical: true, Answered: true}, {Critical: true, Answered: true}}}
	tests := []struct {
		name     string
		decision converge.Decision
		want     string
	}{
		{"seed000_not_converged", converge.Decision{}, `📊 Convergence Status (Iteration 2)

Criteria Assessment:
  Coverage:             88%  ✅ (threshold: 70%)
  Confidence:           76%  ❌ (threshold: 80%) - BELOW
  Unresolved Conflicts: 0    ✅ (max: 2)
  Critical Questions:   3/3  ✅ (all answered)

Overall: NOT CONVERGED (1 criterion failing)
Action: Continue to Iteration 3

`},
		{"seed000_max_iterations", converge.Decision{Verdict: converge.MaxIterations}, `📊 Convergence Status (Iteration 2)

Criteria Assessment:
  Coverage:             88%  ✅ (threshold: 70%)
  Confidence:           76%  ❌ (threshold: 80%) - BELOW
  Unresolved Conflicts: 0    ✅ (max: 2)
  Critical Questions:   3/3  ✅ (all answered)

Overall: NOT CONVERGED (1 criterion failing)
⚠️  MAX ITERATIONS REACHED (2 of 4)
Action: Exit iteration loop → result aggregation (PARTIAL CONVERGENCE)

`},
		{"seed000_early_exit", converge.Decision{Verdict: converge.EarlyExit}, `✨ High Confidence Reached (Iteration 2)

Coverage: 88% (well above 70% threshold)
Confidence: 76% (well above 80% threshold)

Research quality is exceptionally high. Concluding early to save time.

(Skipped 2 potential iterations)

`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			d := &display{w: &b, max: 4}
			d.observe(iterate.GapsFound{Assessment: assessment})
			d.convergence(2, tt.decision)
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("display (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProgressDisplay(t *testing.T) {
	var b strings.Builder
	d := &display{w: &b, external: map[string]string{"citation": "agent.py"}}
	d.gaps = 5
	d.plan(2, &iterate.Plan{Tasks: []iterate.Task{
		{Role: "explore", Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: "how a reaches b (x.go)"}}},
		{Role: "citation", Gaps: []gap.Gap{{Kind: gap.Evidence, Target: "F001"}, {Kind: gap.Evidence, Target: "F002"}}},
		{Role: "pattern", Gaps: []gap.Gap{{Kind: gap.Pattern, Target: "F003"}}},
	}, Deferred: []gap.Gap{{}}})
	want := `🔄 Iteration 2 - Refinement Analysis

Gaps identified: 5
Refinement agents: 3
Deferred gaps: 1 (next iteration)

[1/3] ExploreAgent - Trace how a reaches b (x.go) (Gap: Architecture)
[2/3] CitationAgent (external: agent.py) - Evidence for 2 findings (F001, …) (Gap: Confidence)
[3/3] PatternAgent - Examples for pattern F003 (Gap: Pattern clarity)

Running refinement agents in parallel... ⏳
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("display (-want +got):\n%s", diff)
	}
}

// TestExplore checks the explorer's choice of files and findings.
func TestExplore(t *testing.T) {
	w, start := fixture(t, "4_conflict")
	ctx := context.Background()
	coverage := func(files ...string) iterate.Task {
		return iterate.Task{Iteration: 2, Role: "explore",
			Gaps: []gap.Gap{{Kind: gap.Coverage, Target: "coverage", Focus: files}}}
	}
	keys := func(part Notes) []string {
		var out []string
		for _, f := range part.Findings {
			out = append(out, f.Key+"@"+f.File)
		}
		return out
	}
	withLinux := start.clone()
	withLinux.Findings = []Finding{{ID: "F001", Key: "pool.maxOpenHandles", Kind: KindDefinition, File: "pool/limit_linux.go", Line: 6,
		Variants: []Variant{{File: "pool/limit_linux.go", Line: 6, Head: "const maxOpenHandles = 1024"}}}}

	t.Run("a_variant_found_later_is_reported", func(t *testing.T) {
		part, err := w.explore(ctx, &withLinux, coverage("pool/limit_windows.go"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"pool.maxOpenHandles@pool/limit_windows.go"}, keys(part)); diff != "" {
			t.Errorf("findings (-want +got):\n%s", diff)
		}
		n, err := w.Integrate(ctx, withLinux, []iterate.Outcome[Notes]{outcome(2, 0, "explore", part)})
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Conflicts) != 1 || n.Conflicts[0].Iteration != 2 {
			t.Errorf("conflicts %+v, want one found in iteration 2", n.Conflicts)
		}
	})
	t.Run("a_known_definition_is_not_reported_again", func(t *testing.T) {
		part, err := w.explore(ctx, &withLinux, coverage("pool/limit_linux.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(part.Findings) != 0 || len(part.Analyzed) != 1 {
			t.Errorf("part = %+v, want the file analyzed and nothing new", part)
		}
	})
	t.Run("files_per_task_bounds_the_reading", func(t *testing.T) {
		w1 := *w
		w1.filesPerTask = 1
		part, err := w1.explore(ctx, &start, coverage(start.Estimate...))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(start.Estimate[:1], part.Analyzed); diff != "" {
			t.Errorf("analyzed (-want +got):\n%s", diff)
		}
	})
	t.Run("a_question_reads_the_files_that_match_it", func(t *testing.T) {
		task := iterate.Task{Iteration: 1, Role: "explore",
			Gaps: []gap.Gap{{Kind: gap.UnansweredQuestion, Target: start.Questions[1].Text}}}
		w2 := *w
		w2.filesPerTask = 1
		part, err := w2.explore(ctx, &start, task)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"pool/pool.go"}, part.Analyzed); diff != "" {
			t.Errorf("analyzed (-want +got):\n%s", diff)
		}
		if len(part.Findings) == 0 || part.Findings[0].Key != "pool.errLimit" || part.Findings[0].Impact != "critical" {
			t.Errorf("first finding %+v, want errLimit, the identifier asked about", part.Findings)
		}
	})
	t.Run("work_leaves_the_state_alone", func(t *testing.T) {
		before := withLinux.clone()
		for _, role := range []iterate.RoleName{roleExplore, roleCitation, rolePattern, roleVerify} {
			if _, err := w.Work(ctx, withLinux, iterate.Task{Iteration: 2, Role: role, Gaps: []gap.Gap{{Kind: gap.Evidence, Target: "F001"}}}); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(before, withLinux); diff != "" {
			t.Errorf("Work modified the state (-before +after):\n%s", diff)
		}
	})
}

// TestReportMetricsWindow: the per-iteration table comes from the engine's
// records (Result.History.Recent, which keeps the most recent assessments
// only; the oldest one kept is the baseline of the gains) joined with what
// the notes recorded of each iteration (Notes.Progress); the report says
// which earlier iterations are missing.
func TestReportMetricsWindow(t *testing.T) {
	tests := []struct {
		name  string
		first int
		want  string
	}{
		{name: "every_iteration_kept", first: 1, want: ""},
		{name: "earlier_iterations_not_kept", first: 33, want: "  (iterations 1-32 not kept)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &iterate.Result[Notes]{Status: iterate.MaxIterations, Iterations: tt.first}
			res.History.Recent = []converge.Record{{Iteration: tt.first - 1, Coverage: 0.25},
				{Iteration: tt.first, Coverage: 0.5, Confidence: 0.7, Attempt: converge.Attempt{Tasks: 2}}}
			res.State.Progress = []Progress{{Iteration: tt.first, NewFiles: 3, NewFindings: 4, NewCitations: 5}}
			var b strings.Builder
			NewReport(res, "s", "d", 40).WriteText(&b)
			_, table, _ := strings.Cut(b.String(), "Iteration Metrics\n")
			got, _, _ := strings.Cut(table, "  Iter")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("before the table (-want +got):\n%s", diff)
			}
			if !strings.Contains(table, "+3     +4        +5         50%       0.70        +25pp") {
				t.Errorf("table row missing:\n%s", table)
			}
		})
	}
}

// TestEarnedAnswers: a question is answered only by findings whose cited
// code the verification found its keywords in: every identifier it names
// (in the code, not in a doc comment), or, for a question naming none, two
// of its keywords in findings of two files. Confident findings without
// such evidence leave it partially answered.
func TestEarnedAnswers(t *testing.T) {
	q := func(text string) Question {
		body, explicit, _ := splitKeywords(text)
		return Question{Text: body, Critical: true, Keywords: keywordsOf(body, explicit)}
	}
	root := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(filepath.FromSlash(rel))), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pool/timeouts.go", "package pool\n\n// apply applies ReadTimeout and WriteTimeout.\nfunc apply() {\n\tsetRead(0)\n}\n\nfunc applyBoth(s *S) {\n\tsetRead(s.ReadTimeout)\n\tsetWrite(s.WriteTimeout)\n}\n")
	write("pool/gone.go", "package pool\n\nfunc clientGone(r *request) {\n\tr.cancel() // the client disconnected\n}\n")
	write("pool/conn.go", "package pool\n\nfunc onDisconnect(c *client) {\n\tc.request.abort()\n}\n")
	// Requests and clients are everywhere: words too common to be evidence.
	for _, f := range []string{"a", "b", "c", "d"} {
		write("pool/"+f+".go", "package pool\n\nfunc newClientRequest"+f+"(c *client) *request {\n\treturn &request{client: c}\n}\n")
	}
	n := Notes{Root: root, Questions: []Question{
		q("Where are ReadTimeout and WriteTimeout applied?"),
		q("What happens to an in-flight request when its client disconnects?"),
		q("How does the pool refuse a handle over the limit? [errLimit]"),
	}}
	var words []string
	for _, k := range allKeywords(&n) {
		words = append(words, k.Word)
	}
	ix, err := buildIndex(context.Background(), root, nil, words)
	if err != nil {
		t.Fatal(err)
	}
	w := &researcher{ix: ix, lines: &lineCounter{ix: ix}, filesPerTask: 20}
	finding := func(id, file string, line, end int, qi int) Finding {
		return Finding{ID: id, Description: id, Confidence: 0.8, File: file, Line: line, End: end, Citations: []string{cite(file, line)},
			Claims: []Claim{{Source: "ExploreAgent"}}, Tags: []Tag{{Question: qi, Score: 4}}}
	}
	tests := []struct {
		name     string
		findings []Finding
		want     [3]string // per question: answered, partial or ""
	}{
		{"doc_comment_is_no_evidence", []Finding{finding("F001", "pool/timeouts.go", 4, 6, 0)}, [3]string{"partial", "", ""}},
		{"identifiers_in_the_code", []Finding{finding("F001", "pool/timeouts.go", 8, 11, 0)}, [3]string{"answered", "", ""}},
		{"one_identifier_of_two", []Finding{finding("F001", "pool/timeouts.go", 9, 9, 0)}, [3]string{"partial", "", ""}},
		{"two_findings_cover_both", []Finding{finding("F001", "pool/timeouts.go", 9, 9, 0), finding("F002", "pool/timeouts.go", 10, 10, 0)},
			[3]string{"answered", "", ""}},
		{"no_identifiers_one_file", []Finding{finding("F003", "pool/gone.go", 3, 5, 1)}, [3]string{"", "partial", ""}},
		{"no_identifiers_two_files", []Finding{finding("F003", "pool/gone.go", 3, 5, 1), finding("F004", "pool/conn.go", 3, 5, 1)},
			[3]string{"", "answered", ""}},
		{"common_words_only", []Finding{finding("F005", "pool/a.go", 3, 5, 1), finding("F006", "pool/b.go", 3, 5, 1)},
			[3]string{"", "partial", ""}},
		{"low_confidence_with_evidence", []Finding{func() Finding { f := finding("F001", "pool/timeouts.go", 8, 11, 0); f.Confidence = 0.5; return f }()},
			[3]string{"partial", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := n
			m.Questions = slices.Clone(n.Questions)
			m.Findings = tt.findings
			w.checkEvidence(&m)
			m.answerQuestions()
			for i, q := range m.Questions {
				got := ""
				switch {
				case q.Answered:
					got = "answered"
				case q.Partial:
					got = "partial"
				}
				if got != tt.want[i] {
					t.Errorf("question %d (%s): %q, want %q; evidence %+v", i+1, q.Text, got, tt.want[i], evidenceOf(m.Findings))
				}
			}
		})
	}
}

func evidenceOf(fs []Finding) map[string][]Evidence {
	m := map[string][]Evidence{}
	for _, f := range fs {
		m[f.ID] = f.Evidence
	}
	return m
}

// TestAgentAreaMakesSecurityAndPerformanceGaps (issue 32): an agent's
// finding in the security or performance area, below the confidence
// threshold, is a Security or Performance gap (seed 000's gap types, for
// the SecurityAgent and the PerformanceAgent). Catches a reply schema
// (the reply is decoded from the JSON an agent prints), or an assessment,
// that drops the area: the gap is then Confidence.
func TestAgentAreaMakesSecurityAndPerformanceGaps(t *testing.T) {
	w, n := fixture(t, "4_conflict")
	n.Analyzed = slices.Sorted(slices.Values(n.Estimate))
	// The reply as an agent prints it (its schema in the README).
	reply, err := parseReply([]byte(`{"findings": [
		{"description": "the pool never bounds a client's open handles", "confidence": 0.5, "citations": ["pool/pool.go:8", "pool/pool.go:9"], "area": "Security"},
		{"description": "every Get scans the whole free list", "confidence": 0.5, "citations": ["pool/pool.go:8", "pool/pool.go:9"], "area": "performance"},
		{"description": "an area research does not know", "confidence": 0.5, "citations": ["pool/pool.go:8", "pool/pool.go:9"], "area": "style"}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	part := w.fromReply(&n, reply)
	for i := range part.Findings {
		f := part.Findings[i]
		f.ID = nextID("F", 3, i)
		f.Claims = []Claim{{Source: "SecurityAgent", Confidence: 0.5}, {Source: "PerformanceAgent", Confidence: 0.5}}
		n.Findings = append(n.Findings, f)
	}
	a, err := w.Assess(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	gaps, err := gap.Default().Analyze(context.Background(), a, thresholds)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]gap.Kind{}
	for _, g := range gaps {
		kinds[g.Target] = g.Kind
	}
	want := map[string]gap.Kind{"F001": gap.Security, "F002": gap.Performance, "F003": gap.Confidence}
	for id, k := range want {
		if kinds[id] != k {
			t.Errorf("gap of %s: %q, want %q (gaps %v)", id, kinds[id], k, kinds)
		}
	}
}
