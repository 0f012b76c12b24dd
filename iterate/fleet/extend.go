package fleet

// This file holds the fleet's side of budgets extended in place
// (iterate.ExtendBudget): a session that stopped budget_exhausted, or
// parked at its budget's limit (iterate.WithParkAtLimit), is continued, in
// the same session and by whichever worker picks it up, under the limits
// an operator raised from any process.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

var (
	// ErrNotExhausted: the session did not stop or park at its budget
	// (its newest checkpoint is neither budget_exhausted nor escalated
	// with a question of iterate.WithParkAtLimit), so there is nothing
	// to extend.
	ErrNotExhausted = errors.New("fleet: session not stopped at its budget")
	// ErrExtended: the session's stop at its budget was extended already,
	// with other limits or by someone else. Matched by every
	// *[ExtendError].
	ErrExtended = errors.New("fleet: budget already extended")
)

// Extension is an extension of a session's budget that the fleet accepted
// ([Fleet.Extend]), as [Session.Extension] and an *[ExtendError] tell it.
type Extension struct {
	// To are the limits the budget is raised to (the session's warning
	// level and warn-only resources with them), as iterate.ExtendBudget
	// takes them.
	To budget.Limits
	// By names who asked, At is when the fleet accepted the request (not
	// when a worker resumed the session: iterate.Extension's At).
	By string
	At time.Time
	// Generation is that of the checkpoint extended: the session's stop
	// budget_exhausted, or its park at its budget's limit (escalated).
	Generation uint64
}

// ExtendError reports an extension refused because the session's stop
// was extended already: Accepted is the extension that stands.
type ExtendError struct {
	Session  string
	Accepted Extension
}

func (e *ExtendError) Error() string {
	return fmt.Sprintf("fleet: the budget of session %q was already extended to %s by %q at %s",
		e.Session, limitsText(e.Accepted.To), e.Accepted.By, e.Accepted.At.Format(time.RFC3339))
}

// Is reports whether target is ErrExtended.
func (e *ExtendError) Is(target error) bool { return target == ErrExtended }

// Extend raises the budget of a session that stopped budget_exhausted,
// or parked at its budget's limit ([iterate.WithParkAtLimit]: escalated,
// its Escalation.Parked set), to the limits to, in place, from any
// process; by names who asks (recorded with the session's
// iterate.Extension; the calling process's [Fleet.Holder] when "", as
// for [Fleet.Reply]). It returns once the request is committed; a worker
// then resumes the session with [iterate.ExtendBudget] and it goes on
// with every counter kept, until it stops or parks again ([Kind.Wait]
// waits for that, not the stop extended).
//
// The extension of a parked session is the answer to its question: it
// is recorded as one ([Fleet.Answers]: "extend the budget to tokens
// 400", by by) and the worker resumes with it too ([iterate.WithAnswer]).
// A parked session answered without an extension ([Fleet.Reply]) stops
// budget_exhausted, and Extend can continue it then.
//
// Each stop is extended once: the same request again (same limits, same
// by) is a no-op returning nil; another is an *[ExtendError] naming the
// accepted one. A parked question answered already refuses an extension
// with an *[AnswerError] matching [ErrAnswered]. A session neither
// budget_exhausted nor parked gives an error matching [ErrNotExhausted]
// (a session still running is extended when it stops); a cancelled one,
// [ErrCancelled]; limits that lower one of the session's hard limits or
// raise none, or invalid limits, an error matching
// [budget.ErrInvalidLimits]. The warning level and the warn-only
// resources are the session's: to's are ignored.
func (f *Fleet) Extend(ctx context.Context, session string, to budget.Limits, by string) error {
	if err := to.Validate(); err != nil {
		return fmt.Errorf("fleet: extending session %q: %w", session, err)
	}
	if by == "" {
		by = f.Holder() // as Reply's
	}
	return pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		jobID, cancelled, err := f.lockSession(ctx, tx, session, "extending")
		if err != nil {
			return err
		}
		if cancelled {
			return errf(ErrCancelled, "cannot extend session %q: it was cancelled", session)
		}
		c, err := f.store.Load(ctx, session)
		if errors.Is(err, checkpoint.ErrNotFound) {
			return errf(ErrNotExhausted, "cannot extend session %q: it has not started", session)
		}
		if err != nil {
			return fmt.Errorf("fleet: extending session %q: %w", session, err)
		}
		st := iterate.Status(c.Status)
		if st != iterate.BudgetExhausted && st != iterate.Escalated {
			return errf(ErrNotExhausted, "cannot extend session %q: it is %s, not %s", session, st, iterate.BudgetExhausted)
		}
		r, err := iterate.Inspect(c)
		if err != nil {
			return fmt.Errorf("fleet: extending session %q: %w", session, err)
		}
		parked := st == iterate.Escalated && r.Escalation != nil && r.Escalation.Parked != nil
		if st == iterate.Escalated && !parked {
			return errf(ErrNotExhausted, "cannot extend session %q: it is escalated with a question, not parked at its budget", session)
		}
		to.WarnAt, to.WarnOnly = r.Limits.WarnAt, r.Limits.WarnOnly
		if err := raisesSome(r.Limits, to); err != nil {
			return fmt.Errorf("fleet: extending session %q from %s: %w", session, limitsText(r.Limits), err)
		}
		limits, err := json.Marshal(to)
		if err != nil {
			return fmt.Errorf("fleet: extending session %q: %w", session, err)
		}
		var inserted bool
		var acc Extension
		var accLimits []byte
		err = tx.QueryRow(ctx, `WITH ins AS (
				INSERT INTO `+f.table("fleet_extensions")+` (session, generation, limits, extended_by)
				VALUES ($1, $2, $3, $4) ON CONFLICT (session, generation) DO NOTHING
				RETURNING limits, extended_by, extended_at)
			SELECT true, * FROM ins
			UNION ALL
			SELECT false, limits, extended_by, extended_at FROM `+f.table("fleet_extensions")+`
			WHERE session = $1 AND generation = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
			session, int64(c.Generation), limits, by).Scan(&inserted, &accLimits, &acc.By, &acc.At)
		if err != nil {
			return fmt.Errorf("fleet: extending session %q: %w", session, err)
		}
		if !inserted {
			acc.Generation, acc.At = c.Generation, acc.At.UTC()
			if err := json.Unmarshal(accLimits, &acc.To); err != nil {
				return fmt.Errorf("fleet: extending session %q: reading the accepted extension: %w", session, err)
			}
			if acc.To == to && acc.By == by {
				return nil // the same request again
			}
			return &ExtendError{Session: session, Accepted: acc}
		}
		if parked {
			if err := f.answerParked(ctx, tx, c, to, by); err != nil {
				return err
			}
		}
		if jobID != nil {
			// A job still completing is not touched: the workers'
			// reconciliation retries it once it completed.
			if _, err := f.river.JobRetryTx(ctx, tx, *jobID); err != nil {
				return fmt.Errorf("fleet: extending session %q: retrying its job: %w", session, err)
			}
		}
		return nil
	})
}

// raisesSome reports, as an error matching budget.ErrInvalidLimits, an
// extension from from to to that lowers a hard limit (0 is none, above
// any) or raises none: iterate.ExtendBudget's rule, checked before the
// request is accepted rather than by the worker that runs it.
func raisesSome(from, to budget.Limits) error {
	var lowered []string
	raised := false
	check := func(name string, a, b float64) {
		switch {
		case a == b:
		case b != 0 && (a == 0 || b < a):
			lowered = append(lowered, name)
		default:
			raised = true
		}
	}
	check("iterations", float64(from.Iterations), float64(to.Iterations))
	check("tokens", float64(from.Tokens), float64(to.Tokens))
	check("cost", from.Cost, to.Cost)
	check("wall", float64(from.Wall), float64(to.Wall))
	check("calls", float64(from.Calls), float64(to.Calls))
	switch {
	case len(lowered) > 0:
		return fmt.Errorf("%w: an extension may not lower %s", budget.ErrInvalidLimits, strings.Join(lowered, ", "))
	case !raised:
		return fmt.Errorf("%w: the extension raises no limit", budget.ErrInvalidLimits)
	}
	return nil
}

// limitsText writes the hard limits of l, e.g. "tokens 300, iterations 5"
// ("no limits" when none is set).
func limitsText(l budget.Limits) string {
	var parts []string
	add := func(name string, set bool, v any) {
		if set {
			parts = append(parts, fmt.Sprint(name, " ", v))
		}
	}
	add("iterations", l.Iterations != 0, l.Iterations)
	add("tokens", l.Tokens != 0, l.Tokens)
	add("cost", l.Cost != 0, l.Cost)
	add("wall", l.Wall != 0, l.Wall)
	add("calls", l.Calls != 0, l.Calls)
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, ", ")
}

// answerParked records the extension to of a parked session, whose
// newest checkpoint is c, as the answer to its question (in tx, as
// Fleet.Reply would): the worker resumes with both.
func (f *Fleet) answerParked(ctx context.Context, tx pgx.Tx, c *checkpoint.Checkpoint, to budget.Limits, by string) error {
	text := "extend the budget to " + limitsText(to)
	var inserted bool
	var acc Answer
	var accIteration int64
	err := tx.QueryRow(ctx, `WITH ins AS (
			INSERT INTO `+f.table("fleet_answers")+` (session, generation, iteration, question, answer, answered_by)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (session, generation) DO NOTHING
			RETURNING answer, answered_by, question, iteration, answered_at)
		SELECT true, * FROM ins
		UNION ALL
		SELECT false, answer, answered_by, question, iteration, answered_at FROM `+f.table("fleet_answers")+`
		WHERE session = $1 AND generation = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
		c.Session, int64(c.Generation), int64(c.Iteration), c.Question, text, by).
		Scan(&inserted, &acc.Text, &acc.By, &acc.Question, &accIteration, &acc.At)
	if err != nil {
		return fmt.Errorf("fleet: extending session %q: answering its question: %w", c.Session, err)
	}
	if !inserted {
		acc.Iteration, acc.Generation, acc.At = int(accIteration), c.Generation, acc.At.UTC()
		return &AnswerError{Session: c.Session, Err: ErrAnswered, Status: iterate.Escalated,
			Question: c.Question, Iteration: c.Iteration, Accepted: &acc}
	}
	if _, err := tx.Exec(ctx, `UPDATE `+f.table("fleet_sessions")+`
		SET answer = $2, answer_generation = $3, answered_at = $4 WHERE session = $1`,
		c.Session, text, int64(c.Generation), acc.At); err != nil {
		return fmt.Errorf("fleet: extending session %q: answering its question: %w", c.Session, err)
	}
	return nil
}
