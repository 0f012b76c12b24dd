package checkpointtest_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// The stores below each break one promise that a check of the suite would
// stop seeing if that check were weakened (issue 24: mutations of the
// checks survived, since the suite's own tests ran them only against
// correct stores and the few broken ones above).

// keepsGivenGeneration saves each checkpoint with the generation it was
// given, never raising it above the newest.
type keepsGivenGeneration struct {
	*checkpoint.Memory
	mu   sync.Mutex
	last map[string]uint64
}

func (s *keepsGivenGeneration) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if err := s.Memory.Save(ctx, c); err != nil {
		return err
	}
	s.mu.Lock()
	s.last[c.Session] = c.Generation
	s.mu.Unlock()
	return nil
}

func (s *keepsGivenGeneration) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	c, err := s.Memory.Load(ctx, session)
	if err == nil {
		s.mu.Lock()
		c.Generation = s.last[session]
		s.mu.Unlock()
	}
	return c, err
}

// truncatesStates keeps the first 1000 bytes of a state.
type truncatesStates struct{ *checkpoint.Memory }

func (s truncatesStates) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if c != nil && len(c.State) > 1000 {
		cut := *c
		cut.State = c.State[:1000]
		c = &cut
	}
	return s.Memory.Save(ctx, c)
}

// failsParallelSaves fails every save of the concurrent-saves check's
// sessions.
type failsParallelSaves struct{ *checkpoint.Memory }

func (s failsParallelSaves) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if c != nil && strings.HasPrefix(c.Session, "parallel-") {
		return errors.New("disk full")
	}
	return s.Memory.Save(ctx, c)
}

// keepsRemoved has a Remove that removes nothing.
type keepsRemoved struct{ *checkpoint.Memory }

func (keepsRemoved) Remove(ctx context.Context, session string) error { return ctx.Err() }

// listsOtherStatus lists every session with a status its Load does not
// have.
type listsOtherStatus struct{ *checkpoint.Memory }

func (s listsOtherStatus) Sessions(ctx context.Context) iter.Seq2[*checkpoint.Checkpoint, error] {
	return func(yield func(*checkpoint.Checkpoint, error) bool) {
		for c, err := range s.Memory.Sessions(ctx) {
			if c != nil {
				c.Status = "listed"
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// acceptsBadNames saves nothing, and reports no error, for a session name
// checkpoint.ValidateSession rejects.
type acceptsBadNames struct{ *checkpoint.Memory }

func (s acceptsBadNames) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if c != nil && checkpoint.ValidateSession(c.Session) != nil {
		return nil
	}
	return s.Memory.Save(ctx, c)
}

// losesStatesAfterRemove keeps no state of a session saved again after it
// was removed: its Remove leaves the session marked, and a save of a
// marked session is kept without its State.
type losesStatesAfterRemove struct {
	*checkpoint.Memory
	mu      sync.Mutex
	removed map[string]bool
}

func (s *losesStatesAfterRemove) Remove(ctx context.Context, session string) error {
	s.mu.Lock()
	s.removed[session] = true
	s.mu.Unlock()
	return s.Memory.Remove(ctx, session)
}

func (s *losesStatesAfterRemove) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	s.mu.Lock()
	removed := c != nil && s.removed[c.Session]
	s.mu.Unlock()
	if removed {
		lost := *c
		lost.State = nil
		c = &lost
	}
	return s.Memory.Save(ctx, c)
}

// omitsNewestGeneration lists every kept generation but the newest.
type omitsNewestGeneration struct{ *checkpoint.Memory }

func (s omitsNewestGeneration) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	list, err := s.Memory.Generations(ctx, session)
	if len(list) > 0 {
		list = list[:len(list)-1]
	}
	return list, err
}

// listsNewestTwice lists the newest generation twice.
type listsNewestTwice struct{ *checkpoint.Memory }

func (s listsNewestTwice) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	list, err := s.Memory.Generations(ctx, session)
	if len(list) > 0 {
		c := *list[len(list)-1]
		list = append(list, &c)
	}
	return list, err
}

// sharesLoadedGenerations keeps what LoadGeneration returned and returns
// it again, so that a caller changing it changes what later calls return.
type sharesLoadedGenerations struct {
	*checkpoint.Memory
	mu     sync.Mutex
	loaded map[string]*checkpoint.Checkpoint
}

func (s *sharesLoadedGenerations) LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error) {
	key := fmt.Sprint(session, "/", gen)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.loaded[key]; c != nil {
		return c, nil
	}
	c, err := s.Memory.LoadGeneration(ctx, session, gen)
	if err == nil {
		s.loaded[key] = c
	}
	return c, err
}

// misreadsVersion2Listings keeps every generation, and lists those
// without the fields of format version 3 with their Status lost (as a
// listing that reads the version-3 layout only would).
type misreadsVersion2Listings struct{ *checkpoint.Memory }

func (s misreadsVersion2Listings) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	list, err := s.Memory.Generations(ctx, session)
	for _, c := range list {
		if c.BestGeneration == 0 && c.Origin == (checkpoint.Origin{}) {
			c.Status = ""
		}
	}
	return list, err
}

// sharesListedGenerations returns the same envelope of a generation from
// every Generations call, so that a caller changing it changes what later
// calls list.
type sharesListedGenerations struct {
	*checkpoint.Memory
	mu     sync.Mutex
	listed map[string]*checkpoint.Checkpoint
}

func (s *sharesListedGenerations) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	list, err := s.Memory.Generations(ctx, session)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range list {
		key := fmt.Sprint(session, "/", c.Generation)
		if old := s.listed[key]; old != nil {
			list[i] = old
		} else {
			s.listed[key] = c
		}
	}
	return list, err
}

// listsOnce lists a session's generations once; later listings of it are
// empty.
type listsOnce struct {
	*checkpoint.Memory
	mu     sync.Mutex
	listed map[string]bool
}

func (s *listsOnce) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	list, err := s.Memory.Generations(ctx, session)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listed[session] {
		return nil, err
	}
	if len(list) > 0 {
		s.listed[session] = true
	}
	return list, err
}

// TestTestCatchesMoreBrokenStores: as TestTestCatchesBrokenStores, for the
// promises whose checks a weakened suite stopped seeing.
func TestTestCatchesMoreBrokenStores(t *testing.T) {
	tests := []struct {
		name     string
		newStore func() checkpointtest.Store
		want     []string
	}{
		{"keeps_given_generation", func() checkpointtest.Store {
			return &keepsGivenGeneration{Memory: new(checkpoint.Memory), last: map[string]uint64{}}
		}, []string{"generation_order: after saving generation 3 over 5, Load mismatch"}},
		{"truncates_states", func() checkpointtest.Store { return truncatesStates{new(checkpoint.Memory)} },
			[]string{"state_sizes: State of 1048576 bytes came back as 1000 bytes, different", "state_sizes: state of 1048576 bytes: Load mismatch"}},
		{"fails_parallel_saves", func() checkpointtest.Store { return failsParallelSaves{new(checkpoint.Memory)} },
			[]string{"concurrent_saves: concurrent Save: disk full"}},
		{"keeps_removed_sessions", func() checkpointtest.Store { return keepsRemoved{new(checkpoint.Memory)} },
			[]string{"remove: Load after Remove: got error <nil>, want checkpoint.ErrNotFound"}},
		{"loses_states_after_remove", func() checkpointtest.Store {
			return &losesStatesAfterRemove{Memory: new(checkpoint.Memory), removed: map[string]bool{}}
		}, []string{"remove: Load of a session saved again after Remove mismatch"}},
		{"omits_newest_generation", func() checkpointtest.Store { return omitsNewestGeneration{new(checkpoint.Memory)} },
			[]string{"generations: Generations(history) lists 2 generations, not the newest, generation 4"}},
		{"lists_newest_twice", func() checkpointtest.Store { return listsNewestTwice{new(checkpoint.Memory)} },
			[]string{"generations: Generations(history): generation 4 after 4, want ascending"}},
		{"shares_loaded_generations", func() checkpointtest.Store {
			return &sharesLoadedGenerations{Memory: new(checkpoint.Memory), loaded: map[string]*checkpoint.Checkpoint{}}
		}, []string{"generations: changing what LoadGeneration or Generations returned changed the store"}},
		{"shares_listed_generations", func() checkpointtest.Store {
			return &sharesListedGenerations{Memory: new(checkpoint.Memory), listed: map[string]*checkpoint.Checkpoint{}}
		}, []string{"generations: changing what Generations returned changed the store"}},
		{"misreads_version_2_listings", func() checkpointtest.Store {
			return misreadsVersion2Listings{&checkpoint.Memory{KeepAll: true}}
		}, []string{"generations: Generations(history): generation 1 mismatch"}},
		{"accepts_bad_names", func() checkpointtest.Store { return acceptsBadNames{new(checkpoint.Memory)} },
			[]string{`invalid_input: Save of session "../escape": got error <nil>`,
				`invalid_input: Save of session "xxxxxxxxxxxxxxxxxxxx… (201 bytes)": got error <nil>`}},
		{"lists_another_status", func() checkpointtest.Store { return listsOtherStatus{new(checkpoint.Memory)} },
			[]string{`sessions: Sessions: session "a" differs from its Load`}},
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

// TestFaultyCounts: Faulty numbers saves and loads from 1, each on its own,
// and Calls reports them.
func TestFaultyCounts(t *testing.T) {
	var saves, loads []int
	f := &checkpointtest.Faulty{
		Store:    new(checkpoint.Memory),
		FailSave: func(n int, _ *checkpoint.Checkpoint) error { saves = append(saves, n); return nil },
		FailLoad: func(n int, _ string) error { loads = append(loads, n); return nil },
	}
	ctx := context.Background()
	for gen := uint64(1); gen <= 3; gen++ {
		if err := f.Save(ctx, checkpointtest.Checkpoint("s", gen)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := f.Load(ctx, "s"); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(saves, []int{1, 2, 3}) || !slices.Equal(loads, []int{1, 2}) {
		t.Errorf("FailSave saw %v, FailLoad %v; want [1 2 3] and [1 2]", saves, loads)
	}
	if s, l := f.Calls(); s != 3 || l != 2 {
		t.Errorf("Calls() = %d, %d; want 3, 2", s, l)
	}
}

// TestTestDoesNotPanicOnEmptyListing: a store whose second listing of a
// session is empty gets reports, not a panic of the suite's own (indexing
// the last of an empty listing: the mutation `len(again) >= 0`).
func TestTestDoesNotPanicOnEmptyListing(t *testing.T) {
	err := checkpointtest.Test(func() (checkpointtest.Store, error) {
		return &listsOnce{Memory: new(checkpoint.Memory), listed: map[string]bool{}}, nil
	})
	if err != nil && strings.Contains(err.Error(), "panic") {
		t.Errorf("Test panicked on a store whose second listing is empty:\n%v", err)
	}
}
