package iterate_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// noop is the cheapest worker: nothing to assess, nothing to do.
type noop struct{}

func (noop) Assess(context.Context, int) (gap.Assessment, error) { return gap.Assessment{}, nil }
func (noop) Work(_ context.Context, n int, _ iterate.Task) (iterate.Outcome[int], error) {
	return iterate.Outcome[int]{Part: n + 1}, nil
}
func (noop) Integrate(_ context.Context, _ int, outs []iterate.Outcome[int]) (int, error) {
	return outs[0].Part, nil
}

// deep is a worker whose assessments exercise the history: scores,
// work remaining that changes every iteration, usage to charge.
type deep struct{ remaining []string }

func (d *deep) Assess(_ context.Context, n int) (gap.Assessment, error) {
	d.remaining[0] = strconv.Itoa(n % 7) // changes: never stuck
	return gap.Assessment{Score: float64(n%10) / 10, WorkRemaining: d.remaining}, nil
}
func (d *deep) Work(_ context.Context, n int, _ iterate.Task) (iterate.Outcome[int], error) {
	return iterate.Outcome[int]{Part: n + 1, Usage: budget.Usage{Tokens: 10}}, nil
}
func (d *deep) Integrate(_ context.Context, _ int, outs []iterate.Outcome[int]) (int, error) {
	return outs[0].Part, nil
}

// step is the cheapest Func step.
func step(_ context.Context, n int, _ iterate.Round) (int, error) { return n + 1, nil }

// movingGap is a worker whose every assessment has one coverage gap, below
// the default threshold, that moves every iteration (its detail changes, so
// the loop is never stuck): the path of a research-style host.
type movingGap struct{}

func (movingGap) Assess(_ context.Context, n int) (gap.Assessment, error) {
	return gap.Assessment{FilesAnalyzed: n % 50, EstimatedFiles: 100}, nil
}
func (movingGap) Work(_ context.Context, n int, _ iterate.Task) (iterate.Outcome[int], error) {
	return iterate.Outcome[int]{Part: n + 1}, nil
}
func (movingGap) Integrate(_ context.Context, _ int, outs []iterate.Outcome[int]) (int, error) {
	return outs[0].Part, nil
}

// BenchmarkLoop measures one iteration of a loop (ns/op and allocs/op are
// per iteration).
func BenchmarkLoop(b *testing.B) {
	b.Run("noop", func(b *testing.B) {
		b.ReportAllocs()
		res, err := iterate.New(noop{}, iterate.WithMaxIterations(b.N)).Run(context.Background(), 0)
		if err != nil || res.Iterations != b.N {
			b.Fatal(err, res.Iterations)
		}
	})
	b.Run("func", func(b *testing.B) {
		b.ReportAllocs()
		res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(b.N)).Run(context.Background(), 0)
		if err != nil || res.Iterations != b.N {
			b.Fatal(err, res.Iterations)
		}
	})
	b.Run("gap", func(b *testing.B) {
		b.ReportAllocs()
		res, err := iterate.New(movingGap{}, iterate.WithMaxIterations(b.N)).Run(context.Background(), 0)
		if err != nil || res.Iterations != b.N {
			b.Fatal(err, res.Iterations, res.Reason)
		}
	})
	b.Run("memory-checkpoint", func(b *testing.B) {
		b.ReportAllocs()
		res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(b.N),
			iterate.WithCheckpointer(&checkpoint.Memory{})).Run(context.Background(), 0)
		if err != nil || res.Iterations != b.N {
			b.Fatal(err, res.Iterations)
		}
	})
	b.Run("memory-checkpoint-keep-best", func(b *testing.B) {
		// The best is found once (the scores never improve): what
		// WithKeepBest costs an iteration is its scoring and the saved
		// best's encoding, copied.
		b.ReportAllocs()
		res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(b.N), iterate.WithKeepBest(),
			iterate.WithCheckpointer(&checkpoint.Memory{})).Run(context.Background(), 0)
		if err != nil || res.Iterations != b.N || res.Best == nil {
			b.Fatal(err, res.Iterations)
		}
	})
	b.Run("cancelable", func(b *testing.B) {
		b.ReportAllocs()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(b.N)).Run(ctx, 0)
		if err != nil || res.Iterations != b.N {
			b.Fatal(err, res.Iterations)
		}
	})
	b.Run("noop-memory-checkpoint", func(b *testing.B) {
		b.ReportAllocs()
		res, err := iterate.New(noop{}, iterate.WithMaxIterations(b.N),
			iterate.WithCheckpointer(&checkpoint.Memory{})).Run(context.Background(), 0)
		if err != nil || res.Iterations != b.N {
			b.Fatal(err, res.Iterations)
		}
	})
	for _, depth := range []int{100, 100_000} {
		b.Run("depth="+strconv.Itoa(depth), func(b *testing.B) { benchDeep(b, depth) })
	}
}

// BenchmarkRun measures whole runs: what a tool that starts a loop per
// request pays each time.
func BenchmarkRun(b *testing.B) {
	b.Run("one-iteration", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(1)).Run(ctx, 0)
			if err != nil || res.Iterations != 1 {
				b.Fatal(err, res.Iterations)
			}
		}
	})
}

// benchDeep runs depth iterations untimed, then b.N timed ones, with the
// history, budget, checkpoints and an observer in use, and reports the live
// heap at the end.
func benchDeep(b *testing.B, depth int) {
	b.ReportAllocs()
	var events atomic.Int64
	var heap uint64
	observe := func(e iterate.Event) {
		events.Add(1)
		switch e := e.(type) {
		case iterate.IterationEnded:
			if e.Iteration() == depth {
				b.ResetTimer()
			}
		case iterate.LoopStopped:
			b.StopTimer()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heap = ms.HeapAlloc
		}
	}
	eng := iterate.New(&deep{remaining: []string{"", "phase 7", "phase 8"}},
		iterate.WithMaxIterations(depth+b.N),
		iterate.WithConvergence(converge.Any(converge.Failures{}, converge.NoProgress{}, converge.IterationLimit{})),
		iterate.WithBudget(budget.Limits{Tokens: 1 << 50}),
		iterate.WithCheckpointer(&checkpoint.Memory{}, iterate.Journal),
		iterate.WithObserver(observe))
	res, err := eng.Run(context.Background(), 0)
	if err != nil || res.Iterations != depth+b.N {
		b.Fatal(err, res.Iterations, res.Reason)
	}
	b.ReportMetric(float64(heap), "heap-B")
}

// BenchmarkFanout runs one iteration of 1000 tasks that each wait 1 ms,
// eight at a time, and reports efficiency: the ideal time (the tasks' own
// measured time divided by the limit) over the actual time.
func BenchmarkFanout(b *testing.B) {
	b.Run("tasks=1000/limit=8", func(b *testing.B) {
		const tasks, limit = 1000, 8
		var busy atomic.Int64
		w := &iterate.FuncWorker[int]{Do: func(ctx context.Context, n int, r iterate.Round) (int, error) {
			start := time.Now()
			time.Sleep(time.Millisecond)
			busy.Add(int64(time.Since(start)))
			return n, nil
		}}
		plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
			return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, tasks)}, nil
		})
		eng := iterate.New(w, iterate.WithMaxIterations(1), iterate.WithStrategy(plan), iterate.WithParallelism(limit))
		var actual time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := eng.Run(context.Background(), 0); err != nil {
				b.Fatal(err)
			}
			actual += time.Since(start)
		}
		ideal := time.Duration(busy.Load()) / limit
		b.ReportMetric(float64(ideal)/float64(actual), "efficiency")
	})
}

// BenchmarkCancel measures the time from cancel() to Run returning, with the
// in-memory checkpointer saving the interrupted state.
func BenchmarkCancel(b *testing.B) {
	store := &checkpoint.Memory{}
	started := make(chan struct{}, 1)
	w := iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) {
		started <- struct{}{}
		<-ctx.Done()
		return n, ctx.Err()
	})
	eng := iterate.New(w, iterate.WithCheckpointer(store), iterate.WithMaxIterations(0))
	b.ResetTimer()
	b.StopTimer()
	for range b.N {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			_, _ = eng.Run(ctx, 0)
			close(done)
		}()
		<-started
		b.StartTimer()
		cancel()
		<-done
		b.StopTimer()
	}
}
