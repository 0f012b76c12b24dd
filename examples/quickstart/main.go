// Command quickstart runs a small refinement loop end to end: a toy
// researcher answers three questions about an in-memory "codebase", one gap
// at a time, while the engine analyzes gaps, plans up to three parallel
// tasks per iteration, checks convergence and checkpoints every iteration.
//
//	go run ./examples/quickstart            # run
//	go run ./examples/quickstart -resume    # continue after Ctrl+C
//	go run ./examples/quickstart -fresh     # discard it and start over
//
// Flags:
//
//	-state DIR        checkpoint directory (default: refine-quickstart in the user's cache directory)
//	-max-iterations N iteration limit (default 4)
//	-resume           continue the interrupted session
//	-fresh            discard an interrupted session and start over
//	-slow D           make every task take D, to try Ctrl+C (default 0)
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
	"strings"
	"syscall"
	"time"

	"github.com/refine-go/refine/checkpoint"
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
	state := fs.String("state", defaultState(), "checkpoint `dir`ectory")
	max := fs.Int("max-iterations", 4, "iteration limit (0 = unlimited)")
	resume := fs.Bool("resume", false, "continue the interrupted session")
	fresh := fs.Bool("fresh", false, "discard an interrupted session and start over")
	slow := fs.Duration("slow", 0, "make every task take this long, to try Ctrl+C")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: quickstart [-resume | -fresh] [-state DIR] [-max-iterations N] [-slow D]\n\n"+
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
	switch {
	case *max < 0:
		fmt.Fprintf(stderr, "quickstart: -max-iterations must be 0 (unlimited) or more, got %d; run 'quickstart -help' for usage\n", *max)
		return 2
	case *resume && *fresh:
		fmt.Fprintln(stderr, "quickstart: -resume continues the session and -fresh discards it: give one of them; run 'quickstart -help' for usage")
		return 2
	}
	return run(*state, *max, *resume, *fresh, *slow)
}

// defaultState is the default checkpoint directory: refine-quickstart in
// the user's cache directory, so that two users of one machine never share
// (nor are refused) it; in the temporary directory, named after the user's
// id, when there is no cache directory.
func defaultState() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "refine-quickstart")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("refine-quickstart-%d", os.Getuid()))
}

func run(state string, max int, resume, fresh bool, slow time.Duration) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store := checkpoint.NewDir(state)
	if fresh {
		if err := store.Remove(ctx, "quickstart"); err != nil {
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
		iterate.WithSession("quickstart"),
		iterate.WithObserver(iterate.Progress(os.Stdout)),
		iterate.WithObserver(plans),
	)
	var res *iterate.Result[Notes]
	var err error
	var resumable *iterate.ResumableError
	if resume {
		res, err = eng.Resume(ctx)
	} else {
		res, err = eng.Run(ctx, Notes{})
	}
	switch {
	case errors.As(err, &resumable):
		fmt.Fprintf(os.Stderr, "quickstart: an interrupted session is saved in %s (%d iterations done); not starting over it.\n"+
			"Resume with: go run ./examples/quickstart -resume%s\nor start over with: go run ./examples/quickstart -fresh%s\n",
			state, resumable.Checkpoint.Iteration, stateFlag(state), stateFlag(state))
		return 1
	case errors.Is(err, iterate.ErrInterrupted):
		fmt.Println("Resume with: go run ./examples/quickstart -resume" + stateFlag(state))
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

// stateFlag returns the -state flag that names state, "" for the default.
func stateFlag(state string) string {
	if state == defaultState() {
		return ""
	}
	return " -state " + state
}
