package pgcheckpoint_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

// leaseRow reads the session's lease row: its holder, token and expiry.
func leaseRow(t testing.TB, pool *pgxpool.Pool, schema, session string) (holder string, token int64, expires time.Time) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT holder, token, expires_at FROM `+pgx.Identifier{schema, "leases"}.Sanitize()+` WHERE session = $1`, session).
		Scan(&holder, &token, &expires)
	if err != nil {
		t.Fatal(err)
	}
	return holder, token, expires
}

// checkHeld fails t unless the session's lease is live and held by s with
// token, as another store sees it.
func checkHeld(t *testing.T, s, other *pgcheckpoint.Store, session string, token uint64) {
	t.Helper()
	var le *checkpoint.LockedError
	if _, _, err := other.Lock(context.Background(), session); !errors.As(err, &le) || le.Holder != s.HolderName() {
		t.Errorf("Lock by another store: got %v, want a LockedError naming %q", err, s.HolderName())
	}
	next := checkpointtest.Checkpoint(session, 100)
	next.Token = token
	if err := s.Save(context.Background(), next); err != nil {
		t.Errorf("the holder's next Save: %v", err)
	}
}

// TestLongSave: a save that outlasts its lease (a 16 MiB state, whose
// deadline is the lease and 4s, stalled on the server, in its transaction,
// for the lease and 0.5s after writing its generation) is not fenced, and the
// lease stays held: it is renewed while the save runs. The lease is 6s,
// renewed every 1.5s: on a loaded 2-core machine a process (or the server)
// may not run for a second or two (a first renewal 4.6s late was seen),
// and a process that does not run cannot renew a 2s lease, whatever the
// store does. (A host so starved that it writes below the pace a save's
// deadline allows, 4 MiB/s, misses the deadline, as it should.)
// Were the lease row locked before the write (as a save once did, FOR
// UPDATE for its whole transaction), renewals would wait behind the save,
// the lease would run out and the save would be fenced.
func TestLongSave(t *testing.T) {
	const lease = 6 * time.Second
	opts := []pgcheckpoint.Option{pgcheckpoint.Lease(lease), pgcheckpoint.Renew(lease / 4)}
	other, schema, s, b, token := heldStores(t, "long", opts, opts)
	ctx := context.Background()
	const session = "long"
	var err error

	stall := lease + lease/12
	pgcheckpoint.SetSaveHook(s, func(_ context.Context, _ *pgx.Conn, b *pgx.Batch) {
		b.Queue(fmt.Sprintf(`SELECT pg_sleep(%f)`, stall.Seconds()))
	})
	defer pgcheckpoint.SetSaveHook(s, nil)
	c := checkpointtest.Checkpoint(session, 1)
	c.Token = token
	c.State = make([]byte, 16<<20)
	_, _, expiresBefore := leaseRow(t, other, schema, session)
	start := time.Now()
	err = s.Save(ctx, c)
	took := time.Since(start)
	pgcheckpoint.SetSaveHook(s, nil)
	if err != nil {
		t.Fatalf("a save of %v under a lease of %v: %v", took, lease, err)
	}
	if took < stall {
		t.Fatalf("the save took %v, less than its stall of %v", took, stall)
	}
	holder, _, expires := leaseRow(t, other, schema, session)
	if holder != s.HolderName() || !expires.After(expiresBefore.Add(stall-lease/2)) {
		t.Errorf("after the save, the lease row names %q until %v (before the save: until %v); want %q, renewed during the save", holder, expires, expiresBefore, s.HolderName())
	}
	checkHeld(t, s, b, session, token)
}

// TestLargeSave: a 100 MB state saved under a 2s lease is saved whole, not
// fenced, and the lease stays held.
//
// Under the race detector, the lease is 10s: there, copying 100 MB (pgx
// copies a parameter twice on its way) and collecting it stalls the test
// process itself, for more than 2s on a loaded 2-core machine (a GC mark
// phase of 2.7s was measured, the other core busy copying), and a process
// that does not run cannot renew a lease, whatever the store does.
// TestLongSave shows, with 2s under the race detector too, that a save
// outlasting its lease keeps it.
func TestLargeSave(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100 MB save")
	}
	opts := leases
	if raceEnabled {
		opts = []pgcheckpoint.Option{pgcheckpoint.Lease(10 * time.Second), pgcheckpoint.Renew(testLease / 4)}
	}
	_, _, s, b, token := heldStores(t, "large", opts, opts)
	ctx := context.Background()
	const session = "large"
	var err error
	c := checkpointtest.Checkpoint(session, 1)
	c.Token = token
	c.State = make([]byte, 100<<20)
	rand.Read(c.State)
	start := time.Now()
	if err := s.Save(ctx, c); err != nil {
		t.Fatalf("a save of 100 MB, after %v: %v", time.Since(start), err)
	}
	t.Logf("a 100 MB save took %v (race detector: %v)", time.Since(start).Round(time.Millisecond), raceEnabled)
	got, err := s.Load(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.State, c.State) {
		t.Errorf("the 100 MB state loaded (%d bytes) differs from the one saved", len(got.State))
	}
	got.State, c.State = nil, nil
	if diff := checkpointtest.Diff(c, got); diff != "" {
		t.Errorf("Load (-saved +loaded):\n%s", diff)
	}
	checkHeld(t, s, b, session, token)
}

// TestTakeoverDuringSave: a lease taken over while a save of its old
// holder is on its way (stalled on the server after writing its
// generation) fences that save when it reaches its end: it stores nothing,
// and the new holder loads what was there before. Without the fencing
// check at the end of the save's transaction, the old holder's generation
// would land after the takeover.
func TestTakeoverDuringSave(t *testing.T) {
	// Renewals rare enough that the old holder does not notice the
	// takeover on its own before its save ends.
	other, schema, s, b, token := heldStores(t, "contested",
		[]pgcheckpoint.Option{pgcheckpoint.Lease(10 * time.Second), pgcheckpoint.Renew(9 * time.Second)}, leases)
	ctx := context.Background()
	const session = "contested"
	var err error
	first := checkpointtest.Checkpoint(session, 1)
	first.Token = token
	if err := s.Save(ctx, first); err != nil {
		t.Fatal(err)
	}

	var newToken uint64
	taken := make(chan error, 1)
	pgcheckpoint.SetSaveHook(s, func(_ context.Context, conn *pgx.Conn, batch *pgx.Batch) {
		pid := conn.PgConn().PID()
		batch.Queue(`SELECT pg_sleep(1)`)
		go func() {
			taken <- func() error {
				if err := awaitSleep(other, pid); err != nil {
					return err
				}
				// The old holder's lease runs out (as when paused), and b
				// takes the session over.
				if _, err := other.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "leases"}.Sanitize()+` SET expires_at = clock_timestamp() WHERE session = $1`, session); err != nil {
					return err
				}
				var err error
				newToken, _, err = b.Lock(ctx, session)
				return err
			}()
		}()
	})
	second := checkpointtest.Checkpoint(session, 2)
	second.Token = token
	err = s.Save(ctx, second)
	pgcheckpoint.SetSaveHook(s, nil)
	if err := <-taken; err != nil {
		t.Fatalf("taking the session over during the save: %v", err)
	}
	var fe *checkpoint.FencedError
	if !errors.As(err, &fe) || fe.Token != token || fe.Current != newToken {
		t.Fatalf("the old holder's Save, its lease taken over meanwhile: got %v, want a *FencedError with token %d, current %d", err, token, newToken)
	}
	if gens := countGens(t, other, schema, session); !cmp.Equal(gens, []int64{1}) {
		t.Errorf("generations stored: %v, want [1]", gens)
	}
	got, err := b.Load(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if diff := checkpointtest.Diff(first, got); diff != "" {
		t.Errorf("the new holder loads (-want the old holder's first save +got):\n%s", diff)
	}
	// The old holder knows it lost the lease: its next saves are refused
	// at once.
	if err := s.Save(ctx, second); !errors.Is(err, checkpoint.ErrFenced) {
		t.Errorf("the old holder's next Save: got %v, want ErrFenced", err)
	}
}

// TestFrozenConnection: a connection that stops forwarding (a proxy that
// holds every byte, the connections open) cannot hold a save past about
// its lease: the save returns an error, matching context.DeadlineExceeded
// for a save without a lease, and, for a fenced one, either that or a
// *FencedError (the lease, no longer renewed, counted lost); a later save
// through the thawed connection works.
func TestFrozenConnection(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		name := "unfenced"
		if fenced {
			name = "fenced"
		}
		t.Run(name, func(t *testing.T) {
			other := newPool(t)
			p := newProxy(t)
			pool := p.pool(t)
			schema := newSchema(t, other)
			s := openStore(t, pool, schema, leases...)
			ctx := context.Background()
			const session = "frozen"
			c := checkpointtest.Checkpoint(session, 1)
			if fenced {
				token, release, err := s.Lock(ctx, session)
				if err != nil {
					t.Fatal(err)
				}
				defer release()
				c.Token = token
			}
			if err := s.Save(ctx, c); err != nil {
				t.Fatal(err)
			}

			p.freeze()
			start := time.Now()
			c.Generation = 2
			err := s.Save(ctx, c)
			took := time.Since(start)
			p.thaw()
			t.Logf("the save on a frozen connection returned after %v: %v", took.Round(time.Millisecond), err)
			switch {
			case err == nil:
				t.Fatal("a save on a frozen connection succeeded")
			case errors.Is(err, context.DeadlineExceeded):
			case fenced && errors.Is(err, checkpoint.ErrFenced):
			default:
				t.Errorf("the save on a frozen connection: got %v, want a deadline error", err)
			}
			if limit := testLease + 2*time.Second; took > limit {
				t.Errorf("the save on a frozen connection returned after %v, beyond %v (the lease, %v, and a margin)", took, limit, testLease)
			}

			// Thawed, the store works again (the frozen connection was
			// dropped).
			c.Token = 0
			c.Generation = 3
			if err := s.Save(ctx, c); err != nil {
				t.Errorf("a save after the thaw: %v", err)
			}
		})
	}
}

// TestServerWait: a save that waits on the server (for a lock another
// transaction holds) returns an error matching context.DeadlineExceeded
// after about its lease, and the lease, renewed meanwhile, is still held.
func TestServerWait(t *testing.T) {
	other, schema, s, b, token := heldStores(t, "waiting", leases, leases)
	ctx := context.Background()
	const session = "waiting"
	var err error
	c := checkpointtest.Checkpoint(session, 1)
	c.Token = token
	if err := s.Save(ctx, c); err != nil {
		t.Fatal(err)
	}

	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{schema, "checkpoints"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.Generation = 2
	err = s.Save(ctx, c)
	took := time.Since(start)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("the save waiting on a lock returned after %v: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a save waiting on a lock: got %v, want a deadline error", err)
	}
	if took < testLease/2 || took > testLease+2*time.Second {
		t.Errorf("a save waiting on a lock returned after %v, want about the lease, %v", took, testLease)
	}
	checkHeld(t, s, b, session, token)
}

// TestServerWaitEnds: a save that waits on the server for a lock
// (another transaction holds it) stops waiting on the server about its
// deadline, the lock still held: its backend is no longer waiting a few
// seconds after the save returned, and the save is not stored. The save
// runs on a connection that saved before (idle connections are taken last
// in, first out), whose saves set their settings in their insert, no
// statement of their own (issue 30). Two cases:
//
//   - row_lock: a row lock, waited for after the insert, the network
//     frozen as the save waits (the end of its connection not delivered
//     either). Rule: no row lock is waited for beyond a save's deadline,
//     by the server's clock (lock_timeout). (Mutation caught: lock_timeout
//     left out of saveSettings: the backend waits as long as the lock is
//     held, the client connection check seeing a connection the network
//     holds open.)
//   - table_lock: the checkpoints table's lock (LOCK TABLE), waited for as
//     the insert is bound, before it can set anything; new connections
//     refused as the save waits, so that the server gets no cancel
//     request (which pgx sends on its own as it gives up), and the
//     connection cut once the save returned (pgx would close it only
//     once the server answers, or after 15s): the server must notice by
//     itself that its client is gone. Rule: a save whose
//     client is gone is rolled back within a second, whatever it waits
//     for (client_connection_check_interval, for the connection's
//     session). (Mutation caught: the check set for the transaction only:
//     the backend waits as long as the table is locked.)
func TestServerWaitEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frozen bool // else new connections are refused
		// lock takes the lock in tx; wait queues the save's wait for it.
		lock func(tx pgx.Tx, schema string) error
		wait func(b *pgx.Batch, schema string)
	}{
		{"row_lock", true, func(tx pgx.Tx, schema string) error {
			_, err := tx.Exec(context.Background(), `SELECT x FROM `+pgx.Identifier{schema, "waitrow"}.Sanitize()+` FOR UPDATE`)
			return err
		}, func(b *pgx.Batch, schema string) {
			b.Queue(`SELECT x FROM ` + pgx.Identifier{schema, "waitrow"}.Sanitize() + ` FOR UPDATE`)
		}},
		{"table_lock", false, func(tx pgx.Tx, schema string) error {
			_, err := tx.Exec(context.Background(), `LOCK TABLE `+pgx.Identifier{schema, "checkpoints"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`)
			return err
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := newPool(t)
			p := newProxy(t)
			pool := p.pool(t)
			schema := newSchema(t, other)
			s := openStore(t, pool, schema, leases...)
			ctx := context.Background()
			row := pgx.Identifier{schema, "waitrow"}.Sanitize()
			if _, err := other.Exec(ctx, `CREATE TABLE `+row+` (x int); INSERT INTO `+row+` VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			const session = "waiting"
			c := checkpointtest.Checkpoint(session, 1)
			for range 2 {
				c.Generation++
				if err := s.Save(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := other.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if err := tc.lock(tx, schema); err != nil {
				t.Fatal(err)
			}
			var pid uint32
			var check string
			waiting := make(chan error, 1)
			pgcheckpoint.SetSaveHook(s, func(ctx context.Context, conn *pgx.Conn, b *pgx.Batch) {
				pid = conn.PgConn().PID()
				conn.QueryRow(ctx, `SELECT current_setting('client_connection_check_interval', true)`).Scan(&check)
				if tc.wait != nil {
					tc.wait(b, schema)
				}
				go func() {
					waiting <- func() error {
						if err := awaitWait(other, pid, "Lock"); err != nil {
							return err
						}
						if tc.frozen {
							p.freeze()
						} else {
							p.refuse(true)
						}
						return nil
					}()
				}()
			})
			c.Generation++
			start := time.Now()
			err = s.Save(ctx, c)
			took := time.Since(start)
			pgcheckpoint.SetSaveHook(s, nil)
			if err := <-waiting; err != nil {
				t.Fatal(err)
			}
			t.Logf("the save waiting on a lock returned after %v: %v", took.Round(time.Millisecond), err)
			if check != "1s" {
				t.Errorf("the connection's client_connection_check_interval before the save: %q, want 1s (set by its earlier saves)", check)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want a deadline error", err)
			}
			if !tc.frozen {
				p.cut()
			}
			eventually(t, 5*time.Second, "the save's backend still waits for the lock after its deadline", func() bool {
				var waits bool
				err := other.QueryRow(ctx, `SELECT coalesce(bool_or(wait_event_type = 'Lock'), false) FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&waits)
				if err != nil {
					t.Fatal(err)
				}
				return !waits
			})
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			p.thaw()
			p.refuse(false)
			if gens := countGens(t, other, schema, session); slices.Contains(gens, int64(c.Generation)) {
				t.Errorf("the save given up was stored: generations %v", gens)
			}
		})
	}
}

// awaitWait waits until the backend pid waits for an event of the type,
// for at most 30s.
func awaitWait(pool *pgxpool.Pool, pid uint32, typ string) error {
	end := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		err := pool.QueryRow(context.Background(), `SELECT coalesce(bool_or(wait_event_type = $2), false) FROM pg_stat_activity WHERE pid = $1`, int32(pid), typ).Scan(&waiting)
		if err != nil {
			return err
		}
		if waiting {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("backend %d did not wait for %s within 30s", pid, typ)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// heldStores opens two stores on a schema of the test's own, each on a pool
// of its own: s, with holderOpts, holding session's lease (token) until the
// test ends, and b, with otherOpts; other is b's pool.
func heldStores(t *testing.T, session string, holderOpts, otherOpts []pgcheckpoint.Option) (other *pgxpool.Pool, schema string, s, b *pgcheckpoint.Store, token uint64) {
	t.Helper()
	pool := newPool(t)
	other = newPool(t)
	schema = newSchema(t, pool)
	s = openStore(t, pool, schema, holderOpts...)
	b = openStore(t, other, schema, otherOpts...)
	token, release, err := s.Lock(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	return other, schema, s, b, token
}
