package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// phaseView is what the tests compare of a parsed phase.
type phaseView struct {
	Num    int
	Title  string
	Marker string
	Deps   []int
	Tasks  []string // "x text" or "  text", indented by the task's indent
}

func viewPhases(p *Plan) []phaseView {
	var v []phaseView
	for _, ph := range p.Phases {
		pv := phaseView{Num: ph.Num, Title: ph.Title, Marker: ph.Marker, Deps: ph.Deps}
		for _, t := range ph.Tasks {
			mark := " "
			if t.Done {
				mark = "x"
			}
			pv.Tasks = append(pv.Tasks, strings.Repeat(".", t.Indent)+mark+" "+t.Text)
		}
		v = append(v, pv)
	}
	return v
}

func mustParse(t *testing.T, text string) *Plan {
	t.Helper()
	p, err := ParsePlan("plan.md", []byte(text), false)
	if err != nil {
		t.Fatalf("ParsePlan: %v", err)
	}
	return p
}

func TestParsePlan(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		wantTitle  string
		wantStatus string
		want       []phaseView
	}{
		{
			name: "headings_tasks_and_markers",
			text: "# Plan: Lean Orchestration\n\n- **Status**: [IN PROGRESS]\n\n" +
				"### Phase 1: Basic support [COMPLETE]\n- [x] one\n- [X] two\n\n" +
				"### Phase 2: Coordinator [IN PROGRESS]\n- [ ] three\n* [x] four\n",
			wantTitle:  "Lean Orchestration",
			wantStatus: "IN PROGRESS",
			want: []phaseView{
				{Num: 1, Title: "Basic support", Marker: "COMPLETE", Tasks: []string{"x one", "x two"}},
				{Num: 2, Title: "Coordinator", Marker: "IN PROGRESS", Tasks: []string{"  three", "x four"}},
			},
		},
		{
			name: "seed003_depends_on_line",
			text: "# T\n\n### Phase 1: A\n- [ ] a\n\n### Phase 2: B\n- [ ] b\n\n" +
				"### Phase 3: C\nDepends on: Phase 1, Phase 2\n- [ ] c\n\n" +
				"### Phase 4: D\n**Dependencies**: [1, 3]\n- [ ] d\n\n" +
				"### Phase 5: E\n- Depends on: none\n- [ ] e\n\n" +
				"### Phase 6: F\n*Depends on*: Phases 2 and 4 (#5).\n- [ ] f\n" +
				// Issue 32: seed 003's own plan writes these.
				"### Phase 7: G\n**Dependencies**: []\n- [ ] g\n\n" +
				"### Phase 8: H\n**Dependencies**: Phase 1-5 complete ✅\n- [ ] h\n\n" +
				"### Phase 9: I\n**Dependencies**: Phase 6 complete (testing relies on rate limit coordination working)\n- [ ] i\n",
			wantTitle: "T",
			want: []phaseView{
				{Num: 1, Title: "A", Tasks: []string{"  a"}},
				{Num: 2, Title: "B", Tasks: []string{"  b"}},
				{Num: 3, Title: "C", Deps: []int{1, 2}, Tasks: []string{"  c"}},
				{Num: 4, Title: "D", Deps: []int{1, 3}, Tasks: []string{"  d"}},
				{Num: 5, Title: "E", Tasks: []string{"  e"}},
				{Num: 6, Title: "F", Deps: []int{2, 4, 5}, Tasks: []string{"  f"}},
				{Num: 7, Title: "G", Tasks: []string{"  g"}},
				{Num: 8, Title: "H", Deps: []int{1, 2, 3, 4, 5}, Tasks: []string{"  h"}},
				{Num: 9, Title: "I", Deps: []int{6}, Tasks: []string{"  i"}},
			},
		},
		{
			name: "subheadings_nesting_and_fences",
			text: "# T\n\n### Phase 1: A\n#### Tasks\n- [x] parent\n  - [ ] child\n" +
				"```markdown\n### Phase 9: not a phase\n- [ ] not a task\n```\n\n## Notes\n- [ ] not in a phase\n",
			wantTitle: "T",
			want: []phaseView{
				{Num: 1, Title: "A", Tasks: []string{"x parent", "..  child"}},
			},
		},
		{
			name:      "status_line_inside_a_phase_is_not_the_plan_status",
			text:      "# T\n\n### Phase 1: A\n**Status**: done\n- [ ] a\n",
			wantTitle: "T",
			want:      []phaseView{{Num: 1, Title: "A", Tasks: []string{"  a"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.text)
			if diff := cmp.Diff(tt.want, viewPhases(p)); diff != "" {
				t.Errorf("phases (-want +got):\n%s", diff)
			}
			if p.Title != tt.wantTitle {
				t.Errorf("Title = %q, want %q", p.Title, tt.wantTitle)
			}
			status, _ := p.Status()
			if status != tt.wantStatus {
				t.Errorf("Status = %q, want %q", status, tt.wantStatus)
			}
			if got := string(p.Bytes()); got != tt.text {
				t.Errorf("Bytes changed an unedited plan:\n%s", got)
			}
		})
	}
}

func TestParsePlanErrors(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		wantLine int
		wantMsg  string
	}{
		{"no_phases", "# Notes\n- [ ] x\n", 0, "no phases"},
		{"duplicate_phase", "### Phase 1: A\n- [ ] a\n### Phase 1: B\n", 3, "duplicate Phase 1 (first at line 1)"},
		{"unknown_dependency", "### Phase 1: A\nDepends on: Phase 7\n", 1, "Phase 1 depends on Phase 7, which does not exist"},
		{"self_dependency", "### Phase 2: A\nDepends on: Phase 2\n", 1, "Phase 2 depends on itself"},
		{"word_number", "### Phase 1: A\n- [ ] a\n### Phase Two: Deploy\n- [ ] b\n", 3, `malformed phase heading "### Phase Two: Deploy"`},
		{"negative_number", "### Phase 1: A\n- [ ] a\n\n### Phase -1: B\n- [ ] b\n", 4, `malformed phase heading "### Phase -1: B"`},
		{"decimal_is_no_duplicate", "### Phase 1: A\n- [ ] a\n### Phase 1.5: B\n- [ ] b\n", 3, `malformed phase heading "### Phase 1.5: B"`},
		{"letter_suffix", "### Phase 2a: A\n- [ ] a\n", 1, `malformed phase heading "### Phase 2a: A"`},
		{"wrong_level", "### Phase 1: A\n- [ ] a\n## Phase 2: B\n- [ ] b\n", 3, `malformed phase heading "## Phase 2: B"`},
		{"no_tasks", "### Phase 1: A\n- [ ] a\n### Phase 2: B\nSome prose.\n### Phase 3: C\n- [ ] c\n", 3, "Phase 2 has no tasks"},
		{"out_of_range", "### Phase 99999999999999999999: A\n- [ ] a\n", 1, "phase number out of range"},
		{"depends_on_words", "### Phase 1: A\n- [ ] a\n### Phase 2: B\nDepends on: phase one\n- [ ] b\n", 4,
			`malformed dependency line "Depends on: phase one": "one" is not a phase number`},
		{"depends_on_prose", "### Phase 1: A\n- [ ] a\n### Phase 2: B\n- Depends on: the parser, Phase 1\n- [ ] b\n", 4,
			`malformed dependency line "- Depends on: the parser, Phase 1": "the" is not a phase number`},
		{"depends_on_empty", "### Phase 1: A\n- [ ] a\n### Phase 2: B\n**Dependencies**:\n- [ ] b\n", 4, "it names no phase"},
		{"depends_backward_range", "### Phase 1: A\n- [ ] a\n### Phase 2: B\nDepends on: Phase 5-1\n- [ ] b\n", 4,
			`not a range of phases: 5-1`},
		{"depends_remark_first", "### Phase 1: A\n- [ ] a\n### Phase 2: B\nDepends on: complete 1\n- [ ] b\n", 4,
			`"complete" is not a phase number`},
		{"depends_out_of_range", "### Phase 1: A\n- [ ] a\n### Phase 2: B\nDepends on: Phase 99999999999999999999\n- [ ] b\n", 4,
			"dependency out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePlan("plan.md", []byte(tt.text), false)
			if !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("err = %v, want ErrInvalidPlan", err)
			}
			var pe *PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %T, want *PlanError", err)
			}
			if pe.Line != tt.wantLine || !strings.Contains(pe.Msg, tt.wantMsg) {
				t.Errorf("got line %d %q, want line %d containing %q", pe.Line, pe.Msg, tt.wantLine, tt.wantMsg)
			}
		})
	}
	t.Run("every_malformed_heading_is_reported", func(t *testing.T) {
		text := "### Phase 1: A\n- [ ] a\n### Phase Two: Deploy\n- [ ] b\n### Phase -1:\n- [ ] c\n### Phase 1.5: D\n- [ ] d\n"
		_, err := ParsePlan("plan.md", []byte(text), false)
		if !errors.Is(err, ErrInvalidPlan) {
			t.Fatalf("err = %v, want ErrInvalidPlan", err)
		}
		for _, want := range []string{"plan.md:3: malformed", "plan.md:5: malformed", "plan.md:7: malformed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v\nwant it to contain %q", err, want)
			}
		}
	})
	t.Run("accepted_heading_forms", func(t *testing.T) {
		text := "### Phase 1\n- [ ] a\n### phase 2 - B\n- [ ] b\n### Phase 3. C\n- [ ] c\n### Phase 4 — D [COMPLETE]\n\n## Phase overview\n#### Phases\n"
		p := mustParse(t, text)
		want := []phaseView{
			{Num: 1, Tasks: []string{"  a"}},
			{Num: 2, Title: "B", Tasks: []string{"  b"}},
			{Num: 3, Title: "C", Tasks: []string{"  c"}},
			{Num: 4, Title: "D", Marker: "COMPLETE"},
		}
		if diff := cmp.Diff(want, viewPhases(p)); diff != "" {
			t.Errorf("phases (-want +got):\n%s", diff)
		}
	})
	t.Run("file_mode_needs_no_phases", func(t *testing.T) {
		p, err := ParsePlan("notes.md", []byte("- [ ] a\n- [x] b\n"), true)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(p.OpenItems()); got != 1 {
			t.Errorf("open items = %d, want 1", got)
		}
	})
}

func TestWaves(t *testing.T) {
	tests := []struct {
		name string
		text string
		want [][]int
	}{
		{
			name: "seed003_independent_phases_one_wave",
			text: "### Phase 1: A\n- [ ] a\n### Phase 2: B\n- [ ] b\n### Phase 3: C\n- [ ] c\n",
			want: [][]int{{1, 2, 3}},
		},
		{
			name: "seed003_dependency_runs_in_a_later_wave",
			text: "### Phase 1: A\n- [ ] a\n### Phase 2: B\nDepends on: Phase 1\n- [ ] b\n### Phase 3: C\n- [ ] c\n" +
				"### Phase 4: D\nDepends on: Phase 2, Phase 3\n- [ ] d\n",
			want: [][]int{{1, 3}, {2}, {4}},
		},
		{
			name: "dependency_on_a_complete_phase_is_satisfied",
			text: "### Phase 1: A\n- [x] a\n### Phase 2: B\nDepends on: Phase 1\n- [ ] b\n",
			want: [][]int{{2}},
		},
		{
			name: "complete_phases_are_left_out",
			text: "### Phase 1: A\n- [x] a\n### Phase 2: B\n- [x] b\n",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waves, err := mustParse(t, tt.text).Waves()
			if err != nil {
				t.Fatal(err)
			}
			var got [][]int
			for _, w := range waves {
				var nums []int
				for _, ph := range w {
					nums = append(nums, ph.Num)
				}
				got = append(got, nums)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("cycle", func(t *testing.T) {
		p := mustParse(t, "### Phase 1: A\nDepends on: Phase 2\n- [ ] a\n### Phase 2: B\nDepends on: Phase 1\n- [ ] b\n### Phase 3: C\n- [ ] c\n")
		_, err := p.Waves()
		var ce *CycleError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidPlan) {
			t.Fatalf("err = %v, want a *CycleError matching ErrInvalidPlan", err)
		}
		if diff := cmp.Diff([]int{1, 2}, ce.Phases); diff != "" {
			t.Errorf("cycle phases (-want +got):\n%s", diff)
		}
	})
}

func TestRecover(t *testing.T) {
	const head = "# P\n\n- **Status**: [IN PROGRESS]\n\n"
	tests := []struct {
		name     string
		text     string
		want     Recovery
		wantText string // "" means unchanged
	}{
		{
			name: "seed003_all_markers_present",
			text: head + "### Phase 1: A [COMPLETE]\n- [x] a\n### Phase 2: B [COMPLETE]\n- [x] b\n",
			want: Recovery{Total: 2, MarkedBefore: 2, MarkedAfter: 2, AllComplete: true, Status: "COMPLETE", StatusChanged: true},
			wantText: "# P\n\n- **Status**: [COMPLETE]\n\n" +
				"### Phase 1: A [COMPLETE]\n- [x] a\n### Phase 2: B [COMPLETE]\n- [x] b\n",
		},
		{
			name: "seed003_missing_markers_all_tasks_complete",
			text: head + "### Phase 1: A\n- [x] a\n### Phase 2: B\n- [x] b\n### Phase 3: C\n- [x] c\n",
			want: Recovery{Total: 3, MarkedAfter: 3, Recovered: []int{1, 2, 3}, AllComplete: true, Status: "COMPLETE", StatusChanged: true},
			wantText: "# P\n\n- **Status**: [COMPLETE]\n\n" +
				"### Phase 1: A [COMPLETE]\n- [x] a\n### Phase 2: B [COMPLETE]\n- [x] b\n### Phase 3: C [COMPLETE]\n- [x] c\n",
		},
		{
			name: "seed003_partial_completion",
			text: head + "### Phase 1: A\n- [x] a\n### Phase 2: B\n- [x] b\n### Phase 3: C\n- [x] c\n" +
				"### Phase 4: D\n- [x] d1\n- [ ] d2\n### Phase 5: E\n- [ ] e\n",
			want: Recovery{Total: 5, MarkedAfter: 3, Recovered: []int{1, 2, 3}, Status: "IN PROGRESS"},
			wantText: head + "### Phase 1: A [COMPLETE]\n- [x] a\n### Phase 2: B [COMPLETE]\n- [x] b\n### Phase 3: C [COMPLETE]\n- [x] c\n" +
				"### Phase 4: D\n- [x] d1\n- [ ] d2\n### Phase 5: E\n- [ ] e\n",
		},
		// Issue 32: a plan whose work has begun is IN PROGRESS (seed 003:
		// "Plan metadata remains IN PROGRESS"). Catches a status left
		// NOT STARTED.
		{
			name:     "started_plan_becomes_in_progress",
			text:     "# P\n\n- **Status**: [NOT STARTED]\n\n### Phase 1: A\n- [x] a\n- [ ] b\n",
			want:     Recovery{Total: 1, Status: "IN PROGRESS", StatusChanged: true},
			wantText: "# P\n\n- **Status**: [IN PROGRESS]\n\n### Phase 1: A\n- [x] a\n- [ ] b\n",
		},
		{
			name: "unstarted_plan_keeps_its_status",
			text: "# P\n\n- **Status**: [NOT STARTED]\n\n### Phase 1: A\n- [ ] a\n",
			want: Recovery{Total: 1, Status: "NOT STARTED"},
		},
		{
			name:     "in_progress_marker_replaced",
			text:     "### Phase 1: A [IN PROGRESS]\n- [x] a\n",
			want:     Recovery{Total: 1, MarkedAfter: 1, Recovered: []int{1}, AllComplete: true},
			wantText: "### Phase 1: A [COMPLETE]\n- [x] a\n",
		},
		{
			name: "seed003_checkbox_consistency",
			text: "**Status**: COMPLETE\n\n### Phase 1: A [COMPLETE]\n- [x] a\n- [ ] b\n### Phase 2: B\n- [x] parent\n  - [ ] child\n",
			want: Recovery{Total: 2, MarkedBefore: 1, MarkedAfter: 1, Status: "COMPLETE", Warnings: []string{
				"Phase 1 is marked [COMPLETE] but has 1 unchecked task(s)",
				`Phase 2: task "parent" is checked but its sub-task "child" is not`,
				"plan status is COMPLETE but some phases are incomplete",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.text)
			got := p.Recover()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Recover (-want +got):\n%s", diff)
			}
			want := tt.wantText
			if want == "" {
				want = tt.text
			}
			if diff := cmp.Diff(want, string(p.Bytes())); diff != "" {
				t.Errorf("plan after recovery (-want +got):\n%s", diff)
			}
			// seed003: recovery is idempotent.
			again := mustParse(t, string(p.Bytes()))
			second := again.Recover()
			if len(second.Recovered) != 0 || second.StatusChanged {
				t.Errorf("second recovery changed something: %+v", second)
			}
			if diff := cmp.Diff(want, string(again.Bytes())); diff != "" {
				t.Errorf("second recovery changed the plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Run("checkbox", func(t *testing.T) {
		p := mustParse(t, "### Phase 1: A\n  - [ ] a [ ] b\n")
		if !p.Check(p.Phases[0].Tasks[0]) || p.Check(p.Phases[0].Tasks[0]) {
			t.Fatal("Check should change the line once")
		}
		if diff := cmp.Diff("### Phase 1: A\n  - [x] a [ ] b\n", string(p.Bytes())); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("lean_sorry", func(t *testing.T) {
		p, err := ParsePlan("t.lean", []byte("-- sorry in a comment\ntheorem x : True := by\n  sorry -- todo: no sorry\n"), true)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != 1 {
			t.Fatalf("items = %d, want 1", len(p.Items))
		}
		p.Check(p.Items[0])
		if diff := cmp.Diff("-- sorry in a comment\ntheorem x : True := by\n  trivial -- todo: no sorry\n", string(p.Bytes())); diff != "" {
			t.Error(diff)
		}
	})
}
