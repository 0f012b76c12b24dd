package checkpointtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// dropsReason forgets the Reason of what it saves.
type dropsReason struct{ *checkpoint.Memory }

func (s dropsReason) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if c != nil {
		c = c.Clone()
		c.Reason = ""
	}
	return s.Memory.Save(ctx, c)
}

// sameToken hands every holder token 1.
type sameToken struct{ *checkpoint.Memory }

func (s sameToken) Lock(ctx context.Context, session string) (uint64, func() error, error) {
	_, release, err := s.Memory.Lock(ctx, session)
	return 1, release, err
}

func (s sameToken) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if c != nil && c.Token != 0 {
		c = c.Clone()
		c.Token = 0
	}
	return s.Memory.Save(ctx, c)
}

// unfenced saves whatever token a checkpoint carries.
type unfenced struct{ *checkpoint.Memory }

func (s unfenced) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if c != nil && c.Token != 0 {
		c = c.Clone()
		c.Token = 0
	}
	return s.Memory.Save(ctx, c)
}

// echoesName returns the whole of a bad session name in its error.
type echoesName struct{ *checkpoint.Memory }

func (s echoesName) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	if checkpoint.ValidateSession(session) != nil {
		return nil, fmt.Errorf("%w: %s", checkpoint.ErrInvalidSession, session)
	}
	return s.Memory.Load(ctx, session)
}

// nilNotFound answers a session never saved with nil and no error; it has
// neither Lock nor Remove.
type nilNotFound struct{ m *checkpoint.Memory }

func (s nilNotFound) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	return s.m.Save(ctx, c)
}

func (s nilNotFound) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	c, err := s.m.Load(ctx, session)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, nil
	}
	return c, err
}

// aliasing keeps the checkpoints it is given, not copies.
type aliasing struct {
	mu sync.Mutex
	m  map[string]*checkpoint.Checkpoint
}

func (s *aliasing) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c == nil {
		return checkpoint.ErrNilCheckpoint
	}
	if err := checkpoint.ValidateSession(c.Session); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[c.Session]; old != nil {
		c.Generation = max(c.Generation, old.Generation+1)
	}
	s.m[c.Session] = c
	return nil
}

func (s *aliasing) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateSession(session); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.m[session]; c != nil {
		return c, nil
	}
	return nil, checkpoint.ErrNotFound
}

// panics panics on every Load.
type panics struct{ *checkpoint.Memory }

func (panics) Load(context.Context, string) (*checkpoint.Checkpoint, error) {
	panic("store exploded")
}

// listsWhole lists sessions with their Engine and State, unsorted.
type listsWhole struct{ *checkpoint.Memory }

func (s listsWhole) Sessions(ctx context.Context) iter.Seq2[*checkpoint.Checkpoint, error] {
	return func(yield func(*checkpoint.Checkpoint, error) bool) {
		var all []*checkpoint.Checkpoint
		for c := range s.Memory.Sessions(ctx) {
			if c != nil {
				whole, _ := s.Memory.Load(ctx, c.Session)
				all = append(all, whole)
			}
		}
		slices.Reverse(all)
		for _, c := range all {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// keepsFailedStreams saves what a failed stream wrote, dropping its error,
// and keeps at most the first 2 MiB of a stream, saying nothing.
type keepsFailedStreams struct{ *checkpoint.Memory }

func (s keepsFailedStreams) SaveFrom(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error {
	var w capped
	state.WriteTo(&w)
	d := c.Clone()
	d.State = w.buf
	return s.Memory.Save(ctx, d)
}

// capped keeps the first 2 MiB written to it and drops the rest.
type capped struct{ buf []byte }

func (w *capped) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p[:min(len(p), 2<<20-len(w.buf))]...)
	return len(p), nil
}

// dropsOrigin forgets the Origin of what it saves, as a store written
// before forks would.
type dropsOrigin struct{ *checkpoint.Memory }

func (s dropsOrigin) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if c != nil {
		c = c.Clone()
		c.Origin = checkpoint.Origin{}
	}
	return s.Memory.Save(ctx, c)
}

// generationsWrong lists generations newest first, with their states, and
// loads a generation never saved as the newest.
type generationsWrong struct{ *checkpoint.Memory }

func (s generationsWrong) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	list, err := s.Memory.Generations(ctx, session)
	for i, c := range list {
		whole, _ := s.Memory.LoadGeneration(ctx, session, c.Generation)
		list[i] = whole
	}
	slices.Reverse(list)
	return list, err
}

func (s generationsWrong) LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error) {
	c, err := s.Memory.LoadGeneration(ctx, session, gen)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return s.Memory.Load(ctx, session)
	}
	return c, err
}

// TestTestCatchesBrokenStores: Test returns an error naming the check that
// a deliberately broken store fails, without re-running the test binary.
func TestTestCatchesBrokenStores(t *testing.T) {
	tests := []struct {
		name     string
		newStore func() checkpointtest.Store
		want     []string // in the error's text
	}{
		{"drops_Reason", func() checkpointtest.Store { return dropsReason{new(checkpoint.Memory)} },
			[]string{"round_trip: round trip (Skipped is never saved): Load(\"round-trip\") mismatch", "interrupted after iteration 1"}},
		{"same_token_for_every_holder", func() checkpointtest.Store { return sameToken{new(checkpoint.Memory)} },
			[]string{"lock_tokens: holder 2 got token 1, not above the previous holder's 1"}},
		{"saves_stale_tokens", func() checkpointtest.Store { return unfenced{new(checkpoint.Memory)} },
			[]string{"fencing: Save with the token of a released lock: got error <nil>, want a *checkpoint.FencedError"}},
		{"echoes_a_long_name", func() checkpointtest.Store { return echoesName{new(checkpoint.Memory)} },
			[]string{"invalid_input: Load of a session of 10000 bytes: the error", "echoes the name whole"}},
		{"nil_for_not_found", func() checkpointtest.Store { return nilNotFound{new(checkpoint.Memory)} },
			[]string{"not_found: Load of a session never saved: got error <nil>"}},
		{"aliases_what_it_saves", func() checkpointtest.Store { return &aliasing{m: map[string]*checkpoint.Checkpoint{}} },
			[]string{"save_copies: changing a checkpoint after Save changed the store", "load_returns_copy: "}},
		{"lists_whole_checkpoints_unsorted", func() checkpointtest.Store { return listsWhole{new(checkpoint.Memory)} },
			[]string{`sessions: Sessions listed ["b" "a"], want ["a" "b"]`, `session "b" has 15 bytes of Engine and 30 of State, want nil`, "sessions: Sessions under a cancelled context yielded 0 times, want once"}},
		{"keeps_failed_streams", func() checkpointtest.Store { return keepsFailedStreams{new(checkpoint.Memory)} },
			[]string{"stream: SaveFrom of a stream that fails: got error <nil>", "stream: after SaveFrom of a stream that fails: Load(\"stream\") mismatch",
				"stream: SaveFrom of a stream above 1 GiB: got error <nil>"}},
		{"drops_Origin", func() checkpointtest.Store { return dropsOrigin{new(checkpoint.Memory)} },
			[]string{"round_trip_best_and_origin: BestGeneration and Origin: Load(\"best-origin\") mismatch"}},
		{"generations_wrong", func() checkpointtest.Store { return generationsWrong{new(checkpoint.Memory)} },
			[]string{"generations: Generations(history): generation 4 has Engine or State, want nil",
				"generations: Generations(history): generation 3 after 4, want ascending",
				"generations: LoadGeneration(history, 5): got error <nil>, want one matching checkpoint.ErrNotFound"}},
		{"panics", func() checkpointtest.Store { return panics{new(checkpoint.Memory)} },
			[]string{"not_found: panic: store exploded", "round_trip: panic: store exploded"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkpointtest.Test(func() (checkpointtest.Store, error) { return tc.newStore(), nil })
			if err == nil {
				t.Fatal("Test passed a broken store")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Test's error does not say %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestTestPasses: a conforming store passes, with or without the optional
// methods (the checks needing them do not apply).
func TestTestPasses(t *testing.T) {
	tests := []struct {
		name     string
		newStore func() checkpointtest.Store
	}{
		{"Memory", func() checkpointtest.Store { return new(checkpoint.Memory) }},
		{"Save_and_Load_only", func() checkpointtest.Store { return struct{ checkpointtest.Store }{new(checkpoint.Memory)} }},
		{"Faulty_without_faults", func() checkpointtest.Store { return &checkpointtest.Faulty{Store: new(checkpoint.Memory)} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkpointtest.Test(func() (checkpointtest.Store, error) { return tc.newStore(), nil }); err != nil {
				t.Errorf("Test: %v", err)
			}
		})
	}
}

func TestTestReportsStoreCreation(t *testing.T) {
	boom := errors.New("no database")
	err := checkpointtest.Test(func() (checkpointtest.Store, error) { return nil, boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "round_trip: creating the store: no database") {
		t.Errorf("Test: got %v, want the creation error of every check", err)
	}
}

// TestRun runs the suite as subtests over Memory.
func TestRun(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpointtest.Store { return new(checkpoint.Memory) })
}

func TestCheckpointAndDiff(t *testing.T) {
	a, b := checkpointtest.Checkpoint("s", 3), checkpointtest.Checkpoint("s", 3)
	if a == b || &a.State[0] == &b.State[0] {
		t.Fatal("Checkpoint returned shared memory")
	}
	if diff := checkpointtest.Diff(a, b); diff != "" {
		t.Errorf("Diff of equal checkpoints: %s", diff)
	}
	if a.Token != 0 || a.Skipped != nil || a.Reason == "" || a.Engine == nil || a.State == nil || a.Time.IsZero() || a.Question == "" || a.Fingerprint == "" || a.Status == "" {
		t.Errorf("Checkpoint is not fully populated (Token 0, Skipped empty): %+v", a)
	}
	b.State[5] ^= 1
	b.Engine = nil
	b.Time = b.Time.UTC()
	want := "Engine: -15 bytes +0 bytes, first difference at offset 0\nState: -30 bytes +30 bytes, first difference at offset 5\n"
	if got := checkpointtest.Diff(a, b); got != want {
		t.Errorf("Diff = %q, want %q", got, want)
	}
}
