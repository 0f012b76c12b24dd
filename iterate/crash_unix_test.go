//go:build unix

package iterate_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// TestHelperCrashLoop is not a test: TestCrashAnywhere runs the test binary
// as a loop that checkpoints into $REFINE_CRASH_DIR and prints each completed
// iteration, until it is killed.
func TestHelperCrashLoop(t *testing.T) {
	dir := os.Getenv("REFINE_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process")
	}
	step := func(_ context.Context, s []int, r iterate.Round) ([]int, error) {
		return append(s, r.Iteration), nil // the state grows: saves take longer
	}
	eng := iterate.New(iterate.Func(step), iterate.WithMaxIterations(0),
		iterate.WithCheckpointer(checkpoint.NewDir(dir)), iterate.WithSession("crash"),
		iterate.WithObserver(func(e iterate.Event) {
			if c, ok := e.(iterate.CheckpointSaved); ok && c.Err == nil {
				fmt.Println("saved", c.Iteration())
			}
		}))
	var err error
	if os.Getenv("REFINE_CRASH_RESUME") != "" {
		_, err = eng.Resume(context.Background())
	} else {
		_, err = eng.Run(context.Background(), nil)
	}
	t.Fatal("the loop ended:", err)
}

// TestCrashAnywhere kills a checkpointing loop with SIGKILL at many moments,
// including in the middle of saves, and checks that the latest checkpoint is
// always readable, consistent, and resumable, and that a killed run never
// blocks the next one.
func TestCrashAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	last := 0
	for round := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrashLoop$")
		cmd.Env = append(os.Environ(), "REFINE_CRASH_DIR="+dir)
		if round > 0 {
			cmd.Env = append(cmd.Env, "REFINE_CRASH_RESUME=1")
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a varying number of saves: between two saves or in the
		// middle of one.
		sc := bufio.NewScanner(out)
		target, seen := 3+round*7, 0
		for sc.Scan() && seen < target {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "saved" {
				seen++
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()

		c, err := checkpoint.NewDir(dir).Load(context.Background(), "crash")
		if err != nil {
			t.Fatalf("round %d: latest checkpoint unreadable after kill -9: %v", round, err)
		}
		var state []int
		if err := iterate.JSON.Unmarshal(c.State, &state); err != nil {
			t.Fatalf("round %d: state: %v", round, err)
		}
		if len(state) != c.Iteration || c.Iteration < last {
			t.Fatalf("round %d: checkpoint at iteration %d holds %d steps (previous %d)", round, c.Iteration, len(state), last)
		}
		for i, v := range state {
			if v != i+1 {
				t.Fatalf("round %d: step %d is %d: a resumed run skipped or repeated an iteration", round, i+1, v)
			}
		}
		last = c.Iteration
		t.Logf("round %d: killed after %s saves, resumable at iteration %d", round, strconv.Itoa(seen), c.Iteration)
	}
	if last == 0 {
		t.Fatal("no progress")
	}
}
