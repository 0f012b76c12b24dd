package view

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// spentSession runs a toy loop to its budget in a directory of its own:
// the session "spent", stopped budget_exhausted, and its checkpoint.
func spentSession(t *testing.T) (*checkpoint.Dir, *checkpoint.Checkpoint) {
	t.Helper()
	ctx := context.Background()
	d := checkpoint.NewDir(t.TempDir())
	if res, _ := iterate.New(toyWorker{}, iterate.WithCheckpointer(d), iterate.WithSession("spent"),
		iterate.WithBudget(budget.Limits{Tokens: 250, Calls: 100}), iterate.WithMaxIterations(12)).Run(ctx, toyState{}); res == nil || res.Status != iterate.BudgetExhausted {
		t.Fatalf("premise: a budget_exhausted session: %v", res)
	}
	c, err := d.Load(ctx, "spent")
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

// TestExtendedFollowed guards issue 31 (an operator's pages tell what the
// library recorded, and follow what will change): once an extension of a
// session's stop at its budget is recorded (DirExtensions, as a fleet's
// Extra.Extension would tell it too), the list's row of the session says
// it is extended, to the recorded limits and by its author, waiting to be
// resumed, and the list's /live fingerprint changes with it (so an open
// list reloads); the session's page says so in its status and follows the
// session (its script polls /live) although budget_exhausted is a final
// status, so that the page shows the resume when it comes, and its /live
// does not say it is final. Before the extension, neither page says so,
// the session's page does not poll and /live says final.
//
// Mutations caught (each checked to fail): listRows not looking up the
// extension (no "extended" in the row); the fingerprint without it (the
// same fingerprint before and after); the session page's p.Final left
// set (no script: the page never shows the resume); /live's Final left
// as the status says; the status's
// "(extended: waiting to be resumed)" kept to escalated sessions.
func TestExtendedFollowed(t *testing.T) {
	ctx := context.Background()
	d, c := spentSession(t)
	at := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	reqs := DirExtensions{Path: t.TempDir(), Now: func() time.Time { return at }}
	h := newHandler(t, d, Extends(reqs))
	fingerprint := func() string {
		t.Helper()
		_, body := get(t, h, "/live")
		var l ListLive
		if err := json.Unmarshal([]byte(body), &l); err != nil || l.Fingerprint == "" {
			t.Fatalf("/live: %q, %v", body, err)
		}
		return l.Fingerprint
	}
	row := regexp.MustCompile(`(?s)<tr data-session="spent">.*?</tr>`)
	script := `<script nonce=`

	final := func() bool {
		t.Helper()
		_, body := get(t, h, "/session/spent/live")
		var l Live
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatalf("/session/spent/live: %q, %v", body, err)
		}
		return l.Final
	}
	if !final() {
		t.Error("/live of a budget_exhausted session not extended: not final")
	}
	before := fingerprint()
	_, list := get(t, h, "/")
	_, page := get(t, h, "/session/spent")
	if strings.Contains(row.FindString(list), "extended") || strings.Contains(page, "(extended") || strings.Contains(page, script) {
		t.Fatalf("a stop not extended told as extended, or its page polling:\n%s\n%s", row.FindString(list), page)
	}

	if err := reqs.ExtendBudget(ctx, "spent", c.Generation, budget.Limits{Tokens: 50000, Calls: 100}, "alice"); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadDirExtension(reqs.Path, "spent", c.Generation) // what the page must tell
	if err != nil {
		t.Fatal(err)
	}
	if final() {
		t.Error("/live of an extended stop: final, though it waits to be resumed")
	}
	if after := fingerprint(); after == before {
		t.Error("the list's fingerprint did not change with the extension: an open list would not show it")
	}
	_, list = get(t, h, "/")
	want := `<span class="muted extended">extended to ` + limitsText(rec.To) + ` by ` + rec.By + `, waiting to be resumed</span>`
	if got := row.FindString(list); !strings.Contains(got, want) {
		t.Errorf("the list's row of the extended session:\n%s\nwant %s", got, want)
	}
	_, page = get(t, h, "/session/spent")
	if !strings.Contains(page, `(extended: waiting to be resumed)</span>`) {
		t.Error("the session's status does not say it waits to be resumed")
	}
	if !strings.Contains(page, `Extended to `+limitsText(rec.To)+` by `+rec.By+` at `+rec.At.UTC().Format("2006-01-02 15:04:05 UTC")+`: the session waits`) {
		t.Errorf("the page does not tell the recorded extension %+v", rec)
	}
	if !strings.Contains(page, script) {
		t.Error("the page of an extended stop does not follow the session: its resume would not show")
	}
}

// TestExtensionsShown guards issue 31 (the page never shows less than
// the library recorded): the page of a session resumed under a raised
// budget lists each extension as the session recorded it
// (iterate.Result's Extensions, read by iterate.Inspect): after which
// iteration, the limits before and after, by whom and when; a session
// never extended has no such table. The timeline's share of the token
// limit of each iteration is of the limit it ran under. Mutations caught
// (each checked to fail): iterate.Inspect not reading the extensions
// (Report.Extensions nil: no table); the table's rows not filled from
// them; the shares taken of the current limit (limitsAt returning
// rep.Limits: iterations before the extension shown against the raised
// limit).
func TestExtensionsShown(t *testing.T) {
	ctx := context.Background()
	d := checkpoint.NewDir(t.TempDir())
	opts := []iterate.Option{iterate.WithCheckpointer(d), iterate.WithSession("spent"),
		iterate.WithBudget(budget.Limits{Tokens: 250, Calls: 100}), iterate.WithMaxIterations(12)}
	if res, _ := iterate.New(toyWorker{}, opts...).Run(ctx, toyState{}); res == nil || res.Status != iterate.BudgetExhausted {
		t.Fatalf("premise: a budget_exhausted session: %v", res)
	}
	h := newHandler(t, d)
	if _, page := get(t, h, "/session/spent"); strings.Contains(page, `id="extensions"`) {
		t.Error("a table of extensions for a session never extended")
	}
	res, err := iterate.New(toyWorker{}, opts...).Resume(ctx, iterate.ExtendBudget(budget.Limits{Tokens: 400, Calls: 100}, "alice"))
	if err != nil || len(res.Extensions) != 1 {
		t.Fatalf("premise: resumed under a raised budget: %v, %v", res, err)
	}
	x := res.Extensions[0] // the library's record
	_, page := get(t, h, "/session/spent")
	want := `<tr><td class="n">` + strconv.Itoa(x.Iteration) + `</td><td>` + limitsText(x.From) + `</td><td>` + limitsText(x.To) +
		`</td><td>` + x.By + `</td><td>` + x.At.UTC().Format("2006-01-02 15:04:05 UTC") + `</td></tr>`
	table := regexp.MustCompile(`(?s)<table id="extensions">.*?</table>`).FindString(page)
	if !strings.Contains(table, want) || strings.Count(table, "<tr>") != 2 {
		t.Errorf("the page's extensions:\n%s\nwant one row %s", table, want)
	}
	// Each iteration's share of the token limit is of the limit it ran
	// under: x.From's up to the extension's iteration, x.To's after.
	share := regexp.MustCompile(`(?s)<tr data-iteration="(\d+)"[^>]*>.*?<td class="n">(\d+) <span class="bar"[^>]*></span> <span class="muted">([^<]*) of the limit</span>`)
	rows := share.FindAllStringSubmatch(page, -1)
	before, after := 0, 0
	for _, m := range rows {
		it, _ := strconv.Atoi(m[1])
		tokens, _ := strconv.ParseFloat(m[2], 64)
		lim := x.To.Tokens
		if it <= x.Iteration {
			lim, before = x.From.Tokens, before+1
		} else {
			after++
		}
		if want := pct(tokens / float64(lim) * 100); m[3] != want {
			t.Errorf("iteration %d: %s tokens, %s of the limit; want %s (of %d)", it, m[2], m[3], want, lim)
		}
	}
	if before == 0 || after == 0 {
		t.Errorf("premise: iterations with tokens before (%d) and after (%d) the extension", before, after)
	}
}

// TestBudgetIterationLimit guards issue 31 (no figure the library
// disagrees with): a session whose budget limits its iterations
// (budget.Limits.Iterations, apart from the loop's maximum) and stopped
// budget_exhausted at it shows that limit in its budget table, spent, as
// iterate.Inspect reads it (Usage.Iterations of Limits.Iterations); once
// an extension raised it, the raised limit. Mutation caught (checked to
// fail): budgetRows without the budget's iteration row (the table shows
// only the loop's maximum, 3 of 12, for a session stopped at its budget).
func TestBudgetIterationLimit(t *testing.T) {
	ctx := context.Background()
	d := checkpoint.NewDir(t.TempDir())
	opts := []iterate.Option{iterate.WithCheckpointer(d), iterate.WithSession("spent"),
		iterate.WithBudget(budget.Limits{Iterations: 3}), iterate.WithMaxIterations(12)}
	if res, _ := iterate.New(toyWorker{}, opts...).Run(ctx, toyState{}); res == nil || res.Status != iterate.BudgetExhausted {
		t.Fatalf("premise: a session stopped at its budget's iteration limit: %v", res)
	}
	h := newHandler(t, d)
	row := regexp.MustCompile(`<tr><td>iterations \(budget\)</td><td class="n">(\d+)</td><td class="n">(\d+)</td><td class="n[^"]*">([^<]*)</td></tr>`)
	check := func(when string) {
		t.Helper()
		c, err := d.Load(ctx, "spent")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := iterate.Inspect(c) // the library's figures
		if err != nil {
			t.Fatal(err)
		}
		_, page := get(t, h, "/session/spent")
		m := row.FindStringSubmatch(page)
		want := []string{strconv.Itoa(rep.Usage.Iterations), strconv.Itoa(rep.Limits.Iterations), "100%"}
		if m == nil || m[1] != want[0] || m[2] != want[1] || m[3] != want[2] {
			t.Errorf("%s: the budget's iteration row %q; want %q", when, m, want)
		}
	}
	check("stopped at 3")
	if _, err := iterate.New(toyWorker{}, opts...).Resume(ctx, iterate.ExtendBudget(budget.Limits{Iterations: 5}, "alice")); err != nil {
		t.Fatal(err)
	}
	check("extended to 5")
}

// TestExtendedResumedBy guards issue 31 (no figure the host disagrees
// with): an extended stop whose session a worker holds (the host's
// Extra.Holder: a fleet worker took its lease to resume it, before its
// first save) is told as being resumed by that worker, on the page and in
// the list, not as waiting. Mutation caught (checked to fail): the
// templates saying "waiting to be resumed" whoever holds the session.
func TestExtendedResumedBy(t *testing.T) {
	d, c := spentSession(t)
	x := &ExtensionRecord{Generation: c.Generation, To: budget.Limits{Tokens: 900, Calls: 100}, By: "bob"}
	for _, holder := range []string{"", "worker-1"} {
		h := newHandler(t, d, Extras(func(context.Context) (map[string]Extra, error) {
			return map[string]Extra{"spent": {Extension: x, Holder: holder}}, nil
		}))
		_, page := get(t, h, "/session/spent")
		_, list := get(t, h, "/")
		wants := []string{"(extended: waiting to be resumed)", "by bob: the session waits to be resumed under the raised limits.",
			"by bob, waiting to be resumed</span>"}
		if holder != "" {
			wants = []string{"(extended: resumed by worker-1)", "by bob: worker-1 resumes the session under the raised limits.",
				"by bob, resumed by worker-1</span>"}
		}
		for _, want := range wants {
			if !strings.Contains(page+list, want) {
				t.Errorf("holder %q: %q not on the page nor the list", holder, want)
			}
		}
	}
}
