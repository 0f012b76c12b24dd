package pgcheckpoint_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

// echo is a query for LockLoad's also: it reads back its argument into
// *got.
func echo(arg string, got *string) *pgx.QueuedQuery {
	q := &pgx.QueuedQuery{SQL: `SELECT $1::text`, Arguments: []any{arg}}
	q.QueryRow(func(row pgx.Row) error { return row.Scan(got) })
	return q
}

// Rule: LockLoad is Lock then Load in one round trip: the lease taken
// (the next token, held and renewed by the Store as Lock's: its saves
// pass the fence), the newest checkpoint loaded under it (nil for none),
// the caller's queries run beside; a live lease is a *LockedError; a
// failure of the caller's query leaves the lease free. (Mutations
// checked: the lease not recorded by the Store — the fenced save after it
// refused; the lease not given back when a callback fails — the other
// store's Lock refused.)
func TestLockLoad(t *testing.T) {
	pool, other := newPool(t), newPool(t)
	schema := newSchema(t, pool)
	s := openStore(t, pool, schema, leases...)
	b := openStore(t, other, schema, leases...)
	ctx := context.Background()

	// A session without a checkpoint: token 1, nothing loaded.
	var got string
	token, release, c, err := s.LockLoad(ctx, "fresh", echo("beside", &got))
	if err != nil || token != 1 || c != nil || got != "beside" {
		t.Fatalf("LockLoad of a new session: token %d, checkpoint %v, also read %q, %v; want 1, nil, \"beside\", nil", token, c, got, err)
	}
	first := checkpointtest.Checkpoint("fresh", 1)
	first.Token = token
	if err := s.Save(ctx, first); err != nil {
		t.Fatalf("a fenced save under LockLoad's lease: %v", err)
	}
	var le *checkpoint.LockedError
	got = ""
	if _, _, _, err := b.LockLoad(ctx, "fresh", echo("again", &got)); !errors.As(err, &le) || le.Holder != s.HolderName() {
		t.Errorf("LockLoad of a held session: got %v, want a *LockedError naming %q", err, s.HolderName())
	}
	if got != "again" {
		t.Errorf("the caller's query beside a refused LockLoad read %q, want \"again\"", got)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}

	// The newest checkpoint, loaded under the next token.
	token, release, c, err = b.LockLoad(ctx, "fresh")
	if err != nil || token != 2 {
		t.Fatalf("LockLoad after a release: token %d, %v; want 2", token, err)
	}
	want, err := b.Load(ctx, "fresh")
	if err != nil {
		t.Fatal(err)
	}
	if diff := checkpointtest.Diff(want, c); diff != "" {
		t.Errorf("LockLoad's checkpoint (-Load's +LockLoad's):\n%s", diff)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}

	// A failing query beside: its error, and the lease left free.
	boom := errors.New("boom")
	q := &pgx.QueuedQuery{SQL: `SELECT 1`}
	q.QueryRow(func(pgx.Row) error { return boom })
	if _, _, _, err := s.LockLoad(ctx, "fresh", q); !errors.Is(err, boom) {
		t.Errorf("LockLoad with a failing query beside: got %v, want its error", err)
	}
	if _, release, err := b.Lock(ctx, "fresh"); err != nil {
		t.Errorf("Lock after a failed LockLoad: %v, want the lease free", err)
	} else {
		release()
	}
}

// Rule: SaveRelease saves and gives the lease back in one transaction:
// the checkpoint is the newest, the lease is free at once (another Store
// takes it, the next token), the release function then does nothing (the
// new holder keeps it), and a later save with the old token is fenced; a
// SaveRelease whose lease was taken over saves nothing and leaves the
// taker's lease alone; one without a token is refused. (Mutations
// checked: the plain fence in SaveRelease — the other store's Lock
// refused; the release fence without its expiry check — the SaveRelease
// of a lease run out saved.)
func TestSaveRelease(t *testing.T) {
	other, schema, s, b, token := heldStores(t, "last", leases, leases)
	ctx := context.Background()
	c := checkpointtest.Checkpoint("last", 1)
	c.Token = token
	c.Status = "converged"
	if err := s.SaveRelease(ctx, c); err != nil {
		t.Fatalf("SaveRelease: %v", err)
	}
	got, err := b.Load(ctx, "last")
	if err != nil {
		t.Fatal(err)
	}
	if diff := checkpointtest.Diff(c, got); diff != "" {
		t.Errorf("the newest checkpoint after SaveRelease (-saved +loaded):\n%s", diff)
	}
	if holder, _, _ := leaseRow(t, other, schema, "last"); holder != "" {
		t.Errorf("after SaveRelease the lease row names %q, want it given back", holder)
	}
	next, releaseNext, err := b.Lock(ctx, "last")
	if err != nil || next != token+1 {
		t.Fatalf("Lock after SaveRelease: token %d, %v; want %d", next, err, token+1)
	}
	defer releaseNext()
	if err := s.Close(); err != nil { // releases whatever s still holds
		t.Errorf("Close after SaveRelease: %v", err)
	}
	if holder, _, _ := leaseRow(t, other, schema, "last"); holder != b.HolderName() {
		t.Errorf("the new holder's lease row names %q after the old holder's Close, want %q", holder, b.HolderName())
	}
	late := checkpointtest.Checkpoint("last", 2)
	late.Token = token
	if err := s.Save(ctx, late); !errors.Is(err, checkpoint.ErrFenced) {
		t.Errorf("a save with the given-back token: got %v, want ErrFenced", err)
	}

	// Taken over behind its back (its lease ran out, its renewals too
	// rare to notice): the server's fence refuses it, nothing is saved,
	// and the taker's lease is left alone.
	rare := []pgcheckpoint.Option{pgcheckpoint.Lease(10 * time.Second), pgcheckpoint.Renew(9 * time.Second)}
	other, schema, s, b, token = heldStores(t, "taken", rare, leases)
	if _, err := other.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "leases"}.Sanitize()+` SET expires_at = clock_timestamp() WHERE session = $1`, "taken"); err != nil {
		t.Fatal(err)
	}
	next, releaseNext, err = b.Lock(ctx, "taken")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseNext()
	late = checkpointtest.Checkpoint("taken", 1)
	late.Token = token
	if err := s.SaveRelease(ctx, late); !errors.Is(err, checkpoint.ErrFenced) {
		t.Errorf("SaveRelease of a lease taken over: got %v, want ErrFenced", err)
	}
	if gens := countGens(t, other, schema, "taken"); len(gens) != 0 {
		t.Errorf("generations stored: %v, want none", gens)
	}
	if holder, tok, _ := leaseRow(t, other, schema, "taken"); holder != b.HolderName() || uint64(tok) != next {
		t.Errorf("the taker's lease after a refused SaveRelease: %q, token %d; want %q, %d", holder, tok, b.HolderName(), next)
	}

	// Run out, not taken over (the renewals too rare to notice): the
	// server's fence refuses it too.
	other, schema, s, _, token = heldStores(t, "expired", rare, leases)
	if _, err := other.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "leases"}.Sanitize()+` SET expires_at = clock_timestamp() WHERE session = $1`, "expired"); err != nil {
		t.Fatal(err)
	}
	late = checkpointtest.Checkpoint("expired", 1)
	late.Token = token
	if err := s.SaveRelease(ctx, late); !errors.Is(err, checkpoint.ErrFenced) {
		t.Errorf("SaveRelease of a lease run out: got %v, want ErrFenced", err)
	}
	if gens := countGens(t, other, schema, "expired"); len(gens) != 0 {
		t.Errorf("generations stored: %v, want none", gens)
	}

	// No token: refused.
	free := checkpointtest.Checkpoint("free", 1)
	if err := b.SaveRelease(ctx, free); err == nil {
		t.Error("SaveRelease without a token: nil error")
	}
	if _, err := b.Load(ctx, "free"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("after a refused SaveRelease: Load gives %v, want ErrNotFound", err)
	}
}
