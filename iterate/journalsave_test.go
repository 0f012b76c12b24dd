package iterate_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

// streamingRecorder is a journalRecorder that takes the state as a
// stream: the journal's saves are then made by the tasks, in turn (see
// run.asyncJournal).
type streamingRecorder struct{ journalRecorder }

func (s *streamingRecorder) SaveFrom(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error {
	var buf bytes.Buffer
	if _, err := state.WriteTo(&buf); err != nil {
		return err
	}
	cc := *c
	cc.State = buf.Bytes()
	return s.Save(ctx, &cc)
}

// TestJournalSavesHoldEveryEntry: every journal save holds every task of
// the iteration journaled so far, not only the task just finished. Under
// SIGKILL only what the last save holds survives; the mutation "a journal
// save keeps only the newest entry" (record, or writeJournal, saving
// entries[len(entries)-1:]) passed every other test but the kill
// harness's "ended" check (issue 24): this one catches it without a kill,
// on both paths: the tasks' own saves, in turn (a streaming store), and
// the journal's writer (a store that takes bytes).
func TestJournalSavesHoldEveryEntry(t *testing.T) {
	plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 3)}, nil
	})
	run := func(t *testing.T, iterations int, store iterate.Checkpointer, rec *journalRecorder) [][]string {
		_, err := iterate.New[int](&goexiter{}, iterate.WithMaxIterations(iterations), iterate.WithStrategy(plan),
			iterate.WithParallelism(1), iterate.WithCheckpointer(store, iterate.Journal)).Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		got := rec.saves
		if len(got) > 0 && got[len(got)-1] == nil {
			got = got[:len(got)-1] // the final save, with its status
		}
		return got
	}
	t.Run("tasks save in turn", func(t *testing.T) {
		store := &streamingRecorder{}
		got := run(t, 2, store, &store.journalRecorder)
		// One task at a time: each journal save adds one entry; the save
		// at the end of an iteration holds none.
		want := [][]string{
			{"1.1"}, {"1.1", "1.2"}, {"1.1", "1.2", "1.3"}, nil,
			{"2.1"}, {"2.1", "2.2"}, {"2.1", "2.2", "2.3"}, nil,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tasks journaled in each save (-want +got):\n%s", diff)
		}
	})
	t.Run("writer", func(t *testing.T) {
		// Which tasks a save holds depends on timing: enough iterations
		// that some save holds more than the first task (the mutation
		// above failed 39 runs in 40 here).
		const writerIterations = 40
		store := &journalRecorder{}
		got := run(t, writerIterations, store, store)
		// The writer saves what ended by the time it starts a save: the
		// tasks of the iteration so far, each save more than the one
		// before; the iteration's save, which holds none, may take the
		// place of the last, or of all when the loop integrates the
		// iteration before the writer starts.
		iteration, held := 1, 0
		for i, ids := range got {
			if ids == nil { // the iteration's save: it may take the place of every journal save
				iteration, held = iteration+1, 0
				continue
			}
			var want []string
			for k := range len(ids) {
				want = append(want, fmt.Sprintf("%d.%d", iteration, k+1))
			}
			if diff := cmp.Diff(want, ids); diff != "" || len(ids) <= held {
				t.Errorf("save %d: tasks journaled %v after %d of iteration %d; want the first %d or more (all saves: %v)",
					i, ids, held, iteration, held+1, got)
			}
			held = len(ids)
		}
		if iteration != writerIterations+1 {
			t.Errorf("saves end in iteration %d, want %d saved: %v", iteration-1, writerIterations, got)
		}
	})
}
