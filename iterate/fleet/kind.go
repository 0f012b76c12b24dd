package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"go.uber.org/zap"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// Loop is what a kind's build function returns for one session: the
// worker, the engine's options and the state a new session starts from.
//
// The fleet adds its own checkpointer (the fleet's store, Strict, with the
// task journal) and the session's name after Options, so options of the
// same names there are overridden. Everything else the engine's settings
// fingerprint covers (thresholds, limits, strategy and policy parameters)
// must be the same in every process that runs the session.
//
// A session saved under other settings (a rolling deploy of new settings
// while sessions are in flight) is refused by name (an
// *[iterate.SettingsChangedError]; its job is retried, and fails once
// [MaxAttempts] runs were refused) unless every setting that changed is
// named in AllowChanges: then it continues under this loop's settings.
type Loop[S any] struct {
	Worker  iterate.Worker[S]
	Options []iterate.Option
	Initial S
	// AllowChanges names the settings, as an
	// *[iterate.SettingsChangedError] names them ("max iterations",
	// "coverage threshold", "strategy", "host settings", …), that may
	// differ from the ones a session was saved under. A kind versions its
	// sessions by giving [iterate.WithFingerprint] a version ("v2") and
	// allowing "host settings" while sessions of earlier versions are in
	// flight.
	AllowChanges []string
}

// allows reports whether every change is of a setting named in l's
// AllowChanges.
func (l *Loop[S]) allows(changes []string) bool {
	if len(changes) == 0 || len(l.AllowChanges) == 0 {
		return false
	}
next:
	for _, c := range changes {
		for _, name := range l.AllowChanges {
			if name != "" && strings.HasPrefix(c, name+" ") {
				continue next
			}
		}
		return false
	}
	return true
}

// Kind is a kind of loop registered with a fleet: sessions of it are
// submitted with arguments of type A and end with a state of type S.
type Kind[A, S any] struct {
	f     *Fleet
	name  string
	build func(ctx context.Context, args A) (Loop[S], error)
}

// runner is a registered kind, as the worker sees it.
type runner interface {
	run(ctx context.Context, j *job) (stopped, error)
}

// Register registers a kind of loop under name (lower-case letters, digits,
// '-' and '_'; at most 63), with the function that builds a session's loop
// from its arguments. A's values travel as JSON. Every process that submits
// or runs sessions of the kind registers it, before [Fleet.Work].
func Register[A, S any](f *Fleet, name string, build func(ctx context.Context, args A) (Loop[S], error)) (*Kind[A, S], error) {
	if !kindName.MatchString(name) {
		return nil, fmt.Errorf("fleet: kind name %q: want lower-case letters, digits, '-' and '_', at most 63", name)
	}
	if build == nil {
		return nil, fmt.Errorf("fleet: kind %q: nil build function", name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.working {
		return nil, fmt.Errorf("fleet: kind %q registered after Work started", name)
	}
	if _, dup := f.kinds[name]; dup {
		return nil, fmt.Errorf("fleet: kind %q registered twice", name)
	}
	k := &Kind[A, S]{f: f, name: name, build: build}
	f.kinds[name] = k
	return k, nil
}

// MustRegister is [Register] that panics on an error, for registrations at
// start-up.
func MustRegister[A, S any](f *Fleet, name string, build func(ctx context.Context, args A) (Loop[S], error)) *Kind[A, S] {
	k, err := Register(f, name, build)
	if err != nil {
		panic(err)
	}
	return k
}

// Name returns the kind's name.
func (k *Kind[A, S]) Name() string { return k.name }

// Submit submits a session of this kind named session, with args, to be run
// by some worker. It is idempotent by session name, under concurrency too:
// of many submits of one name, from any processes at once, one reports
// true and the others false, with no error. Submitting a session that
// exists with the same arguments does nothing and reports false; with
// other arguments it is an *[ArgsError] (matching [ErrArgsDiffer]); a
// session of another kind under that name is a *[KindError]; a cancelled
// one, an error matching [ErrCancelled]. A session that failed (its job
// was given up, [Session.Status] [iterate.Failed]) is not revived by
// Submit: [Fleet.Retry] does.
func (k *Kind[A, S]) Submit(ctx context.Context, session string, args A) (submitted bool, err error) {
	err = pgx.BeginFunc(ctx, k.f.pool, func(tx pgx.Tx) error {
		submitted, err = k.SubmitTx(ctx, tx, session, args)
		return err
	})
	return submitted, err
}

// SubmitTx is [Kind.Submit] inside the host's own transaction: the session
// exists, and its job can run, once tx commits, and not at all if it rolls
// back. A concurrent submit of the same name waits for tx to end.
func (k *Kind[A, S]) SubmitTx(ctx context.Context, tx pgx.Tx, session string, args A) (submitted bool, err error) {
	if err := checkpoint.ValidateSession(session); err != nil {
		return false, err
	}
	data, err := json.Marshal(args)
	if err != nil {
		return false, fmt.Errorf("fleet: session %q: encoding its arguments: %w", session, err)
	}
	var inserted, same bool
	var kind string
	var cancelled *time.Time
	var saved []byte
	// An update that changes nothing on a conflict, rather than DO
	// NOTHING: it waits for a concurrent insert of the name to commit and
	// returns that row, where a second statement's snapshot could miss it.
	// xmax is 0 on the row version of an insert only.
	err = tx.QueryRow(ctx, `INSERT INTO `+k.f.table("fleet_sessions")+` AS s (session, kind, args) VALUES ($1, $2, $3)
		ON CONFLICT (session) DO UPDATE SET kind = s.kind
		RETURNING s.xmax = 0, s.kind, s.cancelled_at, s.args = $3::jsonb, s.args`,
		session, k.name, data).Scan(&inserted, &kind, &cancelled, &same, &saved)
	if err != nil {
		return false, fmt.Errorf("fleet: submitting session %q: %w", session, err)
	}
	switch {
	case !inserted && kind != k.name:
		return false, &KindError{Session: session, Kind: kind, Want: k.name}
	case !inserted && cancelled != nil:
		return false, errf(ErrCancelled, "cannot submit session %q: it was cancelled", session)
	case !inserted && !same:
		return false, &ArgsError{Session: session, Kind: k.name, Submitted: saved, Given: data}
	case !inserted:
		return false, nil
	}
	res, err := k.f.river.InsertTx(ctx, tx, jobArgs{Session: session, LoopKind: k.name}, &river.InsertOpts{
		Queue:       queue(k.name),
		MaxAttempts: k.f.cfg.maxAttempts,
		UniqueOpts:  river.UniqueOpts{ByArgs: true},
	})
	if err != nil {
		return false, fmt.Errorf("fleet: submitting session %q: %w", session, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE `+k.f.table("fleet_sessions")+` SET job_id = $2 WHERE session = $1`, session, res.Job.ID); err != nil {
		return false, fmt.Errorf("fleet: submitting session %q: %w", session, err)
	}
	return true, nil
}

// Submission is one session of a [Kind.SubmitMany]: its name and arguments.
type Submission[A any] struct {
	Session string
	Args    A
}

// SubmitMany submits many sessions of this kind in one transaction (a few
// statements, whatever their number), as [Kind.Submit] would one by one:
// submitted[i] reports whether subs[i] was submitted now (false for a
// session that exists with the same arguments, or named earlier in subs).
// It is all or nothing: a name refused as Submit would refuse it (another
// kind, other arguments, cancelled, invalid) fails the whole call, with
// every refusal joined in err, and submits nothing.
func (k *Kind[A, S]) SubmitMany(ctx context.Context, subs []Submission[A]) (submitted []bool, err error) {
	err = pgx.BeginFunc(ctx, k.f.pool, func(tx pgx.Tx) error {
		submitted, err = k.SubmitManyTx(ctx, tx, subs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return submitted, nil
}

// SubmitManyTx is [Kind.SubmitMany] inside the host's own transaction; on
// an error, roll tx back: some sessions may be submitted in it.
func (k *Kind[A, S]) SubmitManyTx(ctx context.Context, tx pgx.Tx, subs []Submission[A]) ([]bool, error) {
	submitted := make([]bool, len(subs))
	first := make(map[string]int, len(subs)) // each name's first index
	data := make(map[string][]byte, len(subs))
	var errs []error
	var names []string
	var args [][]byte
	for i, sub := range subs {
		if err := checkpoint.ValidateSession(sub.Session); err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := json.Marshal(sub.Args)
		if err != nil {
			errs = append(errs, fmt.Errorf("fleet: session %q: encoding its arguments: %w", sub.Session, err))
			continue
		}
		if _, dup := first[sub.Session]; dup {
			if !jsonEqual(data[sub.Session], d) {
				errs = append(errs, &ArgsError{Session: sub.Session, Kind: k.name, Submitted: data[sub.Session], Given: d})
			}
			continue
		}
		first[sub.Session], data[sub.Session] = i, d
		names, args = append(names, sub.Session), append(args, d)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return submitted, nil
	}
	// In the names' order, so that concurrent batches lock their rows in
	// one order.
	rows, err := tx.Query(ctx, `INSERT INTO `+k.f.table("fleet_sessions")+` AS s (session, kind, args)
		SELECT n, $2, a FROM unnest($1::text[], $3::jsonb[]) AS u(n, a) ORDER BY n
		ON CONFLICT (session) DO UPDATE SET kind = s.kind
		RETURNING s.session, s.xmax = 0, s.kind, s.cancelled_at IS NOT NULL, s.args`, names, k.name, args)
	if err != nil {
		return nil, fmt.Errorf("fleet: submitting %d sessions: %w", len(names), err)
	}
	type result struct {
		session   string
		inserted  bool
		kind      string
		cancelled bool
		args      []byte
	}
	results, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (result, error) {
		var x result
		return x, r.Scan(&x.session, &x.inserted, &x.kind, &x.cancelled, &x.args)
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: submitting %d sessions: %w", len(names), err)
	}
	var params []river.InsertManyParams
	var fresh []string
	for _, x := range results {
		switch {
		case !x.inserted && x.kind != k.name:
			errs = append(errs, &KindError{Session: x.session, Kind: x.kind, Want: k.name})
		case !x.inserted && x.cancelled:
			errs = append(errs, errf(ErrCancelled, "cannot submit session %q: it was cancelled", x.session))
		case !x.inserted && !jsonEqual(x.args, data[x.session]):
			errs = append(errs, &ArgsError{Session: x.session, Kind: k.name, Submitted: x.args, Given: data[x.session]})
		case x.inserted:
			submitted[first[x.session]] = true
			fresh = append(fresh, x.session)
			params = append(params, river.InsertManyParams{Args: jobArgs{Session: x.session, LoopKind: k.name},
				InsertOpts: &river.InsertOpts{Queue: queue(k.name), MaxAttempts: k.f.cfg.maxAttempts,
					UniqueOpts: river.UniqueOpts{ByArgs: true}}})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(params) == 0 {
		return submitted, nil
	}
	jobs, err := k.f.river.InsertManyTx(ctx, tx, params)
	if err != nil {
		return nil, fmt.Errorf("fleet: submitting %d sessions: queueing their jobs: %w", len(params), err)
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.Job.ID
	}
	if _, err := tx.Exec(ctx, `UPDATE `+k.f.table("fleet_sessions")+` s SET job_id = u.id
		FROM unnest($1::text[], $2::bigint[]) AS u(n, id) WHERE s.session = u.n`, fresh, ids); err != nil {
		return nil, fmt.Errorf("fleet: submitting %d sessions: %w", len(params), err)
	}
	return submitted, nil
}

// jsonEqual reports whether two JSON texts are the same value, as
// PostgreSQL's jsonb compares them (objects by their keys, in any order).
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// Wait waits until the session stops for good (a stop at its budget that
// [Fleet.Extend] extended is not one), parks on an escalation, is
// cancelled or fails (a *[FailedError]), looking every [Poll] interval, and returns its result as
// [Kind.Result] does. It returns ctx's error if ctx ends first.
func (k *Kind[A, S]) Wait(ctx context.Context, session string) (*iterate.Result[S], error) {
	t := time.NewTicker(k.f.cfg.poll)
	defer t.Stop()
	for {
		s, err := k.f.Session(ctx, session)
		if err != nil {
			return nil, err
		}
		if s.Kind != k.name {
			return nil, &KindError{Session: session, Kind: s.Kind, Want: k.name}
		}
		if s.Status != Queued && (s.Status.Final() && !s.Extended || s.Status == iterate.Escalated && !s.Answered) {
			res, err := k.Result(ctx, session)
			if !errors.Is(err, errCancelling) {
				return res, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// Result returns the session's result as its latest checkpoint holds it,
// without running it: for a session that stopped for good, the final
// result (its Status [Cancelled] and an error matching [ErrCancelled] for a
// cancelled one); for an escalated one, the escalation and an
// *[iterate.EscalationError]; for one that failed (its job was given up
// after [MaxAttempts] failed runs) a nil result and a *[FailedError]. A session that has not stopped gives an
// error matching [ErrNotStopped]; one cancelled before it started, an
// error matching [ErrCancelled] and a nil result.
func (k *Kind[A, S]) Result(ctx context.Context, session string) (*iterate.Result[S], error) {
	row, err := k.f.sessionRow(ctx, session)
	if err != nil {
		return nil, err
	}
	if row.kind != k.name {
		return nil, &KindError{Session: session, Kind: row.kind, Want: k.name}
	}
	if !row.cancelled && row.jobID != nil {
		if err := k.f.failed(ctx, session, *row.jobID); err != nil {
			return nil, err
		}
	}
	c, err := k.f.store.Load(ctx, session)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound) && row.cancelled:
		return nil, errf(ErrCancelled, "session %q cancelled before it started", session)
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, errf(ErrNotStopped, "session %q not stopped: not started", session)
	case err != nil:
		return nil, err
	}
	st := iterate.Status(c.Status)
	if row.cancelled && !st.Final() {
		return nil, &sentinelError{msg: fmt.Sprintf("fleet: session %q cancelled at iteration %d: %v", session, c.Iteration, errCancelling), err: errors.Join(ErrCancelled, errCancelling)}
	}
	if !st.Final() && st != iterate.Escalated {
		return nil, errf(ErrNotStopped, "session %q not stopped: %s at iteration %d", session, st, c.Iteration)
	}
	var args A
	if err := json.Unmarshal(row.args, &args); err != nil {
		return nil, fmt.Errorf("fleet: session %q: decoding its arguments: %w", session, err)
	}
	loop, err := k.build(ctx, args)
	if err != nil {
		return nil, fmt.Errorf("fleet: session %q: building its loop: %w", session, err)
	}
	// Read only: a stopped session's Resume returns its saved result
	// without saving, and this store has no lock to take.
	eng := iterate.New(loop.Worker, append(append([]iterate.Option(nil), loop.Options...),
		iterate.WithCheckpointer(readOnly{k.f.store}), iterate.WithSession(session))...)
	res, err := eng.Resume(ctx, iterate.AllowSettingsChange())
	if err == nil && res != nil && res.Status == Cancelled {
		err = errf(ErrCancelled, "session %q %s", session, res.Reason)
	}
	return res, err
}

// run runs one delivery of a session's job: resumes the session, or starts
// it when it has no checkpoint.
func (k *Kind[A, S]) run(ctx context.Context, j *job) (stopped, error) {
	var args A
	if err := json.Unmarshal(j.row.args, &args); err != nil {
		return stopped{}, fmt.Errorf("decoding the arguments of session %q: %w", j.Session, err)
	}
	loop, err := k.build(ctx, args)
	if err != nil {
		return stopped{}, fmt.Errorf("building the loop of session %q: %w", j.Session, err)
	}
	newEngine := func(store iterate.Checkpointer) iterate.Engine[S] {
		return iterate.New(loop.Worker, append(append([]iterate.Option(nil), loop.Options...),
			iterate.WithCheckpointer(store, iterate.Strict|iterate.Journal), iterate.WithSession(j.Session))...)
	}
	var res *iterate.Result[S]
	switch {
	case j.latest == nil:
		// Run refuses, under the lease, a session that another delivery
		// started meanwhile: then it is resumed.
		res, err = newEngine(&jobStore{Store: k.f.store, lease: j.lease, held: j.held, fresh: true}).Run(ctx, loop.Initial)
		if errors.Is(err, errStarted) {
			res, err = newEngine(&jobStore{Store: k.f.store, lease: j.lease, held: j.held}).Resume(ctx, j.resumeOpts()...)
		}
	default:
		res, err = newEngine(&jobStore{Store: k.f.store, lease: j.lease, held: j.held}).Resume(ctx, j.resumeOpts()...)
	}
	var sc *iterate.SettingsChangedError
	if errors.As(err, &sc) && loop.allows(sc.Changes) {
		// Refused before anything ran or was saved: continue under this
		// loop's settings, as the kind allows.
		k.f.cfg.log.Info("fleet: continuing a session under changed settings", zap.String("session", j.Session),
			zap.Strings("changes", sc.Changes))
		res, err = newEngine(&jobStore{Store: k.f.store, lease: j.lease, held: j.held}).Resume(ctx,
			append(j.resumeOpts(), iterate.AllowSettingsChange())...)
	}
	if res == nil {
		return stopped{}, err
	}
	st := stopped{status: res.Status, iterations: res.Iterations, reason: res.Reason}
	var esc *iterate.EscalationError
	if errors.As(err, &esc) {
		st.questionDue = esc.Escalation.Due()
	}
	return st, err
}

// errCancelling is the error of a cancelled session not yet saved as
// cancelled (its lease is not free yet).
var errCancelling = errors.New("saved as cancelled once its lease is free")

// readOnly is a checkpointer that loads and never saves.
type readOnly struct{ store iterate.Checkpointer }

func (r readOnly) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	return r.store.Load(ctx, session)
}

func (readOnly) Save(context.Context, *checkpoint.Checkpoint) error {
	return errors.New("fleet: reading a result saves nothing")
}
