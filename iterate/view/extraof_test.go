package view

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/budget"
)

// TestExtraOf guards issue 31, item 10 (a session's page costs the same
// however many sessions the host has): with ExtraOf, the page of one
// session, its /live and its forms' POSTs read that session's extras
// alone and never every session's (Extras' function, which the list
// still uses); what ExtraOf tells is shown as Extras' was, for a stored
// session and for one the host alone knows (a fleet's queued session).
// Mutation caught (checked to fail): extraOf reading Extras' map though
// ExtraOf is given (every session's extras read for one page).
func TestExtraOf(t *testing.T) {
	d, c := spentSession(t)
	tell := map[string]Extra{
		"spent":  {Kind: "spend", Extension: &ExtensionRecord{Generation: c.Generation, To: budget.Limits{Tokens: 900, Calls: 100}, By: "bob"}},
		"queued": {Kind: "spend", Status: "queued"},
	}
	var all, one atomic.Int64
	h := newHandler(t, d, Extends(DirExtensions{Path: t.TempDir()}),
		Extras(func(context.Context) (map[string]Extra, error) { all.Add(1); return tell, nil }),
		ExtraOf(func(_ context.Context, s string) (Extra, error) { one.Add(1); return tell[s], nil }))
	res, page := get(t, h, "/session/spent")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "<tr><th>Kind</th><td>spend</td></tr>") ||
		!strings.Contains(page, "Extended to tokens 900, calls 100 by bob") {
		t.Errorf("the page of a stored session does not show what ExtraOf tells: %d\n%s", res.StatusCode, page)
	}
	if res, page := get(t, h, "/session/queued"); res.StatusCode != http.StatusOK || !strings.Contains(page, `<span class="status s-queued">queued</span>`) {
		t.Errorf("the page of a session the host alone knows: %d\n%s", res.StatusCode, page)
	}
	if res, _ := get(t, h, "/session/spent/live"); res.StatusCode != http.StatusOK {
		t.Errorf("/live: %d", res.StatusCode)
	}
	if code, _ := postExtend(h, "spent", c.Generation, h.extendToken("spent", c.Generation), map[string]string{"tokens": "900", "cost": "0", "calls": "100"}); code != http.StatusSeeOther {
		t.Errorf("extend: %d, want 303", code)
	}
	if n := all.Load(); n != 0 || one.Load() == 0 {
		t.Errorf("one session's pages read every session's extras %d times (ExtraOf %d times); want never", n, one.Load())
	}
	if _, list := get(t, h, "/"); all.Load() != 1 || !strings.Contains(list, `data-session="queued"`) {
		t.Errorf("the list: Extras read %d times, want once, listing the queued session", all.Load())
	}
}

// TestAnsweredGenerationShown guards the page against its two reads: the
// store's checkpoint, then the host's extras, which may speak of a newer
// generation (the session answered and resumed in between: seen in
// examples/viewer's TestFleetAnswer, 1 run in 12, a fresh viewer offering
// the answered session's form). An answer the host recorded for the
// generation shown answers it, whatever Answered says of the newest.
// Mutation caught: the form offered on Extra.Answered alone.
func TestAnsweredGenerationShown(t *testing.T) {
	store := testStore(t)
	asked, err := store.Load(context.Background(), "asked")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		extra    Extra
		wantForm bool
	}{
		{"not answered", Extra{}, true},
		{"answered, as the host reads it", Extra{Answered: true}, false},
		{"answered, the host read past it", Extra{Answers: []AnswerRecord{{Generation: asked.Generation, Answer: "go"}}}, false},
		{"an older escalation answered", Extra{Answers: []AnswerRecord{{Generation: asked.Generation - 1, Answer: "go"}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandler(t, store, Answers(&answers{}),
				ExtraOf(func(context.Context, string) (Extra, error) { return tc.extra, nil }))
			_, page := get(t, h, "/session/asked")
			if form := strings.Contains(page, `<form id="answer"`); form != tc.wantForm {
				t.Errorf("answer form offered: %v, want %v", form, tc.wantForm)
			}
			if answered := strings.Contains(page, `<p id="answered"`); answered == tc.wantForm {
				t.Errorf("says answered: %v, want %v", answered, !tc.wantForm)
			}
		})
	}
}
