package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// session is what inspect shows of one session: its newest readable
// generation, decoded, and what is damaged.
type session struct {
	path   string                 // the generation file shown
	c      *checkpoint.Checkpoint // its envelope and engine record (State dropped)
	report *iterate.Report
	damage []string // what is damaged, newest first
}

// maxFile bounds a generation file read whole (the format's own limit).
const maxFile = 1<<30 + 64

// readSession reads the newest generation of the session in dir that
// decodes whole (checksum, envelope and engine record), read-only: unlike
// checkpoint.Dir's Load it quarantines nothing and takes no lock. The file
// names are the ones checkpoint.Dir documents: "<session>.<generation as 20
// digits>.ckpt", and ".corrupt" appended to a quarantined one.
func readSession(ctx context.Context, dir, name string) (*session, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var gens []uint64
	var quarantined []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), name+".")
		if !ok || len(rest) < 20+len(".ckpt") || !allDigits(rest[:20]) || !strings.HasPrefix(rest[20:], ".ckpt") {
			continue
		}
		gen, err := strconv.ParseUint(rest[:20], 10, 64)
		if err != nil {
			continue
		}
		switch tail := rest[20+len(".ckpt"):]; {
		case tail == "":
			gens = append(gens, gen)
		case strings.HasPrefix(tail, ".corrupt"):
			quarantined = append(quarantined, e.Name())
		}
	}
	slices.Sort(gens)
	slices.Reverse(gens)
	s := &session{}
	for _, gen := range gens {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, fmt.Sprintf("%s.%020d.ckpt", name, gen))
		c, err := readGeneration(path, name)
		var ve *checkpoint.VersionError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // pruned by the running loop since the listing
		case errors.As(err, &ve):
			return nil, fmt.Errorf("session %q: generation %d (%s): %w; a newer inspector may read it", name, gen, path, err)
		case err != nil && !errors.Is(err, checkpoint.ErrCorrupt):
			return nil, fmt.Errorf("session %q: generation %d: %w", name, gen, err)
		case err != nil:
			s.damage = append(s.damage, fmt.Sprintf("generation %d (%s) is damaged: %v", gen, path, err))
			continue
		}
		r, err := iterate.Inspect(c)
		if err != nil {
			s.damage = append(s.damage, fmt.Sprintf("generation %d (%s) is damaged: %v", gen, path, err))
			continue
		}
		s.path, s.c, s.report = path, c, r
		break
	}
	for _, q := range quarantined {
		s.damage = append(s.damage, fmt.Sprintf("%s was found damaged by an earlier resume and quarantined", filepath.Join(dir, q)))
	}
	switch {
	case s.c != nil:
		if len(s.damage) > 0 {
			s.damage = append(s.damage, fmt.Sprintf("showing generation %d, the newest readable", s.c.Generation))
		}
		return s, nil
	case len(s.damage) > 0:
		return nil, fmt.Errorf("session %q has no readable generation:\n  %s", name, strings.Join(s.damage, "\n  "))
	}
	var known []string
	for c := range checkpoint.NewDir(dir).Sessions(ctx) {
		if c != nil {
			known = append(known, c.Session)
		}
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("session %q not found: %s holds no sessions", name, dir)
	}
	return nil, fmt.Errorf("session %q not found in %s (its sessions: %s)", name, dir, strings.Join(known, ", "))
}

// readGeneration reads and decodes the generation file at path, checking
// its session; the state is dropped.
func readGeneration(path, session string) (*checkpoint.Checkpoint, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxFile {
		return nil, &checkpoint.CorruptError{Err: fmt.Errorf("%d bytes, above the format's limit", fi.Size())}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := checkpoint.Unmarshal(data)
	if err != nil {
		return nil, err
	}
	if c.Session != session {
		return nil, &checkpoint.CorruptError{Err: fmt.Errorf("records session %q, not %q", c.Session, session)}
	}
	c.State = nil
	return c, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// writeSession prints the session's history as text, with sparklines of
// the metrics (the default ones when none is named) when spark is set.
func writeSession(w io.Writer, s *session, spark bool, metrics []string) error {
	c, r := s.c, s.report
	fmt.Fprintf(w, "Session      %s (generation %d, %s)\n", c.Session, c.Generation, s.path)
	fmt.Fprintf(w, "Status       %s after %s\n", c.Status, plural(c.Iteration, "iteration"))
	fmt.Fprintf(w, "Started      %s\n", stamp(r.StartedAt))
	fmt.Fprintf(w, "Updated      %s (last iteration ended %s)\n", stamp(c.Time), stamp(r.LastIterationAt))
	fmt.Fprintf(w, "Elapsed      %s in iterations\n", round(r.Elapsed))
	fmt.Fprintf(w, "Fingerprint  %s\n", dash(c.Fingerprint))
	if f := forkedFrom(c); f != "" {
		fmt.Fprintf(w, "Forked from  %s\n", f)
	}
	if c.BestGeneration != 0 {
		fmt.Fprintf(w, "Best state   generation %d\n", c.BestGeneration)
	}
	if q := question(s); q != "" {
		fmt.Fprintf(w, "Question     %s\n", oneLine(q))
	}
	fmt.Fprintln(w)

	recs := r.History.Recent
	if len(recs) > 0 && recs[0].Iteration > 0 {
		fmt.Fprintf(w, "(iterations 0 to %d are not kept: the history keeps the latest %d)\n", recs[0].Iteration-1, len(recs))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ITER\tACTION\tTASKS (FAILED)\tTOKENS\tCOVERAGE\tCONFIDENCE\tCONFLICTS\tGAPS\tTIME\t")
	measured := measures(recs)
	var failures []string
	for _, rec := range recs {
		action, tasks, tokens, took := "-", "-", "-", "-"
		if rec.Iteration > 0 {
			action = dash(rec.Action)
			if rec.Failed {
				action += " FAILED"
			}
			tasks = fmt.Sprintf("%d (%d)", rec.Tasks, rec.FailedTasks)
			tokens = strconv.FormatInt(rec.Tokens, 10)
			took = round(rec.Duration).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t\n", rec.Iteration, action, tasks, tokens,
			measured.coverage(rec.Coverage), measured.confidence(rec.Confidence), rec.Conflicts, rec.Gaps, took)
		for _, t := range rec.TaskRuns {
			if t.Err != "" {
				failures = append(failures, fmt.Sprintf("  iteration %d, %s: %s", rec.Iteration, dash(t.Role), oneLine(t.Err)))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(failures) > 0 {
		fmt.Fprintln(w, "Failed tasks (the outputs: --html):")
		for _, f := range failures {
			fmt.Fprintln(w, f)
		}
	}
	fmt.Fprintf(w, "Tokens       %d in all (per iteration above); %s over %d tasks, %d failed\n",
		r.Usage.Tokens, plural(r.Totals.Iterations, "iteration"), r.Totals.Tasks, r.Totals.FailedTasks)
	if spark && len(recs) > 0 {
		fmt.Fprintln(w)
		ms := seriesOf(r, metrics)
		width := 12
		for _, m := range ms {
			width = max(width, utf8.RuneCountInString(m.name))
		}
		for _, m := range ms {
			fmt.Fprintf(w, "%-*s %s  %s\n", width, title(m.name), m.spark(), m.trend())
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Budget")
	for _, b := range budgetLines(r) {
		fmt.Fprintf(w, "  %-11s %s\n", b.name, b.text)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Stop         %s\n", stopLine(c))
	fmt.Fprintf(w, "Reason       %s\n", dash(oneLine(c.Reason)))
	for _, u := range r.Decision.Unmet() {
		fmt.Fprintf(w, "Unmet        %s\n", u)
	}
	if n := len(r.History.Gaps); n > 0 {
		fmt.Fprintf(w, "Open gaps    %d\n", n)
	}
	for _, d := range s.damage {
		fmt.Fprintf(w, "Damage       %s\n", d)
	}
	return nil
}

// question returns the session's open question, if any.
func question(s *session) string {
	if s.c.Question != "" {
		return s.c.Question
	}
	if e := s.report.Escalation; e != nil && iterate.Status(s.c.Status) == iterate.Escalated {
		return e.Question
	}
	return ""
}

// stopLine says whether and how the session stopped.
func stopLine(c *checkpoint.Checkpoint) string {
	st := iterate.Status(c.Status)
	switch {
	case st.Success():
		return string(st) + " (success)"
	case st.Final():
		return string(st) + " (stopped for good)"
	case st == iterate.Running:
		return "running: not stopped (a loop is running, or died without a final checkpoint)"
	default:
		return string(st) + " (not final: a resume continues)"
	}
}

// sparks are the eight levels of a sparkline.
var sparks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws ratios in [0, 1] (clamped) as one character each, on an
// absolute scale so that lines of different metrics compare.
func sparkline(v []float64) string {
	var b strings.Builder
	for _, x := range v {
		x = min(max(x, 0), 1)
		b.WriteRune(sparks[int(x*float64(len(sparks)-1)+0.5)])
	}
	return b.String()
}

// budgetLine is one resource spent against its limit.
type budgetLine struct {
	name         string
	spent, limit float64 // limit 0: none
	text         string
}

// budgetLines lists every resource with what was spent and its limit.
func budgetLines(r *iterate.Report) []budgetLine {
	u, l := r.Usage, r.Limits
	iterLimit := iterationLimit(r)
	mk := func(name string, spent, limit float64, format func(float64) string) budgetLine {
		text := format(spent) + " (no limit)"
		if limit > 0 {
			text = fmt.Sprintf("%s of %s (%.0f%%)", format(spent), format(limit), 100*spent/limit)
		}
		return budgetLine{name, spent, limit, text}
	}
	count := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	iterations := mk("iterations", float64(r.Totals.Iterations), float64(iterLimit), count)
	if n := r.Totals.Iterations; n > iterLimit && iterLimit > 0 && iterLimit == r.History.MaxIterations {
		// Each answer to an escalation grants the loop as many iterations
		// again (iterate.WithAnswer), and the record keeps the limit it
		// started under: no share of the iterations run, and no overrun.
		iterations = budgetLine{name: "iterations", spent: float64(n),
			text: fmt.Sprintf("%d (limit %d, raised by answers)", n, iterLimit)}
	}
	return []budgetLine{
		iterations,
		mk("tokens", float64(u.Tokens), float64(l.Tokens), count),
		mk("cost", u.Cost, l.Cost, func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }),
		mk("calls", float64(u.Calls), float64(l.Calls), count),
		mk("wall time", float64(max(u.Wall, r.Elapsed)), float64(l.Wall), func(v float64) string { return round(time.Duration(v)).String() }),
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// round rounds d for display.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// sessionJSON is what --json prints of a session.
type sessionJSON struct {
	Session         string               `json:"session"`
	Generation      uint64               `json:"generation"`
	File            string               `json:"file"`
	Status          string               `json:"status"`
	Reason          string               `json:"reason,omitempty"`
	Iteration       int                  `json:"iteration"`
	Time            time.Time            `json:"time"`
	Question        string               `json:"question,omitempty"`
	Fingerprint     string               `json:"fingerprint,omitempty"`
	ForkedFrom      string               `json:"forked_from,omitempty"`
	BestGeneration  uint64               `json:"best_generation,omitempty"`
	StartedAt       time.Time            `json:"started_at,omitzero"`
	LastIterationAt time.Time            `json:"last_iteration_at,omitzero"`
	ElapsedSeconds  float64              `json:"elapsed_seconds"`
	Usage           budget.Usage         `json:"usage"`
	Limits          budget.Limits        `json:"limits"`
	Totals          totalsJSON           `json:"totals"`
	Thresholds      thresholdsJSON       `json:"thresholds"`
	History         []converge.Record    `json:"history"`
	Unmet           []string             `json:"unmet,omitempty"`
	Escalation      *iterate.Escalation  `json:"escalation,omitempty"`
	OpenGaps        int                  `json:"open_gaps"`
	Settings        map[string]string    `json:"settings"`
	Damage          []string             `json:"damage,omitempty"`
	Criteria        []converge.Criterion `json:"criteria,omitempty"`
}

type totalsJSON struct {
	Iterations      int     `json:"iterations"`
	Tasks           int     `json:"tasks"`
	FailedTasks     int     `json:"failed_tasks"`
	DurationSeconds float64 `json:"duration_seconds"`
}

type thresholdsJSON struct {
	Coverage   float64 `json:"coverage"`
	Confidence float64 `json:"confidence"`
}

// writeSessionJSON prints the session as one JSON object.
func writeSessionJSON(w io.Writer, s *session) error {
	c, r := s.c, s.report
	out := sessionJSON{
		Session: c.Session, Generation: c.Generation, File: s.path, Status: c.Status, Reason: c.Reason,
		Iteration: c.Iteration, Time: c.Time, Question: question(s), Fingerprint: c.Fingerprint,
		ForkedFrom: forkedFrom(c), BestGeneration: c.BestGeneration,
		StartedAt: r.StartedAt, LastIterationAt: r.LastIterationAt, ElapsedSeconds: r.Elapsed.Seconds(),
		Usage: r.Usage, Limits: r.Limits,
		Totals:     totalsJSON{r.Totals.Iterations, r.Totals.Tasks, r.Totals.FailedTasks, r.Totals.Duration.Seconds()},
		Thresholds: thresholdsJSON{r.History.Thresholds.MinCoverage, r.History.Thresholds.MinConfidence},
		History:    r.History.Recent, Escalation: r.Escalation, OpenGaps: len(r.History.Gaps),
		Settings: make(map[string]string), Damage: s.damage, Criteria: r.Decision.Criteria,
	}
	if out.History == nil {
		out.History = []converge.Record{}
	}
	for _, u := range r.Decision.Unmet() {
		out.Unmet = append(out.Unmet, u.String())
	}
	for _, kv := range r.Settings {
		out.Settings[kv[0]] = kv[1]
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// measured tells which of coverage and confidence a loop measures: some
// record holds it as other than zero. A loop that measures neither (an
// agent loop judged by its gates) shows "-" for them, not 0.00.
type measured struct{ cov, conf bool }

// measures returns what recs measure.
func measures(recs []converge.Record) measured {
	var m measured
	for i := range recs {
		m.cov = m.cov || recs[i].Coverage != 0
		m.conf = m.conf || recs[i].Confidence != 0
	}
	return m
}

func (m measured) coverage(v float64) string   { return m.format(m.cov, v) }
func (m measured) confidence(v float64) string { return m.format(m.conf, v) }

func (measured) format(ok bool, v float64) string {
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
