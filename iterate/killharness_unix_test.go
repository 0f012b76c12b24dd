//go:build unix

package iterate_test

// The kill harness: a loop with parallel tasks, the task journal on and a
// checkpoint.Dir store runs in a child process (this test binary, re-executed
// with $REFINE_KILL_CHILD set) and is killed with SIGKILL at random moments,
// then resumed, again and again, until it finishes. Its end must equal an
// uninterrupted run's. See RELIABILITY.md.
//
//	go test -run TestKillHarness ./iterate/                               # 50 kills
//	REFINE_KILLS=1000 REFINE_KILL_SEED=7 go test -run TestKillHarness -v ./iterate/
//
// What must be equal, and why:
//
//   - The final state, status, reason, iteration count and the counters
//     (Result.Totals: iterations, tasks, failed tasks) equal those of an
//     uninterrupted run, always: a resume continues from the last saved
//     iteration and runs the iteration in flight again.
//   - The usage on the books (Result.Usage: tokens, calls, iterations; not
//     wall time) equals the uninterrupted run's. Under SIGKILL nothing the
//     killed process spent after its last save is recorded: a task that
//     finished but was not yet journaled is run, and charged, again by the
//     next process, once. A journaled task is never run again and is charged
//     from its journal entry, once. ("Spent is spent" makes the books differ
//     only for graceful interruptions, which charge the interrupted attempt;
//     see TestTaskJournal.)
//   - The best state (WithKeepBest, by a score that rises and falls) equals
//     the uninterrupted run's: every state is assessed in some process,
//     and a best found but not yet saved when a process is killed is found
//     again when the next assesses the same state.
//   - What was really spent (every task that ran to its end, in any process)
//     is at least the books' figure; the excess is the work lost to kills,
//     and the harness reports it. With the journal on, a task that was
//     journaled, or whose iteration was saved, is never started again: the
//     harness checks every task a child starts against the checkpoint left by
//     the previous kill, and that checkpoint against every task the killed
//     child reported journaled ("ended": its TaskEnded event, sent once its
//     journal save returned): a journal that lost an entry fails there.
//
// After every kill: the session's lock is free (the kernel released the
// flock), the latest checkpoint loads without error, note or quarantined
// file, its state is the model's state after its iteration, and iteration and
// generation never go back.
//
// Porting note: the loop (killWorker, killPlan, killModel), how a checkpoint
// is read (killSaved) and what a result is compared on (killSummarize) are
// small helpers; an API change should touch only them.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

const (
	killSession    = "kill"
	killIterations = 40 // the loop converges after this many iterations

	envKillChild   = "REFINE_KILL_CHILD"   // the child's checkpoint directory
	envKillJournal = "REFINE_KILL_JOURNAL" // "1": the child journals tasks; "writer": with the journal's writer
	envKills       = "REFINE_KILLS"        // kills per harness run (default 50)
	envKillSeed    = "REFINE_KILL_SEED"    // seed of the kill schedule (default 1)
)

// ---- The loop: deterministic apart from timing. ----

// killState is the loop's state: the iterations integrated, a running digest
// of every outcome in task order, and one line per task.
type killState struct {
	Round int      `json:"round"`
	Sum   string   `json:"sum"`
	Log   []string `json:"log,omitempty"`
}

// killPlan plans iteration n: 2 to 5 parallel tasks, each with its own gap;
// one lone task (run on the loop's goroutine) in iterations 1, 6, 11, …;
// two stages (even tasks, then odd ones) in iterations 3, 8, 13, ….
func killPlan(n int) iterate.Plan {
	tasks := make([]iterate.Task, 2+n%4)
	if killKind(n) == "lone" {
		tasks = tasks[:1]
	}
	for i := range tasks {
		role := iterate.RoleExplore
		if i%2 == 1 {
			role = iterate.RoleVerify
		}
		tasks[i] = iterate.Task{Role: role, Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: fmt.Sprintf("item-%d-%d", n, i)}}}
		if killKind(n) == "staged" {
			tasks[i].Stage = i % 2
		}
	}
	return iterate.Plan{Action: iterate.Refine, Tasks: tasks}
}

// killKind is the kind of iteration n's plan: "lone", "staged" or
// "parallel".
func killKind(n int) string {
	switch n % 5 {
	case 1:
		return "lone"
	case 3:
		return "staged"
	}
	return "parallel"
}

func killStrategy() iterate.Strategy {
	return iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		return killPlan(sit.Iteration), nil
	})
}

// killTaskID is "iteration.index+1", as Task.ID.
func killTaskID(it, idx int) string { return strconv.Itoa(it) + "." + strconv.Itoa(idx+1) }

func killHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// killUsage is what task idx of iteration it spends.
func killUsage(it, idx int) budget.Usage {
	return budget.Usage{Tokens: int64(1000*it + 10*idx + 7), Calls: 1}
}

// killFails reports whether the task fails (not its iteration: task 0 never
// fails).
func killFails(it, idx int) bool { return idx > 0 && (it*7+idx*3)%11 == 0 }

// killPart is what a task finds, from the state it was given: a task run on
// the wrong state finds something else.
func killPart(s killState, it, idx int) killState {
	id := killTaskID(it, idx)
	d := killHash(s.Sum, id)
	// About 200 bytes a task: the state, and the saves, grow.
	return killState{Sum: d, Log: []string{id + "=" + d + strings.Repeat(d[:8], 17)}}
}

// killIntegrate folds the outcomes, in task order, into the state.
func killIntegrate(s killState, outs []iterate.Outcome[killState]) killState {
	next := killState{Round: s.Round + 1, Sum: s.Sum, Log: slices.Clip(s.Log)}
	for i := range outs {
		if outs[i].Err != nil {
			next.Log = append(next.Log, outs[i].Task.ID()+"!")
			next.Sum = killHash(next.Sum, outs[i].Task.ID()+"!")
			continue
		}
		next.Log = append(next.Log, outs[i].Part.Log...)
		next.Sum = killHash(next.Sum, outs[i].Part.Sum)
	}
	return next
}

// killModel is the state after n iterations, computed without the engine.
func killModel(n int) killState {
	var s killState
	for it := 1; it <= n; it++ {
		p := killPlan(it)
		outs := make([]iterate.Outcome[killState], len(p.Tasks))
		for i := range outs {
			outs[i].Task = iterate.Task{Iteration: it, Index: i}
			if killFails(it, i) {
				outs[i].Err = errors.New("fails")
			} else {
				outs[i].Part = killPart(s, it, i)
			}
		}
		s = killIntegrate(s, outs)
	}
	return s
}

// killWorker is the loop's worker. In a child it reports its progress on out,
// one line per event ("start 3.2", "done 3.2", "integrated 3"), and its tasks
// take 0.5 to 3 ms each, so that they finish in varying orders.
type killWorker struct {
	out  io.Writer
	slow bool
}

func (w *killWorker) report(format string, args ...any) {
	if w.out != nil {
		fmt.Fprintf(w.out, format+"\n", args...) // one write: lines never interleave
	}
}

func (w *killWorker) Assess(_ context.Context, s killState) (gap.Assessment, error) {
	return gap.Assessment{
		WorkRemaining: []string{fmt.Sprintf("%d of %d", s.Round, killIterations)}, // changes: never stuck
		Complete:      s.Round >= killIterations,
		Score:         killScore(s.Round),
	}, nil
}

// killScore is the score of the state after round iterations: it rises
// and falls, so that the best state (kept with WithKeepBest) is neither
// the first nor the last.
func killScore(round int) float64 {
	return float64((round*37)%41) / 41
}

func (w *killWorker) Work(ctx context.Context, s killState, t iterate.Task) (iterate.Outcome[killState], error) {
	id := t.ID()
	w.report("start %s", id)
	if w.slow {
		v, _ := strconv.ParseUint(killHash(id)[:2], 16, 8)
		d := time.Duration(500+v*10) * time.Microsecond
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return iterate.Outcome[killState]{}, ctx.Err()
		}
	}
	out := iterate.Outcome[killState]{Part: killPart(s, t.Iteration, t.Index), Usage: killUsage(t.Iteration, t.Index)}
	w.report("done %s", id)
	if killFails(t.Iteration, t.Index) {
		return out, fmt.Errorf("task %s: scripted failure", id)
	}
	return out, nil
}

func (w *killWorker) Integrate(_ context.Context, s killState, outs []iterate.Outcome[killState]) (killState, error) {
	next := killIntegrate(s, outs)
	w.report("integrated %d", next.Round)
	return next, nil
}

// bytesDir is a checkpoint.Dir that takes the state as bytes only (it is
// no iterate.StreamSaver), as pgcheckpoint's store: the journal's saves of
// parallel tasks are then its writer's (iterate's journal.go).
type bytesDir struct{ d *checkpoint.Dir }

func (b bytesDir) Save(ctx context.Context, c *checkpoint.Checkpoint) error { return b.d.Save(ctx, c) }
func (b bytesDir) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	return b.d.Load(ctx, session)
}
func (b bytesDir) Lock(ctx context.Context, session string) (uint64, func() error, error) {
	return b.d.Lock(ctx, session)
}
func (b bytesDir) Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error) {
	return b.d.Generations(ctx, session)
}
func (b bytesDir) LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error) {
	return b.d.LoadGeneration(ctx, session, gen)
}

// killJournal is how the loop journals its tasks.
type killJournal int

const (
	killNoJournal   killJournal = iota
	killTasksSave               // a task's own save, the state streamed into the Dir's file
	killWriterSaves             // the journal's writer, the state as bytes (bytesDir)
)

func (j killJournal) env() string { return [...]string{"0", "1", "writer"}[j] }

// killEngine is the loop, with the store in dir.
func killEngine(dir string, journal killJournal, w *killWorker) iterate.Engine[killState] {
	var persist iterate.Persist
	var store iterate.Checkpointer = checkpoint.NewDir(dir)
	switch journal {
	case killTasksSave:
		persist = iterate.Journal
	case killWriterSaves:
		persist, store = iterate.Journal, bytesDir{checkpoint.NewDir(dir)}
	}
	opts := []iterate.Option{
		iterate.WithStrategy(killStrategy()),
		iterate.WithMaxIterations(killIterations),
		iterate.WithCheckpointer(store, persist),
		iterate.WithSession(killSession),
		iterate.WithKeepBest(),
	}
	if w.out != nil && journal != killNoJournal {
		// A task's TaskEnded is sent once a save holding it has returned
		// (its own, the writer's or the iteration's): "ended" says the
		// task is in the journal on disk, or in its iteration.
		opts = append(opts, iterate.WithObserver(func(e iterate.Event) {
			if te, ok := e.(iterate.TaskEnded); ok && te.Err == nil {
				w.report("ended %s", te.Task.ID())
			}
		}))
	}
	return iterate.New[killState](w, opts...)
}

// killSummary is what a finished loop is compared on.
type killSummary struct {
	State            killState
	Status           iterate.Status
	Reason           string
	Iterations       int
	Usage            budget.Usage // Wall cleared: time is not compared
	Tasks, Failed    int
	TotalsIterations int
	Best             *iterate.Best[killState] // WithKeepBest's
}

func killSummarize(res *iterate.Result[killState]) killSummary {
	u := res.Usage
	u.Wall = 0
	return killSummary{State: res.State, Status: res.Status, Reason: res.Reason, Iterations: res.Iterations,
		Usage: u, Tasks: res.Totals.Tasks, Failed: res.Totals.FailedTasks,
		TotalsIterations: res.Totals.Iterations, Best: res.Best}
}

// killSaved is what the harness reads in a checkpoint: the state, the
// completed iterations, the generation, the status and the IDs of the
// journaled tasks of the iteration in flight.
type killSaved struct {
	State      killState
	Iteration  int
	Generation uint64
	Status     string
	Token      uint64
	Journaled  []string
	Skipped    []uint64 // damaged newer generations Load fell back past
}

func killLoad(ctx context.Context, dir string) (*killSaved, error) {
	c, err := checkpoint.NewDir(dir).Load(ctx, killSession)
	if err != nil {
		return nil, err
	}
	s := &killSaved{Iteration: c.Iteration, Generation: c.Generation, Status: c.Status, Token: c.Token, Skipped: c.Skipped}
	if err := iterate.JSON.Unmarshal(c.State, &s.State); err != nil {
		return nil, fmt.Errorf("generation %d: state: %w", c.Generation, err)
	}
	for _, e := range iterate.JournaledTasks(c) {
		if e[0] == c.Iteration+1 {
			s.Journaled = append(s.Journaled, killTaskID(e[0], e[1]))
		}
	}
	return s, nil
}

// ---- The child. ----

// TestKillHarnessChild is not a test: the harness runs the test binary as
// this child, which resumes the loop in $REFINE_KILL_CHILD (or starts it
// when there is no checkpoint yet), reports its progress on stdout and, when
// the loop ends, prints its result as "result <json>".
func TestKillHarnessChild(t *testing.T) {
	dir := os.Getenv(envKillChild)
	if dir == "" {
		t.Skip("helper process of TestKillHarness")
	}
	w := &killWorker{out: os.Stdout, slow: true}
	journal := killNoJournal
	switch os.Getenv(envKillJournal) {
	case "1":
		journal = killTasksSave
	case "writer":
		journal = killWriterSaves
	}
	eng := killEngine(dir, journal, w)
	// A context that can end, as a program with signal handling passes:
	// the loop runs on a goroutine of its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.report("ready")
	res, err := eng.Resume(ctx)
	if errors.Is(err, checkpoint.ErrNotFound) { // killed before the first save, or first run
		res, err = eng.Run(ctx, killState{})
	}
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(killSummarize(res))
	if err != nil {
		t.Fatal(err)
	}
	w.report("result %s", line)
}

// ---- The parent. ----

// TestKillHarness kills the loop with SIGKILL $REFINE_KILLS times (default
// 50) on a schedule drawn from $REFINE_KILL_SEED (default 1). When the kills
// outlast one loop, a new loop (an epoch, in a fresh directory) starts; every
// epoch's end is compared with the uninterrupted run.
func TestKillHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	runKillHarness(t, killTasksSave, killEnvInt(t, envKills, 50))
}

// TestKillHarnessWriter is TestKillHarness with a store that takes the
// state as bytes, as pgcheckpoint's: the journal's saves of parallel tasks
// are its writer's, a task that ends during a save is saved by the next,
// or by the iteration's save, and its TaskEnded ("ended") is sent only
// once one of them has returned.
func TestKillHarnessWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	runKillHarness(t, killWriterSaves, killEnvInt(t, envKills, 50))
}

func killEnvInt(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("$%s: %v", name, err)
	}
	return n
}

// killHarness is one harness run.
type killHarness struct {
	t       *testing.T
	rng     *rand.Rand
	journal killJournal
	want    killSummary

	kills, children, epochs int
	ranTasks                int            // tasks run to their end, in every process
	spentTokens             int64          // what they spent
	lostTasks               int            // tasks started and not finished in a killed child
	staleTemps              int            // temp files of saves killed mid-write, left behind
	killedIn                map[string]int // by the line that set off the kill's delay
	landedIn                map[string]int // by the child's last line before it died
}

// killEpoch is what the harness knows of one loop between kills.
type killEpoch struct {
	dir       string
	saved     *killSaved // latest checkpoint after the last kill; nil before the first save
	journaled map[string]bool
}

func runKillHarness(t *testing.T, journal killJournal, kills uint64) {
	seed := killEnvInt(t, envKillSeed, 1)
	start := time.Now()
	h := &killHarness{t: t, rng: rand.New(rand.NewPCG(seed, 0x6b696c6c)), journal: journal, killedIn: map[string]int{}, landedIn: map[string]int{}}
	h.want = killReference(t, journal)
	if m := killModel(killIterations); !cmp.Equal(h.want.State, m) {
		t.Fatalf("the uninterrupted run does not end in the model's state:\n%s", cmp.Diff(m, h.want.State))
	}
	for h.epochs == 0 || uint64(h.kills) < kills {
		h.epoch(int(kills) - h.kills)
	}
	wantTokens := h.want.Usage.Tokens * int64(h.epochs)
	t.Logf("seed %d, journal %s: %d kills over %d epochs of %d iterations, %d child processes, %v",
		seed, journal.env(), h.kills, h.epochs, killIterations, h.children, time.Since(start).Round(time.Millisecond))
	t.Logf("kills by the line that set them off: %v", h.killedIn)
	t.Logf("kills by where they landed (the child's last line, and the kind of its iteration): %v", h.landedIn)
	t.Logf("every epoch ended as the uninterrupted run: %s, %d iterations, %d tasks (%d failed), %d tokens",
		h.want.Status, h.want.Iterations, h.want.Tasks, h.want.Failed, h.want.Usage.Tokens)
	t.Logf("work lost to kills: %d tasks run again after finishing (%d tokens beyond the books' %d), %d interrupted mid-task",
		h.ranTasks-h.want.Tasks*h.epochs, h.spentTokens-wantTokens, wantTokens, h.lostTasks)
	t.Logf("saves killed mid-write (stale temp files): %d", h.staleTemps)
}

// killReference runs the loop uninterrupted, in this process.
func killReference(t *testing.T, journal killJournal) killSummary {
	res, err := killEngine(t.TempDir(), journal, &killWorker{}).Run(context.Background(), killState{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != iterate.Converged || res.Iterations != killIterations {
		t.Fatalf("uninterrupted run: %s after %d iterations, want converged after %d", res.Status, res.Iterations, killIterations)
	}
	if b := res.Best; b == nil || b.Iteration == 0 || b.Iteration == killIterations || !cmp.Equal(b.State, killModel(b.Iteration)) {
		t.Fatalf("uninterrupted run: best %+v, want the model's state of an iteration between the first and the last", b)
	}
	return killSummarize(res)
}

// epoch runs one loop to its end, killing it at most budget times.
func (h *killHarness) epoch(budget int) {
	t := h.t
	h.epochs++
	e := &killEpoch{dir: t.TempDir()}
	kills := 0
	for {
		kill := budget > 0
		c := h.child(e, kill)
		if c.killed {
			budget--
			kills++
			h.kills++
			h.afterKill(e, c)
			continue
		}
		if c.result == nil {
			t.Fatalf("epoch %d: child ended without a result (%v):\n%s", h.epochs, c.err, c.other)
		}
		h.compare("child's result", *c.result)
		break
	}
	// The saved result, read back through the API, is the same.
	res, err := killEngine(e.dir, h.journal, &killWorker{}).Resume(context.Background())
	if err != nil {
		t.Fatalf("epoch %d: resuming the finished session: %v", h.epochs, err)
	}
	h.compare("resumed result", killSummarize(res))
	if left, _ := filepath.Glob(filepath.Join(e.dir, ".*.tmp")); len(left) > 0 {
		t.Errorf("epoch %d: temp files left after the session was locked again: %q", h.epochs, left)
	}
	t.Logf("epoch %d: %d kills, ended as the uninterrupted run; no temp file left", h.epochs, kills)
}

func (h *killHarness) compare(what string, got killSummary) {
	if diff := cmp.Diff(h.want, got); diff != "" {
		h.t.Fatalf("epoch %d after %d kills: %s differs from the uninterrupted run (-want +got):\n%s", h.epochs, h.kills, what, diff)
	}
}

// killChild is how a child went.
type killChild struct {
	killed  bool
	moment  string
	landed  string   // the last line of the protocol before the child died
	started []string // tasks started
	done    []string // tasks run to their end
	ended   []string // tasks reported journaled (TaskEnded without error)
	result  *killSummary
	other   string // lines not of the protocol, and stderr
	err     error  // of Wait
}

// child runs one child; with kill, it is killed after a random number of
// progress lines and a random delay (it may finish first).
func (h *killHarness) child(e *killEpoch, kill bool) *killChild {
	t := h.t
	h.children++
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHarnessChild$")
	cmd.Env = append(os.Environ(), envKillChild+"="+e.dir, envKillJournal+"="+h.journal.env())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	// The schedule: wait for n progress lines after "ready" (n = 0: kill
	// during start-up, lock, load and replay), then for a delay, short half
	// of the time so that it falls in the save that follows most lines.
	// One kill in three waits instead for the start of a task of a lone
	// iteration (or, every other time, a staged one) and for a delay under
	// the task's 0.5 to 3 ms, so that kills land inside lone and staged
	// tasks and their journal saves too.
	n, delay, target := -1, time.Duration(0), ""
	if kill {
		n = h.rng.IntN(9)
		if h.rng.IntN(2) == 0 {
			delay = time.Duration(h.rng.IntN(500)) * time.Microsecond
		} else {
			delay = time.Duration(h.rng.IntN(5000)) * time.Microsecond
		}
		if h.rng.IntN(3) == 0 {
			n, target = 0, []string{"lone", "staged"}[h.rng.IntN(2)]
			delay = time.Duration(h.rng.IntN(3000)) * time.Microsecond
		}
	}
	c := &killChild{}
	var other strings.Builder
	seen, ready := 0, false
	var timer <-chan time.Time
	watchdog := time.NewTimer(2 * time.Minute)
	defer watchdog.Stop()
	last := ""
	for lines != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			word, arg, _ := strings.Cut(line, " ")
			switch word {
			case "ready":
				ready = true
			case "start":
				c.started = append(c.started, arg)
			case "done":
				c.done = append(c.done, arg)
			case "ended":
				c.ended = append(c.ended, arg)
			case "integrated":
			case "result":
				var r killSummary
				if err := json.Unmarshal([]byte(arg), &r); err != nil {
					t.Fatalf("child result %q: %v", arg, err)
				}
				c.result = &r
				continue
			default:
				other.WriteString(line + "\n")
				continue
			}
			if word != "ready" {
				seen++
			}
			last = word
			c.landed = killLanded(word, arg)
			if target != "" && (word != "start" || killLanded(word, arg) != "start ("+target+")") {
				continue // not yet the task aimed at
			}
			if n >= 0 && ready && seen >= n && timer == nil {
				timer = time.After(delay)
				c.moment = last
				if target != "" {
					c.moment = c.landed
				}
			}
		case <-timer:
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			timer, n = nil, -1
		case <-watchdog.C:
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			t.Fatalf("epoch %d: child hung (a killed run blocks the next?):\n%s%s", h.epochs, other.String(), stderr.String())
		}
	}
	c.err = cmd.Wait()
	c.other = other.String() + stderr.String()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		c.killed = true
		h.killedIn["after "+c.moment]++
		h.landedIn[c.landed]++
	} else if c.err != nil {
		t.Fatalf("epoch %d: child failed: %v\n%s", h.epochs, c.err, c.other)
	}
	h.account(e, c)
	return c
}

// killLanded names where a child is after reporting line "word arg": in
// start-up (before any task), or after a task started, finished or was
// journaled, or after an iteration was integrated, with the kind of the
// iteration.
func killLanded(word, arg string) string {
	if word == "ready" {
		return "start-up"
	}
	it, _, _ := strings.Cut(arg, ".")
	n, _ := strconv.Atoi(it)
	if word == "integrated" {
		n++ // saving n, then planning n+1
	}
	return word + " (" + killKind(n) + ")"
}

// account checks that a child started no task whose work was saved when it
// started (an iteration completed, or the task journaled), and counts what
// it spent.
func (h *killHarness) account(e *killEpoch, c *killChild) {
	for _, id := range c.started {
		it, _, _ := strings.Cut(id, ".")
		n, _ := strconv.Atoi(it)
		if e.saved != nil && (n <= e.saved.Iteration || e.journaled[id]) {
			h.t.Fatalf("epoch %d: task %s ran again though the checkpoint left by the last kill (iteration %d, journal %v) holds it",
				h.epochs, id, e.saved.Iteration, e.saved.Journaled)
		}
	}
	for _, id := range c.done {
		a, b, _ := strings.Cut(id, ".")
		it, _ := strconv.Atoi(a)
		idx, _ := strconv.Atoi(b)
		h.ranTasks++
		h.spentTokens += killUsage(it, idx-1).Tokens
	}
	if c.killed {
		h.lostTasks += len(c.started) - len(c.done)
	}
}

// afterKill checks the store a killed child left.
func (h *killHarness) afterKill(e *killEpoch, c *killChild) {
	t := h.t
	ctx := context.Background()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("epoch %d, kill %d (after %q): %s", h.epochs, h.kills, c.moment, fmt.Sprintf(format, args...))
	}
	// A save killed mid-write leaves its temp file until the next holder
	// of the session's lock removes it (issue 9, item 6): count them, as
	// evidence that kills land inside saves; the end of the epoch checks
	// that none is left.
	tmp, _ := filepath.Glob(filepath.Join(e.dir, ".*.tmp"))
	h.staleTemps += len(tmp)
	// The kernel released the lock with the process.
	_, release, err := checkpoint.NewDir(e.dir).Lock(ctx, killSession)
	if err != nil {
		fail("the killed run blocks the next: %v", err)
	}
	if err := release(); err != nil {
		fail("releasing the lock: %v", err)
	}
	s, err := killLoad(ctx, e.dir)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound) && e.saved == nil:
		return // killed before the first save
	case err != nil:
		fail("latest checkpoint unreadable: %v", err)
	}
	if len(s.Skipped) > 0 {
		fail("loading fell back past generations %v", s.Skipped)
	}
	if q, _ := filepath.Glob(filepath.Join(e.dir, "*.corrupt*")); len(q) > 0 {
		fail("damaged generations quarantined: %q", q)
	}
	if e.saved != nil && (s.Iteration < e.saved.Iteration || s.Generation < e.saved.Generation || s.Token < e.saved.Token) {
		fail("went back: iteration %d generation %d after iteration %d generation %d",
			s.Iteration, s.Generation, e.saved.Iteration, e.saved.Generation)
	}
	if want := killModel(s.Iteration); !cmp.Equal(want, s.State) {
		fail("state at iteration %d differs from the model (-want +got):\n%s", s.Iteration, cmp.Diff(want, s.State))
	}
	if s.Status != string(iterate.Running) && s.Status != string(h.want.Status) {
		fail("status %q", s.Status)
	}
	if h.journal == killNoJournal && len(s.Journaled) > 0 {
		fail("journal without iterate.Journal: %v", s.Journaled)
	}
	// Every task the child reported journaled is in the checkpoint: in its
	// iteration, or in the journal of the iteration in flight.
	for _, id := range c.ended {
		it, _, _ := strings.Cut(id, ".")
		n, _ := strconv.Atoi(it)
		if n > s.Iteration && !slices.Contains(s.Journaled, id) {
			fail("task %s was journaled (its TaskEnded was sent) but the checkpoint (iteration %d) does not hold it: journal %v",
				id, s.Iteration, s.Journaled)
		}
	}
	e.saved = s
	e.journaled = make(map[string]bool, len(s.Journaled))
	for _, id := range s.Journaled {
		e.journaled[id] = true
	}
}
