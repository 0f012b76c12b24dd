package pgcheckpoint_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

// retentionModel is the documented retention rule, written out: after a
// save, the generations older than the newest keep are pruned (unless
// all), then, under a byte limit, the oldest while the session exceeds it;
// never the newest, nor, with best, the generation the newest names.
type retentionModel struct {
	keep     int
	all      bool
	best     bool
	maxBytes int64
	kept     []uint64
	size     map[uint64]int64
}

func (m *retentionModel) save(gen, bestGen uint64, size int64) {
	m.size[gen] = size
	gens := append(slices.Clone(m.kept), gen)
	protected := func(g uint64) bool { return g == gen || (m.best && bestGen != 0 && g == bestGen) }
	drop := map[uint64]bool{}
	if !m.all {
		for _, g := range gens[:max(len(gens)-m.keep, 0)] {
			drop[g] = !protected(g)
		}
	}
	if m.maxBytes > 0 {
		var total int64
		for _, g := range gens {
			if !drop[g] {
				total += m.size[g]
			}
		}
		for _, g := range gens {
			if total <= m.maxBytes {
				break
			}
			if !drop[g] && !protected(g) {
				drop[g] = true
				total -= m.size[g]
			}
		}
	}
	m.kept = slices.DeleteFunc(gens, func(g uint64) bool { return drop[g] })
}

// TestRetentionRule: over random sequences of saves, each naming some earlier
// generation (or itself, or none) as the best, with random Keep, KeepAll,
// KeepBest and MaxBytes, the generations a store keeps are those of the
// documented rule after every save; the best is never pruned under
// KeepBest, and every kept generation loads whole.
func TestRetentionRule(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(21, 3))
	for trial := range 24 {
		m := &retentionModel{keep: 1 + rng.IntN(4), all: rng.IntN(4) == 0, best: rng.IntN(3) > 0, size: map[uint64]int64{}}
		if rng.IntN(2) == 0 {
			m.maxBytes = int64(200 + rng.IntN(800))
		}
		opts := []pgcheckpoint.Option{pgcheckpoint.Keep(m.keep), pgcheckpoint.MaxBytes(m.maxBytes)}
		if m.all {
			opts = append(opts, pgcheckpoint.KeepAll())
		}
		if m.best {
			opts = append(opts, pgcheckpoint.KeepBest())
		}
		name := fmt.Sprintf("trial %d: keep %d, all %v, best %v, max bytes %d", trial, m.keep, m.all, m.best, m.maxBytes)
		s := openStore(t, pool, newSchema(t, pool), opts...)
		var best uint64
		for gen := uint64(1); gen <= uint64(6+rng.IntN(10)); gen++ {
			switch r := rng.IntN(4); {
			case r == 0:
				best = gen // a new best
			case r == 1 && best == 0:
				best = 0
			}
			state := make([]byte, 20+rng.IntN(300))
			c := &checkpoint.Checkpoint{Session: "s", Generation: gen, Status: "running", Iteration: int(gen),
				Time: time.Unix(int64(gen), 0).UTC(), BestGeneration: best, Engine: []byte("{}"), State: state}
			if err := s.Save(ctx, c); err != nil {
				t.Fatalf("%s: save %d: %v", name, gen, err)
			}
			m.save(gen, best, int64(len(c.Engine)+len(c.State)))
			list, err := s.Generations(ctx, "s")
			if err != nil {
				t.Fatalf("%s: Generations: %v", name, err)
			}
			var got []uint64
			for _, c := range list {
				got = append(got, c.Generation)
			}
			if !slices.Equal(got, m.kept) {
				t.Fatalf("%s: after saving generation %d (best %d), kept %v, want %v", name, gen, best, got, m.kept)
			}
			if m.best && best != 0 && !slices.Contains(got, best) {
				t.Fatalf("%s: the best, generation %d, was pruned", name, best)
			}
		}
		for _, g := range m.kept {
			c, err := s.LoadGeneration(ctx, "s", g)
			if err != nil || c.Generation != g || len(c.State) != int(m.size[g])-2 {
				t.Fatalf("%s: LoadGeneration(%d): %v, %v", name, g, c, err)
			}
		}
	}
}
