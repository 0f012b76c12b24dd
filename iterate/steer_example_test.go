package iterate_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// askAt2 asks "Which API?" when planning iteration 2, unless answered;
// with a deadline of its own when by is not zero.
func askAt2(by time.Time) iterate.Strategy {
	return iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		if sit.Iteration == 2 && sit.AnsweredAt == 0 {
			return iterate.Plan{Action: iterate.Escalate, Escalation: &iterate.Escalation{Question: "Which API?", Deadline: by}}, nil
		}
		return iterate.Plan{}, nil
	})
}

// answers is a step that keeps the answer each iteration was given, and
// is done after 3.
func answers(_ context.Context, s []string, r iterate.Round) ([]string, error) {
	if r.Iteration == 3 {
		r.Done()
	}
	return append(s, r.Task.Answer), nil
}

// ExampleWithQuestionDeadline gives the loop's question a day to be
// answered, with a reminder an hour before; the answerer asks for one
// more day.
func ExampleWithQuestionDeadline() {
	ctx := context.Background()
	eng := iterate.New(iterate.Func(answers), iterate.WithCheckpointer(&checkpoint.Memory{}), iterate.WithStrategy(askAt2(time.Time{})),
		iterate.WithQuestionDeadline(iterate.Deadline{After: 24 * time.Hour, RemindBefore: time.Hour}))
	_, err := eng.Run(ctx, nil)
	var esc *iterate.EscalationError
	if !errors.As(err, &esc) {
		return
	}
	e := esc.Escalation
	fmt.Println(e.Question, "expires:", e.OnExpiry)
	fmt.Println("reminder", e.Deadline.Sub(e.Due()), "before")

	// A Resume past the reminder's time would send a QuestionReminder,
	// one past the deadline would stop the session as expired.
	_, err = eng.Resume(ctx, iterate.ExtendDeadline(e.Deadline.Add(24*time.Hour), "bob"))
	errors.As(err, &esc)
	fmt.Println(esc.Escalation.Extensions[0].By, "extended it by", esc.Escalation.Deadline.Sub(e.Deadline))

	res, _ := eng.Resume(ctx, iterate.WithAnswer("the REST one"))
	fmt.Println(res.Status, res.State)
	// Output:
	// Which API? expires: stop
	// reminder 1h0m0s before
	// bob extended it by 24h0m0s
	// converged [ the REST one ]
}

// ExampleDeadline_defaultAnswer: a question that must be answered by
// the time the nightly job resumes the session (a strategy's own
// deadline), or the loop goes on with the host's default answer.
func ExampleDeadline_defaultAnswer() {
	ctx := context.Background()
	eng := iterate.New(iterate.Func(answers), iterate.WithCheckpointer(&checkpoint.Memory{}), iterate.WithStrategy(askAt2(time.Now())),
		iterate.WithQuestionDeadline(iterate.Deadline{After: time.Hour, OnExpiry: iterate.ExpireAnswer, Default: "your best guess"}),
		iterate.WithObserver(func(e iterate.Event) {
			if e, ok := e.(iterate.QuestionExpired); ok {
				fmt.Printf("%q expired; answering %q\n", e.Escalation.Question, e.Answer)
			}
		}))
	_, err := eng.Run(ctx, nil)
	fmt.Println(err)

	// The nightly job.
	res, _ := eng.Resume(ctx)
	fmt.Println(res.Status, res.State)
	// Output:
	// iterate: escalated to a human after 1 iterations: Which API?
	// "Which API?" expired; answering "your best guess"
	// converged [ your best guess ]
}

// dying is a store that a dead process no longer writes to: once dead,
// every save fails, as if the process had been killed there.
type dying struct {
	iterate.Checkpointer
	dead *bool
}

func (d dying) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if *d.dead {
		return errors.New("the process is dead")
	}
	return d.Checkpointer.Save(ctx, c)
}

// ExampleWithCrashLoopBound: a task that kills its process (here: after
// which nothing more is saved, as after a SIGKILL) is run by three
// processes; the fourth fails the session naming it, instead of running
// it again.
func ExampleWithCrashLoopBound() {
	ctx := context.Background()
	store := &checkpoint.Memory{}
	for process := 1; process <= 4; process++ {
		dead := false
		eng := iterate.New(iterate.Func(func(_ context.Context, n int, r iterate.Round) (int, error) {
			if r.Iteration == 2 {
				dead = true // an out-of-memory kill, say
			}
			return n + 1, nil
		}), iterate.WithCheckpointer(dying{store, &dead}), iterate.WithMaxIterations(5), iterate.WithCrashLoopBound(3))
		res, err := eng.Resume(ctx)
		if errors.Is(err, checkpoint.ErrNotFound) {
			res, err = eng.Run(ctx, 0)
		}
		if dead {
			fmt.Println("process", process, "died in iteration 2")
			continue
		}
		var cl *iterate.CrashLoopError
		if errors.As(err, &cl) {
			fmt.Println("process", process, res.Status+":", "task", cl.Task, "crashed", cl.Crashes, "times")
		}
	}
	// Output:
	// process 1 died in iteration 2
	// process 2 died in iteration 2
	// process 3 died in iteration 2
	// process 4 failed: task 2.1 explore crashed 3 times
}
