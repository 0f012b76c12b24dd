// Command research answers a question about a real codebase with a
// bounded, resumable, adaptive refinement loop (seed 000 of refine).
//
// Deterministic program-analysis agents (go/parser, go/ast and text search
// over the tree) play the roles of the loop: an explorer that reads the
// files most relevant to the question, a citation worker that pins findings
// to their exact definitions and uses, a pattern worker that collects
// concrete examples, and a verifier that resolves conflicting findings with
// the tree's build constraints. Any role can be an external command
// instead (--agent-cmd), so the same program drives a real AI agent.
//
// Run with no arguments, it researches a built-in question about the Go
// standard library under $(go env GOROOT)/src.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/examples/internal/buildinfo"
	"github.com/refine-go/refine/examples/research/study"
	"github.com/refine-go/refine/iterate"
)

// Exit codes.
const (
	exitOK          = 0   // converged or exited early with high confidence
	exitError       = 1   // the research failed or was aborted
	exitUsage       = 2   // invalid flags or inputs
	exitPartial     = 3   // partial convergence: iteration limit, stuck, plateau
	exitInterrupted = 130 // Ctrl+C: the state is saved, --resume continues
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// A second Ctrl+C kills at once.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// agentFlags collects repeated --agent-cmd role=CMD flags.
type agentFlags map[string]string

func (a agentFlags) String() string {
	var parts []string
	for r, c := range a {
		parts = append(parts, r+"="+c)
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func (a agentFlags) Set(v string) error {
	role, cmd, ok := strings.Cut(v, "=")
	role, cmd = strings.TrimSpace(role), strings.TrimSpace(cmd)
	if !ok || cmd == "" {
		return errors.New(`want role=COMMAND, e.g. citation="python3 agent.py"`)
	}
	if roles := study.AgentRoles(); !slices.Contains(roles, role) {
		return fmt.Errorf("unknown role %q (roles: %s)", role, strings.Join(roles, ", "))
	}
	a[role] = cmd
	return nil
}

// options are the command line settings.
type options struct {
	root, questions, state, store   string
	session, skip                   string
	maxIter, filesPerTask           int
	resume, jsonOut, quiet, version bool
	emoji                           string
	timeout                         time.Duration
	agents                          agentFlags
}

const usageText = `Usage: research [flags]

Answers a question about a Go source tree with a refinement loop of
deterministic program-analysis agents, and prints a report with the answers
to the critical questions, every claim cited as file:line.

With no flags it researches a built-in question about the Go standard library
under $(go env GOROOT)/src. Ctrl+C saves the state; run the same command with
--resume to continue where it stopped.

Question file format (--questions):
  # comment
  question: How does the Go standard library implement context cancellation?
  critical: Where is the cancellation signal propagated to child contexts? [propagateCancel, children]
  optional: Which packages accept a context?
Brackets list explicit keywords (identifiers). "critical:" questions must be
answered for the research to converge; "optional:" ones are only reported.

External agents (--agent-cmd role=COMMAND): the command runs through the shell
with the task as JSON on stdin ({role, agent, task, prompt, question,
questions, gaps, focus, findings, files_analyzed, ...}) and must print JSON
findings on stdout ({"findings": [{"description", "citations":
["file:line"], "confidence", "questions": [1], "id"?, "key"?, "pattern"?}],
"files_analyzed": [...], "resolved": [{"conflict", "resolution"}], "usage":
{"tokens", "cost"}}). Citations that do not name an existing line are dropped.
Roles: explore, citation, pattern, verify, security, performance.

Sessions (--store): by default each iteration's checkpoint is a file in the
checkpoint directory (--state). With --store postgres://... the sessions are
kept in that PostgreSQL database instead (tables in the schema "refine",
created on first use), and a session runs in one process at a time across
hosts; --resume continues it from any host that reaches the database.

Emoji: the displays and the report use emoji only on a terminal (--emoji),
and never when the NO_COLOR environment variable is set.

Exit status: 0 converged (or early exit), 3 partial convergence, 130
interrupted (resumable), 2 usage error, 1 failure. When every agent task
failed, the report says so with the last error.

Flags:
`

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{agents: agentFlags{}}
	fs := flag.NewFlagSet("research", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.root, "root", "", "source tree to research (default $(go env GOROOT)/src)")
	fs.StringVar(&o.questions, "questions", "", "question file (default: the built-in question about context cancellation)")
	fs.IntVar(&o.maxIter, "max-iterations", iterate.DefaultMaxIterations, "iteration limit; at the limit the research ends with partial convergence")
	fs.IntVar(&o.filesPerTask, "files-per-task", 20, "files an explorer reads per task")
	fs.StringVar(&o.state, "state", "", "checkpoint directory, when --store is empty (default: refine-research under the user cache directory, or refine-research-UID in the temporary directory when that cannot be made)")
	fs.StringVar(&o.store, "store", "", "where to keep the sessions: empty for the checkpoint directory (--state), or a PostgreSQL URL (postgres://user:password@host:port/db?sslmode=disable) to keep them in that database")
	fs.StringVar(&o.session, "session", "", "session name (default: derived from the root and the questions, so that --resume finds it)")
	fs.BoolVar(&o.resume, "resume", false, "continue the session from its latest checkpoint")
	fs.Var(o.agents, "agent-cmd", "run role with an external command: role=COMMAND (repeatable)")
	fs.DurationVar(&o.timeout, "task-timeout", 5*time.Minute, "time limit of each agent task (0: none)")
	fs.BoolVar(&o.jsonOut, "json", false, "print the final report as JSON on stdout (displays go to stderr)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not print the progress and convergence displays")
	fs.StringVar(&o.skip, "skip", "testdata,vendor", "comma-separated directory names not to research (cmd is skipped too under the default root)")
	fs.StringVar(&o.emoji, "emoji", "auto", "emoji in the displays and the report: auto (only on a terminal), always or never; never when NO_COLOR is set")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: research takes flags only (the question goes in a --questions file); run 'research --help' for usage", fs.Arg(0))
	}
	switch {
	case o.emoji != "auto" && o.emoji != "always" && o.emoji != "never":
		return nil, fmt.Errorf("--emoji must be auto, always or never, got %q", o.emoji)
	case o.maxIter < 1:
		return nil, fmt.Errorf("--max-iterations must be at least 1, got %d", o.maxIter)
	case o.filesPerTask < 1:
		return nil, fmt.Errorf("--files-per-task must be at least 1, got %d", o.filesPerTask)
	case o.timeout < 0:
		return nil, fmt.Errorf("--task-timeout must not be negative")
	case o.store != "" && !isPostgresURL(o.store):
		return nil, fmt.Errorf("--store must be empty (the checkpoint directory, --state) or a postgres:// or postgresql:// URL, got %q", redactURL(o.store))
	case o.store != "" && o.state != "":
		return nil, errors.New("--store and --state are exclusive: --state is the checkpoint directory, used when --store is empty")
	}
	return o, nil
}

// run is the program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "research:", err)
		return exitUsage
	}
	if o.version {
		fmt.Fprintln(stdout, buildinfo.Version("research"))
		return exitOK
	}
	jsonOut := stdout // the JSON report is written as it is
	stdout = plainUnless(stdout, wantEmoji(o.emoji, stdout))
	stderr = plainUnless(stderr, wantEmoji(o.emoji, stderr))
	disp := stdout
	if o.jsonOut {
		disp = stderr
	}
	if o.quiet {
		disp = io.Discard
	}

	if o.session != "" {
		if err := checkpoint.ValidateSession(o.session); err != nil {
			fmt.Fprintln(stderr, "research: --session:", err)
			return exitUsage
		}
	}
	sa := study.Args{Root: o.root, Skip: strings.Split(o.skip, ","), FilesPerTask: o.filesPerTask,
		MaxIterations: o.maxIter, TaskTimeout: o.timeout, Agents: o.agents}
	if o.timeout == 0 {
		sa.TaskTimeout = -1 // none
	}
	if o.questions != "" {
		b, err := os.ReadFile(o.questions)
		if err != nil {
			fmt.Fprintln(stderr, "research: --questions:", err)
			return exitUsage
		}
		sa.Questions = string(b)
		if sa.Questions == "" {
			// An empty file is a question file without a "question:"
			// line, not the built-in questions that "" stands for.
			sa.Questions = "\n"
		}
	}
	loop, err := study.New(ctx, sa)
	if err != nil {
		var argErr *study.ArgError
		var qErr *study.QuestionFileError
		switch {
		case errors.As(err, &argErr) && argErr.Arg == "root":
			fmt.Fprintln(stderr, "research: --root:", argErr.Err)
		case errors.As(err, &qErr):
			if o.questions != "" {
				qErr.Name = o.questions
			}
			fmt.Fprintln(stderr, "research:", qErr)
		case ctx.Err() != nil:
			fmt.Fprintln(stderr, "research: interrupted while indexing")
			return exitInterrupted
		default:
			fmt.Fprintln(stderr, "research:", err)
		}
		return exitUsage
	}
	initial := loop.Initial
	root := initial.Root
	session := o.session
	if session == "" {
		session = loop.Session
	}
	stateDir := o.state
	if stateDir == "" && o.store == "" {
		stateDir = defaultStateDir()
	}
	if len(initial.Estimate) == 0 && !o.resume {
		fmt.Fprintf(stderr, "research: no Go file under %s mentions %s; nothing to research\n", root, keywordList(initial.Topic))
		return exitUsage
	}

	var store iterate.Checkpointer
	if o.store == "" {
		store = checkpoint.NewDir(stateDir)
	} else {
		// stateDir names where the sessions are kept in the messages and
		// the report: the URL without its password.
		stateDir = redactURL(o.store)
		pool, err := pgxpool.New(ctx, o.store)
		if err != nil {
			fmt.Fprintln(stderr, "research: --store:", redactErr(err, o.store))
			return exitUsage
		}
		defer pool.Close()
		pg, err := pgcheckpoint.New(ctx, pool)
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(stderr, "research: interrupted while connecting to", stateDir)
				return exitInterrupted
			}
			fmt.Fprintf(stderr, "research: --store %s: %v\n", stateDir, redactErr(err, o.store))
			return exitError
		}
		defer pg.Close()
		store = pg
	}
	// The loop's settings, and the host's: where the sessions are kept,
	// the session's name and the displays.
	eng := iterate.New(loop.Worker, append(loop.Options,
		iterate.WithCheckpointer(store),
		iterate.WithSession(session),
		iterate.WithObserver(loop.Observer(disp)),
	)...)

	var res *iterate.Result[study.Notes]
	if o.resume {
		res, err = eng.Resume(ctx)
	} else {
		if c, err := store.Load(ctx, session); err == nil && (c.Status == string(iterate.Interrupted) || c.Status == string(iterate.Running)) {
			fmt.Fprintf(disp, "Note: session %s was interrupted after iteration %d; starting over (use --resume to continue it).\n\n", session, c.Iteration)
		}
		fmt.Fprintf(disp, "🔎 Research: %s\n", initial.Question)
		fmt.Fprintf(disp, "Root: %s (%d Go files)\n", root, initial.TotalFiles)
		fmt.Fprintf(disp, "Topic keywords: %s\n", keywordList(initial.Topic))
		fmt.Fprintf(disp, "Estimated relevant files: %d\n", len(initial.Estimate))
		crit := 0
		for _, q := range initial.Questions {
			if q.Critical {
				crit++
			}
		}
		fmt.Fprintf(disp, "Critical questions: %d\n", crit)
		fmt.Fprintf(disp, "Session: %s (sessions kept in %s)\n\n", session, stateDir)
		res, err = eng.Run(ctx, initial)
	}

	var interrupted *iterate.InterruptedError
	switch {
	case errors.As(err, &interrupted):
		fmt.Fprintf(disp, "\n⏸️  Interrupted after %d completed iteration(s). State saved in %s (session %s).\n", interrupted.Iteration, stateDir, session)
		fmt.Fprintf(disp, "Resume with: %s\n", resumeCommand(args))
		if disp != stderr {
			fmt.Fprintf(stderr, "research: interrupted; resume with: %s\n", resumeCommand(args))
		}
		return exitInterrupted
	case errors.Is(err, checkpoint.ErrNotFound):
		fmt.Fprintf(stderr, "research: no checkpoint of session %s in %s: run without --resume to start\n", session, stateDir)
		return exitError
	case errors.Is(err, iterate.ErrSettingsChanged):
		fmt.Fprintf(stderr, "research: session %s was started with other settings (--files-per-task or the questions changed): %v\n", session, err)
		return exitError
	case errors.Is(err, checkpoint.ErrLocked):
		fmt.Fprintf(stderr, "research: session %s is running in another process: %v\n", session, err)
		return exitError
	case res == nil:
		fmt.Fprintln(stderr, "research:", err)
		return exitError
	}

	rep := study.NewReport(res, session, stateDir, loop.MaxIterations)
	if o.jsonOut {
		if err := rep.WriteJSON(jsonOut); err != nil {
			fmt.Fprintln(stderr, "research:", err)
			return exitError
		}
	} else {
		rep.WriteText(stdout)
	}
	switch {
	case err != nil && !errors.Is(err, iterate.ErrEscalated):
		fmt.Fprintln(stderr, "research:", err)
		return exitError
	case res.Status.Success() && !rep.AllFailed:
		return exitOK
	case rep.Convergence == "partial":
		return exitPartial
	}
	return exitError
}

// defaultStateDir is refine-research under the user cache directory. When
// that cannot be made (no cache directory, or one under a HOME that does
// not exist, as for a system account), it is refine-research-UID in the
// temporary directory, the user's own. The run says where its sessions are
// kept.
func defaultStateDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		d := filepath.Join(dir, "refine-research")
		if err := os.MkdirAll(d, 0o700); err == nil {
			return d
		}
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("refine-research-%d", os.Getuid()))
}

// resumeCommand returns the command line that resumes this run. The
// --store URL is written without its password (redactURL), which the
// line then asks for: it is printed, and may be logged or shared.
func resumeCommand(args []string) string {
	parts := []string{"research"}
	redacted := false
	storeNext := false
	for _, a := range args {
		if a == "--resume" || a == "-resume" || strings.HasPrefix(a, "--resume=") || strings.HasPrefix(a, "-resume=") {
			continue
		}
		switch name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); {
		case storeNext:
			storeNext = false
			if r := redactURL(a); r != a {
				a, redacted = r, true
			}
		case strings.HasPrefix(a, "-") && name == "store" && !hasValue:
			storeNext = true
		case strings.HasPrefix(a, "-") && name == "store":
			if r := redactURL(value); r != value {
				a, redacted = a[:len(a)-len(value)]+r, true
			}
		}
		if strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	cmd := strings.Join(append(parts, "--resume"), " ")
	if redacted {
		cmd += " (the --store password left out: put it back in the URL, or set PGPASSWORD)"
	}
	return cmd
}

// keywordList lists the keywords as the questions name them.
func keywordList(kws []study.Keyword) string {
	parts := make([]string, len(kws))
	for i, k := range kws {
		parts[i] = k.Word
		if k.Name != "" {
			parts[i] = k.Name
		}
	}
	return strings.Join(parts, ", ")
}

// isPostgresURL reports whether s is a postgres:// or postgresql:// URL.
func isPostgresURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// redactURL returns s without the password of its user information, for
// the messages and the report. Anything that does not parse as a URL is
// returned as its scheme followed by "://..." so that no secret leaks.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if scheme, _, ok := strings.Cut(s, "://"); ok {
			return scheme + "://..."
		}
		return "..."
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.User(u.User.Username())
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactErr returns err with the password of url removed from its text.
func redactErr(err error, rawURL string) error {
	u, perr := url.Parse(rawURL)
	if perr != nil || u.User == nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}
