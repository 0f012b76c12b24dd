package pgcheckpoint_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

var update = flag.Bool("update", false, "rewrite schema.sql from pgcheckpoint.SchemaSQL")

// runSQL runs a script of several statements (simple protocol).
func runSQL(t testing.TB, pool *pgxpool.Pool, script string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Conn().PgConn().Exec(ctx, script).ReadAll(); err != nil {
		t.Fatalf("running the script: %v", err)
	}
}

// schemaFile returns schema.sql with its schema, "refine", renamed.
func schemaFile(t testing.TB, schema string) string {
	t.Helper()
	b, err := os.ReadFile("schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(`"refine"`, pgx.Identifier{schema}.Sanitize(), `'refine'`, "'"+schema+"'").Replace(string(b))
}

// catalog describes the tables of schema: columns, constraints, indexes
// and versions, with the schema's name left out.
func catalog(t testing.TB, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT format('column %s.%s #%s %s default %s nullable %s', table_name, column_name, ordinal_position,
			data_type, coalesce(column_default, '-'), is_nullable)
		FROM information_schema.columns WHERE table_schema = $1
		UNION ALL
		SELECT format('constraint %s.%s %s', c.relname, k.conname, pg_get_constraintdef(k.oid))
		FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1
		UNION ALL
		SELECT format('index %s', replace(indexdef, quote_ident($1) || '.', ''))
		FROM pg_indexes WHERE schemaname = $1
		ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	rows, err = pool.Query(context.Background(), `SELECT version FROM `+pgx.Identifier{schema, "schema_version"}.Sanitize()+` ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	if versions, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
		t.Fatal(err)
	}
	return append(list, fmt.Sprint("versions ", versions))
}

// TestSchemaFile: schema.sql is SchemaSQL("refine") (go test -run
// TestSchemaFile -update rewrites it), and it creates what New creates;
// run again, or followed by New, it changes nothing.
func TestSchemaFile(t *testing.T) {
	want := pgcheckpoint.SchemaSQL(pgcheckpoint.DefaultSchema)
	if *update {
		if err := os.WriteFile("schema.sql", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Fatalf("schema.sql is not SchemaSQL(%q) (-want +got); rewrite it with go test -run TestSchemaFile -update:\n%s", pgcheckpoint.DefaultSchema, diff)
	}

	pool := newPool(t)
	byNew, byFile := newSchema(t, pool), newSchema(t, pool)
	openStore(t, pool, byNew)
	runSQL(t, pool, schemaFile(t, byFile))
	wantCat := catalog(t, pool, byNew)
	if diff := cmp.Diff(wantCat, catalog(t, pool, byFile)); diff != "" {
		t.Errorf("the tables schema.sql creates (+) differ from New's (-):\n%s", diff)
	}
	runSQL(t, pool, schemaFile(t, byFile))
	openStore(t, pool, byFile)
	if diff := cmp.Diff(wantCat, catalog(t, pool, byFile)); diff != "" {
		t.Errorf("after schema.sql again and New, the tables (+) differ from New's (-):\n%s", diff)
	}
	// The script for another schema is the file, renamed.
	if other := pgcheckpoint.SchemaSQL(byFile); other != schemaFile(t, byFile) {
		t.Errorf("SchemaSQL(%q) is not schema.sql renamed", byFile)
	}
}

// holdSetupLock takes the lock New migrates under, for schema, on a
// connection of its own, until release is called or t ends; it returns
// the PID of the server process holding it.
func holdSetupLock(t testing.TB, pool *pgxpool.Pool, schema string) (pid uint32, release func()) {
	t.Helper()
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_lock(hashtext('refine-go/pgcheckpoint'), hashtext($1))`, schema); err != nil {
		conn.Release()
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			conn.Exec(context.Background(), `SELECT pg_advisory_unlock_all()`)
			conn.Release()
		}
	}
	t.Cleanup(release)
	return conn.Conn().PgConn().PID(), release
}

// TestNewSkipsCurrentSchema: New on a current schema takes no lock: it
// succeeds while another session holds the set-up lock.
func TestNewSkipsCurrentSchema(t *testing.T) {
	pool, other := newPool(t), newPool(t)
	schema := newSchema(t, pool)
	openStore(t, pool, schema)
	holdSetupLock(t, other, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	s, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema), pgcheckpoint.MigrationTimeout(time.Minute))
	if err != nil {
		t.Fatalf("New on a current schema, the set-up lock held elsewhere: %v", err)
	}
	s.Close()
	t.Logf("New on a current schema took %v", time.Since(start))
}

// TestNewLockTimeout: New waits for the set-up lock (a session holds it
// while the schema needs creating) or for a lock on the table of versions
// no longer than MigrationTimeout, then fails with ErrSchemaLocked, naming
// the lock and who holds it.
func TestNewLockTimeout(t *testing.T) {
	const timeout = time.Second
	t.Run("setup_lock", func(t *testing.T) {
		pool, other := newPool(t), newPool(t)
		schema := newSchema(t, pool)
		pid, release := holdSetupLock(t, other, schema)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		_, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema), pgcheckpoint.MigrationTimeout(timeout))
		took := time.Since(start)
		t.Logf("after %v: %v", took.Round(time.Millisecond), err)
		if !errors.Is(err, pgcheckpoint.ErrSchemaLocked) {
			t.Fatalf("New, the set-up lock held elsewhere: got %v, want ErrSchemaLocked", err)
		}
		for _, want := range []string{"pg_advisory_xact_lock(hashtext('refine-go/pgcheckpoint'), hashtext('" + schema + "'))", "PID " + strconv.Itoa(int(pid))} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %q", want)
			}
		}
		if took < timeout || took > timeout+5*time.Second {
			t.Errorf("New gave up after %v, want about %v", took, timeout)
		}
		release()
		openStore(t, pool, schema) // now it can
	})
	t.Run("versions_table", func(t *testing.T) {
		pool, other := newPool(t), newPool(t)
		schema := newSchema(t, pool)
		openStore(t, pool, schema)
		tx, err := other.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		if _, err := tx.Exec(context.Background(), `LOCK TABLE `+pgx.Identifier{schema, "schema_version"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// On the pool that has read the version already (its statement
		// cached), and on a fresh one, as another process's: there the
		// statement is described before it runs, which waits for the lock
		// too. (Mutation caught: lock_timeout set in the batch, after the
		// describe — the fresh pool waits twice the timeout, without
		// ErrSchemaLocked.)
		for _, p := range []*pgxpool.Pool{pool, newPool(t)} {
			start := time.Now()
			_, err = pgcheckpoint.New(ctx, p, pgcheckpoint.Schema(schema), pgcheckpoint.MigrationTimeout(timeout))
			took := time.Since(start)
			t.Logf("after %v: %v", took.Round(time.Millisecond), err)
			if !errors.Is(err, pgcheckpoint.ErrSchemaLocked) || !strings.Contains(err.Error(), "read the version") {
				t.Fatalf("New, the table of versions locked: got %v, want ErrSchemaLocked", err)
			}
			if took > 2*timeout-timeout/4 {
				t.Errorf("New gave up after %v, want about %v", took, timeout)
			}
		}
	})
}

// newRole creates a role that may log in and nothing else, dropped when t
// ends, and returns its name and a pool connected as it.
func newRole(t *testing.T, pool *pgxpool.Pool) (string, *pgxpool.Pool) {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	role := "refine_test_role_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		q := pgx.Identifier{role}.Sanitize()
		if _, err := pool.Exec(ctx, `DROP OWNED BY `+q); err != nil {
			t.Errorf("DROP OWNED BY %s: %v", role, err)
		}
		if _, err := pool.Exec(ctx, `DROP ROLE `+q); err != nil {
			t.Errorf("DROP ROLE %s: %v", role, err)
		}
	})
	cfg, err := pgxpool.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User = role
	cfg.ConnConfig.Password = ""
	rolePool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rolePool.Close) // before the role is dropped
	var who string
	if err := rolePool.QueryRow(ctx, `SELECT current_user`).Scan(&who); err != nil || who != role {
		t.Fatalf("connected as %q (%v), want %q", who, err, role)
	}
	return role, rolePool
}

// operatorCreates creates a schema of its own for t with schema.sql, as an
// operator would, and grants role USAGE on it and SELECT, INSERT, UPDATE,
// DELETE on its tables, as schema.sql says to.
func operatorCreates(t *testing.T, pool *pgxpool.Pool, role string) string {
	t.Helper()
	schema := newSchema(t, pool)
	runSQL(t, pool, schemaFile(t, schema))
	q, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize()
	runSQL(t, pool, `GRANT USAGE ON SCHEMA `+q+` TO `+r+`;
		GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA `+q+` TO `+r)
	return schema
}

// TestLeastPrivilege: a role with USAGE on a schema an operator created
// (with schema.sql) and SELECT, INSERT, UPDATE, DELETE on its tables, and
// no other right, uses the store, with Migrate(false) or without (the
// schema being current, New changes nothing): the conformance suite
// passes, connected as that role. Where the schema is missing, New fails
// at once, saying so.
func TestLeastPrivilege(t *testing.T) {
	pool := newPool(t)
	role, rolePool := newRole(t, pool)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	missing := newSchema(t, pool)
	if _, err := pgcheckpoint.New(ctx, rolePool, pgcheckpoint.Schema(missing)); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("New as a role that may create nothing, on a missing schema: got %v, want a permission error", err)
	}
	if _, err := pgcheckpoint.New(ctx, rolePool, pgcheckpoint.Schema(missing), pgcheckpoint.Migrate(false)); err == nil || !strings.Contains(err.Error(), "schema.sql") {
		t.Errorf("New with Migrate(false) on a missing schema: got %v, want an error pointing to schema.sql", err)
	}

	schema := operatorCreates(t, pool, role)
	for _, opts := range [][]pgcheckpoint.Option{{pgcheckpoint.Migrate(false)}, nil} {
		s := openStore(t, rolePool, schema, opts...)
		token, release, err := s.Lock(ctx, "least")
		if err != nil {
			t.Fatal(err)
		}
		c := checkpointtest.Checkpoint("least", 1)
		c.Token = token
		if err := s.Save(ctx, c); err != nil {
			t.Errorf("Save as the least-privilege role: %v", err)
		}
		if got, err := s.Status(ctx); err != nil || len(got) != 1 || got[0].Holder != s.HolderName() {
			t.Errorf("Status as the least-privilege role: %v, %v", got, err)
		}
		if err := release(); err != nil {
			t.Error(err)
		}
		if err := s.Remove(ctx, "least"); err != nil {
			t.Errorf("Remove as the least-privilege role: %v", err)
		}
	}

	checkpointtest.Run(t, func(t *testing.T) checkpointtest.Store {
		return openStore(t, rolePool, operatorCreates(t, pool, role), append([]pgcheckpoint.Option{pgcheckpoint.Migrate(false)}, leases...)...)
	})
}

// TestMigrateFalse: with Migrate(false), New refuses a schema older than
// the package's, and changes nothing.
func TestMigrateFalse(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	openStore(t, pool, schema)
	table := pgx.Identifier{schema, "schema_version"}.Sanitize()
	if _, err := pool.Exec(context.Background(), `DELETE FROM `+table); err != nil {
		t.Fatal(err)
	}
	_, err := pgcheckpoint.New(context.Background(), pool, pgcheckpoint.Schema(schema), pgcheckpoint.Migrate(false))
	if err == nil || !strings.Contains(err.Error(), "Migrate(false)") {
		t.Errorf("New with Migrate(false) on a schema of version 0: got %v, want an error", err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
		t.Errorf("versions after New with Migrate(false): %d, %v; want none", n, err)
	}
	if _, err := pgcheckpoint.New(context.Background(), pool, pgcheckpoint.Schema(schema), pgcheckpoint.MigrationTimeout(0)); err == nil {
		t.Error("MigrationTimeout(0) accepted")
	}
}

// TestNewFrozenConnection: New on a connection that stops answering
// returns within about twice MigrationTimeout, with an error matching
// context.DeadlineExceeded.
func TestNewFrozenConnection(t *testing.T) {
	other := newPool(t)
	p := newProxy(t)
	pool := p.pool(t)
	schema := newSchema(t, other)
	const timeout = time.Second
	p.freeze()
	start := time.Now()
	_, err := pgcheckpoint.New(context.Background(), pool, pgcheckpoint.Schema(schema), pgcheckpoint.MigrationTimeout(timeout))
	took := time.Since(start)
	p.thaw()
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("New on a frozen connection: got %v, want a deadline error", err)
	}
	if took > 2*timeout+2*time.Second {
		t.Errorf("New on a frozen connection returned after %v, want about %v", took, 2*timeout)
	}
}
