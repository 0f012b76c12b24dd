package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// The tests inspect directories written by real loops: a toy researcher
// reads files (coverage) and grows surer of one finding as it reads
// (confidence), spending tokens and a call per task.

// notes is the toy loop's state.
type notes struct {
	Read int `json:"read"`
}

const files = 10

// toy is the toy researcher. gate, when set, is received from before each
// task of iteration 2 and later, so that a test can hold a loop running.
type toy struct {
	gate chan struct{}
}

func (toy) Assess(_ context.Context, n notes) (gap.Assessment, error) {
	a := gap.Assessment{FilesAnalyzed: n.Read, EstimatedFiles: files}
	for i := n.Read; i < files; i++ {
		a.Missing = append(a.Missing, fmt.Sprintf("file%02d.go", i))
	}
	if n.Read > 0 {
		a.Findings = []gap.Finding{{ID: "f1", Description: "the finding", Confidence: min(0.5+0.06*float64(n.Read), 0.95),
			Citations: []string{"file00.go:1"}, Sources: []string{"explore", "citation"}}}
	}
	return a, nil
}

func (w toy) Work(ctx context.Context, _ notes, t iterate.Task) (iterate.Outcome[notes], error) {
	if w.gate != nil && t.Iteration >= 2 {
		select {
		case <-w.gate:
		case <-ctx.Done():
			return iterate.Outcome[notes]{}, ctx.Err()
		}
	}
	read := 0
	if t.Gap().Kind == gap.Coverage {
		read = 2
	}
	return iterate.Outcome[notes]{Part: notes{Read: read}, Usage: budget.Usage{Tokens: 250, Calls: 1}}, nil
}

func (toy) Integrate(_ context.Context, n notes, outs []iterate.Outcome[notes]) (notes, error) {
	for _, o := range outs {
		if o.Err == nil {
			n.Read = min(n.Read+o.Part.Read, files)
		}
	}
	return n, nil
}

// limits are the budget limits of the toy loops.
var limits = budget.Limits{Tokens: 20000, Calls: 40}

// runToy runs the toy loop as session in dir and returns its result.
func runToy(t *testing.T, dir, session string, opts ...iterate.Option) *iterate.Result[notes] {
	t.Helper()
	opts = append([]iterate.Option{
		iterate.WithCheckpointer(checkpoint.NewDir(dir)),
		iterate.WithSession(session),
		iterate.WithBudget(limits),
	}, opts...)
	res, err := iterate.New(toy{}, opts...).Run(context.Background(), notes{})
	if err != nil && res == nil {
		t.Fatal(err)
	}
	return res
}

// genPath is the file of a generation of session in dir.
func genPath(dir, session string, gen uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s.%020d.ckpt", session, gen))
}

// newest returns the newest generation of session in dir.
func newest(t *testing.T, dir, session string) uint64 {
	t.Helper()
	for c, err := range checkpoint.NewDir(dir).Sessions(context.Background()) {
		if c != nil && c.Session == session {
			if err != nil {
				t.Fatal(err)
			}
			return c.Generation
		}
	}
	t.Fatalf("no session %q in %s", session, dir)
	return 0
}

// sessions writes the directory the tests inspect:
//
//	converged  converged after 4 iterations
//	partial    stopped at its iteration limit, criteria unmet
//	escalated  escalated with a question
//	fallback   converged, its newest generation truncated
//	broken     every generation damaged
func sessions(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if res := runToy(t, dir, "converged", iterate.WithMaxIterations(8)); res.Status != iterate.Converged {
		t.Fatalf("converged: %s (%s)", res.Status, res.Reason)
	}
	if res := runToy(t, dir, "partial", iterate.WithMaxIterations(2)); res.Status != iterate.MaxIterations {
		t.Fatalf("partial: %s (%s)", res.Status, res.Reason)
	}
	if res := runToy(t, dir, "escalated", iterate.WithMaxIterations(2),
		iterate.WithConvergence(converge.IterationLimit{Escalate: true})); res.Status != iterate.Escalated {
		t.Fatalf("escalated: %s (%s)", res.Status, res.Reason)
	}
	runToy(t, dir, "fallback", iterate.WithMaxIterations(8))
	path := genPath(dir, "fallback", newest(t, dir, "fallback"))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)-7], 0o600); err != nil {
		t.Fatal(err)
	}
	runToy(t, dir, "broken", iterate.WithMaxIterations(2))
	entries, err := filepath.Glob(filepath.Join(dir, "broken.*.ckpt"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("broken: no generations (%v)", err)
	}
	for _, p := range entries {
		if err := os.WriteFile(p, []byte("not a checkpoint"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// report loads an undamaged session of dir (Load changes nothing then) and
// inspects it.
func report(t *testing.T, dir, session string) (*checkpoint.Checkpoint, *iterate.Report) {
	t.Helper()
	c, err := checkpoint.NewDir(dir).Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skipped) > 0 {
		t.Fatal(errors.New("report of a damaged session"))
	}
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, r
}
