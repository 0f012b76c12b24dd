// Command fixloop repairs a Go package in a bounded fix loop.
//
// Each attempt an implementer changes a working copy of the package (an
// external command given the synthesised feedback on its standard input,
// or, for a deterministic demo, candidate patches applied in order), then
// the package's tests run (go test -json, failures parsed into test name,
// expected and received) and a review runs (a reviewer command, or the
// built-in one: gofmt and go vet clean). After each attempt the loop
// decides, as in the iteration-control rules: proceed when the checks pass,
// retry with prioritised feedback bounded to 500 characters, or escalate at
// the iteration limit with the attempts summary, the pattern detected and a
// question. The human's answer (from the terminal or --answer) resumes the
// loop from its checkpoint, in the same process or a later one.
//
// See README.md for the flags and example output.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/examples/internal/buildinfo"
	"github.com/refine-go/refine/examples/internal/term"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// Exit statuses.
const (
	exitOK        = 0 // the checks pass: proceed
	exitError     = 1 // an error, or a stop without success
	exitUsage     = 2 // bad flags or arguments
	exitEscalated = 3 // escalated and no answer available
	// exitInterrupted is the status of a session stopped by Ctrl+C or
	// SIGTERM (its state saved), as in the other example programs.
	exitInterrupted = 130
)

// escalateAfter is the number of attempts the same problems may survive
// before the loop asks the human, whatever the iteration limit.
const escalateAfter = 3

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command-line flags.
type options struct {
	workdir, patches, implementer, reviewer string
	answer, ask, session, taskID, testArgs  string
	noReview, report, json, clean, quiet    bool
	retryOnTestFail, retryOnReviewReject    bool
	resume, verbose, version                bool
	maxIterations, feedbackLimit            int
	tokenBudget                             int64
	taskTimeout                             time.Duration
	set                                     map[string]bool // flags given explicitly
}

const synopsis = `Usage:
  fixloop [flags] <package-dir>          fix a copy of the Go module in package-dir
  fixloop resume --workdir DIR [flags]   resume the session checkpointed in DIR
                                         (same as: fixloop --resume ...)

fixloop copies the package into a working copy, then loops: an attempt (the
next patch of --patches, or --implementer-cmd fed the feedback on stdin), the
tests (go test -json, failures parsed into name, expected and received) and a
review (--reviewer-cmd, or built-in: gofmt and go vet clean), and a decision:
proceed when both pass, retry with feedback bounded to --feedback-limit
characters, or escalate after --max-iterations attempts with a question. The
answer (--answer, or typed at the terminal) resumes the loop from its
checkpoint in <workdir>/.fixloop with a fresh allowance of iterations.

Decisions go to standard output (YAML documents, or JSON lines with --json);
progress goes to standard error.

Exit status: 0 proceed (the checks pass), 1 error or stop without success,
2 usage, 3 escalated with no answer (resume later with --answer),
130 interrupted (Ctrl+C or SIGTERM; resume later).

Flags:
`

func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fixloop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, synopsis)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.workdir, "workdir", "", "working copy `dir`ectory; its .fixloop subdirectory holds the checkpoints (default: a new temporary directory; required to resume)")
	fs.StringVar(&o.patches, "patches", "", "`dir`ectory of candidate patches: subdirectories applied in name order, one per attempt, whose files overwrite the working copy (see README)")
	fs.StringVar(&o.implementer, "implementer-cmd", "", "`command` (run with sh -c in the working copy) that changes it, reading the feedback on stdin")
	fs.StringVar(&o.reviewer, "reviewer-cmd", "", "review `command` (sh -c in the working copy): exit 0 approves, 1 rejects with one issue per stdout line (default: built-in gofmt + go vet review)")
	fs.BoolVar(&o.noReview, "no-review", false, "run no review; the tests alone decide")
	fs.StringVar(&o.testArgs, "test-args", "./...", "`arguments` of go test -json, split on spaces")
	fs.IntVar(&o.maxIterations, "max-iterations", 3, "attempts before escalating to a human (0: unlimited); each answer grants as many again")
	fs.IntVar(&o.feedbackLimit, "feedback-limit", iterate.DefaultFeedbackLimit, "bound of the synthesised feedback in `bytes`")
	fs.Int64Var(&o.tokenBudget, "token-budget", 0, "token budget of the session (estimated tokens; 0: unlimited)")
	fs.DurationVar(&o.taskTimeout, "task-timeout", 0, "time limit of one attempt of the implementer command (0: none)")
	fs.BoolVar(&o.retryOnTestFail, "auto-retry-on-test-fail", true, "retry an attempt whose tests fail (seed 002's auto_retry_on_test_fail); false escalates it at once")
	fs.BoolVar(&o.retryOnReviewReject, "auto-retry-on-review-reject", true, "retry an attempt the review rejects (seed 002's auto_retry_on_review_reject); false escalates it at once")
	fs.StringVar(&o.answer, "answer", "", "answer to the first escalation (otherwise asked at the terminal)")
	fs.StringVar(&o.ask, "ask", "auto", "read answers from stdin: auto (when it is a terminal), always, never")
	fs.StringVar(&o.session, "session", "fixloop", "session `name` of the checkpoints")
	fs.StringVar(&o.taskID, "task-id", "", "task id printed in the decisions (default: the package directory's name)")
	fs.BoolVar(&o.report, "report", false, "print the decision report (triggers, strategy, budget, assessment, next steps) at the end")
	fs.BoolVar(&o.json, "json", false, "print decisions and the report as JSON lines, and last the final result: {\"result\": {status, reason, iterations, usage, exit_code}}")
	fs.BoolVar(&o.clean, "clean", false, "empty a non-empty --workdir before starting (a new session only)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress on standard error")
	fs.BoolVar(&o.resume, "resume", false, "resume the session checkpointed in --workdir (same as the resume subcommand)")
	fs.BoolVar(&o.verbose, "v", false, "show the implementer command's output on standard error as it runs")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	return fs
}

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// parseArgs parses the command line; flags may follow the package
// directory.
func parseArgs(args []string, stderr io.Writer) (*options, []string, error) {
	o := &options{set: map[string]bool{}}
	fs := newFlagSet(o, stderr)
	if len(args) > 0 && args[0] == "resume" {
		o.resume = true
		args = args[1:]
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.version {
		return o, nil, nil
	}
	switch {
	case o.maxIterations < 0:
		return nil, nil, usagef("--max-iterations must not be negative, got %d", o.maxIterations)
	case o.feedbackLimit <= 0:
		return nil, nil, usagef("--feedback-limit must be positive, got %d", o.feedbackLimit)
	case o.tokenBudget < 0:
		return nil, nil, usagef("--token-budget must not be negative, got %d", o.tokenBudget)
	case o.taskTimeout < 0:
		return nil, nil, usagef("--task-timeout must not be negative, got %s", o.taskTimeout)
	case o.ask != "auto" && o.ask != "always" && o.ask != "never":
		return nil, nil, usagef("--ask must be auto, always or never, got %q", o.ask)
	case o.patches != "" && o.implementer != "":
		return nil, nil, usagef("--patches and --implementer-cmd exclude each other")
	case o.reviewer != "" && o.noReview:
		return nil, nil, usagef("--reviewer-cmd and --no-review exclude each other")
	}
	if o.resume {
		switch {
		case len(pos) > 0:
			return nil, nil, usagef("resume takes no package directory (got %q); the session remembers it", pos[0])
		case o.workdir == "":
			return nil, nil, usagef("resume needs --workdir")
		case o.clean:
			return nil, nil, usagef("--clean starts a new session; it cannot be used to resume")
		}
		return o, nil, nil
	}
	switch {
	case len(pos) == 0:
		return nil, nil, usagef("missing the package directory to fix, e.g. fixloop --patches DIR ./mypkg")
	case len(pos) > 1:
		return nil, nil, usagef("unexpected argument %q after the package directory %q", pos[1], pos[0])
	case o.patches == "" && o.implementer == "":
		return nil, nil, usagef("need --patches or --implementer-cmd")
	}
	return o, pos, nil
}

// run is the whole program; it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, pos, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "fixloop: %v\nRun 'fixloop --help' for usage.\n", err)
		}
		return exitUsage
	}
	if o.version {
		fmt.Fprintln(stdout, buildinfo.Version("fixloop"))
		return exitOK
	}
	errOut := &syncWriter{w: stderr}
	var log io.Writer = errOut
	if o.quiet {
		log = io.Discard
	}
	fail := func(err error) int {
		fmt.Fprintf(errOut, "fixloop: %v\n", err)
		return exitError
	}

	var cfg config
	var status iterate.Status
	if o.resume {
		cfg, status, err = loadSession(ctx, o)
	} else {
		cfg, err = newSession(o, pos[0])
	}
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(log, "working copy: %s\n", cfg.Workdir)
	temporary := !o.resume && o.workdir == ""

	pr := &printer{w: stdout, json: o.json}
	obs := &observer{p: pr, log: log, taskID: cfg.TaskID}
	opts := []iterate.Option{
		iterate.WithSession(cfg.Session),
		iterate.WithMaxIterations(cfg.MaxIterations),
		iterate.WithCheckpointer(checkpoint.NewDir(filepath.Join(cfg.Workdir, stateDir))),
		// Seed 002: proceed when the checks pass, escalate at the limit.
		// Seed 002's auto_retry_on_test_fail and auto_retry_on_review_reject,
		// when turned off, escalate a failed attempt at once.
		iterate.WithConvergence(converge.Any(converge.Passing{}, noAutoRetry(cfg), converge.IterationLimit{Escalate: true})),
		// One attempt per iteration: the implementer role groups every gap.
		// Seed 002 has a human to ask: when the same problems survive three
		// attempts before the limit, escalate rather than stop as stuck
		// (the library's default without EscalateAfter).
		iterate.WithStrategy(&iterate.Adaptive{MaxTasks: 1, FeedbackLimit: cfg.FeedbackLimit, EscalateAfter: escalateAfter}),
		iterate.WithBudget(budget.Limits{Tokens: cfg.TokenBudget}),
		iterate.WithTaskTimeout(o.taskTimeout),
		iterate.WithObserver(obs.observe),
	}
	if !o.quiet {
		opts = append(opts, iterate.WithObserver(iterate.Progress(errOut)))
	}
	wk := newWorker(cfg, log)
	if o.verbose {
		wk.live = errOut
	}
	eng := iterate.New(wk, opts...)

	ask := &asker{answer: o.answer, mode: o.ask, in: bufio.NewReader(stdin), tty: term.Is(stdin), prompt: errOut}
	hint := resumeHint(cfg)
	var res *iterate.Result[state]
	if o.resume {
		var ropts []iterate.ResumeOption
		if status == iterate.Escalated && o.answer != "" {
			ask.used = true
			fmt.Fprintf(log, "answer: %q\n", o.answer)
			ropts = append(ropts, iterate.WithAnswer(o.answer))
		}
		res, err = eng.Resume(ctx, ropts...)
	} else {
		res, err = eng.Run(ctx, state{Config: cfg})
	}
	for {
		var ee *iterate.EscalationError
		if !errors.As(err, &ee) || ee.Escalation == nil {
			break
		}
		var open []gap.Gap
		if res != nil {
			open = res.History.Gaps
		}
		// Seed 002's escalation_includes_diff: what the attempts changed,
		// for the human to judge (a diff that cannot be made is left out).
		diff, _ := treeDiff(cfg.Source, cfg.Workdir, maxDiff)
		pr.print(escalateDoc(cfg.TaskID, ee.Escalation, open, diff, hint))
		answer, ok := ask.next()
		if !ok {
			if o.report && res != nil {
				pr.print(reportDoc(cfg, res, obs.lastPlan(), hint, time.Now()))
			}
			noteAllFailed(errOut, res)
			fmt.Fprintf(errOut, "fixloop: escalated after %d attempts; answer with:\n  %s\n", ee.Escalation.Iteration, hint)
			if o.json {
				pr.print(resultDoc(res, err, exitEscalated))
			}
			return exitEscalated
		}
		fmt.Fprintf(log, "answer: %q; resuming with a fresh allowance of %d iterations\n", answer, cfg.MaxIterations)
		res, err = eng.Resume(ctx, iterate.WithAnswer(answer))
	}

	if res != nil && res.Status.Success() && !obs.proceedPrinted() {
		// A session that had already succeeded: Resume returns its result.
		pr.print(proceedDoc(cfg.TaskID, res.Iterations))
	}
	if o.report && res != nil {
		pr.print(reportDoc(cfg, res, obs.lastPlan(), hint, time.Now()))
	}
	code := conclude(errOut, cfg, res, err)
	if o.json {
		pr.print(resultDoc(res, err, code))
	}
	if temporary && code == exitError {
		// Nothing to resume nor to keep: the temporary copy goes.
		if err := os.RemoveAll(cfg.Workdir); err == nil {
			fmt.Fprintf(log, "removed the temporary working copy %s (give --workdir to keep it)\n", cfg.Workdir)
		}
	}
	return code
}

// conclude reports how the session ended on errOut and returns the exit
// status.
func conclude(errOut io.Writer, cfg config, res *iterate.Result[state], err error) int {
	fail := func(err error) int {
		noteAllFailed(errOut, res)
		fmt.Fprintf(errOut, "fixloop: %v\n", err)
		return exitError
	}
	switch {
	case errors.Is(err, iterate.ErrInterrupted):
		fmt.Fprintf(errOut, "fixloop: %v; resume with: fixloop resume --workdir %s\n", err, shellQuote(cfg.Workdir))
		return exitInterrupted
	case errors.Is(err, iterate.ErrSettingsChanged):
		return fail(fmt.Errorf("%w (--max-iterations, --feedback-limit, --token-budget and --session must match the session's)", err))
	case err != nil:
		return fail(err)
	case !res.Status.Success():
		reason := res.Reason
		if !strings.HasPrefix(reason, string(res.Status)+":") {
			reason = string(res.Status) + ": " + reason
		}
		return fail(fmt.Errorf("stopped without success: %s", reason))
	}
	return exitOK
}

// noteAllFailed says so when every attempt of the session failed (the
// implementer command could not do its job at all), and how the last one
// failed.
func noteAllFailed(w io.Writer, res *iterate.Result[state]) {
	if res == nil || len(res.State.Attempts) == 0 {
		return
	}
	for _, a := range res.State.Attempts {
		if a.Error == "" {
			return
		}
	}
	n := len(res.State.Attempts)
	fmt.Fprintf(w, "fixloop: every attempt failed (%d of %d); the last: %s\n", n, n, res.State.Attempts[n-1].Error)
}

// resultDoc is the final result printed with --json: how the session
// ended, after how many iterations, what it used and the exit status.
func resultDoc(res *iterate.Result[state], err error, code int) obj {
	r := obj{{"status", "error"}, {"reason", ""}, {"iterations", 0}}
	usage := obj{{"tokens", int64(0)}, {"wall_seconds", 0.0}}
	if res != nil {
		r = obj{{"status", string(res.Status)}, {"reason", res.Reason}, {"iterations", res.Iterations}}
		usage = obj{{"tokens", res.Usage.Tokens}, {"wall_seconds", res.Usage.Wall.Seconds()}}
	}
	r = append(r, field{"usage", usage}, field{"exit_code", code})
	if err != nil {
		r = append(r, field{"error", err.Error()})
	}
	return obj{{"result", r}}
}

// newSession prepares a new session: the working copy of the package.
func newSession(o *options, pkg string) (config, error) {
	src, err := filepath.Abs(pkg)
	if err != nil {
		return config{}, err
	}
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		return config{}, fmt.Errorf("%s must be a Go module (with a go.mod): %w", pkg, err)
	}
	cfg := config{
		TaskID:        o.taskID,
		Session:       o.session,
		Source:        src,
		Implementer:   o.implementer,
		Reviewer:      o.reviewer,
		NoReview:      o.noReview,
		TestArgs:      strings.Fields(o.testArgs),
		MaxIterations: o.maxIterations,
		FeedbackLimit: o.feedbackLimit,
		TokenBudget:   o.tokenBudget,

		NoRetryOnTestFail:     !o.retryOnTestFail,
		NoRetryOnReviewReject: !o.retryOnReviewReject,
	}
	if cfg.TaskID == "" {
		cfg.TaskID = filepath.Base(src)
	}
	if o.patches != "" {
		if cfg.Patches, err = filepath.Abs(o.patches); err != nil {
			return config{}, err
		}
		dirs, err := patchDirs(cfg.Patches)
		if err != nil {
			return config{}, err
		}
		if len(dirs) == 0 {
			return config{}, fmt.Errorf("%s holds no patch directory", o.patches)
		}
	}
	if err := checkpoint.ValidateSession(cfg.Session); err != nil {
		return config{}, err
	}
	if o.workdir != "" {
		if err := checkApart(src, o.workdir); err != nil {
			return config{}, err
		}
	}
	if cfg.Workdir, err = prepareWorkdir(o.workdir, o.clean); err != nil {
		return config{}, err
	}
	if err := copyTree(src, cfg.Workdir); err != nil {
		if o.workdir == "" {
			os.RemoveAll(cfg.Workdir) // the temporary copy is of no use
		}
		return config{}, fmt.Errorf("copying %s to the working copy: %w", pkg, err)
	}
	return cfg, nil
}

// overlapError reports a working directory that is the package directory,
// inside it (the copy would copy itself, without end) or holds it (--clean
// would delete it).
type overlapError struct {
	Workdir, Package string
	// Inside is true when the working directory is in the package, false
	// when the package is in the working directory (or they are one).
	Inside bool
}

func (e *overlapError) Error() string {
	if e.Inside {
		return fmt.Sprintf("working directory %s is inside the package %s: the copy would copy itself; choose a directory outside it", e.Workdir, e.Package)
	}
	return fmt.Sprintf("working directory %s holds the package %s: the copy would overwrite it; choose a directory outside it", e.Workdir, e.Package)
}

// checkApart returns an *overlapError when the working directory dir and
// the package directory src overlap, once their symbolic links are
// resolved (dir need not exist yet).
func checkApart(src, dir string) error {
	realSrc, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	realDir, err := resolveExisting(dir)
	if err != nil {
		return err
	}
	switch {
	case within(realSrc, realDir) && realSrc != realDir:
		return &overlapError{Workdir: dir, Package: src, Inside: true}
	case within(realDir, realSrc):
		return &overlapError{Workdir: dir, Package: src}
	}
	return nil
}

// resolveExisting returns the absolute path of path with the symbolic
// links of its longest existing prefix resolved.
func resolveExisting(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(p) == p {
			return abs, nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// within reports whether path is dir or inside it (both clean and
// absolute).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// prepareWorkdir returns the absolute path of an empty working directory:
// dir (created if need be, emptied with clean) or a new temporary one.
func prepareWorkdir(dir string, clean bool) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "fixloop-")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return abs, os.MkdirAll(abs, 0o755)
	case err != nil:
		return "", err
	case len(entries) > 0 && !clean:
		return "", fmt.Errorf("working directory %s is not empty: resume its session with 'fixloop resume --workdir %s', or start afresh with --clean", dir, shellQuote(dir))
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(abs, e.Name())); err != nil {
			return "", err
		}
	}
	return abs, nil
}

// loadSession reads the configuration of a checkpointed session from its
// state, with the flags given explicitly on the command line taking over.
func loadSession(ctx context.Context, o *options) (config, iterate.Status, error) {
	dir, err := filepath.Abs(o.workdir)
	if err != nil {
		return config{}, "", err
	}
	c, err := checkpoint.NewDir(filepath.Join(dir, stateDir)).Load(ctx, o.session)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return config{}, "", fmt.Errorf("no session %q checkpointed in %s: %w", o.session, dir, err)
	}
	if err != nil {
		return config{}, "", err
	}
	var s state
	if err := iterate.JSON.Unmarshal(c.State, &s); err != nil {
		return config{}, "", fmt.Errorf("decoding the state of session %q: %w", o.session, err)
	}
	cfg := s.Config
	cfg.Workdir = dir
	cfg.Session = o.session
	if o.set["patches"] {
		if cfg.Patches, err = filepath.Abs(o.patches); err != nil {
			return config{}, "", err
		}
		cfg.Implementer = ""
	}
	if o.set["implementer-cmd"] {
		cfg.Implementer, cfg.Patches = o.implementer, ""
	}
	if o.set["reviewer-cmd"] {
		cfg.Reviewer, cfg.NoReview = o.reviewer, false
	}
	if o.set["no-review"] {
		cfg.NoReview = o.noReview
	}
	if o.set["test-args"] {
		cfg.TestArgs = strings.Fields(o.testArgs)
	}
	if o.set["task-id"] {
		cfg.TaskID = o.taskID
	}
	if o.set["max-iterations"] {
		cfg.MaxIterations = o.maxIterations
	}
	if o.set["feedback-limit"] {
		cfg.FeedbackLimit = o.feedbackLimit
	}
	if o.set["token-budget"] {
		cfg.TokenBudget = o.tokenBudget
	}
	if o.set["auto-retry-on-test-fail"] {
		cfg.NoRetryOnTestFail = !o.retryOnTestFail
	}
	if o.set["auto-retry-on-review-reject"] {
		cfg.NoRetryOnReviewReject = !o.retryOnReviewReject
	}
	return cfg, iterate.Status(c.Status), nil
}

// resumeHint is the command that answers an escalation.
func resumeHint(cfg config) string {
	s := "fixloop resume --workdir " + shellQuote(cfg.Workdir)
	if cfg.Session != "fixloop" {
		s += " --session " + shellQuote(cfg.Session)
	}
	return s + ` --answer "<your answer>"`
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// asker provides the answers to escalations: --answer once, then lines
// read from stdin when it is a terminal (or always, with --ask always).
type asker struct {
	answer string
	used   bool
	mode   string
	in     *bufio.Reader
	tty    bool
	prompt io.Writer
}

// next returns the next answer, or false when there is none: no terminal,
// end of input, or an empty line (the human wants to stop for now).
func (a *asker) next() (string, bool) {
	if a.answer != "" && !a.used {
		a.used = true
		return a.answer, true
	}
	if a.mode == "never" || (a.mode == "auto" && !a.tty) {
		return "", false
	}
	fmt.Fprint(a.prompt, "Your answer (an empty line stops; resume later): ")
	line, err := a.in.ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "" || (err != nil && !errors.Is(err, io.EOF)) {
		fmt.Fprintln(a.prompt)
		return "", false
	}
	return line, true
}
