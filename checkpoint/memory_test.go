package checkpoint_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

func TestMemoryGenerations(t *testing.T) {
	tests := []struct {
		name    string
		saves   []uint64
		wantGen uint64
		wantIt  int // Iteration of the loaded checkpoint: which save it was
	}{
		{"ascending", []uint64{1, 2, 3}, 3, 3},
		{"latest_save_wins_over_higher_generation", []uint64{5, 2}, 6, 2},
		{"generation_0", []uint64{0, 0}, 2, 0},
		{"gap_in_generations", []uint64{1, 9}, 9, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m checkpoint.Memory
			for _, g := range tc.saves {
				if err := m.Save(ctx, checkpointtest.Checkpoint("s", g)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := m.Load(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if got.Generation != tc.wantGen || got.Iteration != tc.wantIt {
				t.Errorf("loaded generation %d iteration %d, want generation %d iteration %d", got.Generation, got.Iteration, tc.wantGen, tc.wantIt)
			}
		})
	}
}

// TestMemoryKeepsWhatIsSaved: Memory drops what a checkpoint file does not
// hold, so that swapping Memory for Dir changes nothing.
func TestMemoryKeepsWhatIsSaved(t *testing.T) {
	var m checkpoint.Memory
	c := withSkipped(checkpointtest.Checkpoint("s", 1), 4)
	if err := m.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := m.Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	data, err := checkpoint.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := checkpoint.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := checkpointtest.Diff(fromFile, got); diff != "" {
		t.Errorf("Memory differs from a round trip through the file format (-file +memory):\n%s", diff)
	}
	if got.Skipped != nil {
		t.Errorf("Memory kept Skipped %v", got.Skipped)
	}
	if err := m.Save(ctx, hugeCheckpoint()); err == nil {
		t.Error("Memory accepted a checkpoint above the size limit")
	}
}

// TestMemoryRecycles: saving over a full window reuses the evicted
// generation's memory without letting it leak into what was loaded.
func TestMemoryRecycles(t *testing.T) {
	m := checkpoint.Memory{Keep: 2}
	var loaded []*checkpoint.Checkpoint
	for g := uint64(1); g <= 6; g++ {
		if err := m.Save(ctx, checkpointtest.Checkpoint("s", g)); err != nil {
			t.Fatal(err)
		}
		c, err := m.Load(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, c)
	}
	for i, c := range loaded {
		if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s", uint64(i+1)), c); diff != "" {
			t.Errorf("generation %d changed after later saves (-want +got):\n%s", i+1, diff)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := m.Save(ctx, loaded[3]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a steady-state Memory.Save allocates %v times, want 0", allocs)
	}
}

func TestMemoryLock(t *testing.T) {
	var m checkpoint.Memory
	t1, release, err := m.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Lock(ctx, "s")
	var le *checkpoint.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second Lock: got %v, want a *LockedError", err)
	}
	if diff := cmp.Diff(&checkpoint.LockedError{Session: "s", Holder: "another run in this process"}, le); diff != "" {
		t.Errorf("LockedError mismatch (-want +got):\n%s", diff)
	}
	release()
	t2, again, err := m.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if t1 != 1 || t2 != 2 {
		t.Errorf("tokens %d, %d; want 1, 2", t1, t2)
	}
	release() // a stale release does not free the new holder's lock
	if _, _, err := m.Lock(ctx, "s"); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("Lock after a stale release: got %v, want ErrLocked", err)
	}
	// Remove keeps the lock and the token counter.
	if err := m.Remove(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	c := checkpointtest.Checkpoint("s", 1)
	c.Token = t2
	if err := m.Save(ctx, c); err != nil {
		t.Errorf("Save with the held token after Remove: %v", err)
	}
	again()
	t3, release3, err := m.Lock(ctx, "s")
	if err != nil || t3 != 3 {
		t.Errorf("Lock after Remove: token %d, %v; want 3", t3, err)
	}
	release3()
	if _, _, err := m.Lock(ctx, "bad/name"); !errors.Is(err, checkpoint.ErrInvalidSession) {
		t.Errorf("Lock of an invalid name: got %v, want ErrInvalidSession", err)
	}
}

func TestMemoryFenced(t *testing.T) {
	var m checkpoint.Memory
	token, release, err := m.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	release()
	c := checkpointtest.Checkpoint("s", 1)
	c.Token = token
	err = m.Save(ctx, c)
	var fe *checkpoint.FencedError
	if !errors.As(err, &fe) {
		t.Fatalf("Save with a released token: got %v, want a *FencedError", err)
	}
	if diff := cmp.Diff(&checkpoint.FencedError{Session: "s", Token: 1, Current: 1}, fe); diff != "" {
		t.Errorf("FencedError mismatch (-want +got):\n%s", diff)
	}
	if _, err := m.Load(ctx, "s"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Load after a fenced save: got %v, want ErrNotFound", err)
	}
}

// TestMemoryGenerationsExhausted: as a Dir does, Memory refuses a save that
// would be generation 2^64-1, and so never wraps newest+1 to a generation
// below the newest (before, a save given 2^64-1 was kept, and every later
// save of the session took the generation it was given, the latest save no
// longer the one loaded). The refused save changes nothing.
func TestMemoryGenerationsExhausted(t *testing.T) {
	const max = math.MaxUint64
	for _, m := range []struct {
		name string
		new  func() *checkpoint.Memory
	}{
		{"keep", func() *checkpoint.Memory { return new(checkpoint.Memory) }},
		{"keep_all", func() *checkpoint.Memory { return &checkpoint.Memory{KeepAll: true} }},
	} {
		for _, tc := range []struct {
			name    string
			saves   []uint64 // each must succeed
			refused uint64   // the generation of the refused save
			wantGen uint64   // loaded after it; 0 for ErrNotFound
		}{
			{"first_save_at_max", nil, max, 0},
			{"save_at_max_after_another", []uint64{1}, max, 1},
			{"save_after_max_minus_1", []uint64{max - 1}, 1, max - 1},
			{"save_at_max_after_max_minus_1", []uint64{max - 1}, max, max - 1},
		} {
			for _, stream := range []bool{false, true} {
				name := m.name + "/" + tc.name
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					mem := m.new()
					save := func(c *checkpoint.Checkpoint) error {
						if !stream {
							return mem.Save(ctx, c)
						}
						state := c.State
						c.State = nil
						return mem.SaveFrom(ctx, c, bytes.NewReader(state))
					}
					for _, g := range tc.saves {
						if err := save(checkpointtest.Checkpoint("s", g)); err != nil {
							t.Fatalf("Save of generation %d: %v", g, err)
						}
					}
					err := save(checkpointtest.Checkpoint("s", tc.refused))
					if err == nil || !strings.Contains(err.Error(), "generation numbers exhausted") {
						t.Errorf("Save of generation %d: got %v, want generation numbers exhausted", tc.refused, err)
					}
					got, err := mem.Load(ctx, "s")
					switch {
					case tc.wantGen == 0:
						if !errors.Is(err, checkpoint.ErrNotFound) {
							t.Errorf("Load: %v, want ErrNotFound", err)
						}
					case err != nil:
						t.Errorf("Load: %v", err)
					case got.Generation != tc.wantGen:
						t.Errorf("Load: generation %d, want %d", got.Generation, tc.wantGen)
					}
				})
			}
		}
	}
}

// TestMemorySaveFromRecycles: a streamed save over a full window streams
// into the memory of the state it evicts, so in the steady state it
// allocates nothing, as Save does (TestMemoryRecycles); and what was
// loaded before stays as it was.
func TestMemorySaveFromRecycles(t *testing.T) {
	if checkpoint.RaceEnabled {
		t.Skip("allocation counts are not checked under the race detector")
	}
	m := checkpoint.Memory{Keep: 2}
	c := checkpointtest.Checkpoint("s", 1)
	state := c.State
	c.State = nil
	r := bytes.NewReader(state)
	save := func() {
		r.Reset(state)
		if err := m.SaveFrom(ctx, c, r); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		save()
	}
	first, err := m.Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, save); allocs != 0 {
		t.Errorf("a steady-state Memory.SaveFrom allocates %v times, want 0", allocs)
	}
	if !bytes.Equal(first.State, state) {
		t.Errorf("a state loaded changed after later saves")
	}
}
