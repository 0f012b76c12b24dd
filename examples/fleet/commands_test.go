//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// TestCommands runs the commands a human uses on a fleet, against one
// worker: a synthetic session that asks a question, answered with fleet
// answer; one cancelled with fleet cancel; and a real research question
// over the research example's test tree, run to convergence.
func TestCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a worker process")
	}
	url := serverURL(t)
	pool := newPool(t)
	schema := newSchema(t, pool)
	db := []string{"--db", url, "--schema", schema}
	w := start(t, "worker", append([]string{"serve", "--holder", "worker", "--lease", "2s", "--poll", "100ms"}, db...)...)

	run1(t, append([]string{"submit", "--count", "1", "--prefix", "ask", "--escalate-at", "2", "--iterations", "4", "--task-ms", "1"}, db...)...)
	run1(t, append([]string{"submit", "--count", "1", "--prefix", "long", "--iterations", "100000", "--task-ms", "5"}, db...)...)
	root, err := filepath.Abs(filepath.Join("..", "research", "testdata", "2_coverage", "src"))
	if err != nil {
		t.Fatal(err)
	}
	questions := filepath.Join(t.TempDir(), "questions.txt")
	if err := os.WriteFile(questions, []byte("How does the job queue retry failed jobs?\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := run1(t, append([]string{"submit", "--file", questions, "--root", root}, db...)...); !strings.Contains(out, "1 sessions enqueued, 0 already known") {
		t.Fatalf("submit --file: %s", out)
	}
	research := questionSession("How does the job queue retry failed jobs?")

	sessions := func() map[string]row {
		var rows []row
		if err := json.Unmarshal([]byte(run1(t, append([]string{"status", "--json"}, db...)...)), &rows); err != nil {
			t.Fatal(err)
		}
		m := map[string]row{}
		for _, r := range rows {
			m[r.Session] = r
		}
		return m
	}
	var s map[string]row
	eventually(t, 60*time.Second, "ask-001 never asked, or long-001 never ran", func() bool {
		s = sessions()
		return s["ask-001"].Status == string(iterate.Escalated) && s["long-001"].Iteration >= 2
	})
	if q := s["ask-001"].Question; q != "which way, ask-001?" {
		t.Errorf("ask-001's question %q", q)
	}
	if out := run1(t, append(append([]string{"answer"}, db...), "ask-001", "left")...); !strings.Contains(out, "session ask-001 answered") {
		t.Errorf("answer: %s", out)
	}
	if out := run1(t, append(append([]string{"cancel"}, db...), "long-001")...); !strings.Contains(out, "session long-001 cancelled") {
		t.Errorf("cancel: %s", out)
	}
	eventually(t, 90*time.Second, "the sessions did not end as wanted", func() bool {
		s = sessions()
		return s["ask-001"].Status == string(iterate.Converged) && s["long-001"].Status == string(fleet.Cancelled) &&
			iterate.Status(s[research].Status).Final()
	})
	if s[research].Kind != "research" || s[research].Status != string(iterate.Converged) {
		t.Errorf("research session: %+v", s[research])
	}

	// The answer reached the loop.
	h, err := (&common{db: url, schema: schema}).open(context.Background(), 4, false)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	res, err := h.synthetic.Result(context.Background(), "ask-001")
	if err != nil || res.State.Answer != "left" {
		t.Errorf("ask-001: %+v, %v", res, err)
	}
	notes, err := h.research.Result(context.Background(), research)
	if err != nil || len(notes.State.Findings) == 0 {
		t.Errorf("research: %v, %v", notes, err)
	}

	// Bad input: a usage error, an unknown session.
	if code := run(context.Background(), []string{"answer", "only-one-arg"}, os.Stdout, os.Stderr); code != 2 {
		t.Errorf("answer with one argument: exit %d, want 2", code)
	}
	if code := run(context.Background(), append(append([]string{"cancel"}, db...), "nope"), os.Stdout, os.Stderr); code != 1 {
		t.Errorf("cancel of an unknown session: exit %d, want 1", code)
	}
	w.signal(t, syscall.SIGTERM)
	if err := w.wait(t, 20*time.Second); err != nil {
		t.Errorf("worker after SIGTERM: %v", err)
	}
}
