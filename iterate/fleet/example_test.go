package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// Ticket is what a session of the example's "plan" kind starts from.
type Ticket struct{ ID, Title string }

// Plan is the state of a "plan" session.
type Plan struct {
	Steps    []string
	Approved string // a human's answer
}

// A service registers its own kind of loop, submits a session, works it
// and answers its question: the README's "Running your loops on a fleet".
// Every process (submitters, workers, a web handler answering questions)
// registers the same kinds; worker processes call Work. It needs a
// PostgreSQL server ($DATABASE_URL); TestExample runs it.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	f, err := fleet.New(ctx, pool) // creates or migrates its tables
	if err != nil {
		log.Fatal(err)
	}
	plans := fleet.MustRegister(f, "plan", func(_ context.Context, t Ticket) (fleet.Loop[Plan], error) {
		w := iterate.Func(func(_ context.Context, p Plan, r iterate.Round) (Plan, error) {
			p.Steps = append(p.Steps, fmt.Sprintf("%s: step %d", t.Title, r.Iteration))
			if r.Task.Answer != "" {
				p.Approved = r.Task.Answer
			}
			return p, nil
		})
		w.AssessFunc = func(_ context.Context, p Plan) (gap.Assessment, error) {
			return gap.Assessment{Complete: p.Approved != ""}, nil
		}
		// Three steps, then ask for approval before the last one.
		ask := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
			if sit.Iteration > 3 && sit.AnsweredAt == 0 {
				return iterate.Plan{Action: iterate.Escalate, Escalation: &iterate.Escalation{Question: "approve " + t.ID + "?"}}, nil
			}
			return iterate.Plan{Action: iterate.Refine}, nil
		})
		return fleet.Loop[Plan]{Worker: w, Options: []iterate.Option{iterate.WithStrategy(ask), iterate.WithMaxIterations(6)}}, nil
	})
	if _, err := plans.Submit(ctx, "ticket-42", Ticket{ID: "T-42", Title: "rotate keys"}); err != nil {
		log.Fatal(err)
	}

	work, stop := context.WithCancel(ctx) // SIGTERM, in a worker process
	done := make(chan error)
	go func() { done <- f.Work(work) }()

	res, err := plans.Wait(ctx, "ticket-42") // parks on the question
	if errors.As(err, new(*iterate.EscalationError)) {
		fmt.Println("asked:", res.Escalation.Question)
		if err := f.Answer(ctx, "ticket-42", "approved"); err != nil { // from any process
			log.Fatal(err)
		}
		res, err = plans.Wait(ctx, "ticket-42")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.State.Approved, len(res.State.Steps), "steps")
	stop()
	<-done
}

// An operator raises the budget of a session that stopped
// budget_exhausted, from any process: a worker then continues it in
// place under the raised limits, every counter kept, and the extension is
// recorded in the session (iterate.Result.Extensions). Each stop is
// extended once.
func ExampleFleet_Extend() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	f, err := fleet.New(ctx, pool)
	if err != nil {
		log.Fatal(err)
	}
	err = f.Extend(ctx, "T-42", budget.Limits{Tokens: 500_000}, "alice")
	var other *fleet.ExtendError
	switch {
	case errors.As(err, &other):
		fmt.Printf("extended already, by %s to %d tokens\n", other.Accepted.By, other.Accepted.To.Tokens)
	case errors.Is(err, fleet.ErrNotExhausted):
		fmt.Println("the session did not stop at its budget")
	case err != nil:
		log.Fatal(err)
	}
}
