package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// Cancelled is the status of a session cancelled with [Fleet.Cancel]: its
// newest checkpoint is saved with it, and, like every status that is not
// running, interrupted or escalated, it is final: Resume returns the saved
// result and the pool never runs the session again.
const Cancelled iterate.Status = "cancelled"

// Errors of the fleet's operations, matched with errors.Is.
var (
	// ErrUnknownSession: no session of that name was submitted.
	ErrUnknownSession = errors.New("fleet: unknown session")
	// ErrCancelled: the session was cancelled.
	ErrCancelled = errors.New("fleet: session cancelled")
	// ErrNotEscalated: the session has no open question to answer.
	ErrNotEscalated = errors.New("fleet: session not escalated")
	// ErrNotStopped: the session has not stopped yet.
	ErrNotStopped = errors.New("fleet: session not stopped")
)

// KindError reports a session used as a kind it is not of.
type KindError struct {
	Session string
	Kind    string // the session's kind
	Want    string // the kind it was used as
}

func (e *KindError) Error() string {
	return fmt.Sprintf("fleet: session %q is of kind %q, not %q", e.Session, e.Kind, e.Want)
}

// Session describes one session of a fleet.
type Session struct {
	// Name and Kind are the session's name and kind.
	Name, Kind string
	// Status is the newest checkpoint's status; Cancelled once the session
	// is cancelled and no worker runs it (before its checkpoint says so
	// too); [Queued] for a session not started yet.
	Status iterate.Status
	// Reason and Iteration are the newest checkpoint's.
	Reason    string
	Iteration int
	// Question is the open escalation's question, when Status is
	// iterate.Escalated; Answered is set once it has been answered (the
	// session then waits for a worker).
	Question string
	Answered bool
	// Holder names the worker holding the session's lease, "" unless live.
	Holder string
	// Saved is when the newest checkpoint was stored; Age, how long ago.
	Saved time.Time
	Age   time.Duration
	// Submitted is when the session was submitted.
	Submitted time.Time
	// Job is the state of the session's River job (available, running,
	// scheduled, retryable, completed, cancelled, discarded); Attempt its
	// attempts; LastError its newest error.
	Job       string
	Attempt   int
	LastError string
}

// Queued is the [Session.Status] of a session that has not started.
const Queued iterate.Status = "queued"

// sessionRow is a session's row of the fleet's table.
type sessionRow struct {
	kind             string
	args             []byte
	jobID            *int64
	cancelled        bool
	answer           *string
	answerGeneration uint64
}

// sessionRow reads the fleet's row of session.
func (f *Fleet) sessionRow(ctx context.Context, session string) (sessionRow, error) {
	var r sessionRow
	var gen *int64
	err := f.pool.QueryRow(ctx, `SELECT kind, args, job_id, cancelled_at IS NOT NULL, answer, answer_generation
		FROM `+f.table("fleet_sessions")+` WHERE session = $1`, session).
		Scan(&r.kind, &r.args, &r.jobID, &r.cancelled, &r.answer, &gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("%w: %q", ErrUnknownSession, session)
	}
	if err != nil {
		return r, fmt.Errorf("fleet: reading session %q: %w", session, err)
	}
	if gen != nil {
		r.answerGeneration = uint64(*gen)
	}
	return r, nil
}

// sessionsQuery lists sessions with their newest checkpoint, lease and job.
const sessionsQuery = `
	SELECT s.session, s.kind, s.submitted_at, s.cancelled_at IS NOT NULL,
		s.answer_generation IS NOT NULL AND s.answer_generation = c.generation,
		coalesce(c.status, ''), coalesce(c.reason, ''), coalesce(c.iteration, 0), coalesce(c.question, ''), c.stored_at,
		CASE WHEN l.holder <> '' AND l.expires_at > clock_timestamp() THEN l.holder ELSE '' END,
		coalesce(j.state::text, ''), coalesce(j.attempt, 0),
		coalesce(j.errors[array_upper(j.errors, 1)]->>'error', ''),
		clock_timestamp()
	FROM %[1]s.fleet_sessions s
	LEFT JOIN LATERAL (SELECT * FROM %[1]s.checkpoints x WHERE x.session = s.session
		ORDER BY x.generation DESC LIMIT 1) c ON true
	LEFT JOIN %[1]s.leases l ON l.session = s.session
	LEFT JOIN %[1]s.river_job j ON j.id = s.job_id`

func scanSession(row pgx.CollectableRow) (Session, error) {
	var s Session
	var status string
	var cancelled bool
	var iteration int64
	var saved *time.Time
	var now time.Time
	var attempt int32
	if err := row.Scan(&s.Name, &s.Kind, &s.Submitted, &cancelled, &s.Answered, &status, &s.Reason, &iteration,
		&s.Question, &saved, &s.Holder, &s.Job, &attempt, &s.LastError, &now); err != nil {
		return s, err
	}
	s.Status, s.Iteration, s.Attempt = iterate.Status(status), int(iteration), int(attempt)
	if saved != nil {
		s.Saved, s.Age = saved.UTC(), now.Sub(*saved)
	}
	switch {
	case cancelled && !s.Status.Final() && s.Job != "running":
		s.Status = Cancelled
	case s.Status == "":
		s.Status = Queued
	}
	if s.Status != iterate.Escalated {
		s.Question = ""
	}
	return s, nil
}

// Sessions lists every session of the fleet, by name.
func (f *Fleet) Sessions(ctx context.Context) ([]Session, error) {
	rows, err := f.pool.Query(ctx, fmt.Sprintf(sessionsQuery, pgx.Identifier{f.cfg.schema}.Sanitize())+` ORDER BY s.session`)
	if err != nil {
		return nil, fmt.Errorf("fleet: listing sessions: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanSession)
	if err != nil {
		return nil, fmt.Errorf("fleet: listing sessions: %w", err)
	}
	return list, nil
}

// Session describes one session, or returns an error matching
// [ErrUnknownSession].
func (f *Fleet) Session(ctx context.Context, name string) (Session, error) {
	rows, err := f.pool.Query(ctx, fmt.Sprintf(sessionsQuery, pgx.Identifier{f.cfg.schema}.Sanitize())+` WHERE s.session = $1`, name)
	if err != nil {
		return Session{}, fmt.Errorf("fleet: reading session %q: %w", name, err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, scanSession)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, fmt.Errorf("%w: %q", ErrUnknownSession, name)
	}
	if err != nil {
		return Session{}, fmt.Errorf("fleet: reading session %q: %w", name, err)
	}
	return s, nil
}

// Answer answers the open question of an escalated session, from any
// process: the session is resumed on some worker with the answer (as
// [iterate.WithAnswer]). Answering a session that is not escalated is an
// error matching [ErrNotEscalated]; a cancelled one, [ErrCancelled]. The
// answer applies to the escalation open now: answering twice before a
// worker resumes the session replaces it.
func (f *Fleet) Answer(ctx context.Context, session, answer string) error {
	return pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		var jobID *int64
		var cancelled bool
		err := tx.QueryRow(ctx, `SELECT job_id, cancelled_at IS NOT NULL FROM `+f.table("fleet_sessions")+`
			WHERE session = $1 FOR UPDATE`, session).Scan(&jobID, &cancelled)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrUnknownSession, session)
		}
		if err != nil {
			return fmt.Errorf("fleet: answering session %q: %w", session, err)
		}
		if cancelled {
			return fmt.Errorf("fleet: answering session %q: %w", session, ErrCancelled)
		}
		c, err := f.store.Load(ctx, session)
		if errors.Is(err, checkpoint.ErrNotFound) {
			return fmt.Errorf("fleet: answering session %q: %w: not started", session, ErrNotEscalated)
		}
		if err != nil {
			return fmt.Errorf("fleet: answering session %q: %w", session, err)
		}
		if iterate.Status(c.Status) != iterate.Escalated {
			return fmt.Errorf("fleet: answering session %q: %w: it is %s", session, ErrNotEscalated, c.Status)
		}
		if _, err := tx.Exec(ctx, `UPDATE `+f.table("fleet_sessions")+`
			SET answer = $2, answer_generation = $3, answered_at = clock_timestamp() WHERE session = $1`,
			session, answer, int64(c.Generation)); err != nil {
			return fmt.Errorf("fleet: answering session %q: %w", session, err)
		}
		if jobID != nil {
			// A job still running (completing as parked) is not touched:
			// the workers' reconciliation retries it once it completed.
			if _, err := f.river.JobRetryTx(ctx, tx, *jobID); err != nil {
				return fmt.Errorf("fleet: answering session %q: %w", session, err)
			}
		}
		return nil
	})
}

// Cancel cancels a session for good, from any process: a worker running it
// stops it at its next safe point (within a poll interval and the time the
// loop takes to reach one), its newest checkpoint is saved with status
// [Cancelled], and the pool never runs it again. A session not running is
// saved as cancelled at once when its lease is free (else by a worker, once
// it is). Cancelling a session that has stopped for good changes nothing
// but refuses it any answer; cancelling twice is harmless.
func (f *Fleet) Cancel(ctx context.Context, session string) error {
	var running bool
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		var jobID *int64
		err := tx.QueryRow(ctx, `UPDATE `+f.table("fleet_sessions")+`
			SET cancelled_at = coalesce(cancelled_at, clock_timestamp()) WHERE session = $1 RETURNING job_id`, session).Scan(&jobID)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrUnknownSession, session)
		}
		if err != nil {
			return fmt.Errorf("fleet: cancelling session %q: %w", session, err)
		}
		if jobID == nil {
			return nil
		}
		j, err := f.river.JobCancelTx(ctx, tx, *jobID)
		if err != nil {
			return fmt.Errorf("fleet: cancelling session %q: %w", session, err)
		}
		running = j.State == "running"
		return nil
	})
	if err != nil || running {
		return err
	}
	if err := f.markCancelled(ctx, session); err != nil && !errors.Is(err, checkpoint.ErrLocked) {
		return err
	}
	return nil
}

// markCancelled saves the session's newest checkpoint again with status
// Cancelled, under its lease: the session ends for good. A session without
// a checkpoint, or stopped for good already, is left as it is.
func (f *Fleet) markCancelled(ctx context.Context, session string) error {
	token, release, err := f.store.Lock(ctx, session)
	if err != nil {
		return err
	}
	defer release()
	c, err := f.store.Load(ctx, session)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if iterate.Status(c.Status).Final() {
		return nil
	}
	c.Reason = fmt.Sprintf("cancelled at iteration %d (was %s)", c.Iteration, c.Status)
	c.Status = string(Cancelled)
	c.Question = ""
	c.Token = token
	c.Generation = 0 // the store writes the next
	c.Time = time.Now()
	return f.store.Save(ctx, c)
}
