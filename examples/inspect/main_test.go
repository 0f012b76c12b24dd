package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// runIn runs the program in this process.
func runIn(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut, false)
	return out.String(), errOut.String(), code
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no_arguments", nil, exitUsage, "inspect: missing the checkpoint directory argument\nRun 'inspect --help' for usage."},
		{"three_arguments", []string{dir, "a", "b"}, exitUsage, "at most a directory and a session expected, got 3 arguments: " + dir + " a b"},
		{"html_without_session", []string{"--html", "x.html", dir}, exitUsage, "--html needs a SESSION"},
		{"bad_session", []string{dir, "../x"}, exitUsage, `invalid session: checkpoint: invalid session name "../x": contains a path separator`},
		{"unknown_flag", []string{"--bogus", dir}, exitUsage, "flag provided but not defined: -bogus"},
		{"help", []string{"--help"}, exitOK, "Exit codes:"},
		{"missing_directory", []string{filepath.Join(dir, "nope")}, exitError, "inspect: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"not_a_directory", []string{file}, exitError, "inspect: " + file + " is not a directory"},
		{"unknown_session", []string{dir, "nope"}, exitError, `inspect: session "nope" not found: ` + dir + " holds no sessions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runIn(tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d; stderr does not say %q:\n%s", code, tc.code, tc.want, stderr)
			}
		})
	}
	t.Run("version", func(t *testing.T) {
		stdout, _, code := runIn("--version")
		if code != exitOK || !strings.HasPrefix(stdout, "inspect (github.com/refine-go/refine) ") {
			t.Errorf("exit %d: %q", code, stdout)
		}
	})
	t.Run("empty_directory", func(t *testing.T) {
		stdout, stderr, code := runIn(dir)
		if code != exitOK || stdout != "" || stderr != "inspect: no sessions in "+dir+"\n" {
			t.Errorf("exit %d: %q %q", code, stdout, stderr)
		}
		if stdout, _, _ := runIn("--json", dir); stdout != "[]\n" {
			t.Errorf("--json of an empty directory: %q", stdout)
		}
	})
	t.Run("unknown_session_names_the_others", func(t *testing.T) {
		runToy(t, dir, "real", iterate.WithMaxIterations(1))
		_, stderr, code := runIn(dir, "nope")
		if code != exitError || !strings.Contains(stderr, `session "nope" not found in `+dir+" (its sessions: real)") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
}

func TestSparkline(t *testing.T) {
	got := sparkline([]float64{0, 0.14, 0.5, 0.86, 1, 1.7, -1})
	if want := "▁▂▅▇██▁"; got != want {
		t.Errorf("sparkline = %q, want %q", got, want)
	}
}

// TestTable: the listing of any store's Sessions, Memory's here.
func TestTable(t *testing.T) {
	m := new(checkpoint.Memory)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []*checkpoint.Checkpoint{
		{Session: "b", Status: "escalated", Iteration: 3, Time: at, Question: "Which database?\nPostgres or MySQL, and why does the old one stay", Fingerprint: "f00d"},
		{Session: "a", Status: "running", Iteration: 1, Time: at},
	} {
		if err := m.Save(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	es, err := entries(m.Sessions(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := writeTable(&out, es); err != nil {
		t.Fatal(err)
	}
	want := `SESSION  STATUS     ITERATION  GENERATION  UPDATED               QUESTION                                          FINGERPRINT
a        running    1          1           2026-03-01 12:00:00Z  -                                                 -
b        escalated  3          1           2026-03-01 12:00:00Z  Which database? Postgres or MySQL, and why does…  f00d
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table mismatch (-want +got):\n%s", diff)
	}
}

// TestPageEscapes: what a loop wrote (its question, reason, summaries) is
// text on the page, never markup; a single record is charted too.
func TestPageEscapes(t *testing.T) {
	c := &checkpoint.Checkpoint{Session: "s", Status: "escalated", Question: `<script>alert("q")</script>`, Reason: "<b>why</b>"}
	r := &iterate.Report{History: converge.History{Recent: []converge.Record{{Coverage: 0.4, Confidence: 0.6, Summary: "<img src=x>"}}}}
	r.History.Thresholds.MinCoverage, r.History.Thresholds.MinConfidence = 0.7, 0.8
	var buf bytes.Buffer
	if err := page.Execute(&buf, pageOf(&session{path: "p", c: c, report: r}, nil)); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	checkPage(t, html, r, "coverage", "confidence")
	for _, want := range []string{"&lt;script&gt;alert(&#34;q&#34;)&lt;/script&gt;", "&lt;b&gt;why&lt;/b&gt;", "&lt;img src=x&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks the escaped %q", want)
		}
	}
}
