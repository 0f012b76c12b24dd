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
// where it stopped. Run agentloop --help for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
	ctx, hurry, stop := notifySignals(os.Stderr)
	code := run(ctx, hurry, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program; it returns the exit code. Cancelling ctx
// interrupts the loop, which saves its state; closing hurry then kills the
// running command without its grace period.
func run(ctx context.Context, hurry <-chan struct{}, args, environ []string, stdout, stderr io.Writer) int {
	getenv := lookup(environ)
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "agentloop: %v\n", err)
		return exitError
	}
	inv, err := parseArgs(args, cwd, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentloop: %v\nRun 'agentloop --help' for usage.\n", err)
		return exitUsage
	}
	if inv.version {
		fmt.Fprintln(stdout, buildinfo.Version("agentloop"))
		return exitOK
	}
	set, err := resolve(inv, getenv, cwd)
	if err != nil {
		fmt.Fprintf(stderr, "agentloop: %v\n", err)
		return exitUsage
	}
	if set.DryRun {
		return dryRun(set, stdout, stderr)
	}
	log, closeLog, err := newLogger(set, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "agentloop: %v\n", err)
		return exitUsage
	}
	defer closeLog()
	return runLoop(ctx, hurry, set, environ, log, stdout, stderr)
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
