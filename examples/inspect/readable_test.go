package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// answered writes the session "answered" in dir: a loop of at most 2
// iterations that escalates at its limit, answered twice (each answer
// grants 2 more), escalated again after 6 iterations. Its strategy is an
// Adaptive with roles, as fixloop's is, and its policy a converge.Any.
func answered(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	eng := iterate.New(toy{}, iterate.WithCheckpointer(checkpoint.NewDir(dir)), iterate.WithSession("answered"),
		iterate.WithBudget(limits), iterate.WithMaxIterations(2),
		iterate.WithStrategy(&iterate.Adaptive{MaxTasks: 1, EscalateAfter: 3,
			Roles: iterate.Roles{"": {Name: iterate.RoleImplement, Group: true}}}),
		iterate.WithConvergence(converge.Any(converge.IterationLimit{Escalate: true}, converge.Passing{})))
	res, _ := eng.Run(ctx, notes{})
	for range 2 {
		if res == nil || res.Status != iterate.Escalated {
			t.Fatalf("not escalated: %+v", res)
		}
		res, _ = eng.Resume(ctx, iterate.WithAnswer("go on"))
	}
	if res == nil || res.Status != iterate.Escalated || res.Iterations != 6 {
		t.Fatalf("after two answers: %+v", res)
	}
}

// TestBudgetRaisedByAnswers: each answer raised the iteration limit, which
// the record keeps as the loop started under; the budget says so instead
// of an overrun of 300% (it said "6 of 2 (300%)", in red on the page).
func TestBudgetRaisedByAnswers(t *testing.T) {
	dir := t.TempDir()
	answered(t, dir)
	stdout, stderr, code := runIn(dir, "answered")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if want := "  iterations  6 (limit 2, raised by answers)\n"; !strings.Contains(stdout, want) {
		t.Errorf("the budget does not say %q:\n%s", want, stdout)
	}
	page := filepath.Join(t.TempDir(), "answered.html")
	if _, stderr, code := runIn("--html", page, dir, "answered"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	if strings.Contains(html, `data-resource="iterations"`) || strings.Contains(html, "300%") ||
		!strings.Contains(html, ">6 (limit 2, raised by answers)</text>") {
		t.Errorf("the page's iterations bar:\n%s", regexp.MustCompile(`(?s)<svg id="budget".*?</svg>`).FindString(html))
	}
	t.Run("within_the_first_allowance", func(t *testing.T) {
		stdout, _, _ := runIn(sessions(t), "partial")
		if !strings.Contains(stdout, "  iterations  2 of 2 (100%)\n") {
			t.Errorf("a loop within its limit:\n%s", stdout)
		}
	})
}

// TestSettingsReadable: the page's settings are names and readable values:
// one iteration limit (it showed "max iterations 2" and "iteration limit
// 0"), "none" for a limit not set, and a strategy or policy as its type
// and the fields set, never a Go struct dump (it showed
// "iterate.Adaptive{Roles:map[:iterate.Role{…").
func TestSettingsReadable(t *testing.T) {
	dir := t.TempDir()
	answered(t, dir)
	page := filepath.Join(t.TempDir(), "answered.html")
	if _, stderr, code := runIn("--html", page, dir, "answered"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile(`(?s)<table id="settings">.*?</table>`).FindString(string(data))
	got := map[string]string{}
	var names []string
	for _, m := range regexp.MustCompile(`<tr><td>([^<]*)</td><td class="s">([^<]*)</td></tr>`).FindAllStringSubmatch(table, -1) {
		names = append(names, m[1])
		got[m[1]] = m[2]
	}
	if len(names) < 10 {
		t.Fatalf("settings table:\n%s", table)
	}
	for name, v := range got {
		if strings.ContainsAny(v, "{}") || strings.Contains(v, "map[") || strings.Contains(v, "iterate.") {
			t.Errorf("setting %q is a Go value's dump: %s", name, v)
		}
	}
	want := map[string]string{
		"iteration limit": "2",
		"token limit":     "20000",
		"call limit":      "40",
		"cost limit":      "none",
		"wall-time limit": "none",
		"history window":  "default (32)",
		"strategy":        `Adaptive (Roles &#34;&#34; → Role (Name implement, Group true), MaxTasks 1, EscalateAfter 3)`,
		"policy":          "anyOf(IterationLimit (Escalate true), Passing)",
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %q, want %q", name, got[name], v)
		}
	}
	if _, ok := got["max iterations"]; ok {
		t.Errorf("two iteration limits: max iterations %q and iteration limit %q", got["max iterations"], got["iteration limit"])
	}
}

// TestReadable: the values of settings, as the engine records them, made
// readable.
func TestReadable(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"strategy", "iterate.Adaptive{Roles:map[], MaxTasks:1, FeedbackLimit:500, EscalateNearLimit:false, EscalateAfter:3}",
			"Adaptive (MaxTasks 1, FeedbackLimit 500, EscalateAfter 3)"},
		{"strategy", "iterate.Adaptive{Roles:map[], MaxTasks:0, FeedbackLimit:0, EscalateNearLimit:false, EscalateAfter:0}", "Adaptive"},
		{"policy", "[converge.Passing{}, converge.IterationLimit{Escalate:true}]", "Passing, IterationLimit (Escalate true)"},
		{"policy", "converge.Thresholds{Delta:0.05, Window:[1, 2]}", "Thresholds (Delta 0.05, Window 1, 2)"},
		{"strategy", "main.custom{Note:a, b}", "custom (its fields: see --json)"},
		{"analyzer", "gap.Default()", "gap.Default()"},
		{"token limit", "0", "none"},
		{"wall-time limit", "0s", "none"},
		{"token limit", "500", "500"},
		{"host settings", "", "none"},
		{"failure threshold", "0", "0"},
	}
	for _, tt := range tests {
		if got := readable(tt.name, tt.value); got != tt.want {
			t.Errorf("readable(%q, %q) = %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
}

// fixLoop writes the session "fix" in dir: a fix loop whose assessments
// record the tests passing and failing as named scores (as fixloop's do),
// five tests of which three fail at first, one fixed per attempt.
func fixLoop(t *testing.T, dir string) {
	t.Helper()
	w := iterate.Func(func(_ context.Context, attempt int, _ iterate.Round) (int, error) { return attempt + 1, nil })
	w.AssessFunc = func(_ context.Context, attempt int) (gap.Assessment, error) {
		failing := max(3-attempt, 0)
		tr := gap.TestResult{Passed: failing == 0}
		for i := range failing {
			tr.Failures = append(tr.Failures, gap.TestCaseFailure{Name: fmt.Sprintf("TestCase%d", i)})
		}
		return gap.Assessment{Signals: gap.Signals{Tests: &tr},
			Scores: map[string]float64{"tests passing": float64(5 - failing), "tests failing": float64(failing)}}, nil
	}
	res, err := iterate.New(w, iterate.WithCheckpointer(checkpoint.NewDir(dir)), iterate.WithSession("fix"),
		iterate.WithConvergence(converge.Any(converge.Passing{}, converge.IterationLimit{})), iterate.WithMaxIterations(6)).
		Run(context.Background(), 0)
	if err != nil || !res.Status.Success() {
		t.Fatalf("fix: %v, %s (%s)", err, res.Status, res.Reason)
	}
}

// TestMetrics: a fix loop's page charts what it measured, its tests
// passing and failing, with no threshold line (it charted coverage and
// confidence, flat at 0, under the research thresholds); --metric names
// the charts, in order, a threshold drawn only for the metric that has one.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	fixLoop(t, dir)
	_, rep := report(t, dir, "fix")
	html := func(args ...string) string {
		t.Helper()
		page := filepath.Join(t.TempDir(), "fix.html")
		if _, stderr, code := runIn(append(append([]string{"--html", page}, args...), dir, "fix")...); code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	checkPage(t, html(), rep, "tests failing", "tests passing")
	checkPage(t, html("--metric", "tests failing", "--metric", "coverage", "--metric", "gaps:test_failure"), rep,
		"tests failing", "coverage", "gaps:test_failure")

	stdout, _, _ := runIn("--spark", dir, "fix")
	want := "Tests failing █▆▃▁  3 → 0\nTests passing ▄▅▇█  2 → 5\n"
	if !strings.Contains(stdout, want) {
		t.Errorf("the sparklines are not\n%s\n%s", want, stdout)
	}
	var failing []float64
	for i := range rep.History.Recent {
		v, _ := rep.History.Recent[i].Metric("tests failing")
		failing = append(failing, v)
	}
	if diff := cmp.Diff([]float64{3, 2, 1, 0}, failing); diff != "" {
		t.Errorf("the history's tests failing (-want +got):\n%s", diff)
	}
	if _, stderr, code := runIn("--metric", " ", dir, "fix"); code != exitUsage || !strings.Contains(stderr, "an empty metric name") {
		t.Errorf("an empty --metric: exit %d, %s", code, stderr)
	}
}

// TestDefaultMetrics: without --metric, the charts follow what the loop
// measured.
func TestDefaultMetrics(t *testing.T) {
	tests := []struct {
		name string
		recs []converge.Record
		want []string
	}{
		{"research", []converge.Record{{}, {Coverage: 0.4, Confidence: 0.7}, {Coverage: 0.8, Confidence: 0.9, Conflicts: 1}},
			[]string{"coverage", "confidence", "conflicts"}},
		{"fix_loop", []converge.Record{{Score: 0.2, Scores: map[string]float64{"tests passing": 0, "tests failing": 3}},
			{Score: 1, Scores: map[string]float64{"tests passing": 3, "tests failing": 0}}},
			[]string{"score", "tests failing", "tests passing"}},
		{"plan", []converge.Record{{Gaps: 3, Scores: map[string]float64{"tasks done": 0, "phases complete": 0}},
			{Gaps: 2, Scores: map[string]float64{"tasks done": 2, "phases complete": 1}}},
			[]string{"phases complete", "tasks done"}},
		{"agent_loop", []converge.Record{{}, {Attempt: converge.Attempt{Tasks: 1}}, {Attempt: converge.Attempt{Tasks: 1, FailedTasks: 1, Failed: true}}},
			[]string{"failed tasks"}},
		{"nothing_measured_gaps_found", []converge.Record{{Gaps: 1}}, []string{"gaps", "failed tasks"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, defaultMetrics(tt.recs)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
