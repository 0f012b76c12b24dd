package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/examples/internal/textfmt"
	"github.com/refine-go/refine/examples/internal/xcmd"
	"github.com/refine-go/refine/iterate"
)

// killGrace is how long a cancelled command and its children have to exit
// after SIGTERM before they are killed. It is shorter than the engine's
// grace (iterate.DefaultGrace), so that an iteration always returns.
const killGrace = 3 * time.Second

// loopState is the state the engine checkpoints: what the iterations did
// and the settings they ran with. The real state of the work lives in the
// workspace's files.
type loopState struct {
	// Succeeded counts the iterations whose AI CLI and gates all passed.
	Succeeded int `json:"succeeded"`
	// Settings are the settings of the run, which a resume continues with
	// (the engine keeps the state of the last successful iteration, so a
	// resume's changed settings are saved once an iteration succeeds).
	Settings *runSettings `json:"settings,omitempty"`
}

// runSettings are the settings a resume takes from the run it continues
// (the iteration limit and failure threshold are in the checkpoint itself).
type runSettings struct {
	AICmd       string   `json:"ai_cmd"`
	Gates       []string `json:"gates,omitempty"`
	Context     []string `json:"context,omitempty"`
	Prompts     string   `json:"prompts"`
	TokenBudget int      `json:"token_budget"`
	AITimeout   duration `json:"ai_timeout,omitempty"`
	MaxTime     duration `json:"max_time,omitempty"`
	AIOutput    string   `json:"ai_output,omitempty"`
	DoneMarker  string   `json:"done_marker,omitempty"`
	DoneFile    string   `json:"done_file,omitempty"`
	GateTimeout duration `json:"gate_timeout,omitempty"`
	Git         string   `json:"git,omitempty"`
	// The spending limits are in the engine's settings fingerprint too.
	MaxCost   float64 `json:"max_cost,omitempty"`
	MaxTokens int64   `json:"max_tokens,omitempty"`
	// The limits the engine's settings fingerprint holds: a resume
	// continues under them unless its command line gives others.
	MaxIterations    int `json:"max_iterations"`
	FailureThreshold int `json:"failure_threshold"`
}

// runSettingsOf returns the settings of set that a resume takes over.
func runSettingsOf(set *settings) *runSettings {
	return &runSettings{AICmd: set.AICmd, Gates: set.Gates, Context: set.Context, Prompts: set.Prompts, TokenBudget: set.TokenBudget,
		AITimeout: duration(set.AITimeout), MaxTime: duration(set.MaxTime), AIOutput: set.AIOutput, DoneMarker: set.DoneMarker, DoneFile: set.DoneFile,
		GateTimeout: duration(set.GateTimeout), Git: set.Git, MaxCost: set.MaxCost, MaxTokens: set.MaxTokens,
		MaxIterations: set.MaxIterations, FailureThreshold: set.FailureThreshold}
}

// apply sets the settings of set that the resume command line does not
// give (flags) to those of the run being resumed.
func (r *runSettings) apply(set *settings, flags *layer) {
	if flags.AICmd == nil && r.AICmd != "" {
		set.AICmd = r.AICmd
	}
	if flags.Gates == nil {
		set.Gates = r.Gates
	}
	if flags.Context == nil {
		set.Context = r.Context
	}
	if flags.Prompts == nil && r.Prompts != "" {
		set.Prompts = r.Prompts
	}
	if flags.TokenBudget == nil && r.TokenBudget > 0 {
		set.TokenBudget = r.TokenBudget
	}
	if flags.AITimeout == nil {
		set.AITimeout = time.Duration(r.AITimeout)
	}
	if flags.MaxTime == nil {
		set.MaxTime = time.Duration(r.MaxTime)
	}
	if flags.AIOutput == nil && r.AIOutput != "" {
		set.AIOutput = r.AIOutput
	}
	if flags.DoneMarker == nil {
		set.DoneMarker = r.DoneMarker
	}
	if flags.DoneFile == nil {
		set.DoneFile = r.DoneFile
	}
	if flags.GateTimeout == nil {
		set.GateTimeout = time.Duration(r.GateTimeout)
	}
	if flags.Git == nil && r.Git != "" {
		set.Git = r.Git
	}
	if flags.MaxCost == nil {
		set.MaxCost = r.MaxCost
	}
	if flags.MaxTokens == nil {
		set.MaxTokens = r.MaxTokens
	}
	if flags.MaxIterations == nil {
		set.MaxIterations = r.MaxIterations
	}
	if flags.FailureThreshold == nil && r.FailureThreshold > 0 {
		set.FailureThreshold = r.FailureThreshold
	}
}

// commandError reports a command that did not exit with status 0.
type commandError struct {
	// What is "AI CLI" or the gate's command line.
	What string
	// Code is the exit status, -1 when the command did not exit normally.
	Code int
	// Signal names the signal that ended the command, if any.
	Signal string
	// timedOut is set for the error of a run stopped by its time limit,
	// notStarted for a command that could not be started.
	timedOut, notStarted bool
	// Err is set when the command could not be run at all.
	Err error
	// Reason is the command's own reason for its failure (the AI CLI's
	// error message), "" when it gives none.
	Reason string
}

// Error is the failure as seed 004's progress lines show it: "AI CLI
// failed (exit 1)", without the reason (see withReason).
func (e *commandError) Error() string {
	return e.What + " failed (" + e.status() + ")"
}

// withReason describes err with the command's own reason for its failure,
// when it gave one: "AI CLI failed (exit 1): Not logged in · Please run
// /login". It is err.Error() for any other error.
func withReason(err error) string {
	var ce *commandError
	if errors.As(err, &ce) && ce.Reason != "" && err == error(ce) {
		return ce.Error() + ": " + ce.Reason
	}
	return err.Error()
}

// notRun reports whether the command never ran: it could not be started,
// or its shell could not find or execute it (exit 126 or 127). Such a run
// sent no prompt.
func (e *commandError) notRun() bool {
	return e.notStarted || e.Code == 126 || e.Code == 127
}

func (e *commandError) status() string {
	switch {
	case e.Err != nil:
		return e.Err.Error()
	case e.Signal != "":
		return "signal: " + e.Signal
	}
	return "exit " + strconv.Itoa(e.Code)
}

func (e *commandError) Unwrap() error { return e.Err }

// gateError reports the quality gates that failed after an iteration.
type gateError struct {
	Failed []*commandError
}

func (e *gateError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = f.What + " (" + f.status() + ")"
	}
	return "Quality gates failed: " + strings.Join(parts, "; ")
}

// agent runs one iteration: prompt, AI CLI, gates.
type agent struct {
	set    *settings
	log    *zap.Logger
	env    []string
	stdout io.Writer
	stderr io.Writer
	// hurry is closed when the running command must be killed at once,
	// without its grace period (a second interrupt).
	hurry <-chan struct{}
	// running says what command runs, for the message of a second
	// interrupt; nil when nobody asks.
	running *activity
	// deadline is when the run's time limit (--max-time) stops the AI
	// CLI; zero without one.
	deadline time.Time

	// done is why the last iteration said the work is done ("" when it did
	// not); the loop's convergence policy reads it (doneReason).
	mu   sync.Mutex
	done string
}

// doneReason is the reason of the loop's convergence when the last
// iteration said the work is done, "" otherwise.
func (a *agent) doneReason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done
}

func (a *agent) setDone(reason string) {
	a.mu.Lock()
	a.done = reason
	a.mu.Unlock()
}

// iteration is the engine's work function (iterate.Func): one fresh AI CLI
// process per iteration. A failing AI CLI or gate returns an error, which
// the engine counts as a failed iteration; the gates run only after a
// successful AI CLI.
func (a *agent) iteration(ctx context.Context, s loopState, r iterate.Round) (loopState, error) {
	log := a.log.With(zap.Int("iteration", r.Iteration))

	start := time.Now()
	prompt, err := assemblePrompt(a.set.Prompts, a.set.Context, a.set.Workspace)
	if err != nil {
		log.Error("prompt assembly failed", zap.String("phase", "prompt"), zap.Duration("duration", time.Since(start)),
			zap.String("outcome", "failed"), zap.Error(err))
		return s, err
	}
	tokens := budget.EstimateTokens(prompt)
	over := tokens > a.set.TokenBudget
	log.Info("prompt assembled", zap.String("phase", "prompt"), zap.Duration("duration", time.Since(start)),
		zap.String("outcome", outcome(!over, "within_budget", "over_budget")), zap.Int("tokens", tokens), zap.Int("token_budget", a.set.TokenBudget))
	if over {
		// Seed 004: warn, and send the prompt anyway. The engine reports the
		// warning at once (a Warned event, a warn-level log entry), before
		// the AI CLI starts.
		iterate.Warn(ctx, fmt.Sprintf("Prompt exceeds token budget: %s > %s",
			textfmt.Tokens(int64(tokens)), textfmt.Tokens(int64(a.set.TokenBudget))))
	}

	env := slices.Concat(a.env, []string{
		"AGENTLOOP_PROCEDURE=" + a.set.Procedure,
		"AGENTLOOP_ITERATION=" + strconv.Itoa(r.Iteration),
		"AGENTLOOP_ITERATION_LIMIT=" + strconv.Itoa(r.MaxIterations),
	})
	a.setDone("")
	if err := a.clearDoneFile(); err != nil {
		return s, err
	}

	start = time.Now()
	out, errOut, err := a.runAI(ctx, prompt, env)
	// The iteration spends what the AI CLI reports it spent, even when it
	// failed or was stopped (what it reported before, zero when it never
	// reached the model); else, unless it never ran, the prompt's
	// estimate, as input: the prompt may have been sent (Result.Usage,
	// across resumes; the budget's limits).
	rep := parseOutput(a.set.AIOutput, out)
	r.Output(rep.Text) // its tail is kept in the iteration's record, for inspectors and viewers
	var ce *commandError
	switch {
	case rep.Counted:
		r.Charge(rep.usage())
	case errors.As(err, &ce) && ce.notRun():
	default:
		r.Charge(budget.Usage{Tokens: int64(tokens), InputTokens: int64(tokens)})
	}
	if errors.As(err, &ce) && ce.Reason == "" {
		// The CLI's own reason: from its report, else its stderr.
		ce.Reason = rep.Reason
		if ce.Reason == "" && !ce.timedOut {
			ce.Reason = stderrReason(errOut)
		}
	}
	log.Info("AI CLI finished", zap.String("phase", "ai_cli"), zap.Duration("duration", time.Since(start)),
		zap.String("outcome", outcome(err == nil, "succeeded", "failed")), zap.Int("exit_code", exitCode(err)),
		zap.Stringer("report", rep), zap.Error(err))
	if err != nil {
		a.recordChanges(ctx, r, "failed: "+err.Error())
		return s, err
	}

	var failed []*commandError
	for _, gate := range a.set.Gates {
		start = time.Now()
		err := a.runGate(ctx, gate, env)
		log.Info("quality gate finished", zap.String("phase", "gate"), zap.String("gate", gate), zap.Duration("duration", time.Since(start)),
			zap.String("outcome", outcome(err == nil, "passed", "failed")), zap.Int("exit_code", exitCode(err)), zap.Error(err))
		if ctx.Err() != nil {
			return s, context.Cause(ctx)
		}
		var ce *commandError
		if errors.As(err, &ce) {
			failed = append(failed, ce)
		}
	}
	if len(failed) > 0 {
		err := &gateError{Failed: failed}
		a.recordChanges(ctx, r, "failed: "+err.Error())
		return s, err
	}
	s.Succeeded++
	s.Settings = runSettingsOf(a.set)
	done := a.saysDone(rep.Text)
	a.recordChanges(ctx, r, outcome(done == "", "succeeded", "succeeded, done"))
	if done != "" {
		a.setDone(done)
		r.Done()
	}
	return s, nil
}

// saysDone returns why the AI CLI's run says the work is done: its answer
// (or raw output) holds the completion marker, or it wrote the completion
// file (a regular file, not a link). It returns "" when it does not.
func (a *agent) saysDone(text string) string {
	if m := a.set.DoneMarker; m != "" && strings.Contains(text, m) {
		return fmt.Sprintf("work complete: the AI CLI printed the completion marker %q", m)
	}
	if f := a.set.DoneFile; f != "" {
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() {
			return fmt.Sprintf("work complete: the AI CLI wrote the completion file %s", f)
		}
	}
	return ""
}

// clearDoneFile removes the completion file before the AI CLI runs, so
// that only a file written by this iteration counts. Something else than a
// regular file under that name (a link, a directory) is an error.
func (a *agent) clearDoneFile() error {
	f := a.set.DoneFile
	if f == "" {
		return nil
	}
	fi, err := os.Lstat(f)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("completion file: %w", err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("completion file %s is not a regular file (%s); not removing it", f, fi.Mode().Type())
	}
	if err := os.Remove(f); err != nil {
		return fmt.Errorf("completion file: %w", err)
	}
	return nil
}

// recordChanges records the iteration's changes in git (--git), unless the
// loop is being interrupted; a failure is warned about, never fails the
// iteration.
func (a *agent) recordChanges(ctx context.Context, r iterate.Round, outcome string) {
	if !a.set.gitOn() || ctx.Err() != nil {
		return
	}
	a.running.set("git")
	did, err := a.record(ctx, r.Iteration, outcome)
	a.running.set("")
	switch {
	case err != nil:
		iterate.Warn(ctx, fmt.Sprintf("iteration %d not recorded in git: %v", r.Iteration, err))
	case did != "":
		a.log.Info("workspace recorded", zap.Int("iteration", r.Iteration), zap.String("phase", "git"), zap.String("outcome", did))
	}
}

// runGate runs a quality gate within the gate timeout if there is one: a
// gate that exceeds it is stopped as a cancelled one is, and fails.
func (a *agent) runGate(ctx context.Context, gate string, env []string) error {
	if a.set.GateTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.set.GateTimeout, &commandError{
			What: gate, Code: -1, Err: fmt.Errorf("timed out after %s", a.set.GateTimeout)})
		defer cancel()
	}
	return a.runCommand(ctx, "quality gate", gate, gate, "", env, nil, nil)
}

// runAI runs the AI CLI with the prompt, within the AI timeout if there is
// one and within the run's time limit (--max-time): a run that exceeds
// either is stopped as a cancelled one is, and fails the iteration. It
// returns the end of the AI CLI's standard output (the last aiOutputMax
// bytes) and of its standard error (aiStderrMax), which it also passes on.
func (a *agent) runAI(ctx context.Context, prompt string, env []string) (stdout, stderr []byte, err error) {
	timeout, what := a.set.AITimeout, "timed out after "+a.set.AITimeout.String()
	if !a.deadline.IsZero() {
		if left := time.Until(a.deadline); timeout <= 0 || left < timeout {
			timeout, what = max(left, time.Nanosecond), "stopped at the time limit ("+a.set.MaxTime.String()+")"
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, &commandError{
			What: "AI CLI", Code: -1, Err: errors.New(what), timedOut: true})
		defer cancel()
	}
	out := &xcmd.Tail{Max: aiOutputMax}
	errOut := &xcmd.Tail{Max: aiStderrMax}
	err = a.runCommand(ctx, "AI CLI", "AI CLI", a.set.AICmd, prompt, env, out, errOut)
	return out.Bytes(), errOut.Bytes(), err
}

// aiOutputMax bounds the AI CLI output agentloop keeps to read its report:
// a report is at the end of the output. aiStderrMax bounds the end of its
// standard error kept for its reason of a failure.
const (
	aiOutputMax = 8 << 20
	aiStderrMax = 64 << 10
)

// runCommand runs command with sh -c in the workspace, stdin on its
// standard input, in its own process group (xcmd); its standard output and
// error also go to capture and capErr, when not nil. Cancelling ctx sends SIGTERM to the group,
// then SIGKILL after killGrace; whatever is left of the group is killed as
// soon as the command exits, and the whole group at once when a.hurry is
// closed. kind says what runs ("AI CLI", "quality gate") for the message
// of a second interrupt; what names the command in its error.
func (a *agent) runCommand(ctx context.Context, kind, what, command, stdin string, env []string, capture, capErr io.Writer) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = a.set.Workspace
	cmd.Env = env
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
	if capture != nil {
		cmd.Stdout = io.MultiWriter(a.stdout, capture)
	}
	if capErr != nil {
		cmd.Stderr = io.MultiWriter(a.stderr, capErr)
	}
	xcmd.Prepare(cmd, killGrace)
	label := kind
	if kind != "AI CLI" {
		label = kind + " " + strconv.Quote(command)
	}
	a.running.set(label)
	defer a.running.set("")
	err := xcmd.Start(cmd)
	if err == nil {
		stop := whenClosed(a.hurry, func() { xcmd.KillGroup(cmd) })
		err = xcmd.Wait(cmd)
		stop()
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err == nil {
		return nil
	}
	ce := &commandError{What: what, Code: -1}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.Exited():
		ce.Code = ee.ExitCode()
	case errors.As(err, &ee):
		ce.Signal = xcmd.SignalName(ee.ProcessState)
	default:
		ce.Err = err
		ce.notStarted = cmd.Process == nil
	}
	return ce
}

func outcome(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// exitCode is the exit status of a command's error: 0 for nil, -1 when it
// did not exit normally.
func exitCode(err error) int {
	var ce *commandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	if err != nil {
		return -1
	}
	return 0
}
