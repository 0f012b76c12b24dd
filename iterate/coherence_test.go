package iterate_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// TestThresholdsBlockingConvergenceAreGaps: the thresholds are declared once
// and the analysis and the decision read the same values, so a threshold
// that keeps the loop from converging is a gap the strategy targets (not the
// untargeted "explore broadly" task).
func TestThresholdsBlockingConvergenceAreGaps(t *testing.T) {
	script := &iteratetest.Script{Steps: []iteratetest.Step{{Assessment: research(0.80, 0.95, 0, 0)}}}
	rec := &iteratetest.Recorder{}
	res, err := iterate.New(script,
		iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.9}),
		iterate.WithConvergence(converge.Any(converge.ThresholdsMet{}, converge.IterationLimit{})),
		iterate.WithMaxIterations(2),
		iterate.WithObserver(rec.Observe),
	).Run(context.Background(), iteratetest.State{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != iterate.MaxIterations || !strings.Contains(res.Reason, "coverage 0.80 < 0.90") {
		t.Errorf("stopped %s (%s), want max_iterations naming the unmet coverage", res.Status, res.Reason)
	}
	for n := 1; n <= 2; n++ {
		p, ok := iteratetest.At[iterate.Planned](rec, n)
		if !ok || len(p.Plan.Tasks) == 0 {
			t.Fatalf("no plan for iteration %d", n)
		}
		if g := p.Plan.Tasks[0].Gap(); g.Kind != gap.Coverage {
			t.Errorf("iteration %d targets %q (%s), want the coverage gap", n, g.Kind, p.Plan.Tasks[0].Role)
		}
	}
}

// TestFailureThresholdComposesWithConvergence: WithFailureThreshold holds
// under a policy of the host's (converge.Failures reads it from the
// history): it is never ignored.
func TestFailureThresholdComposesWithConvergence(t *testing.T) {
	script := &iteratetest.Script{Steps: []iteratetest.Step{{Err: errors.New("boom")}}}
	res, err := iterate.New(script, iterate.WithFailureThreshold(2), iterate.WithMaxIterations(10),
		iterate.WithConvergence(converge.Any(converge.Failures{}, converge.IterationLimit{})),
	).Run(context.Background(), iteratetest.State{})
	if !errors.Is(err, iterate.ErrAborted) || res.Iterations != 2 {
		t.Fatalf("got %v after %d iterations, want aborted after 2", err, res.Iterations)
	}
}

// TestOptionWithoutEffectIsAnError: an option that a combination would make
// meaningless is a ConfigError naming both, never ignored. (The persistence
// settings cannot be given without a store: they are WithCheckpointer's.)
func TestOptionWithoutEffectIsAnError(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  iterate.Option
	}{
		{"WithCodec", iterate.WithCodec(gobLike{})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := iterate.New(iterate.Func(step1), tt.opt).Run(context.Background(), 0)
			var ce *iterate.ConfigError
			if !errors.As(err, &ce) || ce.Option != tt.name || !strings.Contains(err.Error(), "WithCheckpointer") {
				t.Fatalf("err = %v, want a ConfigError for %s naming WithCheckpointer", err, tt.name)
			}
			_, err = iterate.New(iterate.Func(step1), tt.opt, iterate.WithCheckpointer(&checkpoint.Memory{})).Run(context.Background(), 0)
			if err != nil {
				t.Fatalf("with a checkpointer: %v", err)
			}
		})
	}
}

type gobLike struct{}

func (gobLike) Marshal(v any) ([]byte, error)      { return iterate.JSON.Marshal(v) }
func (gobLike) Unmarshal(data []byte, v any) error { return iterate.JSON.Unmarshal(data, v) }

func step1(_ context.Context, n int, _ iterate.Round) (int, error) { return n + 1, nil }

// TestResumeRefusesChangedSettingsByName: the fingerprint is computed from the
// settings' values, so changing any threshold, limit or strategy or policy
// parameter is refused on resume, and the error names what changed.
func TestResumeRefusesChangedSettingsByName(t *testing.T) {
	base := []iterate.Option{iterate.WithMaxIterations(5)}
	for _, tt := range []struct {
		name   string
		before []iterate.Option
		after  []iterate.Option
		want   string
	}{
		{"coverage threshold", []iterate.Option{iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.3})},
			[]iterate.Option{iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.9})}, "coverage threshold 0.3 → 0.9"},
		{"early exit", nil, []iterate.Option{iterate.WithThresholds(gap.Thresholds{EarlyConfidence: -1})}, "early-exit confidence 0.9 → off"},
		{"iteration limit", nil, []iterate.Option{iterate.WithMaxIterations(9)}, "max iterations 5 → 9"},
		{"failure threshold", nil, []iterate.Option{iterate.WithFailureThreshold(5)}, "failure threshold 3 → 5"},
		{"token limit", []iterate.Option{iterate.WithBudget(budget.Limits{Tokens: 1000})},
			[]iterate.Option{iterate.WithBudget(budget.Limits{Tokens: 2000})}, "token limit 1000 → 2000"},
		{"estimate", nil, []iterate.Option{iterate.WithEstimate(budget.Usage{Tokens: 10})}, "estimate from previous iterations → "},
		{"strategy parameter", nil, []iterate.Option{iterate.WithStrategy(&iterate.Adaptive{MaxTasks: 1})}, "strategy "},
		{"policy parameter", []iterate.Option{iterate.WithConvergence(converge.Any(converge.NoProgress{After: 2}, converge.IterationLimit{}))},
			[]iterate.Option{iterate.WithConvergence(converge.Any(converge.NoProgress{After: 4}, converge.IterationLimit{}))}, "After:4"},
		// Any and All of the same policies decide differently (issue 20
		// left them alike in the fingerprint); of one policy they happen
		// not to, so that the resume ends should the change go unnoticed.
		{"policy combinator", []iterate.Option{iterate.WithConvergence(converge.Any(converge.IterationLimit{}))},
			[]iterate.Option{iterate.WithConvergence(converge.All(converge.IterationLimit{}))}, "converge.allOf["},
		{"task timeout", nil, []iterate.Option{iterate.WithTaskTimeout(time.Minute)}, "task timeout none → 1m0s"},
		{"host settings", []iterate.Option{iterate.WithFingerprint("prompt v1")},
			[]iterate.Option{iterate.WithFingerprint("prompt v2")}, "host settings prompt v1 → prompt v2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &checkpoint.Memory{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := append(slices.Clone(base), iterate.WithCheckpointer(store))
			_, err := iterate.New(iterate.Func(interruptAt(2, cancel)), append(opts, tt.before...)...).Run(ctx, 0)
			if !errors.Is(err, iterate.ErrInterrupted) {
				t.Fatal(err)
			}
			_, err = iterate.New(iterate.Func(step1), append(opts, tt.after...)...).Resume(context.Background())
			var sc *iterate.SettingsChangedError
			if !errors.As(err, &sc) || len(sc.Changes) != 1 || !strings.Contains(sc.Changes[0], tt.want) {
				t.Fatalf("err = %v, want a SettingsChangedError naming %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("message %q does not name %q", err, tt.want)
			}
			// The same settings resume; allowing the change resumes too.
			if _, err := iterate.New(iterate.Func(step1), append(opts, tt.before...)...).Resume(context.Background()); err != nil {
				t.Errorf("resume under the same settings: %v", err)
			}
		})
	}
}

// interruptAt returns a step that cancels the loop's context during
// iteration n, as a Ctrl+C would.
func interruptAt(n int, cancel context.CancelFunc) func(context.Context, int, iterate.Round) (int, error) {
	return func(ctx context.Context, s int, r iterate.Round) (int, error) {
		if r.Iteration == n {
			cancel()
			return s, ctx.Err()
		}
		return s + 1, nil
	}
}

// TestEstimateFromPreviousIterations: with no estimate given, the engine
// reserves what the iterations before spent on average, so a token limit of
// 1,000 at 400 an iteration stops after two iterations, not after 1,200.
// A host's estimate keeps counting one iteration.
func TestEstimateFromPreviousIterations(t *testing.T) {
	step := func(_ context.Context, n int, r iterate.Round) (int, error) {
		r.Charge(budget.Usage{Tokens: 400})
		return n + 1, nil
	}
	res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(0),
		iterate.WithBudget(budget.Limits{Tokens: 1000})).Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != iterate.BudgetExhausted || res.Iterations != 2 || res.Usage.Tokens != 800 {
		t.Errorf("%s after %d iterations, %d tokens; want budget_exhausted after 2, 800 tokens", res.Status, res.Iterations, res.Usage.Tokens)
	}

	res, err = iterate.New(iterate.Func(step), iterate.WithMaxIterations(0),
		iterate.WithBudget(budget.Limits{Iterations: 3}), iterate.WithEstimate(budget.Usage{Tokens: 400})).Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != iterate.BudgetExhausted || res.Iterations != 3 {
		t.Errorf("with an estimate of tokens only: %s after %d iterations; want the iteration limit of 3 to hold", res.Status, res.Iterations)
	}
}

// TestFuncStepSignalsDone: a step function can say the work is complete;
// the loop converges after it instead of ending at the iteration limit, and
// a resumed loop honours the signal.
func TestFuncStepSignalsDone(t *testing.T) {
	step := func(_ context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration == 3 {
			r.Done()
		}
		return n + 1, nil
	}
	res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(10)).Run(context.Background(), 0)
	if err != nil || res.Status != iterate.Converged || res.Iterations != 3 || res.Reason != "work complete" {
		t.Fatalf("got %v: %s after %d (%s); want converged after 3: work complete", err, res.Status, res.Iterations, res.Reason)
	}

	// Interrupted after the step said done, before the loop could see it.
	store := &checkpoint.Memory{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := iterate.WithObserver(func(e iterate.Event) {
		if e, ok := e.(iterate.IterationEnded); ok && e.Iteration() == 3 {
			cancel()
		}
	})
	if _, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(10), iterate.WithCheckpointer(store), stop).Run(ctx, 0); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
	ran := 0
	counting := func(_ context.Context, n int, r iterate.Round) (int, error) { ran++; return n + 1, nil }
	res, err = iterate.New(iterate.Func(counting), iterate.WithMaxIterations(10), iterate.WithCheckpointer(store)).Resume(context.Background())
	if err != nil || res.Status != iterate.Converged || ran != 0 || res.State != 3 {
		t.Fatalf("resumed: %v, %s, %d more steps, state %d; want converged at once with state 3", err, res.Status, ran, res.State)
	}
}

// TestSessionValidatedAtOption: an invalid session name is a ConfigError
// from WithSession, before anything runs, and a long name is not echoed
// whole.
func TestSessionValidatedAtOption(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	for _, name := range []string{"", "../escape", ".hidden", long} {
		_, err := iterate.New(iterate.Func(step1), iterate.WithSession(name)).Run(context.Background(), 0)
		var ce *iterate.ConfigError
		if !errors.As(err, &ce) || ce.Option != "WithSession" || !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("session %.20q: err = %v, want a ConfigError of WithSession", name, err)
		}
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("session %.20q: message of %d bytes echoes the name", name, len(err.Error()))
		}
	}
}

// hostStrategy is a strategy of a host's own: an exported parameter, and
// state and hooks that are not settings.
type hostStrategy struct {
	MaxWaves int
	calls    int
	hook     func()
}

func (s *hostStrategy) Plan(context.Context, *iterate.Situation) (iterate.Plan, error) {
	s.calls++
	return iterate.Plan{}, nil
}

// TestFingerprintOfHostStrategy: a host's strategy or policy contributes the
// values of its exported fields to the fingerprint; its state and hooks do
// not, so a resume is not refused because a hook is set, and a changed
// parameter is named.
func TestFingerprintOfHostStrategy(t *testing.T) {
	store := &checkpoint.Memory{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &hostStrategy{MaxWaves: 2, calls: 7, hook: func() {}}
	opts := func(s iterate.Strategy) []iterate.Option {
		return []iterate.Option{iterate.WithCheckpointer(store), iterate.WithStrategy(s), iterate.WithMaxIterations(5)}
	}
	if _, err := iterate.New(iterate.Func(interruptAt(2, cancel)), opts(first)...).Run(ctx, 0); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
	_, err := iterate.New(iterate.Func(step1), opts(&hostStrategy{MaxWaves: 3})...).Resume(context.Background())
	var sc *iterate.SettingsChangedError
	if !errors.As(err, &sc) || len(sc.Changes) != 1 || !strings.Contains(sc.Changes[0], "MaxWaves:2") || !strings.Contains(sc.Changes[0], "MaxWaves:3") {
		t.Fatalf("err = %v, want the changed MaxWaves named", err)
	}
	if _, err := iterate.New(iterate.Func(step1), opts(&hostStrategy{MaxWaves: 2})...).Resume(context.Background()); err != nil {
		t.Errorf("resume with the same parameter, no hook and fresh state: %v", err)
	}
}
