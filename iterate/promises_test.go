package iterate_test

// Tests of issue 20: every documented promise holds. Each test names the
// item of the issue it covers; each fails on the code before the fix.

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// savedEvent is what a test compares of a CheckpointSaved event.
type savedEvent struct {
	Iteration int
	Status    iterate.Status
	Failed    bool
}

// TestJournalSavesReported (issue 20, item 7): a journal save is a save
// attempt and sends CheckpointSaved, as events.go promises; a strict journal
// run that stops on a storage failure reports the failed save.
func TestJournalSavesReported(t *testing.T) {
	tests := []struct {
		name     string
		fail     bool
		persist  iterate.Persist
		want     []savedEvent
		wantStop iterate.Status
	}{
		{
			name: "journal", persist: iterate.Journal, wantStop: iterate.MaxIterations,
			want: []savedEvent{
				{1, iterate.Running, false}, // task 1.1 journaled
				{1, iterate.Running, false}, // iteration 1 saved
				{2, iterate.Running, false}, // task 2.1 journaled
				{2, iterate.Running, false}, // iteration 2 saved
				{2, iterate.MaxIterations, false},
			},
		},
		{
			name: "strict journal on a failing store", fail: true, persist: iterate.Strict | iterate.Journal, wantStop: iterate.Failed,
			want: []savedEvent{{1, iterate.Running, true}}, // task 1.1's journal save, retried, failed
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { // the strict retries' backoff in fake time
				store := &checkpointtest.Faulty{Store: &checkpoint.Memory{}, FailSave: func(int, *checkpoint.Checkpoint) error {
					if tt.fail {
						return syscall.EIO
					}
					return nil
				}}
				var rec iteratetest.Recorder
				res, _ := iterate.New(iterate.Func(step1), iterate.WithMaxIterations(2),
					iterate.WithCheckpointer(store, tt.persist), iterate.WithObserver(rec.Observe)).Run(context.Background(), 0)
				if res.Status != tt.wantStop {
					t.Errorf("status %s, want %s", res.Status, tt.wantStop)
				}
				var got []savedEvent
				for _, e := range iteratetest.Of[iterate.CheckpointSaved](&rec) {
					got = append(got, savedEvent{e.Iteration(), e.Status, e.Err != nil})
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("CheckpointSaved events (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestFailureThresholdWhateverThePolicy (issue 20, item 1): the threshold
// of WithFailureThreshold aborts the loop under a policy that has no
// converge.Failures rule, as options.go promises; it is never silently
// ignored.
func TestFailureThresholdWhateverThePolicy(t *testing.T) {
	limitOnly := converge.PolicyFunc(func(h *converge.History) converge.Decision {
		return converge.IterationLimit{}.Decide(h)
	})
	failEvery := func(context.Context, int, iterate.Round) (int, error) { return 0, errors.New("boom") }
	failOdd := func(_ context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration%2 == 1 {
			return n, errors.New("boom")
		}
		return n + 1, nil
	}
	tests := []struct {
		name      string
		policy    converge.Policy // nil: the default
		threshold int             // 0: not set
		step      func(context.Context, int, iterate.Round) (int, error)
		wantIters int
		want      iterate.Status
	}{
		{"PolicyFunc, threshold 2", limitOnly, 2, failEvery, 2, iterate.Aborted},
		{"PolicyFunc, default threshold", limitOnly, 0, failEvery, 3, iterate.Aborted},
		{"Any without Failures, threshold 1", converge.Any(converge.IterationLimit{}), 1, failEvery, 1, iterate.Aborted},
		{"default policy, threshold 2", nil, 2, failEvery, 2, iterate.Aborted},
		{"PolicyFunc, failures not consecutive", limitOnly, 2, failOdd, 10, iterate.MaxIterations},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []iterate.Option{iterate.WithMaxIterations(10)}
			if tt.policy != nil {
				opts = append(opts, iterate.WithConvergence(tt.policy))
			}
			if tt.threshold != 0 {
				opts = append(opts, iterate.WithFailureThreshold(tt.threshold))
			}
			res, err := iterate.New(iterate.Func(tt.step), opts...).Run(context.Background(), 0)
			if res.Status != tt.want || res.Iterations != tt.wantIters {
				t.Fatalf("%s after %d iterations (%v), want %s after %d", res.Status, res.Iterations, err, tt.want, tt.wantIters)
			}
			if aborted := errors.Is(err, iterate.ErrAborted); aborted != (tt.want == iterate.Aborted) {
				t.Errorf("err = %v, want ErrAborted: %t", err, tt.want == iterate.Aborted)
			}
		})
	}
}

// TestFingerprintExact (issue 20, item 2): the fingerprint covers exact
// values, and the changes a refused resume names print them exactly; the
// default analyzer and policy are named as a host configures them, not by
// their unexported types (item 8).
func TestFingerprintExact(t *testing.T) {
	tests := []struct {
		name       string
		saved, now []iterate.Option
		want       []string // nil: the resume is not refused; a trailing "…": a prefix
	}{
		{"0.875 → 0.88", []iterate.Option{iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.875})},
			[]iterate.Option{iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.88})}, []string{"coverage threshold 0.875 → 0.88"}},
		{"0.705 → 0.709", []iterate.Option{iterate.WithThresholds(gap.Thresholds{MinConfidence: 0.705})},
			[]iterate.Option{iterate.WithThresholds(gap.Thresholds{MinConfidence: 0.709})},
			// The signal confidence threshold defaults to the confidence threshold.
			[]string{"confidence threshold 0.705 → 0.709", "signal confidence threshold 0.705 → 0.709"}},
		{"the default is 0.7", nil, []iterate.Option{iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.7})}, nil},
		{"default policy named", nil, []iterate.Option{iterate.WithConvergence(converge.Any(converge.IterationLimit{}))},
			[]string{"policy converge.Default() → …"}},
		{"default analyzer named", nil, []iterate.Option{iterate.WithAnalyzer(gap.Combine(gap.Default()))},
			[]string{"analyzer gap.Default() → …"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &checkpoint.Memory{}
			base := []iterate.Option{iterate.WithMaxIterations(1), iterate.WithCheckpointer(store)}
			if _, err := iterate.New(iterate.Func(step1), append(base, tt.saved...)...).Run(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
			_, err := iterate.New(iterate.Func(step1), append(base, tt.now...)...).Resume(context.Background())
			if tt.want == nil {
				if err != nil {
					t.Fatalf("resume refused: %v", err)
				}
				return
			}
			var sc *iterate.SettingsChangedError
			if !errors.As(err, &sc) || !errors.Is(err, iterate.ErrSettingsChanged) || len(sc.Changes) != len(tt.want) {
				t.Fatalf("err = %v, want a *SettingsChangedError naming %q", err, tt.want)
			}
			for i, want := range tt.want {
				got := sc.Changes[i]
				if prefix, ok := strings.CutSuffix(want, "…"); ok {
					if !strings.HasPrefix(got, prefix) {
						t.Errorf("change %q, want it to start with %q", got, prefix)
					}
				} else if got != want {
					t.Errorf("change %q, want %q", got, want)
				}
			}
		})
	}
}

// TestPatienceLongerThanWindow (issue 20, item 4): an EarlyStopping whose
// patience is not less than the loop's history window could never plateau;
// the combination is a *ConfigError, through combinators too, instead of a
// loop that runs to its limit.
func TestPatienceLongerThanWindow(t *testing.T) {
	tests := []struct {
		name    string
		window  int // 0: not set
		policy  converge.Policy
		wantErr bool
		want    iterate.Status // when valid, on flat scores
	}{
		{"patience 5, window 5", 5, converge.EarlyStopping{Patience: 5}, true, ""},
		{"patience 4, window 5", 5, converge.EarlyStopping{Patience: 4}, false, iterate.Plateau},
		{"inside Any", 5, converge.Any(converge.IterationLimit{}, converge.EarlyStopping{Patience: 6}), true, ""},
		{"inside All", 3, converge.All(converge.EarlyStopping{}), true, ""}, // default patience 3
		{"default window", 0, converge.EarlyStopping{Patience: 31}, false, iterate.MaxIterations},
	}
	flat := func(_ context.Context, n int, _ iterate.Round) (int, error) { return n + 1, nil }
	assess := func(context.Context, int) (gap.Assessment, error) { return gap.Assessment{Score: 0.5}, nil }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := iterate.Func(flat)
			w.AssessFunc = assess
			opts := []iterate.Option{iterate.WithMaxIterations(10), iterate.WithConvergence(converge.Any(tt.policy, converge.IterationLimit{}))}
			if tt.window != 0 {
				opts = append(opts, iterate.WithHistoryWindow(tt.window))
			}
			res, err := iterate.New(w, opts...).Run(context.Background(), 0)
			var ce *iterate.ConfigError
			if tt.wantErr {
				if !errors.As(err, &ce) || !errors.Is(err, iterate.ErrInvalidOption) || !errors.Is(err, converge.ErrInvalidPolicy) {
					t.Fatalf("err = %v, want a *ConfigError matching converge.ErrInvalidPolicy", err)
				}
				return
			}
			if err != nil || res.Status != tt.want {
				t.Fatalf("%v, %v; want %s", res, err, tt.want)
			}
		})
	}
}

// TestResumeUnderEndedContext (issue 20, item 6): Resume under a context
// that has already ended runs nothing, and returns the session's saved
// state and counters, not a zero state and "interrupted after 0
// iterations".
func TestResumeUnderEndedContext(t *testing.T) {
	tests := []struct {
		name      string
		iters     int // completed before the interruption; -1: no session
		wantState int
	}{
		{"after 2 iterations", 2, 2},
		{"after 3 iterations", 3, 3},
		{"no checkpoint", -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &checkpoint.Memory{}
			opts := []iterate.Option{iterate.WithMaxIterations(10), iterate.WithCheckpointer(store)}
			var want *iterate.Result[int]
			if tt.iters >= 0 {
				ctx, cancel := context.WithCancel(context.Background())
				stop := func(_ context.Context, n int, r iterate.Round) (int, error) {
					if r.Iteration == tt.iters {
						cancel()
					}
					return n + 1, nil
				}
				var err error
				want, err = iterate.New(iterate.Func(stop), opts...).Run(ctx, 0)
				if !errors.Is(err, iterate.ErrInterrupted) || want.Iterations != tt.iters {
					t.Fatalf("first run: %v after %d iterations", err, want.Iterations)
				}
			}
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			calls := 0
			counted := func(_ context.Context, n int, _ iterate.Round) (int, error) { calls++; return n + 1, nil }
			res, err := iterate.New(iterate.Func(counted), opts...).Resume(ended)
			var ie *iterate.InterruptedError
			if !errors.As(err, &ie) || !ie.BeforeStart || !errors.Is(err, context.Canceled) || calls != 0 {
				t.Fatalf("err = %v after %d calls, want an InterruptedError before the start, nothing run", err, calls)
			}
			if res.Status != iterate.Interrupted || res.State != tt.wantState {
				t.Errorf("status %s, state %d; want interrupted, state %d", res.Status, res.State, tt.wantState)
			}
			if want == nil {
				return
			}
			if res.Iterations != tt.iters || ie.Iteration != tt.iters || res.Usage != want.Usage || res.Totals != want.Totals ||
				res.History.Iteration != tt.iters {
				t.Errorf("iterations %d (error %d), usage %+v, totals %+v; want %d, %+v, %+v",
					res.Iterations, ie.Iteration, res.Usage, res.Totals, tt.iters, want.Usage, want.Totals)
			}
			if want := "interrupted after " + strconv.Itoa(tt.iters) + " iterations"; !strings.Contains(err.Error(), want) {
				t.Errorf("err = %q, want it to say %q", err, want)
			}
		})
	}
}

// TestEstimateIgnoresInterruptedAttempt (issue 20, item 3): the default
// estimate is the mean of what a completed iteration spent, as WithEstimate
// says; an attempt interrupted after charging is in the usage but not in
// the mean. With a 2,000-token limit and 400 tokens an iteration, the
// resumed loop spends the whole budget (the run stopped after 3
// iterations and 1,600 tokens, "requested 534").
func TestEstimateIgnoresInterruptedAttempt(t *testing.T) {
	const perIteration = 400
	tests := []struct {
		name        string
		limit       int64
		interruptAt int // the iteration interrupted after charging; 0: none
		wantIters   int
		wantTokens  int64
	}{
		{"uninterrupted", 2000, 0, 5, 2000},
		{"iteration 2 interrupted", 2000, 2, 4, 2000},
		{"iteration 1 interrupted", 2000, 1, 4, 2000},
		// WithEstimate's example: 1,000 at 400 an iteration stops after two
		// iterations rather than after spending 1,200.
		{"WithEstimate's example", 1000, 0, 2, 800},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &checkpoint.Memory{}
			opts := []iterate.Option{iterate.WithMaxIterations(0), iterate.WithCheckpointer(store),
				iterate.WithBudget(budget.Limits{Tokens: tt.limit})}
			charge := func(_ context.Context, n int, r iterate.Round) (int, error) {
				r.Charge(budget.Usage{Tokens: perIteration})
				return n + 1, nil
			}
			eng := iterate.New(iterate.Func(charge), opts...)
			var res *iterate.Result[int]
			var err error
			if tt.interruptAt == 0 {
				res, err = eng.Run(context.Background(), 0)
			} else {
				ctx, cancel := context.WithCancel(context.Background())
				interrupted := func(ctx context.Context, n int, r iterate.Round) (int, error) {
					r.Charge(budget.Usage{Tokens: perIteration})
					if r.Iteration == tt.interruptAt {
						cancel()
						return n, ctx.Err()
					}
					return n + 1, nil
				}
				first, ferr := iterate.New(iterate.Func(interrupted), opts...).Run(ctx, 0)
				if !errors.Is(ferr, iterate.ErrInterrupted) || first.Iterations != tt.interruptAt-1 ||
					first.Usage.Tokens != int64(tt.interruptAt*perIteration) {
					t.Fatalf("first run: %v after %d iterations, %d tokens", ferr, first.Iterations, first.Usage.Tokens)
				}
				res, err = eng.Resume(context.Background())
			}
			if err != nil || res.Status != iterate.BudgetExhausted {
				t.Fatalf("%v: %s (%s), want budget_exhausted", err, res.Status, res.Reason)
			}
			if res.Iterations != tt.wantIters || res.Usage.Tokens != tt.wantTokens {
				t.Errorf("stopped after %d iterations and %d tokens (%s), want %d and %d",
					res.Iterations, res.Usage.Tokens, res.Reason, tt.wantIters, tt.wantTokens)
			}
		})
	}
}

// TestCodecWithoutStore (issue 20, item 8): WithCodec without a
// checkpointer is a *ConfigError for every codec, JSON included, as for
// any other codec.
func TestCodecWithoutStore(t *testing.T) {
	for _, codec := range []iterate.Codec{iterate.JSON, gobLike{}} {
		_, err := iterate.New(iterate.Func(step1), iterate.WithCodec(codec)).Run(context.Background(), 0)
		var ce *iterate.ConfigError
		if !errors.As(err, &ce) || ce.Option != "WithCodec" || !errors.Is(err, iterate.ErrInvalidOption) {
			t.Errorf("WithCodec(%T) without a store: err = %v, want a *ConfigError for WithCodec", codec, err)
		}
	}
}

// TestEventDocListsEveryEvent (issue 20, item 8): the Event doc names every
// concrete event type (it omitted Recovered), read from the package's
// source: every type that embeds the events' it.
func TestEventDocListsEveryEvent(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	var eventDoc string
	var events []string
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if ts.Name.Name == "Event" {
					eventDoc = gd.Doc.Text()
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, field := range st.Fields.List {
					if id, ok := field.Type.(*ast.Ident); ok && len(field.Names) == 0 && id.Name == "it" {
						events = append(events, ts.Name.Name)
					}
				}
			}
		}
	}
	if len(events) < 12 || eventDoc == "" {
		t.Fatalf("found %d event types and doc %q", len(events), eventDoc)
	}
	for _, name := range events {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(eventDoc) {
			t.Errorf("the Event doc does not name %s:\n%s", name, eventDoc)
		}
	}
}

// TestStuckNotAborted (issue 20, item 8): a strategy's Stop plan ends the
// loop Stuck, with no error (result.go said Aborted covered "the strategy
// gave up"); and the default strategy stops a loop Stuck under a host policy
// with no stuck rule, as WithConvergence now says. (Both held before; the
// docs were wrong, so these tests pass on the old code too.)
func TestStuckNotAborted(t *testing.T) {
	limitOnly := converge.PolicyFunc(func(h *converge.History) converge.Decision { return converge.IterationLimit{}.Decide(h) })
	stop := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Stop, Reason: "stuck: nothing to try"}, nil
	})
	failing := gap.Assessment{Signals: gap.Signals{Tests: &gap.TestResult{Failures: []gap.TestCaseFailure{{Name: "TestX", Expected: "1", Received: "2"}}}}}
	tests := []struct {
		name string
		opts []iterate.Option
	}{
		{"a Stop plan", []iterate.Option{iterate.WithStrategy(stop)}},
		{"the default strategy under a policy without a stuck rule", []iterate.Option{iterate.WithConvergence(limitOnly)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := &iteratetest.Script{Steps: []iteratetest.Step{{Assessment: failing}}}
			res, err := iterate.New(script, append(tt.opts, iterate.WithMaxIterations(20))...).Run(context.Background(), iteratetest.State{})
			if err != nil || res.Status != iterate.Stuck || !strings.HasPrefix(res.Reason, "stuck") {
				t.Fatalf("%s (%s), %v; want stuck, no error", res.Status, res.Reason, err)
			}
		})
	}
}

// TestDefaultRolesAndFeedbackLimit (issue 20, item 9): each kind of gap
// goes to its default role, named by a typed constant a host can switch
// on; the default feedback bound is DefaultFeedbackLimit, next to the
// FeedbackLimit it is the default of (it was borrowed from
// gap.MaxFeedbackLength, the truncation of raw test output).
func TestDefaultRolesAndFeedbackLimit(t *testing.T) {
	tests := []struct {
		kind gap.Kind
		want iterate.RoleName
	}{
		{gap.Coverage, iterate.RoleExplore},
		{gap.MissingContext, iterate.RoleExplore},
		{gap.UnansweredQuestion, iterate.RoleExplore},
		{"host_kind", iterate.RoleExplore},
		{gap.Evidence, iterate.RoleCitation},
		{gap.Confidence, iterate.RoleCitation},
		{gap.Pattern, iterate.RolePattern},
		{gap.ConflictingFindings, iterate.RoleVerify},
		{gap.Security, iterate.RoleSecurity},
		{gap.Performance, iterate.RolePerformance},
		{gap.TestFailure, iterate.RoleImplement},
		{gap.ValidationFailure, iterate.RoleImplement},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			h := &converge.History{MaxIterations: 4}
			h.Observe(gap.Assessment{}, []gap.Gap{{Kind: tt.kind, Target: "t", Priority: gap.P1}})
			p, err := (&iterate.Adaptive{}).Plan(context.Background(), &iterate.Situation{Iteration: 1, History: h})
			if err != nil || len(p.Tasks) != 1 || p.Tasks[0].Role != tt.want {
				t.Fatalf("plan %+v (%v), want one %s task", p.Tasks, err, tt.want)
			}
		})
	}

	t.Run("feedback limit", func(t *testing.T) {
		if iterate.DefaultFeedbackLimit != 500 { // seed 002's feedback_max_length
			t.Fatalf("DefaultFeedbackLimit = %d, want seed 002's 500", iterate.DefaultFeedbackLimit)
		}
		var gaps []gap.Gap
		for i := range 40 {
			gaps = append(gaps, gap.Gap{Kind: gap.TestFailure, Target: fmt.Sprintf("Test%02d", i), Priority: gap.P1,
				Detail: fmt.Sprintf("expected %d, received %d", i, i+1), Severity: 0.9})
		}
		plan := func(s *iterate.Adaptive) string {
			h := &converge.History{MaxIterations: 4}
			h.Observe(gap.Assessment{}, gaps)
			p, err := s.Plan(context.Background(), &iterate.Situation{Iteration: 1, History: h})
			if err != nil {
				t.Fatal(err)
			}
			return p.Feedback
		}
		def, explicit := plan(&iterate.Adaptive{}), plan(&iterate.Adaptive{FeedbackLimit: iterate.DefaultFeedbackLimit})
		if def != explicit || len(def) > iterate.DefaultFeedbackLimit || len(def) < iterate.DefaultFeedbackLimit-100 {
			t.Errorf("default feedback (%d bytes) differs from FeedbackLimit: DefaultFeedbackLimit's (%d bytes), or misses the bound %d",
				len(def), len(explicit), iterate.DefaultFeedbackLimit)
		}
	})
}

// TestREADMEDefaults (issue 20, re-reading the README): each row of the
// README's Defaults table that states a number holds for a loop configured
// with nothing. (These held before; the test keeps them holding.)
func TestREADMEDefaults(t *testing.T) {
	ctx := context.Background()
	t.Run("iteration limit 4", func(t *testing.T) {
		res, err := iterate.New(iterate.Func(step1)).Run(ctx, 0)
		if err != nil || res.Status != iterate.MaxIterations || res.Iterations != 4 || iterate.DefaultMaxIterations != 4 {
			t.Fatalf("%s after %d iterations (%v), want max_iterations after 4", res.Status, res.Iterations, err)
		}
	})
	t.Run("thresholds 0.70, 0.80, 2 conflicts, early exit 0.85 and 0.90", func(t *testing.T) {
		th := gap.Thresholds{}.Effective()
		if th.MinCoverage != 0.70 || th.MinConfidence != 0.80 || th.MaxConflicts != 2 || th.EarlyCoverage != 0.85 || th.EarlyConfidence != 0.90 {
			t.Fatalf("effective thresholds %+v", th)
		}
	})
	t.Run("3 consecutive failures, reset by a success", func(t *testing.T) {
		fails := func(_ context.Context, n int, r iterate.Round) (int, error) {
			if r.Iteration == 3 { // failures 1, 2, success, then failures 4, 5, 6
				return n + 1, nil
			}
			return n, errors.New("boom")
		}
		res, err := iterate.New(iterate.Func(fails), iterate.WithMaxIterations(10)).Run(ctx, 0)
		if !errors.Is(err, iterate.ErrAborted) || res.Iterations != 6 || converge.DefaultFailureThreshold != 3 {
			t.Fatalf("%s after %d iterations (%v), want aborted after 6", res.Status, res.Iterations, err)
		}
	})
	t.Run("stuck after 2 unchanged assessments", func(t *testing.T) {
		w := iterate.Func(step1)
		w.AssessFunc = func(context.Context, int) (gap.Assessment, error) {
			return gap.Assessment{WorkRemaining: []string{"Phase_6"}}, nil
		}
		res, err := iterate.New(w, iterate.WithMaxIterations(10)).Run(ctx, 0)
		if err != nil || res.Status != iterate.Stuck || res.Iterations != 2 {
			t.Fatalf("%s after %d iterations (%v), want stuck after 2", res.Status, res.Iterations, err)
		}
	})
	t.Run("3 tasks per iteration, highest priority first", func(t *testing.T) {
		h := &converge.History{MaxIterations: 4}
		var gaps []gap.Gap
		for i := range 5 {
			gaps = append(gaps, gap.Gap{Kind: gap.UnansweredQuestion, Target: fmt.Sprintf("q%d", i), Priority: gap.P1})
		}
		h.Observe(gap.Assessment{}, gaps)
		p, err := (&iterate.Adaptive{}).Plan(ctx, &iterate.Situation{Iteration: 1, History: h})
		if err != nil || len(p.Tasks) != 3 || len(p.Deferred) != 2 || p.Tasks[0].Gap().Target != "q0" {
			t.Fatalf("%d tasks, %d deferred (%v), want 3 and 2", len(p.Tasks), len(p.Deferred), err)
		}
	})
}

// blockingStore is a store whose Load waits for its context to end.
type blockingStore struct{ checkpoint.Memory }

func (*blockingStore) Load(ctx context.Context, _ string) (*checkpoint.Checkpoint, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestResumeUnderEndedContextBounded (issue 20, item 6): the read of the
// saved state under a context that has ended is bounded by the grace
// period; a store that does not answer gives the zero state, after it.
func TestResumeUnderEndedContextBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		res, err := iterate.New(iterate.Func(step1), iterate.WithCheckpointer(&blockingStore{}), iterate.WithGrace(2*time.Second)).Resume(ended)
		if !errors.Is(err, iterate.ErrInterrupted) || res.State != 0 || res.Iterations != 0 {
			t.Fatalf("%v, state %d after %d iterations; want interrupted, zero state", err, res.State, res.Iterations)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("waited %v for the store, want the grace period, 2s", waited)
		}
	})
}
