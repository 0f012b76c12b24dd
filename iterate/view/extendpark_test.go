package view

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// TestExtendAtBudget guards issue 31 (viewer): a session stopped at its
// budget — budget_exhausted, or parked there (iterate.WithParkAtLimit:
// escalated, its Escalation.Parked set) — gets the extension form on its
// page, and the form's POST is accepted (303) for either; a parked
// session's answer form says that a plain answer stops it at its budget.
// Once the extension is recorded (DirExtensions, read back through its
// ExtensionReader), the page says so — the limits raised to, by whom,
// when — and offers neither form again (a second POST is 409) until the
// session stops again; resumed with the recorded extension, it stops
// again and the form is back for the new stop.
//
// Mutations caught: the form offered for budget_exhausted only (pages.go:
// atBudget without the parked case — no form on the parked page); the
// POST refusing a parked session (extend.go's check on BudgetExhausted
// only — 409 instead of 303); the recorded extension not looked up
// (extensionOf returning nil — the form offered again, no "Extended to");
// the plain-answer line dropped from the answer form.
func TestExtendAtBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		park   bool
		status iterate.Status
	}{
		{"budget_exhausted", false, iterate.BudgetExhausted},
		{"parked", true, iterate.Escalated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir, reqs, answers := t.TempDir(), t.TempDir(), t.TempDir()
			d := checkpoint.NewDir(dir)
			opts := func() []iterate.Option {
				o := []iterate.Option{iterate.WithCheckpointer(d), iterate.WithSession("spent"),
					iterate.WithBudget(budget.Limits{Tokens: 250, Calls: 100}), iterate.WithMaxIterations(12)}
				if tc.park {
					o = append(o, iterate.WithParkAtLimit())
				}
				return o
			}
			if res, _ := iterate.New(toyWorker{}, opts()...).Run(ctx, toyState{}); res == nil || res.Status != tc.status {
				t.Fatalf("premise: a session stopped %s: %v", tc.status, res)
			}
			c, err := d.Load(ctx, "spent")
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
			h := newHandler(t, d, Extends(DirExtensions{Path: reqs, Now: func() time.Time { return at }}),
				Answers(DirAnswers{Path: answers}), AnswerBy(func(*http.Request) string { return "alice" }))
			_, body := get(t, h, "/session/spent")
			if !strings.Contains(body, `<form id="extend" method="post" action="./spent/extend">`) ||
				!strings.Contains(body, `name="tokens" inputmode="numeric" value="250"`) {
				t.Fatalf("no extension form with the current limits on the page of a session stopped %s", tc.status)
			}
			if plain := strings.Contains(body, `id="plain-answer"`) && strings.Contains(body, "a plain answer stops it there (budget_exhausted)"); plain != tc.park {
				t.Errorf("the line on a plain answer shown: %v, want %v", plain, tc.park)
			}
			if form := strings.Contains(body, `<form id="answer"`); form != tc.park {
				t.Errorf("an answer form: %v, want %v", form, tc.park)
			}
			tok := h.extendToken("spent", c.Generation)
			raise := map[string]string{"tokens": "50000", "cost": "0", "calls": "100"}
			if code, body := postExtend(h, "spent", c.Generation, tok, raise); code != http.StatusSeeOther {
				t.Fatalf("extend: %d %s, want 303", code, body)
			}
			rec, err := ReadDirExtension(reqs, "spent", c.Generation)
			if err != nil || rec.To.Tokens != 50000 || rec.By != "alice" {
				t.Fatalf("recorded: %+v %v", rec, err)
			}

			// Recorded, not resumed yet: the page tells the extension and
			// offers no form.
			_, body = get(t, h, "/session/spent")
			if !strings.Contains(body, `<tr id="extended"><th>Extension</th><td>Extended to tokens 50000, calls 100 by alice at 2026-11-28 09:30:00 UTC`) {
				t.Errorf("the page does not tell the recorded extension:\n%s", body)
			}
			if strings.Contains(body, `id="extend"`) || strings.Contains(body, `<form id="answer"`) {
				t.Error("a form offered for a stop extended already")
			}
			if code, _ := postExtend(h, "spent", c.Generation, tok, map[string]string{"tokens": "900", "cost": "0", "calls": "100"}); code != http.StatusConflict {
				t.Errorf("a second request: %d, want 409", code)
			}
			if tc.park {
				// The extension answered the question: an answer posted
				// from a page shown before is refused (mutation caught:
				// answerOnce not looking up the extension — 303, an
				// answer recorded beside it).
				if code, _ := postAnswer(h, "spent", c.Generation, "stop"); code != http.StatusConflict {
					t.Errorf("an answer after the extension: %d, want 409", code)
				}
				if _, err := ReadDirAnswer(answers, "spent", c.Generation); err == nil {
					t.Error("an answer recorded beside the extension")
				}
			}

			// Resumed with it, the session stops at its raised budget
			// again: a new stop, a new form.
			if _, err := iterate.New(toyWorker{}, opts()...).Resume(ctx, iterate.ExtendBudget(rec.To, rec.By)); err != nil && !tc.park {
				t.Fatal(err)
			}
			n, err := d.Load(ctx, "spent")
			if err != nil || n.Generation == c.Generation {
				t.Fatalf("not resumed: %v %v", n, err)
			}
			_, body = get(t, h, "/session/spent")
			if strings.Contains(body, `id="extended"`) {
				t.Error("the extension of the previous stop shown for a new one")
			}
			if rep, _ := iterate.Inspect(n); atBudget(n, rep) != strings.Contains(body, `<form id="extend"`) {
				t.Errorf("%s again: the extension form shown: %v", n.Status, !atBudget(n, rep))
			}
		})
	}
}

// TestExtendedByHost guards the host's side of a recorded extension
// (Extra.Extension, as a fleet tells it with fleet.Session.Extension): the
// page of the budget_exhausted session says it is extended, without the
// limits, who or when the host does not tell, and offers no form (a POST
// is the Extender's to refuse, as the host's fleet.Extend does); an
// extension of an older stop is not this one's. Mutation caught:
// extensionOf ignoring Extra.Extension (the form offered again, no
// "Extended").
func TestExtendedByHost(t *testing.T) {
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
	for _, tc := range []struct {
		name     string
		x        *ExtensionRecord
		extended bool
	}{
		{"none", nil, false},
		{"unnamed", &ExtensionRecord{}, true},
		{"this stop", &ExtensionRecord{Generation: c.Generation, To: budget.Limits{Tokens: 900, Calls: 100}, By: "bob"}, true},
		{"an older stop", &ExtensionRecord{Generation: c.Generation - 1, By: "bob"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandler(t, d, Extends(DirExtensions{Path: t.TempDir()}), Extras(func(context.Context) (map[string]Extra, error) {
				return map[string]Extra{"spent": {Extension: tc.x}}, nil
			}))
			_, body := get(t, h, "/session/spent")
			want := "Extended: the session waits"
			if tc.x != nil && tc.x.By != "" {
				want = "Extended to tokens 900, calls 100 by bob: the session waits"
			}
			if got := strings.Contains(body, want); got != tc.extended {
				t.Errorf("%q on the page: %v, want %v", want, got, tc.extended)
			}
			if form := strings.Contains(body, `<form id="extend"`); form == tc.extended {
				t.Errorf("the extension form: %v, want %v", form, !tc.extended)
			}
		})
	}
}
