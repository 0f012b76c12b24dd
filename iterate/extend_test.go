package iterate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// spend65 charges 65 tokens an iteration.
func spend65(_ context.Context, s int, r iterate.Round) (int, error) {
	r.Charge(budget.Usage{Tokens: 65})
	return s + 1, nil
}

// TestExtendBudgetInPlace guards "a session stopped budget_exhausted
// continues in the same session with raised limits, keeping every
// counter": stopped at 200 tokens after 3 iterations, extended to 400 by
// alice, it runs to 6 iterations and 390 tokens — the books of a session
// that had 400 from the start — and records the extension. The host's code
// unchanged (its engine still configured with 200) then resumes it under
// the raised budget. Mutations caught: ExtendBudget ignored (the saved
// result returned again), the counters reset, the extension not saved
// (the later resume refused or run under 200).
func TestExtendBudgetInPlace(t *testing.T) {
	store := &checkpoint.Memory{}
	opts := func(tokens int64) []iterate.Option {
		return []iterate.Option{iterate.WithCheckpointer(store), iterate.WithMaxIterations(0),
			iterate.WithBudget(budget.Limits{Tokens: tokens})}
	}
	first, err := iterate.New(iterate.Func(spend65), opts(200)...).Run(context.Background(), 0)
	if err != nil || first.Status != iterate.BudgetExhausted || first.Iterations != 3 {
		t.Fatalf("first run: %v, %s after %d iterations", err, first.Status, first.Iterations)
	}
	res, err := iterate.New(iterate.Func(spend65), opts(200)...).Resume(context.Background(),
		iterate.ExtendBudget(budget.Limits{Tokens: 400}, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := iterate.New(iterate.Func(spend65), iterate.WithMaxIterations(0), iterate.WithBudget(budget.Limits{Tokens: 400})).
		Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Time is the one book that differs.
	res.Usage.Wall, want.Usage.Wall, res.Totals.Duration, want.Totals.Duration = 0, 0, 0, 0
	if res.Status != iterate.BudgetExhausted || res.Iterations != 6 || res.State != 6 || res.Usage != want.Usage || res.Totals != want.Totals {
		t.Fatalf("extended: %s after %d iterations, state %d, usage %+v, totals %+v; want as a 400-token run: %d, %+v, %+v",
			res.Status, res.Iterations, res.State, res.Usage, res.Totals, want.Iterations, want.Usage, want.Totals)
	}
	if diff := cmp.Diff(want.History, res.History, cmpopts.IgnoreUnexported(converge.History{}),
		cmpopts.IgnoreFields(converge.Attempt{}, "Duration"), cmpopts.IgnoreFields(converge.TaskRun{}, "Duration")); diff != "" {
		t.Errorf("history (-uninterrupted +extended):\n%s", diff)
	}
	if len(res.Extensions) != 1 {
		t.Fatalf("extensions %+v, want one", res.Extensions)
	}
	x := res.Extensions[0]
	if x.By != "alice" || x.Iteration != 3 || x.From.Tokens != 200 || x.To.Tokens != 400 || x.At.IsZero() {
		t.Errorf("extension %+v", x)
	}
	if got := x.String(); got != "alice raised tokens 200 → 400 after 3 iterations" {
		t.Errorf("extension reads %q", got)
	}
	for _, tokens := range []int64{200, 400} {
		again, err := iterate.New(iterate.Func(spend65), opts(tokens)...).Resume(context.Background())
		if err != nil || again.Iterations != 6 || len(again.Extensions) != 1 {
			t.Errorf("resume of the extended session, engine configured with %d tokens: %v, %d iterations", tokens, err, again.Iterations)
		}
	}
}

// TestExtendBudgetOnlyRaises: an extension that lowers a limit, or adds
// one where there was none, is a *ConfigError; a raise beside another
// changed setting is still a *SettingsChangedError; and raised limits
// without ExtendBudget are refused as before. (Mutation caught: an
// extension accepted whatever it changes.)
func TestExtendBudgetOnlyRaises(t *testing.T) {
	store := &checkpoint.Memory{}
	base := []iterate.Option{iterate.WithCheckpointer(store), iterate.WithMaxIterations(0)}
	if _, err := iterate.New(iterate.Func(spend65), append(base, iterate.WithBudget(budget.Limits{Tokens: 200}))...).
		Run(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	eng := iterate.New(iterate.Func(spend65), append(base, iterate.WithBudget(budget.Limits{Tokens: 200}))...)
	for _, to := range []budget.Limits{{Tokens: 100}, {Tokens: 300, Calls: 5}} {
		var ce *iterate.ConfigError
		if _, err := eng.Resume(context.Background(), iterate.ExtendBudget(to, "bob")); !errors.As(err, &ce) {
			t.Errorf("ExtendBudget(%+v): %v, want a *ConfigError", to, err)
		}
	}
	other := iterate.New(iterate.Func(spend65), append(base, iterate.WithBudget(budget.Limits{Tokens: 200}), iterate.WithFailureThreshold(5))...)
	var sc *iterate.SettingsChangedError
	if _, err := other.Resume(context.Background(), iterate.ExtendBudget(budget.Limits{Tokens: 300}, "bob")); !errors.As(err, &sc) {
		t.Errorf("a raise beside a changed failure threshold: %v, want a *SettingsChangedError", err)
	}
	raised := iterate.New(iterate.Func(spend65), append(base, iterate.WithBudget(budget.Limits{Tokens: 300}))...)
	if _, err := raised.Resume(context.Background()); !errors.As(err, &sc) {
		t.Errorf("raised limits without ExtendBudget: %v, want a *SettingsChangedError", err)
	}
}
