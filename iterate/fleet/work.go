package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// jobArgs are the arguments of a session's River job: the session, unique
// (one job per session, whatever its state), and its kind. The session's
// own arguments stay in the fleet's table.
type jobArgs struct {
	Session  string `json:"session" river:"unique"`
	LoopKind string `json:"kind"`
}

// Kind is River's kind of the job, "refine_session".
func (jobArgs) Kind() string { return jobKind }

// job is one delivery of a session's job, as a kind runs it.
type job struct {
	jobArgs
	row    sessionRow
	latest *head   // nil when the session has no checkpoint
	answer *string // the answer to resume an escalation with
	// extension is the accepted extension of a budget_exhausted stop to
	// resume with (extend.go), nil without one.
	extension *Extension
	lease     *leaseInfo
	held      *held // the delivery's lease, taken before the run
}

func (j *job) resumeOpts() []iterate.ResumeOption {
	var opts []iterate.ResumeOption
	if j.answer != nil {
		opts = append(opts, iterate.WithAnswer(*j.answer))
	}
	if j.extension != nil {
		opts = append(opts, iterate.ExtendBudget(j.extension.To, j.extension.By))
	}
	return opts
}

// stopped is how a run ended, as the worker checks it against the store.
type stopped struct {
	status     iterate.Status
	iterations int
	reason     string
	// questionDue is when an escalated run's question is next due (its
	// reminder or deadline; zero without a deadline).
	questionDue time.Time
}

// leaseInfo is the lease a run holds, as [Holding] reads it.
type leaseInfo struct {
	session string
	token   atomic.Uint64
}

type leaseKey struct{}

// Holding reports the session that the loop calling it runs under the
// fleet, and the fencing token of the lease its worker holds on it: a
// token that grows with every new holder, so that another system can
// refuse a write carrying a token older than the newest it has seen. ok is
// false outside a fleet's run (or before the lease is taken).
func Holding(ctx context.Context) (session string, token uint64, ok bool) {
	l, _ := ctx.Value(leaseKey{}).(*leaseInfo)
	if l == nil {
		return "", 0, false
	}
	t := l.token.Load()
	return l.session, t, t != 0
}

// errStarted is returned by a fresh store's Load: the session has a
// checkpoint, so it must be resumed, not started.
var errStarted = errors.New("fleet: session already started")

// held is the lease a delivery takes before its run, with the checkpoint
// it loaded under it and the session's row, in one round trip
// ([pgcheckpoint.Store.LockLoad]): the engine's Lock returns its token
// and its first Load that checkpoint, with no round trip of their own.
// The delivery gives it back once the run has returned (nothing to do
// when the run's last save gave it back).
type held struct {
	token  uint64
	loaded *checkpoint.Checkpoint // nil when the session had none
	used   bool                   // loaded was handed to an engine
}

// jobStore is the store as one run's engine sees it: it notes the token of
// the lease the engine runs under, and, when fresh, makes Run refuse a
// session that has a checkpoint (Run loads under the lease, so a delivery
// that found none never starts over a session another delivery started
// meanwhile). It embeds the store, so the engine still finds the rest.
type jobStore struct {
	*pgcheckpoint.Store
	lease *leaseInfo
	held  *held // the delivery's lease, nil to take one (Lock)
	fresh bool
}

var (
	_ iterate.Checkpointer = (*jobStore)(nil)
	_ iterate.Locker       = (*jobStore)(nil)
)

// noRelease is the release function of the delivery's lease as the engine
// sees it: the delivery gives it back.
func noRelease() error { return nil }

// Lock returns the delivery's lease, or takes the session's lease, noting
// its token.
func (s *jobStore) Lock(ctx context.Context, session string) (uint64, func() error, error) {
	if s.held != nil {
		s.lease.token.Store(s.held.token)
		return s.held.token, noRelease, nil
	}
	t, release, err := s.Store.Lock(ctx, session)
	if err == nil {
		s.lease.token.Store(t)
	}
	return t, release, err
}

// Load loads the session's newest checkpoint (the first time, the one the
// delivery loaded under its lease); on a fresh store, finding one is
// errStarted.
func (s *jobStore) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	var c *checkpoint.Checkpoint
	var err error
	if s.held != nil && !s.held.used {
		s.held.used = true
		c = s.held.loaded
		if c == nil {
			err = fmt.Errorf("%w: session %q", checkpoint.ErrNotFound, session)
		}
	} else {
		c, err = s.Store.Load(ctx, session)
	}
	if err == nil && s.fresh {
		return nil, errStarted
	}
	return c, err
}

// Save saves c. A save of any status but running is the run's last (the
// engine saves nothing after its stop, nor after an escalation's or an
// expiry's save): under the delivery's lease it gives the lease back in
// its transaction ([pgcheckpoint.Store.SaveRelease]), a round trip less.
func (s *jobStore) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if s.held != nil && c != nil && c.Token == s.held.token && iterate.Status(c.Status) != iterate.Running {
		return s.Store.SaveRelease(ctx, c)
	}
	return s.Store.Save(ctx, c)
}

// ErrShutdown is the cause of the end of the loops' contexts when the
// context given to [Fleet.Work] ends: they stop at their next safe point,
// saved as interrupted, and their jobs go back to the queue.
var ErrShutdown = errors.New("fleet: worker shutting down")

// Work runs sessions of the kinds registered with f, until ctx ends: a River
// client fetches their jobs (up to the [Concurrency] of each kind at once)
// and runs each session to its end, or to an escalation, a cancellation or
// the end of ctx. Meanwhile it hands back to the queue the jobs of sessions
// whose holder died (their lease expired), retries parked sessions that have
// been answered, and stops the sessions it runs that are cancelled.
//
// When ctx ends, every loop stops at its next safe point and is saved as
// interrupted, and its job goes back to the queue to be continued at once by
// any worker; Work waits for that (at most a lease, then abandons the
// loops), and returns nil. It returns an error only when it cannot start.
// A Fleet runs one Work at a time; kinds cannot be registered meanwhile.
func (f *Fleet) Work(ctx context.Context) error {
	f.mu.Lock()
	if f.working {
		f.mu.Unlock()
		return errors.New("fleet: Work is already running")
	}
	if len(f.kinds) == 0 {
		f.mu.Unlock()
		return errors.New("fleet: Work without any registered kind")
	}
	f.working = true
	kinds := make(map[string]runner, len(f.kinds))
	queues := make(map[string]river.QueueConfig, len(f.kinds))
	for name, k := range f.kinds {
		kinds[name] = k
		queues[queue(name)] = river.QueueConfig{MaxWorkers: f.cfg.concurrency}
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.working = false
		f.mu.Unlock()
	}()

	shutdown, stopLoops := context.WithCancelCause(context.Background())
	defer stopLoops(nil)
	w := &jobWorker{f: f, kinds: kinds, shutdown: shutdown, running: map[string]context.CancelCauseFunc{}}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	client, err := river.NewClient(riverpgxv5.New(f.pool), &river.Config{
		ID:      clientID(f.store.HolderName()),
		Schema:  f.cfg.schema,
		Queues:  queues,
		Workers: workers,
		// The lease, renewed in the background, bounds a session's run,
		// not a timeout: a task may run longer than the lease.
		JobTimeout: -1,
		// The fleet hands back a dead worker's jobs itself, by their
		// expired leases (rescue); River's rescuer is only a backstop.
		RescueStuckJobsAfter: riverRescueAfter,
		RetryPolicy:          retryPolicy{lease: f.cfg.lease},
		MaxAttempts:          f.cfg.maxAttempts,
		FetchPollInterval:    f.cfg.poll,
		FetchCooldown:        min(f.cfg.poll/10, river.FetchCooldownDefault),
		Logger:               riverLogger(f.cfg.log),
	})
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("fleet: starting River: %w", err)
	}
	f.cfg.log.Info("fleet worker started", zap.String("holder", f.store.HolderName()),
		zap.Int("concurrency", f.cfg.concurrency), zap.Duration("lease", f.cfg.lease))

	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		w.watch(watchCtx)
	}()

	<-ctx.Done()
	// The loops first: cancelled, they save as interrupted and their jobs
	// go back to the queue. Then River: no more fetching, and the jobs'
	// outcomes recorded.
	stopLoops(ErrShutdown)
	stopCtx, cancel := context.WithTimeout(context.Background(), f.cfg.lease)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		hard, hardCancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer hardCancel()
		if err := client.StopAndCancel(hard); err != nil {
			f.cfg.log.Warn("fleet: River did not stop", zap.Error(err))
		}
	}
	stopWatch()
	<-watched
	f.cfg.log.Info("fleet worker stopped", zap.String("holder", f.store.HolderName()))
	return nil
}

// riverRescueAfter is River's RescueStuckJobsAfter: the fleet rescues a dead
// worker's jobs by their leases long before.
const riverRescueAfter = 24 * time.Hour

// clientID makes a River client ID of a holder name.
func clientID(holder string) string {
	b := []byte(holder)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// retryPolicy retries a failed job after a tenth of the lease, doubling
// with each consecutive failure up to a lease: the lease, not a backoff,
// keeps runners apart, and a storage outage should not be hammered.
type retryPolicy struct{ lease time.Duration }

func (p retryPolicy) NextRetry(j *rivertype.JobRow) time.Time {
	d := max(p.lease/10, 100*time.Millisecond)
	for i := 1; i < j.Attempt && d < p.lease; i++ {
		d *= 2
	}
	return time.Now().Add(min(d, p.lease))
}

// jobWorker is River's worker of the fleet's jobs.
type jobWorker struct {
	river.WorkerDefaults[jobArgs]
	f        *Fleet
	kinds    map[string]runner
	shutdown context.Context // ends when Work's context does

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc // the sessions this worker runs
}

// Work runs one delivery of a session's job. What it returns to River:
//
//   - nil (completed) once the session has stopped for good or parked on an
//     escalation, and the store's newest checkpoint says so;
//   - JobSnooze(0) when the loop was interrupted (the worker is stopping):
//     any worker continues it at once;
//   - JobSnooze(lease/4) when another runner holds the session's lease;
//   - JobCancel when the session was cancelled, once that is saved;
//   - an error otherwise (a lost lease, a storage fault, settings that differ
//     from the session's), so that River retries it.
func (w *jobWorker) Work(ctx context.Context, rj *river.Job[jobArgs]) (err error) {
	session := rj.Args.Session
	defer func() {
		if p := recover(); p != nil {
			// A panic of the host's code out of the loop (a build
			// function): an error of this attempt, logged with its stack.
			err = fmt.Errorf("fleet: session %q: panic: %v", session, p)
			w.f.cfg.log.Error("fleet: panic running a session", zap.String("session", session),
				zap.Any("panic", p), zap.StackSkip("stack", 2))
		}
		var snooze *river.JobSnoozeError
		var cancelled *river.JobCancelError
		if err != nil && !errors.As(err, &snooze) && !errors.As(err, &cancelled) && rj.Attempt >= rj.MaxAttempts {
			w.f.cfg.log.Error("fleet: session failed: its job is given up; Fleet.Retry runs it again",
				zap.String("session", session), zap.Int("attempts", rj.Attempt), zap.Error(err))
		} else if err != nil && !errors.As(err, &snooze) && !errors.As(err, &cancelled) {
			w.f.cfg.log.Warn("fleet: session run failed; retried", zap.String("session", session),
				zap.Int("attempt", rj.Attempt), zap.Int("max_attempts", rj.MaxAttempts), zap.Error(err))
		}
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(w.shutdown, func() { cancel(context.Cause(w.shutdown)) })()
	w.mu.Lock()
	w.running[session] = cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.running, session)
		w.mu.Unlock()
	}()

	f := w.f
	// One round trip: the session's lease taken, its newest checkpoint
	// loaded under it, and its row and that checkpoint's head read.
	var h headResult
	token, release, loaded, err := f.store.LockLoad(ctx, session, f.sessionHead(session, &h))
	if errors.Is(err, checkpoint.ErrLocked) {
		return river.JobSnooze(max(f.cfg.lease/4, 100*time.Millisecond))
	}
	if err != nil {
		return err
	}
	giveBack := func() {
		if err := release(); err != nil {
			f.cfg.log.Warn("fleet: releasing the lease of a session failed", zap.String("session", session), zap.Error(err))
		}
	}
	defer giveBack() // at the latest; a second call does nothing
	if h.unknown {
		giveBack()
		return river.JobCancel(errf(ErrUnknownSession, "unknown session %q", session))
	}
	row, latest := h.row, h.latest
	if row.cancelled {
		giveBack()
		return w.cancelled(ctx, session)
	}
	k := w.kinds[row.kind]
	if k == nil {
		return fmt.Errorf("fleet: session %q is of kind %q, not registered by this worker", session, row.kind)
	}
	j := &job{jobArgs: rj.Args, row: row, latest: latest, lease: &leaseInfo{session: session},
		held: &held{token: token, loaded: loaded}}
	if latest != nil {
		if latest.status.Final() && (latest.status != iterate.BudgetExhausted || latest.extension == nil) {
			return nil // ended already, durably
		}
		j.extension = latest.extension // extend.go: a stop at the budget, or a park there, extended
		if latest.status == iterate.Escalated {
			if row.answerGeneration != latest.generation || row.answer == nil {
				// Parked until answered, or until its question is due
				// (deadline.go): then run without an answer.
				if due, perr := f.questionDueNow(ctx, session, loaded); !due {
					return perr
				}
			} else {
				j.answer = row.answer
			}
		}
	}
	st, err := k.run(context.WithValue(ctx, leaseKey{}, j.lease), j)
	giveBack() // before a cancellation is saved, under a lease of its own
	after, stop := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.lease)
	defer stop()
	if ctx.Err() != nil && !st.status.Final() && w.isCancelled(after, session) {
		// Stopped by Cancel, through this worker's watch or River's
		// cancellation of the job.
		return w.cancelled(after, session)
	}
	switch {
	case errors.Is(err, checkpoint.ErrLocked):
		return river.JobSnooze(max(f.cfg.lease/4, 100*time.Millisecond))
	case errors.Is(err, iterate.ErrInterrupted):
		return river.JobSnooze(0)
	case st.status.Final() || st.status == iterate.Escalated:
		// A run that ended without an error saved its stop (Strict: a
		// save that fails ends the run with an error), and the store
		// returned only once it was committed. Otherwise (an error
		// beside the stop, an escalation), the store's newest
		// checkpoint must say so before the job completes.
		if err == nil {
			return nil
		}
		if derr := f.durable(after, session, st); derr != nil {
			return fmt.Errorf("fleet: session %q stopped %s, but its checkpoint is not durable: %w (%v)", session, st.status, derr, err)
		}
		if err != nil && st.status != iterate.Escalated {
			f.cfg.log.Warn("fleet: session ended with an error", zap.String("session", session),
				zap.String("status", string(st.status)), zap.Error(err))
		}
		if st.status == iterate.Escalated {
			return parkEscalated(st.questionDue) // deadline.go
		}
		return nil
	case err != nil:
		var sc *iterate.SettingsChangedError
		if errors.As(err, &sc) {
			f.cfg.log.Error("fleet: this worker's settings differ from the session's; another worker may run it",
				zap.String("session", session), zap.Error(err))
		}
		return fmt.Errorf("fleet: session %q: %w", session, err)
	}
	return fmt.Errorf("fleet: session %q stopped %s without an error", session, st.status)
}

// isCancelled reports whether the session has been cancelled.
func (w *jobWorker) isCancelled(ctx context.Context, session string) bool {
	row, err := w.f.sessionRow(ctx, session)
	return err == nil && row.cancelled
}

// cancelled saves the session as cancelled and cancels its job.
func (w *jobWorker) cancelled(ctx context.Context, session string) error {
	if err := w.f.markCancelled(ctx, session); err != nil {
		return fmt.Errorf("fleet: saving session %q as cancelled: %w", session, err)
	}
	return river.JobCancel(errf(ErrCancelled, "session %q cancelled", session))
}

// durable checks that the store's newest checkpoint of session is the one
// of the stop st, from its head alone: the state is not read back (a large
// one would take a long time, under the completion's deadline).
func (f *Fleet) durable(ctx context.Context, session string, st stopped) error {
	var status string
	var iteration int64
	err := f.pool.QueryRow(ctx, `SELECT status, iteration FROM `+f.table("checkpoints")+`
		WHERE session = $1 ORDER BY generation DESC LIMIT 1`, session).Scan(&status, &iteration)
	if errors.Is(err, pgx.ErrNoRows) {
		return errors.New("it has no checkpoint")
	}
	if err != nil {
		return err
	}
	if status != string(st.status) || int(iteration) != st.iterations {
		return fmt.Errorf("the newest checkpoint is %s at iteration %d", status, iteration)
	}
	return nil
}

// watch runs every poll interval until ctx ends: it hands back the jobs of
// sessions whose holder died, makes due jobs available without waiting for
// River's leader, retries answered parked sessions, and stops the cancelled
// sessions this worker runs. Failures are logged and tried again.
func (w *jobWorker) watch(ctx context.Context) {
	var r reconciler
	reconcile := func(ctx context.Context) error { return r.reconcile(ctx, w.f) }
	t := time.NewTicker(w.f.cfg.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, step := range []struct {
			name string
			do   func(context.Context) error
		}{{"rescuing", w.f.rescue}, {"promoting", w.f.promote}, {"cancelling", w.stopCancelled}, {"reconciling", reconcile}} {
			sctx, cancel := context.WithTimeout(ctx, w.f.cfg.lease)
			if err := step.do(sctx); err != nil && ctx.Err() == nil {
				w.f.cfg.log.Warn("fleet: "+step.name, zap.Error(err))
			}
			cancel()
		}
	}
}

// stopCancelled ends the loops of the sessions this worker runs that have
// been cancelled.
func (w *jobWorker) stopCancelled(ctx context.Context) error {
	w.mu.Lock()
	names := make([]string, 0, len(w.running))
	for s := range w.running {
		names = append(names, s)
	}
	w.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	rows, err := w.f.pool.Query(ctx, `SELECT session FROM `+w.f.table("fleet_sessions")+`
		WHERE session = ANY($1) AND cancelled_at IS NOT NULL`, names)
	if err != nil {
		return err
	}
	cancelled, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range cancelled {
		if cancel := w.running[s]; cancel != nil {
			cancel(errf(ErrCancelled, "session %q cancelled", s))
		}
	}
	return nil
}

// rescue hands back to the queue the running jobs whose worker is dead, by
// the session's lease: it ran out without being released during the job's
// attempt; or the attempt has not taken it for two leases (a worker that
// died before taking it); or the attempt released it two leases ago and
// never completed (one that died right after). A live worker's job is never
// taken: its lease is renewed, and it completes its job moments after
// releasing the lease. It does at once, for the fleet's jobs, what River's
// rescuer does after RescueStuckJobsAfter, every 30 s, on the leader only.
func (f *Fleet) rescue(ctx context.Context) error {
	rows, err := f.pool.Query(ctx, `
		UPDATE `+f.table("river_job")+` j SET
			state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END::`+f.table("river_job_state")+`,
			finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
			-- first in line: a rescued session has waited already
			scheduled_at = least(j.created_at, now()),
			errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt,
				'error', 'fleet: the holder of the session died (its lease expired): rescued by ' || $2, 'trace', '')),
			metadata = j.metadata || jsonb_build_object('refine:rescued_by', $2::text)
		FROM (
			SELECT j2.id FROM `+f.table("river_job")+` j2
			LEFT JOIN `+f.table("leases")+` l ON l.session = j2.args->>'session'
			WHERE j2.state = 'running' AND j2.kind = '`+jobKind+`' AND (
				-- its holder's lease ran out, unreleased, during this attempt
				(l.holder <> '' AND l.expires_at <= clock_timestamp() AND j2.attempted_at < l.expires_at)
				-- this attempt never took the lease, two leases long
				OR (j2.attempted_at < clock_timestamp() - $1 * interval '2 microsecond'
					AND (l.session IS NULL OR (l.acquired_at < j2.attempted_at
						AND (l.holder = '' OR l.expires_at <= clock_timestamp()))))
				-- it released the lease two leases ago and never completed
				OR (l.holder = '' AND l.acquired_at >= j2.attempted_at
					AND l.expires_at < clock_timestamp() - $1 * interval '2 microsecond'))
			FOR UPDATE OF j2 SKIP LOCKED
		) r
		WHERE j.id = r.id
		RETURNING j.args->>'session'`, f.cfg.lease.Microseconds(), f.store.HolderName())
	if err != nil {
		return err
	}
	sessions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, s := range sessions {
		f.cfg.log.Info("fleet: rescued the session of a dead worker", zap.String("session", s))
	}
	return nil
}

// promote makes the fleet's scheduled and retryable jobs that are due
// available, as River's scheduler does on its leader only: a leader that
// died would otherwise hold them up until another is elected.
func (f *Fleet) promote(ctx context.Context) error {
	_, err := f.pool.Exec(ctx, `UPDATE `+f.table("river_job")+` SET state = 'available'
		WHERE kind = '`+jobKind+`' AND state IN ('scheduled', 'retryable') AND scheduled_at <= now()`)
	return err
}

// reconcileWindow is how far back, beyond the time since a worker's last
// reconciliation, a windowed one looks: a transaction whose timestamp
// (an answer's, a cancellation's, a job's end) is older than that when it
// commits is found by the next full one.
const reconcileWindow = time.Minute

// fullReconcileEvery is how often a worker reconciles every finished
// session rather than those that changed lately (in polls).
const fullReconcileEvery = 600

// reconciler remembers, for one worker, when it last reconciled (on its
// monotonic clock) and how many windowed reconciliations it has made
// since its last full one.
type reconciler struct {
	last     time.Time
	windowed int
}

// window returns the window of a reconciliation at now: 0 (every finished
// session) on a worker's first and every fullReconcileEvery-th, else the
// time since the last and reconcileWindow more.
func (r *reconciler) window(now time.Time) time.Duration {
	if r.last.IsZero() || r.windowed >= fullReconcileEvery {
		return 0
	}
	return now.Sub(r.last) + reconcileWindow
}

// done records a reconciliation of window made at now.
func (r *reconciler) done(now time.Time, window time.Duration) {
	r.last = now
	if window == 0 {
		r.windowed = 0
	} else {
		r.windowed++
	}
}

// reconcile reconciles as Fleet.reconcile does, in r's window: its cost
// does not grow with the sessions finished (issue 30), but for a full
// reconciliation every fullReconcileEvery polls.
func (r *reconciler) reconcile(ctx context.Context, f *Fleet) error {
	now := time.Now()
	window := r.window(now)
	if err := f.reconcile(ctx, window); err != nil {
		return err
	}
	r.done(now, window)
	return nil
}

// reconcile retries the jobs of parked sessions that have been answered
// (the answer came as the job was completing), and saves as cancelled the
// cancelled sessions that no job runs: of those whose job ended, or that
// were answered, extended or cancelled within window of the server's
// clock, or all when window is 0.
func (f *Fleet) reconcile(ctx context.Context, window time.Duration) error {
	sql, args := f.reconcileQuery(window)
	rows, err := f.pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	type todo struct {
		session   string
		job       int64
		cancelled bool
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (todo, error) {
		var t todo
		return t, r.Scan(&t.session, &t.job, &t.cancelled)
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range list {
		if t.cancelled {
			if err := f.markCancelled(ctx, t.session); err != nil && !errors.Is(err, checkpoint.ErrLocked) {
				errs = append(errs, err)
			}
			continue
		}
		if _, err := f.river.JobRetry(ctx, t.job); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reconcileQuery returns reconcile's statement and its arguments, for
// window (0: every finished session).
func (f *Fleet) reconcileQuery(window time.Duration) (string, []any) {
	// Recent: the sessions something happened to within the window, each
	// found by an index (River's on the job's state and end, the fleet's
	// on the times of a cancellation, an answer, an extension), and those
	// whose job is snoozed (parked sessions, live state).
	recent := `TRUE`
	args := []any{}
	if window > 0 {
		since := `now() - $1::bigint * interval '1 microsecond'`
		recent = `s.session IN (
			SELECT args->>'session' FROM ` + f.table("river_job") + ` WHERE state IN ('completed', 'cancelled', 'discarded')
				AND finalized_at IS NOT NULL AND finalized_at >= ` + since + ` AND kind = '` + jobKind + `'
			UNION ALL SELECT args->>'session' FROM ` + f.table("river_job") + ` WHERE state = 'scheduled' AND kind = '` + jobKind + `'
			UNION ALL SELECT session FROM ` + f.table("fleet_sessions") + ` WHERE cancelled_at >= ` + since + `
			UNION ALL SELECT session FROM ` + f.table("fleet_answers") + ` WHERE answered_at >= ` + since + `
			UNION ALL SELECT session FROM ` + f.table("fleet_extensions") + ` WHERE extended_at >= ` + since + `)`
		args = append(args, window.Microseconds())
	}
	return `
		SELECT s.session, s.job_id, s.cancelled_at IS NOT NULL
		FROM ` + f.table("fleet_sessions") + ` s
		JOIN ` + f.table("river_job") + ` j ON j.id = s.job_id
		JOIN LATERAL (SELECT generation, status FROM ` + f.table("checkpoints") + ` c
			WHERE c.session = s.session
				-- what every case below needs, from the session's
				-- row: a session never answered, extended or
				-- cancelled (most of those whose jobs end) is passed
				-- over without a look at its checkpoints. Here, not
				-- in the WHERE, so that the planner tests it on each
				-- session the window found (a one-time filter of the
				-- lateral) and does not scan every session for it.
				AND (s.cancelled_at IS NOT NULL OR s.answer_generation IS NOT NULL OR EXISTS (
					SELECT 1 FROM ` + f.table("fleet_extensions") + ` e0 WHERE e0.session = s.session))
			ORDER BY generation DESC LIMIT 1) c ON true
		WHERE j.state IN ('completed', 'cancelled', 'discarded', 'scheduled') AND (
			-- a job given up (discarded) stays failed until Fleet.Retry;
			-- one snoozed until its question is due (deadline.go) is
			-- retried once answered
			(s.cancelled_at IS NULL AND j.state IN ('completed', 'scheduled') AND s.answer_generation = c.generation AND c.status = 'escalated')
			-- a stop at the budget extended as its job was completing
			-- (extend.go)
			OR (s.cancelled_at IS NULL AND j.state = 'completed' AND c.status = 'budget_exhausted' AND EXISTS (
				SELECT 1 FROM ` + f.table("fleet_extensions") + ` e WHERE e.session = s.session AND e.generation = c.generation))
			OR (s.cancelled_at IS NOT NULL AND j.state <> 'scheduled' AND c.status IN ('', 'running', 'interrupted', 'escalated')))
			AND ` + recent + `
		LIMIT 100`, args
}
