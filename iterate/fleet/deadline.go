package fleet

// This file holds the fleet's side of the deadlines of questions
// (iterate.WithQuestionDeadline): no process waits for a question; its
// session's job is snoozed until the question is due (its reminder, then
// its deadline), and the worker that picks it up then resumes the session
// without an answer, which sends the reminder or applies the expiry. An
// answer (Fleet.Reply) makes the snoozed job available at once.

import (
	"context"
	"fmt"
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

// parkUntil ends a delivery of the job of an escalated session whose
// question is unanswered and next due at due (zero without a deadline):
// done for a question without a deadline (an answer retries the job),
// snoozed until the question is due otherwise. now reports whether the
// question is due now: then the delivery runs the session without an
// answer instead.
func parkUntil(due time.Time) (now bool, err error) {
	if due.IsZero() {
		return false, nil
	}
	wait := time.Until(due)
	if wait <= 0 {
		return true, nil
	}
	return false, river.JobSnooze(wait)
}

// questionDueNow is parkUntil for a delivery that finds its session
// escalated and unanswered, by the question's deadline in c, the newest
// checkpoint the delivery loaded (read again if nil).
func (f *Fleet) questionDueNow(ctx context.Context, session string, c *checkpoint.Checkpoint) (bool, error) {
	if c == nil {
		var err error
		if c, err = f.store.Load(ctx, session); err != nil {
			return false, fmt.Errorf("fleet: reading the question of session %q: %w", session, err)
		}
	}
	due, _ := questionDue(c)
	return parkUntil(due)
}

// parkEscalated is parkUntil after a run that escalated, with when its
// question is due as the run's EscalationError said (no checkpoint is
// read). A question due already (its reminder's time passed during the
// run) is snoozed a moment, not run in this delivery.
func parkEscalated(due time.Time) error {
	now, err := parkUntil(due)
	if now {
		return river.JobSnooze(time.Millisecond)
	}
	return err
}
