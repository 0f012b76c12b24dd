// Package checkpointtest checks that a checkpoint store behaves as the
// refine engine expects, in the manner of testing/fstest.TestFS.
//
// A custom store (a database, an object store) runs the suite from its own
// tests:
//
//	func TestConformance(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) checkpointtest.Store {
//			return newMyStore(t)
//		})
//	}
//
// [Run] checks the methods every store has ([Store]) and, when the store
// also implements them, locking ([Locker]) and removal ([Remover]).
package checkpointtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// Store is what every checkpoint store provides: the engine's
// [iterate.Checkpointer].
type Store = iterate.Checkpointer

// Locker is implemented by stores that can lock a session so that two runs
// never proceed at once ([iterate.Locker]).
type Locker = iterate.Locker

// Remover is implemented by stores that can delete a session's checkpoints
// ([iterate.Remover]).
type Remover = iterate.Remover

// Checkpoint returns a checkpoint of session at generation gen with every
// field set to a value that depends on both, the State included, so that
// round trips can be compared field by field. Fields that stores do not save
// (Notes, and the History's Current and Gaps) are left empty. Each call
// returns new memory.
func Checkpoint(session string, gen uint64) *checkpoint.Checkpoint {
	g := int(gen)
	start := time.Date(2026, 2, 6, 10, 0, 0, 0, time.UTC)
	updated := start.Add(time.Duration(g) * time.Minute)
	return &checkpoint.Checkpoint{
		Version:             checkpoint.Version,
		Session:             session,
		Generation:          gen,
		Iteration:           g,
		MaxIterations:       10,
		Status:              "interrupted",
		Reason:              fmt.Sprintf("interrupted after iteration %d", g),
		StartedAt:           start,
		UpdatedAt:           updated,
		LastIterationAt:     updated.Add(-time.Second),
		Elapsed:             time.Duration(g) * 45 * time.Second,
		Durations:           []time.Duration{45200 * time.Millisecond, 38700 * time.Millisecond, time.Duration(g) * time.Second},
		ConsecutiveFailures: g % 3,
		FailureThreshold:    3,
		Usage: budget.Usage{
			Iterations: g,
			Tokens:     int64(g) * 4230,
			Cost:       float64(g) * 0.25,
			Wall:       time.Duration(g) * time.Minute,
		},
		Gaps: []gap.Gap{
			{
				Kind:      gap.Coverage,
				Priority:  gap.P1,
				Severity:  0.4,
				Fixable:   true,
				Target:    "auth",
				Detail:    fmt.Sprintf("coverage 0.%d < 0.70", g%10),
				Source:    "coverage",
				Relevance: 0.9,
				Focus:     []string{"JwtService.cs", "AuthMiddleware.cs"},
			},
			{Kind: gap.UnansweredQuestion, Priority: gap.P2, Severity: 0.7, Target: "Is OAuth possible?"},
		},
		History: &converge.History{
			Iteration:     g,
			MaxIterations: 10,
			Recent: []converge.Record{
				{Iteration: 0, Coverage: 0.6, Confidence: 0.7, Score: 0.5, Scores: map[string]float64{"tests": 0.4}, Gaps: 3, Fixable: 2, Triggers: 42},
				{Iteration: g, Coverage: 0.75, Confidence: 0.81, Score: 0.7, Conflicts: 1, Failed: true, Action: "refine", Summary: "P1 coverage: auth", Duration: time.Second},
			},
			ConsecutiveFailures: g % 3,
			Failures:            1,
			Unchanged:           1,
			WorkRemaining:       []string{"validate tokens", fmt.Sprint("item ", g)},
			BestScore:           0.7,
			BestIteration:       g,
			Window:              8,
			Pending:             converge.Outcome{Failed: true, Action: "retry", Duration: 2 * time.Second},
		},
		Journal: []checkpoint.Entry{
			{Iteration: g + 1, Index: 1, Role: "citation", Key: "confidence:f3", Part: []byte(`{"findings":1}`), Usage: budget.Usage{Tokens: 900}},
		},
		Question:    "Which database does production use?",
		Fingerprint: "sha256:0f1e2d3c",
		Engine:      []byte(fmt.Sprintf(`{"journal":[%d]}`, g)),
		State:       []byte(fmt.Sprintf(`{"session":%q,"generation":%d}`, session, gen)),
	}
}

// Diff reports the differences between two checkpoints as [cmp.Diff] does,
// treating nil and empty slices alike and times as equal when they denote
// the same instant (a store may drop the monotonic clock reading or the
// location). Unexported fields of the history are ignored. The State is
// compared as bytes (fast at any size) and a difference reported by its
// length and first differing offset.
func Diff(want, got *checkpoint.Checkpoint) string {
	if want == nil || got == nil {
		return cmp.Diff(want, got, diffOptions...)
	}
	diff := cmp.Diff(want, got, diffOptions...)
	if !bytes.Equal(want.State, got.State) {
		i := 0
		for i < len(want.State) && i < len(got.State) && want.State[i] == got.State[i] {
			i++
		}
		diff += fmt.Sprintf("State: -%d bytes +%d bytes, first difference at offset %d\n", len(want.State), len(got.State), i)
	}
	return diff
}

var diffOptions = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
	cmpopts.IgnoreUnexported(converge.History{}),
	cmpopts.IgnoreFields(checkpoint.Checkpoint{}, "State"),
}

// Run runs the conformance suite as subtests of t. newStore is called once per
// subtest and must return an empty store (it may use t.TempDir and
// t.Cleanup). Subtests that need [Locker] or [Remover] are skipped for stores
// without them.
//
// The store must: return an error matching checkpoint.ErrNotFound for a
// session never saved; give back every field it was saved with (State,
// History, Gaps, Usage, times...); load the latest save; keep sessions
// apart; copy what it keeps and what it returns (no aliasing either way);
// handle states of 0 bytes and 1 MiB; allow concurrent saves of different
// sessions; reject a nil checkpoint and an empty session name with an error;
// and fail every call with an error matching context.Canceled under a
// cancelled context. A Locker must refuse a second lock of a held session
// with an error matching checkpoint.ErrLocked (a *checkpoint.LockedError
// naming the session), allow other sessions, and accept release twice; a
// Remover must make the session not found again.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	ctx := context.Background()

	t.Run("not_found", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Load(ctx, "never-saved")
		if !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("Load of a session never saved: got error %v, want one matching checkpoint.ErrNotFound", err)
		}
	})

	t.Run("round_trip", func(t *testing.T) {
		s := newStore(t)
		want := Checkpoint("round-trip", 1)
		mustSave(t, s, want)
		got := mustLoad(t, s, "round-trip")
		if diff := Diff(want, got); diff != "" {
			t.Errorf("Load after Save mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("newest_generation_wins", func(t *testing.T) {
		s := newStore(t)
		for gen := uint64(1); gen <= 5; gen++ {
			mustSave(t, s, Checkpoint("gens", gen))
		}
		if diff := Diff(Checkpoint("gens", 5), mustLoad(t, s, "gens")); diff != "" {
			t.Errorf("Load after saving generations 1..5 mismatch (-want generation 5 +got):\n%s", diff)
		}
	})

	t.Run("sessions_isolated", func(t *testing.T) {
		s := newStore(t)
		a, b := Checkpoint("alpha", 3), Checkpoint("beta", 1)
		mustSave(t, s, a)
		mustSave(t, s, b)
		if diff := Diff(a, mustLoad(t, s, "alpha")); diff != "" {
			t.Errorf("Load(alpha) mismatch (-want +got):\n%s", diff)
		}
		if diff := Diff(b, mustLoad(t, s, "beta")); diff != "" {
			t.Errorf("Load(beta) mismatch (-want +got):\n%s", diff)
		}
		if _, err := s.Load(ctx, "alph"); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("Load of a prefix of a saved session: got error %v, want checkpoint.ErrNotFound", err)
		}
		r, ok := s.(Remover)
		if !ok {
			return
		}
		if err := r.Remove(ctx, "alpha"); err != nil {
			t.Fatalf("Remove(alpha): %v", err)
		}
		if diff := Diff(b, mustLoad(t, s, "beta")); diff != "" {
			t.Errorf("Load(beta) after Remove(alpha) mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("load_returns_copy", func(t *testing.T) {
		s := newStore(t)
		mustSave(t, s, Checkpoint("copy-out", 2))
		got := mustLoad(t, s, "copy-out")
		scribble(got)
		if diff := Diff(Checkpoint("copy-out", 2), mustLoad(t, s, "copy-out")); diff != "" {
			t.Errorf("changing a loaded checkpoint changed the store (-want +got):\n%s", diff)
		}
	})

	t.Run("save_copies", func(t *testing.T) {
		s := newStore(t)
		c := Checkpoint("copy-in", 2)
		mustSave(t, s, c)
		if diff := Diff(Checkpoint("copy-in", 2), c); diff != "" {
			t.Errorf("Save modified its argument (-want +got):\n%s", diff)
		}
		scribble(c)
		if diff := Diff(Checkpoint("copy-in", 2), mustLoad(t, s, "copy-in")); diff != "" {
			t.Errorf("changing a checkpoint after Save changed the store (-want +got):\n%s", diff)
		}
	})

	for _, tc := range []struct {
		name string
		size int
	}{
		{"state_0_bytes", 0},
		{"state_1_byte", 1},
		{"state_1MiB", 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			want := Checkpoint("sized", 1)
			want.State = pattern(tc.size)
			mustSave(t, s, want)
			got := mustLoad(t, s, "sized")
			if !bytes.Equal(want.State, got.State) {
				t.Fatalf("State of %d bytes came back as %d bytes, different", len(want.State), len(got.State))
			}
			if diff := Diff(want, got); diff != "" {
				t.Errorf("Load mismatch (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("concurrent_saves", func(t *testing.T) {
		s := newStore(t)
		const sessions, gens = 8, 4
		errs := make(chan error, sessions*gens)
		var wg sync.WaitGroup
		for i := range sessions {
			wg.Go(func() {
				for gen := uint64(1); gen <= gens; gen++ {
					if err := s.Save(ctx, Checkpoint(fmt.Sprint("parallel-", i), gen)); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("concurrent Save: %v", err)
		}
		for i := range sessions {
			session := fmt.Sprint("parallel-", i)
			if diff := Diff(Checkpoint(session, gens), mustLoad(t, s, session)); diff != "" {
				t.Errorf("Load(%s) after concurrent saves mismatch (-want +got):\n%s", session, diff)
			}
		}
	})

	t.Run("bad_input", func(t *testing.T) {
		s := newStore(t)
		if err := s.Save(ctx, nil); err == nil {
			t.Error("Save(nil): got no error")
		}
		if err := s.Save(ctx, Checkpoint("", 1)); err == nil {
			t.Error(`Save of session "": got no error`)
		}
		if _, err := s.Load(ctx, ""); err == nil || errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf(`Load of session "": got error %v, want a rejection`, err)
		}
	})

	t.Run("cancelled_context", func(t *testing.T) {
		s := newStore(t)
		mustSave(t, s, Checkpoint("cancel", 1))
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Save(cctx, Checkpoint("cancel", 2)); !errors.Is(err, context.Canceled) {
			t.Errorf("Save under a cancelled context: got error %v, want context.Canceled", err)
		}
		if _, err := s.Load(cctx, "cancel"); !errors.Is(err, context.Canceled) {
			t.Errorf("Load under a cancelled context: got error %v, want context.Canceled", err)
		}
		if l, ok := s.(Locker); ok {
			if release, err := l.Lock(cctx, "cancel"); !errors.Is(err, context.Canceled) {
				if err == nil {
					release()
				}
				t.Errorf("Lock under a cancelled context: got error %v, want context.Canceled", err)
			}
		}
		if r, ok := s.(Remover); ok {
			if err := r.Remove(cctx, "cancel"); !errors.Is(err, context.Canceled) {
				t.Errorf("Remove under a cancelled context: got error %v, want context.Canceled", err)
			}
		}
		if diff := Diff(Checkpoint("cancel", 1), mustLoad(t, s, "cancel")); diff != "" {
			t.Errorf("calls under a cancelled context changed the store (-want +got):\n%s", diff)
		}
	})

	t.Run("lock", func(t *testing.T) {
		s := newStore(t)
		l, ok := s.(Locker)
		if !ok {
			t.Skip("store does not implement Locker")
		}
		release, err := l.Lock(ctx, "locked")
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		_, err = l.Lock(ctx, "locked")
		var le *checkpoint.LockedError
		if !errors.Is(err, checkpoint.ErrLocked) || !errors.As(err, &le) {
			t.Fatalf("second Lock of a held session: got error %v, want a *checkpoint.LockedError", err)
		}
		if le.Session != "locked" {
			t.Errorf("LockedError.Session = %q, want %q", le.Session, "locked")
		}
		other, err := l.Lock(ctx, "other")
		if err != nil {
			t.Fatalf("Lock of another session while one is held: %v", err)
		}
		if err := other(); err != nil {
			t.Errorf("release of the other session: %v", err)
		}
		if err := release(); err != nil {
			t.Errorf("release: %v", err)
		}
		if err := release(); err != nil {
			t.Errorf("second release: %v", err)
		}
		again, err := l.Lock(ctx, "locked")
		if err != nil {
			t.Fatalf("Lock after release: %v", err)
		}
		if err := again(); err != nil {
			t.Errorf("release after relock: %v", err)
		}
	})

	t.Run("remove", func(t *testing.T) {
		s := newStore(t)
		r, ok := s.(Remover)
		if !ok {
			t.Skip("store does not implement Remover")
		}
		if err := r.Remove(ctx, "absent"); err != nil {
			t.Errorf("Remove of a session never saved: %v", err)
		}
		for gen := uint64(1); gen <= 3; gen++ {
			mustSave(t, s, Checkpoint("removed", gen))
		}
		if err := r.Remove(ctx, "removed"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if _, err := s.Load(ctx, "removed"); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("Load after Remove: got error %v, want checkpoint.ErrNotFound", err)
		}
		// A store may number generations on from before the Remove.
		mustSave(t, s, Checkpoint("removed", 1))
		got := mustLoad(t, s, "removed")
		want := Checkpoint("removed", 1)
		want.Generation = got.Generation
		if diff := Diff(want, got); diff != "" {
			t.Errorf("Load of a session saved again after Remove mismatch (-want +got):\n%s", diff)
		}
	})
}

func mustSave(t *testing.T, s Store, c *checkpoint.Checkpoint) {
	t.Helper()
	if err := s.Save(context.Background(), c); err != nil {
		t.Fatalf("Save(session %q, generation %d): %v", c.Session, c.Generation, err)
	}
}

func mustLoad(t *testing.T, s Store, session string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := s.Load(context.Background(), session)
	if err != nil {
		t.Fatalf("Load(%q): %v", session, err)
	}
	if c == nil {
		t.Fatalf("Load(%q) returned nil and no error", session)
	}
	return c
}

// scribble changes every piece of memory a checkpoint shares through
// references: what a store must not alias.
func scribble(c *checkpoint.Checkpoint) {
	for i := range c.State {
		c.State[i] ^= 0xff
	}
	for i := range c.Engine {
		c.Engine[i] ^= 0xff
	}
	for i := range c.Durations {
		c.Durations[i]++
	}
	for i := range c.Gaps {
		c.Gaps[i].Severity = -1
		for j := range c.Gaps[i].Focus {
			c.Gaps[i].Focus[j] = "scribbled"
		}
	}
	if h := c.History; h != nil {
		h.Iteration = -1
		for i := range h.Recent {
			h.Recent[i].Score = -1
			for k := range h.Recent[i].Scores {
				h.Recent[i].Scores[k] = -1
			}
		}
		for i := range h.WorkRemaining {
			h.WorkRemaining[i] = "scribbled"
		}
	}
	c.Status = "scribbled"
}

// pattern returns n bytes that are not all alike.
func pattern(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}
