package pgcheckpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint"
)

// Defaults of the settings.
const (
	// DefaultSchema is the PostgreSQL schema the tables live in.
	DefaultSchema = "refine"
	// DefaultLease is how long a lease lasts without renewal.
	DefaultLease = 30 * time.Second
)

// maxBytes bounds Engine and State together, as the checkpoint format
// bounds an encoded checkpoint (1 GiB); a bytea cannot hold more anyway.
const maxBytes = 1 << 30

// Store keeps checkpoints in a PostgreSQL database. Create one with [New];
// the zero value is not usable. Safe for concurrent use, by any number of
// Stores on any number of hosts sharing one database.
//
// It implements the engine's Checkpointer, Locker and Remover: Save, Load,
// Lock and Remove, with the semantics of [checkpoint.Dir] described in the
// package documentation.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	q      string // the schema, quoted
	keep   int
	retain retention
	lease  time.Duration
	renew  time.Duration
	holder string // unique to this Store: its description and a random suffix

	noMigrate        bool          // Migrate(false): only check the schema's version
	migrationTimeout time.Duration // for each lock New waits for to migrate

	// The statements of a save (see prepareSQL); sqlPruneBytes is empty
	// when the retention does not need it.
	sqlInsert, sqlPruneBytes, sqlFence, sqlFenceRelease string

	// hook, set by tests only, is called by each save with the connection
	// it runs on and its pipeline, after the insert and the pruning are
	// queued and before the fencing check is.
	hook func(ctx context.Context, conn *pgx.Conn, b *pgx.Batch)

	mu    sync.Mutex
	locks map[string]*lease // the leases this Store holds, by session
}

// Option configures a [Store].
type Option interface{ apply(*Store) error }

type optionFunc func(*Store) error

func (f optionFunc) apply(s *Store) error { return f(s) }

// Schema sets the PostgreSQL schema that holds the store's tables (default
// [DefaultSchema], "refine"), created by [New] if missing. Stores sharing
// sessions must use the same schema; tests may use one schema each.
func Schema(name string) Option {
	return optionFunc(func(s *Store) error {
		if name == "" {
			return errors.New("pgcheckpoint: empty schema name")
		}
		s.schema = name
		return nil
	})
}

// Keep sets how many generations of a session are kept (default
// [checkpoint.DefaultKeep], 3; minimum 1). Every save deletes the older
// ones in its transaction (see also [KeepAll], [KeepBest] and [MaxBytes]).
func Keep(n int) Option {
	return optionFunc(func(s *Store) error {
		s.keep = max(n, 1)
		return nil
	})
}

// Lease sets how long a session's lease lasts after it is taken or last
// renewed (default [DefaultLease], 30s). It bounds how long a session stays
// blocked after its holder dies (its process killed, its machine or its
// connection lost): another host can take the session over once the lease
// has run out, at most this long after the holder's last renewal. A holder
// that cannot renew for this long (paused, partitioned) loses the session
// and its next save is refused. It is also each save's deadline (plus a
// second per 4 MiB of Engine and State). It must be at least 100ms.
func Lease(d time.Duration) Option {
	return optionFunc(func(s *Store) error {
		if d < 100*time.Millisecond {
			return fmt.Errorf("pgcheckpoint: lease %v is shorter than 100ms", d)
		}
		s.lease = d
		return nil
	})
}

// Renew sets how often a held lease is renewed (default a third of the
// lease, so that two renewals in a row can fail before the lease runs
// out). It must be shorter than the lease.
func Renew(d time.Duration) Option {
	return optionFunc(func(s *Store) error {
		if d <= 0 {
			return fmt.Errorf("pgcheckpoint: renewal interval %v is not positive", d)
		}
		s.renew = d
		return nil
	})
}

// Holder sets how this Store names itself in the leases it takes, as shown
// by [Store.Status] and in the *[checkpoint.LockedError] other hosts get
// (default "<hostname> pid <pid>"). A random suffix is always appended, so
// that two Stores never share a holder name.
func Holder(name string) Option {
	return optionFunc(func(s *Store) error {
		s.holder = name
		return nil
	})
}

// New returns a store keeping checkpoints in the database of pool, creating
// its schema and tables or migrating them to [SchemaVersion] first unless
// they are current (idempotent, and safe when several hosts start at once;
// see [Migrate] and [MigrationTimeout]). It returns within twice the
// migration timeout whatever the database does (sooner if ctx ends). The
// pool stays the caller's: close it after the store's last use and after
// releasing its locks (see [Store.Close]). A nil option is ignored; an
// invalid one is an error.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgcheckpoint: nil pool")
	}
	s := &Store{pool: pool, schema: DefaultSchema, keep: checkpoint.DefaultKeep, lease: DefaultLease, migrationTimeout: DefaultMigrationTimeout}
	var errs []error
	for _, o := range opts {
		if o != nil {
			if err := o.apply(s); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if s.renew == 0 {
		s.renew = s.lease / 3
	} else if s.renew >= s.lease {
		errs = append(errs, fmt.Errorf("pgcheckpoint: renewal interval %v is not shorter than the lease %v", s.renew, s.lease))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if s.holder == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "unknown host"
		}
		s.holder = host + " pid " + strconv.Itoa(os.Getpid())
	}
	var suffix [4]byte
	rand.Read(suffix[:])
	s.holder += " #" + hex.EncodeToString(suffix[:])
	s.q = pgx.Identifier{s.schema}.Sanitize()
	s.prepareSQL()
	// Each lock is waited for at most the migration timeout; the whole,
	// twice that, also on a connection that stops answering.
	pctx, cancel := context.WithTimeoutCause(ctx, 2*s.migrationTimeout, errSetupDeadline)
	defer cancel()
	if err := s.prepare(pctx); err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%w)", cerr, err)
		} else if context.Cause(pctx) == errSetupDeadline {
			err = fmt.Errorf("no answer within %v (twice the migration timeout): %w (%w)", 2*s.migrationTimeout, context.DeadlineExceeded, err)
		}
		return nil, fmt.Errorf("pgcheckpoint: preparing schema %s: %w", s.q, err)
	}
	return s, nil
}

// HolderName returns the name this Store gives itself in the leases it
// takes.
func (s *Store) HolderName() string { return s.holder }

// table returns the quoted name of one of the store's tables.
func (s *Store) table(name string) string { return s.q + "." + name }

// wrap returns err as the error of op on session, keeping a cancellation
// visible: when ctx is done, the error matches its cause.
func wrap(ctx context.Context, op, session string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%w)", cerr, err)
	}
	return fmt.Errorf("pgcheckpoint: %s session %q: %w", op, session, err)
}

// saveRate is the pace, in bytes per second, that a save's deadline
// allows for its Engine and State beyond the lease: a save has the lease,
// plus a second per 4 MiB, to be answered.
const saveRate = 4 << 20

// saveDeadline returns how long a save of n bytes may take.
func (s *Store) saveDeadline(n int) time.Duration {
	return s.lease + time.Duration(float64(n)/saveRate*float64(time.Second))
}

// Causes of the end of a save's own context, and of New's.
var (
	errSetupDeadline = errors.New("pgcheckpoint: the schema set-up's deadline passed")
	errSaveDeadline  = errors.New("pgcheckpoint: the save's deadline passed")
	errLeaseLost     = errors.New("pgcheckpoint: the lease was lost during the save")
)

// Save stores c as a new generation of its session, in one transaction:
// the whole generation is committed or nothing is, also when the
// connection is lost midway (then the caller may not learn which; a later
// save gets a higher generation either way).
//
// The generation written is max(c.Generation, newest+1), newest being the
// highest generation stored for the session, so that the latest save always
// wins (two saves of one session racing for a generation: the later one
// takes the next). Generations older than the newest Keep are deleted in
// the same transaction. c is not modified, and Skipped is not saved.
//
// The transaction is one round trip (after the first save on a
// connection, which prepares the statements): its statements are sent at
// once, in a pipeline that commits at its end, and the fencing check
// (below) is its last statement, so that it holds the lease row for no
// longer than it takes to commit. Renewals of the lease go on while the
// bytes travel.
//
// Every save has a deadline of its own: the lease, plus a second per 4 MiB
// of Engine and State. A save not answered by then (a connection that stops
// forwarding, a lock the server waits for) returns an error matching
// [context.DeadlineExceeded]; the lease is not lost for that. A fenced save
// (below) also ends, with a *[checkpoint.FencedError], as soon as this
// Store counts its lease lost (renewals failing for a lease length): a
// frozen connection cannot hold a loop past its lease. A save that ended
// so may still land later, whole, if the server goes on with it: a later
// save numbers above it; a fenced one lands only if the lease is still its
// own then.
//
// A c with a non-zero Token is fenced: it is saved only if this Store holds
// the session's lease with that token, and the lease row, locked at the
// end of the transaction, still names this Store with that token and has
// not expired by the database's clock; otherwise Save returns a
// *[checkpoint.FencedError] and stores nothing. A lease that this Store
// failed to renew, or found taken over, fences every later save. A c with
// Token 0 is saved without this check, whoever holds the session, as by
// [checkpoint.Memory] and [checkpoint.Dir].
//
// Generations and tokens are stored as bigint: a generation above
// math.MaxInt64 is refused with an error.
func (s *Store) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	return s.save(ctx, c, false)
}

// SaveRelease saves c as [Store.Save] does and gives back the lease of
// c.Token in the same transaction, as its release function would right
// after the save, in one round trip: for the last save of a run. c must
// be fenced (its Token that of a lease this Store holds; a c with Token 0
// is refused). Once it returns nil the lease is free, its renewals have
// stopped and its release function does nothing; a later save with its
// token is fenced. On an error the lease is held as before, unless the
// error says it was lost (a *[checkpoint.FencedError]) — or the
// transaction committed and its answer was lost, when a later save is
// fenced.
func (s *Store) SaveRelease(ctx context.Context, c *checkpoint.Checkpoint) error {
	if c != nil && c.Token == 0 {
		return fmt.Errorf("pgcheckpoint: SaveRelease of session %q without a token: no lease to give back", c.Session)
	}
	return s.save(ctx, c, true)
}

func (s *Store) save(ctx context.Context, c *checkpoint.Checkpoint, release bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c == nil {
		return checkpoint.ErrNilCheckpoint
	}
	if err := checkpoint.ValidateSession(c.Session); err != nil {
		return err
	}
	size := len(c.Engine) + len(c.State)
	if size > maxBytes {
		return fmt.Errorf("pgcheckpoint: saving session %q: Engine and State take %d bytes, above the limit of %d", c.Session, size, maxBytes)
	}
	if c.Generation > math.MaxInt64 || c.BestGeneration > math.MaxInt64 {
		return fmt.Errorf("pgcheckpoint: saving session %q: generation %d (best %d) above the largest storable, %d",
			c.Session, c.Generation, c.BestGeneration, int64(math.MaxInt64))
	}
	var held *lease
	if c.Token != 0 {
		held = s.held(c.Session, c.Token)
		if held == nil {
			return s.fenced(ctx, c)
		}
	}
	limit := s.saveDeadline(size)
	sctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	sctx, cancel := context.WithTimeoutCause(sctx, limit, errSaveDeadline)
	defer cancel()
	if held != nil {
		go func() {
			select {
			case <-held.lostChan:
				cancelCause(errLeaseLost)
			case <-sctx.Done():
			}
		}()
	}
	if release {
		// A renewal that finds the row given back by this save is no
		// loss (see renewLoop).
		held.setReleasing(true)
	}
	var err error
	for attempt := 0; ; attempt++ {
		err = s.write(sctx, c, release)
		// Another save took the generation first: take the next.
		if !errors.Is(err, errGenerationTaken) || attempt == 10 {
			break
		}
	}
	if release {
		if err == nil {
			s.released(held)
		} else {
			held.setReleasing(false)
		}
	}
	switch cause := context.Cause(sctx); {
	case err == nil:
		return nil
	case errors.Is(err, errFenced):
		// The lease expired, was released or taken over: it never comes
		// back to this holder.
		held.lose()
		return s.fenced(ctx, c)
	case ctx.Err() != nil:
		return wrap(ctx, "saving", c.Session, err)
	case errors.Is(cause, errLeaseLost):
		return &checkpoint.FencedError{Session: c.Session, Token: c.Token}
	case errors.Is(cause, errSaveDeadline) || lockTimeout(err): // lock_timeout is the deadline too
		return fmt.Errorf("pgcheckpoint: saving session %q: no answer within the save's deadline of %v: %w (%w)", c.Session, limit, context.DeadlineExceeded, err)
	}
	return wrap(ctx, "saving", c.Session, err)
}

// Errors of write that Save handles.
var (
	errFenced          = errors.New("fenced")
	errGenerationTaken = errors.New("generation taken")
)

// write runs a save's transaction: a pipeline of its statements, sent at
// once, which the server runs as one implicit transaction, committed at the
// pipeline's end or rolled back at its first error.
//
// With release, the fencing check also gives the lease back.
func (s *Store) write(ctx context.Context, c *checkpoint.Checkpoint, release bool) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer releaseAfter(conn, len(c.Engine)+len(c.State))
	t := c.Time.UTC().Truncate(time.Microsecond) // what timestamptz keeps
	var b pgx.Batch
	const insert = 0
	// Origin.Generation, any uint64, is stored as its bits in a bigint.
	args := []any{c.Session, int64(c.Generation), int64(c.Token), c.Status, c.Reason, int64(c.Iteration),
		t, int32(c.Time.Nanosecond() % 1000), c.Question, c.Fingerprint, c.Engine, c.State,
		int64(c.BestGeneration), c.Origin.Session, int64(c.Origin.Generation),
		saveLockTimeout(ctx)} // $16: see saveSettings
	if s.keep > 1 && !s.retain.all {
		args = append(args, int64(s.keep-2)) // $17: see prepareSQL
	}
	b.Queue(s.sqlInsert, args...)
	if s.sqlPruneBytes != "" {
		b.Queue(s.sqlPruneBytes, c.Session, s.retain.maxBytes)
	}
	if s.hook != nil {
		s.hook(ctx, conn.Conn(), &b)
	}
	fence := -1
	if c.Token != 0 {
		fence = b.Len()
		sql := s.sqlFence
		if release {
			sql = s.sqlFenceRelease
		}
		b.Queue(sql, c.Session, s.holder, int64(c.Token))
	}
	br := conn.SendBatch(ctx, &b)
	for i := range b.Len() {
		if _, err := br.Exec(); err != nil {
			br.Close()
			var pe *pgconn.PgError
			switch {
			case !errors.As(err, &pe):
			case i == fence && pe.Code == "22012": // division_by_zero: see sqlFence
				return errFenced
			case i == insert && pe.Code == "23505": // unique_violation
				return errGenerationTaken
			case i == insert && pe.Code == "22003": // numeric_value_out_of_range
				return fmt.Errorf("generations exhausted: %w", err)
			}
			return err
		}
	}
	return br.Close()
}

// bigMessage is the size of a checkpoint whose connection is closed after
// it was written or read, not returned to the pool: pgx keeps a
// connection's buffers as large as the largest message it sent or
// received, so that an idle process would hold a copy of its largest
// state per connection. Closing costs a new connection on the next use.
const bigMessage = 4 << 20

// releaseAfter returns conn to its pool, or, after a checkpoint of n bytes
// of at least bigMessage, closes it (and the pool replaces it).
func releaseAfter(conn *pgxpool.Conn, n int) {
	if n >= bigMessage {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Conn().Close(ctx)
		cancel()
	}
	conn.Release()
}

// saveLockTimeout returns the lock_timeout of a save's transaction, in
// milliseconds (see saveSettings): the time left until ctx's deadline.
func saveLockTimeout(ctx context.Context) string {
	ms := int64(1000)
	if d, ok := ctx.Deadline(); ok {
		ms = max(time.Until(d).Milliseconds(), 1)
	}
	return strconv.FormatInt(ms, 10)
}

// saveSettings is a condition of a save's first statement, always true,
// that applies the save's settings ($16, the lock timeout, from
// saveLockTimeout) before the statement reads or locks a row: as it names
// no column, the server evaluates it once, first (a one-time filter), and
// the settings hold for the rest of the save. They were a statement of
// their own, one of each save's three (issue 30).
//
// lock_timeout, local to the save's transaction (SET LOCAL): no row lock
// is waited for beyond the save's deadline, by the server's own clock,
// also when the client cannot tell the server it gave up (a frozen
// network), so that a save cannot hold its uncommitted row (which the
// session's next save would wait for) past its deadline. The tables' own
// locks (held by DDL: an ALTER, a LOCK TABLE, a CREATE INDEX), which a
// save waits for before its first statement runs, holding nothing yet,
// are the client connection check's.
//
// client_connection_check_interval, 1s, where the server has it
// (PostgreSQL 14 and newer), for the connection's session: the server
// checks every second, while a statement runs, that the client is still
// connected, so that a save whose client is gone (its deadline passed,
// its context ended, its connection closed) is rolled back rather than
// going on. Set for the session, so that it also covers the locks the
// next save on the connection waits for before its first statement runs
// (its tables', taken as the statement is bound, which lock_timeout, set
// by the statement, cannot bound); the connection's other users keep it
// (a statement of theirs whose client is gone is ended too).
const saveSettings = `(SELECT set_config('lock_timeout', $16::text, true) ||
		CASE WHEN current_setting('client_connection_check_interval', true) IS NOT NULL
			THEN set_config('client_connection_check_interval', '1000', false) ELSE '' END) IS NOT NULL`

// prepareSQL sets the statements of a save, which name the store's tables.
func (s *Store) prepareSQL() {
	// The generation is computed in the insert, from the newest stored;
	// a save that races another for it fails on the primary key, and
	// Save tries again.
	insert := `INSERT INTO ` + s.table("checkpoints") + `
		(session, generation, token, status, reason, iteration, time, time_ns, question, fingerprint, engine, state,
			best_generation, origin_session, origin_generation)
		SELECT $1::text, greatest($2::bigint, coalesce(max(generation), 0) + 1), $3::bigint, $4::text, $5::text, $6::bigint,
			$7::timestamptz, $8::integer, $9::text, $10::text, $11::bytea, $12::bytea, $13::bigint, $14::text, $15::bigint
		FROM ` + s.table("checkpoints") + ` WHERE ` + saveSettings + ` AND session = $1::text`
	s.sqlInsert = insert
	s.sqlPruneBytes = s.retain.pruneBytesSQL(s.table("checkpoints"))
	if !s.retain.all {
		// The pruning by Keep, in the insert's statement: the insert as
		// a WITH, whose row the DELETE does not see (one snapshot), so
		// that it keeps the newest Keep-1 of the older generations ($17
		// is Keep-2), all older ones under Keep(1); and the best
		// generation the new one names ($13), when protected. The
		// DELETE runs first (the WITH's INSERT, unread, runs at the
		// statement's end): it applies the save's settings too.
		prune := `DELETE FROM ` + s.table("checkpoints") + ` WHERE ` + saveSettings + ` AND session = $1::text`
		if s.keep > 1 {
			prune += ` AND generation < (SELECT generation FROM ` + s.table("checkpoints") + `
				WHERE session = $1::text ORDER BY generation DESC OFFSET $17::bigint LIMIT 1)`
		}
		if s.retain.best {
			prune += ` AND generation <> $13::bigint`
		}
		s.sqlInsert = `WITH inserted AS (` + insert + ` RETURNING generation) ` + prune
	}
	// The fencing check: it locks the lease row if it still names this
	// Store with the token and has not expired, and divides by zero (so
	// failing, and rolling the transaction back) if not. The lock, held
	// until the commit that follows at once, keeps a takeover from
	// committing in between.
	s.sqlFence = `SELECT 1 / count(*)::integer FROM (
		SELECT 1 FROM ` + s.table("leases") + `
		WHERE session = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp()
		FOR NO KEY UPDATE) l`
	// SaveRelease's: the same check, whose lock is the update that gives
	// the lease back (as release does) in the same transaction.
	s.sqlFenceRelease = `WITH l AS (
		UPDATE ` + s.table("leases") + ` SET holder = '', expires_at = clock_timestamp()
		WHERE session = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp()
		RETURNING 1)
		SELECT 1 / count(*)::integer FROM l`
}

// fenced returns the *FencedError of a save of c that this Store cannot
// make, naming the session's current token when it can be read within a
// renewal interval.
func (s *Store) fenced(ctx context.Context, c *checkpoint.Checkpoint) error {
	ctx, cancel := context.WithTimeout(ctx, s.renew)
	defer cancel()
	var token int64
	s.pool.QueryRow(ctx, `SELECT token FROM `+s.table("leases")+` WHERE session = $1`, c.Session).Scan(&token)
	return &checkpoint.FencedError{Session: c.Session, Token: c.Token, Current: uint64(token)}
}

// Load returns the newest generation of session, or an error matching
// [checkpoint.ErrNotFound]. Its Skipped is always empty: the database keeps
// generations whole.
func (s *Store) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateSession(session); err != nil {
		return nil, err
	}
	return s.load(ctx, session, `WHERE session = $1`)
}

// Remove deletes every generation of session, and its lease unless the
// lease is live (held by this Store or another, and not expired): a held
// session stays held. Removing a session without checkpoints is not an
// error. Afterwards Load returns ErrNotFound, and, once the lease row is
// gone, the session's generations and tokens may start again from 1.
func (s *Store) Remove(ctx context.Context, session string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateSession(session); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.table("checkpoints")+` WHERE session = $1`, session); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM `+s.table("leases")+` WHERE session = $1 AND (holder = '' OR expires_at <= clock_timestamp())`, session)
		return err
	})
	if err != nil {
		return wrap(ctx, "removing", session, err)
	}
	return nil
}

// Session describes one session of a store, as listed by [Store.Status].
type Session struct {
	// Name is the session's name.
	Name string
	// Status, Reason and Iteration are those of the newest checkpoint, and
	// Generation its generation; all zero when the session has a lease but
	// no checkpoint.
	Status, Reason string
	Iteration      int
	Generation     uint64
	// Saved is the newest checkpoint's Time, as the loop set it; Updated
	// is when the database stored it.
	Saved, Updated time.Time
	// Holder names the holder of the session's lease, "" unless it is
	// live; Expires is when that lease runs out unless renewed.
	Holder  string
	Expires time.Time
	// Token is the newest fencing token issued for the session, 0 if none.
	Token uint64
}

// Sessions yields the newest checkpoint of every session, in the order of
// their names, as [checkpoint.Dir] and [checkpoint.Memory] list theirs:
// the envelope only (Engine and State are nil), read in one query that
// takes no lock. A failed query or an ended context yields one (nil, err)
// and stops. [Store.Status] adds who holds each session.
func (s *Store) Sessions(ctx context.Context) iter.Seq2[*checkpoint.Checkpoint, error] {
	return func(yield func(*checkpoint.Checkpoint, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (session) session, `+envelopeColumns+`
			FROM `+s.table("checkpoints")+` ORDER BY session, generation DESC`)
		if err != nil {
			yield(nil, fmt.Errorf("pgcheckpoint: listing sessions: %w", err))
			return
		}
		var list []*checkpoint.Checkpoint
		for rows.Next() {
			c := new(checkpoint.Checkpoint)
			var e envelope
			if err := rows.Scan(append([]any{&c.Session}, e.dest(c)...)...); err != nil {
				rows.Close()
				yield(nil, fmt.Errorf("pgcheckpoint: listing sessions: %w", err))
				return
			}
			e.fill(c)
			list = append(list, c)
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("pgcheckpoint: listing sessions: %w", err))
			return
		}
		for _, c := range list {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// Status lists every session with a checkpoint or a lease, by name, for
// operators: status, progress, and who holds it until when.
func (s *Store) Status(ctx context.Context) ([]Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		WITH names AS (
			SELECT DISTINCT session FROM `+s.table("checkpoints")+`
			UNION SELECT session FROM `+s.table("leases")+`
		)
		SELECT n.session,
			coalesce(c.status, ''), coalesce(c.reason, ''), coalesce(c.iteration, 0), coalesce(c.generation, 0),
			c.time, c.time_ns, c.stored_at,
			CASE WHEN l.holder <> '' AND l.expires_at > clock_timestamp() THEN l.holder ELSE '' END,
			CASE WHEN l.holder <> '' AND l.expires_at > clock_timestamp() THEN l.expires_at END,
			coalesce(l.token, 0)
		FROM names n
		LEFT JOIN LATERAL (
			SELECT * FROM `+s.table("checkpoints")+` x WHERE x.session = n.session
			ORDER BY x.generation DESC LIMIT 1
		) c ON true
		LEFT JOIN `+s.table("leases")+` l ON l.session = n.session
		ORDER BY n.session`)
	if err != nil {
		return nil, fmt.Errorf("pgcheckpoint: listing sessions: %w", err)
	}
	var out []Session
	for rows.Next() {
		var x Session
		var iteration, gen, token int64
		var saved, updated, expires *time.Time
		var ns *int32
		if err := rows.Scan(&x.Name, &x.Status, &x.Reason, &iteration, &gen, &saved, &ns, &updated, &x.Holder, &expires, &token); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgcheckpoint: listing sessions: %w", err)
		}
		x.Iteration, x.Generation, x.Token = int(iteration), uint64(gen), uint64(token)
		if saved != nil {
			x.Saved = saved.UTC()
			if ns != nil {
				x.Saved = x.Saved.Add(time.Duration(*ns))
			}
		}
		if updated != nil {
			x.Updated = updated.UTC()
		}
		if expires != nil {
			x.Expires = expires.UTC()
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgcheckpoint: listing sessions: %w", err)
	}
	return out, nil
}
