package iterate_test

import (
	"context"
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
