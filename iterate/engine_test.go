package iterate_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// fiveGaps is an assessment with five P1 questions: five tasks when
// MaxTasks allows.
func fiveGaps() gap.Assessment {
	a := gap.Assessment{}
	for _, q := range []string{"a?", "b?", "c?", "d?", "e?"} {
		a.Questions = append(a.Questions, gap.Question{Text: q, Critical: true})
	}
	return a
}

// TestParallelUnderLimit: tasks of one iteration run in parallel, never more
// than the limit at once, and fold back in task order whatever order they
// finish in.
func TestParallelUnderLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var running, peak atomic.Int32
		script := &iteratetest.Script{Steps: []iteratetest.Step{{
			Assessment: fiveGaps(),
			Work: func(ctx context.Context, tk iterate.Task) error {
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				// Later tasks finish first.
				time.Sleep(time.Duration(10-tk.Index) * time.Second)
				running.Add(-1)
				return nil
			},
		}}}
		start := time.Now()
		res, err := iterate.New(script, iterate.WithMaxIterations(1), iterate.WithParallelism(2),
			iterate.WithStrategy(&iterate.Adaptive{MaxTasks: 5})).Run(context.Background(), iteratetest.State{})
		if err != nil {
			t.Fatal(err)
		}
		if p := peak.Load(); p != 2 {
			t.Errorf("peak concurrency %d, want 2", p)
		}
		if diff := cmp.Diff([]string{"1.1", "1.2", "1.3", "1.4", "1.5"}, res.State.Tasks); diff != "" {
			t.Errorf("integration order (-want +got):\n%s", diff)
		}
		// 10+9 | 8+7 | 6 seconds in two lanes: 10, 9, then 8 after 9... well
		// under the 40s a sequential run would take.
		if el := time.Since(start); el >= 40*time.Second {
			t.Errorf("took %v, not parallel", el)
		}
	})
}

// TestTaskFailures: a task that fails, panics or times out fails alone; an
// iteration whose tasks all fail counts as a failure.
func TestTaskFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := &iteratetest.Script{Steps: []iteratetest.Step{
			{Assessment: fiveGaps(), Work: func(ctx context.Context, tk iterate.Task) error {
				switch tk.Index {
				case 0:
					panic("boom")
				case 1:
					<-ctx.Done() // times out
					return ctx.Err()
				case 2:
					return errors.New("agent failed")
				}
				return nil
			}},
			{Assessment: fiveGaps(), Err: errors.New("everything fails")},
			{Assessment: gap.Assessment{Complete: true}},
		}}
		rec := &iteratetest.Recorder{}
		res, err := iterate.New(script, iterate.WithParallelism(5), iterate.WithTaskTimeout(time.Minute),
			iterate.WithStrategy(&iterate.Adaptive{MaxTasks: 4}), iterate.WithObserver(rec.Observe)).
			Run(context.Background(), iteratetest.State{})
		if err != nil || res.Status != iterate.Converged {
			t.Fatalf("%v, %s", err, res.Status)
		}
		var failed []bool
		var errs []string
		for _, e := range iteratetest.Of[iterate.IterationEnded](rec) {
			failed = append(failed, e.Failed)
		}
		for _, e := range iteratetest.Of[iterate.TaskEnded](rec) {
			if e.Iteration() == 1 && e.Err != nil {
				errs = append(errs, e.Err.Error())
			}
		}
		if diff := cmp.Diff([]bool{false, true}, failed); diff != "" {
			t.Errorf("iteration failures (-want +got):\n%s", diff)
		}
		if len(errs) != 3 {
			t.Fatalf("task errors %q, want 3", errs)
		}
		joined := strings.Join(errs, "|")
		for _, want := range []string{"panic in work: boom", "deadline exceeded", "agent failed"} {
			if !strings.Contains(joined, want) {
				t.Errorf("task errors %q lack %q", errs, want)
			}
		}
		if res.History.Failures != 1 || res.History.ConsecutiveFailures != 1 {
			t.Errorf("failures %d consecutive %d, want 1 and 1", res.History.Failures, res.History.ConsecutiveFailures)
		}
	})
}

// TestAbandonTaskIgnoringCancellation: a worker that ignores its context is
// abandoned after the grace period instead of hanging the loop.
func TestAbandonTaskIgnoringCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := &iteratetest.Script{Steps: []iteratetest.Step{{Work: func(ctx context.Context, tk iterate.Task) error {
			time.Sleep(time.Hour) // ignores ctx
			return nil
		}}}}
		start := time.Now()
		res, err := iterate.New(script, iterate.WithMaxIterations(1), iterate.WithTaskTimeout(time.Second),
			iterate.WithGrace(2*time.Second)).Run(context.Background(), iteratetest.State{})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 3*time.Second {
			t.Errorf("returned after %v, want timeout + grace = 3s", el)
		}
		if res.History.Failures != 1 {
			t.Errorf("the abandoned task's iteration did not fail")
		}
		synctest.Wait()
		time.Sleep(time.Hour) // let the abandoned goroutine finish inside the bubble
	})
}

// TestPermanentErrorFailsRun: a permanent error ends the run at once.
func TestPermanentErrorFailsRun(t *testing.T) {
	boom := errors.New("invalid credentials")
	script := &iteratetest.Script{Steps: []iteratetest.Step{{Err: iterate.Permanent(boom)}}}
	res, err := iterate.New(script).Run(context.Background(), iteratetest.State{})
	if !errors.Is(err, iterate.ErrFailed) || !errors.Is(err, boom) || res.Status != iterate.Failed || res.Iterations != 0 {
		t.Errorf("err = %v, status %s after %d", err, res.Status, res.Iterations)
	}
	if iterate.Permanent(nil) != nil {
		t.Errorf("Permanent(nil) != nil")
	}
}

// TestHostPanicsBecomeErrors: panics in Assess and Integrate end the run with
// a *PanicError, never a crash.
func TestHostPanicsBecomeErrors(t *testing.T) {
	w := &iterate.FuncWorker[int]{
		Do:         func(ctx context.Context, n int, r iterate.Round) (int, error) { return n + 1, nil },
		AssessFunc: func(ctx context.Context, n int) (gap.Assessment, error) { panic("assess exploded") },
	}
	_, err := iterate.New(w).Run(context.Background(), 0)
	var p *iterate.PanicError
	if !errors.As(err, &p) || p.Where != "assess" {
		t.Errorf("err = %v, want a panic in assess", err)
	}
}

// TestInvalidOptions: bad options give a typed error from Run and Resume,
// never a panic.
func TestInvalidOptions(t *testing.T) {
	w := iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) { return n, nil })
	tests := []struct {
		name string
		opts []iterate.Option
		want string
	}{
		{"negative_max_iterations", []iterate.Option{iterate.WithMaxIterations(-1)}, "WithMaxIterations"},
		{"zero_parallelism", []iterate.Option{iterate.WithParallelism(0)}, "WithParallelism"},
		{"negative_budget", []iterate.Option{iterate.WithBudget(budget.Limits{Tokens: -5})}, "WithBudget"},
		{"nil_checkpointer", []iterate.Option{iterate.WithCheckpointer(nil)}, "WithCheckpointer"},
		{"empty_session", []iterate.Option{iterate.WithSession("")}, "WithSession"},
		{"zero_failure_threshold", []iterate.Option{iterate.WithFailureThreshold(0)}, "WithFailureThreshold"},
		{"invalid_policy", []iterate.Option{iterate.WithConvergence(converge.EarlyStopping{Patience: -1})}, "Patience"},
		{"two_errors_joined", []iterate.Option{iterate.WithMaxIterations(-1), iterate.WithTaskTimeout(-1)}, "WithTaskTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := iterate.New(w, tt.opts...)
			_, err := eng.Run(context.Background(), 0)
			var ce *iterate.ConfigError
			if !errors.Is(err, iterate.ErrInvalidOption) || !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run: err = %v, want a *ConfigError naming %s", err, tt.want)
			}
			if _, err := eng.Resume(context.Background()); !errors.Is(err, iterate.ErrInvalidOption) {
				t.Errorf("Resume: err = %v", err)
			}
		})
	}
	if _, err := iterate.New[int](nil).Run(context.Background(), 0); !errors.Is(err, iterate.ErrInvalidOption) {
		t.Errorf("nil worker: %v", err)
	}
	if _, err := iterate.New(w).Resume(context.Background()); !errors.Is(err, iterate.ErrInvalidOption) {
		t.Errorf("Resume without checkpointer: %v", err)
	}
}

// TestBudgetExhausted: an iteration whose estimate would exceed a hard limit
// does not start.
func TestBudgetExhausted(t *testing.T) {
	script := &iteratetest.Script{Steps: []iteratetest.Step{{Usage: budget.Usage{Tokens: 60, Cost: 0.5}}}}
	res, err := iterate.New(script, iterate.WithMaxIterations(10), iterate.WithBudget(budget.Limits{Tokens: 100}),
		iterate.WithEstimate(budget.Usage{Iterations: 1, Tokens: 30})).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	// 60 spent + 30 estimated fits under 100; 120 + 30 does not.
	if res.Status != iterate.BudgetExhausted || res.Iterations != 2 || !strings.Contains(res.Reason, "tokens") {
		t.Errorf("%s after %d: %s", res.Status, res.Iterations, res.Reason)
	}
	if res.Usage.Tokens != 120 || res.Usage.Iterations != 2 || res.Usage.Cost != 1 {
		t.Errorf("usage %+v", res.Usage)
	}
}

// TestResumeRefusesChangedSettings: the settings fingerprint guards Resume.
func TestResumeRefusesChangedSettings(t *testing.T) {
	store := &checkpoint.Memory{}
	ctx, cancel := context.WithCancel(context.Background())
	do := func(ctx context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration == 2 {
			cancel()
			return n, ctx.Err()
		}
		return n + 1, nil
	}
	if _, err := iterate.New(iterate.Func(do), iterate.WithCheckpointer(store), iterate.WithMaxIterations(5)).Run(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	_, err := iterate.New(iterate.Func(do), iterate.WithCheckpointer(store), iterate.WithMaxIterations(7)).Resume(context.Background())
	var sc *iterate.SettingsChangedError
	if !errors.Is(err, iterate.ErrSettingsChanged) || !errors.As(err, &sc) {
		t.Fatalf("err = %v, want a settings change refusal", err)
	}
	res, err := iterate.New(iterate.Func(do), iterate.WithCheckpointer(store), iterate.WithMaxIterations(7)).
		Resume(context.Background(), iterate.AllowSettingsChange())
	if err != nil || res.Iterations != 7 {
		t.Errorf("allowed resume: %v after %d", err, res.Iterations)
	}
	// A finished session resumes to its saved result.
	res, err = iterate.New(iterate.Func(do), iterate.WithCheckpointer(store), iterate.WithMaxIterations(7)).Resume(context.Background())
	if err != nil || res.Status != iterate.MaxIterations || res.Iterations != 7 || res.State != 6 {
		t.Errorf("resume of a finished session: %v %s %d %d", err, res.Status, res.Iterations, res.State)
	}
	if _, err := iterate.New(iterate.Func(do), iterate.WithCheckpointer(store), iterate.WithSession("none")).Resume(context.Background()); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("resume of an unknown session: %v", err)
	}
}

// TestInterruptResumeEqualsUninterrupted: a loop interrupted at every
// possible iteration and resumed ends exactly where an uninterrupted one does.
func TestInterruptResumeEqualsUninterrupted(t *testing.T) {
	mkSteps := func() []iteratetest.Step {
		return []iteratetest.Step{
			{Assessment: research(0.3, 0.6, 3, 2)},
			{Assessment: research(0.5, 0.7, 1, 1), FailTasks: []int{0}},
			{Assessment: research(0.5, 0.7, 1, 1), Err: errors.New("down")},
			{Assessment: research(0.6, 0.75, 0, 1)},
			{Assessment: research(0.65, 0.78, 0, 1)},
			{Assessment: research(0.72, 0.85, 0, 0)},
		}
	}
	opts := func(store iterate.Checkpointer) []iterate.Option {
		return []iterate.Option{iterate.WithMaxIterations(6), iterate.WithCheckpointer(store)}
	}
	want, err := iterate.New(&iteratetest.Script{Steps: mkSteps()}, opts(&checkpoint.Memory{})...).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	ignore := cmp.Options{
		cmpopts.IgnoreFields(converge.Record{}, "Duration"),
		cmpopts.IgnoreFields(converge.Attempt{}, "Duration"),
		cmpopts.IgnoreFields(converge.TaskRun{}, "Duration"),
		cmpopts.IgnoreFields(iterate.Totals{}, "Duration"),
		cmpopts.IgnoreFields(budget.Usage{}, "Wall"),
		cmpopts.IgnoreUnexported(converge.History{}),
		cmpopts.EquateEmpty(),
	}
	for cut := 1; cut <= want.Iterations; cut++ {
		t.Run("interrupt_in_iteration_"+string(rune('0'+cut)), func(t *testing.T) {
			steps := mkSteps()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			orig := steps[cut-1]
			steps[cut-1].Work = func(ctx context.Context, tk iterate.Task) error {
				cancel()
				return ctx.Err()
			}
			script := &iteratetest.Script{Steps: steps}
			store := &checkpoint.Memory{}
			res, err := iterate.New(script, opts(store)...).Run(ctx, iteratetest.State{})
			if !errors.Is(err, iterate.ErrInterrupted) || res.Iterations != cut-1 {
				t.Fatalf("interrupted run: %v after %d", err, res.Iterations)
			}
			script.Steps[cut-1] = orig
			got, err := iterate.New(script, opts(store)...).Resume(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, ignore); diff != "" {
				t.Errorf("resumed result differs (-uninterrupted +resumed):\n%s", diff)
			}
		})
	}
}

// TestEventsInOrder: the typed events of a loop arrive in order.
func TestEventsInOrder(t *testing.T) {
	script := &iteratetest.Script{Steps: steps(gap.Assessment{}, gap.Assessment{Complete: true})}
	rec := &iteratetest.Recorder{}
	_, err := iterate.New(script, iterate.WithCheckpointer(&checkpoint.Memory{}), iterate.WithObserver(rec.Observe)).
		Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"LoopStarted",
		"GapsFound", "Decided", "Planned", "IterationStarted", "TaskStarted", "TaskEnded", "IterationEnded", "CheckpointSaved",
		"GapsFound", "Decided", "CheckpointSaved", "LoopStopped"}
	if diff := cmp.Diff(want, rec.Kinds(true)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestStructuredLogging: each iteration logs iteration, phase, duration and
// outcome (seed 004's structured logging).
func TestStructuredLogging(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	w := iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration == 2 {
			return n, errors.New("exit 1")
		}
		return n + 1, nil
	})
	if _, err := iterate.New(w, iterate.WithMaxIterations(2), iterate.WithLogger(zap.New(core))).Run(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, e := range logs.All() {
		f := e.ContextMap()
		if e.Message != "iteration completed" && e.Message != "iteration failed" {
			continue
		}
		for _, k := range []string{"iteration", "phase", "duration", "outcome"} {
			if _, ok := f[k]; !ok {
				t.Errorf("%q lacks field %s: %v", e.Message, k, f)
			}
		}
		outcomes = append(outcomes, f["outcome"].(string))
	}
	if diff := cmp.Diff([]string{"succeeded", "failed"}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestCancelBetweenIterations: a context cancelled before an iteration stops
// the loop without running it and saves the state as interrupted.
func TestCancelBetweenIterations(t *testing.T) {
	store := &checkpoint.Memory{}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("user pressed Ctrl+C")
	rec := &iteratetest.Recorder{}
	w := iterate.Func(func(_ context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration == 2 {
			cancel(cause) // after this iteration's work completes
		}
		return n + 1, nil
	})
	res, err := iterate.New(w, iterate.WithCheckpointer(store), iterate.WithObserver(rec.Observe)).Run(ctx, 0)
	if !errors.Is(err, cause) || res.Status != iterate.Interrupted {
		t.Fatalf("err = %v (%s), want the cause", err, res.Status)
	}
	// The second iteration's work was integrated before the loop noticed.
	saved, _ := store.Load(context.Background(), iterate.DefaultSession)
	if res.Iterations != 2 || saved.Iteration != 2 || saved.Status != string(iterate.Interrupted) || res.State != 2 {
		t.Errorf("iterations %d, saved %d %s, state %d", res.Iterations, saved.Iteration, saved.Status, res.State)
	}
}

// TestWallBudgetBoundsTasks: a hard wall-time limit cancels the tasks in
// flight when it runs out, and the loop stops with the budget exhausted:
// the second iteration, estimated at the first's 3s, starts at 3s and
// would take 9s.
func TestWallBudgetBoundsTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) {
			select {
			case <-time.After(time.Duration(3+6*n) * time.Second):
				return n + 1, nil
			case <-ctx.Done():
				return n, context.Cause(ctx)
			}
		})
		start := time.Now()
		res, err := iterate.New(w, iterate.WithMaxIterations(0), iterate.WithBudget(budget.Limits{Wall: 10 * time.Second})).
			Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != iterate.BudgetExhausted || res.State != 1 || time.Since(start) != 10*time.Second {
			t.Errorf("%s with state %d after %v (%s); want the second task cut at 10s", res.Status, res.State, time.Since(start), res.Reason)
		}
		if !strings.Contains(res.Reason, "wall") {
			t.Errorf("reason %q does not name the wall time", res.Reason)
		}
	})
}

// Every event a loop sends names its session; LoopStarted carries the
// context Run was called with; a save reports its duration and bytes.
func TestEventsNameTheirSession(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "request")
	var events []iterate.Event
	w := iterate.Func(func(_ context.Context, n int, _ iterate.Round) (int, error) { return n + 1, nil })
	eng := iterate.New(w, iterate.WithMaxIterations(2), iterate.WithSession("named"),
		iterate.WithCheckpointer(&checkpoint.Memory{}), iterate.WithObserver(func(e iterate.Event) { events = append(events, e) }))
	if _, err := eng.Run(ctx, 0); err != nil {
		t.Fatal(err)
	}
	saves := 0
	for _, e := range events {
		if s := iterate.SessionOf(e); s != "named" {
			t.Errorf("%T names session %q, want named", e, s)
		}
		switch e := e.(type) {
		case iterate.LoopStarted:
			if e.Context == nil || e.Context.Value(key{}) != "request" {
				t.Errorf("LoopStarted.Context is not Run's")
			}
		case iterate.CheckpointSaved:
			saves++
			if e.Bytes <= 0 || e.Duration <= 0 {
				t.Errorf("save of generation %d: %d bytes in %v", e.Generation, e.Bytes, e.Duration)
			}
		}
	}
	if saves == 0 {
		t.Error("no save reported")
	}
	if s := iterate.SessionOf(iterate.LoopStarted{Session: "made"}); s != "made" {
		t.Errorf("SessionOf of a LoopStarted made by hand: %q", s)
	}
	if s := iterate.SessionOf(iterate.Warned{}); s != "" {
		t.Errorf("SessionOf of a Warned made by hand: %q", s)
	}
}
