package iteratetest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// newestOnly is a broken store: a wrapper of checkpoint.Dir whose saves
// keep only the newest entry of the engine's task journal.
type newestOnly struct{ dir *checkpoint.Dir }

func (s newestOnly) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	var rec map[string]json.RawMessage
	var journal []json.RawMessage
	if json.Unmarshal(c.Engine, &rec) == nil && json.Unmarshal(rec["journal"], &journal) == nil && len(journal) > 1 {
		rec["journal"], _ = json.Marshal(journal[len(journal)-1:])
		cc := *c
		cc.Engine, _ = json.Marshal(rec)
		c = &cc
	}
	return s.dir.Save(ctx, c)
}

func (s newestOnly) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	return s.dir.Load(ctx, session)
}

func (s newestOnly) Lock(ctx context.Context, session string) (uint64, func() error, error) {
	return s.dir.Lock(ctx, session)
}

// TestCrashCatchesALostJournalEntry: the crash kit fails a loop whose
// journal keeps only its newest entry, naming the boundary and the task
// that ran again. (Rule guarded: no task the killed run journaled runs
// again. Mutation caught: the newestOnly store; a kit that does not check
// the tasks a resumed run runs passes it, as the state, usage and
// counters come out the same.)
func TestCrashCatchesALostJournalEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process per boundary")
	}
	w := iteratetest.Cassette(t, replayCopy(t, "testdata/scout.cassette.json"), &scout{})
	loop := func(opts ...iterate.Option) iterate.Engine[notes] {
		return iterate.New(w, append([]iterate.Option{iterate.WithMaxIterations(4),
			iterate.WithCheckpointer(new(checkpoint.Memory), iterate.Journal)}, opts...)...)
	}
	rec := &recorder{T: t}
	iteratetest.Crash(rec, loop, notes{}, iteratetest.CrashStore(func(dir string) iterate.Checkpointer {
		return newestOnly{checkpoint.NewDir(dir)}
	}))
	errs := rec.errors()
	found := false
	for _, e := range errs {
		// Deterministic: the tasks of iteration 1 all ended (their
		// TaskEnded sent) before its checkpoint, which holds one entry.
		if strings.Contains(e, "iteratetest: Crash: kill before save 4 of 8 (the checkpoint of iteration 1): task 1.") &&
			strings.Contains(e, "ran again in the resumed run, though the killed run had journaled it") {
			found = true
		}
		if strings.Contains(e, "resumed loop ended otherwise") {
			t.Errorf("unexpected failure: %s", e)
		}
	}
	if !found {
		t.Errorf("the kit did not report a task of iteration 1 run again after a kill before its checkpoint; it reported:\n%s", strings.Join(errs, "\n"))
	}
	t.Logf("the kit reported:\n%s", strings.Join(errs, "\n"))
}
