package iterate_test

// The promises a host's own code relies on (issue 28): a Func is one call
// per iteration, and the engine's limits hold under any policy.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// TestFuncCallsDoOncePerIteration guards "a Func calls Do exactly once per
// iteration, whatever the assessment": with coverage 0.1 and two critical
// questions, the default strategy plans three tasks; Do runs once, told
// every gap in priority order. Mutation caught: the engine running a
// FuncWorker's plan task by task (Do called 3 times an iteration).
func TestFuncCallsDoOncePerIteration(t *testing.T) {
	var calls, overlap, running atomic.Int32
	var seen [][]gap.Gap
	w := iterate.Func(func(ctx context.Context, s int, r iterate.Round) (int, error) {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		defer running.Add(-1)
		calls.Add(1)
		seen = append(seen, r.Task.Gaps)
		return s + 1, nil
	})
	w.AssessFunc = func(context.Context, int) (gap.Assessment, error) {
		return gap.Assessment{Coverage: 0.1, Questions: []gap.Question{
			{Text: "Is OAuth possible?", Critical: true},
			{Text: "Which regions?", Critical: true},
		}}, nil
	}
	res, err := iterate.New(w, iterate.WithMaxIterations(3)).Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != 3 || calls.Load() != 3 || overlap.Load() != 0 {
		t.Fatalf("%d iterations, %d calls of Do (%d overlapping): want 3, 3, 0", res.Iterations, calls.Load(), overlap.Load())
	}
	if res.State != 3 {
		t.Errorf("state %d, want 3", res.State)
	}
	for i, gaps := range seen {
		if len(gaps) != 3 {
			t.Fatalf("call %d was told %d gaps, want 3: %v", i+1, len(gaps), gaps)
		}
		for j := 1; j < len(gaps); j++ {
			if gaps[j].Priority < gaps[j-1].Priority {
				t.Errorf("call %d: gaps out of priority order: %v", i+1, gaps)
			}
		}
	}
	for _, rec := range res.History.Recent[1:] {
		if rec.Tasks != 1 || len(rec.TaskRuns) != 1 {
			t.Errorf("iteration %d recorded %d tasks, want 1", rec.Iteration, rec.Tasks)
		}
	}
}

// TestMaxIterationsHoldsUnderHostPolicy guards "WithMaxIterations holds
// whatever the policy": a host's policy without an iteration limit (or one
// that continues past it) stops at the limit, status MaxIterations. Mutation
// caught: the engine leaving the iteration limit to the policy alone (the
// loop runs until its context ends).
func TestMaxIterationsHoldsUnderHostPolicy(t *testing.T) {
	continueAlways := converge.PolicyFunc(func(*converge.History) converge.Decision { return converge.Decision{} })
	for _, tc := range []struct {
		name   string
		policy converge.Policy
	}{
		{"Any(ThresholdsMet)", converge.Any(converge.ThresholdsMet{})},
		{"PolicyFunc", continueAlways},
		{"All(ThresholdsMet, IterationLimit)", converge.All(converge.ThresholdsMet{}, converge.IterationLimit{})},
		{"Failures", converge.Failures{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			step := func(_ context.Context, s int, _ iterate.Round) (int, error) {
				calls++
				if calls > 10 {
					cancel() // the limit did not hold: end the test's loop
				}
				return s + 1, nil
			}
			res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(3),
				iterate.WithConvergence(tc.policy)).Run(ctx, 0)
			if err != nil {
				t.Fatalf("Run: %v after %d iterations", err, calls)
			}
			if res.Status != iterate.MaxIterations || res.Iterations != 3 || calls != 3 {
				t.Fatalf("status %s after %d iterations (%d calls): want max_iterations after 3", res.Status, res.Iterations, calls)
			}
			if res.Reason != "max iterations reached: 3 of 3" {
				t.Errorf("reason %q", res.Reason)
			}
		})
	}
}

// TestFailureThresholdOnLastIteration guards "the failure threshold aborts
// on the last allowed iteration too", as converge.Default orders it
// (failures before the limit), under a policy without converge.Failures.
// Mutation caught: the engine enforcing the threshold only when the policy
// continues (the run ends max_iterations with a nil error).
func TestFailureThresholdOnLastIteration(t *testing.T) {
	boom := errors.New("agent failed")
	for _, max := range []int{3, 4} {
		res, err := iterate.New(iterate.Func(func(context.Context, int, iterate.Round) (int, error) { return 0, boom }),
			iterate.WithMaxIterations(max), iterate.WithFailureThreshold(3),
			iterate.WithConvergence(converge.IterationLimit{})).Run(context.Background(), 0)
		if !errors.Is(err, iterate.ErrAborted) || !errors.Is(err, boom) {
			t.Fatalf("max %d: err %v, want ErrAborted wrapping the task's error", max, err)
		}
		if res.Status != iterate.Aborted || res.Iterations != 3 {
			t.Errorf("max %d: status %s after %d iterations, want aborted after 3", max, res.Status, res.Iterations)
		}
	}
}

// TestPolicySuccessAndEscalationStandAtLimits guards the order of the
// engine's limits: a host policy's success on the last allowed iteration,
// or its escalation, is not overruled by the limits.
func TestPolicySuccessAndEscalationStandAtLimits(t *testing.T) {
	for _, v := range []converge.Verdict{converge.Converged, converge.EarlyExit, converge.Escalate} {
		policy := converge.PolicyFunc(func(h *converge.History) converge.Decision {
			if h.Iteration >= 2 {
				return converge.Decision{Verdict: v, Reason: "host says " + v.String()}
			}
			return converge.Decision{}
		})
		res, _ := iterate.New(iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s + 1, nil }),
			iterate.WithMaxIterations(2), iterate.WithConvergence(policy)).Run(context.Background(), 0)
		if res.Decision.Verdict != v || res.Reason != "host says "+v.String() {
			t.Errorf("%s: decision %s (%q)", v, res.Decision.Verdict, res.Reason)
		}
	}
}

// perTask runs w's Do once per task of a plan of several, as a Worker
// that is not a *FuncWorker does: for tests of multi-task iterations
// written as one function.
func perTask[S any](w *iterate.FuncWorker[S]) iterate.Worker[S] { return perTaskWorker[S]{w} }

type perTaskWorker[S any] struct{ *iterate.FuncWorker[S] }

// TestWallTimeLimitCountsNextIteration guards "the wall-time limit is
// checked on what is spent plus the next iteration's estimate", as tokens
// are: a 1s limit with 0.4s iterations stops after two, not starting a
// third that the limit would cut short (or that would run to 1.2s when its
// task ignores cancellation). Mutation caught: an estimate without Wall.
func TestWallTimeLimitCountsNextIteration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		res, err := iterate.New(iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) {
			calls++
			time.Sleep(400 * time.Millisecond) // ignores cancellation
			return s + 1, nil
		}), iterate.WithBudget(budget.Limits{Wall: time.Second}), iterate.WithMaxIterations(10)).Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != iterate.BudgetExhausted || res.Iterations != 2 || calls != 2 || res.Usage.Wall != 800*time.Millisecond {
			t.Fatalf("status %s after %d iterations (%d calls, %v): want budget_exhausted after 2, 800ms",
				res.Status, res.Iterations, calls, res.Usage.Wall)
		}
	})
}

// TestBudgetWarningSaysWhatIsSpent: the loop's budget warning tells what
// is spent from the next iteration's estimate. (Mutation caught: the
// warning of issue 28, "tokens at 87% of limit (130/150)" after 65 spent.)
func TestBudgetWarningSaysWhatIsSpent(t *testing.T) {
	var warnings []string
	_, err := iterate.New(iterate.Func(func(_ context.Context, s int, r iterate.Round) (int, error) {
		r.Charge(budget.Usage{Tokens: 65})
		return s + 1, nil
	}), iterate.WithBudget(budget.Limits{Tokens: 150}), iterate.WithMaxIterations(2), iterate.WithObserver(func(e iterate.Event) {
		if w, ok := e.(iterate.Warned); ok {
			warnings = append(warnings, w.Message)
		}
	})).Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"budget: tokens at 87% of limit with the next estimate (65 spent + 65 estimated / 150)"}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestEscalationErrorMessage: the message names the reason, else the
// question, and never ends in ": ". (Mutation caught: appending the
// reason unconditionally — "after 2 iterations: ".)
func TestEscalationErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		esc  iterate.Escalation
		want string
	}{
		{iterate.Escalation{Iteration: 2, Reason: "stuck", Question: "Which API?"}, "iterate: escalated to a human after 2 iterations: stuck"},
		{iterate.Escalation{Iteration: 2, Question: "Which API?"}, "iterate: escalated to a human after 2 iterations: Which API?"},
		{iterate.Escalation{Iteration: 2}, "iterate: escalated to a human after 2 iterations"},
	} {
		if got := (&iterate.EscalationError{Escalation: &tc.esc}).Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// TestCheckpointSavedCompleted: a journal's save names the iteration in
// flight and carries the completed iterations its checkpoint holds; the
// loop's saves, the iteration they complete. (Mutation caught: Completed
// set from the event's iteration.)
func TestCheckpointSavedCompleted(t *testing.T) {
	var saved []iterate.CheckpointSaved
	var mu sync.Mutex
	_, err := iterate.New(perTask(iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s + 1, nil })),
		iterate.WithStrategy(nTasks(2)), iterate.WithParallelism(1), iterate.WithMaxIterations(2),
		iterate.WithCheckpointer(&checkpoint.Memory{}, iterate.Journal), iterate.WithObserver(func(e iterate.Event) {
			if cs, ok := e.(iterate.CheckpointSaved); ok {
				mu.Lock()
				saved = append(saved, cs)
				mu.Unlock()
			}
		})).Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	type pair struct{ Iteration, Completed int }
	var got []pair
	for _, cs := range saved {
		got = append(got, pair{cs.Iteration(), cs.Completed})
	}
	// Iteration 1: two journal saves, then the loop's; iteration 2 the
	// same, then the final save.
	want := []pair{{1, 0}, {1, 0}, {1, 1}, {2, 1}, {2, 1}, {2, 2}, {2, 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("saves (-want +got):\n%s", diff)
	}
}

// TestRepeatedActionsStopAsStuck: a Func reporting what it did (Round.Did)
// under converge.Repeating stops as stuck once it did the same thing three
// iterations running without improving, naming the actions; the actions
// are saved and restored with the history. (Mutation caught: the engine
// dropping Outcome.Actions from the iteration's record: the loop runs to
// its limit.)
func TestRepeatedActionsStopAsStuck(t *testing.T) {
	store := &checkpoint.Memory{}
	step := func(_ context.Context, s int, r iterate.Round) (int, error) {
		r.Did("run go test ./...", "edit main.go")
		return s, nil // changes nothing
	}
	policy := iterate.WithConvergence(converge.Any(converge.Repeating{}, converge.IterationLimit{}))
	res, err := iterate.New(iterate.Func(step), policy, iterate.WithMaxIterations(10), iterate.WithCheckpointer(store)).
		Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "stuck: the same actions for 3 iterations without improvement: edit main.go, run go test ./..."
	if res.Status != iterate.Stuck || res.Iterations != 3 || res.Reason != want {
		t.Fatalf("%s after %d iterations (%q), want stuck after 3 (%q)", res.Status, res.Iterations, res.Reason, want)
	}
	saved, err := iterate.New(iterate.Func(step), policy, iterate.WithMaxIterations(10), iterate.WithCheckpointer(store)).
		Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := saved.History.Last().Actions; !slices.Equal(got, []string{"edit main.go", "run go test ./..."}) {
		t.Errorf("restored actions %q", got)
	}
}
