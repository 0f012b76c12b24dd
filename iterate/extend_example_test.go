package iterate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// ExampleExtendBudget continues a session that ran out of tokens in place:
// same session, same counters, a raised limit recorded with who raised it.
func ExampleExtendBudget() {
	ctx := context.Background()
	store := &checkpoint.Memory{}
	step := func(_ context.Context, drafts int, r iterate.Round) (int, error) {
		r.Charge(budget.Usage{Tokens: 65}) // what the agent call cost
		return drafts + 1, nil
	}
	eng := iterate.New(iterate.Func(step), iterate.WithCheckpointer(store), iterate.WithMaxIterations(0),
		iterate.WithBudget(budget.Limits{Tokens: 200}))

	res, _ := eng.Run(ctx, 0)
	fmt.Println(res.Status, res.Iterations, res.Usage.Tokens)

	res, _ = eng.Resume(ctx, iterate.ExtendBudget(budget.Limits{Tokens: 400}, "alice"))
	fmt.Println(res.Status, res.Iterations, res.Usage.Tokens)
	fmt.Println(res.Extensions[0])
	// Output:
	// budget_exhausted 3 195
	// budget_exhausted 6 390
	// alice raised tokens 200 → 400 after 3 iterations
}

// ExampleWithStateVersion resumes a session saved before the state's shape
// changed: the host declares its state's version and how to migrate the
// older one.
func ExampleWithStateVersion() {
	ctx := context.Background()
	store := &checkpoint.Memory{}

	// Version 1 of the host: the state is a list of notes.
	type v1 struct {
		Notes []string `json:"notes"`
	}
	interrupted, stop := context.WithCancel(ctx)
	old := iterate.New(iterate.Func(func(_ context.Context, s v1, _ iterate.Round) (v1, error) {
		stop() // the deploy
		return v1{Notes: append(s.Notes, "read auth.go")}, nil
	}), iterate.WithCheckpointer(store), iterate.WithStateVersion(1))
	old.Run(interrupted, v1{})

	// Version 2: notes became findings.
	type v2 struct {
		Findings []string `json:"findings"`
	}
	toV2 := iterate.Migration{From: 1, Migrate: func(_ context.Context, b []byte) ([]byte, error) {
		var s v1
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		return json.Marshal(v2{Findings: s.Notes})
	}}
	res, err := iterate.New(iterate.Func(func(_ context.Context, s v2, r iterate.Round) (v2, error) {
		r.Done()
		return s, nil
	}), iterate.WithCheckpointer(store), iterate.WithStateVersion(2, toV2)).Resume(ctx)
	fmt.Println(res.State.Findings, err)
	// Output: [read auth.go] <nil>
}
