package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// The fleet's own tables, beside River's and the store's in one schema:
// a ledger of what the synthetic worker executed, one row per task run to
// its end and per iteration integrated, with the fencing token of the
// lease it ran under. The end-to-end test reads them; an operator may too.
const ledgerDDL = `
CREATE TABLE IF NOT EXISTS %[1]s.fleet_task_runs (
	session   text        NOT NULL,
	iteration integer     NOT NULL,
	task      integer     NOT NULL,
	token     bigint      NOT NULL,
	holder    text        NOT NULL,
	at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS %[1]s.fleet_integrations (
	session   text        NOT NULL,
	iteration integer     NOT NULL,
	token     bigint      NOT NULL,
	holder    text        NOT NULL,
	at        timestamptz NOT NULL DEFAULT clock_timestamp()
);`

// connect opens a pool on url and checks the server answers.
func connect(ctx context.Context, url string, maxConns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = int32(maxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	return pool, nil
}

// migrate creates the schema and brings River's tables (rivermigrate) and
// the ledger up to date, under a session-level advisory lock on the
// schema's name, so that workers starting at once take turns and the later
// ones find the work done. (River's migrations cannot all run in one
// transaction: one adds an enum value that a later one uses.) The store's
// tables are migrated by pgcheckpoint.New, under its own lock.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{
		Schema: schema,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('refine-go/fleet'), hashtext($1))`, schema); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('refine-go/fleet'), hashtext($1))`, schema)
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+q); err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(ledgerDDL, q)); err != nil {
		return fmt.Errorf("fleet tables: %w", err)
	}
	return nil
}

// errStarted is returned by a fresh store's Load: the session has a
// checkpoint, so it must be resumed, not started.
var errStarted = errors.New("fleet: session already started")

// jobStore is the store as one job's engine sees it: it notes the fencing
// token of the lease the engine takes (for the ledger), and, when fresh,
// makes the engine's Run refuse a session that already has a checkpoint.
// Run loads the session's latest checkpoint under its lease, so a job that
// found no checkpoint and calls Run can never start over a session another
// job started meanwhile (River delivers at least once); it resumes instead.
//
// It embeds the store, so the engine still finds Lock, Save and Remove.
type jobStore struct {
	*pgcheckpoint.Store
	fresh bool
	token atomic.Uint64
}

var (
	_ iterate.Checkpointer = (*jobStore)(nil)
	_ iterate.Locker       = (*jobStore)(nil)
)

// Lock takes the session's lease, noting its token.
func (s *jobStore) Lock(ctx context.Context, session string) (uint64, func() error, error) {
	t, release, err := s.Store.Lock(ctx, session)
	if err == nil {
		s.token.Store(t)
	}
	return t, release, err
}

// Load loads the session's latest checkpoint; on a fresh store, finding one
// is errStarted.
func (s *jobStore) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	c, err := s.Store.Load(ctx, session)
	if err == nil && s.fresh {
		return nil, errStarted
	}
	return c, err
}

// ledger records executions in the fleet's tables (see ledgerDDL). It
// never fails the loop: a write that fails is reported on stderr, and the
// end-to-end test, which counts the rows, notices.
type ledger struct {
	pool   *pgxpool.Pool
	q      string // the quoted schema
	holder string
	store  *jobStore // for the token of the lease held
}

func (l *ledger) exec(ctx context.Context, sql string, args ...any) {
	// A row is written also when the loop is being cancelled: the work
	// was done.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := l.pool.Exec(ctx, sql, args...); err != nil {
		fmt.Fprintf(os.Stderr, "fleet: ledger: %v\n", err)
	}
}

func (l *ledger) task(ctx context.Context, session string, it, idx int) {
	l.exec(ctx, `INSERT INTO `+l.q+`.fleet_task_runs (session, iteration, task, token, holder) VALUES ($1, $2, $3, $4, $5)`,
		session, it, idx, int64(l.store.token.Load()), l.holder)
}

func (l *ledger) integrated(ctx context.Context, session string, it int) {
	l.exec(ctx, `INSERT INTO `+l.q+`.fleet_integrations (session, iteration, token, holder) VALUES ($1, $2, $3, $4)`,
		session, it, int64(l.store.token.Load()), l.holder)
}
