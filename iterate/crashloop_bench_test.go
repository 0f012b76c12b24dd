package iterate_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// countingStore counts the saves of a store (as a plain Checkpointer:
// no streaming, no lock).
type countingStore struct {
	iterate.Checkpointer
	saves atomic.Int64
}

func (s *countingStore) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	s.saves.Add(1)
	return s.Checkpointer.Save(ctx, c)
}

// BenchmarkCrashLoopBound measures what WithCrashLoopBound costs: a loop
// of 10 iterations of a Func (one task an iteration, whatever the plan),
// journaled, into a Memory store, with the bound off and on; saves/op counts the checkpoint saves of one
// loop (the journal's, the iterations', and with the bound one per task
// start). The store is a Memory seen as a plain Checkpointer.
func BenchmarkCrashLoopBound(b *testing.B) {
	plan := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		tasks := make([]iterate.Task, 4)
		for i := range tasks {
			tasks[i] = iterate.Task{Role: iterate.RoleExplore, Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: fmt.Sprint(i)}}}
		}
		return iterate.Plan{Action: iterate.Refine, Tasks: tasks}, nil
	})
	w := iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s + 1, nil })
	for _, bound := range []int{0, 3} {
		b.Run(fmt.Sprintf("bound=%d", bound), func(b *testing.B) {
			var saves int64
			for b.Loop() {
				store := &countingStore{Checkpointer: &checkpoint.Memory{}}
				opts := []iterate.Option{iterate.WithCheckpointer(store, iterate.Journal), iterate.WithStrategy(plan), iterate.WithMaxIterations(10)}
				if bound > 0 {
					opts = append(opts, iterate.WithCrashLoopBound(bound))
				}
				if _, err := iterate.New[int](iterate.Worker[int](w), opts...).Run(context.Background(), 0); err != nil {
					b.Fatal(err)
				}
				saves += store.saves.Load()
			}
			b.ReportMetric(float64(saves)/float64(b.N), "saves/op")
		})
	}
}
