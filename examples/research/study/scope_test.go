package study

import (
	"strings"
	"testing"
)

// TestIdentifierInConflictNotAnswered (issue 32, item 7): a question is
// not answered while the identifier it asks about is in an open conflict,
// even when another finding has the evidence; it is once the conflict is
// resolved. Catches the rule dropped (inConflict ignored in
// answerQuestions).
func TestIdentifierInConflictNotAnswered(t *testing.T) {
	q := Question{Text: "What is the maximum? [maxOpenHandles]", Critical: true, Keywords: keywordsOf("What is the maximum?", []string{"maxOpenHandles"})}
	disputed := Finding{ID: "F001", Key: "pool.maxOpenHandles", Kind: KindDefinition, File: "pool/limit_linux.go", Line: 6, End: 6,
		Confidence: 0.55, Citations: []string{"pool/limit_linux.go:6"}, Tags: []Tag{{Question: 0, Score: 4}}, Conflict: "C1",
		Evidence: []Evidence{{Question: 0, Terms: []string{"maxOpenHandles"}}}}
	user := Finding{ID: "F002", Key: "pool.open", Kind: KindDefinition, File: "pool/pool.go", Line: 10, End: 14,
		Confidence: 0.80, Citations: []string{"pool/pool.go:10"}, Tags: []Tag{{Question: 0, Score: 3}},
		Evidence: []Evidence{{Question: 0, Terms: []string{"maxOpenHandles"}}}}
	n := Notes{Questions: []Question{q}, Findings: []Finding{disputed, user}, Conflicts: []Conflict{{ID: "C1", Key: disputed.Key, Finding: "F001"}}}
	n.answerQuestions()
	if got := n.Questions[0]; got.Answered || !got.Partial {
		t.Errorf("with maxOpenHandles in open conflict C1: %+v, want partially answered", got)
	}
	n.Conflicts[0].Resolved, n.Findings[0].Conflict = true, ""
	n.answerQuestions()
	if got := n.Questions[0]; !got.Answered {
		t.Errorf("after C1 is resolved: %+v, want answered", got)
	}
}

// TestScopedAnswer (issue 32, items 7 and 8): a question that names a
// package is answered only by a finding of that package about its
// subject, with a line that does the work, and not while one of its best
// lines is Ambiguous. Catches Evidence.About or the work line not required
// (earnedScoped counting every qualifying finding), and the ambiguity rule
// dropped (best_line_ambiguous answered).
func TestScopedAnswer(t *testing.T) {
	text := "How does http.Server Shutdown wait for active connections?"
	q := Question{Text: text, Critical: true, Keywords: keywordsOf(text, nil)}
	if got := q.packages(); len(got) != 1 || got[0] != "http" {
		t.Fatalf("packages = %v, want [http]", got)
	}
	if name, recv := q.subject(); name != "Shutdown" || recv != "Server" {
		t.Fatalf("subject = %s of %s, want Shutdown of Server", name, recv)
	}
	finding := func(id, file string, ev Evidence) Finding {
		ev.Question = 0
		return Finding{ID: id, Key: "x." + id, Kind: KindDefinition, File: file, Line: 1, End: 9, Confidence: 0.8,
			Citations: []string{file + ":1"}, Tags: []Tag{{Question: 0, Score: 4}}, Evidence: []Evidence{ev}}
	}
	tests := []struct {
		name     string
		findings []Finding
		answered bool
	}{
		{"off_topic_syscall_shutdown", []Finding{finding("F001", "syscall/syscall_linux.go", Evidence{Terms: []string{"Shutdown"}, Work: "syscall/syscall_linux.go:3", WorkScore: 4})}, false},
		{"no_line_does_the_work", []Finding{finding("F001", "net/http/server.go", Evidence{Terms: []string{"Shutdown"}, About: true})}, false},
		{"only_subject_words", []Finding{finding("F001", "net/http/server.go", Evidence{Terms: []string{"Shutdown"}, About: true, Work: "net/http/server.go:3", WorkScore: 1})}, false},
		{"the_work_in_the_package", []Finding{finding("F001", "net/http/server.go", Evidence{Terms: []string{"Shutdown"}, About: true, Work: "net/http/server.go:3", WorkScore: 4})}, true},
		{"best_line_ambiguous", []Finding{
			finding("F001", "net/http/server.go", Evidence{Terms: []string{"Shutdown"}, About: true, Work: "net/http/server.go:3", WorkScore: 4}),
			finding("F002", "net/http/server.go", Evidence{Terms: []string{"Shutdown"}, About: true, Work: "net/http/server.go:5", WorkScore: 4, Ambiguous: true})}, false},
		{"ambiguous_below_the_best", []Finding{
			finding("F001", "net/http/server.go", Evidence{Terms: []string{"Shutdown"}, About: true, Work: "net/http/server.go:3", WorkScore: 4}),
			finding("F002", "net/http/server.go", Evidence{Terms: []string{"Shutdown"}, About: true, Work: "net/http/server.go:5", WorkScore: 2, Ambiguous: true})}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Notes{Questions: []Question{q}, Findings: tt.findings}
			n.answerQuestions()
			if got := n.Questions[0].Answered; got != tt.answered {
				t.Errorf("answered = %v, want %v", got, tt.answered)
			}
		})
	}
}

// TestWorkLine (issue 32, item 8): the line of a body that does the work
// the question asks about, not the call of a helper whose name holds the
// words (c.propagateCancel), not a comment. Catches a called name counted
// as the work (the called words scoring 2 in workLine).
func TestWorkLine(t *testing.T) {
	src := `func (wg *WaitGroup) Add(delta int) {
	// Negative counter?
	state := wg.state.Add(uint64(delta) << 32)
	if v < 0 {
		panic("sync: negative WaitGroup counter")
	}
	wg.checkNegative()
}
func defaultCheckRedirect(req *Request, via []*Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}
func (c *cancelCtx) propagateCancel(parent Context, child canceler) {
	c.propagateCancel(parent, c)
	child.cancel(false, parent.Err(), Cause(parent))
}`
	lines := strings.Split(src, "\n")
	funcs := map[string]bool{"checkNegative": true, "propagateCancel": true}
	tests := []struct {
		q        string
		from, to int
		want     string
	}{
		{"What does sync.WaitGroup.Add do when the counter goes negative?", 2, 8, `panic("sync: negative WaitGroup counter")`},
		{"How many redirects does http.Client follow?", 10, 14, `return errors.New("stopped after 10 redirects")`},
		{"How does context.WithCancel propagate cancellation to child contexts?", 16, 18, "child.cancel(false, parent.Err(), Cause(parent))"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			q := Question{Text: tt.q, Keywords: keywordsOf(tt.q, nil)}
			wl := workLine(lines, tt.from, tt.to, &q, func(n string) bool { return funcs[n] }, nil, nil)
			code, score := wl.Code, wl.Score
			if code != tt.want || score < minWorkScore {
				t.Errorf("work line %q (score %d), want %q", code, score, tt.want)
			}
		})
	}
}

// TestWorkLineAmbiguous (issue 32, item 8): when lines of two clauses of
// one select match the question as well, the doc comment of the subject
// tells them apart, else the work line is Ambiguous; lines that tie
// elsewhere (one loop, two selects) are not. Catches the doc words
// ignored (d := 0 in workLine: tw.code = StatusOK, ambiguous) and
// alternatives answering always false (no ambiguity: converged on
// tw.code = StatusOK) or always true (the loop's tie ambiguous).
func TestWorkLineAmbiguous(t *testing.T) {
	src := `func (h *timeoutHandler) ServeHTTP(w ResponseWriter, r *Request) {
	select {
	case <-done:
		if !tw.wroteHeader {
			tw.code = StatusOK
		}
	// The deadline.
	case <-ctx.Done():
		switch err := ctx.Err(); err {
		default:
			w.WriteHeader(StatusServiceUnavailable)
		}
	}
}
func (s *Server) closeIdle() {
	for c := range s.conns {
		c.status = closed
		s.status = StatusIdle
	}
}
func propagate() {
	select {
	case <-done:
		child.status = StatusOK
	default:
	}
	go func() {
		select {
		case <-child.Done():
			w.status = StatusGone
		}
	}()
}`
	lines := strings.Split(src, "\n")
	text := "What status does http.TimeoutHandler reply with when the handler times out?"
	q := Question{Text: text, Keywords: keywordsOf(text, nil)}
	doc := docWords([]string{"TimeoutHandler returns a Handler that responds with a 503 Service Unavailable error when h runs too long."}, &q)
	tests := []struct {
		name     string
		from, to int
		doc      []string
		want     string
		ambig    bool
	}{
		{"select_clauses_without_doc", 2, 13, nil, "tw.code = StatusOK", true},
		{"select_clauses_told_apart_by_doc", 2, 13, doc, "w.WriteHeader(StatusServiceUnavailable)", false},
		{"one_loop", 16, 20, nil, "c.status = closed", false},
		{"two_selects", 22, 32, nil, "child.status = StatusOK", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wl := workLine(lines, tt.from, tt.to, &q, nil, tt.doc, nil)
			if wl.Code != tt.want || wl.Ambiguous != tt.ambig {
				t.Errorf("workLine = %q (ambiguous %v), want %q (ambiguous %v)", wl.Code, wl.Ambiguous, tt.want, tt.ambig)
			}
		})
	}
}
