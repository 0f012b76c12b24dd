// Command planrunner executes a Markdown plan in waves with the refine
// engine (seed 003: iteration loop, rate-limit coordination and phase marker
// recovery).
//
// A plan has `### Phase N: title` headings, `- [ ]` / `- [x]` tasks under
// them and optional `Depends on: Phase 1, Phase 3` lines. Each iteration of
// the loop is one coordinator invocation: the incomplete phases are layered
// into waves by their dependencies, the waves run in order, and the phases of
// a wave run in parallel under --parallel, each by an implementer (the
// built-in simulation or --implementer-cmd). See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// Exit codes.
const (
	exitOK          = 0   // the plan is complete
	exitError       = 1   // an error: unreadable or invalid plan, failed run, locked session
	exitUsage       = 2   // bad flags or arguments
	exitStuck       = 3   // halted as stuck: work remaining unchanged for 2 iterations
	exitIncomplete  = 4   // stopped with work remaining: max iterations, or file mode's single pass
	exitInterrupted = 130 // interrupted (SIGINT/SIGTERM); resume with --resume
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	plan             string
	implementerCmd   string
	parallel         int
	maxIterations    int
	contextWindow    int64
	contextThreshold float64
	rateBudget       int
	phaseTimeout     time.Duration
	summaries        string
	state            string
	noCheckpoint     bool
	session          string
	resume           bool
	fileMode         bool
	dryRun           bool
	recoverOnly      bool
	quiet            bool
	verbose          bool
	simFail          string
	simPerCall       int
	simSkipMarkers   bool
}

const usageHead = `planrunner executes a Markdown plan in waves with a bounded, resumable loop.

Usage:
  planrunner [flags] PLAN.md        plan-based mode: phases in waves, iterations
  planrunner [flags] FILE.lean      file-based mode: one pass, no waves
  planrunner --dry-run PLAN.md      show the waves and exit
  planrunner --recover-only PLAN.md recover phase markers and the plan status only
  planrunner --resume PLAN.md       continue an interrupted run from its checkpoint

A plan has "### Phase N: title" headings, "- [ ]" / "- [x]" tasks and optional
"Depends on: Phase 1, Phase 3" lines under a heading. Each iteration runs the
waves of the incomplete phases in order; the phases of a wave run in parallel.
After each wave, phases whose tasks are all checked get [COMPLETE] and the plan's
**Status** line becomes COMPLETE when every phase is. Each iteration writes
<summaries>/NNN-iteration-N-summary.md ending with the orchestrator signal block,
which is also printed at the end.

Flags:
`

const usageTail = `
Exit codes:
  0    the plan is complete
  1    error (invalid plan, dependency cycle, failed run, session locked)
  2    usage error
  3    stuck: the remaining phases did not change for 2 iterations
  4    stopped with work remaining (max iterations; file mode's single pass)
  130  interrupted; run again with --resume to continue (interrupted before
       the first iteration: nothing was saved, run again without it)

Implementer protocol (--implementer-cmd): the command runs as "sh -c CMD" once
per phase and iteration, gets the phase as a JSON object on stdin (tasks
numbered from 1, external_call_budget, ...) and PLANRUNNER_* variables, and
prints a JSON report as the last stdout line starting with "{":
  {"completed":[1,2],"external_calls":1,"local_calls":1,"mark_complete":true}
It must not edit the plan file: the runner checks the reported tasks off.
More external calls than the phase's share fail the phase. See README.md.
`

// parse reads the command line; flags may follow the plan argument.
func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("planrunner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.implementerCmd, "implementer-cmd", "", "run each phase with this shell `command` (JSON phase on stdin, JSON report on stdout) instead of the built-in simulated implementer")
	fs.IntVar(&o.parallel, "parallel", 3, "run at most `n` phases of a wave at once")
	fs.IntVar(&o.maxIterations, "max-iterations", 5, "stop after `n` iterations with work remaining (0: unlimited)")
	fs.Int64Var(&o.contextWindow, "context-window", 200000, "context window of one iteration in `tokens` (0: unknown, never exhausted)")
	fs.Float64Var(&o.contextThreshold, "context-threshold", budget.DefaultContextThreshold, "share of the context window at which an iteration stops early and continues in the next (`ratio` in (0,1], or a percentage such as 90)")
	fs.IntVar(&o.rateBudget, "rate-limit-budget", 3, "allow `n` external calls per wave, divided among the wave's phases; a phase whose share is spent uses the local fallback")
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 0, "bound each phase's implementer call (`duration`, e.g. 10m; 0: none)")
	fs.StringVar(&o.summaries, "summaries", "", "write iteration summaries to `dir` (default: ../summaries when the plan is in a plans/ directory, else <plan dir>/summaries)")
	fs.StringVar(&o.state, "state", "", "keep checkpoints in `dir` for --resume (default: <plan dir>/.planrunner)")
	fs.BoolVar(&o.noCheckpoint, "no-checkpoint", false, "keep no checkpoints (--resume is then unavailable)")
	fs.StringVar(&o.session, "session", "", "checkpoint session `name` (default: the plan's file name without extension)")
	fs.BoolVar(&o.resume, "resume", false, "continue the session from its latest checkpoint")
	fs.BoolVar(&o.fileMode, "file-mode", false, "file-based mode for any file (implied by a .lean file): one pass over its checkboxes, no waves, no marker recovery")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the waves, the context estimate and the call shares, then exit")
	fs.BoolVar(&o.recoverOnly, "recover-only", false, "only run phase marker recovery, the checkbox consistency check and the status update")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	fs.BoolVar(&o.verbose, "verbose", false, "structured debug logs on stderr")
	fs.StringVar(&o.simFail, "sim-fail", "", "simulation: comma-separated `phases` that never progress (e.g. \"Phase 3,Phase 5\")")
	fs.IntVar(&o.simPerCall, "sim-tasks-per-call", 0, "simulation: check off at most `n` tasks per phase and call (0: all)")
	fs.BoolVar(&o.simSkipMarkers, "sim-skip-markers", false, "simulation: check tasks off but never add [COMPLETE] (marker recovery adds it)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), usageTail)
	}

	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	bad := func(format string, a ...any) (*options, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintf(stderr, "planrunner: %v\nRun 'planrunner --help' for usage.\n", err)
		return nil, err
	}
	switch {
	case len(pos) == 0:
		return bad("missing the plan file argument")
	case len(pos) > 1:
		return bad("one plan file expected, got %d arguments: %s", len(pos), strings.Join(pos, " "))
	case o.parallel < 1:
		return bad("--parallel must be at least 1, got %d", o.parallel)
	case o.maxIterations < 0:
		return bad("--max-iterations must not be negative, got %d", o.maxIterations)
	case o.rateBudget < 0:
		return bad("--rate-limit-budget must not be negative, got %d", o.rateBudget)
	case o.phaseTimeout < 0:
		return bad("--phase-timeout must not be negative")
	case o.simPerCall < 0:
		return bad("--sim-tasks-per-call must not be negative, got %d", o.simPerCall)
	case o.resume && o.noCheckpoint:
		return bad("--resume needs checkpoints; drop --no-checkpoint")
	case o.implementerCmd != "" && (o.simFail != "" || o.simPerCall != 0 || o.simSkipMarkers):
		return bad("the --sim-* flags configure the built-in implementer; they cannot be used with --implementer-cmd")
	case o.dryRun && o.recoverOnly:
		return bad("--dry-run and --recover-only exclude each other")
	}
	if o.contextThreshold > 1 {
		o.contextThreshold /= 100
	}
	if err := (budget.ContextWindow{Size: o.contextWindow, Threshold: o.contextThreshold}).Validate(); err != nil || o.contextThreshold <= 0 {
		return bad("invalid --context-window %d / --context-threshold %g: must be a size ≥ 0 and a ratio in (0, 1]", o.contextWindow, o.contextThreshold)
	}
	if o.session != "" {
		if err := checkpoint.ValidateSession(o.session); err != nil {
			return bad("invalid --session: %v", err)
		}
	}
	o.plan = pos[0]
	return o, nil
}

// lockedWriter serialises writes from the phases' goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "planrunner: "+format+"\n", a...)
		return exitError
	}

	planPath, err := filepath.Abs(o.plan)
	if err != nil {
		return fail("%v", err)
	}
	fileMode := o.fileMode || strings.EqualFold(filepath.Ext(planPath), ".lean")
	data, err := os.ReadFile(planPath)
	if err != nil {
		return fail("%v", err)
	}
	plan, err := ParsePlan(planPath, data, fileMode)
	if err != nil {
		return fail("%v", err)
	}
	if !fileMode {
		if _, err := plan.Waves(); err != nil {
			return fail("%v", err)
		}
	}

	out := &lockedWriter{w: stdout}
	r := &runner{plan: planPath, fileMode: fileMode, rateBudget: o.rateBudget, out: out,
		window: budget.ContextWindow{Size: o.contextWindow, Threshold: o.contextThreshold}}
	r.summaries = o.summaries
	if r.summaries == "" {
		dir := filepath.Dir(planPath)
		if filepath.Base(dir) == "plans" {
			r.summaries = filepath.Join(filepath.Dir(dir), "summaries")
		} else {
			r.summaries = filepath.Join(dir, "summaries")
		}
	}
	if r.summaries, err = filepath.Abs(r.summaries); err != nil {
		return fail("%v", err)
	}
	r.topic = filepath.Dir(r.summaries)

	switch {
	case o.dryRun:
		return dryRun(out, r, plan, o)
	case o.recoverOnly:
		if fileMode {
			fmt.Fprintln(out, "File-based mode: Skipping phase marker recovery")
			return exitOK
		}
		rc, err := finalRecovery(r)
		if err != nil {
			return fail("%v", err)
		}
		printRecovery(out, rc, nil)
		return exitOK
	}

	if o.implementerCmd != "" {
		r.impl = &External{Cmd: o.implementerCmd}
	} else {
		sim := &Sim{Fail: map[int]bool{}, PerCall: o.simPerCall, SkipMarkers: o.simSkipMarkers}
		for _, f := range strings.Split(o.simFail, ",") {
			if strings.TrimSpace(f) == "" {
				continue
			}
			n, ok := parsePhaseRef(f)
			if !ok {
				fmt.Fprintf(stderr, "planrunner: --sim-fail: %q is not a phase\n", f)
				return exitUsage
			}
			sim.Fail[n] = true
		}
		r.impl = sim
	}

	maxIter := o.maxIterations
	if fileMode {
		maxIter = 1 // file-based mode is a single pass
	}
	opts := []iterate.Option{
		iterate.WithMaxIterations(maxIter),
		iterate.WithParallelism(o.parallel),
		iterate.WithTaskTimeout(o.phaseTimeout), // each phase's Work: its implementer call
		iterate.WithStrategy(r),
		iterate.WithAnalyzer(gap.AnalyzerFunc(analyze)),
		// Seed 003's decision table, spelled out: complete → done; the
		// remaining phases unchanged for 2 iterations → stuck; the
		// iteration limit → stop with work remaining (and the default
		// failure threshold). converge.Default() decides the same for an
		// assessment that measures only the work remaining, but this keeps
		// the seed's "2" and nothing else in view.
		iterate.WithConvergence(converge.Any(converge.Done{}, converge.Failures{}, converge.NoProgress{After: 2}, converge.IterationLimit{})),
		iterate.WithFingerprint("planrunner|" + planPath + "|" + modeName(fileMode)),
	}
	if !o.noCheckpoint {
		dir := o.state
		if dir == "" {
			dir = filepath.Join(filepath.Dir(planPath), ".planrunner")
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return fail("%v", err)
		}
		session := o.session
		if session == "" {
			session = sessionName(planPath)
		}
		r.checkpoint = dir
		opts = append(opts, iterate.WithCheckpointer(checkpoint.NewDir(dir)), iterate.WithSession(session))
	}
	if !o.quiet {
		opts = append(opts, iterate.WithObserver(iterate.Progress(stderr)))
	}
	if o.verbose {
		enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
		opts = append(opts, iterate.WithLogger(zap.New(zapcore.NewCore(enc, zapcore.AddSync(&lockedWriter{w: stderr}), zap.DebugLevel))))
	}

	mode := "plan-based"
	if fileMode {
		mode = "file-based"
	}
	fmt.Fprintf(out, "planrunner: %s (%s mode)\n", planPath, mode)
	eng := iterate.New[State](r, opts...)
	var res *iterate.Result[State]
	if o.resume {
		res, err = eng.Resume(ctx)
	} else {
		res, err = eng.Run(ctx, State{Plan: planPath, Mode: modeName(fileMode)})
	}
	notStarted := func() int {
		if o.resume {
			fmt.Fprintln(out, "Interrupted before resuming: nothing done; run again with --resume to continue.")
		} else {
			fmt.Fprintln(out, "Interrupted before the first iteration: nothing done, nothing saved.")
		}
		return exitInterrupted
	}
	if ie := (*iterate.InterruptedError)(nil); errors.As(err, &ie) && ie.BeforeStart {
		return notStarted() // the context ended before the loop started
	}
	if res == nil {
		switch {
		case errors.Is(err, checkpoint.ErrNotFound):
			return fail("no checkpoint to resume in %s; run without --resume", r.checkpoint)
		case errors.Is(err, checkpoint.ErrLocked):
			return fail("another run holds this plan's session: %v", err)
		case errors.Is(err, iterate.ErrSettingsChanged):
			return fail("%v; run without --resume to start over (the plan file keeps the progress)", err)
		}
		return fail("%v", err)
	}
	var last *IterationRecord
	if n := len(res.State.Iterations); n > 0 {
		last = &res.State.Iterations[n-1]
	}
	if res.Status == iterate.Interrupted {
		fmt.Fprintf(out, "Interrupted after %d iteration(s).", res.Iterations)
		if r.checkpoint != "" {
			fmt.Fprintf(out, " State saved in %s; continue with --resume.", r.checkpoint)
		}
		fmt.Fprintln(out)
		return exitInterrupted
	}
	// Block 1d: phase marker validation and recovery.
	var recovered []int
	for _, rec := range res.State.Iterations {
		for _, w := range rec.Waves {
			recovered = append(recovered, w.Recovered...)
		}
	}
	final := plan
	if fileMode {
		fmt.Fprintln(out, "File-based mode: Skipping phase marker recovery")
		if final, err = r.load(); err != nil {
			return fail("%v", err)
		}
	} else {
		rc, err := finalRecovery(r)
		if err != nil {
			return fail("%v", err)
		}
		printRecovery(out, rc, recovered)
		if final, err = r.load(); err != nil {
			return fail("%v", err)
		}
	}

	fmt.Fprintf(out, "Stopped: %s after %d iteration(s): %s\n", res.Status, res.Iterations, res.Reason)
	if err != nil {
		fmt.Fprintf(stderr, "planrunner: %v\n", err)
	}
	var sig Signal
	if last != nil {
		sig = signalOf(r, last)
	} else {
		sig = signalOfPlan(r, final)
	}
	// Conclude recorded it in the last summary; the signal says so even if
	// that rewrite failed (the engine reported it as a warning).
	sig.Stuck = res.Status == iterate.Stuck
	fmt.Fprintf(out, "\n%s", sig)

	switch res.Status {
	case iterate.Converged, iterate.EarlyExit:
		return exitOK
	case iterate.Stuck:
		return exitStuck
	case iterate.MaxIterations, iterate.BudgetExhausted, iterate.Plateau:
		return exitIncomplete
	}
	return exitError
}

func modeName(fileMode bool) string {
	if fileMode {
		return modeFile
	}
	return modePlan
}

// sessionName derives a checkpoint session name from the plan's file name.
func sessionName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), ".")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" || checkpoint.ValidateSession(s) != nil {
		return "plan"
	}
	return s
}

// finalRecovery runs Block 1d on the plan file.
func finalRecovery(r *runner) (Recovery, error) {
	var rc Recovery
	_, err := r.edit(func(p *Plan) error { rc = p.Recover(); return nil })
	return rc, err
}

// printRecovery prints the outcome of Block 1d; during lists the markers the
// waves recovered before it.
func printRecovery(out io.Writer, rc Recovery, during []int) {
	fmt.Fprintln(out, "Phase marker validation (Block 1d):")
	fmt.Fprintf(out, "  Phases: %d, marked [COMPLETE]: %d\n", rc.Total, rc.MarkedBefore)
	switch {
	case rc.MarkedBefore == rc.Total:
		fmt.Fprintln(out, "  All phases marked complete")
	case len(rc.Recovered) > 0:
		fmt.Fprintf(out, "  Recovered %d missing marker(s): %s (%d/%d marked)\n", len(rc.Recovered), joinPhases(rc.Recovered), rc.MarkedAfter, rc.Total)
	default:
		fmt.Fprintf(out, "  No markers to recover: %d phase(s) incomplete\n", rc.Total-rc.MarkedAfter)
	}
	if len(during) > 0 {
		slices.Sort(during)
		fmt.Fprintf(out, "  Recovered after the waves: %s\n", joinPhases(slices.Compact(during)))
	}
	for _, w := range rc.Warnings {
		fmt.Fprintf(out, "  WARNING: checkbox consistency: %s\n", w)
	}
	switch {
	case rc.Status == "":
		fmt.Fprintln(out, "  Plan status: no **Status** line")
	case rc.StatusChanged:
		fmt.Fprintf(out, "  Plan status: %s (updated)\n", rc.Status)
	default:
		fmt.Fprintf(out, "  Plan status: %s\n", rc.Status)
	}
}

// dryRun prints the waves the next iteration would run.
func dryRun(out io.Writer, r *runner, p *Plan, o *options) int {
	if r.fileMode {
		open := p.OpenItems()
		fmt.Fprintf(out, "File: %s (file-based mode): %d open item(s), single pass, %d external calls\n", r.plan, len(open), r.rateBudget)
		return exitOK
	}
	complete, remaining := p.Split()
	waves, _ := p.Waves() // checked by run
	fmt.Fprintf(out, "Plan: %s: %d phases (%d complete, %d remaining), %d wave(s)\n", r.plan, len(p.Phases), len(complete), len(remaining), len(waves))
	k := capacity(r.window, len(remaining))
	taken := 0
	for i, w := range waves {
		var names []string
		for _, ph := range w {
			names = append(names, ph.Name())
		}
		n := min(len(w), max(k-taken, 0))
		taken += n
		fmt.Fprintf(out, "Wave %d: %s (call shares %s)\n", i+1, strings.Join(names, ", "), joinInts(shares(o.rateBudget, n)))
	}
	projected := budget.EstimateContext(taken, len(remaining)-taken, budget.DefaultTokensPerCompleted, budget.DefaultTokensPerRemaining)
	fmt.Fprintf(out, "Context: %d of %d remaining phase(s) fit in one iteration (projected %s / %s tokens, threshold %s)\n",
		taken, len(remaining), budget.FormatTokens(projected), budget.FormatTokens(r.window.Size), percent(r.threshold()))
	return exitOK
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
