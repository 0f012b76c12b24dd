//go:build unix

package iterate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

const (
	envBestChild     = "REFINE_BEST_CHILD"     // the child's checkpoint directory
	envBestInterrupt = "REFINE_BEST_INTERRUPT" // "1": the child waits for SIGINT in iteration 5
)

// bestSummary is what a child reports of its result.
type bestSummary struct {
	Status     iterate.Status
	Iterations int
	State      draft
	Best       *iterate.Best[draft]
}

// TestKeepBestChild is not a test: TestKeepBestAcrossProcesses runs the
// test binary as this child, which runs or resumes the peaking loop in
// $REFINE_BEST_CHILD under a context that SIGINT cancels, as a program
// does, and prints its result as "result <json>". With
// $REFINE_BEST_INTERRUPT=1 it prints "in 5" in iteration 5 and waits there
// for the signal.
func TestKeepBestChild(t *testing.T) {
	dir := os.Getenv(envBestChild)
	if dir == "" {
		t.Skip("helper process of TestKeepBestAcrossProcesses")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	hook := func(ctx context.Context, round int) error {
		if round == 5 && os.Getenv(envBestInterrupt) == "1" {
			fmt.Println("in 5")
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	eng := iterate.New(peakWorker(hook), peakOptions(checkpoint.NewDir(dir, checkpoint.KeepBest()))...)
	res, err := eng.Resume(ctx)
	if errors.Is(err, checkpoint.ErrNotFound) {
		res, err = eng.Run(ctx, draft{})
	}
	if res == nil {
		t.Fatal(err)
	}
	line, jerr := json.Marshal(bestSummary{Status: res.Status, Iterations: res.Iterations, State: res.State, Best: res.Best})
	if jerr != nil {
		t.Fatal(jerr)
	}
	fmt.Printf("result %s\n", line)
}

// TestKeepBestAcrossProcesses: the loop whose score peaks at iteration 3
// of 6 is interrupted by SIGINT in iteration 5, in a process of its own;
// another process resumes it to its end. Both results name iteration 3's
// state as the best, as an uninterrupted run does, and the session's
// latest checkpoint names a kept generation that holds it.
func TestKeepBestAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	first := bestChild(t, dir, true)
	if first.Status != iterate.Interrupted || first.Iterations != 4 {
		t.Fatalf("interrupted child: %s after %d iterations, want interrupted after 4", first.Status, first.Iterations)
	}
	if diff := cmp.Diff(wantPeak, first.Best); diff != "" {
		t.Errorf("interrupted child's best (-want +got):\n%s", diff)
	}
	second := bestChild(t, dir, false)
	if second.Status != iterate.MaxIterations || second.Iterations != 6 || second.State.Round != 6 {
		t.Fatalf("resuming child: %s after %d iterations, round %d", second.Status, second.Iterations, second.State.Round)
	}
	if diff := cmp.Diff(wantPeak, second.Best); diff != "" {
		t.Errorf("resuming child's best (-want +got):\n%s", diff)
	}
	checkBestGeneration(t, checkpoint.NewDir(dir), "peak", wantPeak)
}

// bestChild runs one child on dir, with interrupt sending it SIGINT once
// it waits in iteration 5, and returns its result.
func bestChild(t *testing.T, dir string, interrupt bool) bestSummary {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeepBestChild$")
	env := envBestInterrupt + "=0"
	if interrupt {
		env = envBestInterrupt + "=1"
	}
	cmd.Env = append(os.Environ(), envBestChild+"="+dir, env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	var res *bestSummary
	var other strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "in 5":
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(line, "result "):
			res = new(bestSummary)
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "result ")), res); err != nil {
				t.Fatal(err)
			}
		default:
			other.WriteString(line + "\n")
		}
	}
	if err := cmd.Wait(); err != nil || res == nil {
		t.Fatalf("child: %v, result %v\n%s%s", err, res, other.String(), stderr.String())
	}
	return *res
}
