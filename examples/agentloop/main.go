// Command agentloop runs an AI coding CLI in fresh-process OODA iterations
// (seed 004, the iteration loop), on the refine engine.
//
//	agentloop build --max-iterations 3
//	agentloop resume build
//	agentloop build --dry-run
//
// Each iteration assembles a prompt from the procedure's four phase files
// and pipes it to the AI CLI; quality gates run after it; the state is
// checkpointed after every iteration so that an interrupted run resumes
// where it stopped. What each call of the AI CLI spent is read from its
// output (Claude Code, Codex, Gemini CLI) and charged to the loop, which
// --max-cost and --max-tokens bound; the AI CLI can end the loop with a
// completion marker or file. Run agentloop --help for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/refine-go/refine/examples/internal/buildinfo"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1 // aborted, or an error
	exitUsage       = 2
	exitInterrupted = 130
)

func main() {
	running := &activity{}
	ctx, hurry, stop := notifySignals(os.Stderr, running)
	code := run(ctx, hurry, running, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program; it returns the exit code. Cancelling ctx
// interrupts the loop, which saves its state; closing hurry then kills the
// running command without its grace period; running is told what command
// runs. With --json, stdout gets one
// line of JSON whatever the outcome (see writeResult), failures before the
// loop starts and command lines that cannot be parsed included.
func run(ctx context.Context, hurry <-chan struct{}, running *activity, args, environ []string, stdout, stderr io.Writer) int {
	errs := &errLines{w: stderr}
	code, wantJSON, lr := start(ctx, hurry, running, args, environ, stdout, errs)
	if wantJSON {
		if lr == nil {
			lr = &loopRun{}
		}
		writeResult(stdout, code, lr.res, lr.err, lr.rep, errs.first)
	}
	return code
}

// start parses the command line and runs what it asks for. It returns the
// exit code, whether the final result is to be written as JSON, and the
// loop's run (nil when the loop did not start).
func start(ctx context.Context, hurry <-chan struct{}, running *activity, args, environ []string, stdout io.Writer, errs *errLines) (int, bool, *loopRun) {
	getenv := lookup(environ)
	wantJSON := jsonRequested(args)
	cwd, err := os.Getwd()
	if err != nil {
		errs.printf("%v", err)
		return exitError, wantJSON, nil
	}
	inv, err := parseArgs(args, cwd, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK, false, nil
	}
	if err != nil {
		errs.printf("%v", err)
		fmt.Fprintln(errs.w, "Run 'agentloop --help' for usage.")
		return exitUsage, wantJSON, nil
	}
	if inv.version {
		fmt.Fprintln(stdout, buildinfo.Version("agentloop"))
		return exitOK, false, nil
	}
	wantJSON = inv.json
	set, err := resolve(inv, getenv, cwd)
	if err != nil {
		errs.printf("%v", err)
		return exitUsage, wantJSON, nil
	}
	if set.DryRun {
		// --dry-run --json writes its own line (dryRunResult), or the error.
		code := dryRun(set, stdout, errs)
		return code, wantJSON && code != exitOK, nil
	}
	log, closeLog, err := newLogger(set, errs.w)
	if err != nil {
		errs.printf("%v", err)
		return exitUsage, wantJSON, nil
	}
	defer closeLog()
	lr := runLoop(ctx, hurry, running, set, environ, log, stdout, errs)
	return lr.code, wantJSON, lr
}

// jsonRequested reports whether the raw command line asks for --json, so
// that a command line the flag parser refuses still gets its JSON line.
func jsonRequested(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		if !hasValue {
			return true
		}
		b, err := strconv.ParseBool(value)
		return err == nil && b
	}
	return false
}

// errLines writes the program's error lines ("agentloop: ...") to stderr
// and keeps the first, which the --json result reports as "error".
type errLines struct {
	w     io.Writer
	first string
}

// printf writes one error line and keeps it if it is the first.
func (e *errLines) printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if e.first == "" {
		e.first, _, _ = strings.Cut(msg, "\n")
	}
	fmt.Fprintf(e.w, "agentloop: %s\n", msg)
}

// lookup returns a getenv over environ; the last definition wins, as in
// os.Getenv.
func lookup(environ []string) func(string) string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}
