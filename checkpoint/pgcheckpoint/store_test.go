package pgcheckpoint_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

// Lease settings of the tests: short enough that takeovers happen within a
// test, long enough that a loaded machine (the race detector, two cores
// shared) renews in time.
const testLease = 2 * time.Second

var leases = []pgcheckpoint.Option{pgcheckpoint.Lease(testLease), pgcheckpoint.Renew(testLease / 4)}

func TestNewOptions(t *testing.T) {
	pool := newPool(t)
	tests := []struct {
		name    string
		opts    []pgcheckpoint.Option
		wantErr string // "" for success
	}{
		{"defaults", nil, ""},
		{"nil_option", []pgcheckpoint.Option{nil}, ""},
		{"all_set", []pgcheckpoint.Option{pgcheckpoint.Keep(5), pgcheckpoint.Lease(time.Second), pgcheckpoint.Renew(200 * time.Millisecond), pgcheckpoint.Holder("worker-7")}, ""},
		{"empty_schema", []pgcheckpoint.Option{pgcheckpoint.Schema("")}, "empty schema name"},
		{"lease_too_short", []pgcheckpoint.Option{pgcheckpoint.Lease(time.Microsecond)}, "shorter than 100ms"},
		{"renew_not_positive", []pgcheckpoint.Option{pgcheckpoint.Renew(0)}, "not positive"},
		{"renew_not_below_lease", []pgcheckpoint.Option{pgcheckpoint.Lease(time.Second), pgcheckpoint.Renew(time.Second)}, "not shorter than the lease"},
		{"errors_joined", []pgcheckpoint.Option{pgcheckpoint.Schema(""), pgcheckpoint.Renew(-1)}, "empty schema name\npgcheckpoint: renewal interval -1ns is not positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]pgcheckpoint.Option{pgcheckpoint.Schema(newSchema(t, pool))}, tc.opts...)
			s, err := pgcheckpoint.New(context.Background(), pool, opts...)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				s.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New: got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if _, err := pgcheckpoint.New(context.Background(), nil); err == nil {
		t.Error("New with a nil pool succeeded")
	}
}

func TestHolderName(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	a := openStore(t, pool, schema, pgcheckpoint.Holder("worker-7"))
	b := openStore(t, pool, schema, pgcheckpoint.Holder("worker-7"))
	if !strings.HasPrefix(a.HolderName(), "worker-7 #") {
		t.Errorf("HolderName = %q, want it to start with %q", a.HolderName(), "worker-7 #")
	}
	if a.HolderName() == b.HolderName() {
		t.Errorf("two stores share the holder name %q", a.HolderName())
	}
}

// TestConcurrentMigration: stores starting at once, on two pools, all
// succeed and migrate the schema once; starting again changes nothing; a
// schema newer than the package is refused.
func TestConcurrentMigration(t *testing.T) {
	pools := []*pgxpool.Pool{newPool(t), newPool(t)}
	schema := newSchema(t, pools[0])
	const starters = 8
	errs := make(chan error, starters)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range starters {
		wg.Go(func() {
			<-start
			s, err := pgcheckpoint.New(context.Background(), pools[i%2], pgcheckpoint.Schema(schema))
			if err == nil {
				err = s.Save(context.Background(), checkpointtest.Checkpoint(fmt.Sprint("starter-", i), 1))
			}
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a store starting at the same time as others: %v", err)
		}
	}
	versions := func() []int {
		rows, err := pools[0].Query(context.Background(), `SELECT version FROM `+pgx.Identifier{schema, "schema_version"}.Sanitize()+` ORDER BY version`)
		if err != nil {
			t.Fatal(err)
		}
		v, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var want []int
	for v := 1; v <= pgcheckpoint.SchemaVersion; v++ {
		want = append(want, v)
	}
	if diff := cmp.Diff(want, versions()); diff != "" {
		t.Errorf("schema versions after concurrent starts (-want +got):\n%s", diff)
	}
	s := openStore(t, pools[1], schema)
	if diff := cmp.Diff(want, versions()); diff != "" {
		t.Errorf("schema versions after starting again (-want +got):\n%s", diff)
	}
	if _, err := s.Load(context.Background(), "starter-3"); err != nil {
		t.Errorf("Load after starting again: %v", err)
	}

	if _, err := pools[0].Exec(context.Background(), `INSERT INTO `+pgx.Identifier{schema, "schema_version"}.Sanitize()+` (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	_, err := pgcheckpoint.New(context.Background(), pools[0], pgcheckpoint.Schema(schema))
	if err == nil || !strings.Contains(err.Error(), "version 99, newer") {
		t.Errorf("New on a schema of version 99: got error %v, want one saying it is newer", err)
	}
}

// TestLockRace: stores on several pools racing for one session: exactly one
// wins; the others get a *LockedError naming it.
func TestLockRace(t *testing.T) {
	pools := []*pgxpool.Pool{newPool(t), newPool(t), newPool(t)}
	schema := newSchema(t, pools[0])
	const racers = 6
	stores := make([]*pgcheckpoint.Store, racers)
	for i := range stores {
		stores[i] = openStore(t, pools[i%len(pools)], schema, leases...)
	}
	for round := range 5 {
		session := fmt.Sprint("contended-", round)
		type result struct {
			i       int
			token   uint64
			release func() error
			err     error
		}
		results := make(chan result, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				<-start
				token, release, err := s.Lock(context.Background(), session)
				results <- result{i, token, release, err}
			})
		}
		close(start)
		wg.Wait()
		close(results)
		var winners []result
		var locked []*checkpoint.LockedError
		for r := range results {
			var le *checkpoint.LockedError
			switch {
			case r.err == nil:
				winners = append(winners, r)
			case errors.As(r.err, &le):
				locked = append(locked, le)
			default:
				t.Errorf("round %d: Lock: %v", round, r.err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d stores got the lock, want exactly 1", round, len(winners))
		}
		w := winners[0]
		if w.token != 1 {
			t.Errorf("round %d: first token %d, want 1", round, w.token)
		}
		for _, le := range locked {
			if le.Session != session || le.Holder != stores[w.i].HolderName() {
				t.Errorf("round %d: LockedError{Session: %q, Holder: %q}, want {%q, %q}", round, le.Session, le.Holder, session, stores[w.i].HolderName())
			}
		}
		c := checkpointtest.Checkpoint(session, 1)
		c.Token = w.token
		if err := stores[w.i].Save(context.Background(), c); err != nil {
			t.Errorf("round %d: the winner's Save: %v", round, err)
		}
		for i, s := range stores {
			if i != w.i {
				if err := s.Save(context.Background(), c); !errors.Is(err, checkpoint.ErrFenced) {
					t.Errorf("round %d: a loser's Save with the winner's token: got %v, want ErrFenced", round, err)
				}
			}
		}
		if err := w.release(); err != nil {
			t.Errorf("round %d: release: %v", round, err)
		}
	}
}

// countGens returns the generations stored for session, ascending.
func countGens(t *testing.T, pool *pgxpool.Pool, schema, session string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT generation FROM `+pgx.Identifier{schema, "checkpoints"}.Sanitize()+` WHERE session = $1 ORDER BY generation`, session)
	if err != nil {
		t.Fatal(err)
	}
	gens, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return gens
}

// TestLeaseTakeover: once a holder's lease runs out, another store takes
// the session over with a higher token, resumes from the last checkpoint,
// and the old holder's saves are refused.
func TestLeaseTakeover(t *testing.T) {
	tests := []struct {
		name string
		// lose makes the old holder lose its lease, as if paused or cut off.
		lose func(t *testing.T, old *pgcheckpoint.Store, oldPool, other *pgxpool.Pool, schema, session string)
	}{
		{"lease_expired", func(t *testing.T, _ *pgcheckpoint.Store, _, other *pgxpool.Pool, schema, session string) {
			// What a paused holder's lease comes to: expired, unrenewed.
			if _, err := other.Exec(context.Background(), `UPDATE `+pgx.Identifier{schema, "leases"}.Sanitize()+` SET expires_at = clock_timestamp() WHERE session = $1`, session); err != nil {
				t.Fatal(err)
			}
		}},
		{"connection_lost", func(t *testing.T, _ *pgcheckpoint.Store, oldPool, _ *pgxpool.Pool, _, _ string) {
			// The holder can no longer reach the database: its renewals
			// fail and its lease runs out on its own.
			oldPool.Close()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			oldPool, newPoolB := newPool(t), newPool(t)
			schema := newSchema(t, newPoolB)
			old := openStore(t, oldPool, schema, leases...)
			b := openStore(t, newPoolB, schema, leases...)
			const session = "taken-over"

			oldToken, oldRelease, err := old.Lock(ctx, session)
			if err != nil {
				t.Fatal(err)
			}
			last := checkpointtest.Checkpoint(session, 2)
			last.Token = oldToken
			for _, c := range []*checkpoint.Checkpoint{checkpointtest.Checkpoint(session, 1), last} {
				c.Token = oldToken
				if err := old.Save(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			// Renewals keep the lease past its length.
			deadline := time.Now().Add(testLease * 3 / 2)
			for time.Now().Before(deadline) {
				var le *checkpoint.LockedError
				if _, _, err := b.Lock(ctx, session); !errors.As(err, &le) || le.Holder != old.HolderName() {
					t.Fatalf("Lock of a held, renewed session: got %v, want a LockedError naming %q", err, old.HolderName())
				}
				time.Sleep(50 * time.Millisecond)
			}

			tc.lose(t, old, oldPool, newPoolB, schema, session)
			var newToken uint64
			var release func() error
			eventually(t, 10*time.Second, "the session was not taken over", func() bool {
				newToken, release, err = b.Lock(ctx, session)
				if err != nil && !errors.Is(err, checkpoint.ErrLocked) {
					t.Fatal(err)
				}
				return err == nil
			})
			defer release()
			if newToken <= oldToken {
				t.Errorf("token after takeover %d, want above the old holder's %d", newToken, oldToken)
			}
			got, err := b.Load(ctx, session)
			if err != nil {
				t.Fatal(err)
			}
			if diff := checkpointtest.Diff(last, got); diff != "" {
				t.Errorf("the new holder resumes from (-want the old holder's last save +got):\n%s", diff)
			}

			stale := checkpointtest.Checkpoint(session, 3)
			stale.Token = oldToken
			// A holder cut off from the database fails to save until it
			// counts its lease lost (renewals failing for a lease's
			// length); from then on, and at once for the others, its saves
			// are refused.
			var fe *checkpoint.FencedError
			eventually(t, 10*time.Second, "the old holder's saves are not fenced", func() bool {
				err = old.Save(ctx, stale)
				if err == nil {
					t.Fatal("the old holder's Save after the takeover succeeded")
				}
				return errors.As(err, &fe)
			})
			if fe.Token != oldToken || fe.Session != session {
				t.Fatalf("the old holder's Save after the takeover: got %v, want a *FencedError with token %d", err, oldToken)
			}
			if fe.Current != 0 && fe.Current != newToken {
				t.Errorf("FencedError.Current = %d, want %d", fe.Current, newToken)
			}
			if got := countGens(t, newPoolB, schema, session); !cmp.Equal(got, []int64{1, 2}) {
				t.Errorf("generations after the refused save: %v, want [1 2]", got)
			}
			next := checkpointtest.Checkpoint(session, 3)
			next.Token = newToken
			if err := b.Save(ctx, next); err != nil {
				t.Errorf("the new holder's Save: %v", err)
			}
			if err := oldRelease(); tc.name == "lease_expired" && err != nil {
				t.Errorf("the old holder's release: %v", err)
			}
			// The old holder's release leaves the new holder's lease alone.
			var le *checkpoint.LockedError
			if _, _, err := old.Lock(ctx, session); tc.name == "lease_expired" && !errors.As(err, &le) {
				t.Errorf("Lock after the old holder's release: got %v, want a LockedError", err)
			}
		})
	}
}

// TestInterruptedSave: a save whose backend is terminated, whose
// connection is closed, or whose context is cancelled between writing its
// generation and committing leaves nothing: the previous generation is
// loaded, and the next save works. The save is stalled there (pg_sleep in
// its pipeline, queued by the test hook) until the interruption.
func TestInterruptedSave(t *testing.T) {
	tests := []struct {
		name string
		// interrupt interrupts the stalled save of the backend pid.
		interrupt func(ctx context.Context, pid uint32, other *pgxpool.Pool, p *proxy, cancel context.CancelFunc) error
	}{
		{"backend_terminated", func(ctx context.Context, pid uint32, other *pgxpool.Pool, _ *proxy, _ context.CancelFunc) error {
			var ok bool
			if err := other.QueryRow(ctx, `SELECT pg_terminate_backend($1, 5000)`, int32(pid)).Scan(&ok); err != nil || !ok {
				return fmt.Errorf("terminating backend %d: %v, %v", pid, ok, err)
			}
			return nil
		}},
		{"connection_closed", func(_ context.Context, _ uint32, _ *pgxpool.Pool, p *proxy, _ context.CancelFunc) error {
			// No new connection gets through either, so that the
			// server is not sent a cancel request (which pgx sends on
			// its own): it must notice the lost client by itself.
			p.refuse(true)
			p.cut()
			return nil
		}},
		{"context_cancelled", func(_ context.Context, _ uint32, _ *pgxpool.Pool, _ *proxy, cancel context.CancelFunc) error {
			cancel()
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			other := newPool(t)
			p := newProxy(t)
			pool := p.pool(t)
			schema := newSchema(t, other)
			s := openStore(t, pool, schema, leases...)
			const session = "interrupted"
			token, release, err := s.Lock(context.Background(), session)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			first := checkpointtest.Checkpoint(session, 1)
			first.Token = token
			if err := s.Save(context.Background(), first); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			interrupted := make(chan error, 1)
			pgcheckpoint.SetSaveHook(s, func(_ context.Context, conn *pgx.Conn, b *pgx.Batch) {
				pid := conn.PgConn().PID()
				b.Queue(`SELECT pg_sleep(30)`)
				go func() {
					interrupted <- func() error {
						if err := awaitSleep(other, pid); err != nil {
							return err
						}
						return tc.interrupt(context.Background(), pid, other, p, cancel)
					}()
				}()
			})
			second := checkpointtest.Checkpoint(session, 2)
			second.Token = token
			second.State = make([]byte, 1<<20)
			err = s.Save(ctx, second)
			pgcheckpoint.SetSaveHook(s, nil)
			if err := <-interrupted; err != nil {
				t.Fatal(err)
			}
			if err == nil {
				t.Fatal("the interrupted Save succeeded")
			}
			if errors.Is(err, checkpoint.ErrFenced) {
				t.Fatalf("the interrupted Save was fenced: %v", err)
			}
			t.Logf("interrupted Save: %v", err)
			// The server rolls the save back once it notices (a cancel
			// request pgx sends, or, the connection lost, within a
			// second): until then the save's uncommitted row would hold
			// up the next one.
			eventually(t, 10*time.Second, "the interrupted save's backend is still running", func() bool {
				var n int
				if err := other.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%' AND datname = current_database()`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n == 0
			})
			p.refuse(false)
			got, err := s.Load(context.Background(), session)
			if err != nil {
				t.Fatal(err)
			}
			if diff := checkpointtest.Diff(first, got); diff != "" {
				t.Errorf("after the interrupted save, Load (-want the previous generation +got):\n%s", diff)
			}
			if gens := countGens(t, other, schema, session); !cmp.Equal(gens, []int64{1}) {
				t.Errorf("generations stored: %v, want [1]", gens)
			}
			// Resume: the lease is still held and the next save goes in.
			second.State = []byte("resumed")
			if err := s.Save(context.Background(), second); err != nil {
				t.Fatalf("Save after the interrupted one: %v", err)
			}
			if got, err := s.Load(context.Background(), session); err != nil || got.Generation != 2 || string(got.State) != "resumed" {
				t.Errorf("Load after the next save: generation %v, state %q, %v; want generation 2, state \"resumed\"", got.Generation, got.State, err)
			}
		})
	}
}

// awaitSleep waits until the backend pid runs pg_sleep (a save stalled by
// the test hook), for at most 30s.
func awaitSleep(pool *pgxpool.Pool, pid uint32) error {
	end := time.Now().Add(30 * time.Second)
	for {
		var sleeping bool
		err := pool.QueryRow(context.Background(), `SELECT coalesce(bool_or(wait_event = 'PgSleep'), false) FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&sleeping)
		if err != nil {
			return err
		}
		if sleeping {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("backend %d did not reach pg_sleep within 30s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRetention(t *testing.T) {
	pool := newPool(t)
	for _, keep := range []int{1, 3, 5} {
		t.Run(fmt.Sprint("keep_", keep), func(t *testing.T) {
			schema := newSchema(t, pool)
			s := openStore(t, pool, schema, pgcheckpoint.Keep(keep))
			for gen := uint64(1); gen <= 10; gen++ {
				if err := s.Save(context.Background(), checkpointtest.Checkpoint("kept", gen)); err != nil {
					t.Fatal(err)
				}
				// A second session is pruned on its own.
				if gen <= 2 {
					if err := s.Save(context.Background(), checkpointtest.Checkpoint("other", gen)); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A jump in generations: the last Keep saves are kept, not the
			// generations within Keep of the newest.
			if err := s.Save(context.Background(), checkpointtest.Checkpoint("kept", 100)); err != nil {
				t.Fatal(err)
			}
			all := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100}
			want := all[len(all)-keep:]
			if diff := cmp.Diff(want, countGens(t, pool, schema, "kept")); diff != "" {
				t.Errorf("generations kept (-want +got):\n%s", diff)
			}
			if got := countGens(t, pool, schema, "other"); len(got) != min(2, keep) {
				t.Errorf("the other session kept %v, want the last %d of [1 2]", got, min(2, keep))
			}
		})
	}
	if _, err := pgcheckpoint.New(context.Background(), pool, pgcheckpoint.Schema(newSchema(t, pool)), pgcheckpoint.Keep(0)); err != nil {
		t.Errorf("Keep(0) (taken as 1): %v", err)
	}
}

func TestStatus(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if got, err := s.Status(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Status of an empty store: %v, %v; want none", got, err)
	}
	// "alpha": two saves, no lease; "beta": held, saved with its token;
	// "gamma": held, never saved; "delta": held once, released.
	for gen := uint64(1); gen <= 2; gen++ {
		if err := s.Save(ctx, checkpointtest.Checkpoint("alpha", gen)); err != nil {
			t.Fatal(err)
		}
	}
	betaToken, releaseBeta, err := s.Lock(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseBeta()
	beta := checkpointtest.Checkpoint("beta", 7)
	beta.Token = betaToken
	beta.Status = "running"
	if err := s.Save(ctx, beta); err != nil {
		t.Fatal(err)
	}
	_, releaseGamma, err := s.Lock(ctx, "gamma")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseGamma()
	_, releaseDelta, err := s.Lock(ctx, "delta")
	if err != nil {
		t.Fatal(err)
	}
	releaseDelta()

	before := time.Now()
	got, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	alpha := checkpointtest.Checkpoint("alpha", 2)
	want := []pgcheckpoint.Session{
		{Name: "alpha", Status: alpha.Status, Reason: alpha.Reason, Iteration: 2, Generation: 2, Saved: alpha.Time},
		{Name: "beta", Status: "running", Reason: beta.Reason, Iteration: 7, Generation: 7, Saved: beta.Time, Holder: s.HolderName(), Token: betaToken},
		{Name: "delta", Token: 1},
		{Name: "gamma", Holder: s.HolderName(), Token: 1},
	}
	opts := cmp.Options{
		cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		cmpopts.IgnoreFields(pgcheckpoint.Session{}, "Updated", "Expires"),
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	for _, x := range got {
		if hasCkpt := x.Generation != 0; hasCkpt == x.Updated.IsZero() {
			t.Errorf("%s: Updated = %v with generation %d", x.Name, x.Updated, x.Generation)
		}
		if held := x.Holder != ""; held == x.Expires.IsZero() || (held && x.Expires.Before(before)) {
			t.Errorf("%s: Expires = %v with holder %q", x.Name, x.Expires, x.Holder)
		}
	}
}

// TestTimePrecision: times keep their nanoseconds and instant, whatever
// their location; the zero time round-trips.
func TestTimePrecision(t *testing.T) {
	s := newStore(t)
	for i, tm := range []time.Time{
		{},
		time.Date(2026, 11, 23, 19, 0, 0, 999_999_999, time.FixedZone("X", -7*3600)),
		time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC),
		time.Unix(0, 0),
	} {
		c := checkpointtest.Checkpoint(fmt.Sprint("time-", i), 1)
		c.Time = tm
		if err := s.Save(context.Background(), c); err != nil {
			t.Fatalf("Save with time %v: %v", tm, err)
		}
		got, err := s.Load(context.Background(), c.Session)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Time.Equal(tm) || got.Time.Location() != time.UTC {
			t.Errorf("time %v came back as %v", tm, got.Time)
		}
	}
}

// TestExample runs the code of Example against the test server.
func TestExample(t *testing.T) {
	pool := newPool(t)
	if err := runExample(context.Background(), serverURL(t), newSchema(t, pool)); err != nil {
		t.Fatal(err)
	}
}
