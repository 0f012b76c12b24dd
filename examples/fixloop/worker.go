package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/examples/internal/xcmd"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// config is what a session was started with. It is saved in the state, so
// that `fixloop resume` needs nothing but the working copy.
type config struct {
	TaskID  string `json:"task_id"`
	Session string `json:"session"`
	// Source is the package directory copied into Workdir.
	Source  string `json:"source"`
	Workdir string `json:"workdir"`
	// Patches is the directory of candidate patches; Implementer the
	// command run instead. Exactly one is set.
	Patches     string `json:"patches,omitempty"`
	Implementer string `json:"implementer,omitempty"`
	// Reviewer is the reviewer command; empty means the built-in review,
	// unless NoReview.
	Reviewer string   `json:"reviewer,omitempty"`
	NoReview bool     `json:"no_review,omitempty"`
	TestArgs []string `json:"test_args"`
	// MaxIterations, FeedbackLimit and TokenBudget shape the loop (they
	// are part of the checkpoint's settings fingerprint).
	MaxIterations int   `json:"max_iterations"`
	FeedbackLimit int   `json:"feedback_limit"`
	TokenBudget   int64 `json:"token_budget,omitempty"`
	// NoRetryOnTestFail and NoRetryOnReviewReject turn off seed 002's
	// auto_retry_on_test_fail and auto_retry_on_review_reject: an attempt
	// whose tests fail (whose review rejects it) escalates at once.
	NoRetryOnTestFail     bool `json:"no_retry_on_test_fail,omitempty"`
	NoRetryOnReviewReject bool `json:"no_retry_on_review_reject,omitempty"`
}

// state is the loop's state: the configuration, the attempt log and the
// results of the checks run after the last attempt.
type state struct {
	Config   config    `json:"config"`
	Attempts []attempt `json:"attempts,omitempty"`
	// Checks are the results of the checks on the working copy after
	// Checks.Attempt attempts; nil before the first attempt.
	Checks *checks `json:"checks,omitempty"`
}

// attempt is one entry of the attempt log.
type attempt struct {
	Iteration int    `json:"iteration"`
	Action    string `json:"action"`
	// Source is "patch 01" or "implementer".
	Source string   `json:"source"`
	Files  []string `json:"files,omitempty"`
	Answer string   `json:"answer,omitempty"`
	Error  string   `json:"error,omitempty"`
	// Output is the tail of the implementer's output.
	Output string `json:"output,omitempty"`
	// Tokens is the estimated token usage of the attempt.
	Tokens int64 `json:"tokens,omitempty"`
	// Result summarises the checks after the attempt.
	Result string `json:"result,omitempty"`
}

// checks are the results of the tests and the review of a working copy.
type checks struct {
	Attempt int         `json:"attempt"`
	Tests   testRun     `json:"tests"`
	Review  *gap.Review `json:"review,omitempty"`
}

// passing reports seed 002's proceed condition.
func (c *checks) passing() bool {
	return c.Tests.Result.Passed && (c.Review == nil || c.Review.Status == gap.ReviewApprove)
}

// The named scores of a fix loop's assessments, which a chart of the
// session shows (iterate/view's Metrics, inspect's --metric).
const (
	scoreTestsPassing = "tests passing"
	scoreTestsFailing = "tests failing"
)

// assessment turns the checks into what the loop sees. The score is 0.8 ×
// the share of tests passing (all or nothing when no test ran) plus 0.2 when
// the review approves or there is none; the named scores count the tests
// passing and failing (the failures parsed when the package did not build).
func (c *checks) assessment() gap.Assessment {
	tests := c.Tests.Result
	a := gap.Assessment{Signals: gap.Signals{Tests: &tests, Review: c.Review}}
	failing := c.Tests.Total - c.Tests.Passed
	if c.Tests.Total == 0 && !tests.Passed {
		failing = len(tests.Failures)
	}
	a.Scores = map[string]float64{scoreTestsPassing: float64(c.Tests.Passed), scoreTestsFailing: float64(max(failing, 0))}
	switch {
	case c.Tests.Total > 0 && !c.Tests.BuildFailed:
		a.Score = 0.8 * float64(c.Tests.Passed) / float64(c.Tests.Total)
	case tests.Passed:
		a.Score = 0.8
	}
	if c.Review == nil || c.Review.Status == gap.ReviewApprove {
		a.Score += 0.2
	}
	return a
}

// summary describes the checks in one line, e.g. "tests fail (1 of 3:
// TestClaimsUserID); review approve".
func (c *checks) summary() string {
	var b strings.Builder
	if c.Tests.Result.Passed {
		fmt.Fprintf(&b, "tests pass (%d)", c.Tests.Total)
	} else {
		names := make([]string, 0, len(c.Tests.Result.Failures))
		for _, f := range c.Tests.Result.Failures {
			names = append(names, f.Name)
		}
		fmt.Fprintf(&b, "tests fail (%d: %s)", len(names), strings.Join(names, ", "))
	}
	if c.Review != nil {
		b.WriteString("; review " + string(c.Review.Status))
		if len(c.Review.Issues) > 0 {
			fmt.Fprintf(&b, " (%d issue(s))", len(c.Review.Issues))
		}
	}
	return b.String()
}

// worker implements iterate.Worker[state]: Assess runs the checks, Work
// makes one attempt on the working copy and Integrate records it and runs
// the checks again.
//
// The engine calls Assess and Integrate from its goroutine and Work from a
// task goroutine; the loop plans one task per iteration (Adaptive with
// MaxTasks 1: the implementer role groups every gap), so attempts never
// overlap.
type worker struct {
	cfg config
	log io.Writer
	// live, if set, receives the implementer's output as it comes (-v).
	live io.Writer

	mu sync.Mutex
	// checked is the number of attempts whose checks this process ran;
	// -1 when none. Assess reuses them instead of running go test twice.
	checked int
}

func newWorker(cfg config, log io.Writer) *worker {
	return &worker{cfg: cfg, log: log, checked: -1}
}

var _ iterate.Worker[state] = (*worker)(nil)

// Assess returns the assessment of the working copy. It runs the checks
// unless this process ran them right after the last attempt: the baseline
// of a new session, and the first assessment of a resumed one (a human may
// have edited the working copy meanwhile), are checked afresh.
func (w *worker) Assess(ctx context.Context, s state) (gap.Assessment, error) {
	w.mu.Lock()
	reuse := s.Checks != nil && s.Checks.Attempt == len(s.Attempts) && w.checked == len(s.Attempts)
	w.mu.Unlock()
	if reuse {
		return s.Checks.assessment(), nil
	}
	c, err := w.check(ctx, len(s.Attempts))
	if err != nil {
		return gap.Assessment{}, err
	}
	if len(s.Attempts) == 0 {
		fmt.Fprintf(w.log, "baseline: %s\n", c.summary())
	} else {
		fmt.Fprintf(w.log, "checked the working copy after attempt %d: %s\n", len(s.Attempts), c.summary())
	}
	return c.assessment(), nil
}

// check runs the tests and the review on the working copy.
func (w *worker) check(ctx context.Context, attempts int) (*checks, error) {
	tr, err := runTests(ctx, w.cfg.Workdir, w.cfg.TestArgs)
	if err != nil {
		return nil, err
	}
	c := &checks{Attempt: attempts, Tests: tr}
	switch {
	case w.cfg.NoReview:
	case w.cfg.Reviewer != "":
		env := []string{
			"FIXLOOP_WORKDIR=" + w.cfg.Workdir,
			"FIXLOOP_ATTEMPT=" + strconv.Itoa(attempts),
			"FIXLOOP_TESTS_PASSED=" + strconv.FormatBool(tr.Result.Passed),
		}
		c.Review, err = commandReview(ctx, w.cfg.Reviewer, w.cfg.Workdir, env)
	default:
		c.Review, err = builtinReview(ctx, w.cfg.Workdir, !tr.BuildFailed)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Work makes the next attempt: it applies the next candidate patch, or
// runs the implementer command with the task's feedback on its standard
// input. It changes the working copy on disk and returns the attempt as
// the outcome's Part.
func (w *worker) Work(ctx context.Context, s state, t iterate.Task) (iterate.Outcome[state], error) {
	t.Answer = standingAnswer(s, t)
	a := attempt{Iteration: t.Iteration, Action: string(t.Action), Answer: t.Answer}
	var err error
	if w.cfg.Implementer != "" {
		err = w.implement(ctx, t, &a)
	} else {
		err = w.applyPatch(len(s.Attempts)+1, t, &a)
	}
	// The implementer's output, or the patch applied, is the task's
	// output in the iteration's record (inspectors and viewers show it).
	output := a.Output
	if output == "" && a.Source != "" {
		output = a.Source + ": " + strings.Join(a.Files, ", ")
	}
	out := iterate.Outcome[state]{Part: state{Attempts: []attempt{a}}, Usage: budget.Usage{Tokens: a.Tokens}, Output: output}
	return out, err
}

// standingAnswer is the human's answer an attempt works under: the task's
// (the engine gives it to the first attempt after the escalation only),
// else that of the latest attempt that had one. A human's answer holds for
// every attempt after it, until the next answer.
func standingAnswer(s state, t iterate.Task) string {
	if t.Answer != "" {
		return t.Answer
	}
	for i := len(s.Attempts) - 1; i >= 0; i-- {
		if s.Attempts[i].Answer != "" {
			return s.Attempts[i].Answer
		}
	}
	return ""
}

// applyPatch applies the n-th candidate patch.
func (w *worker) applyPatch(n int, t iterate.Task, a *attempt) error {
	dirs, err := patchDirs(w.cfg.Patches)
	if err != nil {
		return iterate.Permanent(err)
	}
	if n > len(dirs) {
		return iterate.Permanent(fmt.Errorf("attempt %d: %w (%s holds %d)", n, errNoPatch, w.cfg.Patches, len(dirs)))
	}
	dir := filepath.Join(w.cfg.Patches, dirs[n-1])
	a.Source = "patch " + dirs[n-1]
	files, err := applyOverlay(dir, w.cfg.Workdir)
	if err != nil {
		return iterate.Permanent(err)
	}
	a.Files = files
	// What an agent would have read (the feedback) and written (the patch).
	text := t.Feedback
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f))); err == nil {
			text += string(b)
		}
	}
	a.Tokens = int64(budget.EstimateTokens(text))
	return nil
}

// implementerInput is what the implementer command reads on its standard
// input: the feedback, then the human's answer after an escalation.
func implementerInput(t iterate.Task) string {
	in := t.Feedback
	if t.Answer != "" {
		in += "\n\nAnswer from the human: " + t.Answer
	}
	return in + "\n"
}

// implement runs the implementer command in the working copy.
func (w *worker) implement(ctx context.Context, t iterate.Task, a *attempt) error {
	a.Source = "implementer"
	before, err := snapshot(w.cfg.Workdir)
	if err != nil {
		return iterate.Permanent(err)
	}
	in := implementerInput(t)
	cmd := exec.CommandContext(ctx, "sh", "-c", w.cfg.Implementer)
	cmd.Dir = w.cfg.Workdir
	cmd.Stdin = strings.NewReader(in)
	xcmd.Prepare(cmd, killGrace)
	cmd.Env = append(os.Environ(),
		"FIXLOOP_WORKDIR="+w.cfg.Workdir,
		"FIXLOOP_TASK_ID="+w.cfg.TaskID,
		"FIXLOOP_ITERATION="+strconv.Itoa(t.Iteration),
		"FIXLOOP_MAX_ITERATIONS="+strconv.Itoa(t.MaxIterations),
		"FIXLOOP_ACTION="+string(t.Action),
		"FIXLOOP_ANSWER="+t.Answer,
		"FIXLOOP_GUIDANCE="+strings.Join(t.Guidance, "\n"),
	)
	out := &xcmd.Tail{Max: outputKept}
	var sink io.Writer = out
	if w.live != nil {
		sink = io.MultiWriter(out, w.live)
	}
	cmd.Stdout, cmd.Stderr = sink, sink
	runErr := xcmd.Run(cmd)
	a.Output = tail(out.String(), 2000)
	// The output cut from the tail counts at a token per 4 bytes.
	a.Tokens = int64(budget.EstimateTokens(in)+budget.EstimateTokens(out.String())) + (out.Cut()+3)/4
	after, err := snapshot(w.cfg.Workdir)
	if err != nil {
		return iterate.Permanent(err)
	}
	a.Files = changedFiles(before, after)
	if runErr != nil {
		if a.Output == "" {
			return fmt.Errorf("implementer command: %w", runErr)
		}
		return fmt.Errorf("implementer command: %w: %s", runErr, firstLines(a.Output, 3))
	}
	return nil
}

// outputKept bounds the implementer's output kept in memory: its tail,
// where an agent reports what it did.
const outputKept = 64 << 10

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// Integrate records the attempt of the iteration (with its error, if it
// failed) and runs the checks on the working copy it left. An error running
// the checks ends the run: the loop cannot judge attempts without them.
func (w *worker) Integrate(ctx context.Context, s state, outs []iterate.Outcome[state]) (state, error) {
	next := s
	next.Config = w.cfg
	next.Attempts = slices.Clip(s.Attempts)
	for i := range outs {
		o := &outs[i]
		a := attempt{Iteration: o.Task.Iteration, Action: string(o.Task.Action), Answer: o.Task.Answer}
		if len(o.Part.Attempts) > 0 {
			a = o.Part.Attempts[0]
		}
		if o.Err != nil {
			a.Error = o.Err.Error()
		}
		next.Attempts = append(next.Attempts, a)
	}
	c, err := w.check(ctx, len(next.Attempts))
	if err != nil {
		return s, iterate.Permanent(err)
	}
	next.Checks = c
	if n := len(next.Attempts); n > 0 {
		a := &next.Attempts[n-1]
		a.Result = c.summary()
		what := a.Source
		if len(a.Files) > 0 {
			what += " (" + strings.Join(a.Files, ", ") + ")"
		}
		if a.Error != "" {
			what += " failed: " + a.Error
		}
		fmt.Fprintf(w.log, "attempt %d: %s → %s\n", n, what, a.Result)
	}
	w.mu.Lock()
	w.checked = len(next.Attempts)
	w.mu.Unlock()
	return next, nil
}
