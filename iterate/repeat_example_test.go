package iterate_test

import (
	"context"
	"fmt"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// ExampleRound_Did stops a loop that thrashes: each round reports what it
// did, and converge.Repeating stops the loop as stuck once the same
// actions repeat three iterations running while nothing improves, naming
// them.
func ExampleRound_Did() {
	step := func(_ context.Context, attempts int, r iterate.Round) (int, error) {
		r.Did("edit main.go", "run go test ./...") // what the agent did this round
		return attempts + 1, nil
	}
	eng := iterate.New(iterate.Func(step), iterate.WithMaxIterations(10),
		iterate.WithConvergence(converge.Any(converge.Repeating{}, converge.IterationLimit{})))
	res, _ := eng.Run(context.Background(), 0)
	fmt.Println(res.Status, res.Iterations)
	fmt.Println(res.Reason)
	// Output:
	// stuck 3
	// stuck: the same actions for 3 iterations without improvement: edit main.go, run go test ./...
}
