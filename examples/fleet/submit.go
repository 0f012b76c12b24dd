package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

func submit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	var c common
	c.register(fs)
	count := fs.Int("count", 0, "submit this many synthetic sessions, named <prefix>-001, <prefix>-002, ...")
	file := fs.String("file", "", `submit one research session per non-empty line of this file ("-": standard input), named q-<words>-<hash>`)
	prefix := fs.String("prefix", "synthetic", "name prefix of the --count sessions")
	iterations := fs.Int("iterations", 6, "iterations of each synthetic session's loop")
	taskMS := fs.Int("task-ms", 20, "milliseconds each synthetic task takes")
	escalateAt := fs.Int("escalate-at", 0, "synthetic sessions ask a question after this many iterations (0: never)")
	root := fs.String("root", "", "research: the Go source tree the workers read (default: the workers' $(go env GOROOT)/src)")
	maxIter := fs.Int("max-iterations", 0, "research: iteration limit (default: the research example's)")
	if err := parse(fs, args, stderr, 0); err != nil {
		return err
	}
	if (*count > 0) == (*file != "") {
		fmt.Fprintln(stderr, "fleet submit: give either --count N or --file FILE")
		return errUsage
	}
	if *iterations < 1 || *taskMS < 0 || *escalateAt < 0 || *maxIter < 0 {
		return errors.New("--iterations must be at least 1; --task-ms, --escalate-at and --max-iterations not negative")
	}
	var questions []string
	if *file != "" {
		var err error
		if questions, err = readQuestions(*file); err != nil {
			return err
		}
	}
	h, err := c.open(ctx, 4, false)
	if err != nil {
		return err
	}
	defer h.close()
	// One transaction: all the sessions are submitted, or none.
	added, known := 0, 0
	err = pgx.BeginFunc(ctx, h.pool, func(tx pgx.Tx) error {
		added, known = 0, 0
		note := func(oks []bool) {
			for _, ok := range oks {
				if ok {
					added++
				} else {
					known++
				}
			}
		}
		var synth []fleet.Submission[syntheticArgs]
		for i := 1; i <= *count; i++ {
			name := fmt.Sprintf("%s-%03d", *prefix, i)
			synth = append(synth, fleet.Submission[syntheticArgs]{Session: name,
				Args: syntheticArgs{Name: name, Iterations: *iterations, TaskMillis: *taskMS, EscalateAt: *escalateAt}})
		}
		var research []fleet.Submission[researchArgs]
		for _, q := range questions {
			research = append(research, fleet.Submission[researchArgs]{Session: questionSession(q), Args: researchQuestion(q, *root, *maxIter)})
		}
		oks, err := h.synthetic.SubmitManyTx(ctx, tx, synth)
		if err != nil {
			return err
		}
		note(oks)
		oks, err = h.research.SubmitManyTx(ctx, tx, research)
		if err != nil {
			return err
		}
		note(oks)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fleet submit: %d sessions enqueued, %d already known\n", added, known)
	return nil
}

// readQuestions reads the non-empty lines of name ("-": standard input).
func readQuestions(name string) ([]string, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if q := strings.TrimSpace(sc.Text()); q != "" {
			out = append(out, q)
		}
	}
	return out, sc.Err()
}

// questionSession names the session of a question: "q-", its first words
// in lower case, and a hash of the whole question, so that the same
// question is the same session.
func questionSession(q string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(q) {
		if b.Len() >= 40 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.TrimRight(b.String(), "-")
	if slug == "" {
		return "q-" + hash(q)[:10]
	}
	return "q-" + slug + "-" + hash(q)[:10]
}

// row is one session in fleet status.
type row struct {
	Session   string    `json:"session"`
	Kind      string    `json:"kind"`
	Status    string    `json:"status"` // the newest checkpoint's; queued before the first; cancelled
	Iteration int       `json:"iteration"`
	Holder    string    `json:"holder,omitempty"`
	Updated   time.Time `json:"updated,omitzero"`
	Age       string    `json:"age,omitempty"` // since the newest checkpoint
	Job       string    `json:"job,omitempty"` // River's state of the session's job
	Attempt   int       `json:"attempt,omitempty"`
	Question  string    `json:"question,omitempty"` // of an open escalation
	Answered  bool      `json:"answered,omitempty"`
	// Answer, AnsweredBy and AnsweredAt are the newest accepted answer's.
	Answer     string    `json:"answer,omitempty"`
	AnsweredBy string    `json:"answered_by,omitempty"`
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	LastError  string    `json:"last_error,omitempty"` // the job's newest error
}

func status(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	var c common
	c.register(fs)
	asJSON := fs.Bool("json", false, "print JSON (an array of sessions)")
	if err := parse(fs, args, stderr, 0); err != nil {
		return err
	}
	h, err := c.open(ctx, 4, false)
	if err != nil {
		return err
	}
	defer h.close()
	list, err := h.fleet.Sessions(ctx)
	if err != nil {
		return err
	}
	rows := make([]row, 0, len(list))
	for _, s := range list {
		r := row{Session: s.Name, Kind: s.Kind, Status: string(s.Status), Iteration: s.Iteration, Holder: s.Holder,
			Updated: s.Saved, Job: s.Job, Attempt: s.Attempt, Question: s.Question, Answered: s.Answered,
			LastError: s.LastError}
		if s.Answer != nil {
			r.Answer, r.AnsweredBy, r.AnsweredAt = s.Answer.Text, s.Answer.By, s.Answer.At
		}
		if !s.Saved.IsZero() {
			r.Age = s.Age.Round(time.Second).String()
		}
		rows = append(rows, r)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tKIND\tSTATUS\tITERATION\tHOLDER\tAGE\tJOB\tQUESTION")
	counts := map[string]int{}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Session, r.Kind, r.Status, r.Iteration,
			dash(r.Holder), dash(r.Age), r.Job, dash(r.Question))
		counts[r.Status]++
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d sessions", len(rows))
	for _, st := range []iterate.Status{iterate.Converged, iterate.Running, iterate.Interrupted, iterate.Escalated, fleet.Queued, fleet.Cancelled, iterate.Failed} {
		if counts[string(st)] > 0 {
			fmt.Fprintf(stdout, ", %d %s", counts[string(st)], st)
		}
	}
	fmt.Fprintln(stdout)
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func answer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var by string
	flags := func(fs *flag.FlagSet) {
		fs.StringVar(&by, "by", "", "who answers, recorded with the answer (default this process's holder name)")
	}
	return onSessionFlags(ctx, "answer", args, stderr, 2, flags, func(h *host, args []string) error {
		if err := h.fleet.Reply(ctx, args[0], fleet.Answer{Text: args[1], By: by}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "fleet answer: session %s answered; a worker resumes it\n", args[0])
		return nil
	})
}

func retry(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return onSession(ctx, "retry", args, stderr, 1, func(h *host, args []string) error {
		if err := h.fleet.Retry(ctx, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "fleet retry: session %s queued again\n", args[0])
		return nil
	})
}

func cancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return onSession(ctx, "cancel", args, stderr, 1, func(h *host, args []string) error {
		if err := h.fleet.Cancel(ctx, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "fleet cancel: session %s cancelled; it stops at its next safe point\n", args[0])
		return nil
	})
}

// onSession runs a command that acts on one session: it parses the common
// flags and want positional arguments (the session first), opens the fleet
// and calls do with the arguments.
func onSession(ctx context.Context, name string, args []string, stderr io.Writer, want int, do func(h *host, args []string) error) error {
	return onSessionFlags(ctx, name, args, stderr, want, nil, do)
}

// onSessionFlags is onSession with the command's own flags, registered by
// flags.
func onSessionFlags(ctx context.Context, name string, args []string, stderr io.Writer, want int,
	flags func(*flag.FlagSet), do func(h *host, args []string) error) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var c common
	c.register(fs)
	if flags != nil {
		flags(fs)
	}
	if err := parse(fs, args, stderr, want); err != nil {
		return err
	}
	h, err := c.open(ctx, 4, false)
	if err != nil {
		return err
	}
	defer h.close()
	return do(h, fs.Args())
}
