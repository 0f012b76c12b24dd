package iterate_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// TestCheckpointSizeIsFlat: the checkpoint of a loop does not grow with its
// iteration count (bounded history, metrics and durations; no journal of the
// past).
func TestCheckpointSizeIsFlat(t *testing.T) {
	synctest.Test(t, testCheckpointSizeIsFlat) // fake time: durations do not vary
}

func testCheckpointSizeIsFlat(t *testing.T) {
	size := func(iterations int) int {
		store := &checkpoint.Memory{}
		w := &iterate.FuncWorker[int]{
			Do: func(_ context.Context, n int, _ iterate.Round) (int, error) { return n + 1, nil },
			AssessFunc: func(_ context.Context, n int) (gap.Assessment, error) {
				return gap.Assessment{Score: float64(n%10) / 10, WorkRemaining: []string{"a", string(rune('a' + n%7))}}, nil
			},
		}
		_, err := iterate.New(w, iterate.WithMaxIterations(iterations), iterate.WithCheckpointer(store)).Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		c, err := store.Load(context.Background(), iterate.DefaultSession)
		if err != nil {
			t.Fatal(err)
		}
		b, err := checkpoint.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	// Counters of the same number of digits: only a grown history could
	// make a difference.
	small, large := size(2_000), size(9_000)
	if large > small+16 {
		t.Errorf("checkpoint after 9,000 iterations is %d bytes, after 2,000 %d: it grows with the iteration count", large, small)
	}
}
