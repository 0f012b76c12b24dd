// Command viewer serves the live session viewer of package iterate/view
// for a checkpoint directory or a PostgreSQL database:
//
//	viewer --dir DIR [--answer-dir ADIR] [--extend-dir EDIR] [--fork-dir FDIR]
//	viewer --db URL [--schema S]
//	viewer --db URL --fleet-schema S [--answers] [--cancel] [--extend] [--riverui]
//
// It answers only to requests for the loopback names, the address it
// listens on and the names given with --host (repeatable): a request
// naming another host is refused, so that a site whose name is made to
// resolve to the viewer's address (DNS rebinding) cannot read its pages
// nor answer.
//
// --metric NAME, repeatable, declares the charts of a session's page (as
// view.Metrics does); without it the page charts what each loop measured.
//
// It listens on the loopback interface (127.0.0.1 and a free port unless
// --addr says otherwise) and prints the address to open. A non-loopback
// address is refused unless --allow-remote is given: the viewer has no
// authentication of its own, and with --answers anyone who reaches it can
// answer a fleet's escalations.
//
// --answer-dir ADIR, with --dir, allows answering the directory's escalated
// sessions from their pages: each answer is recorded, durably and once, in
// ADIR (view.DirAnswers), for the loop's host to read
// (view.ReadDirAnswer) and resume the session with; the viewer runs no
// loop itself. --extend-dir EDIR, with --dir, likewise records, once per
// generation, a request to resume a budget_exhausted session under raised
// limits (view.DirExtensions), for the host to read
// (view.ReadDirExtension) and resume with iterate.ExtendBudget.
// --fork-dir FDIR records, once per new name, a request to fork a session
// from a kept generation (view.DirForks), for the host to read
// (view.ReadDirFork) and run with iterate.ForkFrom.
//
// --cancel, with --fleet-schema, adds a button cancelling a session that has
// not ended (fleet.Fleet.Cancel, recorded in the database before the page
// says so). A directory's sessions cannot be cancelled from the viewer:
// nothing it could record reaches the process running a loop.
//
// --extend, with --fleet-schema, adds to the page of a budget_exhausted
// session, or of one parked at its budget's limit (iterate.WithParkAtLimit),
// a form raising its limits (fleet.Fleet.Extend, committed before the page
// says so); a worker then resumes the session under them, every counter
// kept. Each stop is extended once: the page of a stop extended says so
// and offers no form until the session stops again.
//
// --riverui, with --fleet-schema, mounts riverui (riverqueue.com/riverui)
// under /riverui/ for the fleet's jobs: their queues, attempts, errors and
// retries, rather than a job console of the viewer's own. It is behind the
// viewer's checks (the hosts it answers to, cross-origin requests refused,
// loopback by default), and each session's page links to its job there.
// riverui's own actions (cancel, retry or delete a job, pause a queue)
// come with it: like the viewer's, it is off by default.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"riverqueue.com/riverui"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate/fleet"
	"github.com/refine-go/refine/iterate/view"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	stop()
	os.Exit(code)
}

// options are the command's flags.
type options struct {
	dir, db, schema, fleetSchema, addr string
	answerDir, extendDir, forkDir      string
	answers, allowRemote, cancel       bool
	extend                             bool // --extend: a fleet's budgets
	riverui                            bool // --riverui: a fleet's jobs
	poll                               time.Duration
	metrics                            metricList
	hosts                              metricList // --host
}

// metricList is the repeatable --metric flag.
type metricList []string

func (m *metricList) String() string { return strings.Join(*m, ", ") }

func (m *metricList) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return errors.New("an empty metric name")
	}
	*m = append(*m, s)
	return nil
}

// metricsOf returns the charts of the named metrics: coverage and
// confidence with the loop's thresholds (view.Coverage, view.Confidence),
// any other name without a threshold.
func metricsOf(names []string) []view.Metric {
	out := make([]view.Metric, 0, len(names))
	for _, n := range names {
		switch n {
		case view.Coverage.Name:
			out = append(out, view.Coverage)
		case view.Confidence.Name:
			out = append(out, view.Confidence)
		default:
			out = append(out, view.Metric{Name: n})
		}
	}
	return out
}

// run serves until ctx is done; ready, when set, is called with the
// address listened on.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(addr string)) int {
	fs := flag.NewFlagSet("viewer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.dir, "dir", "", "serve the sessions of the checkpoint directory `DIR`")
	fs.StringVar(&o.db, "db", "", "serve the sessions of the PostgreSQL database at `URL`")
	fs.StringVar(&o.schema, "schema", "", "the pgcheckpoint `schema` of the sessions (pgcheckpoint's default when empty)")
	fs.StringVar(&o.fleetSchema, "fleet-schema", "", "serve a fleet's sessions, in `schema` (with their kinds, holders, and answered escalations)")
	fs.StringVar(&o.answerDir, "answer-dir", "", "with --dir, allow answering escalations from the pages: record each answer, once, in `ADIR` for the host to resume with")
	fs.StringVar(&o.extendDir, "extend-dir", "", "with --dir, allow requesting a budget_exhausted session's resume under raised limits: record each request, once, in `EDIR` for the host")
	fs.StringVar(&o.forkDir, "fork-dir", "", "with --dir, allow requesting a fork of a session from a kept generation: record each request, once, in `FDIR` for the host")
	fs.BoolVar(&o.cancel, "cancel", false, "allow cancelling the fleet's sessions from the pages (needs --fleet-schema)")
	fs.BoolVar(&o.extend, "extend", false, "allow raising the budget of the fleet's budget_exhausted sessions from the pages (needs --fleet-schema)")
	fs.BoolVar(&o.riverui, "riverui", false, "mount riverui under "+riverPrefix+"/ for the fleet's jobs (queues, attempts, errors, retries, and riverui's\n"+
		"actions on them), behind the viewer's host and origin checks, and link each session's page to its job (needs --fleet-schema)")
	fs.BoolVar(&o.answers, "answers", false, "allow answering the fleet's escalations from the pages (needs --fleet-schema)")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "listen on `host:port` (a loopback address unless --allow-remote)")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback --addr (the viewer has no authentication)")
	fs.Var(&o.hosts, "host", "also answer to requests for host `name` (repeatable): by default the viewer answers only to\n"+
		"the loopback names and to the address it listens on, so that another site's name rebound to its address\n"+
		"(DNS rebinding) cannot read its pages or answer; name the host a browser or a proxy reaches it by")
	fs.DurationVar(&o.poll, "poll", 2*time.Second, "how often a running session's page checks for a new checkpoint")
	fs.Var(&o.metrics, "metric", "chart `name` on a session's page (repeatable, in order): coverage and confidence (with the\n"+
		"loop's thresholds), score, conflicts, a named score of the loop's assessments (fixloop: \"tests passing\",\n"+
		"\"tests failing\"; planrunner: \"tasks done\", \"phases complete\"), or a count: gaps, gaps:KIND, tasks, failed tasks,\n"+
		"tokens, cost, calls, duration. Without it: what each loop recorded as other than 0, and the gaps")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: viewer --dir DIR [--answer-dir ADIR] [--extend-dir EDIR] [--fork-dir FDIR] | --db URL [--schema S] | --db URL --fleet-schema S [--answers] [--cancel] [--extend] [--riverui] [--addr HOST:PORT] [--metric NAME]...\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if err := o.check(fs.Args()); err != nil {
		fmt.Fprintf(stderr, "viewer: %v\nRun 'viewer --help' for usage.\n", err)
		return exitUsage
	}
	if err := serve(ctx, o, stdout, stderr, ready); err != nil {
		fmt.Fprintf(stderr, "viewer: %v\n", err)
		return exitError
	}
	return exitOK
}

// check checks the flags' combination.
func (o *options) check(rest []string) error {
	switch {
	case len(rest) > 0:
		return fmt.Errorf("unexpected arguments: %q", rest)
	case (o.dir == "") == (o.db == ""):
		return errors.New("give one of --dir and --db")
	case o.dir != "" && (o.schema != "" || o.fleetSchema != "" || o.answers):
		return errors.New("--schema, --fleet-schema and --answers go with --db")
	case o.schema != "" && o.fleetSchema != "":
		return errors.New("give --schema or --fleet-schema, not both: a fleet's sessions are in its schema")
	case (o.extendDir != "" || o.forkDir != "") && o.dir == "":
		return errors.New("--extend-dir and --fork-dir go with --dir")
	case o.answerDir != "" && o.dir == "":
		return errors.New("--answer-dir goes with --dir (a fleet's answers: --answers)")
	case o.riverui && o.fleetSchema == "":
		return errors.New("--riverui needs --fleet-schema: riverui shows a fleet's jobs")
	case o.extend && o.fleetSchema == "":
		return errors.New("--extend needs --fleet-schema (a directory's sessions: --extend-dir)")
	case o.cancel && o.fleetSchema == "":
		return errors.New("--cancel needs --fleet-schema: a directory's sessions cannot be cancelled from the viewer")
	case o.answers && o.fleetSchema == "":
		return errors.New("--answers needs --fleet-schema: escalations are answered through a fleet")
	}
	if o.dir != "" {
		fi, err := os.Stat(o.dir)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", o.dir)
		}
	}
	return checkAddr(o.addr, o.allowRemote)
}

// checkAddr refuses an address that is not a loopback one unless remote
// is allowed.
func checkAddr(addr string, remote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v", addr, err)
	}
	if remote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return fmt.Errorf("--addr %q listens on %s, not a loopback address: the viewer has no authentication; add --allow-remote to serve it there (behind a proxy that authenticates)", addr, host)
}

// hostsOf returns the hosts the viewer answers to: the loopback names, the
// host of the address it listens on when it is an IP address (a name
// could be rebound: name it with --host), and the --host names.
func hostsOf(addr string, extra []string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(h); ip != nil && !ip.IsUnspecified() {
			hosts = append(hosts, h)
		}
	}
	return append(hosts, extra...)
}

// fleetOptions are the viewer's options for the fleet f (--fleet-schema):
// what it knows of its sessions (a page at a time for the list, one for a
// session's page), its title, and the actions o enables.
func fleetOptions(f *fleet.Fleet, o options) []view.Option {
	opts := []view.Option{view.ExtrasAfter(extrasAfter(f, o.riverui)), view.ExtraOf(extraOf(f, o.riverui)),
		view.Title("fleet " + o.fleetSchema)}
	if o.answers {
		opts = append(opts, view.Answers(fleetAnswers{f}))
	}
	if o.cancel {
		opts = append(opts, view.Cancels(f))
	}
	if o.extend {
		opts = append(opts, view.Extends(fleetExtends{f}))
	}
	return opts
}

// riverPrefix is the path riverui is mounted under (--riverui).
const riverPrefix = "/riverui"

// serve builds the handler and serves it until ctx is done; riverui logs
// to stderr.
func serve(ctx context.Context, o options, stdout, stderr io.Writer, ready func(string)) error {
	opts := []view.Option{view.Poll(o.poll), view.Hosts(hostsOf(o.addr, o.hosts)...)}
	if len(o.metrics) > 0 {
		opts = append(opts, view.Metrics(metricsOf(o.metrics)...))
	}
	var store view.Store
	var jobs http.Handler // riverui, with --riverui
	if o.dir != "" {
		store = view.ReadOnly(checkpoint.NewDir(o.dir))
		if o.answerDir != "" {
			opts = append(opts, view.Answers(view.DirAnswers{Path: o.answerDir}))
		}
		if o.forkDir != "" {
			opts = append(opts, view.Forks(view.DirForks{Path: o.forkDir}))
		}
		if o.extendDir != "" {
			opts = append(opts, view.Extends(view.DirExtensions{Path: o.extendDir}))
		}
	} else {
		pool, err := pgxpool.New(ctx, o.db)
		if err != nil {
			return fmt.Errorf("connecting: %w", err)
		}
		defer pool.Close()
		if o.fleetSchema != "" {
			f, err := fleet.New(ctx, pool, fleet.Schema(o.fleetSchema))
			if err != nil {
				return err
			}
			store = f.Store()
			opts = append(opts, fleetOptions(f, o)...)
			if o.riverui {
				if jobs, err = riverUI(ctx, pool, o.fleetSchema, stderr); err != nil {
					return err
				}
			}
		} else {
			var popts []pgcheckpoint.Option
			if o.schema != "" {
				popts = append(popts, pgcheckpoint.Schema(o.schema))
			}
			s, err := pgcheckpoint.New(ctx, pool, popts...)
			if err != nil {
				return err
			}
			store = s
		}
	}
	h, err := view.New(store, opts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	var root http.Handler = h
	if jobs != nil {
		mux := http.NewServeMux()
		mux.Handle(riverPrefix+"/", h.Guard(jobs))
		mux.Handle(riverPrefix, h.Guard(jobs)) // riverui sends it on to riverPrefix+"/"
		mux.Handle("/", h)
		root = mux
	}
	srv := &http.Server{Handler: root, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "viewer: serving http://%s/\n", ln.Addr())
	if ready != nil {
		ready(ln.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-done
	return err
}

// riverUI returns riverui for the River jobs of the fleet in schema, its
// background work started until ctx is done, logging warnings to stderr.
func riverUI(ctx context.Context, pool *pgxpool.Pool, schema string, stderr io.Writer) (http.Handler, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// A client that inserts and reads only (no queues): the fleet's
	// workers run the jobs.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("riverui: %w", err)
	}
	h, err := riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(client, nil), Logger: log, Prefix: riverPrefix})
	if err != nil {
		return nil, fmt.Errorf("riverui: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return nil, fmt.Errorf("riverui: %w", err)
	}
	return h, nil
}

// jobLink is the link of a session's page to its job in riverui, relative
// to the viewer's root.
func jobLink(s fleet.Session) view.Link {
	text := fmt.Sprintf("job %d in riverui (%s", s.JobID, s.Job)
	if s.Attempt > 0 {
		text += fmt.Sprintf(", attempt %d", s.Attempt)
	}
	return view.Link{Label: "Job", Text: text + ")", URL: fmt.Sprintf("%s/jobs/%d", riverPrefix[1:], s.JobID)}
}

// extras tells what f knows of every session (see extra), in one query
// (fleet.Fleet.Sessions): the list's extras before view.ExtrasAfter,
// kept to compare with.
func extras(f *fleet.Fleet, jobs bool) func(ctx context.Context) (map[string]view.Extra, error) {
	return func(ctx context.Context) (map[string]view.Extra, error) {
		list, err := f.Sessions(ctx)
		if err != nil {
			return nil, err
		}
		m := make(map[string]view.Extra, len(list))
		for _, s := range list {
			m[s.Name] = extra(s, jobs)
		}
		return m, nil
	}
}

// extrasAfter tells what f knows of the sessions after a name, a page at
// a time (see extra), in one query each (fleet.Fleet.SessionsAfter), for
// the list: a page of it reads the pages its rows need, not every
// session.
func extrasAfter(f *fleet.Fleet, jobs bool) func(ctx context.Context, after string, limit int) ([]view.SessionExtra, error) {
	return func(ctx context.Context, after string, limit int) ([]view.SessionExtra, error) {
		list, err := f.SessionsAfter(ctx, after, limit)
		if err != nil {
			return nil, err
		}
		out := make([]view.SessionExtra, len(list))
		for i, s := range list {
			out[i] = view.SessionExtra{Session: s.Name, Extra: extra(s, jobs)}
		}
		return out, nil
	}
}

// extraOf tells what f knows of one session (see extra), in one query
// (fleet.Fleet.Session), for the session's page, its /live and its
// actions: they do not read every session's.
func extraOf(f *fleet.Fleet, jobs bool) func(ctx context.Context, session string) (view.Extra, error) {
	return func(ctx context.Context, session string) (view.Extra, error) {
		s, err := f.Session(ctx, session)
		if errors.Is(err, fleet.ErrUnknownSession) {
			return view.Extra{}, nil
		}
		if err != nil {
			return view.Extra{}, err
		}
		return extra(s, jobs), nil
	}
}

// extra is what the fleet tells of session s: holder, kind, answered,
// cancelled, the status of a session not started yet, the extension of a
// stop at the budget (its limits, who, when), the newest accepted answer,
// and with jobs the link to the session's job in riverui.
func extra(s fleet.Session, jobs bool) view.Extra {
	// Status lists a session not started yet (queued), which the store
	// has no checkpoint of.
	e := view.Extra{Holder: s.Holder, Kind: s.Kind, Answered: s.Answered, Status: string(s.Status), Cancelled: s.Cancelled}
	if x := s.Extension; x != nil { // the stop's extension, not resumed yet
		e.Extension = &view.ExtensionRecord{Generation: x.Generation, To: x.To, By: x.By, At: x.At}
	}
	if a := s.Answer; a != nil { // the newest accepted answer
		e.Answers = []view.AnswerRecord{{Generation: a.Generation, Question: a.Question, Iteration: a.Iteration,
			Answer: a.Text, By: a.By, At: a.At}}
	}
	if jobs && s.JobID != 0 {
		e.Links = []view.Link{jobLink(s)}
	}
	return e
}

// fleetExtends raises the budget of a fleet's sessions stopped or parked
// at their budget, once per stop, through fleet.Extend, which a worker
// then resumes under the raised limits: an extension of a stop extended already with other
// limits is refused with an error matching view.ErrExtended (the same one
// again is a no-op).
type fleetExtends struct{ *fleet.Fleet }

// ExtendBudget extends session's stop at its budget to the limits to, as
// by. The generation the page showed is checked by the viewer; the fleet
// extends the session's newest stop.
func (e fleetExtends) ExtendBudget(ctx context.Context, session string, _ uint64, to budget.Limits, by string) error {
	err := e.Extend(ctx, session, to, by)
	if errors.Is(err, fleet.ErrExtended) || errors.Is(err, fleet.ErrNotExhausted) {
		return fmt.Errorf("%w: %v", view.ErrExtended, err)
	}
	return err
}

// fleetAnswers answers a fleet's escalations once each, through
// fleet.Reply, which records who answered (view.AnswerOnce): a second
// answer, or one to a question that is no longer open, is refused with an
// error matching view.ErrAnswered.
type fleetAnswers struct{ *fleet.Fleet }

// AnswerOnce answers session's open question as by.
func (a fleetAnswers) AnswerOnce(ctx context.Context, session string, _ uint64, answer, by string) error {
	err := a.Reply(ctx, session, fleet.Answer{Text: answer, By: by})
	if errors.Is(err, fleet.ErrAnswered) || errors.Is(err, fleet.ErrQuestionChanged) || errors.Is(err, fleet.ErrNotEscalated) {
		return fmt.Errorf("%w: %v", view.ErrAnswered, err)
	}
	return err
}
