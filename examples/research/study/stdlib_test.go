package study_test

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/refine-go/refine/examples/research/study"
	"github.com/refine-go/refine/iterate"
)

// stdlibQuestions are 12 questions about net/http, context, sync and
// encoding/json (issue 32), with the line of the standard library that does
// the work, judged by hand against the code of Go 1.26: its file and a
// substring of it (any of a few where several lines do it).
var stdlibQuestions = []struct {
	q    string
	file string
	line []string
	// best: the expected line is the first answer's; otherwise it is
	// only among the answers.
	best bool
}{
	{q: "How does http.Server Shutdown wait for active connections to close?", file: "net/http/server.go",
		line: []string{"for c := range s.activeConn {", "if s.closeIdleConns() {"}, best: true},
	{q: "How many redirects does http.Client follow?", file: "net/http/client.go",
		line: []string{`stopped after 10 redirects`}, best: true},
	{q: "How does http.Transport pick an idle connection to reuse for a request?", file: "net/http/transport.go",
		line: []string{"t.idleConn[w.key]"}},
	// Not tw.code = StatusOK (the handler's own status, in the other
	// case of the same select).
	{q: "What status does http.TimeoutHandler reply with when the handler times out?", file: "net/http/server.go",
		line: []string{"w.WriteHeader(StatusServiceUnavailable)"}, best: true},
	{q: "How does context.AfterFunc run its function in a goroutine after the context is canceled?", file: "context/context.go",
		line: []string{"go a.f()"}, best: true},
	{q: "How does context.WithDeadline cancel the context when its deadline is exceeded?", file: "context/context.go",
		line: []string{"c.cancel(true, DeadlineExceeded, cause)"}, best: true},
	{q: "How does context.WithCancel propagate cancellation to child contexts?", file: "context/context.go",
		line: []string{"child.cancel(false", "p.children[child] = struct{}{}"}, best: true},
	{q: "How does sync.Once record that the function is done?", file: "sync/once.go",
		line: []string{"o.done.Load()", "o.done.Store(true)"}, best: true},
	{q: "What does sync.WaitGroup.Add do when the counter goes negative?", file: "sync/waitgroup.go",
		line: []string{`panic("sync: negative WaitGroup counter")`}, best: true},
	{q: "What does sync.Pool Get return when the pool is empty and New is nil?", file: "sync/pool.go",
		line: []string{"if x == nil && p.New != nil {"}, best: true},
	{q: "How does json.Decoder DisallowUnknownFields reject an unknown field?", file: "encoding/json/decode.go",
		// The first answer is the variant of GOEXPERIMENT=jsonv2
		// (v2_stream.go: RejectUnknownMembers).
		line: []string{`json: unknown field %q`}},
	{q: "How does json.Marshal escape HTML characters in strings?", file: "encoding/json/encode.go",
		line: []string{"encOpts{escapeHTML: true}"}, best: true},
}

// minFirst is how many of stdlibQuestions must be answered first by the
// line that does the work (issue 32's goal: at least 10 of 12).
const minFirst = 10

// TestStandardLibraryAnswers (issue 32, items 7 and 8) runs the 12
// questions on the Go standard library under GOROOT/src, offline. The
// rules it guards, for each question: no answer is off-topic (code outside
// the package the question names: syscall.Shutdown for http.Server
// Shutdown, time.AfterFunc for context.AfterFunc, runtime code for
// sync.WaitGroup, crypto/tls.Server for http.Server were answers); the
// run converges exactly where earned: converged (and the question
// answered) if and only if an answer cites the line that does the work,
// its file:line quoting the file; the answers of the table's questions
// cite it (first, where best), at least minFirst of them first; coverage
// is measured against an estimate the research can cover. Mutations
// caught: the package scope dropped (Question.packages returning nil:
// answers cite database/sql and net for context.WithCancel); the estimate
// built from the question's words (estimateScoped unused: coverage 0.07 to
// 0.51, max_iterations); the doc comment's tie-break dropped in workLine
// (d := 0: question 4 stays open at max_iterations, ambiguous between
// tw.code = StatusOK and w.WriteHeader(StatusServiceUnavailable), so
// neither converged nor earned, and 9 of 12 first); that and the ambiguity
// rule of earnedScoped dropped (question 4 converges on tw.code =
// StatusOK: converged where not earned). The 12 run
// in parallel; under -race each takes about 3 s of CPU (most of it reading
// the tree).
func TestStandardLibraryAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the whole standard library")
	}
	goroot := os.Getenv("GOROOT")
	if goroot == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Skipf("go env GOROOT: %v", err)
		}
		goroot = strings.TrimSpace(string(out))
	}
	src := filepath.Join(goroot, "src")
	if _, err := os.Stat(filepath.Join(src, "net", "http", "server.go")); err != nil {
		t.Skipf("no standard library source: %v", err)
	}
	var mu sync.Mutex
	first := 0
	t.Run("questions", func(t *testing.T) {
		for i, tt := range stdlibQuestions {
			t.Run(strconv.Itoa(i+1), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				loop, err := study.New(ctx, study.Args{Root: src, Skip: []string{"testdata", "vendor", "cmd"},
					Questions: "question: " + tt.q + "\ncritical: " + tt.q + "\n"})
				if err != nil {
					t.Fatal(err)
				}
				res, err := iterate.New(loop.Worker, loop.Options...).Run(ctx, loop.Initial)
				if err != nil {
					t.Fatal(err)
				}
				rep := study.NewReport(res, loop.Session, "memory", loop.MaxIterations)
				q := rep.Questions[0]
				pkg := path.Dir(tt.file)
				found := -1
				var got []string
				for j, a := range q.Answer {
					for _, c := range a.Citations {
						if path.Dir(c[:strings.LastIndexByte(c, ':')]) != pkg && !strings.HasPrefix(c, pkg+"/") {
							t.Errorf("%s: answer %s cites %s, outside %s (off-topic)", tt.q, a.ID, c, pkg)
						}
					}
					file, code, _ := strings.Cut(a.Work, ": ")
					file, _, _ = strings.Cut(file, ":")
					for _, want := range tt.line {
						if file == tt.file && strings.Contains(code, want) && found < 0 {
							found = j
						}
					}
					if a.Work != "" {
						checkWorkLine(t, src, a.Work)
					}
					got = append(got, a.Work)
				}
				converged := (rep.Status == "converged" || rep.Status == "early_exit") && q.Status == "answered"
				earned := found >= 0
				switch {
				case converged && !earned:
					t.Errorf("%s: converged where not earned: no answer does the work at %s %q; answers' lines: %q", tt.q, tt.file, tt.line, got)
				case !converged && earned:
					t.Errorf("%s: earned but %s, question %s (%s)", tt.q, rep.Status, q.Status, rep.Reason)
				case !converged:
					t.Errorf("%s: %s, question %s (%s), answers' lines: %q; want it converged, answered at %s %q", tt.q, rep.Status, q.Status, rep.Reason, got, tt.file, tt.line)
				case tt.best && found > 0:
					t.Errorf("%s: the line that does the work is answer %d, not the first (%s)", tt.q, found+1, q.Answer[0].Work)
				}
				if converged && found == 0 {
					mu.Lock()
					first++
					mu.Unlock()
				}
			})
		}
	})
	if first < minFirst {
		t.Errorf("%d of %d questions answered first by the line that does the work, want at least %d", first, len(stdlibQuestions), minFirst)
	}
}

// checkWorkLine checks that "file:line: code" quotes the file's line.
func checkWorkLine(t *testing.T, root, work string) {
	t.Helper()
	loc, code, ok := strings.Cut(work, ": ")
	file, line, ok2 := strings.Cut(loc, ":")
	n, err := strconv.Atoi(line)
	if !ok || !ok2 || err != nil {
		t.Errorf("work line %q is not file:line: code", work)
		return
	}
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		t.Error(err)
		return
	}
	lines := strings.Split(string(src), "\n")
	if n < 1 || n > len(lines) || !strings.Contains(lines[n-1], strings.TrimSuffix(code, "…")) {
		t.Errorf("work line %q does not quote %s:%d", work, file, n)
	}
}
