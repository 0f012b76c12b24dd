package iteratetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// crashEnv carries the orders of a child of the crash kit.
const crashEnv = "REFINE_CRASH_CHILD"

// crashOrder is what a child of the crash kit is told: which call of which
// test it is, where its store and its log are, and where to die.
type crashOrder struct {
	Name string `json:"name"`
	Seq  int    `json:"seq"`
	Dir  string `json:"dir"`
	Log  string `json:"log"`
	Save int    `json:"save"`
	At   string `json:"at"`
}

// CrashChild reports whether this process is a child that [Crash] started
// (the test binary, run again). A TestMain with costly setup that the
// loop's test does not need, such as building a program for end-to-end
// tests, can skip it there:
//
//	func TestMain(m *testing.M) {
//		if iteratetest.CrashChild() {
//			os.Exit(m.Run())
//		}
//		...
//	}
func CrashChild() bool { return os.Getenv(crashEnv) != "" }

// CrashOption configures [Crash].
type CrashOption interface{ applyCrash(*crashConfig) }

type crashConfig struct {
	store   func(dir string) iterate.Checkpointer
	compare []cmp.Option
	timeout time.Duration
}

type crashOption func(*crashConfig)

func (f crashOption) applyCrash(c *crashConfig) { f(c) }

// CrashStore sets the store the loop is crashed on: store returns it for
// a directory of its own (empty, one per run), and must keep what is
// saved there across processes. The default is checkpoint.NewDir(dir).
// A host with a store of its own (a database keyed by dir, a wrapper of
// checkpoint.Dir) passes it to see that a kill at any of its boundaries
// keeps the engine's promises.
func CrashStore(store func(dir string) iterate.Checkpointer) CrashOption {
	return crashOption(func(c *crashConfig) {
		if store != nil {
			c.store = store
		}
	})
}

// CrashCompare adds go-cmp options to the comparison of a resumed loop's
// result with the uninterrupted run's, e.g. cmpopts.IgnoreFields for a
// field of the state that holds a time. By default slices and maps that
// are nil and empty compare equal, as do NaNs, and times by Equal.
func CrashCompare(opts ...cmp.Option) CrashOption {
	return crashOption(func(c *crashConfig) { c.compare = append(c.compare, opts...) })
}

// Crash kills a loop at every persistence boundary in turn, resumes it,
// and checks that it ends as the loop run uninterrupted. Each failure is
// reported to t, naming the boundary that broke the promise.
//
// engine builds the loop's engine, as the host does, with opts last:
//
//	func(opts ...iterate.Option) iterate.Engine[Notes] {
//		return iterate.New(w, append(hostOptions, opts...)...)
//	}
//
// The kit's options set the checkpointer (replacing the host's; the
// host's Persist flags, such as iterate.Journal, are kept) and add an
// observer. Crash first runs the loop from initial, uninterrupted, in
// this process, and counts its saves (the checkpoints of its iterations
// and, under iterate.Journal, the journal's save of each task). Then, for
// every save, it runs the loop from initial in a child process — the test
// binary, run again with -test.run naming t's test, whose Crash call
// becomes the child — that kills itself with SIGKILL (on Windows,
// TerminateProcess) at one of three boundaries of the save: before the
// store is called; during it, once the state is written (for
// checkpoint.Dir, to its temporary file, before the rename that publishes
// it; only for a store that takes the state as a stream, see
// iterate.StreamSaver); and after the store returned. Each time, Crash
// resumes the killed session in this process (or runs it afresh when the
// kill came before its first checkpoint) and checks:
//
//   - the resumed loop ends as the uninterrupted one: same state, status,
//     reason, iteration count, decision, usage (wall time aside), counters
//     (Result.Totals, durations aside), history (durations, and the
//     latest assessment, which is not saved, aside), best state and
//     escalation;
//   - a session whose first save had returned has a checkpoint to resume;
//   - no task runs again that the killed run had journaled (its TaskEnded
//     was sent, under iterate.Journal) or whose iteration it had saved.
//
// Everything the test does before it calls Crash runs again in every
// child: keep it cheap, and deterministic (a [Cassette] makes a loop of
// model calls so). The children's temporary directories (t.TempDir) are
// made under one of t's, and removed with it. A loop of n saves costs 2n
// or 3n child processes: crash a loop of a few iterations.
func Crash[S any](t TB, engine func(opts ...iterate.Option) iterate.Engine[S], initial S, opts ...CrashOption) {
	t.Helper()
	cfg := crashConfig{store: func(dir string) iterate.Checkpointer { return checkpoint.NewDir(dir) }, timeout: 2 * time.Minute}
	for _, o := range opts {
		if o != nil {
			o.applyCrash(&cfg)
		}
	}
	seq := crashSeq(t)
	if v := os.Getenv(crashEnv); v != "" {
		var order crashOrder
		if err := json.Unmarshal([]byte(v), &order); err != nil {
			fmt.Fprintf(os.Stderr, "iteratetest: $%s: %v\n", crashEnv, err)
			os.Exit(3)
		}
		if order.Name == t.Name() && order.Seq == seq {
			crashChild(order, engine, initial, &cfg)
		}
		return // another call of the child's test
	}
	k := &crashKit[S]{t: t, engine: engine, initial: initial, cfg: &cfg, name: t.Name(), seq: seq, root: t.TempDir()}
	k.run()
}

// crashSeqs numbers the Crash calls of each test, so that a child knows
// which of its test's calls it is.
var crashSeqs = struct {
	sync.Mutex
	m map[any]int
}{m: map[any]int{}}

func crashSeq(t TB) (n int) {
	defer func() {
		if recover() != nil { // a TB that cannot be a map key
			n = 1
		}
	}()
	crashSeqs.Lock()
	defer crashSeqs.Unlock()
	crashSeqs.m[t]++
	return crashSeqs.m[t]
}

// runPattern returns the -test.run pattern that selects the test named
// name, and its subtest.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// The boundaries of a save.
const (
	atBefore = "before"
	atDuring = "during"
	atAfter  = "after"
)

// boundary is one place the kit kills a loop.
type boundary struct {
	save, saves int
	at          string
	what        string // the save: "the journal's save of a task of iteration 2"
}

func (b boundary) String() string {
	s := fmt.Sprintf("%s save %d of %d", b.at, b.save, b.saves)
	if b.what != "" {
		s += " (" + b.what + ")"
	}
	if b.at == atDuring {
		s += ", its state written but not yet published"
	}
	return s
}

// crashKit is one call of Crash, in the parent.
type crashKit[S any] struct {
	t       TB
	engine  func(opts ...iterate.Option) iterate.Engine[S]
	initial S
	cfg     *crashConfig
	name    string
	seq     int
	root    string

	want    crashResult[S]
	journal bool // the loop journals its tasks
	broken  int  // boundaries that broke a promise
}

func (k *crashKit[S]) run() {
	t := k.t
	t.Helper()
	bounds, ok := k.reference()
	if !ok {
		return
	}
	tmp := filepath.Join(k.root, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Errorf("iteratetest: Crash: %v", err)
		return
	}
	for i, b := range bounds {
		if !k.kill(i, b, tmp) {
			k.broken++
		}
	}
	t.Logf("iteratetest: Crash: killed the loop at %d boundaries of its %d saves and resumed it: %d broke a promise",
		len(bounds), bounds[len(bounds)-1].saves, k.broken)
}

// reference runs the loop uninterrupted and returns the boundaries of its
// saves.
func (k *crashKit[S]) reference() ([]boundary, bool) {
	t := k.t
	t.Helper()
	store := newCrashStore(k.cfg.store(filepath.Join(k.root, "reference")))
	store.during = map[int]bool{}
	var mu sync.Mutex
	var whats []string
	observe := func(e iterate.Event) {
		cs, ok := e.(iterate.CheckpointSaved)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case cs.Iteration() > cs.Completed:
			k.journal = true
			whats = append(whats, fmt.Sprintf("the journal's save of a task of iteration %d", cs.Iteration()))
		case cs.Status != iterate.Running:
			whats = append(whats, fmt.Sprintf("the final checkpoint, %s", cs.Status))
		case cs.Completed == 0:
			whats = append(whats, "the first checkpoint")
		default:
			whats = append(whats, fmt.Sprintf("the checkpoint of iteration %d", cs.Completed))
		}
	}
	eng := k.engine(iterate.WithCheckpointer(store), iterate.WithObserver(observe))
	res, err := eng.Run(context.Background(), k.initial)
	if ce := (*iterate.ConfigError)(nil); errors.As(err, &ce) {
		t.Errorf("iteratetest: Crash: the uninterrupted run: %v", err)
		return nil, false
	}
	k.want = summarize(res, err)
	saves := int(store.n.Load())
	if saves == 0 {
		t.Errorf("iteratetest: Crash: the uninterrupted run saved no checkpoint through the kit's store: does engine pass its opts after the host's options?")
		return nil, false
	}
	mu.Lock()
	defer mu.Unlock()
	if len(whats) != saves {
		whats = nil // a save retried, or not reported: name them by number only
	}
	var bounds []boundary
	for n := 1; n <= saves; n++ {
		b := boundary{save: n, saves: saves}
		if whats != nil {
			b.what = whats[n-1]
		}
		for _, at := range []string{atBefore, atDuring, atAfter} {
			if at == atDuring && !store.during[n] {
				continue
			}
			b.at = at
			bounds = append(bounds, b)
		}
	}
	return bounds, true
}

// kill runs the loop in a child killed at b, resumes it and checks the
// end; it reports whether every promise held.
func (k *crashKit[S]) kill(i int, b boundary, tmp string) bool {
	t := k.t
	t.Helper()
	dir := filepath.Join(k.root, fmt.Sprintf("kill%03d", i+1))
	order := crashOrder{Name: k.name, Seq: k.seq, Dir: dir, Log: dir + ".log", Save: b.save, At: b.at}
	child, err := k.child(order, tmp)
	if err != nil {
		t.Errorf("iteratetest: Crash: kill %s: %v", b, err)
		return false
	}
	if !child.killed {
		t.Errorf("iteratetest: Crash: kill %s: the child did not reach it (%s); its output:\n%s", b, child.end, child.output)
		return false
	}
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("iteratetest: Crash: kill %s: "+format, append([]any{b}, args...)...)
		ok = false
	}

	// Resume, here.
	store := newCrashStore(k.cfg.store(dir))
	var mu sync.Mutex
	var ran []crashTask
	observe := func(e iterate.Event) {
		if te, ok := e.(iterate.TaskEnded); ok && !te.Replayed && !te.Interrupted {
			mu.Lock()
			ran = append(ran, crashTask{iteration: te.Task.Iteration, id: taskIdentity(&te.Task)})
			mu.Unlock()
		}
	}
	eng := k.engine(iterate.WithCheckpointer(store), iterate.WithObserver(observe))
	res, err := eng.Resume(context.Background())
	if errors.Is(err, checkpoint.ErrNotFound) {
		if b.save > 1 || b.at == atAfter {
			fail("the session has no checkpoint to resume, though save 1 had returned: %v", err)
		}
		res, err = eng.Run(context.Background(), k.initial)
	}
	got := summarize(res, err)
	if diff := cmp.Diff(k.want, got, k.options()...); diff != "" {
		fail("the resumed loop ended otherwise than the uninterrupted run (-uninterrupted +resumed):\n%s", diff)
	}

	// No task ran again that the killed run had saved.
	mu.Lock()
	defer mu.Unlock()
	for _, r := range ran {
		switch {
		case r.iteration <= child.saved:
			fail("task %s ran again in the resumed run, though the killed run had saved its iteration (%d)", r.id, child.saved)
		case k.journal && child.ran[r.id]:
			fail("task %s ran again in the resumed run, though the killed run had journaled it (its TaskEnded was sent)", r.id)
		}
	}
	return ok
}

// options returns the options of the comparison of results.
func (k *crashKit[S]) options() []cmp.Option {
	history := reflect.TypeFor[converge.History]()
	return append([]cmp.Option{
		cmpopts.EquateEmpty(),
		cmpopts.EquateNaNs(),
		cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		cmpopts.IgnoreUnexported(converge.History{}),
		// Not saved: a resumed loop assesses afresh, and a finished one
		// does not assess again.
		cmpopts.IgnoreFields(converge.History{}, "Current"),
		cmp.Exporter(func(t reflect.Type) bool { return t != history }),
	}, k.cfg.compare...)
}

// crashTask is a task that ran to its end, by iteration and identity.
type crashTask struct {
	iteration int
	id        string
}

// taskIdentity names a task in the kit's messages and logs: its ID, role
// and gaps, e.g. `2.1 explore [missing_context:auth]`.
func taskIdentity(t *iterate.Task) string {
	return fmt.Sprintf("%s %s %q", t.ID(), t.Role, gapKeys(t.Gaps))
}

// crashChildRun is what the kit learnt of a child from its log.
type crashChildRun struct {
	killed bool
	end    string          // how it ended when not killed
	saved  int             // the newest iteration it saved
	ran    map[string]bool // the tasks whose TaskEnded it sent
	output string
}

// child runs the test binary as a child that follows order.
func (k *crashKit[S]) child(order crashOrder, tmp string) (*crashChildRun, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(order)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run="+runPattern(order.Name), "-test.count=1")
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == crashEnv || name == RecordEnv || name == "TMPDIR"
	})
	cmd.Env = append(env, crashEnv+"="+string(data), "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The child watches its standard input: should this process die, the
	// pipe closes and the child ends.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = r
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	werr := cmd.Wait()
	w.Close()
	c := &crashChildRun{ran: map[string]bool{}, output: tail(out.String(), 4096)}
	f, err := os.Open(order.Log)
	if err != nil {
		return nil, fmt.Errorf("the child left no log (%v): %v; its output:\n%s", werr, err, c.output)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		word, arg, _ := strings.Cut(sc.Text(), " ")
		switch word {
		case "ran":
			if id, err := strconv.Unquote(arg); err == nil {
				c.ran[id] = true
			}
		case "saved":
			if n, err := strconv.Atoi(arg); err == nil {
				c.saved = max(c.saved, n)
			}
		case "kill":
			c.killed = werr != nil // it died there, not later
		case "end":
			c.end = "it ended: " + arg
		}
	}
	if !c.killed && c.end == "" {
		c.end = fmt.Sprintf("it exited: %v", werr)
	}
	return c, sc.Err()
}

// tail returns the last n bytes of s, at most.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// crashChild is the child: it runs the loop from initial in order.Dir,
// logs its progress to order.Log, and kills itself at its boundary; it
// never returns.
func crashChild[S any](order crashOrder, engine func(opts ...iterate.Option) iterate.Engine[S], initial S, cfg *crashConfig) {
	log, err := os.OpenFile(order.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "iteratetest: crash child: %v\n", err)
		os.Exit(3)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(4) // the parent is gone
	}()
	line := func(format string, args ...any) {
		_, _ = fmt.Fprintf(log, format+"\n", args...) // one write: lines never interleave
	}
	store := newCrashStore(cfg.store(order.Dir))
	store.kill, store.at, store.line = order.Save, order.At, line
	observe := func(e iterate.Event) {
		switch e := e.(type) {
		case iterate.TaskEnded:
			if !e.Replayed && !e.Interrupted {
				line("ran %s", strconv.Quote(taskIdentity(&e.Task)))
			}
		case iterate.CheckpointSaved:
			if e.Err == nil && e.Iteration() == e.Completed {
				line("saved %d", e.Completed)
			}
		}
	}
	eng := engine(iterate.WithCheckpointer(store), iterate.WithObserver(observe))
	_, err = eng.Run(context.Background(), initial)
	line("end %s", strings.ReplaceAll(fmt.Sprint(err), "\n", " "))
	os.Exit(0)
}

// killSelf ends the process at once, as SIGKILL does.
func killSelf() {
	p, err := os.FindProcess(os.Getpid())
	if err == nil {
		_ = p.Kill()
	}
	for {
		time.Sleep(time.Hour) // the signal is on its way
	}
}

// crashStore wraps the store of a run of the kit: it numbers the saves
// and, in a child, kills the process at its boundary; in the reference
// run, it notes the saves that have a boundary during them.
type crashStore struct {
	inner iterate.Checkpointer
	n     atomic.Int64

	kill   int                  // the save to die at (child)
	at     string               // and where
	line   func(string, ...any) // the child's log
	mu     sync.Mutex           // guards during
	during map[int]bool         // reference: saves with a boundary during them
}

func newCrashStore(inner iterate.Checkpointer) *crashStore {
	return &crashStore{inner: inner}
}

var (
	_ iterate.Checkpointer     = (*crashStore)(nil)
	_ iterate.StreamSaver      = (*crashStore)(nil)
	_ iterate.Locker           = (*crashStore)(nil)
	_ iterate.Remover          = (*crashStore)(nil)
	_ iterate.GenerationLoader = (*crashStore)(nil)
)

// hit passes boundary at of save n.
func (s *crashStore) hit(n int, at string) {
	if s.during != nil && at == atDuring {
		s.mu.Lock()
		s.during[n] = true
		s.mu.Unlock()
	}
	if n == s.kill && at == s.at {
		s.line("kill %d %s", n, at)
		killSelf()
	}
}

// Save saves c through the store, as a stream when the store takes one.
func (s *crashStore) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	if _, ok := s.inner.(iterate.StreamSaver); ok && c != nil {
		cc := *c
		cc.State = nil
		return s.save(ctx, &cc, bytes.NewReader(c.State))
	}
	return s.save(ctx, c, nil)
}

// SaveFrom saves c with its state from state.
func (s *crashStore) SaveFrom(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error {
	return s.save(ctx, c, state)
}

func (s *crashStore) save(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error {
	n := int(s.n.Add(1))
	s.hit(n, atBefore)
	var err error
	switch ss, ok := s.inner.(iterate.StreamSaver); {
	case state == nil:
		err = s.inner.Save(ctx, c)
	case ok:
		err = ss.SaveFrom(ctx, c, &hookedState{state: state, written: func() { s.hit(n, atDuring) }})
	default:
		var b bytes.Buffer
		if _, err = state.WriteTo(&b); err == nil {
			cc := *c
			cc.State = b.Bytes()
			err = s.inner.Save(ctx, &cc)
		}
	}
	s.hit(n, atAfter)
	return err
}

// hookedState is a state stream that calls written once it is written.
type hookedState struct {
	state   io.WriterTo
	written func()
}

func (h *hookedState) WriteTo(w io.Writer) (int64, error) {
	n, err := h.state.WriteTo(w)
	if err == nil {
		h.written()
	}
	return n, err
}

// Load loads through the store.
func (s *crashStore) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	return s.inner.Load(ctx, session)
}

// Lock locks through the store, or locks nothing when it cannot.
func (s *crashStore) Lock(ctx context.Context, session string) (uint64, func() error, error) {
	if l, ok := s.inner.(iterate.Locker); ok {
		return l.Lock(ctx, session)
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	return 0, func() error { return nil }, nil
}

// Remove removes through the store, if it can.
func (s *crashStore) Remove(ctx context.Context, session string) error {
	if r, ok := s.inner.(iterate.Remover); ok {
		return r.Remove(ctx, session)
	}
	return ctx.Err()
}

// errNoGenerations is the error of the generations of a store that keeps
// none apart.
var errNoGenerations = errors.New("iteratetest: the store keeps no generations apart")

// Generations lists through the store, if it can.
func (s *crashStore) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	if g, ok := s.inner.(iterate.GenerationLoader); ok {
		return g.Generations(ctx, session)
	}
	return nil, errNoGenerations
}

// LoadGeneration loads through the store, if it can.
func (s *crashStore) LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error) {
	if g, ok := s.inner.(iterate.GenerationLoader); ok {
		return g.LoadGeneration(ctx, session, gen)
	}
	return nil, errNoGenerations
}

// crashResult is what a loop's end is compared on.
type crashResult[S any] struct {
	State      S
	Status     iterate.Status
	Reason     string
	Iterations int
	Decision   converge.Decision
	Usage      budget.Usage // Wall zero
	Totals     iterate.Totals
	History    converge.History
	Best       *iterate.Best[S]
	Escalation *iterate.Escalation
	Err        string
}

// summarize returns what res and err are compared on: times and durations
// left out, as a resumed loop's are its own.
func summarize[S any](res *iterate.Result[S], err error) crashResult[S] {
	var r crashResult[S]
	if err != nil {
		r.Err = err.Error()
	}
	if res == nil {
		return r
	}
	r.State, r.Status, r.Reason, r.Iterations, r.Decision = res.State, res.Status, res.Reason, res.Iterations, res.Decision
	r.Usage, r.Totals, r.Best, r.Escalation = res.Usage, res.Totals, res.Best, res.Escalation
	r.Usage.Wall, r.Totals.Duration = 0, 0
	r.History = res.History
	r.History.Recent = slices.Clone(res.History.Recent)
	for i := range r.History.Recent {
		untime(&r.History.Recent[i].Attempt)
	}
	untime(&r.History.Pending)
	return r
}

// untime clears the durations of a, on copies of its slices.
func untime(a *converge.Attempt) {
	a.Duration = 0
	a.TaskRuns = slices.Clone(a.TaskRuns)
	for i := range a.TaskRuns {
		a.TaskRuns[i].Duration = 0
	}
}
