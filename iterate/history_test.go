package iterate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// sessionHistory reads the record of every iteration of session from its
// kept generations, by iteration: each generation's window of records and
// its pending attempt (the iteration completed since its last assessment).
func sessionHistory(t *testing.T, store iterate.GenerationLoader, session string) map[int]converge.Attempt {
	t.Helper()
	ctx := context.Background()
	gens, err := store.Generations(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]converge.Attempt{}
	for _, g := range gens {
		c, err := store.LoadGeneration(ctx, session, g.Generation)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := iterate.Inspect(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.History.Recent {
			if r.Iteration > 0 {
				out[r.Iteration] = r.Attempt
			}
		}
		if p := rep.History.Pending; !p.IsZero() {
			out[rep.History.Iteration] = p
		}
	}
	return out
}

// TestIterationUsageAddsUp: every iteration's record carries what it
// spent and how long it took; read back from the kept generations of a
// session interrupted in iteration 5 and resumed by another engine, they
// add up to the result's usage and totals.
func TestIterationUsageAddsUp(t *testing.T) {
	store := checkpoint.NewDir(t.TempDir(), checkpoint.KeepAll())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := func(ctx context.Context, round int) error {
		if round == 5 {
			cancel()
			return ctx.Err()
		}
		return nil
	}
	if _, err := iterate.New(peakWorker(hook), peakOptions(store)...).Run(ctx, draft{}); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatalf("Run: %v, want interrupted", err)
	}
	res, err := iterate.New(peakWorker(nil), peakOptions(store)...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hist := sessionHistory(t, store, "peak")
	if len(hist) != res.Totals.Iterations || res.Totals.Iterations != 6 {
		t.Fatalf("records of %d iterations, totals %d, want 6", len(hist), res.Totals.Iterations)
	}
	var sum budget.Usage
	var dur time.Duration
	for n, a := range hist {
		if want := int64(100 * n); a.Tokens != want || a.Calls != 1 {
			t.Errorf("iteration %d: %d tokens %d calls, want %d and 1", n, a.Tokens, a.Calls, want)
		}
		sum.Tokens += a.Tokens
		sum.Calls += a.Calls
		sum.Cost += a.Cost
		dur += a.Duration
	}
	if sum.Tokens != res.Usage.Tokens || sum.Calls != res.Usage.Calls || sum.Cost != res.Usage.Cost {
		t.Errorf("the iterations spent %+v, the result %+v", sum, res.Usage)
	}
	if dur != res.Totals.Duration {
		t.Errorf("the iterations lasted %v, the totals say %v", dur, res.Totals.Duration)
	}
}

// TestIterationRecords: a record counts its state's gaps by kind and
// priority, and its attempt names the iteration's action and failed
// tasks.
func TestIterationRecords(t *testing.T) {
	gaps := []gap.Gap{{Kind: gap.Coverage, Priority: gap.P1, Target: "files"}, {Kind: gap.Coverage, Priority: gap.P2, Target: "tests"},
		{Kind: gap.UnansweredQuestion, Priority: gap.P1, Target: "why?"}}
	analyzer := gap.AnalyzerFunc(func(context.Context, gap.Assessment, gap.Thresholds) ([]gap.Gap, error) { return gaps, nil })
	strategy := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Expand, Tasks: []iterate.Task{
			{Role: "explore", Gaps: gaps[:1]}, {Role: "citation", Gaps: gaps[2:]}}}, nil
	})
	w := iterate.Func(func(_ context.Context, n int, r iterate.Round) (int, error) {
		if r.Task.Role == "citation" {
			return n, errors.New("no source")
		}
		r.Charge(budget.Usage{Tokens: 10, Cost: 0.5, Calls: 2})
		return n + 1, nil
	})
	res, err := iterate.New(w, iterate.WithAnalyzer(analyzer), iterate.WithStrategy(strategy), iterate.WithMaxIterations(2)).
		Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := res.History.Last()
	if rec == nil || rec.Iteration != 2 {
		t.Fatalf("last record %+v", rec)
	}
	if diff := cmp.Diff(map[gap.Kind]int{gap.Coverage: 2, gap.UnansweredQuestion: 1}, rec.Kinds); diff != "" {
		t.Errorf("Kinds (-want +got):\n%s", diff)
	}
	if rec.Priorities != [3]int{2, 1, 0} {
		t.Errorf("Priorities %v, want [2 1 0]", rec.Priorities)
	}
	want := []converge.TaskFailure{{Role: "citation", Kind: gap.UnansweredQuestion, Target: "why?", Err: "no source"}}
	if diff := cmp.Diff(want, rec.TaskFailures); diff != "" {
		t.Errorf("TaskFailures (-want +got):\n%s", diff)
	}
	if rec.Action != string(iterate.Expand) || rec.Tasks != 2 || rec.FailedTasks != 1 || rec.Tokens != 10 || rec.Cost != 0.5 || rec.Calls != 2 {
		t.Errorf("attempt %+v", rec.Attempt)
	}
}
