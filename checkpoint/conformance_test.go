package checkpoint_test

import (
	"context"
	"errors"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// store is the method set both stores of this package share, which the
// engine and checkpointtest discover by type assertion.
type store interface {
	checkpointtest.Store
	Lock(ctx context.Context, session string) (uint64, func() error, error)
	Remove(ctx context.Context, session string) error
}

var (
	_ store = (*checkpoint.Memory)(nil)
	_ store = (*checkpoint.Dir)(nil)
	_ store = (*checkpointtest.Faulty)(nil)
)

func TestConformance(t *testing.T) {
	tests := []struct {
		name     string
		newStore func(t *testing.T) checkpointtest.Store
	}{
		{"Memory_zero_value", func(t *testing.T) checkpointtest.Store { return new(checkpoint.Memory) }},
		{"Memory_keep_1", func(t *testing.T) checkpointtest.Store { return &checkpoint.Memory{Keep: 1} }},
		{"Dir", func(t *testing.T) checkpointtest.Store { return checkpoint.NewDir(t.TempDir()) }},
		{"Faulty_without_faults", func(t *testing.T) checkpointtest.Store {
			return &checkpointtest.Faulty{Store: checkpoint.NewDir(t.TempDir())}
		}},
		{"Dir_keep_1_nested", func(t *testing.T) checkpointtest.Store {
			return checkpoint.NewDir(t.TempDir()+"/not/yet/created", checkpoint.Keep(1))
		}},
		{"Memory_keep_all", func(t *testing.T) checkpointtest.Store { return &checkpoint.Memory{KeepAll: true} }},
		{"Memory_keep_1_best_limited", func(t *testing.T) checkpointtest.Store {
			return &checkpoint.Memory{Keep: 1, KeepBest: true, MaxBytes: 4 << 10}
		}},
		{"Dir_keep_all", func(t *testing.T) checkpointtest.Store { return checkpoint.NewDir(t.TempDir(), checkpoint.KeepAll()) }},
		{"Dir_keep_1_best_limited", func(t *testing.T) checkpointtest.Store {
			return checkpoint.NewDir(t.TempDir(), checkpoint.Keep(1), checkpoint.KeepBest(), checkpoint.MaxBytes(4<<10))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkpointtest.Run(t, tc.newStore)
		})
	}
}

// TestConformanceError: the error-returning form passes both stores.
func TestConformanceError(t *testing.T) {
	if err := checkpointtest.Test(func() (checkpointtest.Store, error) { return new(checkpoint.Memory), nil }); err != nil {
		t.Errorf("Memory: %v", err)
	}
	root := t.TempDir()
	n := 0
	err := checkpointtest.Test(func() (checkpointtest.Store, error) {
		n++
		return checkpoint.NewDir(root + "/" + string(rune('a'+n))), nil
	})
	if err != nil {
		t.Errorf("Dir: %v", err)
	}
}

// TestFaulty: the injected failures fail exactly the chosen operations, and
// never reach the store.
func TestFaulty(t *testing.T) {
	full := errors.New("no space left on device")
	gone := errors.New("volume unmounted")
	f := &checkpointtest.Faulty{
		Store:    new(checkpoint.Memory),
		FailSave: func(n int, _ *checkpoint.Checkpoint) error { return map[bool]error{true: full}[n == 2] },
		FailLoad: func(n int, _ string) error { return map[bool]error{true: gone}[n == 1] },
	}
	if err := f.Save(ctx, checkpointtest.Checkpoint("s", 1)); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(ctx, checkpointtest.Checkpoint("s", 2)); !errors.Is(err, full) {
		t.Fatalf("second save: %v, want the injected failure", err)
	}
	if _, err := f.Load(ctx, "s"); !errors.Is(err, gone) {
		t.Fatalf("first load: %v, want the injected failure", err)
	}
	c, err := f.Load(ctx, "s")
	if err != nil || c.Generation != 1 {
		t.Fatalf("second load: generation %v, %v; the failed save must not have reached the store", c, err)
	}
	if saves, loads := f.Calls(); saves != 2 || loads != 2 {
		t.Errorf("calls %d saves, %d loads", saves, loads)
	}
	// Lock and Remove pass through.
	token, release, err := f.Lock(ctx, "s")
	if err != nil || token != 1 {
		t.Fatalf("Lock: token %d, %v", token, err)
	}
	if _, _, err := f.Lock(ctx, "s"); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("second Lock: %v, want ErrLocked", err)
	}
	release()
	if err := f.Remove(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load(ctx, "s"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Load after Remove: %v", err)
	}
}
