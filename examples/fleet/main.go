// Command fleet runs refine sessions on a pool of worker processes: a thin
// host of package github.com/refine-go/refine/iterate/fleet, which does the
// work (River spreads the sessions, the PostgreSQL checkpoint store keeps
// each session's progress exactly-once under a lease and a fencing token).
// It registers two kinds of loop: "synthetic", a deterministic loop whose
// end is checkable against an uninterrupted run, and "research", the
// research example's loop over a Go source tree.
//
//	fleet serve  [--concurrency 4] [--lease 30s]        a worker
//	fleet submit --count 30 | --file questions.txt       submit sessions
//	fleet status [--json]                                list sessions
//	fleet answer [flags] SESSION TEXT                    answer an escalation
//	fleet cancel [flags] SESSION                         cancel a session
//
// Every command takes --db (default $FLEET_DATABASE_URL, else
// $REFINE_PG_URL) and --schema (default "fleet"), and creates or migrates
// the tables it needs first, idempotently. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/examples/internal/buildinfo"
	"github.com/refine-go/refine/iterate/fleet"
)

const usage = `usage: fleet <command> [flags]

commands:
  serve    run a worker: sessions from the queue, run to their end
  submit   submit sessions (--count N synthetic ones, or one research question per line of --file)
  status   list sessions: kind, status, iteration, holder, age, job (--json)
  answer   answer the open question of an escalated session, once: fleet answer [--by NAME] [flags] SESSION TEXT
  cancel   cancel a session for good: fleet cancel [flags] SESSION
  retry    run a failed session (its job given up) again: fleet retry [flags] SESSION

Run "fleet <command> -h" for its flags; "fleet --version" prints the version.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stdout, stderr)
	case "submit":
		err = submit(ctx, args[1:], stdout, stderr)
	case "status":
		err = status(ctx, args[1:], stdout, stderr)
	case "answer":
		err = answer(ctx, args[1:], stdout, stderr)
	case "cancel":
		err = cancel(ctx, args[1:], stdout, stderr)
	case "retry":
		err = retry(ctx, args[1:], stdout, stderr)
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, buildinfo.Version("fleet"))
		return 0
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "fleet: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(stderr, "fleet %s: %v\n", args[0], err)
	return 1
}

var errUsage = errors.New("usage")

// common are the flags every command takes.
type common struct {
	db     string
	schema string
}

func (c *common) register(fs *flag.FlagSet) {
	def := os.Getenv("FLEET_DATABASE_URL")
	if def == "" {
		def = os.Getenv("REFINE_PG_URL")
	}
	fs.StringVar(&c.db, "db", def, "PostgreSQL connection URL (default $FLEET_DATABASE_URL, else $REFINE_PG_URL)")
	fs.StringVar(&c.schema, "schema", fleet.DefaultSchema, "PostgreSQL schema of River's, the store's and the fleet's tables")
}

// parse parses args into fs, reporting errors on stderr; it leaves want
// positional arguments (more or fewer are a usage error).
func parse(fs *flag.FlagSet, args []string, stderr io.Writer, want int) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() != want {
		if want == 0 {
			fmt.Fprintf(stderr, "fleet %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		} else {
			fmt.Fprintf(stderr, "fleet %s: want %d arguments, got %q\n", fs.Name(), want, fs.Args())
		}
		return errUsage
	}
	return nil
}

// host is what every command works with: the pool, the fleet and its
// kinds, registered as in every process of the fleet.
type host struct {
	pool      *pgxpool.Pool
	fleet     *fleet.Fleet
	synthetic *fleet.Kind[syntheticArgs, state]
	research  *fleet.Kind[researchArgs, researchState]
}

// open connects, prepares the fleet's tables and registers the kinds, the
// synthetic one with a ledger if withLedger.
func (c *common) open(ctx context.Context, maxConns int, withLedger bool, opts ...fleet.Option) (*host, error) {
	if c.db == "" {
		return nil, errors.New("no database: set --db, $FLEET_DATABASE_URL or $REFINE_PG_URL")
	}
	pool, err := connect(ctx, c.db, maxConns)
	if err != nil {
		return nil, err
	}
	f, err := fleet.New(ctx, pool, append([]fleet.Option{fleet.Schema(c.schema)}, opts...)...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	var rec recorder
	if withLedger {
		l, err := newLedger(ctx, pool, c.schema, f.Holder())
		if err != nil {
			f.Store().Close()
			pool.Close()
			return nil, err
		}
		rec = l
	}
	h := &host{pool: pool, fleet: f}
	h.synthetic = fleet.MustRegister(f, "synthetic", syntheticKind(rec))
	h.research = fleet.MustRegister(f, "research", buildResearch)
	return h, nil
}

// close releases the leases still held and closes the pool.
func (h *host) close() {
	h.fleet.Store().Close()
	h.pool.Close()
}

// storeOptions are the store's options of a worker keeping keep
// generations per session.
func storeOptions(keep int) fleet.Option {
	return fleet.StoreOptions(pgcheckpoint.Keep(keep))
}
