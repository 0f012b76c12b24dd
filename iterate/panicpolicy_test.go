package iterate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// callRun runs the engine and reports a panic that reached Run's caller
// as an error, so that a broken panic policy fails the test instead of the
// test binary (a panic on a task goroutine still crashes it: that is the
// mutation these tests catch, loudly).
func callRun(ctx context.Context, eng iterate.Engine[int]) (res *iterate.Result[int], reached any, err error) {
	defer func() { reached = recover() }()
	res, err = eng.Run(ctx, 0)
	return res, nil, err
}

// TestObserverPanicEndsRun guards "every call into host code is covered by
// the stated panic policy, on every goroutine": an observer panicking on
// any event — on the loop's goroutine or a task's (TaskStarted, TaskEnded,
// a journal save's CheckpointSaved), in a lone or a parallel iteration,
// under a context that can end or not — ends the run with a *PanicError
// (Where "observer"), status Failed. Mutation caught: calling observers
// without a recover (the process dies, or the panic reaches Run's caller).
func TestObserverPanicEndsRun(t *testing.T) {
	events := []iterate.Event{iterate.LoopStarted{}, iterate.GapsFound{}, iterate.Decided{}, iterate.Planned{},
		iterate.IterationStarted{}, iterate.TaskStarted{}, iterate.TaskEnded{}, iterate.IterationEnded{}, iterate.CheckpointSaved{}}
	for _, ev := range events {
		for _, tasks := range []int{1, 3} {
			for _, cancellable := range []bool{false, true} {
				name := fmt.Sprintf("%s/%d tasks/cancellable=%v", reflect.TypeOf(ev).Name(), tasks, cancellable)
				t.Run(name, func(t *testing.T) {
					want := reflect.TypeOf(ev)
					var seen atomic.Int32
					observer := func(e iterate.Event) {
						if reflect.TypeOf(e) == want && seen.Add(1) == 1 {
							panic("observer bug")
						}
					}
					ctx := context.Background()
					if cancellable {
						var cancel context.CancelFunc
						ctx, cancel = context.WithCancel(ctx)
						defer cancel()
					}
					eng := iterate.New(perTask(iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s + 1, nil })),
						iterate.WithStrategy(nTasks(tasks)), iterate.WithMaxIterations(3),
						iterate.WithCheckpointer(&checkpoint.Memory{}, iterate.Journal), iterate.WithObserver(observer))
					res, reached, err := callRun(ctx, eng)
					if reached != nil {
						t.Fatalf("the observer's panic reached Run's caller: %v", reached)
					}
					var pe *iterate.PanicError
					if !errors.As(err, &pe) || pe.Where != "observer" || pe.Value != "observer bug" || !errors.Is(err, iterate.ErrPanic) {
						t.Fatalf("err %v, want a *PanicError of the observer", err)
					}
					if res.Status != iterate.Failed {
						t.Errorf("status %s, want failed", res.Status)
					}
				})
			}
		}
	}
}

// nTasks plans n tasks an iteration.
func nTasks(n int) iterate.Strategy {
	return iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
		p := iterate.Plan{Action: iterate.Refine}
		for i := range n {
			p.Tasks = append(p.Tasks, iterate.Task{Role: iterate.RoleName(fmt.Sprint("r", i))})
		}
		return p, nil
	})
}

// panickyStore is a host's Checkpointer whose method named in panicIn
// panics from its call number at on (1-indexed).
type panickyStore struct {
	mem     checkpoint.Memory
	panicIn string
	at      int32
	calls   atomic.Int32
}

func (s *panickyStore) maybePanic(method string) {
	if method == s.panicIn && s.calls.Add(1) >= s.at {
		panic("store bug in " + method)
	}
}

func (s *panickyStore) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	s.maybePanic("Save")
	return s.mem.Save(ctx, c)
}

// panickyStreamStore is a panickyStore that takes states as streams.
type panickyStreamStore struct{ *panickyStore }

func (s panickyStreamStore) SaveFrom(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error {
	s.maybePanic("SaveFrom")
	return s.mem.SaveFrom(ctx, c, state)
}

func (s *panickyStore) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	s.maybePanic("Load")
	return s.mem.Load(ctx, session)
}

func (s *panickyStore) Lock(ctx context.Context, session string) (uint64, func() error, error) {
	s.maybePanic("Lock")
	return s.mem.Lock(ctx, session)
}

// TestCheckpointerPanicIsAnError guards the same rule for a host's
// Checkpointer: a panic in Save or SaveFrom (the journal's, on a task's goroutine, and
// the loop's), Load or Lock is that call's error, a *PanicError — a failed
// save is a warning under best effort and ends the run under Strict; a
// failed Load or Lock stops the run before it starts. Mutation caught:
// calling the store without a recover.
func TestCheckpointerPanicIsAnError(t *testing.T) {
	for _, tc := range []struct {
		method string
		at     int32
		strict bool
		wantOK bool
	}{
		// A store that takes the state as bytes: the journal's saves are a
		// group commit, whose count varies (TestJournalWriterPanicIsAnError
		// aims at each kind); a run of 2 iterations saves 3 times at least.
		{"Save", 1, false, true},
		{"Save", 3, false, true},
		{"Save", 2, true, false},
		{"Save", 3, true, false},
		{"SaveFrom", 1, false, true},
		{"SaveFrom", 2, true, false},
		{"SaveFrom", 4, true, false},
		{"Load", 1, false, false}, // the run's look at the session's latest
		{"Lock", 1, false, false},
	} {
		t.Run(fmt.Sprintf("%s#%d strict=%v", tc.method, tc.at, tc.strict), func(t *testing.T) {
			for _, cancellable := range []bool{false, true} {
				var store iterate.Checkpointer = &panickyStore{panicIn: tc.method, at: tc.at}
				if tc.method == "SaveFrom" {
					store = panickyStreamStore{store.(*panickyStore)}
				}
				persist := iterate.Journal
				if tc.strict {
					persist |= iterate.Strict
				}
				ctx, cancel := context.WithCancel(context.Background())
				if !cancellable {
					ctx = context.Background()
				}
				eng := iterate.New(perTask(iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s + 1, nil })),
					iterate.WithStrategy(nTasks(3)), iterate.WithMaxIterations(2), iterate.WithCheckpointer(store, persist))
				res, reached, err := callRun(ctx, eng)
				cancel()
				if reached != nil {
					t.Fatalf("the store's panic reached Run's caller: %v", reached)
				}
				if tc.wantOK {
					if err != nil || res.Status != iterate.MaxIterations {
						t.Fatalf("best effort: %v, want the run to go on", err)
					}
					continue
				}
				var pe *iterate.PanicError
				if !errors.As(err, &pe) || pe.Where != "checkpointer "+tc.method {
					t.Fatalf("err %v, want a *PanicError of the store's %s", err, tc.method)
				}
			}
		})
	}
}

// panickySettingsPolicy is a host's policy whose Settings method panics.
type panickySettingsPolicy struct{}

func (panickySettingsPolicy) Decide(*converge.History) converge.Decision { return converge.Decision{} }
func (panickySettingsPolicy) Settings() string                           { panic("settings bug") }

// panickyScorer is a keep-best scorer that panics.
type panickyScorer struct{}

func (panickyScorer) Score(*gap.Assessment) float64 { panic("scorer bug") }

// TestSettingsPanicIsAConfigError: a host policy whose Settings method
// panics (called by New, to fingerprint the settings of a loop with
// checkpoints) makes Run return a *ConfigError wrapping a *PanicError,
// not panic in New. Mutation caught: describing the settings without a
// recover.
func TestSettingsPanicIsAConfigError(t *testing.T) {
	var eng iterate.Engine[int]
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("New panicked: %v", v)
			}
		}()
		eng = iterate.New(iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s, nil }),
			iterate.WithConvergence(panickySettingsPolicy{}), iterate.WithCheckpointer(&checkpoint.Memory{}))
	}()
	_, err := eng.Run(context.Background(), 0)
	var ce *iterate.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, iterate.ErrPanic) || !errors.Is(err, iterate.ErrInvalidOption) {
		t.Fatalf("err %v, want a *ConfigError wrapping a *PanicError", err)
	}
}

// TestScorerPanicIsAWarning: a keep-best scorer that panics is warned
// about and the run goes on without a best (the documented policy).
func TestScorerPanicIsAWarning(t *testing.T) {
	warned := 0
	res, err := iterate.New(iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s + 1, nil }),
		iterate.WithKeepBest(panickyScorer{}), iterate.WithMaxIterations(2), iterate.WithObserver(func(e iterate.Event) {
			if _, ok := e.(iterate.Warned); ok {
				warned++
			}
		})).Run(context.Background(), 0)
	if err != nil || res.Iterations != 2 || warned == 0 || res.Best != nil {
		t.Fatalf("err %v, %d iterations, %d warnings, best %v", err, res.Iterations, warned, res.Best)
	}
}
