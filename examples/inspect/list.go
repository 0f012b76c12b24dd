package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/refine-go/refine/checkpoint"
)

// entry is one session of a listing, as --json prints it.
type entry struct {
	Session     string    `json:"session"`
	Status      string    `json:"status,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Iteration   int       `json:"iteration"`
	Generation  uint64    `json:"generation,omitempty"`
	Time        time.Time `json:"time,omitzero"`
	Question    string    `json:"question,omitempty"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	// ForkedFrom is where a forked session came from, "session@generation";
	// BestGeneration the generation holding the loop's best state.
	ForkedFrom     string `json:"forked_from,omitempty"`
	BestGeneration uint64 `json:"best_generation,omitempty"`
	// Skipped are the damaged generations skipped, newest first.
	Skipped []uint64 `json:"skipped,omitempty"`
	// Error says why the session has no readable generation.
	Error string `json:"error,omitempty"`
	// Damaged is set when Skipped is not empty or Error is damage.
	Damaged bool `json:"damaged,omitempty"`
}

// entries collects a store's listing.
func entries(sessions iter.Seq2[*checkpoint.Checkpoint, error]) ([]entry, error) {
	out := []entry{}
	for c, err := range sessions {
		if c == nil {
			return nil, err
		}
		e := entry{
			Session: c.Session, Status: c.Status, Reason: c.Reason, Iteration: c.Iteration,
			Generation: c.Generation, Time: c.Time, Question: c.Question, Fingerprint: c.Fingerprint,
			Skipped: c.Skipped, Damaged: len(c.Skipped) > 0 || errors.Is(err, checkpoint.ErrCorrupt),
			ForkedFrom: forkedFrom(c), BestGeneration: c.BestGeneration,
		}
		if err != nil {
			e.Error = err.Error()
		}
		out = append(out, e)
	}
	return out, nil
}

// forkedFrom returns the origin of a forked session, "session@generation",
// or "".
func forkedFrom(c *checkpoint.Checkpoint) string {
	if c.Origin.Session == "" {
		return ""
	}
	return c.Origin.Session + "@" + strconv.FormatUint(c.Origin.Generation, 10)
}

// list prints the sessions of dir, as a table or as JSON.
func list(ctx context.Context, dir string, asJSON bool, stdout, stderr io.Writer) error {
	es, err := entries(checkpoint.NewDir(dir).Sessions(ctx))
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(es)
	}
	if len(es) == 0 {
		fmt.Fprintf(stderr, "inspect: no sessions in %s\n", dir)
		return nil
	}
	return writeTable(stdout, es)
}

// writeTable prints the listing as a table, then a note per damaged or
// unreadable session.
func writeTable(w io.Writer, es []entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATUS\tITERATION\tGENERATION\tUPDATED\tQUESTION\tFINGERPRINT")
	var notes []string
	for _, e := range es {
		status, gen, updated := e.Status, strconv.FormatUint(e.Generation, 10), ""
		if !e.Time.IsZero() {
			updated = e.Time.UTC().Format("2006-01-02 15:04:05Z")
		}
		switch {
		case e.Error != "" && e.Damaged:
			status, gen = "DAMAGED", "-"
			notes = append(notes, fmt.Sprintf("%s: no readable generation: %s", e.Session, e.Error))
		case e.Error != "":
			status, gen = "UNREADABLE", "-"
			notes = append(notes, fmt.Sprintf("%s: %s", e.Session, e.Error))
		case len(e.Skipped) > 0:
			status += " (fallback)"
			notes = append(notes, fmt.Sprintf("%s: generation(s) %s damaged; listed generation %d, the newest readable",
				e.Session, joinUints(e.Skipped), e.Generation))
		}
		if e.ForkedFrom != "" {
			status += " (fork of " + e.ForkedFrom + ")"
		}
		iteration := strconv.Itoa(e.Iteration)
		if e.Error != "" {
			iteration = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Session, status, iteration, gen, dash(updated),
			dash(clip(oneLine(e.Question), 48)), dash(e.Fingerprint))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, "! "+n); err != nil {
			return err
		}
	}
	return nil
}

func joinUints(v []uint64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.FormatUint(n, 10)
	}
	return strings.Join(s, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine replaces the line breaks and tabs of s by spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// clip cuts s to n runes, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
