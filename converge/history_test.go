package converge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/gap"
)

func iterations(recs []Record) []int {
	out := make([]int, len(recs))
	for i := range recs {
		out[i] = recs[i].Iteration
	}
	return out
}

func TestHistoryWindow(t *testing.T) {
	tests := []struct {
		name          string
		window, steps int
		want          []int
	}{
		{name: "window_3_keeps_last_3", window: 3, steps: 10, want: []int{7, 8, 9}},
		{name: "window_1_keeps_last", window: 1, steps: 4, want: []int{3}},
		{name: "below_window_keeps_all", window: 5, steps: 3, want: []int{0, 1, 2}},
		{name: "default_window_32", steps: 40, want: func() []int {
			var w []int
			for i := 8; i < 40; i++ {
				w = append(w, i)
			}
			return w
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{Window: tt.window}
			for i := 0; i < tt.steps; i++ {
				if i > 0 {
					h.Complete(Attempt{Failed: false, Action: "", Duration: 0})
				}
				h.Observe(gap.Assessment{Score: float64(i)}, nil)
				limit := tt.window
				if limit == 0 {
					limit = DefaultWindow
				}
				if len(h.Recent) > limit {
					t.Fatalf("after %d observations len(Recent) = %d > window %d", i+1, len(h.Recent), limit)
				}
			}
			if diff := cmp.Diff(tt.want, iterations(h.Recent)); diff != "" {
				t.Errorf("record iterations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryWindowShrunkAfterResume(t *testing.T) {
	h := run(0, 0, scored(0, 1, 2, 3, 4)...)
	h.Window = 2
	h.Complete(Attempt{Failed: false, Action: "", Duration: 0})
	h.Observe(gap.Assessment{Score: 5}, nil)
	if diff := cmp.Diff([]int{4, 5}, iterations(h.Recent)); diff != "" {
		t.Errorf("record iterations (-want +got):\n%s", diff)
	}
}

func TestHistoryCounters(t *testing.T) {
	work := []string{"Phase_6", "Phase_7"}
	h := run(4, 0,
		step{a: gap.Assessment{Score: 0.5, WorkRemaining: work}},
		step{a: gap.Assessment{Score: 0.7, WorkRemaining: work}, failed: true, action: "retry"},
		step{a: gap.Assessment{Score: 0.6, WorkRemaining: work}, failed: true, action: "refine"},
		step{a: gap.Assessment{Score: 0.6, WorkRemaining: []string{"Phase_7"}}, action: "expand"},
		step{a: gap.Assessment{Score: 0.65, WorkRemaining: []string{"Phase_7"}}, failed: true, action: "retry"},
	)
	type counters struct {
		Iteration, ConsecutiveFailures, Failures, Unchanged, BestIteration int
		BestScore                                                          float64
		WorkRemaining                                                      []string
		Remaining                                                          int
	}
	want := counters{Iteration: 4, ConsecutiveFailures: 1, Failures: 3, Unchanged: 1, BestIteration: 1, BestScore: 0.7,
		WorkRemaining: []string{"Phase_7"}, Remaining: 0}
	got := counters{h.Iteration, h.ConsecutiveFailures, h.Failures, h.Unchanged, h.BestIteration, h.BestScore, h.WorkRemaining, h.Remaining()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	type outcome struct {
		Iteration int
		Failed    bool
		Action    string
		Duration  time.Duration
	}
	var outcomes []outcome
	for _, r := range h.Recent {
		outcomes = append(outcomes, outcome{r.Iteration, r.Failed, r.Action, r.Duration})
	}
	wantOutcomes := []outcome{{0, false, "", 0}, {1, true, "retry", time.Second}, {2, true, "refine", time.Second},
		{3, false, "expand", time.Second}, {4, true, "retry", time.Second}}
	if diff := cmp.Diff(wantOutcomes, outcomes); diff != "" {
		t.Errorf("record outcomes (-want +got):\n%s", diff)
	}
}

func TestHistoryRecordMetrics(t *testing.T) {
	g := []gap.Gap{{Kind: gap.Coverage, Priority: gap.P1, Target: "files", Severity: 0.5, Fixable: true}, {Kind: gap.Confidence, Target: "f1"}}
	a := gap.Assessment{FilesAnalyzed: 3, EstimatedFiles: 4, Findings: []gap.Finding{{Confidence: 0.5}, {Confidence: 1}},
		Score: 0.4, Scores: map[string]float64{"q": 0.9}, Conflicts: []gap.Conflict{{ID: "c"}}}
	h := run(0, 0, step{a: a, gaps: g})
	a.Scores["q"] = 0.1 // the host reuses its map
	want := Record{Coverage: 0.75, Confidence: 0.75, Score: 0.4, Scores: map[string]float64{"q": 0.9}, Conflicts: 1,
		Gaps: 2, Fixable: 1, Triggers: triggerDigest(g), Summary: "coverage: files",
		Kinds: map[gap.Kind]int{gap.Coverage: 1, gap.Confidence: 1}, Priorities: [3]int{1, 0, 0}}
	if diff := cmp.Diff(want, *h.Last()); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if h.Previous() != nil {
		t.Errorf("Previous() = %v, want nil", h.Previous())
	}
	if diff := cmp.Diff([]float64{0.9}, h.Scores(nil, "q", 0)); diff != "" {
		t.Errorf("Scores (-want +got):\n%s", diff)
	}
}

func TestHistoryReobserveReplaces(t *testing.T) {
	work := []string{"a"}
	tests := []struct {
		name          string
		again         gap.Assessment
		wantUnchanged int
		wantScore     float64
	}{
		{name: "same_work_keeps_unchanged", again: gap.Assessment{Score: 0.3, WorkRemaining: work}, wantUnchanged: 1, wantScore: 0.3},
		{name: "other_work_resets_unchanged", again: gap.Assessment{Score: 0.2, WorkRemaining: []string{"b"}}, wantUnchanged: 0, wantScore: 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := run(0, 0, step{a: gap.Assessment{WorkRemaining: work}}, step{a: gap.Assessment{Score: 0.1, WorkRemaining: work}, failed: true, action: "retry"})
			h.Observe(tt.again, nil)
			if diff := cmp.Diff([]int{0, 1}, iterations(h.Recent)); diff != "" {
				t.Errorf("record iterations (-want +got):\n%s", diff)
			}
			last := h.Last()
			got := struct {
				Unchanged int
				Score     float64
				Failed    bool
				Action    string
			}{h.Unchanged, last.Score, last.Failed, last.Action}
			want := got
			want.Unchanged, want.Score, want.Failed, want.Action = tt.wantUnchanged, tt.wantScore, true, "retry"
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after re-observing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryJSONRoundTrip(t *testing.T) {
	steps := []step{
		{a: gap.Assessment{Score: 0.5, Scores: map[string]float64{"q": 0.2}, WorkRemaining: []string{"x"}}},
		{a: gap.Assessment{Score: 0.6, WorkRemaining: []string{"x"}}, failed: true, action: "retry"},
		{a: gap.Assessment{Score: 0.55, WorkRemaining: []string{"x"}}, failed: true, action: "refine"},
	}
	h := run(6, 2, steps...)
	h.Complete(Attempt{Failed: false, Action: "expand", Duration: 3 * time.Second}) // saved between Complete and Observe

	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var got History
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	ignore := cmp.Options{cmpopts.IgnoreFields(History{}, "Current", "Gaps"), cmpopts.IgnoreUnexported(History{}), cmpopts.EquateEmpty()}
	if diff := cmp.Diff(h, &got, ignore); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	// The resumed history goes on exactly as the original one.
	next := gap.Assessment{Score: 0.55, WorkRemaining: []string{"x"}}
	h.Observe(next, nil)
	got.Observe(next, nil)
	if diff := cmp.Diff(h, &got, ignore); diff != "" {
		t.Errorf("after resume (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Default().Decide(h), Default().Decide(&got)); diff != "" {
		t.Errorf("decisions differ (-original +resumed):\n%s", diff)
	}
	if diff := cmp.Diff(3, got.Unchanged); diff != "" {
		t.Errorf("Unchanged (-want +got):\n%s", diff)
	}
}

func TestResumeReassessmentDecidesAsUninterrupted(t *testing.T) {
	steps := []step{
		{a: gap.Assessment{Score: 0.5, WorkRemaining: []string{"x"}}},
		{a: gap.Assessment{Score: 0.5, WorkRemaining: []string{"x"}}},
	}
	h := run(6, 0, steps...)
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var resumed History
	if err := json.Unmarshal(data, &resumed); err != nil {
		t.Fatal(err)
	}
	// A resumed loop assesses its state afresh: the same state again.
	resumed.Observe(steps[1].a, nil)
	ignore := cmp.Options{cmpopts.IgnoreFields(History{}, "Current", "Gaps"), cmpopts.IgnoreUnexported(History{}), cmpopts.EquateEmpty()}
	if diff := cmp.Diff(h, &resumed, ignore); diff != "" {
		t.Errorf("resumed history (-uninterrupted +resumed):\n%s", diff)
	}
}

func TestTriggerDigest(t *testing.T) {
	a := gap.Gap{Kind: gap.Coverage, Target: "x"}
	b := gap.Gap{Kind: gap.Confidence, Target: "y"}
	split1 := gap.Gap{Kind: "ab", Target: "c"}
	split2 := gap.Gap{Kind: "a", Target: "bc"}
	tests := []struct {
		name  string
		x, y  []gap.Gap
		equal bool
	}{
		{name: "order_independent", x: []gap.Gap{a, b}, y: []gap.Gap{b, a}, equal: true},
		{name: "ignores_severity", x: []gap.Gap{a}, y: []gap.Gap{{Kind: a.Kind, Target: a.Target, Severity: 1}}, equal: true},
		{name: "seed001_same_triggers_need_same_details", x: []gap.Gap{a}, y: []gap.Gap{{Kind: a.Kind, Target: a.Target, Detail: "d"}}, equal: false},
		{name: "different_sets_differ", x: []gap.Gap{a}, y: []gap.Gap{a, b}, equal: false},
		{name: "kind_target_boundary", x: []gap.Gap{split1}, y: []gap.Gap{split2}, equal: false},
		{name: "empty_is_zero", x: nil, y: []gap.Gap{}, equal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.equal, triggerDigest(tt.x) == triggerDigest(tt.y)); diff != "" {
				t.Errorf("digests equal (-want +got):\n%s", diff)
			}
		})
	}
	if triggerDigest(nil) != 0 {
		t.Errorf("triggerDigest(nil) = %d, want 0", triggerDigest(nil))
	}
}

func TestDecisionUnmet(t *testing.T) {
	d := Decision{Criteria: []Criterion{{Name: "a", Met: true}, {Name: "b"}, {Name: "c", Detail: "1 < 2"}}}
	if diff := cmp.Diff([]Criterion{{Name: "b"}, {Name: "c", Detail: "1 < 2"}}, d.Unmet()); diff != "" {
		t.Errorf("Unmet (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("c 1 < 2", d.Criteria[2].String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
}
