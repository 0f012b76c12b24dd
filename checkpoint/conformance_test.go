package checkpoint_test

import (
	"context"
	"errors"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// The engine's compile-time checks live in package iterate; these keep the
// suite's optional interfaces honest for the stores of this package.
var (
	_ checkpointtest.Locker  = (*checkpoint.Memory)(nil)
	_ checkpointtest.Remover = (*checkpoint.Memory)(nil)
	_ checkpointtest.Locker  = (*checkpoint.Dir)(nil)
	_ checkpointtest.Remover = (*checkpoint.Dir)(nil)
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkpointtest.Run(t, tc.newStore)
		})
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
	ctx := context.Background()
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
}
