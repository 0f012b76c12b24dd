package iteratetest_test

import (
	"context"
	"fmt"
	"os"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// exampleT stands in for the *testing.T an Example has not: it prints what
// the kit reports.
type exampleT struct {
	name string
	dirs []string
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Name() string                      { return t.name }
func (t *exampleT) Errorf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }
func (t *exampleT) Logf(format string, args ...any)   { fmt.Printf(format+"\n", args...) }

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

func (t *exampleT) cleanup() {
	for _, d := range t.dirs {
		os.RemoveAll(d)
	}
}

// ExampleCassette replays a loop recorded once with its model (the scout
// of downstream_test.go, whose outputs held an API key, scrubbed): no
// model call, the same outcomes in every run. REFINE_RECORD=1 go test
// records it again. In a test, t is the test's *testing.T.
func ExampleCassette() {
	t := &exampleT{name: "ExampleCassette"}
	model := &scout{}
	w := iteratetest.Cassette(t, "testdata/scout.cassette.json", model, iteratetest.Scrub(redact))

	res, err := iterate.New(w, iterate.WithMaxIterations(4)).Run(context.Background(), notes{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s after %d iterations: %d tokens on the books, %d model calls\n",
		res.Status, res.Iterations, res.Usage.Tokens, model.calls.Load())
	for _, r := range res.History.Recent[1:] {
		for _, run := range r.TaskRuns {
			if run.Failed() {
				run.Output = "failed: " + run.Err
			}
			fmt.Printf("%d %-16s %s\n", r.Iteration, run.Target, run.Output)
		}
	}
	// Output:
	// early_exit after 2 iterations: 5900 tokens on the books, 0 model calls
	// 1 Which database?  [key sk-REDACTED] Postgres
	// 1 Which queue?     [key sk-REDACTED] queue: none yet
	// 1 Which cache?     failed: model: timed out
	// 2 Which cache?     [key sk-REDACTED] cache: none yet
	// 2 coverage         nothing to ask
}

// ExampleCrash crashes a loop at every boundary of its saves: each time,
// the loop runs in a child process (this test binary, run again) that
// kills itself there; the kit resumes it and compares its end with an
// uninterrupted run's. In a test, t is the test's *testing.T, and every
// failure names the boundary that broke a promise.
func ExampleCrash() {
	t := &exampleT{name: "ExampleCrash"}
	defer t.cleanup()
	step := func(_ context.Context, n int, r iterate.Round) (int, error) {
		r.Charge(budget.Usage{Tokens: 100})
		return n + 1, nil
	}
	loop := func(opts ...iterate.Option) iterate.Engine[int] {
		return iterate.New(iterate.Func(step), append([]iterate.Option{iterate.WithMaxIterations(2),
			iterate.WithCheckpointer(new(checkpoint.Memory), iterate.Journal)}, opts...)...)
	}

	iteratetest.Crash(t, loop, 0)
	// Output:
	// iteratetest: Crash: killed the loop at 15 boundaries of its 5 saves and resumed it: 0 broke a promise
}
