package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// jobKind is the River job kind of a session.
const jobKind = "refine_session"

// Kind is the job's kind, "refine_session".
func (spec) Kind() string { return jobKind }

// InsertOpts makes a session's job unique by session name (the only field
// tagged river:"unique"), in every state River keeps, completed included:
// submitting a session again is a no-op. Snoozes do not count as attempts;
// each rescue of a dead worker's job and each error does.
func (spec) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: maxAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// maxAttempts bounds the errors and rescues of one session's job.
const maxAttempts = 100

// settings are a worker's settings, all derived from the lease but the
// concurrency and the poll interval.
type settings struct {
	concurrency int
	lease       time.Duration // the store's lease
	poll        time.Duration // River's fetch poll interval
	keep        int           // generations kept per session
	holder      string
	ledger      bool
}

// jobTimeout is how long one job runs a session before River cancels its
// context: the loop stops at the next safe point, is saved as interrupted
// and the job snoozes to continue at once (on any worker). A session of any
// length so runs in slices of at most a lease.
func (s settings) jobTimeout() time.Duration { return s.lease }

// rescueAfter is River's RescueStuckJobsAfter: a job still running this long
// after it started is taken for the job of a dead worker and retried. It is
// above the job timeout plus the time a timed-out loop needs to reach a
// safe point and save; a slow but live runner's job rescued too early only
// snoozes, since the live lease refuses a second runner.
func (s settings) rescueAfter() time.Duration { return 2 * s.lease }

// lockedSnooze is how long a job waits when the session's lease is held
// by another runner (a live one, or a dead one whose lease has not run out).
func (s settings) lockedSnooze() time.Duration { return max(s.lease/4, 100*time.Millisecond) }

// retryDelay is the wait before a failed (or rescued) job runs again:
// fixed and short, since the lease, not the backoff, keeps runners apart.
func (s settings) retryDelay() time.Duration { return max(s.lease/10, 100*time.Millisecond) }

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c common
	c.register(fs)
	var s settings
	fs.IntVar(&s.concurrency, "concurrency", 4, "sessions run at once by this worker")
	fs.DurationVar(&s.lease, "lease", pgcheckpoint.DefaultLease, "the store's lease: bounds the pickup of a dead worker's sessions; River's job timeout and stuck-job rescue derive from it")
	fs.DurationVar(&s.poll, "poll", time.Second, "River's fetch poll interval")
	fs.IntVar(&s.keep, "keep", checkpoint.DefaultKeep, "checkpoint generations kept per session")
	fs.StringVar(&s.holder, "holder", "", `how this worker names itself in leases (default "<hostname> pid <pid>")`)
	fs.BoolVar(&s.ledger, "ledger", true, "record every task and iteration executed in fleet_task_runs and fleet_integrations")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if s.concurrency < 1 {
		return errors.New("--concurrency must be at least 1")
	}
	if s.holder == "" {
		host, _ := os.Hostname()
		s.holder = host + " pid " + strconv.Itoa(os.Getpid())
	}
	sigs, stopSigs := terminate()
	defer stopSigs()

	pool, store, err := c.open(ctx, 2*s.concurrency+10,
		pgcheckpoint.Lease(s.lease), pgcheckpoint.Keep(s.keep), pgcheckpoint.Holder(s.holder))
	if err != nil {
		return err
	}
	defer pool.Close()
	defer store.Close() // releases any lease still held

	// shutdown is cancelled on SIGTERM: every running loop stops at its
	// next safe point and is saved as interrupted.
	shutdown, stopLoops := context.WithCancelCause(context.Background())
	defer stopLoops(nil)
	w := &sessionWorker{settings: s, pool: pool, store: store, schema: c.schema, shutdown: shutdown, log: stderr}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return err
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:                   sanitizeID(store.HolderName()),
		Schema:               c.schema,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: s.concurrency}},
		Workers:              workers,
		JobTimeout:           s.jobTimeout(),
		RescueStuckJobsAfter: s.rescueAfter(),
		RetryPolicy:          fixedRetry(s.retryDelay()),
		MaxAttempts:          maxAttempts,
		FetchPollInterval:    s.poll,
		FetchCooldown:        min(s.poll/10, river.FetchCooldownDefault),
		Logger:               slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	if err := client.Start(context.Background()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fleet serve: worker %q ready (concurrency %d, lease %v, job timeout %v, rescue after %v)\n",
		store.HolderName(), s.concurrency, s.lease, s.jobTimeout(), s.rescueAfter())

	select {
	case sig := <-sigs:
		fmt.Fprintf(stdout, "fleet serve: %v: stopping loops at their next safe point\n", sig)
	case <-ctx.Done():
	}
	// First the loops: cancelled, they save as interrupted and their jobs
	// snooze, to be taken at once by other workers. Then River: no more
	// fetching, and the jobs' outcomes recorded. A second signal cuts the
	// wait short.
	stopLoops(errShutdown)
	stopCtx, cancel := context.WithTimeout(context.Background(), s.lease)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-stopCtx.Done():
		}
	}()
	if err := client.Stop(stopCtx); err != nil {
		hard, hardCancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer hardCancel()
		if err := client.StopAndCancel(hard); err != nil {
			return fmt.Errorf("stopping River: %w", err)
		}
	}
	fmt.Fprintln(stdout, "fleet serve: stopped")
	return nil
}

// errShutdown is the cause of the loops' cancellation on SIGTERM.
var errShutdown = errors.New("fleet: worker shutting down")

// sanitizeID makes a River client ID of a holder name.
func sanitizeID(holder string) string {
	b := []byte(holder)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// fixedRetry is a River retry policy with a fixed delay.
type fixedRetry time.Duration

func (d fixedRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(time.Duration(d)) }

// sessionWorker is River's worker of "refine_session" jobs.
type sessionWorker struct {
	river.WorkerDefaults[spec]
	settings
	pool     *pgxpool.Pool
	store    *pgcheckpoint.Store
	schema   string
	shutdown context.Context // cancelled on SIGTERM
	log      io.Writer
}

// Work runs the job's session to its end, resuming it if it has a
// checkpoint. What the job returns to River:
//
//   - nil when the session has ended for good (converged, or any final
//     status: retrying would return the same saved result);
//   - JobSnooze(0) when the loop was interrupted, by SIGTERM or by the job
//     timeout: it is saved, and any worker continues it at once;
//   - JobSnooze(lease/4) when another runner holds the session's lease
//     (River delivered the job twice, or a dead holder's lease has not run
//     out yet): not an attempt, it tries again later;
//   - an error when the lease was lost (fenced) or anything else failed,
//     so that River retries it.
func (w *sessionWorker) Work(ctx context.Context, job *river.Job[spec]) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(w.shutdown, func() { cancel(context.Cause(w.shutdown)) })()

	res, err := w.runSession(ctx, job.Args)
	switch {
	case errors.Is(err, checkpoint.ErrFenced):
		return fmt.Errorf("session %q: lease lost, to be retried: %w", job.Args.Session, err)
	case errors.Is(err, checkpoint.ErrLocked):
		return river.JobSnooze(w.lockedSnooze())
	case errors.Is(err, iterate.ErrInterrupted):
		return river.JobSnooze(0)
	case res != nil && res.Status.Final():
		if err != nil {
			fmt.Fprintf(w.log, "fleet: session %q ended %s: %v\n", job.Args.Session, res.Status, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("session %q: %w", job.Args.Session, err)
	}
	return fmt.Errorf("session %q: stopped %s without an error", job.Args.Session, res.Status)
}

// runSession resumes the session, or starts it if it has no checkpoint.
// Run is given a fresh store (see jobStore): if another runner started the
// session between the two, Run refuses and the session is resumed.
func (w *sessionWorker) runSession(ctx context.Context, sp spec) (*iterate.Result[state], error) {
	for range 3 {
		js := &jobStore{Store: w.store}
		res, err := newEngine(sp, js, w.recorder(js)).Resume(ctx)
		if !errors.Is(err, checkpoint.ErrNotFound) {
			return res, err
		}
		fresh := &jobStore{Store: w.store, fresh: true}
		res, err = newEngine(sp, fresh, w.recorder(fresh)).Run(ctx, initial(sp))
		if !errors.Is(err, errStarted) {
			return res, err
		}
	}
	return nil, fmt.Errorf("session %q: neither resumable nor startable", sp.Session)
}

func (w *sessionWorker) recorder(js *jobStore) recorder {
	if !w.ledger {
		return nil
	}
	return &ledger{pool: w.pool, q: pgx.Identifier{w.schema}.Sanitize(), holder: w.store.HolderName(), store: js}
}
