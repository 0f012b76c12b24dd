//go:build unix

package iterate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// The steered session of issue 34's "Done when": extended, answered after
// a reminder, migrated and crashed, it ends with the books of a session
// that never was.

const envSteeredChild = "REFINE_STEERED_CHILD" // the child's checkpoint directory

// Version 1 of the host's state, and version 2: notes became findings.
type (
	notesV1 struct {
		N     int      `json:"n"`
		Notes []string `json:"notes"`
	}
	notesV2 struct {
		N        int      `json:"n"`
		Findings []string `json:"findings"`
	}
)

var notesToV2 = iterate.Migration{From: 1, Migrate: func(_ context.Context, b []byte) ([]byte, error) {
	var s notesV1
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return json.Marshal(notesV2{N: s.N, Findings: s.Notes})
}}

// steeredNote is what iteration n finds, with the answer it was given.
func steeredNote(n int, answer string) string { return fmt.Sprintf("%d:%s", n, answer) }

// steeredStrategy asks a human once, when planning iteration 4.
func steeredStrategy() iterate.Strategy {
	return iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		if sit.Iteration == 4 && sit.AnsweredAt == 0 {
			return iterate.Plan{Action: iterate.Escalate, Escalation: &iterate.Escalation{Reason: "halfway", Question: "go on?"}}, nil
		}
		return iterate.Plan{Action: iterate.Refine}, nil
	})
}

// steeredOpts are the session's options: 10 tokens an iteration under the
// budget tokens, a day to answer with a reminder an hour before.
func steeredOpts(store iterate.Checkpointer, tokens int64, version int, migrations ...iterate.Migration) []iterate.Option {
	return []iterate.Option{
		iterate.WithCheckpointer(store, iterate.Journal),
		iterate.WithSession("steered"),
		iterate.WithMaxIterations(0),
		iterate.WithBudget(budget.Limits{Tokens: tokens}),
		iterate.WithStrategy(steeredStrategy()),
		iterate.WithQuestionDeadline(iterate.Deadline{After: 24 * time.Hour, RemindBefore: time.Hour}),
		iterate.WithCrashLoopBound(3),
		iterate.WithStateVersion(version, migrations...),
	}
}

func steeredV1(store iterate.Checkpointer, tokens int64, opts ...iterate.Option) iterate.Engine[notesV1] {
	return iterate.New(iterate.Func(func(_ context.Context, s notesV1, r iterate.Round) (notesV1, error) {
		r.Charge(budget.Usage{Tokens: 10, Calls: 1})
		return notesV1{N: s.N + 1, Notes: append(s.Notes, steeredNote(s.N+1, r.Task.Answer))}, nil
	}), append(steeredOpts(store, tokens, 1), opts...)...)
}

// steeredV2 is the host after the deploy; crashAt > 0 kills the process
// with SIGKILL in iteration crashAt, before it returns.
func steeredV2(store iterate.Checkpointer, tokens int64, crashAt int) iterate.Engine[notesV2] {
	return iterate.New(iterate.Func(func(_ context.Context, s notesV2, r iterate.Round) (notesV2, error) {
		r.Charge(budget.Usage{Tokens: 10, Calls: 1})
		if s.N+1 == crashAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return notesV2{N: s.N + 1, Findings: append(s.Findings, steeredNote(s.N+1, r.Task.Answer))}, nil
	}), steeredOpts(store, tokens, 2, notesToV2)...)
}

// TestSteeredChild is not a test: TestSteeredSessionKeepsItsBooks runs
// the test binary as this child, the deployed host, which extends the
// session's budget and is killed in iteration 7.
func TestSteeredChild(t *testing.T) {
	dir := os.Getenv(envSteeredChild)
	if dir == "" {
		t.Skip("helper process of TestSteeredSessionKeepsItsBooks")
	}
	res, err := steeredV2(checkpoint.NewDir(dir), 50, 7).Resume(context.Background(),
		iterate.ExtendBudget(budget.Limits{Tokens: 100}, "alice"))
	t.Fatalf("not killed: %v, %+v", err, res)
}

// TestSteeredSessionKeepsItsBooks guards issue 34's "Done when": a
// session that escalates when planning iteration 4 and has 50 tokens (5
// iterations) is answered the day after, following its reminder; stops
// budget_exhausted; is resumed by a host of the next state version
// (migrated) which extends its budget to 100 tokens and is killed with
// SIGKILL in iteration 7; and is resumed again to its end. Its state,
// status, iterations, usage, counters and history equal those of a
// session run by the new host with 100 tokens and answered at once.
// Mutations caught: a step of the steering that loses or repeats
// anything (the extension not kept, the answer not passed on, the killed
// iteration charged, the migration losing notes) changes the books.
func TestSteeredSessionKeepsItsBooks(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()

	// The session that never was steered: the new host, 100 tokens,
	// answered at once.
	ref := &checkpoint.Memory{}
	_, err := steeredV2(ref, 100, 0).Run(ctx, notesV2{})
	if !errors.Is(err, iterate.ErrEscalated) {
		t.Fatalf("reference run: %v, want an escalation", err)
	}
	want, err := steeredV2(ref, 100, 0).Resume(ctx, iterate.WithAnswer("yes"))
	if err != nil || want.Status != iterate.BudgetExhausted || want.Iterations != 10 {
		t.Fatalf("reference: %v, %s after %d iterations", err, want.Status, want.Iterations)
	}

	dir := t.TempDir()
	store := checkpoint.NewDir(dir)
	synctest.Test(t, func(t *testing.T) {
		if _, err := steeredV1(store, 50).Run(ctx, notesV1{}); !errors.Is(err, iterate.ErrEscalated) {
			t.Fatalf("first run: %v, want an escalation", err)
		}
		time.Sleep(23 * time.Hour)
		rec := &iteratetest.Recorder{}
		if _, err := steeredV1(store, 50, iterate.WithObserver(rec.Observe)).Resume(ctx); !errors.Is(err, iterate.ErrEscalated) ||
			len(iteratetest.Of[iterate.QuestionReminder](rec)) != 1 {
			t.Fatalf("at the reminder: %v, %d reminders", err, len(iteratetest.Of[iterate.QuestionReminder](rec)))
		}
		time.Sleep(30 * time.Minute)
		res, err := steeredV1(store, 50).Resume(ctx, iterate.WithAnswer("yes"))
		if err != nil || res.Status != iterate.BudgetExhausted || res.Iterations != 5 {
			t.Fatalf("answered: %v, %s after %d iterations", err, res.Status, res.Iterations)
		}
	})

	// The deployed host extends the budget and is killed in iteration 7.
	cmd := exec.Command(os.Args[0], "-test.run=^TestSteeredChild$")
	cmd.Env = append(os.Environ(), envSteeredChild+"="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("the child was not killed: %v\n%s", err, out.String())
	}
	saved, err := store.Load(ctx, "steered")
	if err != nil || saved.Iteration != 6 {
		t.Fatalf("after the kill: %v, checkpoint after iteration %d; want 6", err, saved.Iteration)
	}

	// The same host's code (still configured with 50 tokens) resumes it.
	got, err := steeredV2(store, 50, 0).Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Extensions) != 1 || got.Extensions[0].By != "alice" {
		t.Errorf("extensions %+v", got.Extensions)
	}
	got.Usage.Wall, want.Usage.Wall, got.Totals.Duration, want.Totals.Duration = 0, 0, 0, 0
	type books struct {
		Status     iterate.Status
		Iterations int
		State      notesV2
		Usage      budget.Usage
		Totals     iterate.Totals
	}
	if diff := cmp.Diff(books{want.Status, want.Iterations, want.State, want.Usage, want.Totals},
		books{got.Status, got.Iterations, got.State, got.Usage, got.Totals}); diff != "" {
		t.Errorf("books (-never steered +steered):\n%s", diff)
	}
	if diff := cmp.Diff(want.History, got.History, cmpopts.IgnoreUnexported(converge.History{}),
		cmpopts.IgnoreFields(converge.Attempt{}, "Duration"), cmpopts.IgnoreFields(converge.TaskRun{}, "Duration")); diff != "" {
		t.Errorf("history (-never steered +steered):\n%s", diff)
	}
}
