package pgcheckpoint_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// A loop keeping its checkpoints in PostgreSQL: any host can resume the
// session, and only one at a time runs it. This example needs a server
// (REFINE_PG_URL), so it is compiled but not run; TestExample runs the
// same code.
func Example() {
	ctx := context.Background()
	if err := runExample(ctx, os.Getenv("REFINE_PG_URL"), pgcheckpoint.DefaultSchema); err != nil {
		log.Fatal(err)
	}
}

// runExample is the code of Example.
func runExample(ctx context.Context, url, schema string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := pgcheckpoint.New(ctx, pool,
		pgcheckpoint.Schema(schema),
		pgcheckpoint.Lease(10*time.Second), // a dead host's sessions free up within 10s
	)
	if err != nil {
		return err
	}
	defer store.Close()

	eng := iterate.New(iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) {
		return n + 1, nil
	}),
		iterate.WithMaxIterations(3),
		iterate.WithCheckpointer(store),
		iterate.WithSession("nightly-report"),
	)
	res, err := eng.Run(ctx, 0)
	if err != nil {
		return err
	}
	fmt.Println(res.State, res.Status)

	sessions, err := store.Status(ctx)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		fmt.Printf("%s: %s after %d iterations (generation %d)\n", s.Name, s.Status, s.Iteration, s.Generation)
	}
	return nil
}
