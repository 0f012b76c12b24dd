package view

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// The tests of this file check figures a page shows against the library's
// own values (Result, iterate.Inspect): each names the rule it holds and the
// mutation of the viewer it catches.

// peakWorker's state counts its iterations; its assessments' Score grows
// with them while its "quality" peaks at iteration 2.
type peakWorker struct{}

func (peakWorker) Assess(_ context.Context, n int) (gap.Assessment, error) {
	q := 10 - 3*(n-2)*(n-2)
	return gap.Assessment{Score: float64(n), Scores: map[string]float64{"quality": float64(q)},
		Missing: []string{"more"}}, nil
}

func (peakWorker) Work(context.Context, int, iterate.Task) (iterate.Outcome[int], error) {
	return iterate.Outcome[int]{}, nil
}

func (peakWorker) Integrate(_ context.Context, n int, _ []iterate.Outcome[int]) (int, error) {
	return n + 1, nil
}

// TestBestIsKeepBest: the best iteration shown is the engine's kept best,
// Result.Best.Iteration, by the loop's scorer. Mutation caught: taking it
// from History.BestIteration (the assessments' Score), which says 5.
func TestBestIsKeepBest(t *testing.T) {
	m := new(checkpoint.Memory)
	res, err := iterate.New(peakWorker{}, iterate.WithCheckpointer(m), iterate.WithSession("peak"),
		iterate.WithMaxIterations(5), iterate.WithKeepBest(iterate.ByMetric("quality"))).Run(context.Background(), 0)
	if res == nil || res.Best == nil {
		t.Fatalf("run: %v", err)
	}
	if res.Best.Iteration != 2 {
		t.Fatalf("the loop's best is iteration %d, want 2 (the test's premise)", res.Best.Iteration)
	}
	_, body := get(t, newHandler(t, m), "/session/peak")
	got := regexp.MustCompile(`<td id="best">(\d+)`).FindStringSubmatch(body)
	if got == nil || got[1] != strconv.Itoa(res.Best.Iteration) {
		t.Errorf("best iteration shown %v, want %d", got, res.Best.Iteration)
	}
	stars := regexp.MustCompile(`<tr data-iteration="(\d+)" class="best"`).FindAllStringSubmatch(body, -1)
	if len(stars) != 1 || stars[0][1] != strconv.Itoa(res.Best.Iteration) {
		t.Errorf("timeline marks %v as best, want only %d", stars, res.Best.Iteration)
	}
	if want := "(by metric quality)"; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(body) {
		t.Errorf("the page does not name the scorer %q", want)
	}

	// Without WithKeepBest there is no best to show.
	if res, _ := iterate.New(peakWorker{}, iterate.WithCheckpointer(m), iterate.WithSession("plain"),
		iterate.WithMaxIterations(3)).Run(context.Background(), 0); res == nil {
		t.Fatal("plain run")
	}
	_, body = get(t, newHandler(t, m), "/session/plain")
	if regexp.MustCompile(`Best iteration|class="best"`).MatchString(body) {
		t.Error("a loop without WithKeepBest shows a best iteration")
	}
	_ = fmt.Sprint
}

// midRun returns a store holding, as session "mid", the checkpoint a toy
// loop saved after its iteration it (status running), and that
// checkpoint's report.
func midRun(t *testing.T, it int) (*checkpoint.Memory, *checkpoint.Checkpoint, *iterate.Report) {
	t.Helper()
	ctx := context.Background()
	all := &checkpoint.Memory{KeepAll: true}
	runToy(t, all, "s", iterate.WithMaxIterations(12))
	gens, err := all.Generations(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gens {
		if g.Iteration != it || g.Status != string(iterate.Running) {
			continue
		}
		c, err := all.LoadGeneration(ctx, "s", g.Generation)
		if err != nil {
			t.Fatal(err)
		}
		m := new(checkpoint.Memory)
		x := c.Clone()
		x.Session, x.Generation, x.Token = "mid", 0, 0
		if err := m.Save(ctx, x); err != nil {
			t.Fatal(err)
		}
		x, _ = m.Load(ctx, "mid")
		r, err := iterate.Inspect(x)
		if err != nil {
			t.Fatal(err)
		}
		return m, x, r
	}
	t.Fatalf("no running generation at iteration %d", it)
	return nil, nil, nil
}

// TestRunningNotBehind: the timeline and the charts of a running session
// end at the iteration its checkpoint (and /live) names, the iteration just
// completed shown from the history's Pending. Mutation caught: the timeline
// built from History.Recent alone, which ends one iteration before.
func TestRunningNotBehind(t *testing.T) {
	m, c, r := midRun(t, 6)
	if r.History.Pending.IsZero() || r.History.Recent[len(r.History.Recent)-1].Iteration != c.Iteration-1 {
		t.Fatalf("premise: the checkpoint of iteration %d holds it as Pending", c.Iteration)
	}
	h := newHandler(t, m, Metrics(Metric{Name: "tokens"}, Metric{Name: "tests passing"}))
	_, js := get(t, h, "/session/mid/live")
	if want := fmt.Sprintf(`"iteration":%d`, c.Iteration); !regexp.MustCompile(want).MatchString(js) {
		t.Fatalf("live: %s, want %s", js, want)
	}
	_, body := get(t, h, "/session/mid")
	rows := regexp.MustCompile(`<tr data-iteration="(\d+)"`).FindAllStringSubmatch(body, -1)
	if len(rows) == 0 || rows[len(rows)-1][1] != strconv.Itoa(c.Iteration) {
		t.Fatalf("the timeline ends at %v, want iteration %d", rows[len(rows)-1:], c.Iteration)
	}
	last := body[regexp.MustCompile(`<tr data-iteration="` + strconv.Itoa(c.Iteration) + `"`).FindStringIndex(body)[0]:]
	if !regexp.MustCompile(`not yet assessed`).MatchString(last) ||
		!regexp.MustCompile(`>`+strconv.FormatInt(r.History.Pending.Tokens, 10)+`[ <]`).MatchString(last) {
		t.Errorf("the pending iteration's row lacks its tokens %d or its state", r.History.Pending.Tokens)
	}
	_, series := chartsOfBody(body)
	if s := series["tokens"]; !regexp.MustCompile(fmt.Sprintf(` %d:%d$`, c.Iteration, r.History.Pending.Tokens)).MatchString(s) {
		t.Errorf("the tokens chart %q does not end at iteration %d with %d", s, c.Iteration, r.History.Pending.Tokens)
	}
	if s := series["tests passing"]; regexp.MustCompile(fmt.Sprintf(` %d:`, c.Iteration)).MatchString(s) {
		t.Errorf("the chart of an assessment's metric %q has a value for the unassessed iteration", s)
	}
}

// chartsOfBody returns each chart's data-series by metric.
func chartsOfBody(body string) ([]string, map[string]string) {
	var names []string
	out := map[string]string{}
	for _, x := range regexp.MustCompile(`data-metric="([^"]*)" data-series="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		names = append(names, x[1])
		out[x[1]] = x[2]
	}
	return names, out
}

// damageNewest runs the toy loop as session "s" in a directory and damages
// its newest generation with damage; it returns the directory and that
// generation.
func damageNewest(t *testing.T, damage func([]byte) []byte) (*checkpoint.Dir, uint64) {
	t.Helper()
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
	if err := os.WriteFile(path, damage(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return d, newest
}

var dataGeneration = regexp.MustCompile(`<body data-generation="(\d+)"`)

// TestDamagedNewestNoReloadLoop: the generation a page follows is the one
// /live tells, so a damaged newest generation (listed, not loadable) does
// not reload the page at every poll. Mutation caught: data-generation set
// to the generation shown (the newest readable), which never equals /live.
func TestDamagedNewestNoReloadLoop(t *testing.T) {
	d, newest := damageNewest(t, func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b })
	h := newHandler(t, ReadOnly(d))
	_, body := get(t, h, "/session/s")
	m := dataGeneration.FindStringSubmatch(body)
	_, js := get(t, h, "/session/s/live")
	var live Live
	if err := json.Unmarshal([]byte(js), &live); err != nil {
		t.Fatal(err)
	}
	if m == nil || m[1] != strconv.FormatUint(live.Generation, 10) {
		t.Errorf("the page follows generation %v, /live tells %d: the page would reload at every poll", m, live.Generation)
	}
	if !strings.Contains(body, `id="damaged"`) || !strings.Contains(body, fmt.Sprintf("generation %d of this session does not read", newest)) {
		t.Error("the page does not warn of the damaged generation")
	}
}

// TestTruncatedNewestWarned: a truncated newest generation (its envelope
// does not read, so Generations does not list it) is named on the page and
// in the list, as inspect names it. Mutations caught: ReadOnly's Load
// going by Generations alone (no warning on the page), the list ignoring
// Sessions' Skipped.
func TestTruncatedNewestWarned(t *testing.T) {
	d, newest := damageNewest(t, func(b []byte) []byte { return b[:len(b)/2] })
	c, err := ReadOnly(d).Load(context.Background(), "s")
	if err != nil || !slices.Equal(c.Skipped, []uint64{newest}) {
		t.Fatalf("ReadOnly's Load: skipped %v, %v; want [%d]", c.Skipped, err, newest)
	}
	h := newHandler(t, ReadOnly(d))
	_, body := get(t, h, "/session/s")
	if !strings.Contains(body, fmt.Sprintf("generation %d of this session does not read; this page shows generation %d", newest, c.Generation)) {
		t.Error("the page does not warn of the truncated generation")
	}
	m := dataGeneration.FindStringSubmatch(body)
	_, js := get(t, h, "/session/s/live")
	if m == nil || !strings.Contains(js, `"generation":`+m[1]+",") {
		t.Errorf("the page follows generation %v, /live: %s", m, js)
	}
	_, list := get(t, h, "/")
	if !strings.Contains(list, fmt.Sprintf("damaged: generation %d does not read; shown: %d", newest, c.Generation)) {
		t.Error("the list does not warn of the truncated generation")
	}
}

// TestDroppedTruthful: "Iterations before N are not kept" only when no kept
// generation holds them. A session of 60 iterations with a window of 2 and
// every generation kept is shown far back (each older generation read adds
// a window), and what is beyond the page's bound is said to be not shown,
// not "not kept". Mutations caught: reading the newest older generations
// one after another (each adds one iteration), and the old wording.
func TestDroppedTruthful(t *testing.T) {
	ctx := context.Background()
	all := &checkpoint.Memory{KeepAll: true}
	run := func(m *checkpoint.Memory, session string) {
		if res, err := iterate.New(peakWorker{}, iterate.WithCheckpointer(m), iterate.WithSession(session),
			iterate.WithMaxIterations(60), iterate.WithHistoryWindow(2)).Run(ctx, 0); res == nil {
			t.Fatal(err)
		}
	}
	run(all, "long")
	_, body := get(t, newHandler(t, all), "/session/long")
	rows := regexp.MustCompile(`<tr data-iteration="(\d+)"`).FindAllStringSubmatch(body, -1)
	first, _ := strconv.Atoi(rows[0][1])
	// The newest window (2) and maxOlder older windows of 2.
	if want := 60 - 2*(maxOlder+1) + 1; first > want {
		t.Errorf("the timeline starts at iteration %d, want at most %d", first, want)
	}
	if strings.Contains(body, "are not kept") || !strings.Contains(body, fmt.Sprintf("Iterations before %d are not shown", first)) {
		t.Errorf("every generation is kept, yet: %s", regexp.MustCompile(`<p id="dropped"[^\n]*`).FindString(body))
	}

	// With the default retention, the earliest iterations are gone: every
	// kept generation's records start after them.
	few := new(checkpoint.Memory)
	run(few, "long")
	gens, _ := few.Generations(ctx, "long")
	earliest := 60
	for _, g := range gens {
		c, _ := few.LoadGeneration(ctx, "long", g.Generation)
		r, _ := iterate.Inspect(c)
		if len(r.History.Recent) > 0 {
			earliest = min(earliest, r.History.Recent[0].Iteration)
		}
	}
	_, body = get(t, newHandler(t, few), "/session/long")
	if !strings.Contains(body, fmt.Sprintf("Iterations before %d are not kept", earliest)) {
		t.Errorf("earliest kept %d: %s", earliest, regexp.MustCompile(`<p id="dropped"[^\n]*`).FindString(body))
	}
}

// TestNotLiveWhenStopped: "(live)" is said only of a running session held
// by a process; an escalated or interrupted one is not live, and a store
// that cannot tell (Memory) is not claimed live. A session a strategy
// escalated (the convergence check said continue) shows its status as what
// stopped it, not "Decision: continue". Mutations caught: "(live)" for
// every non-final status, the decision taken from the record alone.
func TestNotLiveWhenStopped(t *testing.T) {
	m := testStore(t)
	h := newHandler(t, m)
	for _, s := range []string{"asked", url.PathEscape(schemeName)} {
		if _, body := get(t, h, "/session/"+s); strings.Contains(body, "(live)") {
			t.Errorf("%s: %s", s, liveSpan(body))
		}
	}
	ctx := context.Background()
	c, _ := m.Load(ctx, "asked")
	x := c.Clone()
	x.Session, x.Status, x.Generation, x.Token = "stopped", string(iterate.Interrupted), 0, 0
	if err := m.Save(ctx, x); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, h, "/session/stopped"); strings.Contains(body, "(live)") || !strings.Contains(body, "(interrupted") {
		t.Errorf("interrupted: %s", liveSpan(body))
	}

	ask := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		if sit.Iteration >= 2 {
			return iterate.Plan{Action: iterate.Escalate, Escalation: &iterate.Escalation{Question: "approve?"}}, nil
		}
		return iterate.Plan{Action: iterate.Refine}, nil
	})
	res := runToy(t, m, "strat", iterate.WithStrategy(ask), iterate.WithMaxIterations(12))
	if res.Status != iterate.Escalated {
		t.Fatalf("strat: %s", res.Status)
	}
	sc, _ := m.Load(ctx, "strat")
	r, _ := iterate.Inspect(sc)
	if r.Decision.Verdict.String() != "continue" {
		t.Fatalf("premise: the record's decision is %s", r.Decision.Verdict)
	}
	_, body := get(t, h, "/session/strat")
	dec := regexp.MustCompile(`<td id="decision">([^<]*)`).FindStringSubmatch(body)
	if dec == nil || !strings.HasPrefix(dec[1], string(res.Status)) {
		t.Errorf("decision %v, want the status %s", dec, res.Status)
	}
	if !strings.Contains(body, "(waiting for an answer)") || strings.Contains(body, "(live)") {
		t.Errorf("escalated: %s", liveSpan(body))
	}
}

// TestQueuedListed: sessions the host knows of that have no checkpoint yet
// (a fleet's queued ones) are listed and counted, and have a page and a
// /live that do not say they are gone. Mutation caught: the list built from
// the store's checkpoints alone ("4 of 4" with 6 sessions).
func TestQueuedListed(t *testing.T) {
	m := testStore(t)
	h := newHandler(t, m, Extras(func(context.Context) (map[string]Extra, error) {
		return map[string]Extra{"asked": {Kind: "plan"}, "q1": {Kind: "plan", Status: "queued"}, "q2": {Kind: "fix", Status: "queued"}}, nil
	}))
	_, body := get(t, h, "/")
	if !strings.Contains(body, "6 of 6 sessions") || !strings.Contains(body, `data-session="q1"`) || !strings.Contains(body, `<option value="queued"`) {
		t.Errorf("the list hides queued sessions: %s", regexp.MustCompile(`\d+ of \d+ sessions`).FindString(body))
	}
	if _, body := get(t, h, "/?status=queued"); !strings.Contains(body, "2 of 6 sessions") {
		t.Errorf("status filter queued: %s", regexp.MustCompile(`\d+ of \d+ sessions`).FindString(body))
	}
	res, body := get(t, h, "/session/q1")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "not started yet") || !strings.Contains(body, `s-queued">queued`) {
		t.Errorf("a queued session's page: %d", res.StatusCode)
	}
	if res, js := get(t, h, "/session/q1/live"); res.StatusCode != http.StatusOK || !strings.Contains(js, `"status":"queued"`) {
		t.Errorf("a queued session's /live: %d %s", res.StatusCode, js)
	}
	if res, _ := get(t, h, "/session/nosuch/live"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown session's /live: %d", res.StatusCode)
	}
}

// TestChartAxes: only a ratio (coverage, confidence) is drawn on 0 to 1; a
// cost per iteration of cents is drawn on its own range, and the value axis
// is labelled between its ends. Mutations caught: every measure within
// [0,1] pinned to a 0–1 axis (the cost looks flat), only min and max
// labelled.
func TestChartAxes(t *testing.T) {
	ticks := regexp.MustCompile(`<text class="tick" x="[^"]+" y="[^"]+" text-anchor="end">([^<]+)</text>`)
	labels := func(c chart) []string {
		var out []string
		for _, m := range ticks.FindAllStringSubmatch(string(c.draw()), -1) {
			if !strings.HasPrefix(m[1], "iteration") {
				out = append(out, m[1])
			}
		}
		return out
	}
	cost := chart{Name: "cost", Points: []point{{1, 0.01}, {2, 0.03}, {3, 0.04}}}
	got := labels(cost)
	if len(got) != 5 || got[0] != "0.04" || slices.Contains(got, "1") {
		t.Errorf("cost axis labels %v, want 5 up to 0.04", got)
	}
	cov := chart{Name: "coverage", Points: []point{{1, 0.2}, {2, 0.4}}}
	if got := labels(cov); len(got) != 5 || got[0] != "1" || !slices.Contains(got, "0.5") {
		t.Errorf("coverage axis labels %v, want 0 to 1 by quarters", got)
	}
}
