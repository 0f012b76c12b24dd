package iterate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// notes is the state of a toy research loop: the files read so far.
type notes struct {
	Files []string `json:"files"`
}

// researcher reads two files per task until it has read eight of ten.
type researcher struct{}

var corpus = []string{"auth.go", "jwt.go", "login.go", "middleware.go", "session.go",
	"token.go", "user.go", "store.go", "cache.go", "config.go"}

func (researcher) Assess(_ context.Context, n notes) (gap.Assessment, error) {
	return gap.Assessment{
		FilesAnalyzed:  len(n.Files),
		EstimatedFiles: len(corpus),
		Findings:       []gap.Finding{{ID: "f1", Description: "JWT auth", Confidence: 0.9, Citations: []string{"jwt.go:10"}, Sources: []string{"explore", "citation"}}},
		Missing:        corpus[len(n.Files):],
	}, nil
}

func (researcher) Work(_ context.Context, n notes, t iterate.Task) (iterate.Outcome[notes], error) {
	next := t.Gap().Focus
	return iterate.Outcome[notes]{Part: notes{Files: next[:min(2, len(next))]}}, nil
}

func (researcher) Integrate(_ context.Context, n notes, outs []iterate.Outcome[notes]) (notes, error) {
	files := slices.Clone(n.Files)
	for _, o := range outs {
		if o.Err == nil {
			files = append(files, o.Part.Files...)
		}
	}
	return notes{Files: files}, nil
}

// New infers the state type from the worker; options are plain values.
func ExampleNew() {
	eng := iterate.New(researcher{}, iterate.WithMaxIterations(4))
	res, err := eng.Run(context.Background(), notes{})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Status, "after", res.Iterations, "iterations")
	fmt.Println(res.Reason)
	fmt.Println("files read:", len(res.State.Files))
	// Output:
	// converged after 4 iterations
	// converged: coverage 0.80 ≥ 0.70, confidence 0.90 ≥ 0.80, conflicts 0 ≤ 2, questions 0/0 answered
	// files read: 8
}

// Func turns a function into a worker for the simplest loops: one call per
// iteration, as an AI CLI runner makes.
func ExampleFunc() {
	step := func(_ context.Context, calls int, r iterate.Round) (int, error) {
		fmt.Printf("iteration %d/%d\n", r.Iteration, r.MaxIterations)
		return calls + 1, nil
	}
	res, _ := iterate.New(iterate.Func(step), iterate.WithMaxIterations(3)).Run(context.Background(), 0)
	fmt.Println(res.Status, res.State)
	// Output:
	// iteration 1/3
	// iteration 2/3
	// iteration 3/3
	// max_iterations 3
}

// A custom strategy decides the action and the tasks; StrategyFunc adapts a
// function. Here every gap gets one "fix" task, in one iteration.
func Example_customStrategy() {
	fixAll := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		plan := iterate.Plan{Action: iterate.Retry, Reason: "fix everything at once"}
		for _, g := range sit.History.Gaps {
			plan.Tasks = append(plan.Tasks, iterate.Task{Role: "fix", Gaps: []gap.Gap{g}})
		}
		return plan, nil
	})
	eng := iterate.New(researcher{}, iterate.WithStrategy(fixAll), iterate.WithMaxIterations(2),
		iterate.WithObserver(func(e iterate.Event) {
			if p, ok := e.(iterate.Planned); ok {
				fmt.Printf("iteration %d: %s with %d task(s): %s\n", p.Iteration(), p.Plan.Action, len(p.Plan.Tasks), p.Plan.Reason)
			}
		}))
	res, _ := eng.Run(context.Background(), notes{})
	fmt.Println(res.Status)
	// Output:
	// iteration 1: retry with 1 task(s): fix everything at once
	// iteration 2: retry with 1 task(s): fix everything at once
	// max_iterations
}

// A custom convergence policy combines the policies of package converge
// with one of the host's own.
func Example_customConvergence() {
	enoughFiles := converge.PolicyFunc(func(h *converge.History) converge.Decision {
		if h.Current.FilesAnalyzed >= 4 {
			return converge.Decision{Verdict: converge.Converged, Reason: "read 4 files: enough for a summary"}
		}
		return converge.Decision{}
	})
	eng := iterate.New(researcher{},
		iterate.WithFailureThreshold(2), // read by converge.Failures
		iterate.WithConvergence(converge.Any(
			enoughFiles,
			converge.Failures{},
			converge.IterationLimit{},
		)))
	res, _ := eng.Run(context.Background(), notes{})
	fmt.Println(res.Status, "after", res.Iterations, "iterations:", res.Reason)
	// Output:
	// converged after 2 iterations: read 4 files: enough for a summary
}

// Cancelling the context saves the state as interrupted; Resume continues
// after the last completed iteration.
func Example_resume() {
	store := &checkpoint.Memory{} // or checkpoint.NewDir(".refine")
	ctx, cancel := context.WithCancel(context.Background())
	interrupted := false
	step := func(ctx context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration == 3 && !interrupted {
			interrupted = true
			cancel() // Ctrl+C during iteration 3
			return n, ctx.Err()
		}
		return n + 1, nil
	}
	eng := iterate.New(iterate.Func(step), iterate.WithMaxIterations(5),
		iterate.WithCheckpointer(store), iterate.WithSession("build"))

	res, err := eng.Run(ctx, 0)
	fmt.Println(res.Status, "after", res.Iterations, "iterations;", errors.Is(err, context.Canceled))

	res, err = eng.Resume(context.Background())
	fmt.Println(res.Status, "after", res.Iterations, "iterations; state", res.State, err)
	// Output:
	// interrupted after 2 iterations; true
	// max_iterations after 5 iterations; state 5 <nil>
}

// An escalated run asks a human; Resume with the answer goes on.
func ExampleWithAnswer() {
	failing := gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{
		Failures: []gap.TestCaseFailure{{Name: "TestToken", Expected: "userId 123", Received: `userId "123"`}}}}}
	attempts := 0
	w := &iterate.FuncWorker[int]{
		Do: func(_ context.Context, n int, r iterate.Round) (int, error) {
			attempts++
			if r.Task.Answer != "" {
				fmt.Println("next attempt told:", r.Task.Answer)
				return 1, nil
			}
			return 0, nil
		},
		AssessFunc: func(_ context.Context, fixed int) (gap.Assessment, error) {
			if fixed == 1 {
				return gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{Passed: true}}}, nil
			}
			return failing, nil
		},
	}
	eng := iterate.New(w, iterate.WithMaxIterations(3), iterate.WithCheckpointer(&checkpoint.Memory{}),
		iterate.WithConvergence(converge.Any(converge.Passing{}, converge.IterationLimit{Escalate: true})))
	_, err := eng.Run(context.Background(), 0)
	var esc *iterate.EscalationError
	if errors.As(err, &esc) {
		fmt.Println(esc.Escalation.Question)
	}
	res, _ := eng.Resume(context.Background(), iterate.WithAnswer("the test is right: use a number"))
	fmt.Println(res.Status, "after", attempts, "attempts")
	// Output:
	// After 3 attempt(s), this problem persists: TestToken: Expected: userId 123, Received: userId "123".
	// How should the loop proceed? Answer with guidance for the next attempt, or stop the session.
	// next attempt told: the test is right: use a number
	// converged after 4 attempts
}

// The loop's levels are declared once: the gap analysis and the convergence
// policy read the same thresholds, so a raised coverage threshold is a gap
// the strategy targets, and a resume under other thresholds is refused by
// name.
func ExampleWithThresholds() {
	store := &checkpoint.Memory{}
	ctx, cancel := context.WithCancel(context.Background())
	strict := gap.Thresholds{MinCoverage: 0.9}
	eng := iterate.New(researcher{},
		iterate.WithThresholds(strict),
		iterate.WithCheckpointer(store),
		iterate.WithObserver(func(e iterate.Event) {
			if p, ok := e.(iterate.Planned); ok {
				fmt.Println("iteration", p.Iteration(), "targets", p.Plan.Tasks[0].Gap().Kind)
				if p.Iteration() == 2 {
					cancel() // Ctrl+C
				}
			}
		}))
	_, err := eng.Run(ctx, notes{})
	fmt.Println(errors.Is(err, iterate.ErrInterrupted))

	_, err = iterate.New(researcher{}, iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.5}),
		iterate.WithCheckpointer(store)).Resume(context.Background())
	var changed *iterate.SettingsChangedError
	if errors.As(err, &changed) {
		fmt.Println(changed.Changes)
	}
	// Output:
	// iteration 1 targets coverage
	// iteration 2 targets coverage
	// true
	// [coverage threshold 0.9 → 0.5]
}

// Persistence settings go with their store: here a failed save ends the run
// (after retries), and finished tasks are journaled so that a crash loses
// only the tasks in flight.
func ExampleWithCheckpointer() {
	eng := iterate.New(researcher{},
		iterate.WithCheckpointer(&checkpoint.Memory{}, iterate.Strict|iterate.Journal),
		iterate.WithSession("auth-research"))
	res, err := eng.Run(context.Background(), notes{})
	fmt.Println(res.Status, err)
	// Output:
	// converged <nil>
}

// rawBytes is a codec for a state that is bytes already: it keeps them as
// they are, and, as a StreamCodec, writes them straight into the store.
type rawBytes struct{}

func (rawBytes) Marshal(v any) ([]byte, error) { return v.([]byte), nil }

func (rawBytes) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}

func (rawBytes) Encode(w io.Writer, v any) error {
	_, err := w.Write(v.([]byte))
	return err
}

// A StreamCodec saves a state straight into a store that is a StreamSaver
// (checkpoint.Dir and checkpoint.Memory are): the state is never held
// encoded in memory, whatever its size.
func ExampleStreamCodec() {
	ctx := context.Background()
	store := &checkpoint.Memory{}
	step := func(_ context.Context, s []byte, r iterate.Round) ([]byte, error) {
		return fmt.Appendf(s, " +%d", r.Iteration), nil
	}
	eng := iterate.New(iterate.Func(step), iterate.WithMaxIterations(3), iterate.WithSession("blob"),
		iterate.WithCheckpointer(store), iterate.WithCodec(rawBytes{}))
	res, err := eng.Run(ctx, []byte("draft"))
	if err != nil {
		fmt.Println(err)
		return
	}
	saved, _ := store.Load(ctx, "blob")
	fmt.Printf("state %q\nsaved %q\n", res.State, saved.State)
	// Output:
	// state "draft +1 +2 +3"
	// saved "draft +1 +2 +3"
}

// A host's role table: prompts for the default roles, by their typed names
// (a misspelt role name does not compile), and the default feedback bound
// beside its setting.
func ExampleRoles() {
	s := &iterate.Adaptive{
		Roles: iterate.Roles{
			gap.Coverage:            {Name: iterate.RoleExplore, Prompt: "Analyze ONLY these files: {focus}."},
			gap.ConflictingFindings: {Name: iterate.RoleVerify, Prompt: "Resolve conflict: {detail}."},
		},
		FeedbackLimit: iterate.DefaultFeedbackLimit,
	}
	h := &converge.History{MaxIterations: 4}
	h.Observe(gap.Assessment{}, []gap.Gap{
		{Kind: gap.Coverage, Target: "coverage", Focus: []string{"jwt.go"}, Priority: gap.P1},
		{Kind: gap.ConflictingFindings, Target: "c1", Detail: "SQL Server vs PostgreSQL", Priority: gap.P2},
		{Kind: gap.Evidence, Target: "F003", Priority: gap.P2},
	})
	plan, _ := s.Plan(context.Background(), &iterate.Situation{Iteration: 1, History: h})
	for _, t := range plan.Tasks {
		switch t.Role {
		case iterate.RoleExplore, iterate.RoleVerify:
			fmt.Printf("%s: %s\n", t.Role, t.Prompt)
		default:
			fmt.Printf("%s (default role, no prompt)\n", t.Role)
		}
	}
	// Output:
	// explore: Analyze ONLY these files: jwt.go.
	// verify: Resolve conflict: SQL Server vs PostgreSQL.
	// citation (default role, no prompt)
}

// WithKeepBest keeps the best state beside the last: an essay whose fourth
// draft is worse than its third stops with the fourth, and returns the
// third as the best.
func ExampleWithKeepBest() {
	quality := []float64{0.2, 0.5, 0.8, 0.9, 0.6} // by drafts written
	w := iterate.Func(func(_ context.Context, drafts int, _ iterate.Round) (int, error) {
		return drafts + 1, nil
	})
	w.AssessFunc = func(_ context.Context, drafts int) (gap.Assessment, error) {
		return gap.Assessment{Score: quality[drafts]}, nil
	}
	res, err := iterate.New(w, iterate.WithMaxIterations(4), iterate.WithKeepBest()).Run(context.Background(), 0)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("last: %d drafts, score %.1f (%s)\n", res.State, quality[res.State], res.Status)
	fmt.Printf("best: %d drafts, score %.1f, after iteration %d\n", res.Best.State, res.Best.Score, res.Best.Iteration)
	// Output:
	// last: 4 drafts, score 0.6 (max_iterations)
	// best: 3 drafts, score 0.9, after iteration 3
}

// ForkFrom starts a new session from any kept generation of another: here
// from generation 2 of an essay loop whose later drafts went off track,
// with a human's edit of that draft. The original session is only read.
func ExampleForkFrom() {
	ctx := context.Background()
	store := &checkpoint.Memory{KeepAll: true} // keeps every generation to go back to
	w := iterate.Func(func(_ context.Context, essay string, r iterate.Round) (string, error) {
		return essay + fmt.Sprintf(" +%d", r.Iteration), nil
	})
	w.AssessFunc = func(_ context.Context, essay string) (gap.Assessment, error) {
		return gap.Assessment{Complete: strings.HasPrefix(essay, "edited") && strings.Count(essay, "+") >= 4}, nil
	}
	original := iterate.New(w, iterate.WithMaxIterations(4), iterate.WithCheckpointer(store), iterate.WithSession("essay"))
	res, err := original.Run(ctx, "draft")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("original: %q (%s)\n", res.State, res.Status)

	gens, _ := store.Generations(ctx, "essay")
	for _, g := range gens[:2] {
		fmt.Printf("generation %d: iteration %d, %s\n", g.Generation, g.Iteration, g.Status)
	}
	fork := iterate.New(w, iterate.WithMaxIterations(6), iterate.WithCheckpointer(store), iterate.WithSession("essay-2"))
	res, err = fork.Resume(ctx, iterate.ForkFrom("essay", 2), iterate.WithState("edited draft +1 +2"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("fork: %q (%s after %d iterations)\n", res.State, res.Status, res.Iterations)
	latest, _ := store.Load(ctx, "essay-2")
	fmt.Printf("forked from %s@%d\n", latest.Origin.Session, latest.Origin.Generation)
	// Output:
	// original: "draft +1 +2 +3 +4" (max_iterations)
	// generation 1: iteration 1, running
	// generation 2: iteration 2, running
	// fork: "edited draft +1 +2 +3 +4" (converged after 4 iterations)
	// forked from essay@2
}

// A Scorer says what best means for WithKeepBest: here, the fewest
// failing tests, whatever the assessment's score.
func ExampleScorerFunc() {
	failing := []int{5, 2, 3, 4} // by fixes tried
	w := iterate.Func(func(_ context.Context, tries int, _ iterate.Round) (int, error) { return tries + 1, nil })
	w.AssessFunc = func(_ context.Context, tries int) (gap.Assessment, error) {
		return gap.Assessment{Scores: map[string]float64{"failing": float64(failing[tries])}}, nil
	}
	fewest := iterate.ScorerFunc(func(a *gap.Assessment) float64 { return -a.Scores["failing"] })
	res, err := iterate.New(w, iterate.WithMaxIterations(3), iterate.WithKeepBest(fewest)).Run(context.Background(), 0)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("last: %d failing after %d tries; best: %d failing after %d\n",
		failing[res.State], res.State, failing[res.Best.State], res.Best.Iteration)
	// Output:
	// last: 4 failing after 3 tries; best: 2 failing after 1
}
