package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// registerParking registers a kind whose sessions spend 100 tokens an
// iteration under a budget of Tokens and park at it
// (iterate.WithParkAtLimit).
func registerParking(f *fleet.Fleet) *fleet.Kind[spendArgs, spendState] {
	return fleet.MustRegister(f, "parking", func(_ context.Context, a spendArgs) (fleet.Loop[spendState], error) {
		step := func(_ context.Context, s spendState, r iterate.Round) (spendState, error) {
			r.Charge(budget.Usage{Tokens: 100})
			s.Steps++
			return s, nil
		}
		return fleet.Loop[spendState]{
			Worker: iterate.Func(step),
			Options: []iterate.Option{iterate.WithBudget(budget.Limits{Tokens: a.Tokens}), iterate.WithMaxIterations(100),
				iterate.WithParkAtLimit()},
		}, nil
	})
}

// working runs f.Work until the returned function stops it.
func working(t *testing.T, f *fleet.Fleet) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Work(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Work: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitParked waits for the session to park and checks it parked after
// steps steps and tokens tokens, with extensions extensions.
func waitParked(t *testing.T, ctx context.Context, kind *fleet.Kind[spendArgs, spendState], session string, steps int, tokens int64, extensions int) *iterate.Result[spendState] {
	t.Helper()
	res, err := kind.Wait(ctx, session)
	var ee *iterate.EscalationError
	if !errors.As(err, &ee) || res == nil || res.Status != iterate.Escalated || ee.Escalation.Parked == nil ||
		res.State.Steps != steps || res.Usage.Tokens != tokens || len(res.Extensions) != extensions {
		t.Fatalf("Wait: %v; want parked after %d steps and %d tokens, %d extensions", brief(res, err), steps, tokens, extensions)
	}
	return res
}

// Rule (issue 34, item 1, optional part, the fleet's side): a session
// parked at its budget's limit shows as escalated, its question naming
// the spend; Fleet.Extend, from another process, answers it with the
// extension (recorded as the answer, by whom), and a worker continues
// the same session under the raised limits with every counter kept, the
// extension recorded, until it parks again. The same request again is a
// no-op, another an *ExtendError; an answer to the question then is
// refused (answered), and an extension of a question answered already
// (Reply) is refused too. Answered without an extension, the session
// stops budget_exhausted, and Extend still continues it. A question that
// is not a park is no budget to extend (ErrNotExhausted). (Mutations
// caught: the worker not passing the extension of an escalated session —
// it stops budget_exhausted at 3 steps; Extend not answering the parked
// question — Wait returns the first park again; Extend accepting any
// escalated session — no ErrNotExhausted for the question.)
func TestExtendParkedSession(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	kind := registerParking(w)
	synth := registerSynth(w, nil)
	ops, _ := startFleet(t, url, schema) // another process: no worker
	ctx := waitCtx(t)

	if _, err := kind.Submit(ctx, "parked", spendArgs{Tokens: 300}); err != nil {
		t.Fatal(err)
	}
	stop := working(t, w)
	waitParked(t, ctx, kind, "parked", 3, 300, 0)
	stop() // what follows races on the database alone
	s, err := ops.Session(ctx, "parked")
	if err != nil || s.Status != iterate.Escalated || s.Question != "300 of 300 tokens spent after 3 iterations; extend the budget?" {
		t.Fatalf("Session: %+v, %v; want escalated with the question of the park", s, err)
	}

	if err := ops.Extend(ctx, "parked", budget.Limits{Tokens: 200}, "alice"); !errors.Is(err, budget.ErrInvalidLimits) {
		t.Errorf("Extend lowering the tokens: %v; want ErrInvalidLimits", err)
	}
	if err := ops.Extend(ctx, "parked", budget.Limits{Tokens: 500}, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := ops.Extend(ctx, "parked", budget.Limits{Tokens: 500}, "alice"); err != nil {
		t.Errorf("the same Extend again: %v; want nil", err)
	}
	var xe *fleet.ExtendError
	if err := ops.Extend(ctx, "parked", budget.Limits{Tokens: 900}, "bob"); !errors.As(err, &xe) || xe.Accepted.By != "alice" {
		t.Errorf("a second Extend: %v; want an *ExtendError naming alice's", err)
	}
	if err := ops.Answer(ctx, "parked", "no"); !errors.Is(err, fleet.ErrAnswered) {
		t.Errorf("an answer after the extension: %v; want ErrAnswered", err)
	}
	answers, err := ops.Answers(ctx, "parked")
	if err != nil || len(answers) != 1 || answers[0].Text != "extend the budget to tokens 500" || answers[0].By != "alice" {
		t.Fatalf("Answers: %+v, %v; want alice's extension", answers, err)
	}

	stop = working(t, w)
	res := waitParked(t, ctx, kind, "parked", 5, 500, 1)
	stop()
	if x := res.Extensions[0]; x.By != "alice" || x.From.Tokens != 300 || x.To.Tokens != 500 || x.Iteration != 3 {
		t.Errorf("Extensions: %+v; want alice's 300 → 500 after 3 iterations", res.Extensions)
	}
	if err := ops.Answer(ctx, "parked", "enough"); err != nil {
		t.Fatal(err)
	}
	if err := ops.Extend(ctx, "parked", budget.Limits{Tokens: 600}, "bob"); !errors.Is(err, fleet.ErrAnswered) {
		t.Errorf("Extend of a question answered already: %v; want ErrAnswered", err)
	}

	work(t, w)
	res, err = kind.Wait(ctx, "parked")
	if err != nil || res.Status != iterate.BudgetExhausted || res.State.Steps != 5 || !strings.Contains(res.Reason, `answered without an extension: "enough"`) {
		t.Fatalf("Wait after an answer without an extension: %v (%q); want budget_exhausted after 5 steps", brief(res, err), res.Reason)
	}
	if err := ops.Extend(ctx, "parked", budget.Limits{Tokens: 600}, "bob"); err != nil {
		t.Fatal(err)
	}
	waitParked(t, ctx, kind, "parked", 6, 600, 2)
	// Extend without a by answers the parked question as the extending
	// process's Holder, as Reply does (mutation caught: by left "" —
	// the answer recorded by nobody).
	if err := ops.Extend(ctx, "parked", budget.Limits{Tokens: 700}, ""); err != nil {
		t.Fatal(err)
	}
	if answers, err := ops.Answers(ctx, "parked"); err != nil || len(answers) == 0 || answers[len(answers)-1].By != ops.Holder() || ops.Holder() == "" {
		t.Errorf("Answers: %+v, %v; want the newest by %q", answers, err, ops.Holder())
	}

	if _, err := synth.Submit(ctx, "asked", synthArgs{Name: "asked", Iterations: 4, EscalateAt: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := synth.Wait(ctx, "asked"); !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatalf("Wait: %v; want an escalation", err)
	}
	if err := ops.Extend(ctx, "asked", budget.Limits{Tokens: 600}, "bob"); !errors.Is(err, fleet.ErrNotExhausted) {
		t.Errorf("Extend of a session escalated with a question: %v; want ErrNotExhausted", err)
	}
}
