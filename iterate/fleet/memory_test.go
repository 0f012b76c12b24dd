package fleet_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// bigState is the state of a session of the kind "big": a large blob.
type bigState struct {
	Round int    `json:"round"`
	Blob  string `json:"blob"`
}

type bigLoop struct{}

func (bigLoop) Assess(_ context.Context, s bigState) (gap.Assessment, error) {
	return gap.Assessment{Complete: s.Round >= 1}, nil
}

func (bigLoop) Work(context.Context, bigState, iterate.Task) (iterate.Outcome[bigState], error) {
	return iterate.Outcome[bigState]{}, nil
}

func (bigLoop) Integrate(_ context.Context, s bigState, _ []iterate.Outcome[bigState]) (bigState, error) {
	return bigState{Round: s.Round + 1, Blob: s.Blob}, nil
}

// liveHeap returns the live heap after full collections.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Rule (issue 30, item 5): an idle worker holds no session's state. After
// a session of a 16 MB state (one iteration of two tasks: its state saved
// with every checkpoint, loaded under the lease) has completed on a worker
// of this process, the process's live heap (after a full collection, with
// the worker still working, idle) is back to within half the state of
// what it was before. (Mutation caught: pgcheckpoint pooling the
// connections of large checkpoints, its bigMessage raised above the state
// — pgx keeps each connection's buffers as large as its largest message,
// so that the idle worker holds copies of the state: four of them, +64 MB
// here.)
func TestIdleWorkerMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves hundreds of MB through the server")
	}
	pool := newPool(t, 20)
	schema := newSchema(t, pool)
	// Its own deadline, longer than waitCtx's: the state goes through the
	// server four times, slowly with -race on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.Poll(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Store().Close() })
	const size = 16 << 20 // above pgcheckpoint's bigMessage (4 MB)
	kind := fleet.MustRegister(f, "big", func(_ context.Context, small bool) (fleet.Loop[bigState], error) {
		n := size
		if small {
			n = 1
		}
		return fleet.Loop[bigState]{
			Worker: bigLoop{},
			Options: []iterate.Option{
				iterate.WithStrategy(iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
					return iterate.Plan{Action: iterate.Refine, Tasks: []iterate.Task{
						{Role: "noop", Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: "a"}}},
						{Role: "noop", Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: "b"}}},
					}}, nil
				})),
				iterate.WithMaxIterations(2),
			},
			Initial: bigState{Blob: strings.Repeat("x", n)},
		}, nil
	})
	work(t, f)
	wait := func(name string) {
		t.Helper()
		for {
			s, err := f.Session(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Status == iterate.Converged && s.Job == "completed" {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("session %s: %s, job %s", name, s.Status, s.Job)
			}
			time.Sleep(50 * time.Millisecond) // polling the server, not timing
		}
	}
	// The baseline: a worker that ran a small session (its pools, River's
	// and the engine's first allocations made).
	if _, err := kind.Submit(ctx, "small", true); err != nil {
		t.Fatal(err)
	}
	wait("small")
	before := liveHeap()
	if _, err := kind.Submit(ctx, "big", false); err != nil {
		t.Fatal(err)
	}
	wait("big")
	// What the session's run dropped may be let go of a moment later
	// (a closed connection destroyed by the pool's own goroutine): looked
	// at again for up to 10 s; what an idle worker keeps, it keeps.
	after, looks := liveHeap(), 1
	for end := time.Now().Add(10 * time.Second); after-before > size/2 && time.Now().Before(end); after, looks = liveHeap(), looks+1 {
		time.Sleep(200 * time.Millisecond) // polling the heap, not timing
	}
	t.Logf("live heap: %d MB before, %d MB after the %d MB session (looked %d times)", before>>20, after>>20, size>>20, looks)
	if grew := after - before; grew > size/2 {
		t.Errorf("the idle worker's live heap grew by %d MB after a session of %d MB; want about 0", grew>>20, size>>20)
	}
}
