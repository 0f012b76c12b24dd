package iterate_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// ExampleWithParkAtLimit parks a loop at its token limit instead of
// stopping it: it asks whether to spend more, and the answer carries the
// extension, which continues the same session with every counter kept.
func ExampleWithParkAtLimit() {
	ctx := context.Background()
	store := &checkpoint.Memory{}
	w := &iterate.FuncWorker[int]{
		Do: func(_ context.Context, files int, r iterate.Round) (int, error) {
			r.Charge(budget.Usage{Tokens: 65}) // what the agent call cost
			return files + 1, nil
		},
		AssessFunc: func(_ context.Context, files int) (gap.Assessment, error) {
			return gap.Assessment{FilesAnalyzed: files, EstimatedFiles: 10}, nil
		},
	}
	eng := iterate.New(w, iterate.WithCheckpointer(store), iterate.WithMaxIterations(0),
		iterate.WithBudget(budget.Limits{Tokens: 200}), iterate.WithParkAtLimit())

	res, err := eng.Run(ctx, 0)
	var esc *iterate.EscalationError
	if errors.As(err, &esc) && esc.Escalation.Parked != nil {
		fmt.Println(res.Status, res.Iterations, esc.Escalation.Question)
		to := esc.Escalation.Parked.Limits
		to.Tokens *= 2
		res, err = eng.Resume(ctx, iterate.ExtendBudget(to, "alice"))
	}
	fmt.Println(res.Status, res.Iterations, res.Usage.Tokens, errors.Is(err, iterate.ErrEscalated))
	fmt.Println(res.Extensions[0])

	// An answer without an extension stops the session at its budget.
	res, _ = eng.Resume(ctx, iterate.WithAnswer("enough"))
	fmt.Println(res.Status, res.Iterations)
	// Output:
	// escalated 3 195 of 200 tokens spent at coverage 0.3; extend the budget?
	// escalated 6 390 true
	// alice raised tokens 200 → 400 after 3 iterations
	// budget_exhausted 6
}
