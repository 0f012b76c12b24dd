// Command fleet runs refine sessions on a pool of worker processes, with
// River (a PostgreSQL job queue) spreading the work and the PostgreSQL
// checkpoint store (pgcheckpoint) making each session's progress
// exactly-once: River delivers a job at least once, the store's lease and
// fencing token let only one runner of a session save.
//
//	fleet serve  [--concurrency 4] [--lease 30s]   a worker
//	fleet submit --count 30 | --file questions.txt  enqueue sessions
//	fleet status [--json]                           list sessions
//
// Every command takes --db (default $FLEET_DATABASE_URL, else
// $REFINE_PG_URL) and --schema (default "fleet"), and creates or migrates
// the tables it needs (River's, the store's and the fleet's ledger) first,
// idempotently. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

const usage = `usage: fleet <command> [flags]

commands:
  serve    run a worker: sessions from the queue, run to their end
  submit   enqueue sessions (--count N synthetic ones, or one per line of --file)
  status   list sessions: status, iteration, holder, age (--json)

Run "fleet <command> -h" for its flags.
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
	fs.StringVar(&c.schema, "schema", "fleet", "PostgreSQL schema of River's, the store's and the fleet's tables")
}

// parse parses args into fs, reporting errors on stderr.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fleet %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return errUsage
	}
	return nil
}

// open connects, migrates and returns the pool and the store.
func (c *common) open(ctx context.Context, maxConns int, opts ...pgcheckpoint.Option) (*pgxpool.Pool, *pgcheckpoint.Store, error) {
	if c.db == "" {
		return nil, nil, errors.New("no database: set --db, $FLEET_DATABASE_URL or $REFINE_PG_URL")
	}
	pool, err := connect(ctx, c.db, maxConns)
	if err != nil {
		return nil, nil, err
	}
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := migrate(mctx, pool, c.schema); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("migrating schema %q: %w", c.schema, err)
	}
	store, err := pgcheckpoint.New(mctx, pool, append([]pgcheckpoint.Option{pgcheckpoint.Schema(c.schema)}, opts...)...)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, store, nil
}

// terminate returns a channel that receives SIGTERM and SIGINT, and a
// function that stops the delivery.
func terminate() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	return ch, func() { signal.Stop(ch) }
}
