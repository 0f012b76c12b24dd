package study_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/refine-go/refine/examples/research/study"
	"github.com/refine-go/refine/iterate"
)

// A host builds the loop of a session from its arguments and runs it; here
// without a checkpointer, so the session lives in memory only.
func Example() {
	questions, err := os.ReadFile(filepath.Join("..", "testdata", "2_coverage", "questions.txt"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	loop, err := study.New(ctx, study.Args{
		Root:         filepath.Join("..", "testdata", "2_coverage", "src"),
		Questions:    string(questions),
		FilesPerTask: 2,
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := iterate.New(loop.Worker, loop.Options...).Run(ctx, loop.Initial)
	if err != nil {
		log.Fatal(err)
	}
	rep := study.NewReport(res, loop.Session, "memory", loop.MaxIterations)
	fmt.Printf("%s after %d iterations (%s convergence), coverage %.0f%%\n", res.Status, res.Iterations, rep.Convergence, 100*rep.Coverage)
	for _, q := range rep.Questions {
		fmt.Printf("%d. %s %s\n", q.Number, q.Text, q.Status)
	}
	// Output:
	// converged after 2 iterations (full convergence), coverage 86%
	// 1. How are failed jobs retried with backoff? answered
	// 2. Which jobs end in the dead letter queue? answered
}
