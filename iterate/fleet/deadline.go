package fleet

// This file holds the fleet's side of the deadlines of questions
// (iterate.WithQuestionDeadline): no process waits for a question; its
// session's job is snoozed until the question is due (its reminder, then
// its deadline), and the worker that picks it up then resumes the session
// without an answer, which sends the reminder or applies the expiry. An
// answer (Fleet.Reply) makes the snoozed job available at once.

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// questionDue returns when the open question of an escalated session's
// checkpoint is next due (see iterate.Escalation.Due), and whether it has
// a deadline.
func questionDue(c *checkpoint.Checkpoint) (time.Time, bool) {
	r, err := iterate.Inspect(c)
	if err != nil || r.Escalation == nil {
		return time.Time{}, false
	}
	due := r.Escalation.Due()
	return due, !due.IsZero()
}

// parkQuestion ends a delivery of the job of an escalated session whose
// question is unanswered: done for a question without a deadline (an
// answer retries the job), snoozed until the question is due otherwise.
// due reports whether the question is due now: then the delivery runs the
// session without an answer instead.
func parkQuestion(c *checkpoint.Checkpoint) (due bool, err error) {
	at, ok := questionDue(c)
	if !ok {
		return false, nil
	}
	wait := time.Until(at)
	if wait <= 0 {
		return true, nil
	}
	return false, river.JobSnooze(wait)
}

// parkEscalated is parkQuestion after a run that escalated: it reads the
// session's newest checkpoint. A question due already (its reminder's
// time passed during the run) is snoozed a moment, not run in this
// delivery.
func (f *Fleet) parkEscalated(ctx context.Context, session string) error {
	c, err := f.store.Load(ctx, session)
	if err != nil {
		return nil // parked until answered; the next delivery reads it again
	}
	due, err := parkQuestion(c)
	if due {
		return river.JobSnooze(time.Millisecond)
	}
	return err
}
