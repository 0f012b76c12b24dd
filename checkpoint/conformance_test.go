package checkpoint_test

import (
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
