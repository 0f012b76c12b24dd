package iterate_test

// Tests of issue 20: every documented promise holds. Each test names the
// item of the issue it covers; each fails on the code before the fix.

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// savedEvent is what a test compares of a CheckpointSaved event.
type savedEvent struct {
	Iteration int
	Status    iterate.Status
	Failed    bool
}

// TestJournalSavesReported (issue 20, item 7): a journal save is a save
// attempt and sends CheckpointSaved, as events.go promises; a strict journal
// run that stops on a storage failure reports the failed save.
func TestJournalSavesReported(t *testing.T) {
	tests := []struct {
		name     string
		fail     bool
		persist  iterate.Persist
		want     []savedEvent
		wantStop iterate.Status
	}{
		{
			name: "journal", persist: iterate.Journal, wantStop: iterate.MaxIterations,
			want: []savedEvent{
				{1, iterate.Running, false}, // task 1.1 journaled
				{1, iterate.Running, false}, // iteration 1 saved
				{2, iterate.Running, false}, // task 2.1 journaled
				{2, iterate.Running, false}, // iteration 2 saved
				{2, iterate.MaxIterations, false},
			},
		},
		{
			name: "strict journal on a failing store", fail: true, persist: iterate.Strict | iterate.Journal, wantStop: iterate.Failed,
			want: []savedEvent{{1, iterate.Running, true}}, // task 1.1's journal save, retried, failed
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { // the strict retries' backoff in fake time
				store := &checkpointtest.Faulty{Store: &checkpoint.Memory{}, FailSave: func(int, *checkpoint.Checkpoint) error {
					if tt.fail {
						return syscall.EIO
					}
					return nil
				}}
				var rec iteratetest.Recorder
				res, _ := iterate.New(iterate.Func(step1), iterate.WithMaxIterations(2),
					iterate.WithCheckpointer(store, tt.persist), iterate.WithObserver(rec.Observe)).Run(context.Background(), 0)
				if res.Status != tt.wantStop {
					t.Errorf("status %s, want %s", res.Status, tt.wantStop)
				}
				var got []savedEvent
				for _, e := range iteratetest.Of[iterate.CheckpointSaved](&rec) {
					got = append(got, savedEvent{e.Iteration(), e.Status, e.Err != nil})
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("CheckpointSaved events (-want +got):\n%s", diff)
				}
			})
		})
	}
}

var _ = errors.Is
