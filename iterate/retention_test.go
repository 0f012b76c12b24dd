package iterate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// TestRetentionKeepsBest: over random score sequences (with ties) and Keep
// values, a loop with WithKeepBest saving into a store that retains the
// newest Keep generations plus the best ends with the best state the
// scores say, and its session keeps the generation that holds it (the
// initial state, best only before anything was saved, is in the record
// alone), the newest Keep generations, and nothing else.
func TestRetentionKeepsBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	ctx := context.Background()
	runs := 300
	if testing.Short() {
		runs = 60
	}
	for i := range runs {
		scores := make([]float64, 2+rng.IntN(10)) // 1 to 10 iterations
		for j := range scores {
			scores[j] = float64(rng.IntN(5)) / 4
		}
		keep := 1 + rng.IntN(4)
		var store interface {
			iterate.Checkpointer
			iterate.GenerationLoader
		}
		if i%10 == 0 { // a Dir is slower: every save is synced
			store = checkpoint.NewDir(t.TempDir(), checkpoint.Keep(keep), checkpoint.KeepBest())
		} else {
			store = &checkpoint.Memory{Keep: keep, KeepBest: true}
		}
		w := iterate.Func(func(_ context.Context, round int, _ iterate.Round) (int, error) { return round + 1, nil })
		w.AssessFunc = func(_ context.Context, round int) (gap.Assessment, error) {
			return gap.Assessment{Score: scores[round]}, nil
		}
		res, err := iterate.New(w, iterate.WithMaxIterations(len(scores)-1), iterate.WithKeepBest(),
			iterate.WithCheckpointer(store), iterate.WithSession("prop")).Run(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("scores %v keep %d (%T)", scores, keep, store)
		want := 0
		for j, s := range scores {
			if s > scores[want] {
				want = j
			}
		}
		if res.Best == nil || res.Best.Iteration != want || res.Best.State != want {
			t.Fatalf("%s: best %+v, want iteration %d", what, res.Best, want)
		}
		gens, err := store.Generations(ctx, "prop")
		if err != nil {
			t.Fatal(err)
		}
		newest := gens[len(gens)-1]
		if want == 0 {
			if newest.BestGeneration != 0 {
				t.Fatalf("%s: the initial state is best, and generation %d is named", what, newest.BestGeneration)
			}
		} else {
			c, err := store.LoadGeneration(ctx, "prop", newest.BestGeneration)
			if err != nil {
				t.Fatalf("%s: the best generation %d pruned: %v", what, newest.BestGeneration, err)
			}
			var s int
			if err := iterate.JSON.Unmarshal(c.State, &s); err != nil || s != want || c.Iteration != want {
				t.Fatalf("%s: best generation %d holds %d at iteration %d, want %d", what, c.Generation, s, c.Iteration, want)
			}
		}
		// The newest Keep generations, and the best, and nothing else.
		total := int(newest.Generation) // generations 1..newest were saved
		wantKept := map[uint64]bool{newest.BestGeneration: newest.BestGeneration != 0}
		for g := max(total-keep+1, 1); g <= total; g++ {
			wantKept[uint64(g)] = true
		}
		got := map[uint64]bool{}
		for _, g := range gens {
			got[g.Generation] = true
		}
		for g, k := range wantKept {
			if k && !got[g] {
				t.Fatalf("%s: generation %d not kept; kept %v", what, g, got)
			}
		}
		for g := range got {
			if !wantKept[g] {
				t.Fatalf("%s: generation %d kept beyond the retention; kept %v", what, g, got)
			}
		}
	}
}
