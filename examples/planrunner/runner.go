package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/examples/internal/textfmt"
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

	// roleImplement is the role of every task (iterate.Task.Role): the
	// implementer's.
	roleImplement = iterate.RoleImplement
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
	// not run because a dependency was not complete, and Err then says why
	// (a blocked phase is no failed task: it made no call).
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
// Work, Integrate), its Strategy (Plan), an iterate.StageEnder (the
// after-wave marker recovery) and an iterate.Concluder (stuck_detected in
// the last summary).
//
// One engine iteration is one coordinator invocation: Plan turns every
// phase the iteration takes on, of every wave, into a task whose Stage is
// its wave, so the engine runs the waves in order and the phases of a wave
// in parallel under WithParallelism. Each task's Data (a *phaseTask) carries
// its phase, its wave and its share of the wave's external calls to Work,
// EndStage and Integrate.
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
	// onFirstPlan, when set, runs once, before the first iteration's
	// phases (in the engine, under the session's lock): a new run saves
	// its settings for --resume there.
	onFirstPlan func() error

	mu sync.Mutex // serialises every read-modify-write of the plan file
}

// The runner's roles in the loop, checked at compile time: the optional
// interfaces are found by type assertion at run time.
var (
	_ iterate.Worker[State]     = (*runner)(nil)
	_ iterate.Strategy          = (*runner)(nil)
	_ iterate.StageEnder[State] = (*runner)(nil)
	_ iterate.Concluder[State]  = (*runner)(nil)
)

// Settings describes the runner as a strategy for the engine's resume
// fingerprint (iterate describes a strategy by its Settings method when it
// has one): the values its plans depend on, and none of its run-time
// fields (the implementer, the output, the first-plan hook), which differ
// between a run and its resume. A resume restores these values from the
// settings the run saved, so they change only when the saved settings do.
func (r *runner) Settings() string {
	return fmt.Sprintf("planrunner mode=%s context-window=%d context-threshold=%s rate-limit-budget=%d",
		modeName(r.fileMode), r.window.Size, strconv.FormatFloat(r.threshold(), 'g', -1, 64), r.rateBudget)
}

// schedule is one iteration's waves, built by Plan and read-only after it
// (except each wave's record, see waveRun).
type schedule struct {
	iteration, maxIterations int
	waves                    []*waveRun
	deferred                 []int
	contextCut               bool
	workRemaining            []string
}

// waveRun is one wave of an iteration: the engine's stage Stage = wave.
// record is written by EndStage after the wave's tasks returned and read by
// Integrate, both in the loop's goroutine.
type waveRun struct {
	wave   int // 1-indexed
	phases []int
	budget int
	record WaveRecord
}

// phaseTask is the host data of one task (iterate.Task.Data), set by Plan:
// the phase (0 in file mode), its wave, and the gate to its share of the
// wave's external calls.
type phaseTask struct {
	phase int
	sched *schedule
	wave  *waveRun
	gate  *CallGate
}

// phaseTaskOf returns the host data of a task.
func phaseTaskOf(t *iterate.Task) (*phaseTask, error) {
	pt, ok := t.Data.(*phaseTask)
	if !ok || pt == nil {
		return nil, fmt.Errorf("task %s: not planned by planrunner (Data %T)", t.ID(), t.Data)
	}
	return pt, nil
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
	done := 0
	for _, ph := range p.Phases {
		done += len(ph.Tasks) - ph.Open()
	}
	for _, ph := range remaining {
		a.WorkRemaining = append(a.WorkRemaining, phaseKey(ph.Num))
	}
	a.Complete = len(remaining) == 0
	a.Score = float64(len(complete)) / float64(len(p.Phases))
	// The tasks done count as progress too (stuckPolicy): a phase of five
	// tasks done one a call is not stuck.
	a.Scores = map[string]float64{scoreTasksDone: float64(done), scorePhasesComplete: float64(len(complete))}
	return a, nil
}

// The assessment's named scores, as a chart of the session names them
// (iterate/view's Metrics, inspect's --metric): the plan's tasks done and
// its phases complete.
const (
	scoreTasksDone      = "tasks done"
	scorePhasesComplete = "phases complete"
)

// stuckPolicy is seed 003's stuck rule, the remaining phases unchanged for
// after iterations (converge.NoProgress), once no task was done meanwhile
// either: progress is counted in tasks, not only in whole phases.
func stuckPolicy(after int) converge.Policy {
	np := converge.NoProgress{After: after}
	return converge.PolicyFunc(func(h *converge.History) converge.Decision {
		d := np.Decide(h)
		if !d.Stop() || len(h.Recent) < after+1 {
			return d
		}
		// The records of the unchanged iterations and the one before them.
		recent := h.Recent[len(h.Recent)-after-1:]
		first, _ := recent[0].Metric(scoreTasksDone)
		for _, r := range recent[1:] {
			if v, _ := r.Metric(scoreTasksDone); v != first {
				return converge.Decision{}
			}
		}
		return d
	})
}

// analyze turns the work remaining into gaps: one per remaining phase
// (Kind "phase", Target "Phase 3") or item.
func analyze(_ context.Context, a gap.Assessment, _ gap.Thresholds) ([]gap.Gap, error) {
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

// contextTokens estimates the context an iteration used: the tokens the
// implementers reported, plus budget's default for each completed phase
// (or, in file mode, item) whose implementer did not report any, plus
// budget's default for each remaining one.
func contextTokens(rec *IterationRecord, remaining int) int64 {
	var reported int64
	unreported := rec.CompletedNow
	for _, ph := range rec.Phases {
		if ph.Tokens <= 0 {
			continue
		}
		reported += ph.Tokens
		switch {
		case rec.FileMode:
			unreported -= len(ph.Checked)
		case ph.Complete && ph.Err == "":
			unreported--
		}
	}
	est := budget.EstimateContext(max(unreported, 0), remaining, 0, 0)
	if reported > math.MaxInt64-est {
		return math.MaxInt64
	}
	return reported + est
}

// capacity returns how many of the remaining phases one iteration can
// complete before its context estimate reaches the threshold, at least one.
func capacity(w budget.ContextWindow, remaining int) int {
	k := 0
	for k < remaining && !w.Exhausted(budget.EstimateContext(k+1, remaining-k-1, 0, 0)) {
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
// task per phase, in wave order, staged by wave: the engine runs the waves
// in order and the phases of a wave in parallel under the parallelism
// limit.
func (r *runner) Plan(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
	if f := r.onFirstPlan; f != nil {
		r.onFirstPlan = nil
		if err := f(); err != nil {
			return iterate.Plan{}, iterate.Permanent(err)
		}
	}
	p, err := r.load()
	if err != nil {
		return iterate.Plan{}, err
	}
	gaps, maxIter := sit.History.Gaps, sit.History.MaxIterations
	sch := &schedule{iteration: sit.Iteration, maxIterations: maxIter}
	for _, g := range gaps {
		sch.workRemaining = append(sch.workRemaining, strings.Replace(g.Target, " ", "_", 1))
	}

	if r.fileMode {
		w, data := r.newWave(sch, []int{0})
		fmt.Fprintf(r.out, "Iteration %s: file-based mode, %d open item(s), single pass\n", iterLabel(sit.Iteration, maxIter), len(gaps))
		return iterate.Plan{Reason: "file-based mode: one implementer pass over the file",
			Tasks: []iterate.Task{{Role: roleImplement, Gaps: slices.Clone(gaps), Prompt: "Complete the open items of " + r.plan,
				Stage: w.wave, Data: data[0]}}}, nil
	}

	waves, err := p.Waves()
	if err != nil {
		return iterate.Plan{}, iterate.Permanent(err)
	}
	gapOf := make(map[string]gap.Gap, len(gaps))
	for _, g := range gaps {
		gapOf[g.Target] = g
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
		var tasks []iterate.Task
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
			tasks = append(tasks, iterate.Task{Role: roleImplement, Gaps: []gap.Gap{g},
				Prompt: fmt.Sprintf("Implement %s: %s", ph.Name(), ph.Title)})
		}
		if len(nums) == 0 {
			continue
		}
		w, data := r.newWave(sch, nums)
		for i := range tasks {
			tasks[i].Stage, tasks[i].Data = w.wave, data[i]
		}
		plan.Tasks = append(plan.Tasks, tasks...)
	}
	sch.contextCut = len(sch.deferred) > 0

	projected := budget.EstimateContext(taken, remaining-taken, 0, 0)
	plan.Reason = fmt.Sprintf("%d phase(s) in %d wave(s); context projected %s / %s tokens", taken, len(sch.waves),
		textfmt.Tokens(projected), textfmt.Tokens(r.window.Size))
	fmt.Fprintf(r.out, "Iteration %s: %d of %d remaining phase(s) in %d wave(s)", iterLabel(sit.Iteration, maxIter),
		taken, remaining, len(sch.waves))
	if sch.contextCut {
		fmt.Fprintf(r.out, "; context threshold: deferring %s", joinPhases(sch.deferred))
	}
	fmt.Fprintln(r.out)
	return plan, nil
}

// newWave adds the next wave, of the given phases, to sch and returns it
// with each phase's task data: its share of the wave's external call
// budget.
func (r *runner) newWave(sch *schedule, phases []int) (*waveRun, []*phaseTask) {
	// The wave's external calls. A limit of 0 would mean "no limit"; the
	// gates' shares (all 0 then) still stop every call.
	calls, _ := budget.New(budget.Limits{Calls: int64(r.rateBudget)})
	w := &waveRun{wave: len(sch.waves) + 1, phases: phases, budget: r.rateBudget}
	sch.waves = append(sch.waves, w)
	data := make([]*phaseTask, len(phases))
	for i, s := range shares(r.rateBudget, len(phases)) {
		data[i] = &phaseTask{phase: phases[i], sched: sch, wave: w, gate: newCallGate(calls, s)}
	}
	return w, data
}

// blockedReason says why a phase did not run: phases it depends on are not
// complete (they failed earlier in the iteration).
func blockedReason(phase int, on []int) string {
	return fmt.Sprintf("%s blocked: waiting for %s", phaseName(phase), joinPhases(on))
}

// Work implements one phase (file mode: the file). The engine starts it
// once the waves before its own have ended. It checks the phase's
// dependencies, calls the implementer with the phase's share of the wave's
// external calls, and checks off the tasks the implementer reports, under
// the plan lock.
func (r *runner) Work(ctx context.Context, s State, t iterate.Task) (out iterate.Outcome[State], err error) {
	pt, err := phaseTaskOf(&t)
	if err != nil {
		return out, err
	}
	num, sch, gate := pt.phase, pt.sched, pt.gate
	rep := &PhaseReport{Phase: num, Wave: pt.wave.wave, Share: gate.Share()}
	out.Part.Report = rep
	defer func() {
		if err != nil && rep.Err == "" {
			rep.Err = err.Error()
		}
		rep.External, rep.Local = gate.Counts()
		// The task's output in the iteration's record (inspectors and
		// viewers show it): why a blocked phase did not run, or the
		// implementer's note.
		out.Output = rep.Note
		if rep.Blocked {
			out.Output = rep.Err
		}
	}()

	p, err := r.load()
	if err != nil {
		return out, err
	}
	req := &Request{Protocol: Protocol, Mode: modePlan, PlanFile: r.plan, Iteration: t.Iteration,
		MaxIterations: t.MaxIterations, Wave: pt.wave.wave, Waves: len(sch.waves), ExternalCallBudget: gate.Share(),
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
			// A blocked phase did not run: it made no call and is no failed
			// task (the phase it waits for is), so the task succeeds with
			// the reason in its report.
			rep.Blocked, rep.Err = true, blockedReason(num, blocked)
			return out, nil
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

// reportOf returns the phase report of an outcome. The engine replaces the
// outcome of a task that did not start, panicked or was abandoned: its
// report is rebuilt from the task's data, with the outcome's error.
func reportOf(o *iterate.Outcome[State]) *PhaseReport {
	rep := o.Part.Report
	if rep == nil {
		rep = &PhaseReport{}
		if pt, err := phaseTaskOf(&o.Task); err == nil {
			rep.Phase, rep.Wave, rep.Share = pt.phase, pt.wave.wave, pt.gate.Share()
			rep.External, rep.Local = pt.gate.Counts()
		}
	}
	if o.Err != nil && rep.Err == "" {
		cp := *rep
		cp.Err = o.Err.Error()
		rep = &cp
	}
	return rep
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

// EndStage implements iterate.StageEnder. After every phase of a wave
// returned, it recovers the markers (idempotently), verifies checkbox
// consistency and updates the plan status, records the wave for the
// iteration's summary and prints the wave's report. A failed recovery is
// recorded in the wave and returned (the engine reports it as a warning).
func (r *runner) EndStage(_ context.Context, _ State, _ int, outs []iterate.Outcome[State]) error {
	if len(outs) == 0 {
		return nil
	}
	pt, err := phaseTaskOf(&outs[0].Task)
	if err != nil {
		return err
	}
	w := pt.wave
	reports := make([]*PhaseReport, len(outs))
	for i := range outs {
		reports[i] = reportOf(&outs[i])
	}
	rec := &w.record
	rec.Wave, rec.Phases, rec.Budget = w.wave, w.phases, w.budget
	for _, rep := range reports {
		rec.External += rep.External
		rec.Local += rep.Local
	}
	var recErr error
	if !r.fileMode {
		_, recErr = r.edit(func(p *Plan) error {
			rc := p.Recover()
			rec.Recovered, rec.Marked, rec.Total, rec.Warnings = rc.Recovered, rc.MarkedAfter, rc.Total, rc.Warnings
			return nil
		})
		if recErr != nil {
			recErr = fmt.Errorf("marker recovery failed: %w", recErr)
			rec.Warnings = append(rec.Warnings, recErr.Error())
		}
	}

	var b strings.Builder
	if r.fileMode {
		fmt.Fprintf(&b, "  File %s: external calls %d of %d, local fallback %d\n", filepath.Base(r.plan), rec.External, rec.Budget, rec.Local)
	} else {
		fmt.Fprintf(&b, "  Wave %d: %s: external calls %d of %d, local fallback %d\n", rec.Wave, joinPhases(w.phases), rec.External, rec.Budget, rec.Local)
	}
	for _, rep := range reports {
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
		if rep.Note != "" {
			fmt.Fprintf(&b, "      note: %s\n", rep.Note)
		}
	}
	if !r.fileMode && recErr == nil {
		fmt.Fprintf(&b, "    markers: %d/%d phases marked [COMPLETE], recovered: %s\n", rec.Marked, rec.Total, orNone(joinPhases(rec.Recovered)))
	}
	for _, wn := range rec.Warnings {
		fmt.Fprintf(&b, "    WARNING: %s\n", wn)
	}
	io.WriteString(r.out, b.String())
	return recErr
}

// Integrate folds the iteration into the state: it recovers the markers
// once more (idempotent), estimates the context the iteration used, writes
// the iteration summary with its signal block and records the iteration.
func (r *runner) Integrate(_ context.Context, s State, outs []iterate.Outcome[State]) (State, error) {
	if len(outs) == 0 {
		return s, iterate.Permanent(errors.New("integrate: no outcomes"))
	}
	pt, err := phaseTaskOf(&outs[0].Task)
	if err != nil {
		return s, iterate.Permanent(err)
	}
	sch := pt.sched
	var p *Plan
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
		rec.Phases = append(rec.Phases, *reportOf(&outs[i]))
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
	rec.ContextTokens = contextTokens(&rec, remaining)
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

// Conclude implements iterate.Concluder. When the loop stops as stuck, the
// last iteration's record and summary get stuck_detected: true (seed 003),
// before the engine saves the final checkpoint. The decision comes after
// the summary was written (the policy judges the next assessment), so the
// summary is rewritten in place.
func (r *runner) Conclude(_ context.Context, s State, status iterate.Status, _ string) (State, error) {
	n := len(s.Iterations)
	if status != iterate.Stuck || n == 0 || s.Iterations[n-1].Stuck {
		return s, nil
	}
	next := s
	next.Iterations = slices.Clone(s.Iterations)
	last := &next.Iterations[n-1]
	last.Stuck = true
	if err := r.writeSummary(last); err != nil {
		return s, fmt.Errorf("recording stuck_detected in %s: %w", last.Summary, err)
	}
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
