package iterate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

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
// priority, keeps the decision taken on it (verdict and unmet criteria),
// and its attempt names the iteration's action and each of its tasks:
// role, main gap, duration, tokens, error and output. The durations are
// exact: the tasks sleep in a synctest bubble.
func TestIterationRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gaps := []gap.Gap{{Kind: gap.Coverage, Priority: gap.P1, Target: "files"}, {Kind: gap.Coverage, Priority: gap.P2, Target: "tests"},
			{Kind: gap.UnansweredQuestion, Priority: gap.P1, Target: "why?"}}
		analyzer := gap.AnalyzerFunc(func(context.Context, gap.Assessment, gap.Thresholds) ([]gap.Gap, error) { return gaps, nil })
		strategy := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
			return iterate.Plan{Action: iterate.Expand, Tasks: []iterate.Task{
				{Role: "explore", Gaps: gaps[:1]}, {Role: "citation", Gaps: gaps[2:]}}}, nil
		})
		w := iterate.Func(func(_ context.Context, n int, r iterate.Round) (int, error) {
			if r.Task.Role == "citation" {
				time.Sleep(time.Second)
				r.Output("searched 3 sources")
				return n, errors.New("no source")
			}
			time.Sleep(3 * time.Second)
			r.Charge(budget.Usage{Tokens: 10, Cost: 0.5, Calls: 2})
			r.Output("read files")
			return n + 1, nil
		})
		w.AssessFunc = func(_ context.Context, n int) (gap.Assessment, error) {
			return gap.Assessment{Coverage: 0.1 * float64(n+1)}, nil
		}
		res, err := iterate.New(perTask(w), iterate.WithAnalyzer(analyzer), iterate.WithStrategy(strategy), iterate.WithMaxIterations(2),
			iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.5, MinConfidence: -1})).
			Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.History.Recent) != 3 {
			t.Fatalf("%d records, want 3", len(res.History.Recent))
		}
		rec := res.History.Last()
		if rec.Iteration != 2 {
			t.Fatalf("last record %+v", rec)
		}
		if diff := cmp.Diff(map[gap.Kind]int{gap.Coverage: 2, gap.UnansweredQuestion: 1}, rec.Kinds); diff != "" {
			t.Errorf("Kinds (-want +got):\n%s", diff)
		}
		if rec.Priorities != [3]int{2, 1, 0} {
			t.Errorf("Priorities %v, want [2 1 0]", rec.Priorities)
		}
		want := []converge.TaskRun{
			{Role: "explore", Kind: gap.Coverage, Target: "files", Duration: 3 * time.Second, Tokens: 10, Output: "read files"},
			{Role: "citation", Kind: gap.UnansweredQuestion, Target: "why?", Duration: time.Second, Err: "no source", Output: "searched 3 sources"},
		}
		if diff := cmp.Diff(want, rec.TaskRuns); diff != "" {
			t.Errorf("TaskRuns (-want +got):\n%s", diff)
		}
		if rec.Action != string(iterate.Expand) || rec.Tasks != 2 || rec.FailedTasks != 1 || rec.Tokens != 10 || rec.Cost != 0.5 || rec.Calls != 2 {
			t.Errorf("attempt %+v", rec.Attempt)
		}
		if first := res.History.Recent[0]; first.TaskRuns != nil {
			t.Errorf("the initial state's record has task runs %+v", first.TaskRuns)
		}
		// Each state's decision: continue under coverage 0.1 and 0.2, the
		// limit at 0.3, each with coverage unmet.
		for i, v := range []converge.Verdict{converge.Continue, converge.Continue, converge.MaxIterations} {
			r := res.History.Recent[i]
			if r.Verdict != v {
				t.Errorf("record %d: verdict %v, want %v", i, r.Verdict, v)
			}
			if len(r.Unmet) != 1 || r.Unmet[0].Name != converge.CriterionCoverage || r.Unmet[0].Value != r.Coverage {
				t.Errorf("record %d: unmet %+v, want coverage %v", i, r.Unmet, r.Coverage)
			}
		}
	})
}

// TestTaskRunOutputTail: a record keeps the last KiB of a task's output,
// cut at a character boundary after "…"; shorter output is kept whole.
func TestTaskRunOutputTail(t *testing.T) {
	long := strings.Repeat("é", 600) + "the end" // 1,207 bytes
	for _, tt := range []struct{ name, output string }{
		{"short", "ok"},
		{"exactly 1 KiB", strings.Repeat("x", 1024)},
		{"long, cut inside a character", long},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := iterate.Func(func(_ context.Context, n int, r iterate.Round) (int, error) {
				r.Output(tt.output)
				return n + 1, nil
			})
			res, err := iterate.New(w, iterate.WithMaxIterations(1)).Run(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			runs := res.History.Last().TaskRuns
			if len(runs) != 1 {
				t.Fatalf("task runs %+v", runs)
			}
			got := runs[0].Output
			switch {
			case len(tt.output) <= 1024:
				if got != tt.output {
					t.Errorf("output %q, want it whole", got)
				}
			case len(got) > 1024 || !utf8.ValidString(got) || !strings.HasPrefix(got, "…") || !strings.HasSuffix(tt.output, got[len("…"):]):
				t.Errorf("output %q (%d bytes), want the tail of at most 1 KiB after …", got, len(got))
			case len(got) < 1020:
				t.Errorf("output of %d bytes, want close to 1 KiB", len(got))
			}
		})
	}
}

// TestTaskRunsReplayed: a task replayed from the journal after a resume is
// recorded as it ran before the interruption, with its duration, output
// and error; only the interrupted task's run is new. (Mutation caught: a
// journal entry without Duration or Output, or a replay that drops them,
// records the replayed tasks as instant and silent.)
func TestTaskRunsReplayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		strategy := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
			return iterate.Plan{Action: iterate.Refine, Tasks: []iterate.Task{{Role: "a"}, {Role: "b"}, {Role: "c"}}}, nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		worker := func(interrupt bool) iterate.Worker[int] {
			return perTask(iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) {
				i := r.Task.Index
				time.Sleep(time.Duration(i+1) * time.Second)
				r.Output("task " + string(r.Task.Role))
				switch {
				case i == 2 && interrupt:
					cancel() // Ctrl+C during the third task
					return n, ctx.Err()
				case i == 1:
					return n, errors.New("b failed")
				}
				return n + 1, nil
			}))
		}
		store := &checkpoint.Memory{}
		opts := []iterate.Option{iterate.WithStrategy(strategy), iterate.WithMaxIterations(1),
			iterate.WithCheckpointer(store, iterate.Journal), iterate.WithParallelism(1)}
		if _, err := iterate.New(worker(true), opts...).Run(ctx, 0); !errors.Is(err, iterate.ErrInterrupted) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // the resumed run's tasks would show it, were they timed from the first run
		res, err := iterate.New(worker(false), opts...).Resume(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []converge.TaskRun{
			{Role: "a", Duration: time.Second, Output: "task a"},
			{Role: "b", Duration: 2 * time.Second, Err: "b failed", Output: "task b"},
			{Role: "c", Duration: 3 * time.Second, Output: "task c"},
		}
		if diff := cmp.Diff(want, res.History.Last().TaskRuns); diff != "" {
			t.Errorf("TaskRuns (-want +got):\n%s", diff)
		}
	})
}
