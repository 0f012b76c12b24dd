package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// TestFork: -fork SESSION@GEN starts a new session from that generation,
// which converges on its own and records where it came from; the session
// forked keeps its generations as they were.
func TestFork(t *testing.T) {
	dir := t.TempDir()
	capture(t, func() int { return run(dir, 4, false, false, 0) })
	store := checkpoint.NewDir(dir)
	before, err := store.Generations(context.Background(), "quickstart")
	if err != nil || len(before) != 3 {
		t.Fatalf("the session's generations: %d, %v; want 3, all kept", len(before), err)
	}
	var stderr bytes.Buffer
	out := capture(t, func() int { return cli([]string{"-state", dir, "-fork", "quickstart@1"}, &stderr) })
	for _, want := range []string{
		"Forking generation 1 of session quickstart as session quickstart-fork-1",
		"Status: converged after 2 iterations",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	latest, err := store.Load(context.Background(), "quickstart-fork-1")
	if err != nil || latest.Origin != (checkpoint.Origin{Session: "quickstart", Generation: 1}) {
		t.Errorf("the fork's latest checkpoint: %+v, %v; want its origin quickstart@1", latest, err)
	}
	after, err := store.Generations(context.Background(), "quickstart")
	if err != nil || len(after) != len(before) || after[2].Time != before[2].Time {
		t.Errorf("the session forked changed: %d generations, %v", len(after), err)
	}
	// The fork is a session of its own: -resume -session resumes it.
	again := capture(t, func() int { return cli([]string{"-state", dir, "-resume", "-session", "quickstart-fork-1"}, &stderr) })
	if !strings.Contains(again, "Status: converged after 2 iterations") {
		t.Errorf("resume of the fork:\n%s", again)
	}
}

// TestForkArguments: a -fork that does not name a generation, or goes with
// -resume, is a usage error.
func TestForkArguments(t *testing.T) {
	for _, args := range [][]string{{"-fork", "quickstart"}, {"-fork", "@1"}, {"-fork", "quickstart@0"}, {"-fork", "quickstart@x"},
		{"-fork", "quickstart@1", "-resume"}} {
		var stderr bytes.Buffer
		if code := cli(args, &stderr); code != 2 || !strings.Contains(stderr.String(), "quickstart: -fork") {
			t.Errorf("%q: exit %d, %q; want 2 and the reason", args, code, stderr.String())
		}
	}
}

// TestPrintBest: the best state is printed when it is not the last.
func TestPrintBest(t *testing.T) {
	last := Notes{Read: []string{"a.go", "b.go"}, Facts: []string{"a", "b"}}
	for _, tc := range []struct {
		best *iterate.Best[Notes]
		want string
	}{
		{nil, ""},
		{&iterate.Best[Notes]{State: last, Iteration: 2, Score: 0.5}, ""},
		{&iterate.Best[Notes]{State: Notes{Read: []string{"a.go"}, Facts: []string{"a"}}, Iteration: 1, Score: 0.5},
			"Best (not the last): after iteration 1, coverage 0.50; it read 1 files and learnt:\n  - a\n"},
	} {
		var b bytes.Buffer
		printBest(&b, &iterate.Result[Notes]{State: last, Iterations: 2, Best: tc.best})
		if b.String() != tc.want {
			t.Errorf("printBest(%+v) = %q, want %q", tc.best, b.String(), tc.want)
		}
	}
}
