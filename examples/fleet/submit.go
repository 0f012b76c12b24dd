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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

func submit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	var c common
	c.register(fs)
	count := fs.Int("count", 0, "enqueue this many synthetic sessions, named <prefix>-001, <prefix>-002, ...")
	file := fs.String("file", "", `enqueue one session per non-empty line of this file ("-": standard input), named q-<words>-<hash>`)
	prefix := fs.String("prefix", "synthetic", "name prefix of the --count sessions")
	iterations := fs.Int("iterations", 6, "iterations of each session's loop")
	taskMS := fs.Int("task-ms", 20, "milliseconds each task takes")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if (*count > 0) == (*file != "") {
		fmt.Fprintln(stderr, "fleet submit: give either --count N or --file FILE")
		return errUsage
	}
	if *iterations < 1 || *taskMS < 0 {
		return errors.New("--iterations must be at least 1 and --task-ms not negative")
	}
	var specs []spec
	if *count > 0 {
		for i := 1; i <= *count; i++ {
			specs = append(specs, spec{Session: fmt.Sprintf("%s-%03d", *prefix, i)})
		}
	} else {
		qs, err := readQuestions(*file)
		if err != nil {
			return err
		}
		for _, q := range qs {
			specs = append(specs, spec{Session: questionSession(q), Question: q})
		}
	}
	for i := range specs {
		specs[i].Iterations, specs[i].TaskMillis = *iterations, *taskMS
		if err := checkpoint.ValidateSession(specs[i].Session); err != nil {
			return fmt.Errorf("session %q: %w", specs[i].Session, err)
		}
	}
	pool, store, err := c.open(ctx, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer store.Close()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: c.schema})
	if err != nil {
		return err
	}
	params := make([]river.InsertManyParams, len(specs))
	for i := range specs {
		params[i] = river.InsertManyParams{Args: specs[i]}
	}
	res, err := client.InsertMany(ctx, params)
	if err != nil {
		return err
	}
	added := 0
	for _, r := range res {
		if !r.UniqueSkippedAsDuplicate {
			added++
		}
	}
	fmt.Fprintf(stdout, "fleet submit: %d sessions enqueued, %d already known\n", added, len(res)-added)
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
	Status    string    `json:"status"` // the checkpoint's, or the job's when none: queued, retrying, ...
	Iteration int       `json:"iteration"`
	Holder    string    `json:"holder,omitempty"`
	Updated   time.Time `json:"updated,omitzero"`
	Age       string    `json:"age,omitempty"` // since the last checkpoint
	Job       string    `json:"job,omitempty"` // River's state of the session's job
	Attempt   int       `json:"attempt,omitempty"`
}

func status(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	var c common
	c.register(fs)
	asJSON := fs.Bool("json", false, "print JSON (an array of sessions)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	pool, store, err := c.open(ctx, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer store.Close()
	rows, err := listSessions(ctx, store, pool, c.schema)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []row{}
		}
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATUS\tITERATION\tHOLDER\tAGE\tJOB")
	counts := map[string]int{}
	for _, r := range rows {
		holder := r.Holder
		if holder == "" {
			holder = "-"
		}
		age := r.Age
		if age == "" {
			age = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Session, r.Status, r.Iteration, holder, age, r.Job)
		counts[r.Status]++
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d sessions", len(rows))
	for _, st := range []string{"converged", "running", "interrupted", "queued"} {
		if counts[st] > 0 {
			fmt.Fprintf(stdout, ", %d %s", counts[st], st)
		}
	}
	fmt.Fprintln(stdout)
	return nil
}

// listSessions joins the store's sessions with River's jobs of kind
// refine_session, by session name: a session not started yet shows its
// job's state.
func listSessions(ctx context.Context, store *pgcheckpoint.Store, pool *pgxpool.Pool, schema string) ([]row, error) {
	sessions, err := store.Status(ctx)
	if err != nil {
		return nil, err
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema})
	if err != nil {
		return nil, err
	}
	jobs := map[string]*rivertype.JobRow{}
	params := river.NewJobListParams().Kinds(jobKind).First(1000)
	for {
		res, err := client.JobList(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("listing jobs: %w", err)
		}
		for _, j := range res.Jobs {
			var sp spec
			if json.Unmarshal(j.EncodedArgs, &sp) == nil {
				jobs[sp.Session] = j
			}
		}
		if len(res.Jobs) < 1000 || res.LastCursor == nil {
			break
		}
		params = params.After(res.LastCursor)
	}
	now := time.Now()
	var rows []row
	for _, s := range sessions {
		r := row{Session: s.Name, Status: s.Status, Iteration: s.Iteration, Holder: s.Holder, Updated: s.Updated}
		if !s.Updated.IsZero() {
			r.Age = now.Sub(s.Updated).Round(time.Second).String()
		}
		if r.Status == "" {
			r.Status = "starting"
		}
		if j := jobs[s.Name]; j != nil {
			r.Job, r.Attempt = string(j.State), j.Attempt
			delete(jobs, s.Name)
		}
		rows = append(rows, r)
	}
	for name, j := range jobs {
		rows = append(rows, row{Session: name, Status: "queued", Job: string(j.State), Attempt: j.Attempt})
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.Session, b.Session) })
	return rows, nil
}
