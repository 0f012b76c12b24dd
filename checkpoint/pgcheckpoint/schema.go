package pgcheckpoint

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrations are the steps of the schema, in order: migrations[i] takes the
// schema from version i to version i+1. A step is only ever appended, never
// changed, once released. Each statement is a format string whose verbs are
// all the quoted schema name, and must be idempotent (IF NOT EXISTS...):
// the script of SchemaSQL (schema.sql) runs them all, whatever the version
// of the schema it runs on.
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
	// Version 2: the generation holding the best state (keep-best), and
	// where a forked session came from.
	{`ALTER TABLE %[1]s.checkpoints
		ADD COLUMN IF NOT EXISTS best_generation   bigint NOT NULL DEFAULT 0,
		ADD COLUMN IF NOT EXISTS origin_session    text   NOT NULL DEFAULT '',
		ADD COLUMN IF NOT EXISTS origin_generation bigint NOT NULL DEFAULT 0`},
}

// SchemaVersion is the version of the schema this package creates and
// uses. [New] migrates an older schema up to it and refuses a newer one.
const SchemaVersion = 2

// schemaVersionTable is the statement creating the table of versions.
const schemaVersionTable = `CREATE TABLE IF NOT EXISTS %[1]s.schema_version (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
	)`

// DefaultMigrationTimeout is how long [New] waits, by default, for the
// locks of creating or migrating the schema.
const DefaultMigrationTimeout = 30 * time.Second

// ErrSchemaLocked is matched by the error of [New] when it gave up waiting
// for a lock to create or migrate the schema (see [MigrationTimeout]): the
// message names the lock, and the database sessions holding it when known.
var ErrSchemaLocked = errors.New("pgcheckpoint: a lock needed to set up the schema was not granted in time")

// Migrate sets whether [New] may create or migrate the schema (default
// true). With false, New only reads the schema's version, and fails unless
// it is [SchemaVersion]: it never takes a lock nor changes anything, so
// that a role with no right but USAGE on the schema and SELECT, INSERT,
// UPDATE and DELETE on its tables can use the store, the schema being
// created by an operator (with the file schema.sql of this package, or by
// a New with more rights). A New allowed to migrate also changes nothing,
// and takes no lock, when the schema is current.
func Migrate(allowed bool) Option {
	return optionFunc(func(s *Store) error {
		s.noMigrate = !allowed
		return nil
	})
}

// MigrationTimeout sets how long [New] waits for each lock it needs to
// create or migrate the schema (default [DefaultMigrationTimeout]): the
// set-up lock other hosts starting at once hold, and the locks of the
// tables it alters. A lock not granted in time makes New fail with an
// error matching [ErrSchemaLocked], naming the lock. New takes no lock
// when the schema is current.
func MigrationTimeout(d time.Duration) Option {
	return optionFunc(func(s *Store) error {
		if d <= 0 {
			return fmt.Errorf("pgcheckpoint: migration timeout %v is not positive", d)
		}
		s.migrationTimeout = d
		return nil
	})
}

// schemaVersion reads the version of the schema, 0 when it or its table of
// versions does not exist.
func schemaVersion(ctx context.Context, q pgx.Tx, table string) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+table).Scan(&v)
	return v, err
}

// missing reports whether err says that a schema or table does not exist.
func missing(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") // undefined_table, invalid_schema_name
}

// prepare makes sure the schema is at SchemaVersion: it reads the version
// first, without a lock, and creates or migrates the schema only when it
// is older (unless Migrate(false)).
func (s *Store) prepare(ctx context.Context) error {
	// One simple query, one implicit transaction, so that lock_timeout
	// bounds the wait for the table of versions too (a migration in
	// progress may lock it): a prepared statement would be described
	// first, which takes the lock too, before any setting applies.
	v, err := s.readVersion(ctx)
	switch {
	case missing(err):
		v = 0
	case lockTimeout(err):
		return fmt.Errorf("waited %v for a lock to read the version of schema %s: %w (%w)", s.migrationTimeout, s.q, ErrSchemaLocked, err)
	case err != nil:
		return err
	}
	switch {
	case v == SchemaVersion:
		return nil
	case v > SchemaVersion:
		return fmt.Errorf("schema %s is at version %d, newer than this package's %d: upgrade pgcheckpoint", s.q, v, SchemaVersion)
	case s.noMigrate && v == 0:
		return fmt.Errorf("schema %s has no tables, and Migrate(false) forbids creating them: create them first (the file schema.sql of package pgcheckpoint, or a New allowed to migrate)", s.q)
	case s.noMigrate:
		return fmt.Errorf("schema %s is at version %d, older than this package's %d, and Migrate(false) forbids migrating it: migrate it first (the file schema.sql of package pgcheckpoint, or a New allowed to migrate)", s.q, v, SchemaVersion)
	}
	return s.migrate(ctx)
}

// readVersion reads the schema's version, 0 without rows, waiting for a
// lock no longer than the migration timeout.
func (s *Store) readVersion(ctx context.Context) (int, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	// The setting is a number: the text is safe to send as it is.
	res, err := conn.Conn().PgConn().Exec(ctx, `SET LOCAL lock_timeout = `+s.lockTimeoutSetting()+`;
		SELECT coalesce(max(version), 0) FROM `+s.table("schema_version")).ReadAll()
	if err != nil {
		return 0, err
	}
	if len(res) != 2 || len(res[1].Rows) != 1 || len(res[1].Rows[0]) != 1 {
		return 0, errors.New("reading the schema's version: unexpected result")
	}
	return strconv.Atoi(string(res[1].Rows[0][0]))
}

// migrate creates the schema or brings it up to SchemaVersion, in one
// transaction under a transaction-scoped advisory lock keyed on the schema
// name, so that stores starting at once on several hosts take turns: the
// first migrates, the others find the work done. No lock is waited for
// longer than the migration timeout (lock_timeout).
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, s.lockTimeoutSetting()); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('refine-go/pgcheckpoint'), hashtext($1))`, s.schema); err != nil {
		if lockTimeout(err) {
			return fmt.Errorf("waited %v for the set-up lock of schema %s (pg_advisory_xact_lock(hashtext('refine-go/pgcheckpoint'), hashtext('%s'))%s): %w (%w)",
				s.migrationTimeout, s.q, strings.ReplaceAll(s.schema, "'", "''"), s.setupLockHolders(ctx), ErrSchemaLocked, err)
		}
		return err
	}
	step := func(what, stmt string, args ...any) error {
		if _, err := tx.Exec(ctx, stmt, args...); err != nil {
			if lockTimeout(err) {
				return fmt.Errorf("waited %v for a lock to %s: %w (%w)", s.migrationTimeout, what, ErrSchemaLocked, err)
			}
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	if err := step("create schema "+s.q, `CREATE SCHEMA IF NOT EXISTS `+s.q); err != nil {
		return err
	}
	if err := step("create table "+s.table("schema_version"), fmt.Sprintf(schemaVersionTable, s.q)); err != nil {
		return err
	}
	current, err := schemaVersion(ctx, tx, s.table("schema_version"))
	if err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("schema %s is at version %d, newer than this package's %d: upgrade pgcheckpoint", s.q, current, SchemaVersion)
	}
	for v := current; v < len(migrations); v++ {
		for _, stmt := range migrations[v] {
			if err := step(fmt.Sprintf("migrate schema %s to version %d", s.q, v+1), fmt.Sprintf(stmt, s.q)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.table("schema_version")+` (version) VALUES ($1)`, v+1); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// lockTimeoutSetting returns the migration timeout as a value of
// lock_timeout.
func (s *Store) lockTimeoutSetting() string {
	return strconv.FormatInt(max(s.migrationTimeout.Milliseconds(), 1), 10)
}

// lockTimeout reports whether err is PostgreSQL's lock_not_available, what
// lock_timeout raises.
func lockTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// setupLockHolders returns ", held by PIDs ..." naming the server
// processes holding the set-up lock of s's schema, "" if none can be read.
func (s *Store) setupLockHolders(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = hashtext('refine-go/pgcheckpoint')::oid AND objid = hashtext($1)::oid AND objsubid = 2
		ORDER BY pid`, s.schema)
	if err != nil {
		return ""
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(pids) == 0 {
		return ""
	}
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(int(p))
	}
	return ", held by the server process(es) with PID " + strings.Join(list, ", ")
}

// SchemaSQL returns the SQL script that creates the store's schema, named
// schema, at [SchemaVersion], as [New] would: for an operator to run before
// stores with Migrate(false) use it. The file schema.sql of this package
// is SchemaSQL("refine").
func SchemaSQL(schema string) string {
	q := pgx.Identifier{schema}.Sanitize()
	var b strings.Builder
	fmt.Fprintf(&b, `-- The tables of github.com/refine-go/refine/checkpoint/pgcheckpoint, schema
-- version %d, in the schema %s: what pgcheckpoint.New creates when it may.
-- Written by pgcheckpoint.SchemaSQL(%q) (the package's tests check that this
-- file is its output and creates what New creates).
--
-- For a role with no right to create anything: run this as a role that may
-- (psql -v ON_ERROR_STOP=1 -f schema.sql), grant the application's role
--
--   GRANT USAGE ON SCHEMA %s TO app;
--   GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %s TO app;
--
-- and open the store with pgcheckpoint.Migrate(false), which only checks
-- the version. Running it again changes nothing.
BEGIN;
SET LOCAL lock_timeout = '30s';
SELECT pg_advisory_xact_lock(hashtext('refine-go/pgcheckpoint'), hashtext(%s));
CREATE SCHEMA IF NOT EXISTS %s;
`, SchemaVersion, q, schema, q, q, quoteLiteral(schema), q)
	fmt.Fprintf(&b, schemaVersionTable+";\n", q)
	for v, stmts := range migrations {
		fmt.Fprintf(&b, "-- Version %d.\n", v+1)
		for _, stmt := range stmts {
			fmt.Fprintf(&b, stmt+";\n", q)
		}
		fmt.Fprintf(&b, "INSERT INTO %s.schema_version (version) VALUES (%d) ON CONFLICT DO NOTHING;\n", q, v+1)
	}
	b.WriteString("COMMIT;\n")
	return b.String()
}

// quoteLiteral returns s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
