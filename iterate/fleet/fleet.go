package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"go.uber.org/zap"

	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

// Defaults of the settings.
const (
	// DefaultSchema is the PostgreSQL schema of River's, the store's and the
	// fleet's tables.
	DefaultSchema = "fleet"
	// DefaultLease is the session lease: how long a dead worker's session
	// waits before another worker takes it over.
	DefaultLease = pgcheckpoint.DefaultLease
	// DefaultConcurrency is how many sessions of each kind a worker runs at
	// once.
	DefaultConcurrency = 4
	// DefaultPoll is how often a worker looks for work in the queue, for
	// sessions whose holder died, and for cancellations of the sessions it
	// runs.
	DefaultPoll = time.Second
	// DefaultMaxAttempts bounds the failed runs of one session's job
	// (errors and takeovers; graceful stops and waits for a lease do not
	// count) before River discards it.
	DefaultMaxAttempts = 100
)

// jobKind is the River job kind of every session.
const jobKind = "refine_session"

// Fleet is a handle on the fleet's database: it submits sessions, lists
// them, answers and cancels them from any process, and runs them in worker
// processes ([Fleet.Work]). Create one with [New]; safe for concurrent use.
type Fleet struct {
	pool  *pgxpool.Pool
	store *pgcheckpoint.Store
	river *river.Client[pgx.Tx] // inserts, retries and cancels; never started
	cfg   config

	mu      sync.Mutex
	kinds   map[string]runner
	working bool
}

// config holds the settings of a Fleet.
type config struct {
	schema      string
	lease       time.Duration
	holder      string
	concurrency int
	poll        time.Duration
	maxAttempts int
	migration   time.Duration
	log         *zap.Logger
	storeOpts   []pgcheckpoint.Option
}

// Option configures a [Fleet].
type Option func(*config) error

// Schema sets the PostgreSQL schema of the fleet's tables (River's, the
// store's and the fleet's own; default [DefaultSchema]). Every process of a
// fleet uses the same.
func Schema(name string) Option {
	return func(c *config) error {
		if name == "" {
			return errors.New("fleet: empty schema name")
		}
		c.schema = name
		return nil
	}
}

// Lease sets the session lease (default [DefaultLease]): a live worker
// renews it every third of it; a dead worker's sessions are taken over about
// a lease after its last renewal. It must stay well above a live worker's
// pauses (GC, network), which would otherwise cost it its sessions. At
// least one second.
func Lease(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second {
			return fmt.Errorf("fleet: lease %v is shorter than a second", d)
		}
		c.lease = d
		return nil
	}
}

// Holder sets how this process names itself in the leases it takes and
// in [Session.Holder] (default "<hostname> pid <pid>"; the store appends a
// random suffix).
func Holder(name string) Option {
	return func(c *config) error {
		c.holder = name
		return nil
	}
}

// Concurrency sets how many sessions of each kind [Fleet.Work] runs at once
// (default [DefaultConcurrency]).
func Concurrency(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("fleet: concurrency %d is not positive", n)
		}
		c.concurrency = n
		return nil
	}
}

// Poll sets how often a worker looks for queued work, for sessions whose
// holder died and for cancellations of its own sessions, and how often
// [Kind.Wait] looks at a session (default [DefaultPoll]).
func Poll(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("fleet: poll interval %v is not positive", d)
		}
		c.poll = d
		return nil
	}
}

// MaxAttempts bounds the failed runs of a session's job (default
// [DefaultMaxAttempts]).
func MaxAttempts(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("fleet: max attempts %d is not positive", n)
		}
		c.maxAttempts = n
		return nil
	}
}

// MigrationTimeout sets how long [New] waits for each lock it needs to
// create or migrate the fleet's tables (default
// [pgcheckpoint.DefaultMigrationTimeout]): the fleet's set-up lock, held by
// another process migrating, and the store's ([pgcheckpoint.MigrationTimeout]).
// A lock not granted in time makes New fail with an error matching
// [pgcheckpoint.ErrSchemaLocked] that names the lock and the server
// processes holding it.
func MigrationTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("fleet: migration timeout %v is not positive", d)
		}
		c.migration = d
		return nil
	}
}

// Logger sets the logger of the fleet and of its River client (default
// zap.NewNop()). River's messages below warnings are dropped.
func Logger(l *zap.Logger) Option {
	return func(c *config) error {
		if l != nil {
			c.log = l
		}
		return nil
	}
}

// StoreOptions passes options to the checkpoint store ([pgcheckpoint.Keep],
// for one). Its schema, lease and holder are the fleet's.
func StoreOptions(opts ...pgcheckpoint.Option) Option {
	return func(c *config) error {
		c.storeOpts = append(c.storeOpts, opts...)
		return nil
	}
}

// New returns a Fleet on the database of pool, creating or migrating
// River's tables, the store's and the fleet's own first (idempotent, and
// safe when many processes start at once). The pool stays the caller's;
// give it room for the workers' sessions (about twice the concurrency per
// kind, and ten more).
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Fleet, error) {
	if pool == nil {
		return nil, errors.New("fleet: nil pool")
	}
	cfg := config{schema: DefaultSchema, lease: DefaultLease, concurrency: DefaultConcurrency,
		poll: DefaultPoll, maxAttempts: DefaultMaxAttempts, migration: pgcheckpoint.DefaultMigrationTimeout,
		log: zap.NewNop()}
	var errs []error
	for _, o := range opts {
		if o != nil {
			if err := o(&cfg); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.holder == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "unknown-host"
		}
		cfg.holder = host + " pid " + strconv.Itoa(os.Getpid())
	}
	if err := migrate(ctx, pool, cfg.schema, cfg.migration); err != nil {
		return nil, fmt.Errorf("fleet: preparing schema %q: %w", cfg.schema, err)
	}
	store, err := pgcheckpoint.New(ctx, pool, append(append([]pgcheckpoint.Option(nil), cfg.storeOpts...),
		pgcheckpoint.Schema(cfg.schema), pgcheckpoint.Lease(cfg.lease), pgcheckpoint.Holder(cfg.holder),
		pgcheckpoint.MigrationTimeout(cfg.migration))...)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema: cfg.schema,
		Logger: riverLogger(cfg.log),
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return &Fleet{pool: pool, store: store, river: client, cfg: cfg, kinds: map[string]runner{}}, nil
}

// Store returns the checkpoint store of the fleet's sessions, for tools that
// read sessions (an inspector, a report). Its leases are the fleet's: do not
// lock its sessions.
func (f *Fleet) Store() *pgcheckpoint.Store { return f.store }

// Holder returns how this process names itself in the leases it takes.
func (f *Fleet) Holder() string { return f.store.HolderName() }

// table returns the quoted name of one of the fleet's tables.
func (f *Fleet) table(name string) string {
	return pgx.Identifier{f.cfg.schema, name}.Sanitize()
}

// schemaVersion marks, as the comment of the fleet's table of sessions, the
// version of the fleet's own tables: a process finding it current does no
// DDL (a role without CREATE can work).
const schemaVersion = "refine-go fleet schema 3"

// fleetDDL creates the fleet's own tables, beside River's and the store's:
// one row per submitted session, with its kind and arguments, its job, and
// what a human asked of it (the answer to its open question, a
// cancellation); and one row per accepted answer, keyed by the escalation's
// checkpoint generation, so that each question is answered once; and one
// row per accepted extension of a budget (Fleet.Extend), keyed by the
// budget_exhausted checkpoint's generation, so that each stop is extended
// once; and indexes on the times of a cancellation, an answer and an
// extension, so that a worker's reconciliation reads only what changed
// lately (reconcileIndexes). Every statement is idempotent: older
// versions' tables are brought to version 3. (The indexes came after
// version 3 without changing it, so that a process of the version before,
// which takes any other version for an older one, still finds the schema
// current: it runs without them.)
const fleetDDL = `
CREATE TABLE IF NOT EXISTS %[1]s.fleet_sessions (
	session           text        PRIMARY KEY,
	kind              text        NOT NULL,
	args              jsonb       NOT NULL,
	job_id            bigint,
	submitted_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
	cancelled_at      timestamptz,
	answer            text,
	answer_generation bigint,
	answered_at       timestamptz
);
CREATE TABLE IF NOT EXISTS %[1]s.fleet_answers (
	session     text        NOT NULL REFERENCES %[1]s.fleet_sessions ON DELETE CASCADE,
	generation  bigint      NOT NULL,
	iteration   bigint      NOT NULL DEFAULT 0,
	question    text        NOT NULL DEFAULT '',
	answer      text        NOT NULL,
	answered_by text        NOT NULL DEFAULT '',
	answered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (session, generation)
);
CREATE TABLE IF NOT EXISTS %[1]s.fleet_extensions (
	session     text        NOT NULL REFERENCES %[1]s.fleet_sessions ON DELETE CASCADE,
	generation  bigint      NOT NULL,
	limits      jsonb       NOT NULL,
	extended_by text        NOT NULL DEFAULT '',
	extended_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (session, generation)
);
INSERT INTO %[1]s.fleet_answers (session, generation, answer, answered_at)
	SELECT session, answer_generation, answer, coalesce(answered_at, clock_timestamp())
	FROM %[1]s.fleet_sessions WHERE answer IS NOT NULL AND answer_generation IS NOT NULL
	ON CONFLICT DO NOTHING;
CREATE INDEX IF NOT EXISTS fleet_sessions_cancelled_at ON %[1]s.fleet_sessions (cancelled_at) WHERE cancelled_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS fleet_answers_answered_at ON %[1]s.fleet_answers (answered_at);
CREATE INDEX IF NOT EXISTS fleet_extensions_extended_at ON %[1]s.fleet_extensions (extended_at);
COMMENT ON TABLE %[1]s.fleet_sessions IS '` + schemaVersion + `'`

// reconcileIndexes are the names of the indexes fleetDDL makes for a
// worker's reconciliation (see Fleet.reconcile).
var reconcileIndexes = [...]string{"fleet_sessions_cancelled_at", "fleet_answers_answered_at", "fleet_extensions_extended_at"}

// migrate creates the schema and brings River's tables (rivermigrate) and
// the fleet's up to date, under a session advisory lock on the schema's
// name, so that processes starting at once take turns; the lock is waited
// for at most timeout (lock_timeout), and the whole at most twice that.
// The store's tables are migrated by pgcheckpoint.New.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, 2*timeout, errMigrationDeadline)
	defer cancel()
	err := migrateLocked(ctx, pool, schema, timeout)
	if err != nil && context.Cause(ctx) == errMigrationDeadline {
		err = fmt.Errorf("no answer within %v (twice the migration timeout): %w (%w)", 2*timeout, pgcheckpoint.ErrSchemaLocked, err)
	}
	return err
}

// errMigrationDeadline is the cause of the end of a migration's context.
var errMigrationDeadline = errors.New("fleet: the migration took too long")

// setupLock is the advisory lock the fleet's processes take, in turn, to
// migrate a schema (%s: the schema's name, quoted as a literal).
const setupLock = `pg_advisory_lock(hashtext('refine-go/fleet'), hashtext(%s))`

func migrateLocked(ctx context.Context, pool *pgxpool.Pool, schema string, timeout time.Duration) error {
	q := pgx.Identifier{schema}.Sanitize()
	// Current already: no lock, no DDL (a role without CREATE can work).
	var current bool
	err := pool.QueryRow(ctx, `SELECT coalesce(obj_description(to_regclass($1), 'pg_class') = $3, false)
		AND to_regclass($2) IS NOT NULL AND to_regclass($4) IS NOT NULL AND to_regclass($5) IS NOT NULL
		AND to_regclass($6) IS NOT NULL`,
		q+".fleet_sessions", q+".river_job", schemaVersion,
		q+"."+reconcileIndexes[0], q+"."+reconcileIndexes[1], q+"."+reconcileIndexes[2]).Scan(&current)
	if err != nil {
		return err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{
		Schema: schema,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	if current {
		// River's own migrations may still be behind this River's.
		res, err := migrator.Validate(ctx, nil)
		if err == nil && res.OK {
			return nil
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	lit := "'" + strings.ReplaceAll(schema, "'", "''") + "'"
	lock := fmt.Sprintf(setupLock, lit)
	ms := strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)
	if _, err := conn.Exec(ctx, `SET lock_timeout = `+ms); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `RESET lock_timeout`)
	if _, err := conn.Exec(ctx, `SELECT `+lock); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "55P03" {
			return fmt.Errorf("waited %v for the set-up lock of schema %s (%s%s): %w", timeout, q, lock,
				lockHolders(ctx, pool, schema), pgcheckpoint.ErrSchemaLocked)
		}
		return fmt.Errorf("taking the set-up lock of schema %s: %w", q, err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('refine-go/fleet'), hashtext($1))`, schema)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+q); err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating the job queue's tables: %w", err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(fleetDDL, q)); err != nil {
		return fmt.Errorf("creating the fleet's tables: %w", err)
	}
	return nil
}

// lockHolders returns ", held by the server process(es) with PID …" naming
// who holds the fleet's set-up lock of schema, "" if none can be read.
func lockHolders(ctx context.Context, pool *pgxpool.Pool, schema string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = hashtext('refine-go/fleet')::oid AND objid = hashtext($1)::oid AND objsubid = 2
		ORDER BY pid`, schema)
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

// GrantSQL returns the SQL statements that give role the least privileges
// a fleet's processes need on the fleet's schema (River's, the store's and
// the fleet's tables): USAGE on the schema, SELECT, INSERT, UPDATE and
// DELETE on its tables, USAGE on its sequences (River's job ids). Run them
// as the schema's owner after the tables exist (a [New] with the right to
// create them, run once by an operator, makes them); a process of that
// role then opens the fleet with New, which changes nothing on a current
// schema. Tables added by later versions need the statements again.
func GrantSQL(schema, role string) string {
	q, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize()
	return fmt.Sprintf(`GRANT USAGE ON SCHEMA %[1]s TO %[2]s;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %[1]s TO %[2]s;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA %[1]s TO %[2]s;
`, q, r)
}

// kindName is what a kind's name may be: it names a River queue too.
var kindName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// queue is the River queue of a kind's sessions: a worker fetches only the
// kinds it registered.
func queue(kind string) string { return "refine_" + kind }

// riverLogger gives River's warnings and errors to l.
func riverLogger(l *zap.Logger) *slog.Logger {
	return slog.New(&zapHandler{l: l})
}

// zapHandler is a slog.Handler writing records of level Warn and above to
// a zap logger.
type zapHandler struct {
	l     *zap.Logger
	attrs []zap.Field
}

func (h *zapHandler) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := append([]zap.Field(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
		return true
	})
	if r.Level >= slog.LevelError {
		h.l.Error(r.Message, fields...)
	} else {
		h.l.Warn(r.Message, fields...)
	}
	return nil
}

func (h *zapHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &zapHandler{l: h.l, attrs: append([]zap.Field(nil), h.attrs...)}
	for _, a := range as {
		n.attrs = append(n.attrs, zap.Any(a.Key, a.Value.Any()))
	}
	return n
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	return &zapHandler{l: h.l.Named(name), attrs: h.attrs}
}
