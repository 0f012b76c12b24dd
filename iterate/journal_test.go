package iterate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// TestTaskJournal: tasks that finished before an interruption are not run
// again on resume; the resumed loop ends as an uninterrupted one.
func TestTaskJournal(t *testing.T) {
	mk, opts := journalSteps, journalOptions
	want, err := iterate.New(&iteratetest.Script{Steps: mk(nil)}, opts(&checkpoint.Memory{})...).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &checkpoint.Memory{}
	interrupt := func(ctx context.Context, tk iterate.Task) error {
		if tk.Index == 2 { // tasks 1 and 2 finished; Ctrl+C during task 3
			cancel()
			return ctx.Err()
		}
		return nil
	}
	first := &iteratetest.Script{Steps: mk(interrupt)}
	if _, err := iterate.New(first, opts(store)...).Run(ctx, iteratetest.State{}); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
	saved, _ := store.Load(context.Background(), iterate.DefaultSession)
	if n := iterate.JournalLen(saved); n != 2 || saved.Iteration != 0 {
		t.Fatalf("%d journaled tasks at iteration %d, want 2 tasks of iteration 1", n, saved.Iteration)
	}

	second := &iteratetest.Script{Steps: mk(nil)}
	got, err := iterate.New(second, opts(store)...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1.3"}, taskIDs(second)); diff != "" {
		t.Errorf("tasks run after resume (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.State, got.State); diff != "" {
		t.Errorf("state (-uninterrupted +resumed):\n%s", diff)
	}
	// Journaled work is charged once; the interrupted attempt of task 3
	// spent its 100 tokens too.
	if got.Usage.Tokens != want.Usage.Tokens+100 {
		t.Errorf("tokens %d, want %d", got.Usage.Tokens, want.Usage.Tokens+100)
	}
	final, _ := store.Load(context.Background(), iterate.DefaultSession)
	if n := iterate.JournalLen(final); n != 0 {
		t.Errorf("%d journaled tasks kept after their iteration", n)
	}
}

// TestTaskJournalFailed: a task that failed before an interruption is
// journaled like one that succeeded, so the resumed loop neither runs nor
// pays for it again, and it counts as failed as in an uninterrupted run.
// (Mutation caught: record skipping failed outcomes, as it did, reruns
// task 1.1 and charges it twice.)
func TestTaskJournalFailed(t *testing.T) {
	boom := func(ctx context.Context, tk iterate.Task) error {
		if tk.Index == 0 {
			return errors.New("boom")
		}
		return nil
	}
	mk, opts := journalSteps, journalOptions
	want, err := iterate.New(&iteratetest.Script{Steps: mk(boom)}, opts(&checkpoint.Memory{})...).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	if want.Totals.FailedTasks != 1 {
		t.Fatalf("uninterrupted run: %d failed tasks, want 1", want.Totals.FailedTasks)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &checkpoint.Memory{}
	first := &iteratetest.Script{Steps: mk(func(ctx context.Context, tk iterate.Task) error {
		if tk.Index == 2 { // 1.1 failed, 1.2 finished; Ctrl+C during 1.3
			cancel()
			return ctx.Err()
		}
		return boom(ctx, tk)
	})}
	if _, err := iterate.New(first, opts(store)...).Run(ctx, iteratetest.State{}); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
	saved, _ := store.Load(context.Background(), iterate.DefaultSession)
	if n := iterate.JournalLen(saved); n != 2 {
		t.Fatalf("%d journaled tasks, want 2 (the failed one and the finished one; not the interrupted one)", n)
	}

	second := &iteratetest.Script{Steps: mk(boom)}
	got, err := iterate.New(second, opts(store)...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1.3"}, taskIDs(second)); diff != "" {
		t.Errorf("tasks run after resume (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.State, got.State); diff != "" {
		t.Errorf("state (-uninterrupted +resumed):\n%s", diff)
	}
	if got.Totals.FailedTasks != want.Totals.FailedTasks {
		t.Errorf("failed tasks %d, want %d", got.Totals.FailedTasks, want.Totals.FailedTasks)
	}
	// The failed task is charged once; only the interrupted attempt of
	// task 3 is paid twice.
	if got.Usage.Tokens != want.Usage.Tokens+100 {
		t.Errorf("tokens %d, want %d", got.Usage.Tokens, want.Usage.Tokens+100)
	}
}

// TestTaskJournalFailedAtInterruption: a task that fails (with an error
// of its own, not the context's) once the run's context has ended is
// interrupted, not failed: it is not journaled, and runs again on resume —
// exec.CommandContext's "signal: killed" after Ctrl+C cannot be told from a
// failure of its own. Only the successful task 1.1 is replayed; tasks 1.2
// and 1.3 are paid twice, and the session counts the one failure of an
// uninterrupted run. (Mutation caught: journaling a failure whose error is
// not the context's once the context ended, which replayed a killed AI CLI
// as a failed attempt: "consecutive failures: 1/3" after zero real ones.)
func TestTaskJournalFailedAtInterruption(t *testing.T) {
	mk, opts := journalSteps, journalOptions
	boom := func(_ context.Context, tk iterate.Task) error {
		if tk.Index == 1 {
			return errors.New("boom")
		}
		return nil
	}
	want, err := iterate.New(&iteratetest.Script{Steps: mk(boom)}, opts(&checkpoint.Memory{})...).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &checkpoint.Memory{}
	first := &iteratetest.Script{Steps: mk(func(ctx context.Context, tk iterate.Task) error {
		switch tk.Index {
		case 1: // fails on its own as Ctrl+C comes
			cancel()
		case 2: // interrupted
			return ctx.Err()
		}
		return boom(ctx, tk)
	})}
	if _, err := iterate.New(first, opts(store)...).Run(ctx, iteratetest.State{}); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
	second := &iteratetest.Script{Steps: mk(boom)}
	got, err := iterate.New(second, opts(store)...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1.2", "1.3"}, taskIDs(second)); diff != "" {
		t.Errorf("tasks run after resume (-want +got):\n%s", diff)
	}
	// The interrupted attempts of 1.2, and of 1.3 when it started before
	// the loop saw the cancellation, are paid again.
	extra := int64(100 * (len(taskIDs(first)) - 1))
	if got.Usage.Tokens != want.Usage.Tokens+extra || got.Totals.FailedTasks != want.Totals.FailedTasks {
		t.Errorf("tokens %d, %d failed tasks; want %d, %d", got.Usage.Tokens, got.Totals.FailedTasks,
			want.Usage.Tokens+extra, want.Totals.FailedTasks)
	}
}

// journalSteps is the script of the journal's tests: one iteration of three
// tasks of 100 tokens each, running work, then convergence.
func journalSteps(work func(ctx context.Context, tk iterate.Task) error) []iteratetest.Step {
	return []iteratetest.Step{
		{Assessment: research(0.3, 0.85, 0, 3), Usage: budget.Usage{Tokens: 100}, Work: work},
		{Assessment: research(0.9, 0.95, 0, 0)},
	}
}

// journalOptions journals on store, one task at a time.
func journalOptions(store iterate.Checkpointer) []iterate.Option {
	return []iterate.Option{iterate.WithCheckpointer(store, iterate.Journal), iterate.WithParallelism(1)}
}

// taskIDs returns the IDs of the tasks a script ran, in order.
func taskIDs(s *iteratetest.Script) []string {
	_, tasks := s.Calls()
	var ids []string
	for _, tk := range tasks {
		ids = append(ids, tk.ID())
	}
	return ids
}
