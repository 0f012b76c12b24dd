package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/iterate/fleet"
)

// The example's own tables, beside the fleet's in its schema: a ledger of
// what the synthetic worker executed, one row per task run to its end and
// per iteration integrated, with the fencing token of the lease it ran
// under (fleet.Holding). The end-to-end test reads them; an operator may
// too.
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

// ledger records executions in the example's tables (see ledgerDDL). It
// never fails the loop: a write that fails is reported on stderr, and the
// end-to-end test, which counts the rows, notices.
type ledger struct {
	pool   *pgxpool.Pool
	q      string // the quoted schema
	holder string // the worker's name in leases
}

// newLedger creates the ledger's tables in schema (after fleet.New, which
// creates the schema) and returns the ledger of the worker holder.
func newLedger(ctx context.Context, pool *pgxpool.Pool, schema, holder string) (*ledger, error) {
	q := pgx.Identifier{schema}.Sanitize()
	// Under a lock: two CREATE TABLE IF NOT EXISTS at once can both
	// find the table missing, and one fails on the catalog's unique key.
	// Nothing is taken nor created when the tables exist.
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL`,
			q+".fleet_task_runs", q+".fleet_integrations").Scan(&exists); err != nil || exists {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('refine-go/examples/fleet'), hashtext($1))`, schema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(ledgerDDL, q))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger tables: %w", err)
	}
	return &ledger{pool: pool, q: q, holder: holder}, nil
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

func (l *ledger) task(ctx context.Context, it, idx int) {
	session, token, _ := fleet.Holding(ctx)
	l.exec(ctx, `INSERT INTO `+l.q+`.fleet_task_runs (session, iteration, task, token, holder) VALUES ($1, $2, $3, $4, $5)`,
		session, it, idx, int64(token), l.holder)
}

func (l *ledger) integrated(ctx context.Context, it int) {
	session, token, _ := fleet.Holding(ctx)
	l.exec(ctx, `INSERT INTO `+l.q+`.fleet_integrations (session, iteration, token, holder) VALUES ($1, $2, $3, $4)`,
		session, it, int64(token), l.holder)
}
