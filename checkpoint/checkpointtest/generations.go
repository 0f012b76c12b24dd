package checkpointtest

// The checks of the envelope's fork and best fields, and of the listing and
// loading of a session's generations.

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/refine-go/refine/checkpoint"
)

// generations is implemented by stores that can list and load a session's
// kept generations, as checkpoint.Dir and checkpoint.Memory do.
type generations interface {
	Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error)
	LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error)
}

// checkBestAndOrigin: the envelope fields of keep-best and forks come back.
func checkBestAndOrigin(ctx context.Context, s Store, r *report) {
	for _, c := range []*checkpoint.Checkpoint{
		withBestAndOrigin(Checkpoint("best-origin", 1), 1, checkpoint.Origin{}),
		withBestAndOrigin(Checkpoint("best-origin", 2), 0, checkpoint.Origin{Session: "parent", Generation: 7}),
		withBestAndOrigin(Checkpoint("best-origin", 3), 2, checkpoint.Origin{Session: "parent", Generation: 1<<64 - 1}),
	} {
		if save(ctx, r, s, c) {
			expect(ctx, r, s, c, "BestGeneration and Origin")
		}
	}
}

func withBestAndOrigin(c *checkpoint.Checkpoint, best uint64, origin checkpoint.Origin) *checkpoint.Checkpoint {
	c.BestGeneration, c.Origin = best, origin
	return c
}

// checkGenerations: a store that lists generations lists the kept ones,
// oldest first, the newest always among them, each as saved but with
// Engine and State nil, and loads each whole; a generation or session
// never saved is not found; results are copies; a cancelled context and
// invalid names fail.
func checkGenerations(ctx context.Context, s Store, r *report) {
	g, ok := s.(generations)
	if !ok {
		r.skip = "store has no Generations and LoadGeneration methods"
		return
	}
	if list, err := g.Generations(ctx, "history"); err != nil || len(list) != 0 {
		r.errorf("Generations of a session never saved: %d generations, error %v; want none and no error", len(list), err)
	}
	saved := map[uint64]*checkpoint.Checkpoint{}
	for gen := uint64(1); gen <= 4; gen++ {
		c := withBestAndOrigin(Checkpoint("history", gen), gen/2, checkpoint.Origin{})
		if !save(ctx, r, s, c) {
			return
		}
		saved[gen] = c
	}
	if !save(ctx, r, s, Checkpoint("history-other", 9)) {
		return
	}
	list, err := g.Generations(ctx, "history")
	if err != nil {
		r.errorf("Generations(history): %v", err)
		return
	}
	if !slices.ContainsFunc(list, func(c *checkpoint.Checkpoint) bool { return c != nil && c.Generation == 4 }) {
		r.errorf("Generations(history) lists %d generations, not the newest, generation 4", len(list))
	}
	for i, c := range list {
		if c == nil {
			r.errorf("Generations(history) listed a nil checkpoint")
			return
		}
		if i > 0 && c.Generation <= list[i-1].Generation {
			r.errorf("Generations(history): generation %d after %d, want ascending", c.Generation, list[i-1].Generation)
		}
		want := saved[c.Generation]
		if want == nil {
			r.errorf("Generations(history) lists generation %d, never saved", c.Generation)
			continue
		}
		if c.Engine != nil || c.State != nil {
			r.errorf("Generations(history): generation %d has Engine or State, want nil", c.Generation)
		}
		env := want.Clone()
		env.Engine, env.State = nil, nil
		if diff := Diff(env, c); diff != "" {
			r.errorf("Generations(history): generation %d mismatch (-want +got):\n%s", c.Generation, diff)
		}
		got, err := g.LoadGeneration(ctx, "history", c.Generation)
		if err != nil {
			r.errorf("LoadGeneration(history, %d): %v", c.Generation, err)
			continue
		}
		if diff := Diff(want, got); diff != "" {
			r.errorf("LoadGeneration(history, %d) mismatch (-want +got):\n%s", c.Generation, diff)
		}
		scribble(got)
		c.Status = "scribbled"
	}
	if again, err := g.LoadGeneration(ctx, "history", 4); err == nil {
		if diff := Diff(saved[4], again); diff != "" {
			r.errorf("changing what LoadGeneration or Generations returned changed the store (-want +got):\n%s", diff)
		}
	}
	if again, err := g.Generations(ctx, "history"); err == nil && len(again) > 0 && again[len(again)-1].Status == "scribbled" {
		r.errorf("changing what Generations returned changed the store")
	}
	for _, tc := range []struct {
		session string
		gen     uint64
	}{{"history", 5}, {"history", 0}, {"never-saved", 1}} {
		if _, err := g.LoadGeneration(ctx, tc.session, tc.gen); !errors.Is(err, checkpoint.ErrNotFound) {
			r.errorf("LoadGeneration(%s, %d): got error %v, want one matching checkpoint.ErrNotFound", tc.session, tc.gen, err)
		}
	}
	long := strings.Repeat("x", 300)
	for _, name := range []string{"", "../escape", long} {
		if _, err := g.Generations(ctx, name); !errors.Is(err, checkpoint.ErrInvalidSession) {
			r.errorf("Generations(%.20q): got error %v, want checkpoint.ErrInvalidSession", name, err)
		}
		if _, err := g.LoadGeneration(ctx, name, 1); !errors.Is(err, checkpoint.ErrInvalidSession) {
			r.errorf("LoadGeneration(%.20q): got error %v, want checkpoint.ErrInvalidSession", name, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.Generations(cancelled, "history"); !errors.Is(err, context.Canceled) {
		r.errorf("Generations under a cancelled context: got error %v, want context.Canceled", err)
	}
	if _, err := g.LoadGeneration(cancelled, "history", 4); !errors.Is(err, context.Canceled) {
		r.errorf("LoadGeneration under a cancelled context: got error %v, want context.Canceled", err)
	}
}
