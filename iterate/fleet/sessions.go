package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// ErrFailed is matched by every *[FailedError].
var ErrFailed = errors.New("fleet: session failed")

// FailedError reports a session whose job was given up: its runs failed
// [MaxAttempts] times (a build function that fails or panics, a worker
// refusing the session's settings, a storage fault that lasted). The
// session stays as its newest checkpoint left it; [Fleet.Retry] runs it
// again.
type FailedError struct {
	Session string
	// Attempts is how many runs failed; LastError, the newest one's error.
	Attempts  int
	LastError string
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("fleet: session %q failed: its job was given up after %d attempts: %s", e.Session, e.Attempts, e.LastError)
}

// Is reports whether target is ErrFailed.
func (e *FailedError) Is(target error) bool { return target == ErrFailed }

// ErrNotFailed: [Fleet.Retry] of a session that has not failed.
var ErrNotFailed = errors.New("fleet: session not failed")

// failed returns a *FailedError when the session's job was discarded while
// its newest checkpoint is not final.
func (f *Fleet) failed(ctx context.Context, session string, jobID int64) error {
	var state, lastError string
	var attempt int32
	var final bool
	err := f.pool.QueryRow(ctx, `SELECT j.state::text, j.attempt, coalesce(j.errors[array_upper(j.errors, 1)]->>'error', ''),
			coalesce((SELECT status FROM `+f.table("checkpoints")+` c WHERE c.session = $2
				ORDER BY generation DESC LIMIT 1), '') NOT IN ('', 'running', 'interrupted', 'escalated')
		FROM `+f.table("river_job")+` j WHERE j.id = $1`, jobID, session).Scan(&state, &attempt, &lastError, &final)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fleet: reading the job of session %q: %w", session, err)
	}
	if state == "discarded" && !final {
		return &FailedError{Session: session, Attempts: int(attempt), LastError: lastError}
	}
	return nil
}

// Retry runs a failed session again ([Session.Status] [iterate.Failed]: its
// job was given up after [MaxAttempts] failed runs), from any process: its
// job is queued again with [MaxAttempts] more attempts, and the session
// continues from its newest checkpoint (or starts, without one). Retrying
// a session that has not failed is an error matching [ErrNotFailed]; a
// cancelled one, [ErrCancelled]; an unknown one, [ErrUnknownSession].
func (f *Fleet) Retry(ctx context.Context, session string) error {
	return pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		jobID, cancelled, err := f.lockSession(ctx, tx, session, "retrying")
		if err != nil {
			return err
		}
		if cancelled {
			return errf(ErrCancelled, "cannot retry session %q: it was cancelled", session)
		}
		if jobID == nil {
			return errf(ErrNotFailed, "cannot retry session %q: it has not failed (it has no job)", session)
		}
		if err := f.failed(ctx, session, *jobID); err == nil {
			return errf(ErrNotFailed, "cannot retry session %q: it has not failed", session)
		} else if !errors.Is(err, ErrFailed) {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE `+f.table("river_job")+` SET state = 'available',
				max_attempts = attempt + $2, scheduled_at = now(), finalized_at = NULL
			WHERE id = $1 AND state = 'discarded'`, *jobID, f.cfg.maxAttempts)
		if err != nil {
			return fmt.Errorf("fleet: retrying session %q: %w", session, err)
		}
		if tag.RowsAffected() != 1 {
			return errf(ErrNotFailed, "cannot retry session %q: it has not failed", session)
		}
		return nil
	})
}

// ErrArgsDiffer is matched by every *[ArgsError].
var ErrArgsDiffer = errors.New("fleet: session submitted with other arguments")

// ArgsError reports a session submitted again under its name with other
// arguments than the ones it was submitted with: the session keeps its
// first arguments.
type ArgsError struct {
	Session, Kind string
	// Submitted are the session's arguments, Given the refused ones, as
	// JSON.
	Submitted, Given []byte
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("fleet: session %q of kind %q was submitted with other arguments: %s, not %s",
		e.Session, e.Kind, e.Submitted, e.Given)
}

// Is reports whether target is ErrArgsDiffer.
func (e *ArgsError) Is(target error) bool { return target == ErrArgsDiffer }

// sentinelError is a sentinel with what happened: its text says it all,
// with the package's prefix once.
type sentinelError struct {
	msg string
	err error
}

func (e *sentinelError) Error() string { return e.msg }
func (e *sentinelError) Unwrap() error { return e.err }

// errf returns an error matching sentinel whose text is "fleet: " and the
// formatted message, which says what the sentinel says, in context.
func errf(sentinel error, format string, args ...any) error {
	return &sentinelError{msg: "fleet: " + fmt.Sprintf(format, args...), err: sentinel}
}

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
	// too); [iterate.Failed] once its job was given up after [MaxAttempts]
	// failed runs (LastError says why; [Fleet.Retry] runs it again);
	// [iterate.Running] while a worker runs a session that has no
	// checkpoint yet; [Queued] for a session not started yet.
	Status iterate.Status
	// Reason and Iteration are the newest checkpoint's.
	Reason    string
	Iteration int
	// Question is the open escalation's question, when Status is
	// iterate.Escalated; Answered is set once it has been answered (the
	// session then waits for a worker).
	Question string
	Answered bool
	// Extension is the extension of the budget accepted for the session's
	// newest stop at its budget ([Fleet.Extend]: Status
	// [iterate.BudgetExhausted], or [iterate.Escalated] parked at its
	// budget's limit, whose question the extension answered): the limits
	// raised to, who asked, when the fleet accepted it and the generation
	// of the stop it continues, as Fleet.Extend accepted them (an
	// *[ExtendError]'s Accepted). The session then waits for a worker to
	// resume it under them. Nil when the newest stop was not extended,
	// when the session was cancelled (no worker resumes it), and once the
	// session moved on (the extension is then the session's own:
	// [iterate.Result]'s Extensions).
	Extension *Extension
	// Extended reports whether Extension is set.
	Extended bool
	// Answer is the newest answer accepted for the session's questions
	// (for the open one when Answered; for an earlier one otherwise), with
	// who gave it and when; nil when none was. [Fleet.Answers] lists
	// them all.
	Answer *Answer
	// Holder names the worker holding the session's lease, "" unless live.
	Holder string
	// Cancelled reports whether the session was cancelled ([Fleet.Cancel]),
	// whatever its Status (a session stopped for good keeps the status
	// it stopped with): it is never extended, answered nor run again.
	Cancelled bool
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
	// JobID is the ID of the session's River job, for a job console
	// (riverui's page of the job); 0 when it has none.
	JobID int64
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
		return r, errf(ErrUnknownSession, "unknown session %q", session)
	}
	if err != nil {
		return r, fmt.Errorf("fleet: reading session %q: %w", session, err)
	}
	if gen != nil {
		r.answerGeneration = uint64(*gen)
	}
	return r, nil
}

// head is the head of a session's newest checkpoint.
type head struct {
	generation uint64
	status     iterate.Status
	// extension is the accepted extension of a budget_exhausted head
	// (Fleet.Extend), nil without one.
	extension *Extension
}

// sessionHead is the query of the fleet's row of session and the head of
// its newest checkpoint, in one statement, for [pgcheckpoint.Store.LockLoad]
// to run in its round trip: its callback fills h.
func (f *Fleet) sessionHead(session string, h *headResult) *pgx.QueuedQuery {
	q := &pgx.QueuedQuery{SQL: `SELECT s.kind, s.args, s.job_id, s.cancelled_at IS NOT NULL, s.answer, s.answer_generation,
			c.generation, c.status, e.limits, e.extended_by
		FROM ` + f.table("fleet_sessions") + ` s
		LEFT JOIN LATERAL (SELECT generation, status FROM ` + f.table("checkpoints") + ` x
			WHERE x.session = s.session ORDER BY x.generation DESC LIMIT 1) c ON true
		LEFT JOIN ` + f.table("fleet_extensions") + ` e ON e.session = s.session AND e.generation = c.generation
		WHERE s.session = $1`, Arguments: []any{session}}
	q.QueryRow(func(row pgx.Row) error {
		h.read = true
		var r sessionRow
		var gen, cgen *int64
		var status, extBy *string
		var extLimits []byte
		err := row.Scan(&r.kind, &r.args, &r.jobID, &r.cancelled, &r.answer, &gen, &cgen, &status, &extLimits, &extBy)
		if errors.Is(err, pgx.ErrNoRows) {
			h.unknown = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading session %q: %w", session, err)
		}
		if gen != nil {
			r.answerGeneration = uint64(*gen)
		}
		h.row = r
		if cgen == nil || status == nil {
			return nil
		}
		h.latest = &head{generation: uint64(*cgen), status: iterate.Status(*status)}
		if extLimits != nil && extBy != nil {
			h.latest.extension = &Extension{By: *extBy, Generation: h.latest.generation}
			if err := json.Unmarshal(extLimits, &h.latest.extension.To); err != nil {
				return fmt.Errorf("reading the extension of session %q: %w", session, err)
			}
		}
		return nil
	})
	return q
}

// headResult is what the query of sessionHead read: the session's row
// and the head of its newest checkpoint (nil without one); unknown when
// the session has no row.
type headResult struct {
	read    bool
	unknown bool
	row     sessionRow
	latest  *head
}

// sessionsQuery lists sessions with their newest checkpoint, lease and job:
// %[1]s is the fleet's schema, %[2]s the sessions listed (the fleet's
// table, or a page of it), each joined to its own rows only (lateral
// joins and primary keys).
const sessionsQuery = `
	SELECT s.session, s.kind, s.submitted_at, s.cancelled_at IS NOT NULL,
		s.answer_generation IS NOT NULL AND s.answer_generation = c.generation,
		coalesce(c.status, ''), coalesce(c.reason, ''), coalesce(c.iteration, 0), coalesce(c.question, ''), c.stored_at,
		CASE WHEN l.holder <> '' AND l.expires_at > clock_timestamp() THEN l.holder ELSE '' END,
		coalesce(j.state::text, ''), coalesce(j.attempt, 0),
		coalesce(j.errors[array_upper(j.errors, 1)]->>'error', ''),
		clock_timestamp(),
		a.answer, coalesce(a.answered_by, ''), coalesce(a.question, ''), coalesce(a.iteration, 0), a.answered_at,
		coalesce(a.generation, 0),
		e.limits, e.extended_by, e.extended_at, e.generation,
		coalesce(s.job_id, 0)
	FROM %[2]s s
	LEFT JOIN LATERAL (SELECT * FROM %[1]s.checkpoints x WHERE x.session = s.session
		ORDER BY x.generation DESC LIMIT 1) c ON true
	LEFT JOIN LATERAL (SELECT * FROM %[1]s.fleet_answers x WHERE x.session = s.session
		ORDER BY x.generation DESC LIMIT 1) a ON true
	LEFT JOIN %[1]s.fleet_extensions e ON e.session = s.session AND e.generation = c.generation
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
	var answer *string
	var a Answer
	var answerIteration int64
	var answeredAt *time.Time
	var answerGen int64
	var extLimits []byte
	var extBy *string
	var extAt *time.Time
	var extGen *int64
	if err := row.Scan(&s.Name, &s.Kind, &s.Submitted, &cancelled, &s.Answered, &status, &s.Reason, &iteration,
		&s.Question, &saved, &s.Holder, &s.Job, &attempt, &s.LastError, &now,
		&answer, &a.By, &a.Question, &answerIteration, &answeredAt, &answerGen,
		&extLimits, &extBy, &extAt, &extGen, &s.JobID); err != nil {
		return s, err
	}
	if answer != nil {
		a.Text, a.Iteration, a.Generation = *answer, int(answerIteration), uint64(answerGen)
		if answeredAt != nil {
			a.At = answeredAt.UTC()
		}
		s.Answer = &a
	}
	s.Status, s.Iteration, s.Attempt, s.Cancelled = iterate.Status(status), int(iteration), int(attempt), cancelled
	if saved != nil {
		s.Saved, s.Age = saved.UTC(), now.Sub(*saved)
	}
	switch {
	case cancelled && !s.Status.Final() && s.Job != "running":
		s.Status = Cancelled
	case s.Job == "discarded" && !s.Status.Final():
		s.Status = iterate.Failed
	case s.Status == "" && s.Job == "running":
		s.Status = iterate.Running
	case s.Status == "":
		s.Status = Queued
	}
	if s.Status != iterate.Escalated {
		s.Question = ""
	}
	// The extension of the newest checkpoint's stop (the join's row is
	// that generation's), unless no worker will resume the session under
	// it: cancelled (a stop at the budget is final, so its status stays),
	// or no longer at that stop (failed).
	if extLimits != nil && extBy != nil && extAt != nil && extGen != nil && !cancelled &&
		(s.Status == iterate.BudgetExhausted || s.Status == iterate.Escalated) {
		x := &Extension{By: *extBy, At: extAt.UTC(), Generation: uint64(*extGen)}
		if err := json.Unmarshal(extLimits, &x.To); err != nil {
			return s, fmt.Errorf("reading the extension of session %q: %w", s.Name, err)
		}
		s.Extension, s.Extended = x, true
	}
	return s, nil
}

// Sessions lists every session of the fleet, by name.
func (f *Fleet) Sessions(ctx context.Context) ([]Session, error) {
	schema := pgx.Identifier{f.cfg.schema}.Sanitize()
	rows, err := f.pool.Query(ctx, fmt.Sprintf(sessionsQuery, schema, schema+".fleet_sessions")+` ORDER BY s.session`)
	if err != nil {
		return nil, fmt.Errorf("fleet: listing sessions: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanSession)
	if err != nil {
		return nil, fmt.Errorf("fleet: listing sessions: %w", err)
	}
	return list, nil
}

// SessionsAfter lists the sessions whose names sort after after (all of
// them with ""), by name, at most limit of them (none when limit is not
// positive): a page of [Fleet.Sessions], read in one query that reads
// only the page's sessions (the sessions table's primary key, and each
// session's newest checkpoint, answer, extension, lease and job), so that
// a page costs the same however many sessions the fleet has. The next
// page is the one after the last session listed; fewer than limit
// sessions means the list ended.
func (f *Fleet) SessionsAfter(ctx context.Context, after string, limit int) ([]Session, error) {
	if limit <= 0 {
		return nil, nil
	}
	schema := pgx.Identifier{f.cfg.schema}.Sanitize()
	page := `(SELECT * FROM ` + schema + `.fleet_sessions WHERE session > $1 ORDER BY session LIMIT $2)`
	rows, err := f.pool.Query(ctx, fmt.Sprintf(sessionsQuery, schema, page)+` ORDER BY s.session`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("fleet: listing sessions after %q: %w", after, err)
	}
	list, err := pgx.CollectRows(rows, scanSession)
	if err != nil {
		return nil, fmt.Errorf("fleet: listing sessions after %q: %w", after, err)
	}
	return list, nil
}

// Session describes one session, or returns an error matching
// [ErrUnknownSession].
func (f *Fleet) Session(ctx context.Context, name string) (Session, error) {
	schema := pgx.Identifier{f.cfg.schema}.Sanitize()
	rows, err := f.pool.Query(ctx, fmt.Sprintf(sessionsQuery, schema, schema+".fleet_sessions")+` WHERE s.session = $1`, name)
	if err != nil {
		return Session{}, fmt.Errorf("fleet: reading session %q: %w", name, err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, scanSession)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, errf(ErrUnknownSession, "unknown session %q", name)
	}
	if err != nil {
		return Session{}, fmt.Errorf("fleet: reading session %q: %w", name, err)
	}
	return s, nil
}

// Answer is an answer accepted for a session's question, as [Fleet.Reply]
// gives it and [Session.Answer] and [Fleet.Answers] record it.
type Answer struct {
	// Text is the answer, given to the loop as [iterate.WithAnswer].
	Text string
	// By names who gave it, as the caller of [Fleet.Reply] says (the
	// answering process's [Fleet.Holder] by default).
	By string
	// Question is the question answered. Given to [Fleet.Reply], it must
	// be the question open now, or the answer is refused with an
	// *[AnswerError] matching [ErrQuestionChanged].
	Question string
	// Iteration is the iteration the question was asked at, Generation
	// the escalated checkpoint's generation it answers, and At when the
	// answer was accepted. They are set by the fleet.
	Iteration  int
	Generation uint64
	At         time.Time
}

// Errors of an answer refused, matched with errors.Is on an *[AnswerError].
var (
	// ErrAnswered: the open question was answered already (by someone
	// else, or by the same caller twice); the session runs, or will run,
	// with that answer.
	ErrAnswered = errors.New("fleet: question already answered")
	// ErrQuestionChanged: the question the answer was for is no longer
	// the open one.
	ErrQuestionChanged = errors.New("fleet: question changed")
)

// AnswerError reports an answer that was not accepted, and why. It matches
// (errors.Is) its Err: [ErrAnswered], [ErrNotEscalated],
// [ErrQuestionChanged] or [ErrCancelled].
type AnswerError struct {
	Session string
	Err     error
	// Status is the session's status: for ErrNotEscalated, not
	// [iterate.Escalated] ([Queued] before it started).
	Status iterate.Status
	// Question and Iteration are the open question and the iteration it
	// was asked at, when the session is escalated.
	Question  string
	Iteration int
	// Accepted is the answer accepted for the open question (ErrAnswered).
	Accepted *Answer
}

func (e *AnswerError) Error() string {
	what := strings.TrimPrefix(e.Err.Error(), "fleet: ")
	switch {
	case errors.Is(e.Err, ErrAnswered) && e.Accepted != nil:
		what = fmt.Sprintf("question %q already answered %q by %q at %s", e.Accepted.Question, e.Accepted.Text,
			e.Accepted.By, e.Accepted.At.UTC().Format(time.RFC3339Nano))
	case errors.Is(e.Err, ErrQuestionChanged):
		what = fmt.Sprintf("question changed: the open question is %q (iteration %d)", e.Question, e.Iteration)
	case errors.Is(e.Err, ErrNotEscalated):
		what = fmt.Sprintf("session not escalated: it is %s", e.Status)
	}
	return fmt.Sprintf("fleet: answer to session %q refused: %s", e.Session, what)
}

func (e *AnswerError) Unwrap() error { return e.Err }

// Answer answers the open question of an escalated session, from any
// process, as [Fleet.Reply] does with the answer given by this process
// ([Fleet.Holder]).
func (f *Fleet) Answer(ctx context.Context, session, answer string) error {
	return f.Reply(ctx, session, Answer{Text: answer})
}

// Reply answers the open question of an escalated session, from any
// process: the session is resumed on some worker with a.Text (as
// [iterate.WithAnswer]), and the answer, a.By and when it was accepted are
// recorded with the session ([Session.Answer], [Fleet.Answers]).
//
// An open question is answered once, whoever answers first (a
// compare-and-set in the database): a second answer, concurrent or late
// (the session runs with the first, or has not saved since), is refused
// with an *[AnswerError] matching [ErrAnswered] and naming the answer
// accepted, its author and time. A session that is not escalated refuses
// an answer with [ErrNotEscalated], a cancelled one with [ErrCancelled],
// and, when a.Question is set, a session whose open question is another
// one (it went on and asked again) with [ErrQuestionChanged]. Only a nil
// error means the session will run with this answer. An unknown session
// is an error matching [ErrUnknownSession].
func (f *Fleet) Reply(ctx context.Context, session string, a Answer) error {
	if a.By == "" {
		a.By = f.Holder()
	}
	return pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		// The row lock orders the answers and cancellations of one
		// session; the answers' primary key makes the answer once only.
		jobID, cancelled, err := f.lockSession(ctx, tx, session, "answering")
		if err != nil {
			return err
		}
		if cancelled {
			return &AnswerError{Session: session, Err: ErrCancelled, Status: Cancelled}
		}
		// The newest checkpoint's head, not its state.
		var gen, iteration int64
		var status, question string
		err = tx.QueryRow(ctx, `SELECT generation, status, question, iteration FROM `+f.table("checkpoints")+`
			WHERE session = $1 ORDER BY generation DESC LIMIT 1`, session).Scan(&gen, &status, &question, &iteration)
		if errors.Is(err, pgx.ErrNoRows) {
			return &AnswerError{Session: session, Err: ErrNotEscalated, Status: Queued}
		}
		if err != nil {
			return fmt.Errorf("fleet: answering session %q: %w", session, err)
		}
		if iterate.Status(status) != iterate.Escalated {
			return &AnswerError{Session: session, Err: ErrNotEscalated, Status: iterate.Status(status)}
		}
		if a.Question != "" && a.Question != question {
			return &AnswerError{Session: session, Err: ErrQuestionChanged, Status: iterate.Escalated,
				Question: question, Iteration: int(iteration)}
		}
		var inserted bool
		var acc Answer
		var accIteration int64
		err = tx.QueryRow(ctx, `WITH ins AS (
				INSERT INTO `+f.table("fleet_answers")+` (session, generation, iteration, question, answer, answered_by)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (session, generation) DO NOTHING
				RETURNING answer, answered_by, question, iteration, answered_at)
			SELECT true, * FROM ins
			UNION ALL
			SELECT false, answer, answered_by, question, iteration, answered_at FROM `+f.table("fleet_answers")+`
			WHERE session = $1 AND generation = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
			session, gen, iteration, question, a.Text, a.By).
			Scan(&inserted, &acc.Text, &acc.By, &acc.Question, &accIteration, &acc.At)
		if err != nil {
			return fmt.Errorf("fleet: answering session %q: %w", session, err)
		}
		acc.Iteration = int(accIteration)
		if !inserted {
			return &AnswerError{Session: session, Err: ErrAnswered, Status: iterate.Escalated,
				Question: question, Iteration: int(iteration), Accepted: &acc}
		}
		// The session's row names the answer to resume with (workers read
		// it there).
		if _, err := tx.Exec(ctx, `UPDATE `+f.table("fleet_sessions")+`
			SET answer = $2, answer_generation = $3, answered_at = $4 WHERE session = $1`,
			session, a.Text, gen, acc.At); err != nil {
			return fmt.Errorf("fleet: answering session %q: %w", session, err)
		}
		if jobID != nil {
			// A job still running (completing as parked) is not touched:
			// the workers' reconciliation retries it once it completed.
			if _, err := f.river.JobRetryTx(ctx, tx, *jobID); err != nil {
				return fmt.Errorf("fleet: answering session %q: retrying its job: %w", session, err)
			}
		}
		return nil
	})
}

// Answers returns the answers accepted for a session's questions, oldest
// first, or an error matching [ErrUnknownSession].
func (f *Fleet) Answers(ctx context.Context, session string) ([]Answer, error) {
	rows, err := f.pool.Query(ctx, `SELECT a.answer, a.answered_by, a.question, a.iteration, a.answered_at, a.generation
		FROM `+f.table("fleet_sessions")+` s LEFT JOIN `+f.table("fleet_answers")+` a ON a.session = s.session
		WHERE s.session = $1 ORDER BY a.generation`, session)
	if err != nil {
		return nil, fmt.Errorf("fleet: reading the answers of session %q: %w", session, err)
	}
	var found bool
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Answer, error) {
		found = true
		var text, by, question *string
		var iteration *int64
		var at *time.Time
		var gen *int64
		if err := r.Scan(&text, &by, &question, &iteration, &at, &gen); err != nil || text == nil {
			return nil, err
		}
		return &Answer{Text: *text, By: *by, Question: *question, Iteration: int(*iteration), Generation: uint64(*gen),
			At: at.UTC()}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: reading the answers of session %q: %w", session, err)
	}
	if !found {
		return nil, errf(ErrUnknownSession, "unknown session %q", session)
	}
	var out []Answer
	for _, a := range list {
		if a != nil {
			out = append(out, *a)
		}
	}
	return out, nil
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
			return errf(ErrUnknownSession, "unknown session %q", session)
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

// lockSession locks session's row in tx and returns its job's id (nil
// before it has one) and whether it was cancelled; an unknown session is
// an error matching [ErrUnknownSession]. doing names the caller's work in
// other errors ("answering").
func (f *Fleet) lockSession(ctx context.Context, tx pgx.Tx, session, doing string) (jobID *int64, cancelled bool, err error) {
	err = tx.QueryRow(ctx, `SELECT job_id, cancelled_at IS NOT NULL FROM `+f.table("fleet_sessions")+`
		WHERE session = $1 FOR UPDATE`, session).Scan(&jobID, &cancelled)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, errf(ErrUnknownSession, "unknown session %q", session)
	}
	if err != nil {
		return nil, false, fmt.Errorf("fleet: %s session %q: %w", doing, session, err)
	}
	return jobID, cancelled, nil
}
