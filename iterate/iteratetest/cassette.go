package iteratetest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// RecordEnv is the environment variable that makes every [Cassette] of a
// test run record instead of replay: REFINE_RECORD=1 go test ./... (any
// value but "" and "0").
const RecordEnv = "REFINE_RECORD"

// TB is the part of *testing.T the kit's helpers use: pass the test's t.
// A test that checks that a helper fails may pass a recorder of its own
// that embeds the test's *testing.T and keeps what Errorf reports.
type TB interface {
	Helper()
	Name() string
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
}

// ErrNotRecorded is matched by the error of a task a cassette replays but
// does not hold: the loop planned a task the recorded run did not.
var ErrNotRecorded = errors.New("iteratetest: task not recorded in the cassette")

// CassetteOption configures a [Cassette].
type CassetteOption interface{ applyCassette(*cassetteConfig) }

type cassetteConfig struct {
	scrub func(string) string
	codec iterate.Codec
}

type cassetteOption func(*cassetteConfig)

func (f cassetteOption) applyCassette(c *cassetteConfig) { f(c) }

// Scrub makes a recording cassette pass every text it writes — each
// task's output, error message, warnings and actions — through scrub
// first, to take secrets (an API key a CLI printed, a token in a URL) out
// of the file. The replay gives back the scrubbed text. The task's part,
// a value of the loop's state, is written as the codec encodes it.
func Scrub(scrub func(string) string) CassetteOption {
	return cassetteOption(func(c *cassetteConfig) { c.scrub = scrub })
}

// CassetteCodec sets the codec a cassette encodes the tasks' parts with:
// the loop's own, when it sets one with iterate.WithCodec (default
// iterate.JSON, whose parts the file holds as JSON).
func CassetteCodec(codec iterate.Codec) CassetteOption {
	return cassetteOption(func(c *cassetteConfig) {
		if codec != nil {
			c.codec = codec
		}
	})
}

// Cassette wraps w so that a loop's tasks are recorded once, in a real
// run, and replayed in every test after: no model call, no cost, the same
// outcomes in every run, under -race.
//
// With $REFINE_RECORD set ([RecordEnv]) the cassette records: each task
// runs w, and its outcome — the task (iteration, index, role, gaps,
// action), its part (encoded with the loop's codec, see [CassetteCodec]),
// usage, output, done flag, actions, warnings and error — is written to
// the file at path (created with its directory, rewritten whole after
// each task, sorted by iteration and index). A task interrupted by the end
// of the run's context is not recorded. Otherwise the cassette replays
// from path: a task's outcome comes from the file, and w's Work (or Do)
// is not called. Assess and Integrate are always w's own: only the tasks
// are recorded.
//
// A task is matched by its iteration, role and gaps (kind and target of
// each, in order), never by the order the tasks ran in, which parallel
// tasks do not keep; among recorded tasks that match alike, by its index.
// A replay asked for a task the file does not hold reports to t, with a
// diff of the tasks of that iteration as recorded against as asked, and
// fails the task with an error matching [ErrNotRecorded], marked
// iterate.Permanent so that the loop stops: a change of policy or
// strategy shows up as a changed plan, not as a silent mismatch. A
// replayed failure fails with an error of the recorded message (and
// Permanent mark). Once a task is recorded, a second loop of the same test
// process asking for it replays it: one recording per task.
//
// w may be an *iterate.FuncWorker (iterate.Func): the cassette returned is
// one too, so that the loop still runs one task per iteration; its step's
// report through the Round (Charge, Done, Output, Did) is recorded and
// replayed. A Worker's StageEnder and Concluder are kept. Warnings a task
// raises with iterate.Warn during the recording are not replayed: report
// them in Outcome.Warnings.
//
// Cassettes of one test process that share a path share one recording
// (give them the same options: the first to record a task scrubs it); the
// returned worker is safe for concurrent use as w is.
func Cassette[S any](t TB, path string, w iterate.Worker[S], opts ...CassetteOption) iterate.Worker[S] {
	t.Helper()
	cfg := cassetteConfig{codec: iterate.JSON}
	for _, o := range opts {
		if o != nil {
			o.applyCassette(&cfg)
		}
	}
	tp, err := openTape(path, recording())
	if err != nil {
		t.Errorf("iteratetest: %v", err)
	}
	if tp == nil {
		tp = &tape{path: path, err: err}
	}
	c := &cassette[S]{t: t, tape: tp, cfg: cfg, name: t.Name()}
	if fw, ok := w.(*iterate.FuncWorker[S]); ok && fw != nil {
		do := fw.Do
		return &iterate.FuncWorker[S]{AssessFunc: fw.AssessFunc, Do: func(ctx context.Context, s S, r iterate.Round) (S, error) {
			return c.step(ctx, s, r, do)
		}}
	}
	return &cassetteWorker[S]{Worker: w, c: c}
}

// recording reports whether $REFINE_RECORD asks the cassettes to record.
func recording() bool {
	v := os.Getenv(RecordEnv)
	return v != "" && v != "0"
}

// cassette is what the worker and the step of a Cassette share.
type cassette[S any] struct {
	t    TB
	tape *tape
	cfg  cassetteConfig
	name string
}

// cassetteWorker is the Cassette of a Worker.
type cassetteWorker[S any] struct {
	iterate.Worker[S]
	c *cassette[S]
}

var (
	_ iterate.StageEnder[int] = (*cassetteWorker[int])(nil)
	_ iterate.Concluder[int]  = (*cassetteWorker[int])(nil)
)

// Work replays the task's outcome, or records w's.
func (w *cassetteWorker[S]) Work(ctx context.Context, s S, t iterate.Task) (iterate.Outcome[S], error) {
	if e, ok := w.c.lookup(&t); ok {
		part, err := w.c.decode(e)
		out := iterate.Outcome[S]{Part: part, Usage: e.Usage, Done: e.Done, Output: e.Output,
			Actions: slices.Clone(e.Actions), Warnings: slices.Clone(e.Warnings)}
		if err != nil {
			return out, err
		}
		return out, e.err()
	}
	if !w.c.tape.recording {
		return iterate.Outcome[S]{}, w.c.miss(&t)
	}
	out, err := w.Worker.Work(ctx, s, t)
	if err == nil || ctx.Err() == nil {
		w.c.record(&t, out.Part, report{usage: out.Usage, done: out.Done, output: out.Output,
			actions: out.Actions, warnings: out.Warnings}, err)
	}
	return out, err
}

// EndStage calls w's, if it has one.
func (w *cassetteWorker[S]) EndStage(ctx context.Context, s S, stage int, outs []iterate.Outcome[S]) error {
	if se, ok := w.Worker.(iterate.StageEnder[S]); ok {
		return se.EndStage(ctx, s, stage, outs)
	}
	return nil
}

// Conclude calls w's, if it has one.
func (w *cassetteWorker[S]) Conclude(ctx context.Context, s S, status iterate.Status, reason string) (S, error) {
	if c, ok := w.Worker.(iterate.Concluder[S]); ok {
		return c.Conclude(ctx, s, status, reason)
	}
	return s, nil
}

// step is the Do of the Cassette of a Func: it replays the round's outcome
// through r, or records what do returned and reported.
func (c *cassette[S]) step(ctx context.Context, s S, r iterate.Round, do func(context.Context, S, iterate.Round) (S, error)) (S, error) {
	t := r.Task
	if e, ok := c.lookup(&t); ok {
		part, err := c.decode(e)
		if err != nil {
			return s, err
		}
		r.Charge(e.Usage)
		if e.Output != "" {
			r.Output(e.Output)
		}
		r.Did(e.Actions...)
		if e.Done {
			r.Done()
		}
		return part, e.err()
	}
	if !c.tape.recording {
		return s, c.miss(&t)
	}
	next, err := do(ctx, s, r)
	if err == nil || ctx.Err() == nil {
		var rep report
		rep.usage, rep.done, rep.output, rep.actions = r.Reported()
		c.record(&t, next, rep, err)
	}
	return next, err
}

// report is what a task reported besides its part.
type report struct {
	usage    budget.Usage
	done     bool
	output   string
	actions  []string
	warnings []string
}

// lookup returns the recorded outcome of t, if any.
func (c *cassette[S]) lookup(t *iterate.Task) (*tapeEntry, bool) {
	return c.tape.find(t.Iteration, t.Index, string(t.Role), gapKeys(t.Gaps))
}

// record writes the outcome of t to the cassette's file.
func (c *cassette[S]) record(t *iterate.Task, part S, rep report, err error) {
	e := tapeEntry{Iteration: t.Iteration, Index: t.Index, Role: string(t.Role), Gaps: gapKeys(t.Gaps), Action: string(t.Action),
		Usage: rep.usage, Done: rep.done, Output: c.scrub(rep.output), Actions: c.scrubAll(rep.actions), Warnings: c.scrubAll(rep.warnings)}
	if err != nil {
		e.Err, e.Permanent = c.scrub(err.Error()), iterate.IsPermanent(err)
	}
	data, merr := c.cfg.codec.Marshal(part)
	if merr != nil {
		c.t.Errorf("iteratetest: cassette %s: task %s: encoding its part: %v", c.tape.path, t.ID(), merr)
		return
	}
	if c.cfg.codec == iterate.JSON && json.Valid(data) {
		e.Part = data
	} else {
		e.PartBytes = data
	}
	if werr := c.tape.add(e); werr != nil {
		c.t.Errorf("iteratetest: cassette %s: %v", c.tape.path, werr)
	}
}

func (c *cassette[S]) scrub(s string) string {
	if c.cfg.scrub == nil || s == "" {
		return s
	}
	return c.cfg.scrub(s)
}

func (c *cassette[S]) scrubAll(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = c.scrub(s)
	}
	return out
}

// decode decodes the part of a recorded outcome.
func (c *cassette[S]) decode(e *tapeEntry) (S, error) {
	var part S
	data := e.PartBytes
	if e.Part != nil {
		data = e.Part
	}
	if data == nil {
		return part, nil
	}
	if err := c.cfg.codec.Unmarshal(data, &part); err != nil {
		c.t.Errorf("iteratetest: cassette %s: task %d.%d: decoding its part: %v", c.tape.path, e.Iteration, e.Index+1, err)
		return part, iterate.Permanent(fmt.Errorf("iteratetest: cassette %s: decoding a part: %w", c.tape.path, err))
	}
	return part, nil
}

// miss reports a task the cassette does not hold, with the diff of the
// tasks of its iteration as recorded and as asked, and returns the task's
// error.
func (c *cassette[S]) miss(t *iterate.Task) error {
	c.t.Helper()
	if c.tape.err != nil {
		return iterate.Permanent(fmt.Errorf("task %s: %w (no cassette)", t.ID(), ErrNotRecorded))
	}
	asked := taskView{Iteration: t.Iteration, Index: t.Index, Role: string(t.Role), Gaps: gapKeys(t.Gaps), Action: string(t.Action)}
	recorded := c.tape.iteration(t.Iteration)
	want := slices.Clone(recorded)
	if i := slices.IndexFunc(want, func(v taskView) bool { return v.Index == t.Index }); i >= 0 {
		want[i] = asked
	} else {
		want = append(want, asked)
	}
	c.t.Errorf("iteratetest: cassette %s holds no outcome of task %s (role %q, gaps %q): the loop planned otherwise than the recorded run.\n"+
		"Tasks of iteration %d (-recorded +asked):\n%s"+
		"If the change is meant, record again: %s=1 go test -run '%s'",
		c.tape.path, t.ID(), t.Role, asked.Gaps, t.Iteration, gocmp.Diff(recorded, want), RecordEnv, runPattern(c.name))
	return iterate.Permanent(fmt.Errorf("task %s (role %q, gaps %q): %w", t.ID(), t.Role, asked.Gaps, ErrNotRecorded))
}

// taskView is a recorded or asked task, as a replay's miss shows it.
type taskView struct {
	Iteration, Index int
	Role             string
	Gaps             []string
	Action           string
}

// gapKeys returns the keys (kind:target) of gaps, nil for none.
func gapKeys(gaps []gap.Gap) []string {
	if len(gaps) == 0 {
		return nil
	}
	keys := make([]string, len(gaps))
	for i, g := range gaps {
		keys[i] = g.Key()
	}
	return keys
}

// ---- The file. ----

// tapeVersion is the version of the cassette files this package writes.
const tapeVersion = 1

// tapeFile is a cassette's file.
type tapeFile struct {
	Note    string      `json:"note"`
	Version int         `json:"version"`
	Tasks   []tapeEntry `json:"tasks"`
}

const tapeNote = "Recorded by iteratetest.Cassette: the outcome of each task of a loop, replayed by its tests. Record again with " + RecordEnv + "=1 go test."

// tapeEntry is one recorded task.
type tapeEntry struct {
	Iteration int      `json:"iteration"`
	Index     int      `json:"index"`
	Role      string   `json:"role,omitempty"`
	Gaps      []string `json:"gaps,omitempty"`
	Action    string   `json:"action,omitempty"`
	// Part is the part encoded with iterate.JSON; PartBytes, with another
	// codec (base64 in the file).
	Part      json.RawMessage `json:"part,omitempty"`
	PartBytes []byte          `json:"part_bytes,omitempty"`
	Usage     budget.Usage    `json:"usage,omitzero"`
	Output    string          `json:"output,omitempty"`
	Done      bool            `json:"done,omitempty"`
	Actions   []string        `json:"actions,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
	Err       string          `json:"err,omitempty"`
	Permanent bool            `json:"permanent,omitempty"`
}

// err is the error of the recorded outcome: one of the recorded message.
func (e *tapeEntry) err() error {
	if e.Err == "" {
		return nil
	}
	err := errors.New(e.Err)
	if e.Permanent {
		err = iterate.Permanent(err)
	}
	return err
}

func (e *tapeEntry) view() taskView {
	return taskView{Iteration: e.Iteration, Index: e.Index, Role: e.Role, Gaps: e.Gaps, Action: e.Action}
}

// tape is the recording of one file, shared by the cassettes of a test
// process that name it.
type tape struct {
	path      string // absolute
	recording bool
	err       error // of loading, for a replay

	mu      sync.Mutex
	entries []tapeEntry
}

// tapes holds the tapes of the process, by absolute path.
var tapes = struct {
	sync.Mutex
	m map[string]*tape
}{m: map[string]*tape{}}

// openTape returns the tape of path: when recording, empty until tasks
// are recorded; otherwise loaded from the file.
func openTape(path string, record bool) (*tape, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("cassette %s: %w", path, err)
	}
	tapes.Lock()
	defer tapes.Unlock()
	if tp := tapes.m[abs]; tp != nil {
		return tp, tp.err
	}
	tp := &tape{path: path, recording: record}
	tapes.m[abs] = tp
	if record {
		return tp, nil
	}
	tp.entries, tp.err = loadTape(path)
	if tp.err != nil && errors.Is(tp.err, os.ErrNotExist) {
		tp.err = fmt.Errorf("cassette %s not recorded yet: record it with %s=1 go test", path, RecordEnv)
	}
	return tp, tp.err
}

func loadTape(path string) ([]tapeEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f tapeFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("cassette %s: %w", path, err)
	}
	if f.Version != tapeVersion {
		return nil, fmt.Errorf("cassette %s: version %d, this package reads version %d: record it again with %s=1 go test", path, f.Version, tapeVersion, RecordEnv)
	}
	return f.Tasks, nil
}

// find returns the entry of the task at iteration, index, with role and
// gaps: the one that matches alike, or among several, the one of index.
func (tp *tape) find(iteration, index int, role string, gaps []string) (*tapeEntry, bool) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var found *tapeEntry
	n := 0
	for i := range tp.entries {
		e := &tp.entries[i]
		if e.Iteration != iteration || e.Role != role || !slices.Equal(e.Gaps, gaps) {
			continue
		}
		n++
		if found == nil || e.Index == index {
			found = e
		}
	}
	if n > 1 && found.Index != index {
		return nil, false
	}
	if found == nil {
		return nil, false
	}
	e := *found // entries may move as others are added
	return &e, true
}

// iteration returns the recorded tasks of iteration n, by index.
func (tp *tape) iteration(n int) []taskView {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []taskView
	for i := range tp.entries {
		if tp.entries[i].Iteration == n {
			out = append(out, tp.entries[i].view())
		}
	}
	return out
}

// add records e, unless a task like it is recorded already, and writes the
// file.
func (tp *tape) add(e tapeEntry) error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for i := range tp.entries {
		o := &tp.entries[i]
		if o.Iteration == e.Iteration && o.Index == e.Index && o.Role == e.Role && slices.Equal(o.Gaps, e.Gaps) {
			return nil
		}
	}
	tp.entries = append(tp.entries, e)
	slices.SortStableFunc(tp.entries, func(a, b tapeEntry) int {
		return cmp.Or(cmp.Compare(a.Iteration, b.Iteration), cmp.Compare(a.Index, b.Index))
	})
	return tp.write()
}

// write writes the tape to its file, atomically. tp.mu must be held.
func (tp *tape) write() error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tapeFile{Note: tapeNote, Version: tapeVersion, Tasks: tp.entries}); err != nil {
		return err
	}
	dir := filepath.Dir(tp.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(tp.path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(b.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), tp.path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
