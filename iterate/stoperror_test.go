package iterate_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/iterate"
)

// TestStopErrorNamesCauseOnce: the *StopError of a storage failure, in the
// middle of the run or at its final save, says its cause once (it said
// "checkpoint failed: X: X").
func TestStopErrorNamesCauseOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(int, *checkpoint.Checkpoint) bool
	}{
		{"mid_run", func(n int, _ *checkpoint.Checkpoint) bool { return n >= 2 }},
		{"final_save", func(_ int, c *checkpoint.Checkpoint) bool { return c.Status != string(iterate.Running) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &checkpointtest.Faulty{Store: &checkpoint.Memory{}, FailSave: func(n int, c *checkpoint.Checkpoint) error {
				if tc.fail(n, c) {
					return syscall.ENOSPC
				}
				return nil
			}}
			_, err := iterate.New(iterate.Func(step1), iterate.WithMaxIterations(3),
				iterate.WithCheckpointer(store, iterate.Strict)).Run(context.Background(), 0)
			var se *iterate.StopError
			if !errors.As(err, &se) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Run: %v, want a *StopError caused by ENOSPC", err)
			}
			msg, cause := err.Error(), syscall.ENOSPC.Error()
			if n := strings.Count(msg, cause); n != 1 || !strings.Contains(msg, "checkpoint failed: ") {
				t.Errorf("error %q names its cause %d times, want once after %q", msg, n, "checkpoint failed: ")
			}
		})
	}
}
