package iterate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// sessionFiles returns the contents of the files of session in dir (its
// generations and lock file), by name.
func sessionFiles(t *testing.T, dir, session string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, session+".*"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(names))
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(name)] = string(data)
	}
	return out
}

// editedWorker is the peaking loop's worker, converging once an edited
// draft has reached round 5.
func editedWorker() *iterate.FuncWorker[draft] {
	w := peakWorker(nil)
	assess := w.AssessFunc
	w.AssessFunc = func(ctx context.Context, d draft) (gap.Assessment, error) {
		a, err := assess(ctx, d)
		a.Complete = strings.HasPrefix(d.Text, "[edited]") && d.Round >= 5
		return a, err
	}
	return w
}

// TestForkWithEditedState: a fork from generation 3 of the peaking loop,
// with an edited state, converges on its own, continuing the original's
// history, counters and usage as they were at generation 3; the original
// session's files are byte for byte what they were, and every checkpoint
// of the fork names its origin.
func TestForkWithEditedState(t *testing.T) {
	dir := t.TempDir()
	store := checkpoint.NewDir(dir, checkpoint.KeepAll())
	ctx := context.Background()
	if _, err := iterate.New(peakWorker(nil), peakOptions(store)...).Run(ctx, draft{}); err != nil {
		t.Fatal(err)
	}
	gens, err := store.Generations(ctx, "peak")
	if err != nil {
		t.Fatal(err)
	}
	if len(gens) != 7 || gens[2].Generation != 3 || gens[2].Iteration != 3 {
		t.Fatalf("the original's generations: %d, want 7 with generation 3 at iteration 3", len(gens))
	}
	before := sessionFiles(t, dir, "peak")

	edited := draft{Round: 3, Text: "[edited][draft 1][draft 2][draft 3]"}
	eng := iterate.New(editedWorker(), iterate.WithMaxIterations(6), iterate.WithKeepBest(),
		iterate.WithCheckpointer(store), iterate.WithSession("peak-fork"))
	res, err := eng.Resume(ctx, iterate.ForkFrom("peak", 3), iterate.WithState(edited))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != iterate.Converged || res.Iterations != 5 {
		t.Errorf("fork: %s after %d iterations, want converged after 5", res.Status, res.Iterations)
	}
	if want := (draft{Round: 5, Text: edited.Text + "[draft 4][draft 5]"}); res.State != want {
		t.Errorf("fork's state %+v, want %+v", res.State, want)
	}
	// Usage and counters continue the original's at generation 3: three
	// iterations of 100, 200 and 300 tokens, then the fork's two.
	if res.Usage.Tokens != 1500 || res.Usage.Calls != 5 || res.Usage.Iterations != 5 || res.Totals.Iterations != 5 {
		t.Errorf("fork's usage %+v totals %+v, want 1500 tokens, 5 calls, 5 iterations", res.Usage, res.Totals)
	}
	// The best as saved at generation 3 was iteration 2's (0.5: state 3
	// had not been assessed yet); the fork's first assessment, of the
	// edited state, scores 0.9 and is the best from then on.
	if res.Best == nil || res.Best.Iteration != 3 || res.Best.State != edited || res.Best.Score != 0.9 {
		t.Errorf("fork's best %+v, want the edited state at iteration 3", res.Best)
	}
	if diff := cmp.Diff(before, sessionFiles(t, dir, "peak")); diff != "" {
		t.Errorf("the original session's files changed (-before +after):\n%s", diff)
	}
	forkGens, err := store.Generations(ctx, "peak-fork")
	if err != nil {
		t.Fatal(err)
	}
	if len(forkGens) == 0 || forkGens[0].Generation != 1 {
		t.Fatalf("the fork's generations: %v, want them numbered from 1", forkGens)
	}
	for _, c := range forkGens {
		if c.Origin != (checkpoint.Origin{Session: "peak", Generation: 3}) {
			t.Errorf("fork's generation %d: origin %+v, want peak@3", c.Generation, c.Origin)
		}
	}
	// Resuming the fork (a session like any other) keeps its origin.
	if _, err := eng.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	latest, err := store.Load(ctx, "peak-fork")
	if err != nil || latest.Origin.Session != "peak" {
		t.Errorf("the fork's latest after a resume: %+v, %v", latest, err)
	}
}

// TestForkUnderOtherSettings: a fork under settings other than the
// original's (a higher limit, a budget) needs no AllowSettingsChange, runs
// under its own, and leaves the original's fingerprint as it was; the fork
// can be resumed under its own settings.
func TestForkUnderOtherSettings(t *testing.T) {
	store := &checkpoint.Memory{KeepAll: true}
	ctx := context.Background()
	if _, err := iterate.New(peakWorker(nil), peakOptions(store)...).Run(ctx, draft{}); err != nil {
		t.Fatal(err)
	}
	orig, err := store.Load(ctx, "peak")
	if err != nil {
		t.Fatal(err)
	}
	opts := []iterate.Option{iterate.WithMaxIterations(8), iterate.WithBudget(budget.Limits{Tokens: 100_000}),
		iterate.WithCheckpointer(store), iterate.WithSession("wider")}
	res, err := iterate.New(peakWorker(nil), opts...).Resume(ctx, iterate.ForkFrom("peak", 4))
	if err != nil {
		t.Fatalf("fork under other settings: %v", err)
	}
	if res.Status != iterate.MaxIterations || res.Iterations != 8 || res.State.Round != 8 {
		t.Errorf("fork: %s after %d iterations (round %d), want the new limit of 8", res.Status, res.Iterations, res.State.Round)
	}
	if res.Best != nil {
		t.Errorf("fork without WithKeepBest has a best: %+v", res.Best)
	}
	after, err := store.Load(ctx, "peak")
	if err != nil || after.Generation != orig.Generation || after.Fingerprint != orig.Fingerprint {
		t.Errorf("the original's latest changed: generation %d fingerprint %s, was %d %s (%v)", after.Generation, after.Fingerprint, orig.Generation, orig.Fingerprint, err)
	}
	fork, err := store.Load(ctx, "wider")
	if err != nil || fork.Fingerprint == orig.Fingerprint {
		t.Errorf("fork's fingerprint %s, the original's %s (%v): want the fork's own", fork.Fingerprint, orig.Fingerprint, err)
	}
	if _, err := iterate.New(peakWorker(nil), opts...).Resume(ctx); err != nil {
		t.Errorf("resuming the fork under its own settings: %v", err)
	}
}

// nothingMore is a checkpointer with no capability beyond Save and Load.
type nothingMore struct{ iterate.Checkpointer }

// TestForkErrors: what a fork refuses, with which errors.
func TestForkErrors(t *testing.T) {
	ctx := context.Background()
	store := new(checkpoint.Memory)
	if _, err := iterate.New(peakWorker(nil), peakOptions(store)...).Run(ctx, draft{}); err != nil {
		t.Fatal(err)
	}
	fork := func(cp iterate.Checkpointer, session string, opts ...iterate.ResumeOption) error {
		_, err := iterate.New(peakWorker(nil), iterate.WithCheckpointer(cp), iterate.WithSession(session)).Resume(ctx, opts...)
		return err
	}
	var ue *iterate.UnsupportedError
	if err := fork(nothingMore{store}, "f", iterate.ForkFrom("peak", 7)); !errors.As(err, &ue) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("a store without generations: %v, want an *UnsupportedError", err)
	}
	if err := fork(store, "f", iterate.ForkFrom("peak", 1)); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("a generation pruned: %v, want ErrNotFound", err)
	}
	for name, opts := range map[string][]iterate.ResumeOption{
		"own session":     {iterate.ForkFrom("f", 7)},
		"generation 0":    {iterate.ForkFrom("peak", 0)},
		"bad session":     {iterate.ForkFrom("../x", 7)},
		"state, no fork":  {iterate.WithState(draft{})},
		"state of a type": {iterate.ForkFrom("peak", 7), iterate.WithState("text")},
	} {
		if err := fork(store, "f", opts...); !errors.Is(err, iterate.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := store.Load(ctx, "f"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("a refused fork saved something: %v", err)
	}
}

// TestForkWithAnswer: a fork's answer reaches the tasks of its first
// iteration only, as a hint; forked from an escalated generation, it also
// opens a fresh allowance of iterations, as a resume's answer does.
func TestForkWithAnswer(t *testing.T) {
	ctx := context.Background()
	store := &checkpoint.Memory{KeepAll: true}
	answers := map[int]string{}
	w := iterate.Func(func(_ context.Context, n int, r iterate.Round) (int, error) {
		answers[r.Iteration] = r.Task.Answer
		return n + 1, nil
	})
	escalate := converge.PolicyFunc(func(h *converge.History) converge.Decision {
		if h.Iteration == 2 && h.MaxIterations == 3 {
			return converge.Decision{Verdict: converge.Escalate, Reason: "which way?"}
		}
		return converge.IterationLimit{}.Decide(h)
	})
	opts := func(session string) []iterate.Option {
		return []iterate.Option{iterate.WithMaxIterations(3), iterate.WithConvergence(escalate),
			iterate.WithCheckpointer(store), iterate.WithSession(session)}
	}
	if _, err := iterate.New(w, opts("asks")...).Run(ctx, 0); !errors.Is(err, iterate.ErrEscalated) {
		t.Fatalf("Run: %v, want escalated", err)
	}
	latest, err := store.Load(ctx, "asks")
	if err != nil || latest.Status != string(iterate.Escalated) {
		t.Fatalf("latest: %+v, %v", latest, err)
	}
	clear(answers)
	res, err := iterate.New(w, opts("answered")...).Resume(ctx, iterate.ForkFrom("asks", latest.Generation), iterate.WithAnswer("left"))
	if err != nil {
		t.Fatal(err)
	}
	// A fresh allowance of 3 after the 2 iterations answered at.
	if res.Iterations != 5 || answers[3] != "left" || answers[4] != "" {
		t.Errorf("fork of the escalation: %d iterations, answers %v; want 5, \"left\" in iteration 3 only", res.Iterations, answers)
	}
	// From a running generation: a hint, no new allowance.
	clear(answers)
	res, err = iterate.New(w, opts("hinted")...).Resume(ctx, iterate.ForkFrom("asks", 1), iterate.WithAnswer("try harder"))
	if err != nil && !errors.Is(err, iterate.ErrEscalated) {
		t.Fatal(err)
	}
	if answers[2] != "try harder" || res.Iterations != 2 {
		t.Errorf("fork of generation 1 with a hint: %d iterations, answers %v", res.Iterations, answers)
	}
}
