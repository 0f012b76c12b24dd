package iterate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// journalRecorder is a store that records, for every save, the IDs of the
// tasks journaled in it.
type journalRecorder struct {
	mem   checkpoint.Memory
	mu    sync.Mutex
	saves [][]string
}

func (s *journalRecorder) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	var ids []string
	for _, e := range iterate.JournaledTasks(c) {
		ids = append(ids, fmt.Sprintf("%d.%d", e[0], e[1]+1))
	}
	s.mu.Lock()
	s.saves = append(s.saves, ids)
	s.mu.Unlock()
	return s.mem.Save(ctx, c)
}

func (s *journalRecorder) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	return s.mem.Load(ctx, session)
}

// TestJournalSavesHoldEveryEntry: every journal save holds every task of
// the iteration journaled so far, not only the task just finished. Under
// SIGKILL only what the last save holds survives; the mutation "a journal
// save keeps only the newest entry" (record saving
// entries[len(entries)-1:]) passed every other test but the kill harness's
// "ended" check (issue 24): this one catches it without a kill.
func TestJournalSavesHoldEveryEntry(t *testing.T) {
	plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 3)}, nil
	})
	store := &journalRecorder{}
	_, err := iterate.New[int](&goexiter{}, iterate.WithMaxIterations(2), iterate.WithStrategy(plan),
		iterate.WithParallelism(1), iterate.WithCheckpointer(store, iterate.Journal)).Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// One task at a time: each journal save adds one entry; the save at
	// the end of an iteration holds none.
	want := [][]string{
		{"1.1"}, {"1.1", "1.2"}, {"1.1", "1.2", "1.3"}, nil,
		{"2.1"}, {"2.1", "2.2"}, {"2.1", "2.2", "2.3"}, nil,
	}
	got := store.saves
	if len(got) > 0 && got[len(got)-1] == nil && len(got) == len(want)+1 {
		got = got[:len(want)] // the final save, with its status
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tasks journaled in each save (-want +got):\n%s", diff)
	}
}
