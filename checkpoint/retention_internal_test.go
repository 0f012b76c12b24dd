package checkpoint

import (
	"math/rand/v2"
	"testing"
)

// TestRetentionDrop: over random sessions and retentions, pruning never
// drops the newest generation, nor the best under KeepBest; it keeps the
// newest Keep (unless a size limit needs them gone), every one under
// KeepAll without a limit, and, under a limit, drops generations only
// while the kept ones exceed it.
func TestRetentionDrop(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for range 20000 {
		n := 1 + rng.IntN(12)
		gens := make([]uint64, n)
		sizes := make([]int64, n)
		next := uint64(0)
		for i := range gens {
			next += 1 + uint64(rng.IntN(3))
			gens[i] = next
			sizes[i] = int64(1 + rng.IntN(100))
		}
		var best uint64
		if rng.IntN(4) > 0 {
			best = gens[rng.IntN(n)]
		}
		r := retention{all: rng.IntN(3) == 0, best: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			r.maxBytes = int64(rng.IntN(600))
		}
		keep := 1 + rng.IntN(5)
		drop := r.drop(gens, keep, best, func(i int) int64 { return sizes[i] })
		var kept int64
		for i := range gens {
			if !drop[i] {
				kept += sizes[i]
			}
		}
		fail := func(what string) {
			t.Fatalf("%s: gens %v sizes %v best %d keep %d retention %+v: drop %v", what, gens, sizes, best, keep, r, drop)
		}
		if drop[n-1] {
			fail("dropped the newest")
		}
		for i := range gens {
			protected := i == n-1 || (r.best && best != 0 && gens[i] == best)
			switch {
			case drop[i] && protected:
				fail("dropped a protected generation")
			case drop[i] && r.maxBytes == 0 && (r.all || i >= n-keep):
				fail("dropped a generation the retention keeps")
			case !drop[i] && !protected && !r.all && i < n-keep:
				fail("kept a generation beyond Keep")
			}
		}
		if r.maxBytes > 0 {
			// Within the limit, unless only protected generations are
			// left; and the last generation dropped for size (the oldest
			// go first) was needed to get there.
			if kept > r.maxBytes {
				for i := range gens {
					if !drop[i] && i != n-1 && !(r.best && best != 0 && gens[i] == best) {
						fail("above the limit with an unprotected generation kept")
					}
				}
			}
			last := -1
			for i := range gens {
				if drop[i] && (r.all || i >= n-keep) {
					last = i
				}
			}
			if last >= 0 && kept+sizes[last] <= r.maxBytes {
				fail("dropped for size within the limit")
			}
		}
	}
}
