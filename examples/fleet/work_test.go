package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// TestWorkOutcomes checks what a job returns to River in each case, in
// this process, against the real server.
func TestWorkOutcomes(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	ctx := context.Background()
	if err := migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	store, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema), pgcheckpoint.Lease(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	shutdown, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	w := &sessionWorker{settings: settings{lease: time.Second, ledger: true}, pool: pool, store: store, schema: schema, shutdown: shutdown}
	job := func(name string) *river.Job[spec] {
		return &river.Job[spec]{JobRow: &rivertype.JobRow{}, Args: spec{Session: name, Iterations: 3, TaskMillis: 1}}
	}
	snooze := func(err error) (time.Duration, bool) {
		var se *rivertype.JobSnoozeError
		if errors.As(err, &se) {
			return se.Duration, true
		}
		return 0, false
	}

	t.Run("runs a new session to its end, then returns its saved result", func(t *testing.T) {
		if err := w.Work(ctx, job("new")); err != nil {
			t.Fatal(err)
		}
		if err := w.Work(ctx, job("new")); err != nil {
			t.Fatalf("again: %v", err)
		}
		var n int
		pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.fleet_integrations WHERE session = 'new'`).Scan(&n)
		if n != 3 {
			t.Errorf("%d iterations integrated, want 3", n)
		}
	})

	t.Run("a session held elsewhere snoozes", func(t *testing.T) {
		other, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema), pgcheckpoint.Lease(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, release, err := other.Lock(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if d, ok := snooze(w.Work(ctx, job("held"))); !ok || d != w.lockedSnooze() {
			t.Errorf("Work on a held session: snooze %v %t, want %v", d, ok, w.lockedSnooze())
		}
	})

	t.Run("Run never starts over a session that has a checkpoint", func(t *testing.T) {
		sp := job("new").Args
		fresh := &jobStore{Store: store, fresh: true}
		if _, err := newEngine(sp, fresh, nil).Run(ctx, initial(sp)); !errors.Is(err, errStarted) {
			t.Errorf("Run on a fresh store of a started session: %v, want errStarted", err)
		}
		res, err := w.runSession(ctx, sp)
		if err != nil || res.Status != iterate.Converged || res.Iterations != 3 {
			t.Errorf("runSession of a finished session: %v, %v", res, err)
		}
	})

	t.Run("a runner whose lease was taken over returns an error, to be retried", func(t *testing.T) {
		slow := job("fenced")
		slow.Args.Iterations, slow.Args.TaskMillis = 50, 20
		other, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema), pgcheckpoint.Lease(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		done := make(chan error, 1)
		go func() { done <- w.Work(ctx, slow) }()
		// Once it runs, its lease runs out (as if it had been paused) and
		// another store takes the session.
		eventually(t, 10*time.Second, "the session never saved", func() bool {
			_, err := store.Load(ctx, "fenced")
			return err == nil
		})
		if _, err := pool.Exec(ctx, `UPDATE `+schema+`.leases SET expires_at = clock_timestamp() WHERE session = 'fenced'`); err != nil {
			t.Fatal(err)
		}
		if _, _, err := other.Lock(ctx, "fenced"); err != nil {
			t.Fatal(err)
		}
		err = <-done
		if _, ok := snooze(err); ok || !errors.Is(err, checkpoint.ErrFenced) {
			t.Errorf("Work after losing its lease: %v, want an error matching ErrFenced", err)
		}
	})

	t.Run("a shutdown interrupts and snoozes at once", func(t *testing.T) {
		slow := job("slow")
		slow.Args.Iterations, slow.Args.TaskMillis = 50, 20
		time.AfterFunc(200*time.Millisecond, func() { stop(errShutdown) })
		if d, ok := snooze(w.Work(ctx, slow)); !ok || d != 0 {
			t.Fatalf("Work at shutdown: snooze %v %t, want 0", d, ok)
		}
		c, err := store.Load(ctx, "slow")
		if err != nil || c.Status != string(iterate.Interrupted) || c.Iteration == 0 || c.Iteration >= 50 {
			t.Errorf("after the shutdown: %+v, %v; want interrupted mid-run", c, err)
		}
	})
}
