package pgcheckpoint

// This file keeps and reads a session's generations: which a save prunes
// (Keep, KeepAll, KeepBest, MaxBytes), and the listing and loading of the
// kept ones, for tools that show a session's history and for forks.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refine-go/refine/checkpoint"
)

// KeepAll makes a save keep every generation of its session (its whole
// history, which [Store.Generations] lists and [Store.LoadGeneration]
// loads), subject only to [MaxBytes]; Keep is then ignored.
func KeepAll() Option {
	return optionFunc(func(s *Store) error {
		s.retain.all = true
		return nil
	})
}

// KeepBest makes a save keep, beside the newest generations, the generation
// that the newest one names as holding the best state
// ([checkpoint.Checkpoint.BestGeneration]): pruning never removes it,
// whatever Keep and [MaxBytes] say. A generation that is no longer the best
// is pruned as any other.
func KeepBest() Option {
	return optionFunc(func(s *Store) error {
		s.retain.best = true
		return nil
	})
}

// MaxBytes bounds the size of a session's generations: after a save, in its
// transaction, the oldest generations are deleted until the Engine and
// State of the session's generations add up to at most n bytes, never the
// newest generation, and never the best under [KeepBest]. It applies with
// Keep and with [KeepAll]. n <= 0 means no limit, the default.
func MaxBytes(n int64) Option {
	return optionFunc(func(s *Store) error {
		s.retain.maxBytes = max(n, 0)
		return nil
	})
}

// retention is which generations of a session a save keeps beyond the
// newest Keep: all of them, the best one, within a size.
type retention struct {
	all      bool
	best     bool
	maxBytes int64
}

// pruneBytesSQL returns the statement of a save that deletes, under a
// size limit, the generations its retention does not keep, from the table
// named table (its arguments: the session, and the byte limit), "" without
// a limit. It runs after the insert, in its transaction, so that the
// newest generation is the one just saved. (The pruning by Keep is part
// of the insert's statement: see Store.prepareSQL.)
func (r retention) pruneBytesSQL(table string) (byBytes string) {
	if r.maxBytes > 0 {
		// Oldest first, each generation that is not protected is deleted
		// while what remains of the session exceeds the limit: while the
		// total, less the unprotected generations before it, does.
		protected := `generation = (SELECT max(generation) FROM ` + table + ` WHERE session = $1)`
		if r.best {
			protected += ` OR generation = (SELECT best_generation FROM ` + table + ` WHERE session = $1
				ORDER BY generation DESC LIMIT 1)`
		}
		byBytes = `WITH kept AS (
				SELECT generation, coalesce(octet_length(engine), 0) + coalesce(octet_length(state), 0) AS size,
					(` + protected + `) AS protected
				FROM ` + table + ` WHERE session = $1),
			ranked AS (
				SELECT generation, protected, sum(size) OVER () AS total,
					coalesce(sum(CASE WHEN protected THEN 0 ELSE size END) OVER (ORDER BY generation
						ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
				FROM kept)
			DELETE FROM ` + table + ` WHERE session = $1 AND generation IN (
				SELECT generation FROM ranked WHERE NOT protected AND total - before > $2::bigint)`
	}
	return byBytes
}

// envelopeColumns are the columns of a checkpoint's envelope, in the order
// scanEnvelope reads them.
const envelopeColumns = `generation, token, status, reason, iteration, time, time_ns, question, fingerprint,
	best_generation, origin_session, origin_generation`

// envelope is where a row's envelope columns are scanned to.
type envelope struct {
	gen, token, iteration, best, originGen int64
	t                                      time.Time
	ns                                     int32
}

// dest returns the scan destinations of envelopeColumns, filling c and e.
func (e *envelope) dest(c *checkpoint.Checkpoint) []any {
	return []any{&e.gen, &e.token, &c.Status, &c.Reason, &e.iteration, &e.t, &e.ns, &c.Question, &c.Fingerprint,
		&e.best, &c.Origin.Session, &e.originGen}
}

// fill sets the fields of c that were scanned into e.
func (e *envelope) fill(c *checkpoint.Checkpoint) {
	c.Generation, c.Token, c.Iteration = uint64(e.gen), uint64(e.token), int(e.iteration)
	c.BestGeneration, c.Origin.Generation = uint64(e.best), uint64(e.originGen)
	c.Time = e.t.UTC().Add(time.Duration(e.ns))
}

// Generations lists the envelopes of the kept generations of session,
// oldest first: every field but Engine and State (left nil). Which
// generations are kept is the store's retention (Keep, [KeepAll],
// [KeepBest], [MaxBytes]). A session without generations lists none. It
// takes no lock.
func (s *Store) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateSession(session); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+envelopeColumns+` FROM `+s.table("checkpoints")+`
		WHERE session = $1 ORDER BY generation`, session)
	if err != nil {
		return nil, wrap(ctx, "listing the generations of", session, err)
	}
	var out []*checkpoint.Checkpoint
	for rows.Next() {
		c := &checkpoint.Checkpoint{Session: session}
		var e envelope
		if err := rows.Scan(e.dest(c)...); err != nil {
			rows.Close()
			return nil, wrap(ctx, "listing the generations of", session, err)
		}
		e.fill(c)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(ctx, "listing the generations of", session, err)
	}
	return out, nil
}

// LoadGeneration returns generation gen of session, whole, as Load would
// return it were it the newest. A generation that is not kept gives an
// error matching [checkpoint.ErrNotFound]. It takes no lock.
func (s *Store) LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateSession(session); err != nil {
		return nil, err
	}
	if gen == 0 || gen > math.MaxInt64 {
		return nil, fmt.Errorf("%w: generation %d of session %q in schema %s", checkpoint.ErrNotFound, gen, session, s.q)
	}
	return s.load(ctx, session, `WHERE session = $1 AND generation = $2`, int64(gen))
}

// load returns the one checkpoint of session that where (a WHERE clause
// whose $1 is the session, further arguments following) selects, the
// newest if several, or an error matching checkpoint.ErrNotFound.
func (s *Store) load(ctx context.Context, session, where string, args ...any) (*checkpoint.Checkpoint, error) {
	c := &checkpoint.Checkpoint{Session: session}
	var e envelope
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, wrap(ctx, "loading", session, err)
	}
	err = conn.QueryRow(ctx, `SELECT `+envelopeColumns+`, engine, state FROM `+s.table("checkpoints")+` `+where+`
		ORDER BY generation DESC LIMIT 1`, append([]any{session}, args...)...).
		Scan(append(e.dest(c), &c.Engine, &c.State)...)
	releaseAfter(conn, len(c.Engine)+len(c.State))
	if errors.Is(err, pgx.ErrNoRows) {
		if len(args) > 0 {
			return nil, fmt.Errorf("%w: generation %v of session %q in schema %s", checkpoint.ErrNotFound, args[0], session, s.q)
		}
		return nil, fmt.Errorf("%w: session %q in schema %s", checkpoint.ErrNotFound, session, s.q)
	}
	if err != nil {
		return nil, wrap(ctx, "loading", session, err)
	}
	e.fill(c)
	return c, nil
}
