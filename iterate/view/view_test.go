package view

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// The tests view sessions that real loops saved in a checkpoint.Memory: a
// toy loop reads files (coverage) and counts passing tests (a named
// score), spending tokens and a call per task; the tasks of iteration 2 on
// iteration 3 fail.

type toyState struct {
	Read int `json:"read"`
}

const toyFiles = 8

type toyWorker struct{}

func (toyWorker) Assess(_ context.Context, s toyState) (gap.Assessment, error) {
	a := gap.Assessment{FilesAnalyzed: s.Read, EstimatedFiles: toyFiles,
		Scores: map[string]float64{"tests passing": float64(s.Read * 3)}}
	for i := s.Read; i < toyFiles; i++ {
		a.Missing = append(a.Missing, fmt.Sprintf("file%02d.go", i))
	}
	return a, nil
}

func (toyWorker) Work(_ context.Context, _ toyState, t iterate.Task) (iterate.Outcome[toyState], error) {
	if t.Iteration == 3 {
		return iterate.Outcome[toyState]{}, errors.New("flaky <b>tool</b>")
	}
	return iterate.Outcome[toyState]{Part: toyState{Read: 1}, Usage: budget.Usage{Tokens: int64(100 * (t.Iteration + 1)), Calls: 1},
		Output: fmt.Sprintf("read <file%02d.go>", t.Iteration)}, nil
}

func (toyWorker) Integrate(_ context.Context, s toyState, outs []iterate.Outcome[toyState]) (toyState, error) {
	for _, o := range outs {
		if o.Err == nil {
			s.Read = min(s.Read+o.Part.Read, toyFiles)
		}
	}
	return s, nil
}

// runToy runs the toy loop as session in store.
func runToy(t *testing.T, store iterate.Checkpointer, session string, opts ...iterate.Option) *iterate.Result[toyState] {
	t.Helper()
	opts = append([]iterate.Option{iterate.WithCheckpointer(store), iterate.WithSession(session),
		iterate.WithBudget(budget.Limits{Tokens: 50000, Calls: 100})}, opts...)
	res, err := iterate.New(toyWorker{}, opts...).Run(context.Background(), toyState{})
	if res == nil {
		t.Fatal(err)
	}
	return res
}

// Names of the sessions of testStore holding markup.
const (
	markupName     = `<img src=x onerror=alert(1)>`
	markupQuestion = `<script>alert("q")</script> & more`
	schemeName     = `javascript:alert(1)`
)

// testStore returns a store with the sessions:
//
//	done       converged
//	asked      escalated with a question
//	<img …>    escalated, its name and question holding markup
//	javascript:alert(1)  a fork of done, running
func testStore(t *testing.T) *checkpoint.Memory {
	t.Helper()
	m := new(checkpoint.Memory)
	if res := runToy(t, m, "done", iterate.WithMaxIterations(12)); res.Status != iterate.Converged {
		t.Fatalf("done: %s (%s)", res.Status, res.Reason)
	}
	if res := runToy(t, m, "asked", iterate.WithMaxIterations(2),
		iterate.WithConvergence(converge.IterationLimit{Escalate: true})); res.Status != iterate.Escalated {
		t.Fatalf("asked: %s (%s)", res.Status, res.Reason)
	}
	ctx := context.Background()
	c, err := m.Load(ctx, "asked")
	if err != nil {
		t.Fatal(err)
	}
	x := c.Clone()
	x.Session, x.Question, x.Reason, x.Generation, x.Token = markupName, markupQuestion, `<i>why</i>`, 0, 0
	if err := m.Save(ctx, x); err != nil {
		t.Fatal(err)
	}
	d, err := m.Load(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	f := d.Clone()
	f.Session, f.Status, f.Generation, f.Token = schemeName, string(iterate.Running), 0, 0
	f.Origin = checkpoint.Origin{Session: "done", Generation: d.Generation}
	if err := m.Save(ctx, f); err != nil {
		t.Fatal(err)
	}
	return m
}

// get GETs path from h and returns the response and its body.
func get(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost"+path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func newHandler(t *testing.T, store Store, opts ...Option) *Handler {
	t.Helper()
	h, err := New(store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestListing(t *testing.T) {
	h := newHandler(t, testStore(t))
	res, body := get(t, h, "/")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	for _, want := range []string{`data-session="done"`, `data-session="asked"`, `href="session/done"`,
		`href="session/javascript:alert%281%29"`, `forked from <a href="session/done">done</a>`,
		"4 of 4 sessions"} {
		if !strings.Contains(body, want) {
			t.Errorf("listing lacks %q", want)
		}
	}
	_, body = get(t, h, "/?status=escalated")
	if !strings.Contains(body, `data-session="asked"`) || strings.Contains(body, `data-session="done"`) || !strings.Contains(body, "2 of 4 sessions") {
		t.Errorf("status filter: %s", body)
	}
	_, body = get(t, h, "/?q=ALERT")
	if !strings.Contains(body, "2 of 4 sessions") || strings.Contains(body, `data-session="asked"`) {
		t.Errorf("text filter: %s", body)
	}
}

// TestEscaped checks that markup in a session's name, reason and question
// stays text on every page.
func TestEscaped(t *testing.T) {
	h := newHandler(t, testStore(t), Answers(&answers{}))
	_, list := get(t, h, "/")
	_, page := get(t, h, "/session/"+url.PathEscape(markupName))
	for name, body := range map[string]string{"listing": list, "page": page} {
		for _, bad := range []string{"<script>alert", "<img src=x", "<i>why", "<b>tool"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q unescaped", name, bad)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;alert(&#34;q&#34;)&lt;/script&gt; &amp; more") {
			t.Errorf("%s lacks the escaped question", name)
		}
	}
	if !strings.Contains(page, `<h1>&lt;img src=x onerror=alert(1)&gt;</h1>`) {
		t.Error("page lacks the escaped name as its heading")
	}
	_, page = get(t, h, "/session/"+url.PathEscape(schemeName))
	if !strings.Contains(page, `<a href="./done">done</a>`) {
		t.Error("the fork's page lacks its origin's link")
	}
	if strings.Contains(page, `href="javascript:`) || strings.Contains(list, `href="javascript:`) {
		t.Error("a session's name became a javascript: link")
	}
}

// seriesRE matches a chart's metric and series.
var seriesRE = regexp.MustCompile(`data-metric="([^"]*)" data-series="([^"]*)"(?: data-threshold="([^"]*)")?`)

// TestCharts checks that each declared metric's chart holds the session's
// history, with a threshold only where one applies.
func TestCharts(t *testing.T) {
	store := testStore(t)
	h := newHandler(t, store, Metrics(Coverage, Metric{Name: "tests passing"}, Metric{Name: "tokens"},
		Metric{Name: "failed tasks", Threshold: Level(1)}))
	c, err := store.Load(context.Background(), "done")
	if err != nil {
		t.Fatal(err)
	}
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	recs := r.History.Recent
	if len(recs) < 3 {
		t.Fatalf("only %d records", len(recs))
	}
	want := map[string]string{}
	for _, m := range []string{"coverage", "tests passing", "tokens", "failed tasks"} {
		var parts []string
		for i := range recs {
			v, _ := valueOf(&recs[i], m)
			parts = append(parts, strconv.Itoa(recs[i].Iteration)+":"+strconv.FormatFloat(v, 'g', -1, 64))
		}
		want[m] = strings.Join(parts, " ")
	}
	if want["tokens"] == "0:0 1:0" || !strings.Contains(want["failed tasks"], "3:1") {
		t.Fatalf("the toy's history is not what the test expects: %v", want)
	}
	_, body := get(t, h, "/session/done")
	got := map[string]string{}
	thresholds := map[string]string{}
	for _, m := range seriesRE.FindAllStringSubmatch(body, -1) {
		got[m[1]] = m[2]
		if m[3] != "" {
			thresholds[m[1]] = m[3]
		}
	}
	for m, w := range want {
		if got[m] != w {
			t.Errorf("chart %q: series %q, want %q", m, got[m], w)
		}
	}
	if len(got) != 4 {
		t.Errorf("%d charts, want 4: %v", len(got), got)
	}
	wantTh := map[string]string{"coverage": strconv.FormatFloat(r.History.Thresholds.MinCoverage, 'g', -1, 64), "failed tasks": "1"}
	if fmt.Sprint(thresholds) != fmt.Sprint(wantTh) {
		t.Errorf("thresholds %v, want %v", thresholds, wantTh)
	}
	// Without declared metrics: those the loop measured, and the gaps.
	_, body = get(t, newHandler(t, store), "/session/done")
	var names []string
	for _, m := range seriesRE.FindAllStringSubmatch(body, -1) {
		names = append(names, m[1])
	}
	if fmt.Sprint(names) != "[coverage tests passing gaps]" {
		t.Errorf("default charts %v", names)
	}
}

func TestSessionPage(t *testing.T) {
	store := testStore(t)
	h := newHandler(t, store)
	res, body := get(t, h, "/session/done")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	c, _ := store.Load(context.Background(), "done")
	r, _ := iterate.Inspect(c)
	if n := strings.Count(body, "<tr data-iteration="); n != len(r.History.Recent) {
		t.Errorf("%d timeline rows, want %d", n, len(r.History.Recent))
	}
	for _, want := range []string{"flaky &lt;b&gt;tool&lt;/b&gt;", "of the limit", "<td>tokens</td>", "coverage threshold",
		`<span class="status s-converged">converged</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script") || strings.Contains(res.Header.Get("Content-Security-Policy"), "nonce") {
		t.Error("the page of a converged session polls")
	}
	_, body = get(t, h, "/session/asked")
	for _, want := range []string{`id="question"`} {
		if !strings.Contains(body, want) {
			t.Errorf("escalated page lacks %q", want)
		}
	}
	if strings.Contains(body, `<form id="answer"`) {
		t.Error("an answer form without Answers")
	}
	if res, _ := get(t, h, "/session/nosuch"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: status %d", res.StatusCode)
	}
}

// TestLive checks the page of a running session polls its JSON endpoint,
// which follows new generations.
func TestLive(t *testing.T) {
	store := testStore(t)
	h := newHandler(t, store)
	path := "/session/" + url.PathEscape(schemeName)
	res, body := get(t, h, path)
	csp := res.Header.Get("Content-Security-Policy")
	m := regexp.MustCompile(`<script nonce="([^"]+)">`).FindStringSubmatch(body)
	if m == nil || !strings.Contains(csp, "'nonce-"+m[1]+"'") {
		t.Fatalf("running page: no script allowed by its policy %q", csp)
	}
	_, js := get(t, h, path+"/live")
	c, _ := store.Load(context.Background(), schemeName)
	want := fmt.Sprintf(`"generation":%d,"status":"running"`, c.Generation)
	if !strings.Contains(js, want) || !strings.Contains(js, `"final":false`) {
		t.Errorf("live: %s, want %s", js, want)
	}
	c.Generation, c.Token, c.Iteration, c.Status = 0, 0, c.Iteration+1, string(iterate.Converged)
	if err := store.Save(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	_, js = get(t, h, path+"/live")
	if strings.Contains(js, want) || !strings.Contains(js, `"final":true`) {
		t.Errorf("live after a save: %s", js)
	}
}

// answers records answers.
type answers struct {
	mu  sync.Mutex
	got []string
}

func (a *answers) Answer(_ context.Context, session, answer string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, session+": "+answer)
	return nil
}

func TestAnswer(t *testing.T) {
	a := &answers{}
	h := newHandler(t, testStore(t), Answers(a))
	_, body := get(t, h, "/session/asked")
	m := regexp.MustCompile(`<form id="answer" method="post" action="([^"]+)">\s*<input type="hidden" name="token" value="([0-9a-f]+)">`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no answer form: %s", body)
	}
	if m[1] != "./asked/answer" {
		t.Errorf("form action %q", m[1])
	}
	asked, _ := testGen(t, h, "asked")
	other := h.token(markupName, asked)
	post := func(token string, hdr map[string]string) *http.Response {
		form := url.Values{"answer": {"use plan B"}, "generation": {strconv.FormatUint(asked, 10)}}
		if token != "" {
			form.Set("token", token)
		}
		req := httptest.NewRequest(http.MethodPost, "http://localhost/session/asked/answer", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	for name, res := range map[string]*http.Response{
		"no token":     post("", nil),
		"wrong token":  post(strings.Repeat("0", 64), nil),
		"other's":      post(other, nil),
		"cross-site":   post(m[2], map[string]string{"Sec-Fetch-Site": "cross-site"}),
		"cross-origin": post(m[2], map[string]string{"Origin": "https://evil.example"}),
	} {
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, res.StatusCode)
		}
	}
	if len(a.got) != 0 {
		t.Fatalf("refused posts answered: %v", a.got)
	}
	res := post(m[2], map[string]string{"Sec-Fetch-Site": "same-origin"})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "../asked" {
		t.Errorf("answer: status %d, location %q", res.StatusCode, res.Header.Get("Location"))
	}
	if fmt.Sprint(a.got) != "[asked: use plan B]" {
		t.Errorf("answers %v", a.got)
	}
	// Without Answers there is no endpoint.
	rec := httptest.NewRecorder()
	newHandler(t, testStore(t)).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://localhost/session/asked/answer", nil))
	if rec.Code == http.StatusSeeOther || rec.Code == http.StatusOK {
		t.Errorf("answer without Answers: status %d", rec.Code)
	}
}

func TestSettings(t *testing.T) {
	got := settings([][2]string{{"max iterations", "4"}, {"iteration limit", "0"}, {"adaptive", "iterate.Adaptive{Roles:map[:iterate.Role{}]}"},
		{"estimate", ""}, {"history window", "0"}, {"warn-only resources", "0"},
		{"policy", "converge.anyOf[converge.IterationLimit{Escalate:true}, converge.Passing{}]"}})
	want := []setting{{"max iterations", "4", ""},
		{"adaptive", "Adaptive", "Roles: map[:iterate.Role{}]"}, {"estimate", "none", ""},
		{"history window", "default (32)", ""}, {"warn-only resources", "none", ""},
		{"policy", "anyOf", "converge.IterationLimit{Escalate:true}\nconverge.Passing{}"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("settings %v, want %v", got, want)
	}
	// An iteration limit of the budget is shown when set, or when the loop
	// has no other.
	for _, in := range [][][2]string{{{"max iterations", "4"}, {"iteration limit", "9"}}, {{"max iterations", "0"}, {"iteration limit", "0"}}} {
		if got := settings(in); len(got) != 2 {
			t.Errorf("settings(%v) = %v, want both", in, got)
		}
	}
}

func TestFieldsOf(t *testing.T) {
	for in, want := range map[string]string{
		"{Roles:map[], MaxTasks:1, FeedbackLimit:500, EscalateAfter:3}": "Roles: map[]\nMaxTasks: 1\nFeedbackLimit: 500\nEscalateAfter: 3",
		"{A:{B:1, C:2}, D:[x, y]}":                                      "A: {B:1, C:2}\nD: [x, y]",
		"{A:1":                                                          "{A:1",
		"{}":                                                            "{}",
		"{A:(1, B:2}":                                                   "{A:(1, B:2}",
	} {
		if got := fieldsOf(in); got != want {
			t.Errorf("fieldsOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOptions(t *testing.T) {
	for name, opt := range map[string]Option{"metric": Metrics(Metric{}), "answers": Answers(nil), "poll": Poll(0)} {
		if _, err := New(new(checkpoint.Memory), opt); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := New(nil); err == nil {
		t.Error("nil store: no error")
	}
}

// TestReadOnly checks that a damaged newest generation of a directory is
// skipped, named, and left in place.
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	runToy(t, d, "s", iterate.WithMaxIterations(12))
	gens, err := d.Generations(context.Background(), "s")
	if err != nil || len(gens) < 2 {
		t.Fatalf("%d generations, %v", len(gens), err)
	}
	newest := gens[len(gens)-1].Generation
	path := filepath.Join(dir, fmt.Sprintf("s.%020d.ckpt", newest))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, ReadOnly(d))
	res, body := get(t, h, "/session/s")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, fmt.Sprintf("newer generations damaged and skipped: %d)", newest)) {
		t.Errorf("status %d: %s", res.StatusCode, body)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the damaged generation moved: %v", err)
	}
	if res, _ := get(t, h, "/session/nosuch"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: status %d", res.StatusCode)
	}
}

// TestUnmet checks that a loop stopped at its iteration limit shows the
// criteria it did not meet.
func TestUnmet(t *testing.T) {
	m := new(checkpoint.Memory)
	if res := runToy(t, m, "partial", iterate.WithMaxIterations(2)); res.Status != iterate.MaxIterations {
		t.Fatalf("partial: %s (%s)", res.Status, res.Reason)
	}
	c, _ := m.Load(context.Background(), "partial")
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	unmet := r.Decision.Unmet()
	if len(unmet) == 0 {
		t.Fatal("no unmet criteria to show")
	}
	_, body := get(t, newHandler(t, m), "/session/partial")
	for _, u := range unmet {
		if !strings.Contains(body, "<li>"+template.HTMLEscapeString(u.String())+"</li>") {
			t.Errorf("page lacks the unmet criterion %q", u.String())
		}
	}
}

// fixWorker is a toy fix loop: three tests fail, one more passes each
// iteration; the state counts the fixed ones.
type fixWorker struct{}

func (fixWorker) Assess(_ context.Context, fixed int) (gap.Assessment, error) {
	tr := &gap.TestResult{Passed: fixed >= 3}
	for i := fixed; i < 3; i++ {
		tr.Failures = append(tr.Failures, gap.TestCaseFailure{Name: fmt.Sprintf("Test%d", i), Message: "<fails>"})
	}
	return gap.Assessment{Signals: gap.Signals{Tests: tr}, Scores: map[string]float64{"tests passing": float64(fixed)}}, nil
}

func (fixWorker) Work(context.Context, int, iterate.Task) (iterate.Outcome[int], error) {
	return iterate.Outcome[int]{Part: 1}, nil
}

func (fixWorker) Integrate(_ context.Context, fixed int, outs []iterate.Outcome[int]) (int, error) {
	if len(outs) > 0 {
		fixed++
	}
	return fixed, nil
}

// TestChartsFixLoop charts a fix loop's failing tests and passing tests,
// with no threshold (the research thresholds do not apply to it).
func TestChartsFixLoop(t *testing.T) {
	m := new(checkpoint.Memory)
	res, err := iterate.New(fixWorker{}, iterate.WithCheckpointer(m), iterate.WithSession("fix"),
		iterate.WithMaxIterations(6)).Run(context.Background(), 0)
	if res == nil {
		t.Fatal(err)
	}
	c, _ := m.Load(context.Background(), "fix")
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	var failing, passing []string
	for _, rec := range r.History.Recent {
		it := strconv.Itoa(rec.Iteration) + ":"
		failing = append(failing, it+strconv.Itoa(rec.Kinds[gap.TestFailure]))
		passing = append(passing, it+strconv.FormatFloat(rec.Scores["tests passing"], 'g', -1, 64))
	}
	if len(failing) < 2 || failing[0] != "0:3" {
		t.Fatalf("the toy fix loop's history is not what the test expects: %v (%s, %s)", failing, res.Status, res.Reason)
	}
	_, body := get(t, newHandler(t, m, Metrics(FailingTests, Metric{Name: "tests passing"})), "/session/fix")
	got := seriesRE.FindAllStringSubmatch(body, -1)
	if len(got) != 2 {
		t.Fatalf("%d charts, want 2", len(got))
	}
	want := [][2]string{{"gaps:test_failure", strings.Join(failing, " ")}, {"tests passing", strings.Join(passing, " ")}}
	for i, g := range got {
		if g[1] != want[i][0] || g[2] != want[i][1] || g[3] != "" {
			t.Errorf("chart %d: %q %q threshold %q, want %q %q and none", i, g[1], g[2], g[3], want[i][0], want[i][1])
		}
	}
	if !strings.Contains(body, "failing tests") {
		t.Error("the chart's label is not shown")
	}
}

// TestEnvelopeOnly checks that a checkpoint without an engine record shows
// its envelope and why the rest is missing.
func TestEnvelopeOnly(t *testing.T) {
	m := new(checkpoint.Memory)
	if err := m.Save(context.Background(), &checkpoint.Checkpoint{Session: "bare", Status: "escalated", Question: "why?"}); err != nil {
		t.Fatal(err)
	}
	res, body := get(t, newHandler(t, m), "/session/bare")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "no engine record") || !strings.Contains(body, "why?") {
		t.Errorf("status %d: %s", res.StatusCode, body)
	}
}

// TestWholeHistory checks that the timeline of a session whose window
// dropped its early iterations is completed from its older kept
// generations, and that a session lists its forks.
func TestWholeHistory(t *testing.T) {
	m := &checkpoint.Memory{KeepAll: true}
	if res := runToy(t, m, "long", iterate.WithMaxIterations(12), iterate.WithHistoryWindow(2)); res.Status != iterate.Converged {
		t.Fatalf("long: %s (%s)", res.Status, res.Reason)
	}
	ctx := context.Background()
	c, _ := m.Load(ctx, "long")
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.History.Recent) != 2 || r.History.Recent[0].Iteration == 0 {
		t.Fatalf("the newest window: %d records", len(r.History.Recent))
	}
	f := c.Clone()
	f.Session, f.Generation, f.Token, f.Origin = "long-fork", 0, 0, checkpoint.Origin{Session: "long", Generation: c.Generation - 1}
	if err := m.Save(ctx, f); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, newHandler(t, m, Metrics(Metric{Name: "tests passing"})), "/session/long")
	var rows []string
	for _, x := range regexp.MustCompile(`<tr data-iteration="(\d+)"`).FindAllStringSubmatch(body, -1) {
		rows = append(rows, x[1])
	}
	var want []string
	for i := 0; i <= c.Iteration; i++ {
		want = append(want, strconv.Itoa(i))
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("timeline rows %v, want %v", rows, want)
	}
	if m := seriesRE.FindStringSubmatch(body); m == nil || !strings.HasPrefix(m[2], "0:0 1:3 ") {
		t.Errorf("chart over the whole history: %v", m)
	}
	if !strings.Contains(body, `<a id="forks" href="./long/forks">`) {
		t.Error("the session's page lacks the link to its forks")
	}
	if _, forks := get(t, newHandler(t, m), "/session/long/forks"); !strings.Contains(forks, fmt.Sprintf(`<a href="../long-fork">long-fork</a> (from generation %d)`, c.Generation-1)) {
		t.Errorf("the forks page lacks the fork: %s", forks)
	}
}

func TestExtras(t *testing.T) {
	m := testStore(t)
	h := newHandler(t, m, Answers(&answers{}), Extras(func(context.Context) (map[string]Extra, error) {
		return map[string]Extra{"asked": {Holder: "worker <7>", Kind: "plan", Answered: true}}, nil
	}))
	_, body := get(t, h, "/?q=worker")
	if !strings.Contains(body, "<th>Holder</th>") || !strings.Contains(body, "<td>plan</td><td>worker &lt;7&gt;</td>") ||
		!strings.Contains(body, "answered, resumed by worker &lt;7&gt;") || !strings.Contains(body, "1 of 4 sessions") {
		t.Errorf("listing with extras: %s", body)
	}
	_, body = get(t, h, "/session/asked")
	if !strings.Contains(body, `<p id="answered" class="muted">Answered: resumed by worker &lt;7&gt;.</p>`) || strings.Contains(body, `<form id="answer"`) {
		t.Errorf("an answered session's page: %s", body)
	}
	// Answered, and no worker holds it yet.
	waiting := newHandler(t, m, Answers(&answers{}), Extras(func(context.Context) (map[string]Extra, error) {
		return map[string]Extra{"asked": {Kind: "plan", Answered: true}}, nil
	}))
	if _, body := get(t, waiting, "/"); !strings.Contains(body, "answered, waiting for a worker") {
		t.Errorf("listing of an answered session no worker holds: %s", body)
	}
	if _, body := get(t, waiting, "/session/asked"); !strings.Contains(body, "Answered: the session waits for a worker to resume it.") {
		t.Errorf("page of an answered session no worker holds: %s", body)
	}
	_, body = get(t, newHandler(t, m), "/")
	if strings.Contains(body, "<th>Holder</th>") {
		t.Error("a holder column without Extras")
	}
	failing := newHandler(t, m, Extras(func(context.Context) (map[string]Extra, error) { return nil, errors.New("db <down>") }))
	if _, body := get(t, failing, "/"); !strings.Contains(body, "db &lt;down&gt;") || !strings.Contains(body, "4 of 4 sessions") {
		t.Errorf("listing with failing extras: %s", body)
	}
	if res, body := get(t, failing, "/session/asked"); res.StatusCode != http.StatusOK || !strings.Contains(body, "db &lt;down&gt;") {
		t.Errorf("page with failing extras: %d %s", res.StatusCode, body)
	}
}

// refusing is an Answerer that refuses every answer.
type refusing struct{}

func (refusing) Answer(context.Context, string, string) error {
	return errors.New("not escalated <now>")
}

func TestAnswerErrors(t *testing.T) {
	m := testStore(t)
	post := func(h *Handler, answer string) (int, string) {
		gen, _ := testGen(t, h, "asked")
		form := url.Values{"token": {h.token("asked", gen)}, "answer": {answer}, "generation": {strconv.FormatUint(gen, 10)}}
		req := httptest.NewRequest(http.MethodPost, "http://localhost/session/asked/answer", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	a := &answers{}
	h := newHandler(t, m, Answers(a))
	if code, _ := post(h, "  "); code != http.StatusBadRequest {
		t.Errorf("an empty answer: status %d", code)
	}
	if code, _ := post(h, strings.Repeat("x", maxAnswer+1)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a long answer: status %d", code)
	}
	if len(a.got) != 0 {
		t.Errorf("answered: %v", a.got)
	}
	code, body := post(newHandler(t, m, Answers(refusing{})), "yes")
	if code != http.StatusConflict || !strings.Contains(body, "not escalated <now>") {
		t.Errorf("a refused answer: %d %q", code, body)
	}
}

// TestTaskTimeline checks that each iteration of the timeline lists its
// tasks (role, main gap, tokens, outcome and output, escaped) and the
// decision taken on its state, with the criteria it found unmet.
func TestTaskTimeline(t *testing.T) {
	m := new(checkpoint.Memory)
	res := runToy(t, m, "toy", iterate.WithMaxIterations(4))
	_, body := get(t, newHandler(t, m), "/session/toy")
	row := func(n int) string {
		t.Helper()
		re := regexp.MustCompile(`(?s)<tr data-iteration="` + strconv.Itoa(n) + `"[^>]*>(.*?)</tr>`)
		m := re.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no row of iteration %d", n)
		}
		return m[1]
	}
	for _, rec := range res.History.Recent {
		r := row(rec.Iteration)
		if got := strings.Count(r, `<div class="task`); got != len(rec.TaskRuns) {
			t.Errorf("iteration %d: %d tasks shown, the record has %d", rec.Iteration, got, len(rec.TaskRuns))
		}
		for _, tr := range rec.TaskRuns {
			want := template.HTMLEscapeString(tr.Role)
			if tr.Err != "" {
				want = "failed: " + template.HTMLEscapeString(tr.Err)
			} else if tr.Output != "" {
				want = `<pre class="output">` + template.HTMLEscapeString(tr.Output) + `</pre>`
			}
			if !strings.Contains(r, want) {
				t.Errorf("iteration %d: task %+v not shown as %q in\n%s", rec.Iteration, tr, want, r)
			}
			if tr.Tokens > 0 && !strings.Contains(r, " · "+strconv.FormatInt(tr.Tokens, 10)+" tokens") {
				t.Errorf("iteration %d: the task's %d tokens not shown", rec.Iteration, tr.Tokens)
			}
		}
		if strings.Contains(r, "<file") || strings.Contains(r, "<b>tool") {
			t.Errorf("iteration %d: output or error not escaped:\n%s", rec.Iteration, r)
		}
		for _, u := range rec.Unmet {
			if !strings.Contains(r, template.HTMLEscapeString(u.String())) {
				t.Errorf("iteration %d: unmet %q not shown", rec.Iteration, u.String())
			}
		}
	}
	if !strings.Contains(row(3), "failed: flaky &lt;b&gt;tool&lt;/b&gt;") {
		t.Errorf("iteration 3's failed task not shown:\n%s", row(3))
	}
	if last := res.History.Last(); !strings.Contains(row(last.Iteration), "<b>"+last.Verdict.String()+"</b>") {
		t.Errorf("the last state's verdict %s not shown:\n%s", last.Verdict, row(last.Iteration))
	}
}

// TestTaskRows checks how a task's gap and duration read: the target
// beside its kind unless it repeats it, and sub-millisecond durations to
// the microsecond.
func TestTaskRows(t *testing.T) {
	for _, tt := range []struct {
		run      converge.TaskRun
		gap, dur string
	}{
		{converge.TaskRun{Kind: gap.Coverage, Target: "coverage", Duration: 340 * time.Microsecond}, "coverage", "340µs"},
		{converge.TaskRun{Kind: gap.UnansweredQuestion, Target: "why?", Duration: 1500 * time.Millisecond}, "unanswered_question: why?", "1.5s"},
		{converge.TaskRun{Target: "file.go", Duration: 2*time.Millisecond + 400*time.Microsecond}, "file.go", "2ms"},
		{converge.TaskRun{}, "", ""},
	} {
		rows := taskRows([]converge.TaskRun{tt.run})
		if rows[0].Gap != tt.gap || rows[0].Duration != tt.dur {
			t.Errorf("%+v: gap %q, duration %q; want %q, %q", tt.run, rows[0].Gap, rows[0].Duration, tt.gap, tt.dur)
		}
	}
}

// TestDefaultMetrics checks the charts of a session whose host declared
// none: what the loop measured and its gaps, or, for a loop that measured
// nothing and found no gap, its failed tasks and tokens.
func TestDefaultMetrics(t *testing.T) {
	names := func(recs []converge.Record) []string {
		var out []string
		for _, m := range defaultMetrics(recs) {
			out = append(out, m.Name)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		recs []converge.Record
		want []string
	}{
		{"research", []converge.Record{{Coverage: 0.2, Gaps: 2}, {Iteration: 1, Coverage: 0.5, Confidence: 0.8}},
			[]string{"coverage", "confidence", "gaps"}},
		{"fix loop", []converge.Record{{Scores: map[string]float64{"tests passing": 0, "tests failing": 3}, Gaps: 3}},
			[]string{"tests failing", "gaps"}},
		{"agent loop", []converge.Record{{}, {Iteration: 1, Attempt: converge.Attempt{Tasks: 1, FailedTasks: 1, Tokens: 900}}},
			[]string{"failed tasks", "tokens"}},
		{"agent loop, no usage", []converge.Record{{}, {Iteration: 1, Attempt: converge.Attempt{Tasks: 1}}},
			[]string{"failed tasks"}},
	} {
		if got := names(tt.recs); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: charts %v, want %v", tt.name, got, tt.want)
		}
	}
}

// testGen returns the generation of session's newest checkpoint in h's
// store, and that checkpoint.
func testGen(t *testing.T, h *Handler, session string) (uint64, *checkpoint.Checkpoint) {
	t.Helper()
	c, err := h.store.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return c.Generation, c
}
