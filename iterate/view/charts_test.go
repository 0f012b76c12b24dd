package view_test

// The charts of a session's page, tested by content: for a research loop,
// a fix loop and a plan, each declared chart's series (its data-series
// attribute) equals the values of its metric in the session's history, and
// a threshold line is drawn (data-threshold) only for a metric that has one.

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/view"
)

// chartSeries is one chart of a page, as its SVG's data attributes say.
type chartSeries struct {
	series    []chartValue
	threshold string // "" without a threshold line
}

// chartValue is one point of a chart: an iteration and its value.
type chartValue struct {
	iteration int
	value     float64
}

// chartTag matches a chart's SVG element and captures its data attributes.
var chartTag = regexp.MustCompile(`<svg class="chart"[^>]*>`)

// chartsOf returns the charts of page by metric name, in order.
func chartsOf(t *testing.T, page string) ([]string, map[string]chartSeries) {
	t.Helper()
	attr := func(tag, name string) (string, bool) {
		m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(tag)
		if m == nil {
			return "", false
		}
		return html.UnescapeString(m[1]), true
	}
	var names []string
	out := map[string]chartSeries{}
	for _, tag := range chartTag.FindAllString(page, -1) {
		name, ok := attr(tag, "data-metric")
		if !ok {
			t.Fatalf("a chart without data-metric: %s", tag)
		}
		series, ok := attr(tag, "data-series")
		if !ok {
			t.Fatalf("chart %q without data-series: %s", name, tag)
		}
		var c chartSeries
		for _, pair := range strings.Fields(series) {
			it, v, ok := strings.Cut(pair, ":")
			n, err1 := strconv.Atoi(it)
			f, err2 := strconv.ParseFloat(v, 64)
			if !ok || err1 != nil || err2 != nil {
				t.Fatalf("chart %q: point %q does not read as ITERATION:VALUE", name, pair)
			}
			c.series = append(c.series, chartValue{n, f})
		}
		c.threshold, _ = attr(tag, "data-threshold")
		if _, dup := out[name]; dup {
			t.Fatalf("two charts of %q", name)
		}
		names = append(names, name)
		out[name] = c
	}
	return names, out
}

// chartHistory returns the history of session in store as the viewer reads it.
func chartHistory(t *testing.T, store view.Store, session string) (*iterate.Report, []converge.Record) {
	t.Helper()
	c, err := store.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.History.Recent) < 3 || r.History.Recent[0].Iteration != 0 {
		t.Fatalf("session %q: a history of %d records from iteration %d; want the whole loop", session,
			len(r.History.Recent), r.History.Recent[0].Iteration)
	}
	return r, r.History.Recent
}

// chartPage GETs the page of session from a viewer of store with opts.
func chartPage(t *testing.T, store view.Store, session string, opts ...view.Option) string {
	t.Helper()
	h, err := view.New(store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/session/"+session, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /session/%s: %s\n%s", session, res.Status, b)
	}
	return string(b)
}

// wantChart checks that chart equals value of each record and has the
// threshold line threshold ("" for none).
func wantChart(t *testing.T, charts map[string]chartSeries, name string, recs []converge.Record,
	value func(*converge.Record) float64, threshold string) {
	t.Helper()
	c, ok := charts[name]
	if !ok {
		t.Errorf("no chart of %q", name)
		return
	}
	var want []chartValue
	for i := range recs {
		want = append(want, chartValue{recs[i].Iteration, value(&recs[i])})
	}
	if fmt.Sprint(c.series) != fmt.Sprint(want) {
		t.Errorf("chart %q: series %v, want the history's %v", name, c.series, want)
	}
	if c.threshold != threshold {
		t.Errorf("chart %q: threshold %q, want %q", name, c.threshold, threshold)
	}
}

// chartMetric returns a record's named metric (converge.Record.Metric).
func chartMetric(name string) func(*converge.Record) float64 {
	return func(r *converge.Record) float64 {
		v, _ := r.Metric(name)
		return v
	}
}

// chartResearch is a research-like loop: each iteration reads a file more,
// raising coverage and confidence, until both reach their thresholds.
func chartResearch(t *testing.T, store iterate.Checkpointer) {
	t.Helper()
	w := iterate.Func(func(_ context.Context, read int, _ iterate.Round) (int, error) { return read + 1, nil })
	w.AssessFunc = func(_ context.Context, read int) (gap.Assessment, error) {
		return gap.Assessment{FilesAnalyzed: read, EstimatedFiles: 8, Confidence: 0.5 + 0.05*float64(read)}, nil
	}
	res, err := iterate.New(w, iterate.WithCheckpointer(store), iterate.WithSession("research"),
		iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.625, MinConfidence: 0.7}), iterate.WithMaxIterations(10)).
		Run(context.Background(), 0)
	if err != nil || res.Status != iterate.Converged || res.Iterations != 5 {
		t.Fatalf("research: %v, %s after %d iterations (%s)", err, res.Status, res.Iterations, res.Reason)
	}
}

// chartFixLoop is a fix loop: five tests, three failing at first, one fixed
// per attempt; its Assess records the tests passing and failing as named
// scores, as examples/fixloop does.
func chartFixLoop(t *testing.T, store iterate.Checkpointer) {
	t.Helper()
	w := iterate.Func(func(_ context.Context, attempt int, _ iterate.Round) (int, error) { return attempt + 1, nil })
	w.AssessFunc = func(_ context.Context, attempt int) (gap.Assessment, error) {
		failing := max(3-attempt, 0)
		tr := gap.TestResult{Passed: failing == 0}
		for i := range failing {
			tr.Failures = append(tr.Failures, gap.TestCaseFailure{Name: fmt.Sprintf("TestCase%d", i), Expected: "1", Received: "2"})
		}
		return gap.Assessment{Signals: gap.Signals{Tests: &tr},
			Scores: map[string]float64{"tests passing": float64(5 - failing), "tests failing": float64(failing)}}, nil
	}
	res, err := iterate.New(w, iterate.WithCheckpointer(store), iterate.WithSession("fix"),
		iterate.WithConvergence(converge.Any(converge.Passing{}, converge.IterationLimit{})), iterate.WithMaxIterations(6)).
		Run(context.Background(), 0)
	if err != nil || !res.Status.Success() || res.Iterations != 3 {
		t.Fatalf("fix: %v, %s after %d iterations (%s)", err, res.Status, res.Iterations, res.Reason)
	}
}

// chartPlan is a plan of three phases of two tasks each, one phase completed
// per iteration; its Assess records the tasks done and the phases
// complete as named scores, as examples/planrunner does.
func chartPlan(t *testing.T, store iterate.Checkpointer) {
	t.Helper()
	w := iterate.Func(func(_ context.Context, done int, _ iterate.Round) (int, error) { return done + 1, nil })
	w.AssessFunc = func(_ context.Context, done int) (gap.Assessment, error) {
		a := gap.Assessment{Complete: done == 3, Score: float64(done) / 3,
			Scores: map[string]float64{"tasks done": float64(2 * done), "phases complete": float64(done)}}
		for p := done + 1; p <= 3; p++ {
			a.WorkRemaining = append(a.WorkRemaining, fmt.Sprintf("Phase_%d", p))
		}
		return a, nil
	}
	res, err := iterate.New(w, iterate.WithCheckpointer(store), iterate.WithSession("plan"), iterate.WithMaxIterations(6)).
		Run(context.Background(), 0)
	if err != nil || !res.Status.Success() || res.Iterations != 3 {
		t.Fatalf("plan: %v, %s after %d iterations (%s)", err, res.Status, res.Iterations, res.Reason)
	}
}

// TestChartsResearch: coverage and confidence of a research loop saved in
// a checkpoint.Dir, each against its threshold.
func TestChartsResearch(t *testing.T) {
	store := checkpoint.NewDir(t.TempDir())
	chartResearch(t, store)
	_, recs := chartHistory(t, store, "research")
	names, charts := chartsOf(t, chartPage(t, store, "research", view.Metrics(view.Coverage, view.Confidence)))
	if fmt.Sprint(names) != "[coverage confidence]" {
		t.Errorf("charts %q, want coverage and confidence", names)
	}
	wantChart(t, charts, "coverage", recs, func(r *converge.Record) float64 { return r.Coverage }, "0.625")
	wantChart(t, charts, "confidence", recs, func(r *converge.Record) float64 { return r.Confidence }, "0.7")
	if last := recs[len(recs)-1]; last.Coverage != 0.625 || last.Confidence != 0.75 {
		t.Errorf("the last record: coverage %v, confidence %v; want 0.625 and 0.75", last.Coverage, last.Confidence)
	}
}

// TestChartsFixLoopByContent: a fix loop's tests passing and failing (named
// scores) and its failing-test gaps, with no threshold line: the research
// thresholds the loop also has (its settings' defaults) do not apply to
// them. Without declared metrics the page charts what the loop measured,
// not a flat coverage and confidence at 0.
func TestChartsFixLoopByContent(t *testing.T) {
	store := new(checkpoint.Memory)
	chartFixLoop(t, store)
	r, recs := chartHistory(t, store, "fix")
	if r.History.Thresholds.MinCoverage <= 0 {
		t.Fatalf("the loop has no coverage threshold (%v): the test would not show that none is drawn", r.History.Thresholds.MinCoverage)
	}
	page := chartPage(t, store, "fix",
		view.Metrics(view.Metric{Name: "tests passing"}, view.Metric{Name: "tests failing"}, view.FailingTests))
	names, charts := chartsOf(t, page)
	if fmt.Sprint(names) != "[tests passing tests failing gaps:test_failure]" {
		t.Errorf("charts %q", names)
	}
	wantChart(t, charts, "tests passing", recs, chartMetric("tests passing"), "")
	wantChart(t, charts, "tests failing", recs, chartMetric("tests failing"), "")
	wantChart(t, charts, "gaps:test_failure", recs, func(r *converge.Record) float64 { return float64(r.Kinds[gap.TestFailure]) }, "")
	if got := fmt.Sprint(charts["tests failing"].series); got != "[{0 3} {1 2} {2 1} {3 0}]" {
		t.Errorf("tests failing: %s", got)
	}

	names, charts = chartsOf(t, chartPage(t, store, "fix"))
	for _, n := range names {
		if n == converge.CriterionCoverage || n == converge.CriterionConfidence {
			t.Errorf("the default charts of a fix loop include %s, which it does not measure: %q", n, names)
		}
	}
	wantChart(t, charts, "tests passing", recs, chartMetric("tests passing"), "")
	wantChart(t, charts, "tests failing", recs, chartMetric("tests failing"), "")
}

// TestChartsPlan: a plan's phases complete against the host's level (the
// plan's three phases) and its tasks done without one.
func TestChartsPlan(t *testing.T) {
	store := new(checkpoint.Memory)
	chartPlan(t, store)
	_, recs := chartHistory(t, store, "plan")
	page := chartPage(t, store, "plan",
		view.Metrics(view.Metric{Name: "phases complete", Threshold: view.Level(3)}, view.Metric{Name: "tasks done"}))
	names, charts := chartsOf(t, page)
	if fmt.Sprint(names) != "[phases complete tasks done]" {
		t.Errorf("charts %q", names)
	}
	wantChart(t, charts, "phases complete", recs, chartMetric("phases complete"), "3")
	wantChart(t, charts, "tasks done", recs, chartMetric("tasks done"), "")
	if got := fmt.Sprint(charts["tasks done"].series); got != "[{0 0} {1 2} {2 4} {3 6}]" {
		t.Errorf("tasks done: %s", got)
	}
}
