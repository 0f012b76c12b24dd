package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/refine-go/refine/checkpoint"
)

// usageError reports a command line, an environment variable or a
// configuration value that cannot be used; the program exits with code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// invocation is what the command line asks for.
type invocation struct {
	resume    bool
	procedure string
	// flags holds the settings given on the command line (nil when not given);
	// its paths are absolute.
	flags     layer
	workspace string // --workspace, absolute; "" when not given
	dryRun    bool
	fresh     bool
	verbose   bool
	json      bool
	version   bool
	logFile   string
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ", ") }

func (l *stringList) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("must not be empty")
	}
	*l = append(*l, v)
	return nil
}

const synopsis = `agentloop runs an AI coding CLI in fresh-process OODA iterations.

Usage:
  agentloop [flags] <procedure>           start a procedure, e.g. agentloop build --max-iterations 3
  agentloop resume [flags] <procedure>    continue an interrupted procedure, e.g. agentloop resume build
  agentloop <procedure> --dry-run         print the assembled prompt and its token count, run nothing

Each iteration assembles a prompt from the procedure's four phase files
(observe.md, orient.md, decide.md, act.md in <workspace>/prompts/<procedure>/
unless --prompts says otherwise), plus any --context files as a ## CONTEXT
section, and pipes it on stdin to the AI CLI (a shell command, run with sh -c
in the workspace, in its own process group). A non-zero exit status, or a
failing quality gate run after it, counts as a failed iteration; the loop
aborts after --failure-threshold consecutive failures. State is saved under
<workspace>/.agentloop/state after every iteration (<procedure>.json there is a
human-readable summary); it is removed when the procedure completes. A
resume continues with the settings of the run it resumes (AI CLI, gates,
context, prompts, token budget, limits) except those its own flags give.

Flags (they may come before or after the procedure):
`

const epilogue = `
Environment (overridden by flags, overriding config files):
  AGENTLOOP_AI_CMD, AGENTLOOP_AI_TIMEOUT, AGENTLOOP_AI_OUTPUT,
  AGENTLOOP_MAX_ITERATIONS, AGENTLOOP_FAILURE_THRESHOLD, AGENTLOOP_TOKEN_BUDGET,
  AGENTLOOP_MAX_COST, AGENTLOOP_MAX_TOKENS, AGENTLOOP_MAX_TIME, AGENTLOOP_DONE_MARKER,
  AGENTLOOP_DONE_FILE, AGENTLOOP_GATE_TIMEOUT, AGENTLOOP_GIT,
  AGENTLOOP_PROMPTS, AGENTLOOP_WORKSPACE
  AGENTLOOP_GLOBAL_CONFIG   path of the global config file (default
                            $XDG_CONFIG_HOME/agentloop/config.json or
                            ~/.config/agentloop/config.json)

Config files (JSON; the workspace's overrides the global one, and within one
file procedures.<name> overrides the top level):
  <workspace>/.agentloop/config.json
  {"ai_cmd": "claude -p", "ai_timeout": "20m", "max_iterations": 5,
   "failure_threshold": 3, "token_budget": 100000, "gates": ["go test ./..."],
   "context": ["AGENTS.md"], "prompts": "prompts/build", "ai_output": "claude",
   "max_cost": 5, "max_tokens": 2000000, "max_time": "2h", "done_marker": "<promise>COMPLETE</promise>",
   "done_file": "DONE", "gate_timeout": "10m", "git": "commit",
   "procedures": {"build": {"max_iterations": 10}}}
  ("default_iterations" is accepted as another name for "max_iterations",
  in procedures.<name> too;
  relative paths are relative to the workspace.)

The AI CLI and the gates see AGENTLOOP_PROCEDURE, AGENTLOOP_ITERATION
(1-indexed) and AGENTLOOP_ITERATION_LIMIT (0 = unlimited) in their environment.

Exit codes: 0 completed (the iteration limit, a spending limit or the
completion marker or file reached), 1 aborted or error, 2 usage error,
130 interrupted.
`

// parseArgs parses the command line. Flags may come before or after the
// positional arguments. It returns flag.ErrHelp after printing the help to
// stdout for -h/--help, and a *usageError for anything it cannot use.
func parseArgs(args []string, cwd string, stdout io.Writer) (*invocation, error) {
	inv := &invocation{}
	fs := flag.NewFlagSet("agentloop", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		aiCmd, prompts, workspace       string
		maxIter, threshold, tokenBudget int
		gates, contexts                 stringList
		aiTimeout, gateTimeout, maxTime time.Duration
		aiOutput, doneMarker, doneFile  string
		gitMode                         string
		maxCost                         float64
		maxTokens                       int64
	)
	fs.StringVar(&aiCmd, "ai-cmd", "", "AI CLI `command` run each iteration with the prompt on stdin (env AGENTLOOP_AI_CMD)")
	fs.DurationVar(&aiTimeout, "ai-timeout", defaultAITimeout, "time limit of each run of the AI CLI, e.g. 10m; a run that exceeds it is stopped (SIGTERM, then SIGKILL) and the iteration fails (0 = none; env AGENTLOOP_AI_TIMEOUT)")
	fs.DurationVar(&maxTime, "max-time", 0, "wall-time limit of the loop, e.g. 2h: no iteration starts that would end past it, and an AI CLI still running at the limit is stopped (0 = none; env AGENTLOOP_MAX_TIME)")
	fs.StringVar(&aiOutput, "ai-output", formatAuto, "`format` of the AI CLI's output, read for what the call cost and its answer: auto (sniff), claude (--output-format json or stream-json), codex (exec --json), gemini (--output-format json) or text (env AGENTLOOP_AI_OUTPUT)")
	fs.Float64Var(&maxCost, "max-cost", 0, "stop the loop before the next iteration would spend more than `USD` in all, by the cost the AI CLI reports (0 = no limit; env AGENTLOOP_MAX_COST)")
	fs.Int64Var(&maxTokens, "max-tokens", 0, "stop the loop before the next iteration would spend more than `N` tokens in all, input and output, as the AI CLI reports them or else the prompt's estimate (0 = no limit; env AGENTLOOP_MAX_TOKENS)")
	fs.StringVar(&doneMarker, "done-marker", "", "`text` by which the AI CLI says the work is done, e.g. '<promise>COMPLETE</promise>': an iteration that prints it and passes its gates converges the loop (env AGENTLOOP_DONE_MARKER)")
	fs.StringVar(&doneFile, "done-file", "", "`file` (relative to the workspace) by which the AI CLI says the work is done: an iteration that writes it and passes its gates converges the loop; it is removed before each AI CLI run (env AGENTLOOP_DONE_FILE)")
	fs.DurationVar(&gateTimeout, "gate-timeout", 0, "time limit of each quality gate run, e.g. 5m; a gate that exceeds it is stopped (SIGTERM, then SIGKILL) and fails (0 = none; env AGENTLOOP_GATE_TIMEOUT)")
	fs.StringVar(&gitMode, "git", gitOff, "what each iteration does with its changes to the workspace, a git work tree: off, commit (a commit per iteration) or stash (a snapshot per iteration on the stash list); .agentloop/ is left out (env AGENTLOOP_GIT)")
	fs.IntVar(&maxIter, "max-iterations", 0, "iterations to run, 0 = unlimited (default: procedures.<name>.max_iterations, then max_iterations of the config files, then 0)")
	fs.IntVar(&threshold, "failure-threshold", 3, "consecutive failed iterations that abort the loop")
	fs.IntVar(&tokenBudget, "token-budget", 100000, "token budget of the prompt; a larger prompt is warned about and sent anyway")
	fs.Var(&gates, "gate", "quality gate `command` run after each successful AI CLI run; a failing gate fails the iteration (repeatable; replaces the config's gates)")
	fs.Var(&contexts, "context", "`file` appended to the prompt in a ## CONTEXT section (repeatable; replaces the config's context)")
	fs.StringVar(&prompts, "prompts", "", "`dir`ectory of the phase files observe.md, orient.md, decide.md, act.md (default <workspace>/prompts/<procedure>)")
	fs.StringVar(&workspace, "workspace", "", "workspace `dir`ectory: where the AI CLI runs and state and config live (default: the current directory)")
	fs.BoolVar(&inv.dryRun, "dry-run", false, "print the assembled prompt and its token count; run nothing")
	fs.BoolVar(&inv.fresh, "fresh", false, "discard an interrupted state of the procedure and start over")
	fs.StringVar(&inv.logFile, "log", "", "append structured JSON logs (iteration, phase, duration, outcome) to `file`")
	fs.BoolVar(&inv.verbose, "verbose", false, "write structured logs to stderr")
	fs.BoolVar(&inv.json, "json", false, "write the final result as JSON to stdout (status, reason, iterations, usage, exit_code), or with --dry-run what would run; the progress lines go to stderr")
	fs.BoolVar(&inv.version, "version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), synopsis)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), epilogue)
	}

	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fs.Usage()
				return nil, flag.ErrHelp
			}
			return nil, &usageError{msg: err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}

	if inv.version {
		return inv, nil
	}
	if len(positional) > 0 && positional[0] == "resume" {
		inv.resume = true
		positional = positional[1:]
	}
	switch {
	case len(positional) == 0 && inv.resume:
		return nil, usagef("resume needs the procedure to resume, e.g. agentloop resume build")
	case len(positional) == 0:
		return nil, usagef("missing the procedure to run, e.g. agentloop build")
	case len(positional) > 1:
		return nil, usagef("unexpected arguments after procedure %q: %s", positional[0], strings.Join(positional[1:], " "))
	}
	inv.procedure = positional[0]
	if err := checkpoint.ValidateSession(inv.procedure); err != nil {
		return nil, usagef("invalid procedure name %q: %v", inv.procedure, err)
	}
	if inv.resume && inv.fresh {
		return nil, usagef("--fresh starts over; it cannot be combined with resume")
	}

	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		switch f.Name {
		case "ai-cmd":
			if strings.TrimSpace(aiCmd) == "" {
				err = usagef("--ai-cmd must not be empty")
			}
			inv.flags.AICmd = &aiCmd
		case "max-iterations":
			inv.flags.MaxIterations = &maxIter
		case "failure-threshold":
			inv.flags.FailureThreshold = &threshold
		case "token-budget":
			inv.flags.TokenBudget = &tokenBudget
		case "ai-timeout":
			inv.flags.AITimeout = (*duration)(&aiTimeout)
		case "max-time":
			inv.flags.MaxTime = (*duration)(&maxTime)
		case "gate-timeout":
			inv.flags.GateTimeout = (*duration)(&gateTimeout)
		case "ai-output":
			inv.flags.AIOutput = &aiOutput
		case "max-cost":
			inv.flags.MaxCost = &maxCost
		case "max-tokens":
			inv.flags.MaxTokens = &maxTokens
		case "done-marker":
			inv.flags.DoneMarker = &doneMarker
		case "done-file":
			inv.flags.DoneFile = &doneFile
		case "git":
			inv.flags.Git = &gitMode
		case "gate":
			g := []string(gates)
			inv.flags.Gates = &g
		case "context":
			c := absAll(cwd, contexts)
			inv.flags.Context = &c
		case "prompts":
			p := abs(cwd, prompts)
			inv.flags.Prompts = &p
		case "workspace":
			inv.workspace = abs(cwd, workspace)
		case "log":
			inv.logFile = abs(cwd, inv.logFile)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := inv.flags.validate(func(key string) string { return "--" + strings.ReplaceAll(key, "_", "-") }); err != nil {
		return nil, err
	}
	return inv, nil
}

// abs resolves path against dir unless it is absolute.
func abs(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

func absAll(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = abs(dir, p)
	}
	return out
}

// atoi parses a non-negative integer setting.
func atoi(name, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, usagef("%s: %q is not a number", name, v)
	}
	return n, nil
}
