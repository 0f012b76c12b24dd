package iteratetest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

func research(coverage, confidence float64) gap.Assessment {
	return gap.Assessment{Coverage: coverage, Findings: []gap.Finding{{Confidence: confidence}}}
}

// ExampleTable checks a policy against a decision table, as the seeds
// write them: each row an assessment, each decision the verdict the loop
// reaches on it.
func ExampleTable() {
	decisions, err := iteratetest.Table([]iteratetest.Row{
		{Assessment: research(0.40, 0.60)},
		{Assessment: research(0.65, 0.85)},
		{Assessment: research(0.75, 0.85)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, d := range decisions {
		action := "-"
		if d.Plan != nil {
			action = string(d.Plan.Action)
		}
		fmt.Printf("row %d: %d gaps, %s, plan %s\n", i+1, len(d.Gaps), d.Decision.Verdict, action)
	}
	// Output:
	// row 1: 2 gaps, continue, plan expand
	// row 2: 1 gaps, continue, plan expand
	// row 3: 0 gaps, converged, plan -
}

// TestTableEnforcesEngineLimits: a table decides as the engine does, its
// limits included — a host's policy that never stops is stopped at the
// iteration limit on the last allowed row, and failing rows abort at the
// failure threshold. (Mutation caught: a table helper calling the policy
// alone, without the engine, which reports continue on every row.)
func TestTableEnforcesEngineLimits(t *testing.T) {
	never := iterate.WithConvergence(converge.PolicyFunc(func(*converge.History) converge.Decision { return converge.Decision{} }))
	rows := []iteratetest.Row{{Assessment: research(0.1, 0.1)}, {Assessment: research(0.1, 0.1)}, {Assessment: research(0.1, 0.1)}}
	got, err := iteratetest.Table(rows, never, iterate.WithMaxIterations(2))
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []converge.Verdict
	for _, d := range got {
		verdicts = append(verdicts, d.Decision.Verdict)
	}
	if want := []converge.Verdict{converge.Continue, converge.Continue, converge.MaxIterations}; fmt.Sprint(verdicts) != fmt.Sprint(want) {
		t.Errorf("verdicts %v, want %v", verdicts, want)
	}
	if got[2].Plan != nil || got[0].Plan == nil {
		t.Errorf("plans %v, %v: want a plan before the stop and none at it", got[0].Plan, got[2].Plan)
	}

	failing := []iteratetest.Row{{Assessment: research(0.1, 0.1), Fail: true}, {Assessment: research(0.1, 0.1), Fail: true},
		{Assessment: research(0.1, 0.1)}}
	got, err = iteratetest.Table(failing, never, iterate.WithMaxIterations(0), iterate.WithFailureThreshold(2))
	if err != nil {
		t.Fatal(err)
	}
	if v := got[2].Decision.Verdict; v != converge.Aborted {
		t.Errorf("row 3: %s, want aborted after two failing rows", v)
	}
}

// TestTableStopsEarlyIsAnError: a table whose loop stops before its last
// row names the row, and returns the decisions up to it.
func TestTableStopsEarlyIsAnError(t *testing.T) {
	got, err := iteratetest.Table([]iteratetest.Row{{Assessment: research(0.9, 0.95)}, {Assessment: research(0.1, 0.1)}})
	if err == nil || !strings.Contains(err.Error(), "stopped on row 1 of 2 (early_exit") || len(got) != 1 {
		t.Fatalf("err %v with %d decisions, want a stop on row 1 named", err, len(got))
	}
	_, err = iteratetest.Table([]iteratetest.Row{{}}, iterate.WithMaxIterations(-1))
	var ce *iterate.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v, want the engine's *ConfigError", err)
	}
}
