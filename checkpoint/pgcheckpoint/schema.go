package pgcheckpoint

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations are the steps of the schema, in order: migrations[i] takes the
// schema from version i to version i+1. A step is only ever appended, never
// changed, once released. Each statement is a format string whose verbs are
// all the quoted schema name.
var migrations = [][]string{
	// Version 1: checkpoints, leases.
	{`CREATE TABLE IF NOT EXISTS %[1]s.checkpoints (
		session     text        NOT NULL,
		generation  bigint      NOT NULL CHECK (generation > 0),
		token       bigint      NOT NULL DEFAULT 0,
		status      text        NOT NULL DEFAULT '',
		reason      text        NOT NULL DEFAULT '',
		iteration   bigint      NOT NULL DEFAULT 0,
		time        timestamptz NOT NULL,
		time_ns     integer     NOT NULL DEFAULT 0,
		question    text        NOT NULL DEFAULT '',
		fingerprint text        NOT NULL DEFAULT '',
		engine      bytea,
		state       bytea,
		stored_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
		PRIMARY KEY (session, generation)
	)`, `CREATE TABLE IF NOT EXISTS %[1]s.leases (
		session     text        PRIMARY KEY,
		holder      text        NOT NULL DEFAULT '',
		token       bigint      NOT NULL CHECK (token > 0),
		expires_at  timestamptz NOT NULL,
		acquired_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		renewed_at  timestamptz NOT NULL DEFAULT clock_timestamp()
	)`},
}

// SchemaVersion is the version of the schema this package creates and
// uses. [New] migrates an older schema up to it and refuses a newer one.
const SchemaVersion = 1

// migrate creates the schema or brings it up to SchemaVersion, in one
// transaction under a transaction-scoped advisory lock keyed on the schema
// name, so that stores starting at once on several hosts take turns: the
// first migrates, the others find the work done.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('refine-go/pgcheckpoint'), hashtext($1))`, s.schema); err != nil {
		return err
	}
	q := pgx.Identifier{s.schema}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+q); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+q+`.schema_version (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
	)`); err != nil {
		return err
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+q+`.schema_version`).Scan(&current); err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("schema %s is at version %d, newer than this package's %d: upgrade pgcheckpoint", q, current, SchemaVersion)
	}
	for v := current; v < len(migrations); v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.Exec(ctx, fmt.Sprintf(stmt, q)); err != nil {
				return fmt.Errorf("migrating schema %s to version %d: %w", q, v+1, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+q+`.schema_version (version) VALUES ($1)`, v+1); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}
