package iterate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

func failing(test, expected, received string) gap.Assessment {
	return gap.Assessment{Signals: gap.Signals{
		Tests:  &gap.TestResult{Failures: []gap.TestCaseFailure{{Name: test, Expected: expected, Received: received}}},
		Review: &gap.Review{Status: gap.ReviewPending},
	}}
}

func passing() gap.Assessment {
	return gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{Passed: true}, Review: &gap.Review{Status: gap.ReviewApprove}}}
}

// seed002 is the proceed / retry / escalate loop of seed 002.
func seed002(store iterate.Checkpointer, extra ...iterate.Option) []iterate.Option {
	return append([]iterate.Option{
		iterate.WithMaxIterations(3),
		iterate.WithConvergence(converge.Any(converge.Passing{}, converge.IterationLimit{Escalate: true})),
		iterate.WithCheckpointer(store),
		iterate.WithSession("task-003"),
	}, extra...)
}

// TestSeed002Decisions: proceed when tests pass and review approves; retry
// with feedback while iterations remain; escalate at the limit.
func TestSeed002Decisions(t *testing.T) {
	t.Run("proceed_at_iteration_3", func(t *testing.T) {
		script := &iteratetest.Script{Steps: []iteratetest.Step{
			{Assessment: failing("TestLogin", "token to contain userId", "undefined")},
			{Assessment: failing("TestLogin", "token to contain userId", "undefined")},
			{Assessment: failing("TestLogin", "userId 123", `userId "123"`)},
			{Assessment: passing()},
		}}
		res, err := iterate.New(script, seed002(&checkpoint.Memory{})...).Run(context.Background(), iteratetest.State{})
		if err != nil || res.Status != iterate.Converged || res.Iterations != 3 {
			t.Fatalf("got %v, %s after %d; want converged (proceed) after 3", err, res.Status, res.Iterations)
		}
		_, tasks := script.Calls()
		if len(tasks) != 3 {
			t.Fatalf("got %d attempts, want 3", len(tasks))
		}
		fb := tasks[1].Feedback
		if !strings.Contains(fb, "TestLogin") || !strings.Contains(fb, "undefined") {
			t.Errorf("retry feedback %q lacks the test name and received value", fb)
		}
		if len(fb) > iterate.DefaultFeedbackLimit {
			t.Errorf("feedback is %d bytes, over the 500 limit", len(fb))
		}
		if got := []iterate.Action{tasks[0].Action, tasks[1].Action}; got[0] != iterate.Retry || got[1] != iterate.Refine {
			t.Errorf("actions %v; want retry, then refine once the same failure survived the retry", got)
		}
	})

	t.Run("escalate_at_limit_then_answer", func(t *testing.T) {
		fail := failing("TestLogin", "userId 123", `userId "123"`)
		script := &iteratetest.Script{Steps: []iteratetest.Step{
			{Assessment: fail}, {Assessment: fail}, {Assessment: fail}, {Assessment: fail}, {Assessment: passing()},
		}}
		store := &checkpoint.Memory{}
		eng := iterate.New(script, seed002(store)...)
		res, err := eng.Run(context.Background(), iteratetest.State{})
		var esc *iterate.EscalationError
		if !errors.Is(err, iterate.ErrEscalated) || !errors.As(err, &esc) {
			t.Fatalf("err = %v, want an escalation", err)
		}
		if res.Status != iterate.Escalated || res.Iterations != 3 || res.Escalation == nil {
			t.Fatalf("got %s after %d (%+v)", res.Status, res.Iterations, res.Escalation)
		}
		e := res.Escalation
		if len(e.Attempts) != 3 || !strings.HasPrefix(e.Attempts[0], "Iteration 1:") {
			t.Errorf("attempts summary %q, want one line per attempt", e.Attempts)
		}
		if !strings.Contains(e.Pattern, "TestLogin") || !strings.Contains(e.Question, "After 3 attempt") {
			t.Errorf("pattern %q / question %q", e.Pattern, e.Question)
		}
		saved, _ := store.Load(context.Background(), "task-003")
		if saved.Status != string(iterate.Escalated) || saved.Question != e.Question {
			t.Errorf("checkpoint status %q question %q", saved.Status, saved.Question)
		}

		// Without an answer, resuming returns the same escalation.
		again, err := eng.Resume(context.Background())
		if !errors.Is(err, iterate.ErrEscalated) || len(again.History.Gaps) == 0 || again.Escalation.Question != e.Question {
			t.Errorf("resume without answer: %v, gaps %v", err, again.History.Gaps)
		}
		res, err = eng.Resume(context.Background(), iterate.WithAnswer("use a number"))
		if err != nil || res.Status != iterate.Converged || res.Iterations != 4 {
			t.Fatalf("after the answer: %v, %s after %d; want converged after 4", err, res.Status, res.Iterations)
		}
		_, tasks := script.Calls()
		if tasks[3].Answer != "use a number" {
			t.Errorf("the answer did not reach the next attempt: %q", tasks[3].Answer)
		}
	})
}

// TestDefaultStopsStuckWithoutEscalating: under the defaults, a loop whose
// gaps stay the same switches strategy by degrees and then stops as stuck,
// with no error: escalating to a human is for hosts that have one.
func TestDefaultStopsStuckWithoutEscalating(t *testing.T) {
	stuck := failing("TestX", "1", "2")
	script := &iteratetest.Script{Steps: []iteratetest.Step{{Assessment: stuck}}}
	rec := &iteratetest.Recorder{}
	res, err := iterate.New(script, iterate.WithObserver(rec.Observe)).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatalf("err = %v, want none", err)
	}
	if res.Status != iterate.Stuck || res.Iterations != 3 || !strings.HasPrefix(res.Reason, "stuck: ") {
		t.Errorf("stopped %s after %d iterations (%s); want stuck after 3", res.Status, res.Iterations, res.Reason)
	}
	if p, ok := iteratetest.At[iterate.Planned](rec, 4); !ok || p.Plan.Action != iterate.Stop {
		t.Errorf("plan of iteration 4: %+v (found %t), want stop", p.Plan, ok)
	}
}

// TestGraduatedEscalation: with EscalateAfter, the same triggers surviving
// attempts lead to a warning and a switch of strategy, then a question for a
// human, then a stop if they survive the answer too.
func TestGraduatedEscalation(t *testing.T) {
	stuck := failing("TestX", "1", "2")
	script := &iteratetest.Script{Steps: []iteratetest.Step{{Assessment: stuck}}}
	rec := &iteratetest.Recorder{}
	store := &checkpoint.Memory{}
	eng := iterate.New(script, iterate.WithMaxIterations(0), iterate.WithCheckpointer(store), iterate.WithObserver(rec.Observe),
		iterate.WithStrategy(&iterate.Adaptive{EscalateAfter: 3}))
	res, err := eng.Run(context.Background(), iteratetest.State{})
	if !errors.Is(err, iterate.ErrEscalated) {
		t.Fatalf("err = %v, want escalation", err)
	}
	var actions []iterate.Action
	for _, p := range iteratetest.Of[iterate.Planned](rec) {
		actions = append(actions, p.Plan.Action)
	}
	want := []iterate.Action{iterate.Retry, iterate.Refine, iterate.Simplify, iterate.Escalate}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("degrees of escalation (-want +got):\n%s", diff)
	}
	if n := len(rec.Warnings()); n < 2 {
		t.Errorf("got %d warnings before escalating, want one per degree", n)
	}
	if res.Iterations != 3 {
		t.Errorf("escalated after %d iterations, want 3", res.Iterations)
	}

	res, err = eng.Resume(context.Background(), iterate.WithAnswer("try harder"))
	if err != nil || res.Status != iterate.Stuck || !strings.Contains(res.Reason, "after the human's answer") {
		t.Errorf("after the answer: %v, %s (%s); want a stop as stuck", err, res.Status, res.Reason)
	}
}
