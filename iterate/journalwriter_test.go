package iterate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// gatedStore is a store that takes the state as bytes (so the journal's
// saves are its writer's) and records what each save holds: the tasks
// journaled in it and its state. The first
// save that holds a journal closes first and waits for release.
type gatedStore struct {
	mem     checkpoint.Memory
	first   chan struct{} // closed when the first journal save arrives
	release chan struct{} // closed by the test to let it end
	once    sync.Once
	mu      sync.Mutex
	saves   []string
	at      []time.Time // when each save was made
}

func (s *gatedStore) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}

func durationsSince(start time.Time, at []time.Time) []time.Duration {
	var d []time.Duration
	for _, t := range at {
		d = append(d, t.Sub(start))
	}
	return d
}

func newGatedStore() *gatedStore {
	return &gatedStore{first: make(chan struct{}), release: make(chan struct{})}
}

func (s *gatedStore) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	what := fmt.Sprintf("state %s", c.State)
	if tasks := iterate.JournaledTasks(c); len(tasks) > 0 {
		what = fmt.Sprintf("journal %v, state %s", tasks, c.State)
		s.once.Do(func() {
			close(s.first)
			<-s.release
		})
	}
	s.mu.Lock()
	s.saves = append(s.saves, what)
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	return s.mem.Save(ctx, c)
}

func (s *gatedStore) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	return s.mem.Load(ctx, session)
}

func (s *gatedStore) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.saves...)
}

// twoTasks runs one iteration of two tasks: the second ends only once the
// journal's first save is in flight (so that it ends during that save);
// Integrate waits for integrate, when set, and adds the tasks' parts.
type twoTasks struct {
	first     <-chan struct{}
	integrate <-chan struct{}
}

func (w twoTasks) Assess(_ context.Context, s int) (gap.Assessment, error) {
	return gap.Assessment{Complete: s > 0}, nil
}

func (w twoTasks) Work(_ context.Context, _ int, t iterate.Task) (iterate.Outcome[int], error) {
	if t.Index == 1 {
		<-w.first
	}
	return iterate.Outcome[int]{Part: t.Index + 1}, nil
}

func (w twoTasks) Integrate(_ context.Context, s int, outs []iterate.Outcome[int]) (int, error) {
	if w.integrate != nil {
		<-w.integrate
	}
	for _, o := range outs {
		s = 10*s + o.Part
	}
	return s, nil
}

// eventLog records, in order, the TaskEnded, CheckpointSaved and
// IterationEnded events of a run.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) observe(e iterate.Event) {
	var what string
	switch e := e.(type) {
	case iterate.TaskEnded:
		what = fmt.Sprintf("task %d ended", e.Task.Index)
	case iterate.CheckpointSaved:
		what = "saved"
	case iterate.IterationEnded:
		what = "iteration ended"
	default:
		return
	}
	l.mu.Lock()
	l.events = append(l.events, what)
	l.mu.Unlock()
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func runTwoTasks(w twoTasks, store *gatedStore, log *eventLog) chan error {
	plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 2)}, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := iterate.New[int](w, iterate.WithStrategy(plan), iterate.WithParallelism(2), iterate.WithObserver(log.observe),
			iterate.WithCheckpointer(store, iterate.Journal|iterate.Strict)).Run(context.Background(), 0)
		done <- err
	}()
	return done
}

// Rule (Journal, with the writer): a task that ends while another task's
// journal save is in flight is saved by the iteration's own save when the
// loop has integrated the iteration by the time the save in flight ends:
// a save less, and the task's work durable as soon as a save of its own
// would have made it; its TaskEnded is sent once that save has returned.
// Mutations caught: the writer ignoring journal.close (it saves the second
// task too: a journal save between the two); a task's TaskEnded sent when
// it ends, before its save.
func TestJournalWriterSupersededByIterationSave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, log := newGatedStore(), &eventLog{}
		done := runTwoTasks(twoTasks{first: store.first}, store, log)
		time.Sleep(iterate.JournalLinger) // the writer's linger, on the bubble's clock
		synctest.Wait()                   // the first task's save in flight, the second task ended, the loop integrated and waiting
		close(store.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := []string{"journal [[1 0]], state 0", "state 12", "state 12"} // the iteration's save, then the final one
		if diff := cmp.Diff(want, store.recorded()); diff != "" {
			t.Errorf("saves (-want +got):\n%s", diff)
		}
		want = []string{"saved", "task 0 ended", "iteration ended", "saved", "task 1 ended", "saved"}
		if diff := cmp.Diff(want, log.get()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// Rule (Journal, with the writer): a task that ends while another task's
// journal save is in flight is saved as soon as that save ends, while the
// host's Integrate is still running: its work is never made to wait for
// the iteration's integration. Mutation caught: the writer leaving the
// entries that ended during its save to the loop (returning after one
// save): the second task is then durable only once Integrate returns.
func TestJournalWriterDoesNotWaitForIntegrate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, log := newGatedStore(), &eventLog{}
		integrate := make(chan struct{})
		done := runTwoTasks(twoTasks{first: store.first, integrate: integrate}, store, log)
		time.Sleep(iterate.JournalLinger) // the writer's linger, on the bubble's clock
		synctest.Wait()                   // the first task's save in flight, the second task ended, Integrate waiting
		close(store.release)
		synctest.Wait() // the writer done, Integrate still waiting
		want := []string{"journal [[1 0]], state 0", "journal [[1 0] [1 1]], state 0"}
		if diff := cmp.Diff(want, store.recorded()); diff != "" {
			t.Errorf("saves while Integrate runs (-want +got):\n%s", diff)
		}
		close(integrate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want = append(want, "state 12", "state 12")
		if diff := cmp.Diff(want, store.recorded()); diff != "" {
			t.Errorf("saves (-want +got):\n%s", diff)
		}
		want = []string{"saved", "task 0 ended", "saved", "task 1 ended", "iteration ended", "saved", "saved"}
		if diff := cmp.Diff(want, log.get()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// inPlace is twoTasks over a map, which Integrate changes in place, as a
// host's Integrate may, before it waits for integrate.
type inPlace struct {
	first     <-chan struct{}
	integrate <-chan struct{}
}

func (w inPlace) Assess(_ context.Context, s map[string]int) (gap.Assessment, error) {
	return gap.Assessment{Complete: s["n"] > 0}, nil
}

func (w inPlace) Work(_ context.Context, _ map[string]int, t iterate.Task) (iterate.Outcome[map[string]int], error) {
	if t.Index == 1 {
		<-w.first
	}
	return iterate.Outcome[map[string]int]{}, nil
}

func (w inPlace) Integrate(_ context.Context, s map[string]int, outs []iterate.Outcome[map[string]int]) (map[string]int, error) {
	s["n"] += len(outs)
	<-w.integrate
	return s, nil
}

// Rule (Journal, with the writer): the writer's saves take the state the
// iteration started from, encoded once, while the tasks ran, never
// r.state again: the host's Integrate, which may change that state in
// place, runs while the writer saves. Mutation caught: the writer
// encoding the state at each save (the second save then holds
// Integrate's change, n = 2, beside the journal that would add it again).
func TestJournalWriterTakesTheStateEncodedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newGatedStore()
		integrate := make(chan struct{})
		plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
			return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 2)}, nil
		})
		done := make(chan error, 1)
		go func() {
			_, err := iterate.New[map[string]int](inPlace{first: store.first, integrate: integrate}, iterate.WithStrategy(plan),
				iterate.WithParallelism(2), iterate.WithCheckpointer(store, iterate.Journal|iterate.Strict)).Run(context.Background(), map[string]int{"n": 0})
			done <- err
		}()
		time.Sleep(iterate.JournalLinger) // the writer's linger, on the bubble's clock
		synctest.Wait()                   // the first task's save in flight, the second task ended, Integrate waiting
		close(store.release)
		synctest.Wait() // the writer done, Integrate still waiting
		close(integrate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := []string{`journal [[1 0]], state {"n":0}`, `journal [[1 0] [1 1]], state {"n":0}`, `state {"n":2}`, `state {"n":2}`}
		if diff := cmp.Diff(want, store.recorded()); diff != "" {
			t.Errorf("saves (-want +got):\n%s", diff)
		}
	})
}

// quickTasks runs one iteration of two tasks that end at once.
type quickTasks struct{}

func (quickTasks) Assess(_ context.Context, s int) (gap.Assessment, error) {
	return gap.Assessment{Complete: s > 0}, nil
}

func (quickTasks) Work(_ context.Context, _ int, t iterate.Task) (iterate.Outcome[int], error) {
	return iterate.Outcome[int]{Part: t.Index + 1}, nil
}

func (quickTasks) Integrate(_ context.Context, s int, outs []iterate.Outcome[int]) (int, error) {
	return twoTasks{}.Integrate(context.Background(), s, outs)
}

// Rule (Journal, with the writer): the writer waits journalLinger before
// its first save; tasks that end meanwhile share its save, and when the
// loop integrates the iteration meanwhile, the iteration's save holds them
// all: an iteration of quick tasks costs one save. Their TaskEnded events
// follow that save. Mutation caught: no linger (the first task's journal
// save comes first).
func TestJournalWriterLingers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, log := newGatedStore(), &eventLog{}
		close(store.release)
		plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
			return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 2)}, nil
		})
		_, err := iterate.New[int](quickTasks{}, iterate.WithStrategy(plan), iterate.WithParallelism(2), iterate.WithObserver(log.observe),
			iterate.WithCheckpointer(store, iterate.Journal|iterate.Strict)).Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"state 12", "state 12"}, store.recorded()); diff != "" {
			t.Errorf("saves (-want +got):\n%s", diff)
		}
		got := log.get()
		if len(got) == 5 { // the tasks end in either order
			slices.Sort(got[2:4])
		}
		want := []string{"iteration ended", "saved", "task 0 ended", "task 1 ended", "saved"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// Rule (Journal, with the writer): the writer's linger is bounded: a task
// that ends while another runs on is saved journalLinger after its end,
// not when the other ends. Mutations caught: a writer that waits for
// every task of the stage to end; a linger of an hour.
func TestJournalWriterLingerIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, log := newGatedStore(), &eventLog{}
		close(store.release)
		second := make(chan struct{})
		start := time.Now()
		done := runTwoTasks(twoTasks{first: second}, store, log)
		time.Sleep(time.Hour) // the second task runs on
		synctest.Wait()
		if diff := cmp.Diff([]string{"journal [[1 0]], state 0"}, store.recorded()); diff != "" {
			t.Errorf("saves while the second task runs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"saved", "task 0 ended"}, log.get()); diff != "" {
			t.Errorf("events while the second task runs (-want +got):\n%s", diff)
		}
		// The documented bound (Journal), not the constant: 1 ms.
		if at := store.times(); len(at) != 1 || at[0].Sub(start) > time.Millisecond {
			t.Errorf("the first task saved %v after its end, want 1ms at most", durationsSince(start, at))
		}
		close(second)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// failingStore takes the state as bytes and fails every save; first is
// closed at the first.
type failingStore struct {
	mem   checkpoint.Memory
	once  sync.Once
	first chan struct{}
}

func (s *failingStore) Save(context.Context, *checkpoint.Checkpoint) error {
	s.once.Do(func() { close(s.first) })
	return syscall.EIO
}

func (s *failingStore) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	return s.mem.Load(ctx, session)
}

// Rule (Journal, with the writer, under Strict): a journal save that
// fails for good ends the run after the iteration in flight, as a task's
// own save does, and every task's TaskEnded is still sent, once (the
// first task's, whose save failed, and the second's, which ended after).
// Mutation caught: sendEnds keeping the events it sent (sent again by the
// stop).
func TestJournalWriterStrictFailure(t *testing.T) {
	log := &eventLog{}
	store := &failingStore{first: make(chan struct{})}
	plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 2)}, nil
	})
	res, err := iterate.New[int](twoTasks{first: store.first}, iterate.WithStrategy(plan), iterate.WithParallelism(2), iterate.WithObserver(log.observe),
		iterate.WithMaxIterations(5), iterate.WithCheckpointer(store, iterate.Journal|iterate.Strict)).Run(context.Background(), 0)
	var se *iterate.StopError
	if !errors.As(err, &se) || !errors.Is(err, syscall.EIO) || res.Iterations != 1 {
		t.Fatalf("err = %v after %d iterations, want a StopError with EIO after the first", err, res.Iterations)
	}
	ended := 0
	for _, e := range log.get() {
		if strings.HasPrefix(e, "task ") {
			ended++
		}
	}
	if ended != 2 {
		t.Errorf("%d TaskEnded events, want 2: %v", ended, log.get())
	}
}

// panickyBytesStore takes the state as bytes and panics in every save of
// one kind: a journal save (the writer's) or the loop's. It closes
// journaled at the first journal save.
type panickyBytesStore struct {
	mem       checkpoint.Memory
	journal   bool // the kind of save that panics
	once      sync.Once
	journaled chan struct{}
	panicked  atomic.Bool
}

func (s *panickyBytesStore) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	journal := len(iterate.JournaledTasks(c)) > 0
	if journal {
		s.once.Do(func() { close(s.journaled) })
	}
	if journal == s.journal {
		s.panicked.Store(true)
		panic("store bug")
	}
	return s.mem.Save(ctx, c)
}

func (s *panickyBytesStore) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	return s.mem.Load(ctx, session)
}

// Rule (panic policy, with the journal's writer): a host store's panic in
// a save of the journal's writer (on its goroutine) or of the loop is that
// save's error, a *PanicError: a warning under best effort, the end of the
// run under Strict. The second task waits for the first journal save, so
// that the writer makes one. Mutation caught: the writer calling the
// store without a recover (the test process dies).
func TestJournalWriterPanicIsAnError(t *testing.T) {
	for _, journal := range []bool{true, false} {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprintf("journal=%v strict=%v", journal, strict), func(t *testing.T) {
				store := &panickyBytesStore{journal: journal, journaled: make(chan struct{})}
				persist := iterate.Journal
				if strict {
					persist |= iterate.Strict
				}
				plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
					return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 2)}, nil
				})
				res, err := iterate.New[int](twoTasks{first: store.journaled}, iterate.WithStrategy(plan), iterate.WithParallelism(2),
					iterate.WithCheckpointer(store, persist)).Run(context.Background(), 0)
				if !store.panicked.Load() {
					t.Fatal("the store never panicked")
				}
				if !strict {
					if err != nil || res.Status != iterate.Converged {
						t.Fatalf("best effort: %v (%s), want the run to go on", err, res.Status)
					}
					return
				}
				var pe *iterate.PanicError
				if !errors.As(err, &pe) || pe.Where != "checkpointer Save" {
					t.Fatalf("err %v, want a *PanicError of the store's Save", err)
				}
			})
		}
	}
}
