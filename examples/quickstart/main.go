// Command quickstart runs a small refinement loop end to end: a toy
// researcher answers three questions about an in-memory "codebase", one gap
// at a time, while the engine analyzes gaps, plans up to three parallel
// tasks per iteration, checks convergence and checkpoints every iteration.
//
//	go run ./examples/quickstart                   # run
//	go run ./examples/quickstart -resume           # continue after Ctrl+C
//	go run ./examples/quickstart -fresh            # discard it and start over
//	go run ./examples/quickstart -fork quickstart@1 # start again from generation 1
//
// Every generation of the session is kept, so a run can be forked from any
// of them: -fork SESSION@GEN starts the session SESSION-fork-GEN from
// generation GEN of SESSION, its state, history and counters as they were
// then, leaving SESSION as it is. The loop keeps its best state by
// coverage and prints it when it differs from the last.
//
// Flags:
//
//	-state DIR        checkpoint directory (default: refine-quickstart in the user's cache directory,
//	                  or refine-quickstart-UID in the temporary directory when that cannot be made)
//	-max-iterations N iteration limit (default 4)
//	-resume           continue the interrupted session
//	-allow-settings-change
//	                  with -resume: continue a session saved under other settings
//	                  (after -max-iterations 1, say, with a higher limit)
//	-fresh            discard an interrupted session and start over
//	-session NAME     the session to run or resume (default quickstart)
//	-fork SESSION@GEN start a new session from generation GEN of SESSION
//	-slow D           make every task take D, to try Ctrl+C (default 0)
//	-version          print the version and exit
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/examples/internal/buildinfo"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// codebase is what the researcher explores: file → facts it reveals.
var codebase = map[string][]string{
	"auth/login.go":      {"login issues a JWT"},
	"auth/jwt.go":        {"tokens are signed with HS256", "tokens expire after 1h"},
	"auth/middleware.go": {"middleware validates the token on every request"},
	"auth/refresh.go":    {"refresh tokens rotate on use"},
	"store/session.go":   {"sessions are kept in Redis"},
	"store/user.go":      {"users are stored in PostgreSQL"},
}

// questions are the critical questions and the fact that answers each.
var questions = []struct{ text, answer string }{
	{"How are tokens issued?", "login issues a JWT"},
	{"Where are tokens validated?", "middleware validates the token on every request"},
	{"How long do tokens live?", "tokens expire after 1h"},
}

// Notes is the loop's state: what has been read and learnt.
type Notes struct {
	Read  []string `json:"read"`
	Facts []string `json:"facts"`
}

type researcher struct{ slow time.Duration }

// Assess reports coverage, one finding per fact and the critical questions.
func (researcher) Assess(_ context.Context, n Notes) (gap.Assessment, error) {
	a := gap.Assessment{FilesAnalyzed: len(n.Read), EstimatedFiles: len(codebase)}
	for f := range codebase {
		if !slices.Contains(n.Read, f) {
			a.Missing = append(a.Missing, f)
		}
	}
	slices.Sort(a.Missing)
	for i, fact := range n.Facts {
		a.Findings = append(a.Findings, gap.Finding{ID: fmt.Sprintf("f%d", i+1), Description: fact,
			Confidence: 0.9, Citations: []string{fact}, Sources: []string{"explore", "citation"}})
	}
	for _, q := range questions {
		a.Questions = append(a.Questions, gap.Question{Text: q.text, Critical: true, Answered: slices.Contains(n.Facts, q.answer)})
	}
	return a, nil
}

// Work reads the files a task points at: the missing files for a coverage
// gap, or the file that answers a question.
func (r researcher) Work(ctx context.Context, _ Notes, t iterate.Task) (iterate.Outcome[Notes], error) {
	if r.slow > 0 {
		select {
		case <-time.After(r.slow):
		case <-ctx.Done():
			return iterate.Outcome[Notes]{}, ctx.Err()
		}
	}
	var part Notes
	read := func(f string) {
		part.Read = append(part.Read, f)
		part.Facts = append(part.Facts, codebase[f]...)
	}
	g := t.Gap()
	switch g.Kind {
	case gap.Coverage:
		for _, f := range g.Focus[:min(2, len(g.Focus))] {
			read(f)
		}
	case gap.UnansweredQuestion:
		for _, q := range questions {
			if q.text == g.Target {
				for f, facts := range codebase {
					if slices.Contains(facts, q.answer) {
						read(f)
					}
				}
			}
		}
	}
	return iterate.Outcome[Notes]{Part: part}, nil
}

// Integrate merges what the tasks found, in task order, without duplicates.
func (researcher) Integrate(_ context.Context, n Notes, outs []iterate.Outcome[Notes]) (Notes, error) {
	next := Notes{Read: slices.Clone(n.Read), Facts: slices.Clone(n.Facts)}
	for _, o := range outs {
		if o.Err != nil {
			continue
		}
		for _, f := range o.Part.Read {
			if !slices.Contains(next.Read, f) {
				next.Read = append(next.Read, f)
			}
		}
		for _, f := range o.Part.Facts {
			if !slices.Contains(next.Facts, f) {
				next.Facts = append(next.Facts, f)
			}
		}
	}
	return next, nil
}

func main() { os.Exit(cli(os.Args[1:], os.Stderr)) }

// cli parses the command line and runs the loop; it returns the exit code:
// 0 done, 1 failed, 2 usage error, 130 interrupted.
func cli(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "", "checkpoint `dir`ectory (default: refine-quickstart in the user's cache directory, or refine-quickstart-UID in the temporary directory when that cannot be made)")
	max := fs.Int("max-iterations", defaultMaxIterations, "iteration limit (0 = unlimited)")
	resume := fs.Bool("resume", false, "continue the interrupted session")
	allowChange := fs.Bool("allow-settings-change", false, "with -resume: continue a session saved under other settings (a higher -max-iterations, say)")
	fresh := fs.Bool("fresh", false, "discard an interrupted session and start over")
	session := fs.String("session", defaultSession, "the session to run or resume")
	fork := fs.String("fork", "", "start a new session from generation GEN of SESSION (`SESSION@GEN`)")
	slow := fs.Duration("slow", 0, "make every task take this long, to try Ctrl+C")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: quickstart [-resume [-allow-settings-change] | -fresh] [-fork SESSION@GEN] [-session NAME] [-state DIR] [-max-iterations N] [-slow D]\n       quickstart -version\n\n"+
			"Runs a small refinement loop that answers three questions about a toy codebase.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "quickstart: unexpected argument %q: quickstart takes flags only; run 'quickstart -help' for usage\n", fs.Arg(0))
		return 2
	}
	if *version {
		fmt.Fprintln(os.Stdout, buildinfo.Version("quickstart"))
		return 0
	}
	switch {
	case *max < 0:
		fmt.Fprintf(stderr, "quickstart: -max-iterations must be 0 (unlimited) or more, got %d; run 'quickstart -help' for usage\n", *max)
		return 2
	case *resume && *fresh:
		fmt.Fprintln(stderr, "quickstart: -resume continues the session and -fresh discards it: give one of them; run 'quickstart -help' for usage")
		return 2
	case *allowChange && !*resume:
		fmt.Fprintln(stderr, "quickstart: -allow-settings-change goes with -resume; run 'quickstart -help' for usage")
		return 2
	}
	if *state == "" {
		*state = defaultState()
	}
	var from *forkOf
	if *fork != "" {
		f, err := parseFork(*fork)
		if err != nil || *resume {
			if err == nil {
				err = errors.New("-fork starts a new session; it does not go with -resume")
			}
			fmt.Fprintf(stderr, "quickstart: -fork %s: %v\n", *fork, err)
			return 2
		}
		from = f
		*session = f.session + "-fork-" + strconv.FormatUint(f.gen, 10)
	}
	return runSession(*state, *session, *max, *resume, *fresh, from, *slow, *allowChange)
}

// defaultState is the default checkpoint directory: refine-quickstart in
// the user's cache directory, so that two users of one machine never share
// (nor are refused) it. When that directory cannot be made (no cache
// directory, or one under a HOME that does not exist, as for a system
// account), refine-quickstart-UID in the temporary directory, named after
// the user's id for the same reason.
func defaultState() string {
	if dir, err := os.UserCacheDir(); err == nil {
		d := filepath.Join(dir, "refine-quickstart")
		if err := os.MkdirAll(d, 0o700); err == nil {
			return d
		}
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("refine-quickstart-%d", os.Getuid()))
}

// defaultSession is the session the quickstart runs.
const defaultSession = "quickstart"

// defaultMaxIterations is the iteration limit without -max-iterations.
const defaultMaxIterations = 4

// forkOf is the generation a -fork starts from.
type forkOf struct {
	session string
	gen     uint64
}

// parseFork reads SESSION@GEN.
func parseFork(s string) (*forkOf, error) {
	session, gen, ok := strings.Cut(s, "@")
	if !ok || session == "" {
		return nil, errors.New("want SESSION@GEN, e.g. quickstart@1")
	}
	n, err := strconv.ParseUint(gen, 10, 64)
	if err != nil || n == 0 {
		return nil, fmt.Errorf("generation %q: want a number above 0", gen)
	}
	return &forkOf{session: session, gen: n}, nil
}

func run(state string, max int, resume, fresh bool, slow time.Duration) int {
	return runSession(state, defaultSession, max, resume, fresh, nil, slow, false)
}

// runSession runs session, resumes it (under changed settings when
// allowChange), or starts it as a fork of from; fresh discards the session
// first.
func runSession(state, session string, max int, resume, fresh bool, from *forkOf, slow time.Duration, allowChange bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Printf("Checkpoints of session %s in %s\n", session, state)

	// Every generation is kept (the loop is short), so that any can be
	// forked.
	store := checkpoint.NewDir(state, checkpoint.KeepAll())
	if fresh {
		if err := store.Remove(ctx, session); err != nil {
			fmt.Fprintln(os.Stderr, "quickstart:", err)
			return 1
		}
	}
	// A start over an interrupted session is refused (RefuseResumable),
	// not made at the cost of its progress: -resume continues it, -fresh
	// discards it.
	eng := iterate.New(researcher{slow: slow},
		iterate.WithMaxIterations(max),
		iterate.WithCheckpointer(store, iterate.RefuseResumable),
		iterate.WithSession(session),
		iterate.WithKeepBest(iterate.ByMetric("coverage")),
		iterate.WithObserver(iterate.Progress(os.Stdout)),
		iterate.WithObserver(plans),
	)
	var res *iterate.Result[Notes]
	var err error
	var resumable *iterate.ResumableError
	var changed *iterate.SettingsChangedError
	switch {
	case from != nil:
		fmt.Printf("Forking generation %d of session %s as session %s\n", from.gen, from.session, session)
		res, err = eng.Resume(ctx, iterate.ForkFrom(from.session, from.gen))
	case resume && allowChange:
		res, err = eng.Resume(ctx, iterate.AllowSettingsChange())
	case resume:
		res, err = eng.Resume(ctx)
	default:
		res, err = eng.Run(ctx, Notes{})
	}
	switch {
	case errors.As(err, &resumable):
		fmt.Fprintf(os.Stderr, "quickstart: an interrupted session is saved in %s (%d iterations done); not starting over it.\n"+
			"Resume with: go run ./examples/quickstart -resume%s%s\nor start over with: go run ./examples/quickstart -fresh%s%s\n",
			state, resumable.Checkpoint.Iteration, sessionFlag(session), stateFlag(state), sessionFlag(session), stateFlag(state))
		return 1
	case errors.As(err, &changed):
		fmt.Fprintf(os.Stderr, "quickstart: session %s was saved under other settings: %s.\n", session, strings.Join(changed.Changes, ", "))
		if c, lerr := store.Load(ctx, session); lerr == nil && iterate.Status(c.Status).Final() {
			// A session that has stopped (at its iteration limit, say) is
			// not resumed: a fork of its last generation goes on under
			// these settings.
			fmt.Fprintf(os.Stderr, "It has stopped (%s); go on from its last generation under these settings with:\n"+
				"go run ./examples/quickstart -fork %s@%d%s%s\n", c.Status, session, c.Generation, maxFlag(max), stateFlag(state))
		} else {
			fmt.Fprintf(os.Stderr, "Resume it under these settings with: go run ./examples/quickstart -resume -allow-settings-change%s%s%s\n",
				maxFlag(max), sessionFlag(session), stateFlag(state))
		}
		return 1
	case errors.Is(err, iterate.ErrInterrupted):
		fmt.Println("Resume with: go run ./examples/quickstart -resume" + sessionFlag(session) + stateFlag(state))
		return 130
	case errors.Is(err, checkpoint.ErrVersion):
		// Checkpoints of another version of refine: the engine never starts
		// over them (they may be good), so say how to.
		fmt.Fprintf(os.Stderr, "quickstart: %v\nThe checkpoints in %s were written by another version; remove that directory (or pass -state) to start afresh.\n", err, state)
		return 1
	case err != nil && res == nil:
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		return 1
	}
	fmt.Printf("\nStatus: %s after %d iterations\nReason: %s\n", res.Status, res.Iterations, res.Reason)
	fmt.Printf("Read %d of %d files; learnt:\n", len(res.State.Read), len(codebase))
	for _, f := range res.State.Facts {
		fmt.Println("  -", f)
	}
	printBest(os.Stdout, res)
	fmt.Printf("Go back to any generation with: go run ./examples/quickstart -fork %s@GEN%s\n", session, stateFlag(state))
	if res.Status == iterate.MaxIterations {
		next := 2 * max
		if next < defaultMaxIterations {
			next = defaultMaxIterations
		}
		if c, lerr := store.Load(ctx, session); lerr == nil {
			fmt.Printf("Go on from here with more iterations: go run ./examples/quickstart -fork %s@%d%s%s\n", session, c.Generation, maxFlag(next), stateFlag(state))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		return 1
	}
	return 0
}

// plans prints what each iteration sets out to do.
func plans(e iterate.Event) {
	p, ok := e.(iterate.Planned)
	if !ok {
		return
	}
	var parts []string
	for _, t := range p.Plan.Tasks {
		parts = append(parts, fmt.Sprintf("%s (%s)", t.Role, t.Gap()))
	}
	fmt.Printf("           plan: %s, %d task(s): %s\n", p.Plan.Action, len(p.Plan.Tasks), strings.Join(parts, "; "))
}

// printBest prints the best state the loop saw, when it is not the last.
func printBest(w io.Writer, res *iterate.Result[Notes]) {
	b := res.Best
	if b == nil || (slices.Equal(b.State.Read, res.State.Read) && slices.Equal(b.State.Facts, res.State.Facts)) {
		return
	}
	fmt.Fprintf(w, "Best (not the last): after iteration %d, coverage %.2f; it read %d files and learnt:\n",
		b.Iteration, b.Score, len(b.State.Read))
	for _, f := range b.State.Facts {
		fmt.Fprintln(w, "  -", f)
	}
}

// sessionFlag returns the -session flag that names session, "" for the
// default.
func sessionFlag(session string) string {
	if session == defaultSession {
		return ""
	}
	return " -session " + session
}

// maxFlag returns the -max-iterations flag that names max, "" for the
// default.
func maxFlag(max int) string {
	if max == defaultMaxIterations {
		return ""
	}
	return " -max-iterations " + strconv.Itoa(max)
}

// stateFlag returns the -state flag that names state, "" for the default.
func stateFlag(state string) string {
	if state == defaultState() {
		return ""
	}
	return " -state " + state
}
