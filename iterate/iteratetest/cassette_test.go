package iteratetest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// recorder is a TB that keeps what the kit reports instead of failing the
// test, so that a test can assert that a helper fails.
type recorder struct {
	*testing.T
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// replayCopy returns a copy of the cassette at path to replay, in a test
// that must replay even under REFINE_RECORD=1 (a recording would call the
// model, or record the changed plan the test asks for).
func replayCopy(t *testing.T, path string) string {
	t.Helper()
	t.Setenv(iteratetest.RecordEnv, "")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return cp
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// TestCassetteReplaysWithoutTheModel: a replay gives the recorded run's
// outcomes without calling the worker's Work, with the secrets scrubbed
// from the outputs, in the file and in the replay. (Mutation caught: a
// cassette that calls the worker on replay — calls > 0.)
func TestCassetteReplaysWithoutTheModel(t *testing.T) {
	const path = "testdata/scout.cassette.json"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "sk-live") {
		t.Errorf("%s holds the secret the scrub takes out", path)
	}
	live, err := iterate.New[notes](&scout{}, iterate.WithMaxIterations(4)).Run(context.Background(), notes{})
	if err != nil {
		t.Fatal(err)
	}
	model := &scout{}
	res, err := iterate.New(iteratetest.Cassette(t, replayCopy(t, path), model), iterate.WithMaxIterations(4)).Run(context.Background(), notes{})
	if err != nil {
		t.Fatal(err)
	}
	if n := model.calls.Load(); n != 0 {
		t.Errorf("the replay called the model %d times", n)
	}
	type end struct {
		State      notes
		Status     iterate.Status
		Iterations int
		Tokens     int64
		Tasks      int
	}
	want := end{live.State, live.Status, live.Iterations, live.Usage.Tokens, live.Totals.Tasks}
	got := end{res.State, res.Status, res.Iterations, res.Usage.Tokens, res.Totals.Tasks}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replay differs from a live run (-live +replay):\n%s", diff)
	}
	if out := res.History.Recent[1].TaskRuns[0].Output; out != "[key sk-REDACTED] Postgres" {
		t.Errorf("replayed output %q, want the scrubbed recording", out)
	}
}

// TestCassetteMissFailsWithThePlanDiff: a replay asked for a task the
// cassette does not hold (here, a strategy that sends another role)
// reports the tasks of the iteration as recorded against as asked, and
// stops the loop with ErrNotRecorded. (Mutation caught: matching by the
// task's index alone, which replays another task's outcome silently.)
func TestCassetteMissFailsWithThePlanDiff(t *testing.T) {
	verify := iterate.StrategyFunc(func(ctx context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		p, err := (&iterate.Adaptive{}).Plan(ctx, sit)
		for i := range p.Tasks {
			p.Tasks[i].Role = iterate.RoleVerify
		}
		return p, err
	})
	rec := &recorder{T: t}
	w := iteratetest.Cassette(rec, replayCopy(t, "testdata/scout.cassette.json"), &scout{})
	_, err := iterate.New(w, iterate.WithStrategy(verify), iterate.WithMaxIterations(4)).Run(context.Background(), notes{})
	if !errors.Is(err, iteratetest.ErrNotRecorded) {
		t.Errorf("Run: %v, want an error matching ErrNotRecorded", err)
	}
	errs := rec.errors()
	if len(errs) == 0 {
		t.Fatal("no failure reported")
	}
	for _, want := range []string{"scout.cassette.json holds no outcome of task 1.", "(-recorded +asked)", `-`, `Role:      "explore"`, `+`, `Role:      "verify"`,
		"REFINE_RECORD=1 go test -run '^TestCassetteMissFailsWithThePlanDiff$'"} {
		if !strings.Contains(errs[0], want) {
			t.Errorf("the report lacks %q:\n%s", want, errs[0])
		}
	}
}

// TestCassetteRecordsTasksByKey: a recording is scrubbed, and each
// replayed outcome goes to its own task (matched by iteration, role and
// gaps), whatever the order the parallel tasks ask in, under -race.
// (Mutations caught: a cassette that writes outputs unscrubbed; one that
// matches by the order tasks ask, which gives a task another's answer.)
func TestCassetteRecordsTasksByKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reverse.json")
	t.Setenv(iteratetest.RecordEnv, "1")
	rec, err := iterate.New(iteratetest.Cassette(t, path, &scout{}, iteratetest.Scrub(redact)), iterate.WithMaxIterations(4)).Run(context.Background(), notes{})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(iteratetest.RecordEnv, "")
	copyPath := filepath.Join(t.TempDir(), "replay.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "sk-live") || !strings.Contains(string(data), "sk-REDACTED") {
		t.Errorf("the recording is not scrubbed:\n%s", data)
	}
	// The replay's three parallel tasks ask in any order.
	for range 5 {
		res, err := iterate.New(iteratetest.Cassette(t, copyPath, &scout{}), iterate.WithMaxIterations(4)).Run(context.Background(), notes{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rec.State, res.State); diff != "" {
			t.Fatalf("replayed state differs (-recorded +replayed):\n%s", diff)
		}
	}
}

// TestCassetteOfAFunc: the cassette of an iterate.Func is a FuncWorker
// (one call per iteration, whatever the plan), and replays what the step
// reported through its Round: usage, output, actions and done. (Mutations
// caught: a cassette of a Func as a plain Worker — two calls in an
// iteration of two gaps; one that does not replay the Round's reports —
// usage, output or convergence differ.)
func TestCassetteOfAFunc(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	step := func(_ context.Context, s int, r iterate.Round) (int, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		r.Charge(budget.Usage{Tokens: int64(10 * r.Iteration), Cost: 0.01})
		r.Output(fmt.Sprintf("round %d: %d gaps", r.Iteration, len(r.Task.Gaps)))
		r.Did("edit main.go")
		if r.Iteration == 2 {
			r.Done()
		}
		return s + 1, nil
	}
	fw := iterate.Func(step)
	fw.AssessFunc = func(context.Context, int) (gap.Assessment, error) {
		return gap.Assessment{Questions: []gap.Question{{Text: "a", Critical: true}, {Text: "b", Critical: true}}}, nil
	}
	run := func(w iterate.Worker[int]) *iterate.Result[int] {
		t.Helper()
		res, err := iterate.New(w, iterate.WithMaxIterations(5)).Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	path := filepath.Join(t.TempDir(), "func.json")
	t.Setenv(iteratetest.RecordEnv, "1")
	live := run(iteratetest.Cassette(t, path, iterate.Worker[int](fw)))
	if calls != 2 {
		t.Fatalf("recording: %d calls, want one per iteration (2)", calls)
	}
	t.Setenv(iteratetest.RecordEnv, "0")
	replay := filepath.Join(t.TempDir(), "replay.json")
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(replay, data, 0o600); err != nil {
		t.Fatal(err)
	}
	calls = 0
	got := run(iteratetest.Cassette(t, replay, iterate.Worker[int](fw)))
	if calls != 0 {
		t.Errorf("replay: %d calls, want none", calls)
	}
	untimed := cmp.Options{cmpopts.IgnoreFields(converge.Attempt{}, "Duration"), cmpopts.IgnoreFields(converge.TaskRun{}, "Duration")}
	if diff := cmp.Diff(live.History.Recent, got.History.Recent, untimed); diff != "" {
		t.Errorf("replayed history differs (-recorded +replayed):\n%s", diff)
	}
	if live.Usage.Tokens != got.Usage.Tokens || live.Usage.Cost != got.Usage.Cost || got.Status != iterate.Converged || got.State != 2 {
		t.Errorf("replay: %+v %s %d, want %+v converged 2", got.Usage, got.Status, got.State, live.Usage)
	}
}
