package iterate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// research builds a research assessment: coverage, the confidence of its one
// finding, unresolved conflicts and unanswered critical questions.
func research(coverage, confidence float64, conflicts, unanswered int) gap.Assessment {
	a := gap.Assessment{
		Coverage: coverage,
		Findings: []gap.Finding{{ID: "f1", Description: "uses JWT", Confidence: confidence,
			Citations: []string{"auth.go:42", "login.go:15"}, Sources: []string{"explore", "citation"}}},
		Questions: []gap.Question{{Text: "How are tokens validated?", Critical: true, Answered: true}},
	}
	for i := range conflicts {
		a.Conflicts = append(a.Conflicts, gap.Conflict{ID: fmt.Sprintf("c%d", i+1),
			A: gap.Claim{Source: "explore", Statement: "SQL Server"}, B: gap.Claim{Source: "pattern", Statement: "PostgreSQL"}})
	}
	for i := range unanswered {
		a.Questions = append(a.Questions, gap.Question{Text: fmt.Sprintf("open question %d?", i+1), Critical: true})
	}
	return a
}

func steps(as ...gap.Assessment) []iteratetest.Step {
	out := make([]iteratetest.Step, len(as))
	for i, a := range as {
		out[i].Assessment = a
	}
	return out
}

// TestSeed000Scenarios runs the five test scenarios of seed 000. The initial
// state (round 0) holds nothing yet, so iteration 1 is the first exploration.
func TestSeed000Scenarios(t *testing.T) {
	nothing := gap.Assessment{EstimatedFiles: 25}
	tests := []struct {
		name       string
		steps      []iteratetest.Step
		wantStatus iterate.Status
		wantIters  int
		wantUnmet  []string
		wantRole   iterate.RoleName // a role that must have run
	}{
		{
			name:       "test1_single_iteration_to_convergence",
			steps:      steps(nothing, research(0.80, 0.85, 0, 0)),
			wantStatus: iterate.Converged, wantIters: 1,
		},
		{
			name:       "test2_two_iterations_coverage_gap",
			steps:      steps(nothing, research(0.60, 0.85, 0, 0), research(0.75, 0.85, 0, 0)),
			wantStatus: iterate.Converged, wantIters: 2, wantRole: iterate.RoleExplore,
		},
		{
			name: "test3_max_iterations_partial_convergence",
			steps: steps(nothing, research(0.40, 0.70, 0, 1), research(0.50, 0.72, 0, 1),
				research(0.60, 0.75, 0, 1), research(0.65, 0.78, 0, 1)),
			wantStatus: iterate.MaxIterations, wantIters: 4,
			wantUnmet: []string{"coverage", "confidence", "questions"},
		},
		{
			name:       "test4_conflicting_findings_resolved",
			steps:      steps(nothing, research(0.80, 0.85, 3, 0), research(0.80, 0.85, 0, 0)),
			wantStatus: iterate.Converged, wantIters: 2, wantRole: iterate.RoleVerify,
		},
		{
			name:       "test5_early_termination",
			steps:      steps(nothing, research(0.70, 0.75, 0, 0), research(0.90, 0.92, 0, 0)),
			wantStatus: iterate.EarlyExit, wantIters: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := &iteratetest.Script{Steps: tt.steps}
			res, err := iterate.New(script).Run(context.Background(), iteratetest.State{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Status != tt.wantStatus || res.Iterations != tt.wantIters {
				t.Fatalf("got %s after %d iterations (%s), want %s after %d", res.Status, res.Iterations, res.Reason, tt.wantStatus, tt.wantIters)
			}
			var unmet []string
			for _, c := range res.Decision.Unmet() {
				unmet = append(unmet, c.Name)
			}
			if tt.wantStatus.Success() {
				unmet = nil
			}
			if diff := cmp.Diff(tt.wantUnmet, unmet); diff != "" {
				t.Errorf("unmet criteria (-want +got):\n%s", diff)
			}
			if tt.wantStatus == iterate.MaxIterations && !strings.Contains(res.Reason, "max") {
				t.Errorf("reason %q does not name the iteration limit", res.Reason)
			}
			_, tasks := script.Calls()
			if tt.wantRole != "" && !slices.ContainsFunc(tasks, func(tk iterate.Task) bool { return tk.Role == tt.wantRole }) {
				t.Errorf("no %s task ran; tasks: %v", tt.wantRole, tasks)
			}
			for _, tk := range tasks {
				if tk.Iteration > 1 && len(tk.Gaps) == 0 {
					t.Errorf("iteration %d ran an untargeted task although gaps were found", tk.Iteration)
				}
			}
		})
	}
}

// TestSeed000AgentLimit checks "max agents per iteration: 3, highest
// priority first, defer the rest".
func TestSeed000AgentLimit(t *testing.T) {
	a := research(0.40, 0.85, 2, 3) // coverage P1 (<0.50), 3 questions P1, 2 conflicts P2
	script := &iteratetest.Script{Steps: steps(a)}
	rec := &iteratetest.Recorder{}
	_, err := iterate.New(script, iterate.WithMaxIterations(1), iterate.WithObserver(rec.Observe)).
		Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	plans := iteratetest.Of[iterate.Planned](rec)
	if len(plans) != 1 {
		t.Fatalf("got %d plans, want 1", len(plans))
	}
	p := plans[0].Plan
	if len(p.Tasks) != 3 {
		t.Fatalf("got %d tasks, want 3", len(p.Tasks))
	}
	for _, tk := range p.Tasks {
		if tk.Gap().Priority != gap.P1 {
			t.Errorf("task %s addresses %s, want only P1 gaps first", tk.ID(), tk.Gap())
		}
	}
	if len(p.Deferred) == 0 {
		t.Errorf("no gaps deferred; want the rest deferred")
	}
}

// TestSeed000AgentFailure: a failing agent marks its gap unresolved, the
// other agents go on, and the iteration does not halt.
func TestSeed000AgentFailure(t *testing.T) {
	a := research(0.40, 0.85, 0, 2)
	script := &iteratetest.Script{Steps: []iteratetest.Step{
		{Assessment: a, FailTasks: []int{1}},
		{Assessment: research(0.60, 0.85, 0, 0)},
		{Assessment: research(0.90, 0.95, 0, 0)},
	}}
	var sits []iterate.Situation
	strategy := iterate.StrategyFunc(func(ctx context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		sits = append(sits, iterate.Situation{Iteration: sit.Iteration, Unresolved: slices.Clone(sit.Unresolved)})
		return (&iterate.Adaptive{}).Plan(ctx, sit)
	})
	res, err := iterate.New(script, iterate.WithStrategy(strategy)).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1.1", "1.2!", "1.3", "2.1"}, res.State.Tasks); diff != "" {
		t.Errorf("tasks integrated in order, failed one marked (-want +got):\n%s", diff)
	}
	if res.History.Failures != 0 {
		t.Errorf("an iteration with one failed task counted as failed")
	}
	if res.Totals.FailedTasks != 1 {
		t.Errorf("failed tasks = %d, want 1", res.Totals.FailedTasks)
	}
	if len(sits) != 2 || len(sits[1].Unresolved) != 1 || sits[1].Unresolved[0].Kind != gap.UnansweredQuestion {
		t.Errorf("the failed task's gap is not reported unresolved to the next plan: %+v", sits)
	}
}

// TestSeed000IterationMetrics: seed 000's per-iteration metrics (agents
// spawned, duration, coverage and confidence gains) are the records of the
// history, one per iteration; the cumulative ones are Result.Totals.
func TestSeed000IterationMetrics(t *testing.T) {
	script := &iteratetest.Script{Steps: []iteratetest.Step{
		{Assessment: research(0.3, 0.6, 2, 1), FailTasks: []int{0}},
		{Assessment: research(0.5, 0.7, 0, 1)},
		{Assessment: research(0.9, 0.95, 0, 0)},
	}}
	res, err := iterate.New(script).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	_, tasks := script.Calls()
	recs := res.History.Recent
	if len(recs) != 3 || res.Iterations != 2 {
		t.Fatalf("%d records after %d iterations, want 3 (the initial state and 2 iterations)", len(recs), res.Iterations)
	}
	ran := 0
	for i, r := range recs[1:] {
		if r.Iteration != i+1 || r.Tasks == 0 || r.Action == "" {
			t.Errorf("record %+v lacks the iteration's metrics", r)
		}
		ran += r.Tasks
	}
	if ran != len(tasks) || recs[1].FailedTasks != 1 || recs[2].FailedTasks != 0 {
		t.Errorf("tasks %d (want %d), failed %d and %d (want 1 and 0)", ran, len(tasks), recs[1].FailedTasks, recs[2].FailedTasks)
	}
	if gain := recs[2].Coverage - recs[1].Coverage; gain < 0.39 || gain > 0.41 {
		t.Errorf("coverage gain of iteration 2 = %.2f, want 0.40", gain)
	}
	if res.Totals.Iterations != 2 || res.Totals.Tasks != len(tasks) || res.Totals.FailedTasks != 1 {
		t.Errorf("totals %+v", res.Totals)
	}
}
