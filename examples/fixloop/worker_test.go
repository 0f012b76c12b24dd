package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// TestChecks covers the assessment of the checks: seed 002's proceed
// condition (tests pass and review approves) the score and the named scores counting the tests
// passing and failing.
func TestChecks(t *testing.T) {
	approve := &gap.Review{Status: gap.ReviewApprove}
	reject := &gap.Review{Status: gap.ReviewReject, Issues: []string{"x.go: not gofmt-formatted"}}
	pending := &gap.Review{Status: gap.ReviewPending}
	fail := gap.TestResult{Failures: []gap.TestCaseFailure{{Name: "TestA"}}}
	tests := []struct {
		name    string
		c       checks
		passing bool
		score   float64
		summary string
		// passed and failing are the named scores "tests passing" and
		// "tests failing".
		passed, failing float64
	}{
		{"seed002_proceed_tests_pass_review_approves", checks{Tests: testRun{Result: gap.TestResult{Passed: true}, Passed: 3, Total: 3}, Review: approve},
			true, 1, "tests pass (3); review approve", 3, 0},
		{"seed002_retry_tests_fail", checks{Tests: testRun{Result: fail, Passed: 2, Total: 4}, Review: approve},
			false, 0.6, "tests fail (1: TestA); review approve", 2, 2},
		{"seed002_retry_review_rejects", checks{Tests: testRun{Result: gap.TestResult{Passed: true}, Passed: 2, Total: 2}, Review: reject},
			false, 0.8, "tests pass (2); review reject (1 issue(s))", 2, 0},
		{"build_failure_pending_review", checks{Tests: testRun{Result: fail, BuildFailed: true}, Review: pending},
			false, 0, "tests fail (1: TestA); review pending", 0, 1},
		{"no_review", checks{Tests: testRun{Result: gap.TestResult{Passed: true}}},
			true, 1, "tests pass (0)", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.c.assessment()
			got := []any{tt.c.passing(), a.Signals.Passing(), a.Score, tt.c.summary(), a.Scores[scoreTestsPassing], a.Scores[scoreTestsFailing]}
			want := []any{tt.passing, tt.passing, tt.score, tt.summary, tt.passed, tt.failing}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestStandingAnswer (issue 32): a human's answer holds for every attempt
// after it, not only the first one (the engine's Task.Answer), until the
// next answer. Catches an answer passed to the first attempt only.
func TestStandingAnswer(t *testing.T) {
	answered := state{Attempts: []attempt{{Iteration: 1}, {Iteration: 2, Answer: "use number"}, {Iteration: 3, Answer: "use number"}, {Iteration: 4}}}
	tests := []struct {
		name string
		s    state
		task iterate.Task
		want string
	}{
		{"none", state{Attempts: []attempt{{Iteration: 1}}}, iterate.Task{}, ""},
		{"the_tasks_own", answered, iterate.Task{Answer: "use string"}, "use string"},
		{"kept_after_the_first_attempt", answered, iterate.Task{}, "use number"},
	}
	for _, tt := range tests {
		if got := standingAnswer(tt.s, tt.task); got != tt.want {
			t.Errorf("%s: standingAnswer = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestWorkKeepsAnswer (issue 32, item 10): an attempt made after the
// first one that followed a human's answer still works under it: the
// implementer reads it on its standard input and in FIXLOOP_ANSWER, and
// the attempt records it. Catches Work not using standingAnswer (the
// engine's Task.Answer alone: the answer reaches the first attempt after
// it only), which TestStandingAnswer, of the helper alone, does not.
func TestWorkKeepsAnswer(t *testing.T) {
	w := newWorker(config{Workdir: t.TempDir(), Implementer: `printf 'env=%s\n' "$FIXLOOP_ANSWER"; cat`}, io.Discard)
	s := state{Attempts: []attempt{{Iteration: 1}, {Iteration: 2, Answer: "use number"}}}
	out, err := w.Work(context.Background(), s, iterate.Task{Iteration: 3, Feedback: "Test failed: x"})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Part.Attempts[0]
	if a.Answer != "use number" || !strings.Contains(a.Output, "env=use number\n") || !strings.Contains(a.Output, "Answer from the human: use number") {
		t.Errorf("attempt 3: answer %q, implementer's output %q; want the answer of attempt 2 in both", a.Answer, a.Output)
	}
}

// TestImplementerInput: the implementer reads the feedback, then the
// human's answer after an escalation.
func TestImplementerInput(t *testing.T) {
	fb := "Test failed: x\n- TestA: Expected: 1, Received: 2"
	tests := []struct {
		name string
		task iterate.Task
		want string
	}{
		{"feedback", iterate.Task{Feedback: fb}, "Test failed: x\n- TestA: Expected: 1, Received: 2\n"},
		{"feedback_and_answer", iterate.Task{Feedback: fb, Answer: "use number"},
			"Test failed: x\n- TestA: Expected: 1, Received: 2\n\nAnswer from the human: use number\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, implementerInput(tt.task)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
