package main

import (
	"time"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/examples/internal/term"
	"github.com/refine-go/refine/examples/internal/textfmt"
	"github.com/refine-go/refine/iterate"
)

// dryRun prints the assembled prompt and its token count (seed 004,
// example 4) and runs nothing.
func dryRun(set *settings, stdout io.Writer, errs *errLines) int {
	prompt, err := assemblePrompt(set.Prompts, set.Context, set.Workspace)
	if err != nil {
		errs.printf("%v", err)
		return exitError
	}
	ai := set.AICmd
	if ai == "" {
		ai = "(no AI CLI configured)"
	}
	tokens := budget.EstimateTokens(prompt)
	if set.JSON {
		return writeDryRun(stdout, dryRunResult{DryRun: true, Procedure: set.Procedure, AICmd: set.AICmd,
			Gates: set.Gates, Tokens: tokens, TokenBudget: set.TokenBudget, OverBudget: tokens > set.TokenBudget,
			Prompt: prompt})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[DRY RUN] Procedure: %s\n", set.Procedure)
	fmt.Fprintf(&b, "[DRY RUN] Would execute with: %s\n", ai)
	if len(set.Gates) > 0 {
		fmt.Fprintf(&b, "[DRY RUN] Quality gates: %s\n", strings.Join(set.Gates, "; "))
	}
	fmt.Fprintf(&b, "[DRY RUN] Token count: %s / %s budget\n", textfmt.Tokens(int64(tokens)), textfmt.Tokens(int64(set.TokenBudget)))
	if tokens > set.TokenBudget {
		fmt.Fprintf(&b, "[DRY RUN] WARNING: Prompt exceeds token budget: %s > %s\n", textfmt.Tokens(int64(tokens)), textfmt.Tokens(int64(set.TokenBudget)))
	}
	b.WriteString("\n")
	b.WriteString(prompt)
	io.WriteString(stdout, b.String())
	return exitOK
}

// dryRunResult is what --dry-run writes with --json.
type dryRunResult struct {
	DryRun    bool   `json:"dry_run"`
	Procedure string `json:"procedure"`
	// AICmd is the AI CLI that would run, empty when none is configured.
	AICmd       string   `json:"ai_cmd"`
	Gates       []string `json:"gates"`
	Tokens      int      `json:"tokens"`
	TokenBudget int      `json:"token_budget"`
	OverBudget  bool     `json:"over_budget"`
	Prompt      string   `json:"prompt"`
}

// writeDryRun writes r as one line of JSON.
func writeDryRun(w io.Writer, r dryRunResult) int {
	if r.Gates == nil {
		r.Gates = []string{}
	}
	data, _ := json.Marshal(r) // plain fields: cannot fail
	fmt.Fprintf(w, "%s\n", data)
	return exitOK
}

// newLogger returns the structured logger: JSON lines appended to --log,
// console lines on stderr with --verbose, both, or none.
func newLogger(set *settings, stderr io.Writer) (*zap.Logger, func(), error) {
	var cores []zapcore.Core
	closeFn := func() {}
	if set.LogFile != "" {
		f, err := os.OpenFile(set.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("opening the log: %w", err)
		}
		closeFn = func() { f.Close() }
		enc := zap.NewProductionEncoderConfig()
		enc.TimeKey = "time"
		enc.EncodeTime = zapcore.ISO8601TimeEncoder
		enc.EncodeDuration = zapcore.StringDurationEncoder
		cores = append(cores, zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(f), zap.DebugLevel))
	}
	if set.Verbose {
		enc := zap.NewDevelopmentEncoderConfig()
		enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc.EncodeDuration = zapcore.StringDurationEncoder
		cores = append(cores, zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(stderr), zap.DebugLevel))
	}
	if len(cores) == 0 {
		return zap.NewNop(), closeFn, nil
	}
	log := zap.New(zapcore.NewTee(cores...)).With(zap.String("procedure", set.Procedure))
	return log, func() { _ = log.Sync(); closeFn() }, nil
}

// runLoop checks the procedure's saved state, runs or resumes the loop, and
// returns the run, its exit code set. The progress lines go to stdout, or to
// stderr with --json, which writes the final result to stdout (see
// writeResult).
func runLoop(ctx context.Context, hurry <-chan struct{}, running *activity, set *settings, environ []string, log *zap.Logger, stdout io.Writer, errs *errLines) *loopRun {
	progress := stdout
	if set.JSON {
		progress = errs.w
	}
	tty := term.Is(progress)
	out := &console{w: progress, tty: tty, color: useColor(tty, lookup(environ))}
	run := &loopRun{ctx: ctx, hurry: hurry, running: running, set: set, environ: environ, log: log, out: out, stderr: errs.w, errs: errs}
	run.code = run.run()
	return run
}

// loopRun is one run of the loop and what it ended with.
type loopRun struct {
	ctx     context.Context
	hurry   <-chan struct{}
	running *activity
	set     *settings
	environ []string
	log     *zap.Logger
	out     *console
	stderr  io.Writer
	errs    *errLines

	// code is the exit code.
	code int
	// Set by run: the engine's result and error, and the reporter.
	res *iterate.Result[loopState]
	err error
	rep *reporter
}

// run runs or resumes the loop and returns the exit code.
func (l *loopRun) run() int {
	ctx, set, out, errs := l.ctx, l.set, l.out, l.errs
	if !set.Resume {
		if code := preflight(set, errs); code >= 0 {
			return code
		}
	}

	store := checkpoint.NewDir(set.StateDir)
	saved, persist, code := prepare(ctx, set, store, out, errs)
	if code >= 0 {
		return code
	}

	resuming := saved != nil
	if resuming {
		// The run's settings, limits included, are in its state: continue
		// under them, unless the resume command line gives others (the
		// engine's settings fingerprint holds the limits).
		var prev loopState
		if json.Unmarshal(saved.State, &prev) == nil && prev.Settings != nil {
			prev.Settings.apply(set, set.flags)
		}
	}
	maxIter, threshold := set.MaxIterations, set.FailureThreshold
	if set.Resume {
		if code := preflight(set, errs); code >= 0 {
			return code
		}
	}

	rep := newReporter(out, set, persist)
	l.rep = rep
	ag := &agent{set: set, log: l.log, env: l.environ, stdout: out.w, stderr: l.stderr, hurry: l.hurry, running: l.running}
	if err := ag.checkGit(ctx); err != nil {
		errs.printf("%v", err)
		return exitUsage
	}
	// The AI CLI's word that the work is done converges the loop, the
	// reason naming the marker or file; then the failure threshold and the
	// iteration limit end it (the assessments of an AI CLI loop are
	// otherwise empty), and the budget's limits, which the engine checks.
	done := converge.PolicyFunc(func(h *converge.History) converge.Decision {
		if reason := ag.doneReason(); reason != "" && h.Current.Complete {
			return converge.Decision{Verdict: converge.Converged, Reason: reason}
		}
		return converge.Decision{}
	})
	opts := []iterate.Option{
		iterate.WithSession(set.Procedure),
		iterate.WithMaxIterations(maxIter),
		iterate.WithFailureThreshold(threshold),
		iterate.WithConvergence(converge.Any(done, converge.Failures{}, converge.IterationLimit{})),
		iterate.WithLogger(l.log),
		iterate.WithObserver(rep.observe),
	}
	if set.MaxCost > 0 || set.MaxTokens > 0 || set.MaxTime > 0 {
		opts = append(opts, iterate.WithBudget(budget.Limits{Cost: set.MaxCost, Tokens: set.MaxTokens, Wall: set.MaxTime}))
	}
	if set.MaxTime > 0 {
		ag.deadline = time.Now().Add(set.MaxTime)
	}
	if persist {
		flags := iterate.Cleanup
		if !resuming && !set.Fresh {
			// Seed 004: a start over an interrupted (or crashed) run offers
			// resume instead. The engine decides under the procedure's
			// lock, so no other run can slip in between the check and the
			// start.
			flags |= iterate.RefuseResumable
		}
		opts = append(opts, iterate.WithCheckpointer(store, flags))
	}
	eng := iterate.New(iterate.Func(ag.iteration), opts...)

	var res *iterate.Result[loopState]
	var err error
	if resuming {
		var resumeOpts []iterate.ResumeOption
		if set.LimitsFromFlags {
			resumeOpts = append(resumeOpts, iterate.AllowSettingsChange())
		}
		res, err = eng.Resume(ctx, resumeOpts...)
	} else {
		res, err = eng.Run(ctx, loopState{Settings: runSettingsOf(set)})
	}
	l.res, l.err = res, err

	var locked *checkpoint.LockedError
	var resumable *iterate.ResumableError
	switch {
	case errors.As(err, &locked):
		refuseRunning(errs, set.Procedure, locked)
		return exitError
	case errors.As(err, &resumable):
		offerResume(errs, set, resumable.Checkpoint)
		return exitError
	case errors.Is(err, iterate.ErrInterrupted):
		return exitInterrupted
	case res == nil && ctx.Err() != nil:
		out.print("Interrupted before the first iteration.")
		return exitInterrupted
	case errors.Is(err, iterate.ErrAborted):
		return exitError
	case err != nil:
		errs.printf("%v", err)
		return exitError
	case allFailed(res, rep.lastErr):
		// Seed 004 counts the iterations below the failure threshold as
		// done; a run that never succeeded did nothing, and says so.
		out.error(fmt.Sprintf("every iteration failed (%d of %d); the last: %s", res.Iterations, res.Iterations, withReason(rep.lastErr)))
		return exitError
	case res.Status == iterate.MaxIterations || res.Status == iterate.BudgetExhausted || res.Status.Success():
		// A limit the user set (iterations, spending) or the AI CLI's word
		// that the work is done.
		return exitOK
	}
	return exitError
}

// allFailed reports whether a loop that reached its iteration limit (or a
// spending limit) never had a successful iteration, across resumes, and
// this run saw the last failure (lastErr).
func allFailed(res *iterate.Result[loopState], lastErr error) bool {
	return (res.Status == iterate.MaxIterations || res.Status == iterate.BudgetExhausted) &&
		res.Iterations > 0 && res.State.Succeeded == 0 && lastErr != nil
}

// preflight checks that an AI CLI is configured (exit code 2 otherwise) and
// that the prompt can be assembled (exit code 1 otherwise); it returns -1
// when all is well.
func preflight(set *settings, errs *errLines) int {
	if set.AICmd == "" {
		errs.printf("no AI CLI configured: give --ai-cmd, set AGENTLOOP_AI_CMD, or set ai_cmd in .agentloop/config.json")
		return exitUsage
	}
	if _, err := assemblePrompt(set.Prompts, set.Context, set.Workspace); err != nil {
		errs.printf("%v", err)
		return exitError
	}
	return -1
}

// prepare looks at the procedure's state directory before a run (seed 004's
// algorithm, step 2). It returns the checkpoint to resume from (nil to start
// afresh), whether state can be persisted, and an exit code when the program
// must stop here (-1 otherwise):
//
//   - a run still holding the procedure's lock refuses a second start;
//   - a state the loop cannot write is warned about and the loop runs on
//     without persistence;
//   - --fresh discards the saved state;
//   - resume loads the saved state, whose settings and limits it continues
//     with: without one it is an error, a corrupted one is warned about and a
//     fresh start made, and one that ended for good cannot be resumed.
//
// It holds the procedure's lock meanwhile, and releases it before the engine
// takes it again. Whether a start must give way to a resume is not decided
// here but by the engine under its own lock (iterate.RefuseResumable),
// as is a start over a corrupted state (the engine warns and starts afresh).
func prepare(ctx context.Context, set *settings, store *checkpoint.Dir, out *console, errs *errLines) (*checkpoint.Checkpoint, bool, int) {
	_, release, err := store.Lock(ctx, set.Procedure)
	var locked *checkpoint.LockedError
	switch {
	case errors.As(err, &locked):
		refuseRunning(errs, set.Procedure, locked)
		return nil, false, exitError
	case ctx.Err() != nil:
		return nil, false, exitInterrupted
	case err != nil:
		out.warn(fmt.Sprintf("state cannot be persisted (%v); continuing without resume support", err))
		if set.Resume {
			errs.printf("cannot resume procedure %s: its state is unavailable", set.Procedure)
			return nil, false, exitError
		}
		return nil, false, -1
	}
	defer release()

	if !set.Resume {
		if set.Fresh {
			if err := store.Remove(ctx, set.Procedure); err != nil {
				out.warn(fmt.Sprintf("old state of procedure %s not removed: %v", set.Procedure, err))
			}
		}
		return nil, true, -1
	}

	saved, err := store.Load(ctx, set.Procedure)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		errs.printf("no saved state of procedure %s to resume; start it with: agentloop %s", set.Procedure, set.Procedure)
		return nil, true, exitError
	case ctx.Err() != nil:
		return nil, true, exitInterrupted
	case errors.Is(err, checkpoint.ErrCorrupt) && set.AICmd == "":
		// The run's settings, its AI CLI among them, were in the damaged
		// state: say so, rather than that none is configured.
		out.warn(fmt.Sprintf("previous checkpoint of session %q unreadable: %v", set.Procedure, err))
		errs.printf("cannot resume procedure %s: its settings were in the damaged state (set aside as *.corrupt in %s) and no AI CLI is configured; start it again with: agentloop %s --ai-cmd CMD",
			set.Procedure, set.StateDir, set.Procedure)
		return nil, true, exitError
	case errors.Is(err, checkpoint.ErrCorrupt):
		// Seed 004: a corrupted state is a fresh start. The damaged files
		// stay quarantined, so the engine's start finds them and warns.
		return nil, true, -1
	case err != nil:
		// Not damage (a newer format, a permission): never start over a
		// state that may be good.
		errs.printf("cannot resume procedure %s: %v", set.Procedure, err)
		return nil, true, exitError
	}
	if len(saved.Skipped) > 0 {
		out.warn(fmt.Sprintf("saved state generations %v damaged; resuming from generation %d", saved.Skipped, saved.Generation))
	}
	if iterate.Status(saved.Status).Final() {
		errs.printf("procedure %s already ended (%s: %s); nothing to resume. Start it again with: agentloop %s",
			set.Procedure, statusName(iterate.Status(saved.Status)), saved.Reason, set.Procedure)
		return nil, true, exitError
	}
	return saved, true, -1
}

// offerResume explains that the procedure can be resumed (seed 004: a state
// file with status interrupted offers resume).
func offerResume(errs *errLines, set *settings, saved *checkpoint.Checkpoint) {
	how := "was interrupted"
	if iterate.Status(saved.Status) == iterate.Running {
		how = "did not finish (its run is gone: crashed?)"
	}
	max := 0
	var prev loopState
	if json.Unmarshal(saved.State, &prev) == nil && prev.Settings != nil {
		max = prev.Settings.MaxIterations
	}
	errs.printf("procedure %s %s after %d iterations (%s).\nResume with: %s\nor start over with: agentloop %s --fresh",
		set.Procedure, how, saved.Iteration, limit(max), set.ResumeHint, set.Procedure)
}

// refuseRunning explains that a live run holds the procedure.
func refuseRunning(errs *errLines, procedure string, locked *checkpoint.LockedError) {
	holder := ""
	if locked.Holder != "" {
		holder = " (" + locked.Holder + ")"
	}
	errs.printf("procedure %s is already running%s; refusing to start a second run of it", procedure, holder)
}
