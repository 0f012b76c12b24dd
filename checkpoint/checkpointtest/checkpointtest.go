// Package checkpointtest checks that a checkpoint store behaves as the
// refine engine expects, in the manner of testing/fstest.TestFS, and helps
// test code around stores.
//
// A custom store (a database, an object store) runs the suite from its own
// tests, as subtests:
//
//	func TestConformance(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) checkpointtest.Store {
//			return newMyStore(t)
//		})
//	}
//
// or through [Test], which returns every failure as one error, so that a
// test can also assert that a broken store fails the suite.
//
// The suite checks the methods every store has ([Store]) and, when the store
// also has them, the methods Lock, Remove, Sessions, SaveFrom, Generations
// and LoadGeneration with the signatures of [checkpoint.Dir]'s: locking
// with fencing tokens, removal, the listing of sessions, saves of a state
// streamed, and the listing and loading of a session's generations. [Faulty]
// injects failures at the save and load boundaries of any store.
//
// This package imports only package checkpoint, the standard library and
// go-cmp.
package checkpointtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/checkpoint"
)

// Store is what every checkpoint store provides: the method set of the
// engine's Checkpointer, whose doc states the contract [Run] and [Test]
// check (a save as generation max(Generation, newest+1), Skipped never
// saved, a Load that returns a copy, ...).
type Store interface {
	Save(ctx context.Context, c *checkpoint.Checkpoint) error
	Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error)
}

// locker is implemented by stores that can lock a session and fence its
// writers, as checkpoint.Dir and checkpoint.Memory do.
type locker interface {
	Lock(ctx context.Context, session string) (token uint64, release func() error, err error)
}

// remover is implemented by stores that can delete a session.
type remover interface {
	Remove(ctx context.Context, session string) error
}

// lister is implemented by stores that can list their sessions, as
// checkpoint.Dir and checkpoint.Memory do.
type lister interface {
	Sessions(ctx context.Context) iter.Seq2[*checkpoint.Checkpoint, error]
}

// Checkpoint returns a checkpoint of session at generation gen with every
// saved field set to a value that depends on both, so that round trips can
// be compared field by field. Token is 0 (a fenced save needs a lock's
// token) and Skipped empty (it is never saved). Each call returns new
// memory.
func Checkpoint(session string, gen uint64) *checkpoint.Checkpoint {
	g := int(gen)
	saved := time.Date(2026, 2, 6, 10, 0, 0, 123456789, time.FixedZone("CET", 3600)).Add(time.Duration(g) * time.Minute)
	return &checkpoint.Checkpoint{
		Session:     session,
		Generation:  gen,
		Status:      "interrupted",
		Reason:      fmt.Sprintf("interrupted after iteration %d", g),
		Iteration:   g,
		Time:        saved,
		Question:    "Which database does production use?",
		Fingerprint: "sha256:0f1e2d3c",
		Engine:      []byte(fmt.Sprintf(`{"journal":[%d]}`, g)),
		State:       []byte(fmt.Sprintf(`{"session":%q,"generation":%d}`, session, gen)),
	}
}

// Diff reports the differences between two checkpoints as [cmp.Diff] does,
// treating nil and empty slices alike and times as equal when they denote
// the same instant (a store may drop the monotonic clock reading or the
// location). Engine and State are compared as bytes (fast at any size) and
// a difference reported by their lengths and first differing offset.
func Diff(want, got *checkpoint.Checkpoint) string {
	diff := cmp.Diff(want, got, diffOptions...)
	if want == nil || got == nil {
		return diff
	}
	diff += bytesDiff("Engine", want.Engine, got.Engine)
	diff += bytesDiff("State", want.State, got.State)
	return diff
}

// bytesDiff describes how got differs from want, "" if it does not.
func bytesDiff(field string, want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("%s: -%d bytes +%d bytes, first difference at offset %d\n", field, len(want), len(got), i)
}

var diffOptions = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
	cmpopts.IgnoreFields(checkpoint.Checkpoint{}, "Engine", "State"),
}

// Test runs the conformance checks against stores made by newStore, which is
// called once per check and must return an empty store, and returns every
// failure, each prefixed with the name of its check, joined into one error;
// nil if the store conforms. A check that panics fails with the panic's
// value. The checks are those of [Run].
func Test(newStore func() (Store, error)) error {
	var errs []error
	for _, ch := range checks {
		s, err := newStore()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: creating the store: %w", ch.name, err))
			continue
		}
		for _, err := range runCheck(ch, s).errs {
			errs = append(errs, fmt.Errorf("%s: %w", ch.name, err))
		}
	}
	return errors.Join(errs...)
}

// Run runs the conformance checks as subtests of t. newStore is called once
// per subtest and must return an empty store (it may use t.TempDir and
// t.Cleanup). Checks that need Lock or Remove are skipped for stores
// without them.
//
// The store must: return an error matching checkpoint.ErrNotFound for a
// session never saved; give back every field it was saved with, except
// Skipped, which is never saved; load the latest save, written as
// generation max(Generation, newest+1); keep sessions apart; copy what it
// keeps and what it returns (no aliasing either way); handle states of 0
// bytes and 1 MiB; allow concurrent saves of different sessions; reject a
// nil checkpoint with checkpoint.ErrNilCheckpoint and every name
// checkpoint.ValidateSession rejects with checkpoint.ErrInvalidSession,
// without echoing a long name whole; and fail every call with an error
// matching context.Canceled under a cancelled context.
//
// A store with Lock must refuse a second lock of a held session with a
// *checkpoint.LockedError naming the session, allow other sessions, accept
// release twice, return a non-zero token that grows with every new holder,
// save a checkpoint carrying the token of the lock held, and refuse one
// carrying any other non-zero token (released, superseded or never issued)
// with a *checkpoint.FencedError naming the session and the token, leaving
// the stored checkpoints as they were. A store with Remove must make the
// session not found again, accept a session never saved, and leave a held
// lock held. A store with Sessions must list every session it has
// checkpoints of (not a removed one), once, in the order of the names, each
// as its Load would return it but with Engine and State nil, in memory the
// caller may change; and under a cancelled context yield once, a nil
// checkpoint and an error matching context.Canceled. A store with SaveFrom
// must load a streamed save as a save of the same bytes, and refuse, saving
// nothing, a stream that fails (with an error matching the stream's) or that
// takes the checkpoint above 1 GiB (with an error saying so, refusing the
// write before keeping it).
//
// Every store must give back BestGeneration and Origin, the envelope
// fields of keep-best and forks. A store with Generations and
// LoadGeneration (the engine's GenerationLoader) must list a session's kept
// generations oldest first, the newest always among them, each as saved
// but with Engine and State nil, and none for a session never saved; load
// each of them whole, as saved; return an error matching
// checkpoint.ErrNotFound for a generation or session not kept; return
// copies; and refuse invalid names and a cancelled context as every method
// does.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			r := runCheck(ch, newStore(t))
			for _, err := range r.errs {
				t.Error(err)
			}
			if len(r.errs) == 0 && r.skip != "" {
				t.Skip(r.skip)
			}
		})
	}
}

// report collects the failures of one check.
type report struct {
	errs []error
	skip string // why the check did not apply, if it did not
}

func (r *report) errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// check is one conformance check. A check reports through r and returns
// early where a failure makes the rest meaningless.
type check struct {
	name string
	run  func(ctx context.Context, s Store, r *report)
}

// runCheck runs ch on s, turning a panic into a failure.
func runCheck(ch check, s Store) (r *report) {
	r = new(report)
	defer func() {
		if p := recover(); p != nil {
			r.errorf("panic: %v", p)
		}
	}()
	ch.run(context.Background(), s, r)
	return r
}
