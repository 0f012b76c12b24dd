package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// spendArgs are the arguments of a session that spends 100 tokens an
// iteration under a budget of Tokens.
type spendArgs struct {
	Tokens int64 `json:"tokens"`
}

// spendState counts the iterations a session ran.
type spendState struct {
	Steps int `json:"steps"`
}

func registerSpend(f *fleet.Fleet) *fleet.Kind[spendArgs, spendState] {
	return fleet.MustRegister(f, "spend", func(_ context.Context, a spendArgs) (fleet.Loop[spendState], error) {
		step := func(_ context.Context, s spendState, r iterate.Round) (spendState, error) {
			r.Charge(budget.Usage{Tokens: 100})
			s.Steps++
			return s, nil
		}
		return fleet.Loop[spendState]{
			Worker:  iterate.Func(step),
			Options: []iterate.Option{iterate.WithBudget(budget.Limits{Tokens: a.Tokens}), iterate.WithMaxIterations(100)},
		}, nil
	})
}

// Rule (issue 34, item 1, the fleet's side): a session stopped
// budget_exhausted is extended in place from any process: Fleet.Extend
// returns once the request is committed, a worker resumes the session
// with the raised limits, every counter kept, and the extension is
// recorded in the session (by whom, from what to what). Each stop is
// extended once: the same request again is a no-op, another is an
// *ExtendError naming the accepted one; a lowered limit, a session not
// stopped at its budget and an unknown one are refused with typed errors.
// (Mutations caught: the worker ignoring the extension — the session stays
// at 3 steps and Wait returns the old stop, or Wait returning it because
// Session.Extended is not read; a second extension overwriting the first
// — ErrExtended not returned; no job retry — Wait times out.)
func TestExtendBudgetInPlace(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	kind := registerSpend(w)
	work(t, w)
	ctx := waitCtx(t)

	if _, err := kind.Submit(ctx, "thrifty", spendArgs{Tokens: 300}); err != nil {
		t.Fatal(err)
	}
	res, err := kind.Wait(ctx, "thrifty")
	if err != nil || res.Status != iterate.BudgetExhausted || res.State.Steps != 3 || res.Usage.Tokens != 300 {
		t.Fatalf("Wait: %v; want budget_exhausted after 3 steps and 300 tokens", brief(res, err))
	}

	if err := w.Extend(ctx, "thrifty", budget.Limits{Tokens: 200}, "alice"); !errors.Is(err, budget.ErrInvalidLimits) {
		t.Errorf("Extend lowering the tokens: %v; want ErrInvalidLimits", err)
	}
	if err := w.Extend(ctx, "thrifty", budget.Limits{Tokens: 300}, "alice"); !errors.Is(err, budget.ErrInvalidLimits) {
		t.Errorf("Extend raising nothing: %v; want ErrInvalidLimits", err)
	}
	if err := w.Extend(ctx, "nope", budget.Limits{Tokens: 500}, "alice"); !errors.Is(err, fleet.ErrUnknownSession) {
		t.Errorf("Extend of an unknown session: %v; want ErrUnknownSession", err)
	}
	if err := w.Extend(ctx, "thrifty", budget.Limits{Tokens: 500}, "alice"); err != nil {
		t.Fatal(err)
	}
	// The same request again (a retried call) is a no-op; another is
	// refused, naming the accepted one.
	if err := w.Extend(ctx, "thrifty", budget.Limits{Tokens: 500}, "alice"); err != nil {
		t.Errorf("the same Extend again: %v; want nil", err)
	}
	var xe *fleet.ExtendError
	err = w.Extend(ctx, "thrifty", budget.Limits{Tokens: 900}, "bob")
	if !errors.Is(err, fleet.ErrExtended) || !errors.As(err, &xe) || xe.Accepted.By != "alice" || xe.Accepted.To.Tokens != 500 {
		t.Errorf("a second Extend: %v; want an *ExtendError naming alice's 500 tokens", err)
	}

	res, err = kind.Wait(ctx, "thrifty")
	if err != nil || res.Status != iterate.BudgetExhausted || res.State.Steps != 5 || res.Usage.Tokens != 500 || res.Iterations != 5 {
		t.Fatalf("Wait after Extend: %v; want budget_exhausted after 5 steps, 5 iterations and 500 tokens", brief(res, err))
	}
	if len(res.Extensions) != 1 || res.Extensions[0].By != "alice" || res.Extensions[0].From.Tokens != 300 ||
		res.Extensions[0].To.Tokens != 500 || res.Extensions[0].Iteration != 3 {
		t.Errorf("Extensions: %+v; want alice's 300 → 500 after 3 iterations", res.Extensions)
	}
	s, err := w.Session(ctx, "thrifty")
	if err != nil || s.Status != iterate.BudgetExhausted || s.Extended {
		t.Errorf("Session: %+v, %v; want budget_exhausted, not extended", s, err)
	}
	// The new stop is a new one: it may be extended again.
	if err := w.Extend(ctx, "thrifty", budget.Limits{Tokens: 600}, "bob"); err != nil {
		t.Fatalf("Extend of the second stop: %v", err)
	}
	if res, err = kind.Wait(ctx, "thrifty"); err != nil || res.State.Steps != 6 || len(res.Extensions) != 2 {
		t.Fatalf("Wait after the second Extend: %v; want 6 steps, 2 extensions", brief(res, err))
	}
}

// Rule: only a stop at the budget is extended (ErrNotExhausted otherwise).
func TestExtendNotExhausted(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	kind := registerSpend(w)
	ctx := waitCtx(t)
	if _, err := kind.Submit(ctx, "queued", spendArgs{Tokens: 300}); err != nil {
		t.Fatal(err)
	}
	// No worker runs: the session has not started.
	if err := w.Extend(ctx, "queued", budget.Limits{Tokens: 500}, "alice"); !errors.Is(err, fleet.ErrNotExhausted) {
		t.Errorf("Extend of a queued session: %v; want ErrNotExhausted", err)
	}
	work(t, w)
	if _, err := kind.Submit(ctx, "generous", spendArgs{Tokens: 0}); err != nil {
		t.Fatal(err)
	}
	if res, err := kind.Wait(ctx, "generous"); err != nil || res.Status != iterate.MaxIterations {
		t.Fatalf("Wait: %v; want max_iterations", brief(res, err))
	}
	if err := w.Extend(ctx, "generous", budget.Limits{Tokens: 500}, "alice"); !errors.Is(err, fleet.ErrNotExhausted) {
		t.Errorf("Extend of a session stopped at its iteration limit: %v; want ErrNotExhausted", err)
	}
}

// brief describes a spending session's result for a failure message.
func brief(res *iterate.Result[spendState], err error) string {
	if res == nil {
		return fmt.Sprintf("no result, %v", err)
	}
	return fmt.Sprintf("%s after %d iterations, %d steps, %d tokens, %d extensions; %v",
		res.Status, res.Iterations, res.State.Steps, res.Usage.Tokens, len(res.Extensions), err)
}
