package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

const (
	modePlan = "plan"
	modeFile = "file"

	// kindPhase is the gap kind of a remaining phase, kindItem of a
	// remaining item of file-based mode.
	kindPhase gap.Kind = "phase"
	kindItem  gap.Kind = "item"
)

// State is the loop state the engine checkpoints. The plan file itself is
// the record of the work done (the runner re-reads it every iteration, so a
// resumed run continues from what the file says); State keeps what the file
// cannot: the iteration records behind the summaries and the continuation.
//
// A task's Outcome.Part is a State holding only Report, what the task did.
type State struct {
	Plan string `json:"plan"`
	Mode string `json:"mode"`
	// Iterations are the records of the iterations run, oldest first.
	Iterations []IterationRecord `json:"iterations,omitempty"`
	// Continuation is the summary of the latest iteration when work
	// remained after it: the next iteration's continuation context.
	Continuation string `json:"continuation,omitempty"`
	// Report is set in a task's Part only.
	Report *PhaseReport `json:"report,omitempty"`
}

// PhaseReport is what one implementer call did to one phase.
type PhaseReport struct {
	Phase int    `json:"phase"`
	Title string `json:"title,omitempty"`
	Wave  int    `json:"wave"`
	// Checked lists the task numbers checked off by this call; Resolved
	// counts those that were `sorry` placeholders (file mode).
	Checked  []int `json:"checked,omitempty"`
	Resolved int   `json:"resolved,omitempty"`
	// Done and Total count the phase's tasks after the call.
	Done  int `json:"done"`
	Total int `json:"total"`
	// Complete: every task is checked; Marked: the heading has [COMPLETE].
	Complete bool `json:"complete,omitempty"`
	Marked   bool `json:"marked,omitempty"`
	// External and Local count the calls made; Share is the phase's share
	// of the wave's external calls.
	External int    `json:"external"`
	Local    int    `json:"local"`
	Share    int    `json:"share"`
	Tokens   int64  `json:"tokens,omitempty"`
	Note     string `json:"note,omitempty"`
	// Err is the error of a failed call; Blocked is set when the phase did
	// not run because a dependency was not complete.
	Err     string `json:"err,omitempty"`
	Blocked bool   `json:"blocked,omitempty"`
}

// WaveRecord is what one wave did.
type WaveRecord struct {
	Wave   int   `json:"wave"`
	Phases []int `json:"phases"`
	// Budget is the wave's external call budget; External and Local the
	// calls its phases made.
	Budget   int `json:"budget"`
	External int `json:"external"`
	Local    int `json:"local"`
	// Recovery after the wave.
	Recovered []int    `json:"recovered,omitempty"`
	Marked    int      `json:"marked"`
	Total     int      `json:"total"`
	Warnings  []string `json:"warnings,omitempty"`
}

// PhaseRef names a phase in a record.
type PhaseRef struct {
	Num   int    `json:"num"`
	Title string `json:"title"`
}

// IterationRecord is what one iteration did, and what its summary says.
type IterationRecord struct {
	Iteration     int    `json:"iteration"`
	MaxIterations int    `json:"max_iterations"`
	Summary       string `json:"summary"`
	Title         string `json:"title,omitempty"`
	FileMode      bool   `json:"file_mode,omitempty"`

	Waves  []WaveRecord  `json:"waves,omitempty"`
	Phases []PhaseReport `json:"phases,omitempty"`
	// Completed and Remaining are the plan's phases after the iteration;
	// Deferred the phases the context estimate left for the next one.
	Completed []PhaseRef `json:"completed,omitempty"`
	Remaining []PhaseRef `json:"remaining,omitempty"`
	Deferred  []int      `json:"deferred,omitempty"`
	// CompletedNow counts the phases (file mode: items) completed in this
	// iteration.
	CompletedNow int `json:"completed_now"`

	// Items of file-based mode: done, and the open ones ("Line_12").
	ItemsDone int      `json:"items_done,omitempty"`
	ItemsOpen []string `json:"items_open,omitempty"`

	ContextTokens    int64   `json:"context_tokens"`
	ContextSize      int64   `json:"context_size"`
	ContextThreshold float64 `json:"context_threshold"`
	ContextExhausted bool    `json:"context_exhausted,omitempty"`
	// Continuation is the summary this iteration continued from.
	Continuation string `json:"continuation,omitempty"`
	// Stuck is set on the last record when the run stopped as stuck.
	Stuck bool `json:"stuck,omitempty"`
	// Warnings of the iteration (checkbox consistency).
	Warnings []string `json:"warnings,omitempty"`
}

// WorkRemaining returns the seed's work_remaining list ("Phase_6 Phase_7").
func (r *IterationRecord) WorkRemaining() []string {
	if r.FileMode {
		return r.ItemsOpen
	}
	keys := make([]string, len(r.Remaining))
	for i, ph := range r.Remaining {
		keys[i] = phaseKey(ph.Num)
	}
	return keys
}

// runner is the coordinator of seed 003: it is the loop's Worker (Assess,
// Work, Integrate) and its Strategy (Plan).
//
// One engine iteration is one coordinator invocation: Plan turns every
// phase the iteration takes on, of every wave, into a task, in wave order;
// the engine runs them in parallel under WithParallelism, and each task
// first waits for the wave before its own to finish (waveRun.done). The
// engine acquires its parallelism slots in task order, so the phases of
// earlier waves always hold slots before later ones wait for them: the
// barrier cannot deadlock, and a wave keeps the whole parallelism limit.
// The alternative, running all waves inside one Work call, would bypass the
// engine's fan-out, per-task failure handling and outcomes.
//
// TODO(library): the engine has no stages within an iteration, and a task
// carries no host data. The wave structure therefore goes from Plan to Work
// through r.sched, set in the loop goroutine before the engine starts the
// tasks and read by Integrate after they all returned; see
// /work/notes/requests.md ("planrunner").
type runner struct {
	plan       string // absolute path
	fileMode   bool
	summaries  string
	topic      string
	checkpoint string
	window     budget.ContextWindow
	rateBudget int
	impl       Implementer
	out        io.Writer // safe for concurrent use

	mu    sync.Mutex // serialises every read-modify-write of the plan file
	sched *schedule
}

// schedule is one iteration's waves.
type schedule struct {
	iteration, maxIterations int
	waves                    []*waveRun
	byPhase                  map[int]*waveRun
	gates                    map[int]*CallGate
	deferred                 []int
	contextCut               bool
	workRemaining            []string
}

// waveRun is one wave of an iteration. Its tasks wait for the wave before
// (prev) to finish; the last of its tasks to finish recovers the markers
// and closes done.
type waveRun struct {
	index  int
	phases []int
	calls  *budget.Budget
	budget int
	prev   *waveRun
	done   chan struct{}

	mu      sync.Mutex
	pending int
	reports []*PhaseReport
	record  WaveRecord
}

// load reads and parses the plan file.
func (r *runner) load() (*Plan, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read()
}

func (r *runner) read() (*Plan, error) {
	data, err := os.ReadFile(r.plan)
	if err != nil {
		return nil, err
	}
	return ParsePlan(r.plan, data, r.fileMode)
}

// edit applies fn to the plan under the lock and writes the file when fn
// changed it (atomically: temporary file and rename).
func (r *runner) edit(fn func(*Plan) error) (*Plan, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, err := r.read()
	if err != nil {
		return nil, err
	}
	before := p.Bytes()
	if err := fn(p); err != nil {
		return nil, err
	}
	if after := p.Bytes(); !bytes.Equal(before, after) {
		if err := writeFileAtomic(r.plan, after); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, keeping the file's mode.
func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// Assess reports the remaining phases (file mode: items) as the work
// remaining, which the stuck policy watches, and completion.
func (r *runner) Assess(_ context.Context, _ State) (gap.Assessment, error) {
	p, err := r.load()
	if err != nil {
		return gap.Assessment{}, err
	}
	var a gap.Assessment
	if r.fileMode {
		open := p.OpenItems()
		for _, t := range open {
			a.WorkRemaining = append(a.WorkRemaining, "Line_"+strconv.Itoa(t.line+1))
		}
		a.Complete = len(open) == 0
		return a, nil
	}
	complete, remaining := p.Split()
	for _, ph := range remaining {
		a.WorkRemaining = append(a.WorkRemaining, phaseKey(ph.Num))
	}
	a.Complete = len(remaining) == 0
	a.Score = float64(len(complete)) / float64(len(p.Phases))
	return a, nil
}

// analyze turns the work remaining into gaps: one per remaining phase
// (Kind "phase", Target "Phase 3") or item.
func analyze(_ context.Context, a gap.Assessment) ([]gap.Gap, error) {
	gaps := make([]gap.Gap, 0, len(a.WorkRemaining))
	for _, w := range a.WorkRemaining {
		g := gap.Gap{Kind: kindItem, Target: w, Priority: gap.P2, Severity: 0.5, Fixable: true, Source: "planrunner"}
		if strings.HasPrefix(w, "Phase_") {
			g.Kind, g.Target = kindPhase, strings.Replace(w, "_", " ", 1)
		}
		gaps = append(gaps, g)
	}
	return gaps, nil
}

// capacity returns how many of the remaining phases one iteration can
// complete before its context estimate reaches the threshold, at least one.
func capacity(w budget.ContextWindow, remaining int) int {
	k := 0
	for k < remaining && !w.Exhausted(budget.EstimateContext(k+1, remaining-k-1, budget.DefaultTokensPerCompleted, budget.DefaultTokensPerRemaining)) {
		k++
	}
	if k == 0 && remaining > 0 {
		k = 1
	}
	return k
}

// shares divides a wave's budget among n phases: budget/n each, the
// remainder to the first phases.
func shares(budget, n int) []int {
	s := make([]int, n)
	if n == 0 {
		return s
	}
	for i := range s {
		s[i] = budget / n
		if i < budget%n {
			s[i]++
		}
	}
	return s
}

// Plan is the runner's strategy. It computes the waves of the incomplete
// phases, takes phases wave by wave while the iteration's context estimate
// stays under the threshold (the rest are deferred to a continuation),
// divides each wave's external call budget among its phases, and returns one
// task per phase in wave order: the engine runs them in parallel under the
// parallelism limit, and each task waits for the wave before its own.
func (r *runner) Plan(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
	p, err := r.load()
	if err != nil {
		return iterate.Plan{}, err
	}
	sch := &schedule{iteration: sit.Iteration, maxIterations: sit.MaxIterations, byPhase: map[int]*waveRun{},
		gates: map[int]*CallGate{}}
	for _, g := range sit.Gaps {
		sch.workRemaining = append(sch.workRemaining, strings.Replace(g.Target, " ", "_", 1))
	}
	gapOf := make(map[string]gap.Gap, len(sit.Gaps))
	for _, g := range sit.Gaps {
		gapOf[g.Target] = g
	}

	if r.fileMode {
		r.newWave(sch, 0, []int{0})
		r.sched = sch
		fmt.Fprintf(r.out, "Iteration %s: file-based mode, %d open item(s), single pass\n", iterLabel(sit.Iteration, sit.MaxIterations), len(sit.Gaps))
		return iterate.Plan{Reason: "file-based mode: one implementer pass over the file",
			Tasks: []iterate.Task{{Role: iterate.RoleImplement, Gaps: sit.Gaps, Prompt: "Complete the open items of " + r.plan}}}, nil
	}

	waves, err := p.Waves()
	if err != nil {
		return iterate.Plan{}, iterate.Permanent(err)
	}
	remaining := 0
	for _, w := range waves {
		remaining += len(w)
	}
	k := capacity(r.window, remaining)
	var plan iterate.Plan
	taken := 0
	for _, wave := range waves {
		var nums []int
		for _, ph := range wave {
			g, ok := gapOf[ph.Name()]
			if !ok {
				continue // not reported remaining by the assessment
			}
			if taken >= k {
				plan.Deferred = append(plan.Deferred, g)
				sch.deferred = append(sch.deferred, ph.Num)
				continue
			}
			taken++
			nums = append(nums, ph.Num)
			plan.Tasks = append(plan.Tasks, iterate.Task{Role: iterate.RoleImplement, Gaps: []gap.Gap{g},
				Prompt: fmt.Sprintf("Implement %s: %s", ph.Name(), ph.Title)})
		}
		if len(nums) > 0 {
			r.newWave(sch, len(sch.waves), nums)
		}
	}
	sch.contextCut = len(sch.deferred) > 0
	r.sched = sch

	projected := budget.EstimateContext(taken, remaining-taken, budget.DefaultTokensPerCompleted, budget.DefaultTokensPerRemaining)
	plan.Reason = fmt.Sprintf("%d phase(s) in %d wave(s); context projected %s / %s tokens", taken, len(sch.waves),
		budget.FormatTokens(projected), budget.FormatTokens(r.window.Size))
	fmt.Fprintf(r.out, "Iteration %s: %d of %d remaining phase(s) in %d wave(s)", iterLabel(sit.Iteration, sit.MaxIterations),
		taken, remaining, len(sch.waves))
	if sch.contextCut {
		fmt.Fprintf(r.out, "; context threshold: deferring %s", joinPhases(sch.deferred))
	}
	fmt.Fprintln(r.out)
	return plan, nil
}

// newWave adds a wave of the given phases to sch, with its share of the
// external call budget for each phase.
func (r *runner) newWave(sch *schedule, index int, phases []int) *waveRun {
	// The wave's calls: one Iterations unit per external call. A limit of
	// 0 would mean "no limit"; the gates' shares (all 0 then) still stop
	// every call.
	calls, _ := budget.New(budget.Limits{Iterations: r.rateBudget})
	w := &waveRun{index: index, phases: phases, calls: calls, budget: r.rateBudget,
		done: make(chan struct{}), pending: len(phases)}
	if index > 0 {
		w.prev = sch.waves[index-1]
	}
	for i, s := range shares(r.rateBudget, len(phases)) {
		sch.byPhase[phases[i]] = w
		sch.gates[phases[i]] = newCallGate(calls, s)
	}
	sch.waves = append(sch.waves, w)
	return w
}

// ErrBlocked is matched by every *BlockedError.
var ErrBlocked = errors.New("planrunner: phase blocked")

// BlockedError reports a phase that did not run because a phase it depends
// on is not complete (it failed earlier in the iteration).
type BlockedError struct {
	Phase int
	On    []int
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s blocked: waiting for %s", phaseName(e.Phase), joinPhases(e.On))
}

// Is reports whether target is ErrBlocked.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// Work implements one phase (file mode: the file). It waits for the
// previous wave, checks the phase's dependencies, calls the implementer with
// the phase's share of the wave's external calls, and checks off the tasks
// the implementer reports, under the plan lock.
func (r *runner) Work(ctx context.Context, s State, t iterate.Task) (out iterate.Outcome[State], err error) {
	sch := r.sched
	num := 0
	if !r.fileMode {
		n, ok := parsePhaseRef(t.Gap().Target)
		if !ok {
			return out, fmt.Errorf("task %s: not a phase: %q", t.ID(), t.Gap().Target)
		}
		num = n
	}
	w := sch.byPhase[num]
	if w == nil {
		return out, fmt.Errorf("task %s: %s is not scheduled", t.ID(), phaseName(num))
	}
	gate := sch.gates[num]
	rep := &PhaseReport{Phase: num, Wave: w.index + 1, Share: gate.Share()}
	out.Part.Report = rep
	defer func() {
		if v := recover(); v != nil {
			rep.Err = fmt.Sprint("panic: ", v)
			w.finish(r, rep)
			panic(v)
		}
		if err != nil && rep.Err == "" {
			rep.Err = err.Error()
		}
		rep.External, rep.Local = gate.Counts()
		w.finish(r, rep)
	}()

	if w.prev != nil {
		select {
		case <-w.prev.done:
		case <-ctx.Done():
			return out, context.Cause(ctx)
		}
	}
	p, err := r.load()
	if err != nil {
		return out, err
	}
	req := &Request{Protocol: Protocol, Mode: modePlan, PlanFile: r.plan, Iteration: t.Iteration,
		MaxIterations: t.MaxIterations, Wave: w.index + 1, Waves: len(sch.waves), ExternalCallBudget: gate.Share(),
		ContinuationSummary: s.Continuation, WorkRemaining: sch.workRemaining}
	if r.fileMode {
		req.Mode = modeFile
		for i, it := range p.Items {
			req.Tasks = append(req.Tasks, RequestTask{N: i + 1, Text: it.Text, Done: it.Done})
		}
	} else {
		ph := p.Phase(num)
		if ph == nil {
			return out, fmt.Errorf("%s disappeared from the plan", phaseName(num))
		}
		rep.Title = ph.Title
		var blocked []int
		for _, d := range ph.Deps {
			if dp := p.Phase(d); dp != nil && !dp.Complete() {
				blocked = append(blocked, d)
			}
		}
		if len(blocked) > 0 {
			rep.Blocked = true
			return out, &BlockedError{Phase: num, On: blocked}
		}
		req.Phase, req.Title, req.DependsOn = ph.Num, ph.Title, ph.Deps
		for i, tk := range ph.Tasks {
			req.Tasks = append(req.Tasks, RequestTask{N: i + 1, Text: tk.Text, Done: tk.Done})
		}
	}
	rep.Total = len(req.Tasks)
	for _, tk := range req.Tasks {
		if tk.Done {
			rep.Done++
		}
	}

	res, err := r.impl.Implement(ctx, req, gate)
	rep.Tokens, rep.Note = res.Tokens, res.Note
	out.Usage.Tokens = res.Tokens
	if err != nil {
		return out, err
	}
	if err := r.apply(num, res, rep); err != nil {
		return out, err
	}
	return out, nil
}

// apply checks off the reported tasks (all or none: an unknown task number
// is a protocol violation) and sets the [COMPLETE] marker when asked and
// due.
func (r *runner) apply(num int, res Report, rep *PhaseReport) error {
	_, err := r.edit(func(p *Plan) error {
		tasks := p.Items
		var ph *Phase
		if !r.fileMode {
			ph = p.Phase(num)
			tasks = ph.Tasks
		}
		for _, n := range res.Completed {
			if n < 1 || n > len(tasks) {
				return fmt.Errorf("%w: task %d does not exist (%d tasks)", ErrProtocol, n, len(tasks))
			}
		}
		for _, n := range res.Completed {
			if p.Check(tasks[n-1]) {
				rep.Checked = append(rep.Checked, n)
				if tasks[n-1].Sorry {
					rep.Resolved++
				}
			}
		}
		rep.Done = 0
		for _, t := range tasks {
			if t.Done {
				rep.Done++
			}
		}
		rep.Total = len(tasks)
		if ph != nil {
			rep.Complete = ph.Complete()
			if res.MarkComplete && rep.Complete {
				p.SetMarker(ph, markerComplete)
			}
			rep.Marked = ph.Marked()
		} else {
			rep.Complete = rep.Done == rep.Total
		}
		return nil
	})
	return err
}

// finish records a task's report; the last task of the wave runs the
// wave's marker recovery and releases the next wave.
func (w *waveRun) finish(r *runner, rep *PhaseReport) {
	w.mu.Lock()
	w.reports = append(w.reports, rep)
	w.pending--
	last := w.pending == 0
	w.mu.Unlock()
	if !last {
		return
	}
	defer close(w.done)
	r.afterWave(w)
}

// afterWave runs after every phase of a wave returned: the markers are
// recovered (idempotently), checkbox consistency verified and the plan
// status updated; the wave's report is printed.
func (r *runner) afterWave(w *waveRun) {
	slices.SortFunc(w.reports, func(a, b *PhaseReport) int {
		return slices.Index(w.phases, a.Phase) - slices.Index(w.phases, b.Phase)
	})
	rec := &w.record
	rec.Wave, rec.Phases, rec.Budget = w.index+1, w.phases, w.budget
	for _, rep := range w.reports {
		rec.External += rep.External
		rec.Local += rep.Local
	}
	var warn string
	if !r.fileMode {
		_, err := r.edit(func(p *Plan) error {
			rc := p.Recover()
			rec.Recovered, rec.Marked, rec.Total, rec.Warnings = rc.Recovered, rc.MarkedAfter, rc.Total, rc.Warnings
			return nil
		})
		if err != nil {
			warn = "marker recovery failed: " + err.Error()
			rec.Warnings = append(rec.Warnings, warn)
		}
	}

	var b strings.Builder
	if r.fileMode {
		fmt.Fprintf(&b, "  File %s: external calls %d of %d, local fallback %d\n", filepath.Base(r.plan), rec.External, rec.Budget, rec.Local)
	} else {
		fmt.Fprintf(&b, "  Wave %d: %s: external calls %d of %d, local fallback %d\n", rec.Wave, joinPhases(w.phases), rec.External, rec.Budget, rec.Local)
	}
	for _, rep := range w.reports {
		name := phaseName(rep.Phase)
		if r.fileMode {
			name = "file"
		}
		switch {
		case rep.Blocked:
			fmt.Fprintf(&b, "    %s: %s\n", name, rep.Err)
		case rep.Err != "":
			fmt.Fprintf(&b, "    %s: FAILED: %s\n", name, rep.Err)
		default:
			mark := ""
			if rep.Marked {
				mark = " [COMPLETE]"
			}
			fmt.Fprintf(&b, "    %s: %d/%d tasks done%s (external %d of share %d, local %d)\n", name, rep.Done, rep.Total, mark, rep.External, rep.Share, rep.Local)
		}
	}
	if !r.fileMode && warn == "" {
		fmt.Fprintf(&b, "    markers: %d/%d phases marked [COMPLETE], recovered: %s\n", rec.Marked, rec.Total, orNone(joinPhases(rec.Recovered)))
	}
	for _, wn := range rec.Warnings {
		fmt.Fprintf(&b, "    WARNING: %s\n", wn)
	}
	io.WriteString(r.out, b.String())
}

// Integrate folds the iteration into the state: it recovers the markers
// once more (idempotent), estimates the context the iteration used, writes
// the iteration summary with its signal block and records the iteration.
func (r *runner) Integrate(_ context.Context, s State, outs []iterate.Outcome[State]) (State, error) {
	sch := r.sched
	var p *Plan
	var err error
	var rc Recovery
	if r.fileMode {
		p, err = r.load()
	} else {
		p, err = r.edit(func(p *Plan) error { rc = p.Recover(); return nil })
	}
	if err != nil {
		return s, iterate.Permanent(err)
	}
	rec := IterationRecord{Iteration: sch.iteration, MaxIterations: sch.maxIterations, Title: p.Title,
		FileMode: r.fileMode, Deferred: sch.deferred, ContextSize: r.window.Size,
		ContextThreshold: r.threshold(), Continuation: s.Continuation, Warnings: rc.Warnings}
	for _, w := range sch.waves {
		rec.Waves = append(rec.Waves, w.record)
	}
	for i := range outs {
		rep := outs[i].Part.Report
		if rep == nil { // the engine replaced the outcome (a task not started)
			n, _ := parsePhaseRef(outs[i].Task.Gap().Target)
			rep = &PhaseReport{Phase: n}
		}
		if outs[i].Err != nil && rep.Err == "" {
			rep.Err = outs[i].Err.Error()
		}
		rec.Phases = append(rec.Phases, *rep)
	}

	remaining := 0
	if r.fileMode {
		for _, t := range p.Items {
			if t.Done {
				rec.ItemsDone++
			} else {
				rec.ItemsOpen = append(rec.ItemsOpen, "Line_"+strconv.Itoa(t.line+1))
			}
		}
		for _, ph := range rec.Phases {
			rec.CompletedNow += len(ph.Checked)
			rec.ItemsDone += ph.Resolved // resolved placeholders are no items any more
		}
		remaining = len(rec.ItemsOpen)
	} else {
		complete, rest := p.Split()
		for _, ph := range complete {
			rec.Completed = append(rec.Completed, PhaseRef{ph.Num, ph.Title})
		}
		for _, ph := range rest {
			rec.Remaining = append(rec.Remaining, PhaseRef{ph.Num, ph.Title})
		}
		for _, ph := range rec.Phases {
			if ph.Complete && ph.Err == "" {
				rec.CompletedNow++
			}
		}
		remaining = len(rest)
	}
	rec.ContextTokens = budget.EstimateContext(rec.CompletedNow, remaining, budget.DefaultTokensPerCompleted, budget.DefaultTokensPerRemaining)
	rec.ContextExhausted = sch.contextCut || r.window.Exhausted(rec.ContextTokens)

	if err := os.MkdirAll(r.summaries, 0o755); err != nil {
		return s, iterate.Permanent(err)
	}
	rec.Summary = filepath.Join(r.summaries, fmt.Sprintf("%03d-iteration-%d-summary.md", nextSummary(r.summaries), rec.Iteration))
	if err := r.writeSummary(&rec); err != nil {
		return s, iterate.Permanent(err)
	}

	next := s
	next.Report = nil
	next.Iterations = append(slices.Clip(s.Iterations), rec)
	next.Continuation = ""
	if remaining > 0 {
		next.Continuation = rec.Summary
	}
	sig := signalOf(r, &rec)
	fmt.Fprintf(r.out, "Iteration %d summary: %s (completion %s, context %s)\n", rec.Iteration, rec.Summary,
		completionLine(&rec), sig.ContextPercent)
	return next, nil
}

func (r *runner) threshold() float64 {
	if r.window.Threshold == 0 {
		return budget.DefaultContextThreshold
	}
	return r.window.Threshold
}

// nextSummary returns the sequence number of the next summary in dir: one
// more than the highest "NNN-" prefix there, so that a new run never
// overwrites the summaries of an earlier one (NNN equals the iteration in a
// fresh directory, as in seed 003's 003-iteration-3-summary.md).
func nextSummary(dir string) int {
	entries, _ := os.ReadDir(dir)
	high := 0
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "-")
		if n, err := strconv.Atoi(num); ok && err == nil && n > high && strings.HasSuffix(e.Name(), "-summary.md") {
			high = n
		}
	}
	return high + 1
}

// writeSummary renders rec and writes it to rec.Summary.
func (r *runner) writeSummary(rec *IterationRecord) error {
	return writeFileAtomic(rec.Summary, renderSummary(r, rec))
}

func iterLabel(n, max int) string {
	if max > 0 {
		return fmt.Sprintf("%d/%d", n, max)
	}
	return strconv.Itoa(n)
}

func joinPhases(nums []int) string {
	names := make([]string, len(nums))
	for i, n := range nums {
		names[i] = phaseName(n)
	}
	return strings.Join(names, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
