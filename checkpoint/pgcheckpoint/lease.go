package pgcheckpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint"
)

// lease is a session lease held by a Store, renewed by a goroutine until
// released.
type lease struct {
	session string
	token   uint64

	mu        sync.Mutex
	lost      bool          // expired, taken over or not renewable: saves are fenced
	releasing bool          // a SaveRelease is in flight: a renewal that finds the row released is no loss
	lostChan  chan struct{} // closed when lost: cancels the saves in flight

	stop chan struct{} // closed by release
	done chan struct{} // closed when the renewal goroutine returns
	once sync.Once
	err  error // of release
}

// isLost reports whether the lease is lost; a nil lease is.
func (l *lease) isLost() bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// setReleasing marks (or unmarks) l as being given back by a SaveRelease.
func (l *lease) setReleasing(on bool) {
	l.mu.Lock()
	l.releasing = on
	l.mu.Unlock()
}

// isReleasing reports whether a SaveRelease of l is in flight.
func (l *lease) isReleasing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.releasing
}

func (l *lease) lose() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if !l.lost {
		l.lost = true
		close(l.lostChan)
	}
	l.mu.Unlock()
}

// held returns the lease this Store holds on session with token, nil if
// none or if it is lost.
func (s *Store) held(session string, token uint64) *lease {
	s.mu.Lock()
	l := s.locks[session]
	s.mu.Unlock()
	if l == nil || l.token != token || l.isLost() {
		return nil
	}
	return l
}

// Lock takes the session's lease and returns its fencing token, or a
// *[checkpoint.LockedError] naming the holder when the session's lease is
// live (held by another Store, or already by this one, and not expired by
// the database's clock). An expired lease is taken over.
//
// The token is one above the session's previous token (kept in the lease
// row after a release) or, for a session without a lease row, one above the
// highest token among its checkpoints; the first is 1.
//
// While held, the lease is renewed in the background every [Renew]
// interval, each renewal extending it to [Lease] from then. When a renewal
// finds the lease expired or taken over, or renewals fail for a whole
// lease length, the lease is lost: every later save with its token is
// refused with a *[checkpoint.FencedError], which stops the engine.
//
// release stops the renewals and gives the lease back at once, so that the
// next Lock need not wait for it to expire; calling it twice is harmless.
// ctx bounds taking the lease only; the renewals go on until release (or
// [Store.Close]).
func (s *Store) Lock(ctx context.Context, session string) (token uint64, release func() error, err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	if err := checkpoint.ValidateSession(session); err != nil {
		return 0, nil, err
	}
	var t int64
	var sent time.Time
	for attempt := 0; ; attempt++ {
		err = s.acquired(ctx, func(conn *pgxpool.Conn) error {
			sent = time.Now() // a connection at hand: the lease starts after this
			return conn.QueryRow(ctx, s.lockSQL(), session, s.holder, s.lease.Microseconds()).Scan(&t)
		})
		if err == nil {
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, nil, wrap(ctx, "locking", session, err)
		}
		// Held: say by whom, unless it was released meanwhile.
		var holder string
		var live bool
		err = s.pool.QueryRow(ctx, `SELECT holder, holder <> '' AND expires_at > clock_timestamp() FROM `+s.table("leases")+` WHERE session = $1`, session).Scan(&holder, &live)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, nil, wrap(ctx, "locking", session, err)
		}
		if (err == nil && live) || attempt == 2 {
			return 0, nil, &checkpoint.LockedError{Session: session, Holder: holder}
		}
	}
	l := s.hold(session, uint64(t), sent)
	return l.token, func() error { return s.release(l) }, nil
}

// lockSQL is the statement that takes a session's lease (its arguments:
// the session, this Store's holder name and the lease in microseconds): it
// returns the new token, or no row when the lease is live.
func (s *Store) lockSQL() string {
	return `
			INSERT INTO ` + s.table("leases") + ` AS l (session, holder, token, expires_at)
			VALUES ($1, $2,
				(SELECT coalesce(max(token), 0) + 1 FROM ` + s.table("checkpoints") + ` WHERE session = $1),
				clock_timestamp() + $3 * interval '1 microsecond')
			ON CONFLICT (session) DO UPDATE
				SET holder = excluded.holder, token = l.token + 1, expires_at = excluded.expires_at,
					acquired_at = clock_timestamp(), renewed_at = clock_timestamp()
				WHERE l.holder = '' OR l.expires_at <= clock_timestamp()
			RETURNING token`
}

// hold records the lease on session with token that this Store has just
// taken (its query sent at sent), and starts renewing it.
func (s *Store) hold(session string, token uint64, sent time.Time) *lease {
	l := &lease{session: session, token: token, lostChan: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	if s.locks == nil {
		s.locks = make(map[string]*lease)
	}
	if old := s.locks[session]; old != nil {
		old.lose() // expired and taken over by this Store itself
	}
	s.locks[session] = l
	s.mu.Unlock()
	go s.renewLoop(l, sent)
	return l
}

// LockLoad takes the session's lease, as [Store.Lock] does, and loads its
// newest checkpoint under it, as [Store.Load] does, in one round trip and
// one transaction: c is nil when the session has no checkpoint. The
// queries of also, if any, run in the same round trip and transaction,
// after the load, whether the lease was taken or not; their callbacks
// (set with their QueryRow, Query or Exec) are called with their results
// before LockLoad returns.
//
// A live lease gives a *[checkpoint.LockedError], as Lock does (then
// nothing is loaded). On any other error the lease is not held: given
// back if it was taken. The lease is held as one Lock took it: renewed
// until release is called (or [Store.SaveRelease] gives it back).
func (s *Store) LockLoad(ctx context.Context, session string, also ...*pgx.QueuedQuery) (token uint64, release func() error, c *checkpoint.Checkpoint, err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, nil, err
	}
	if err := checkpoint.ValidateSession(session); err != nil {
		return 0, nil, nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, nil, nil, wrap(ctx, "locking", session, err)
	}
	sent := time.Now() // a connection at hand: the lease starts after this
	var b pgx.Batch
	b.Queue(s.lockSQL(), session, s.holder, s.lease.Microseconds())
	// Loaded only under the lease just taken (or one this Store held
	// already, which Lock refuses): a session held elsewhere is not read.
	b.Queue(`SELECT `+envelopeColumns+`, engine, state FROM `+s.table("checkpoints")+`
		WHERE session = $1 AND EXISTS (SELECT 1 FROM `+s.table("leases")+`
			WHERE session = $1 AND holder = $2 AND expires_at > clock_timestamp())
		ORDER BY generation DESC LIMIT 1`, session, s.holder)
	b.QueuedQueries = append(b.QueuedQueries, also...)
	br := conn.SendBatch(ctx, &b)
	var t int64
	lockErr := br.QueryRow().Scan(&t)
	c = &checkpoint.Checkpoint{Session: session}
	var e envelope
	loadErr := br.QueryRow().Scan(append(e.dest(c), &c.Engine, &c.State)...)
	err = br.Close() // the callbacks of also
	releaseAfter(conn, len(c.Engine)+len(c.State))
	taken := lockErr == nil
	switch {
	case lockErr != nil && !errors.Is(lockErr, pgx.ErrNoRows):
		err = lockErr
	case loadErr != nil && !errors.Is(loadErr, pgx.ErrNoRows):
		err = loadErr
	}
	if err != nil {
		if taken {
			// Committed or not: given back either way.
			s.release(s.hold(session, uint64(t), sent))
		}
		return 0, nil, nil, wrap(ctx, "locking", session, err)
	}
	if !taken {
		// Held, or released meanwhile: as Lock and Load, apart.
		token, release, err = s.Lock(ctx, session)
		if err != nil {
			return 0, nil, nil, err
		}
		c, err = s.Load(ctx, session)
		if errors.Is(err, checkpoint.ErrNotFound) {
			return token, release, nil, nil
		}
		if err != nil {
			release()
			return 0, nil, nil, err
		}
		return token, release, c, nil
	}
	l := s.hold(session, uint64(t), sent)
	if errors.Is(loadErr, pgx.ErrNoRows) {
		c = nil
	} else {
		e.fill(c)
	}
	return l.token, func() error { return s.release(l) }, c, nil
}

// renewLoop renews l every renewal interval until it is released or lost.
// taken is when the query that took the lease was sent (a connection at
// hand: connecting may take long on a loaded host, but the lease starts
// only when the query runs).
//
// A renewal may take as long as the lease has left (by this host's clock,
// counted from when the last successful renewal was sent, which is no
// later than the server's count): one slowed down by a loaded server or
// host still counts. When none has succeeded for a whole lease, the lease
// may have run out and is counted lost.
func (s *Store) renewLoop(l *lease, taken time.Time) {
	defer close(l.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	ticker := time.NewTicker(s.renew)
	defer ticker.Stop()
	last := taken // when the last successful renewal (or the taking) was sent
	for {
		select {
		case <-l.stop:
			return
		case <-ticker.C:
		}
		rctx, rcancel := context.WithDeadline(ctx, last.Add(s.lease))
		sent, ok, err := s.renewOnce(rctx, l)
		rcancel()
		switch {
		case ctx.Err() != nil:
			return // released
		case err == nil && ok:
			last = sent
		case err == nil && !ok:
			if !l.isReleasing() {
				l.lose() // expired, released behind our back or taken over
			}
			return
		case time.Since(last) >= s.lease:
			// The lease may have run out while renewals failed.
			l.lose()
			return
		}
	}
}

// renewOnce extends l, reporting when the renewal was sent (once a
// connection was at hand) and whether the lease row was still l's and live.
func (s *Store) renewOnce(ctx context.Context, l *lease) (sent time.Time, ok bool, err error) {
	err = s.acquired(ctx, func(conn *pgxpool.Conn) error {
		sent = time.Now()
		tag, err := conn.Exec(ctx, `UPDATE `+s.table("leases")+`
			SET expires_at = clock_timestamp() + $4 * interval '1 microsecond', renewed_at = clock_timestamp()
			WHERE session = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp()`,
			l.session, s.holder, int64(l.token), s.lease.Microseconds())
		ok = tag.RowsAffected() == 1
		return err
	})
	return sent, ok && err == nil, err
}

// acquired calls f with a connection of the pool, released after.
func (s *Store) acquired(ctx context.Context, f func(*pgxpool.Conn) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return f(conn)
}

// release stops l's renewals and frees its lease row, keeping its token.
func (s *Store) release(l *lease) error {
	l.once.Do(func() {
		s.forget(l)
		ctx, cancel := context.WithTimeout(context.Background(), max(s.lease, 5*time.Second))
		defer cancel()
		_, err := s.pool.Exec(ctx, `UPDATE `+s.table("leases")+` SET holder = '', expires_at = clock_timestamp()
			WHERE session = $1 AND holder = $2 AND token = $3`, l.session, s.holder, int64(l.token))
		if err != nil {
			// The lease expires on its own.
			l.err = fmt.Errorf("pgcheckpoint: releasing session %q: %w", l.session, err)
		}
	})
	return l.err
}

// released forgets l, given back by a SaveRelease: its renewals stop and
// its release function does nothing more.
func (s *Store) released(l *lease) {
	l.once.Do(func() { s.forget(l) })
}

// forget stops l's renewals, counts it lost and drops it from the leases
// this Store holds: the first half of a release (the second frees its
// row).
func (s *Store) forget(l *lease) {
	close(l.stop)
	<-l.done
	l.lose()
	s.mu.Lock()
	if s.locks[l.session] == l {
		delete(s.locks, l.session)
	}
	s.mu.Unlock()
}

// Close releases every lease this Store still holds, as their release
// functions would, and returns their errors joined. The pool is not closed.
// The Store stays usable.
func (s *Store) Close() error {
	s.mu.Lock()
	held := make([]*lease, 0, len(s.locks))
	for _, l := range s.locks {
		held = append(held, l)
	}
	s.mu.Unlock()
	var errs []error
	for _, l := range held {
		errs = append(errs, s.release(l))
	}
	return errors.Join(errs...)
}
