// Command inspect shows the sessions a refinement loop keeps in a
// checkpoint directory (a checkpoint.Dir), and how one of them went,
// iteration by iteration, and why it stopped. It only reads: it takes no
// lock, so it works on a session that is running, and it reports damaged
// checkpoints instead of quarantining them. See README.md.
//
//	inspect DIR                     list the sessions
//	inspect DIR SESSION             the session's history
//	inspect --html page.html DIR S  the same as one self-contained HTML page
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/examples/internal/term"
)

// Exit codes.
const (
	exitOK    = 0 // listed or shown (damage that a fallback works around included)
	exitError = 1 // an error: unreadable directory, unknown session, no readable generation
	exitUsage = 2 // bad flags or arguments
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, term.Is(os.Stdout))
	stop()
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	dir, session string
	json         bool
	spark        bool
	html         string
	metrics      metricList
	version      bool
}

const usageHead = `inspect shows the sessions of a refine checkpoint directory, read-only.

Usage:
  inspect [flags] DIR            list the sessions: status, iteration, generation,
                                 update time, open question, settings fingerprint
  inspect [flags] DIR SESSION    the session's history: per iteration its action,
                                 tasks (failed), coverage, confidence, conflicts,
                                 time; tokens spent; budget; stop status and reason

It never takes a session's lock and never changes a file, so it can watch a
running loop. Damaged generations are reported (and skipped, as a resume
would skip them), never quarantined.

Flags:
`

const usageTail = `
Exit codes:
  0  listed or shown (a session shown from an older generation because newer
     ones are damaged included: the damage is reported)
  1  error: the directory cannot be read, the session does not exist or has no
     readable generation, the HTML page cannot be written
  2  usage error
`

// parse reads the command line; flags may follow the arguments.
func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
	fs.BoolVar(&o.spark, "spark", false, "print sparklines of the metrics charted even when stdout is not a terminal")
	fs.StringVar(&o.html, "html", "", "also write the session's history as one self-contained HTML page to `file` (needs SESSION)")
	fs.Var(&o.metrics, "metric", metricHelp)
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
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
	if o.version {
		return o, nil
	}
	bad := func(format string, a ...any) (*options, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintf(stderr, "inspect: %v\nRun 'inspect --help' for usage.\n", err)
		return nil, err
	}
	switch {
	case len(pos) == 0:
		return bad("missing the checkpoint directory argument")
	case len(pos) > 2:
		return bad("at most a directory and a session expected, got %d arguments: %s", len(pos), strings.Join(pos, " "))
	case o.html != "" && len(pos) < 2:
		return bad("--html needs a SESSION: inspect --html FILE DIR SESSION")
	}
	o.dir = pos[0]
	if len(pos) == 2 {
		o.session = pos[1]
		if err := checkpoint.ValidateSession(o.session); err != nil {
			return bad("invalid session: %v", err)
		}
	}
	return o, nil
}

// version returns the module's version, as the build recorded it.
func version() string {
	v := "(devel)"
	goVersion := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		goVersion = " " + bi.GoVersion
	}
	return "inspect (github.com/refine-go/refine) " + v + goVersion
}

// run is the whole program; it returns the exit code. terminal says
// whether stdout is a terminal (sparklines are printed there).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, terminal bool) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if o.version {
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "inspect: %v\n", err)
		return exitError
	}
	fi, err := os.Stat(o.dir)
	switch {
	case err != nil:
		return fail(err)
	case !fi.IsDir():
		return fail(fmt.Errorf("%s is not a directory", o.dir))
	}
	if o.session == "" {
		if err := list(ctx, o.dir, o.json, stdout, stderr); err != nil {
			return fail(err)
		}
		return exitOK
	}
	s, err := readSession(ctx, o.dir, o.session)
	if err != nil {
		return fail(err)
	}
	for _, d := range s.damage {
		fmt.Fprintf(stderr, "inspect: warning: %s\n", d)
	}
	if o.html != "" {
		if err := writeHTML(o.html, s, o.metrics); err != nil {
			return fail(err)
		}
	}
	if o.json {
		err = writeSessionJSON(stdout, s)
	} else {
		err = writeSession(stdout, s, o.spark || terminal, o.metrics)
	}
	if err != nil {
		return fail(err)
	}
	return exitOK
}
