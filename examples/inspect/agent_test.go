package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// agent is a loop that measures neither coverage nor confidence (judged by
// its gates): its task fails at iteration 2, spending tokens each time.
type agent struct{}

func (agent) Assess(_ context.Context, n int) (gap.Assessment, error) {
	return gap.Assessment{Complete: n >= 3}, nil
}

func (agent) Work(_ context.Context, n int, t iterate.Task) (iterate.Outcome[int], error) {
	if t.Iteration == 2 {
		return iterate.Outcome[int]{Usage: budget.Usage{Tokens: 70}}, errors.New("the tool <timed out>")
	}
	return iterate.Outcome[int]{Part: 1, Usage: budget.Usage{Tokens: 100 * int64(t.Iteration)}, Output: "ran step"}, nil
}

func (agent) Integrate(_ context.Context, n int, outs []iterate.Outcome[int]) (int, error) {
	for _, o := range outs {
		if o.Err == nil {
			n += o.Part
		}
	}
	return n, nil
}

// TestAgentLoopHistory: the history of a loop that measures neither
// coverage nor confidence shows "-" for them, not 0.00; its tokens per
// iteration are the history's (iterate.Inspect), and its failed task's
// error is shown, in the text and on the page. Mutations caught: the
// columns printed as 0.00, "not recorded per iteration", task errors left
// out.
func TestAgentLoopHistory(t *testing.T) {
	dir := t.TempDir()
	res, err := iterate.New(agent{}, iterate.WithCheckpointer(checkpoint.NewDir(dir)), iterate.WithSession("agent"),
		iterate.WithMaxIterations(6)).Run(context.Background(), 0)
	if res == nil {
		t.Fatal(err)
	}
	_, rep := report(t, dir, "agent")
	r := inspect(t, dir, "agent")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	rows := fields(r.stdout)
	for _, rec := range rep.History.Recent {
		row := rows[itoa(rec.Iteration)]
		if len(row) != 9 || row[4] != "-" || row[5] != "-" {
			t.Errorf("iteration %d: row %q: coverage and confidence should read -", rec.Iteration, row)
		}
		if rec.Iteration > 0 && (len(row) < 4 || row[3] != itoa(int(rec.Tokens))) {
			t.Errorf("iteration %d: row %q, want tokens %d", rec.Iteration, row, rec.Tokens)
		}
	}
	if strings.Contains(r.stdout, "not recorded per iteration") || !strings.Contains(r.stdout, "iteration 2, ") ||
		!strings.Contains(r.stdout, "the tool <timed out>") {
		t.Errorf("the history:\n%s", r.stdout)
	}
	page := filepath.Join(dir, "agent.html")
	if r := inspect(t, "--html", page, dir, "agent"); r.code != exitOK {
		t.Fatalf("--html: exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	wants := []string{"failed: the tool &lt;timed out&gt;", "<pre>ran step</pre>"}
	for _, rec := range rep.History.Recent {
		if rec.Iteration > 0 {
			wants = append(wants, `<td class="n tokens">`+strconv.FormatInt(rec.Tokens, 10)+`</td>`)
		}
	}
	for _, want := range wants {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(html, "0.00</td>") || strings.Contains(html, "not per iteration") {
		t.Error("the page shows 0.00 for what the loop does not measure, or says tokens are not per iteration")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
