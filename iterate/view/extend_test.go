package view

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// postExtend POSTs the extension form of session to h.
func postExtend(h *Handler, session string, gen uint64, token string, limits map[string]string) (int, string) {
	form := url.Values{"token": {token}, "generation": {strconv.FormatUint(gen, 10)}}
	for k, v := range limits {
		form.Set(k, v)
	}
	req := httptest.NewRequest(http.MethodPost, "http://localhost/session/"+session+"/extend", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestExtend guards issue 31, item 13: a session stopped with
// budget_exhausted, kept in a directory, gets from its page (with Extends,
// off without) a request to resume under raised limits; DirExtensions
// records it durably and once before the 303 (a second, from another
// viewer, 409 with ErrExtended); a request lowering a limit or raising
// none is refused (400); the host reads it and resumes the session with
// iterate.ExtendBudget, which goes on. Mutations caught: the form offered
// without Extends, a lowered limit accepted, a second request written
// over the first.
func TestExtend(t *testing.T) {
	ctx := context.Background()
	dir, reqs := t.TempDir(), t.TempDir()
	d := checkpoint.NewDir(dir)
	limits := budget.Limits{Tokens: 250, Calls: 100}
	opts := func() []iterate.Option {
		return []iterate.Option{iterate.WithCheckpointer(d), iterate.WithSession("spent"), iterate.WithBudget(limits),
			iterate.WithMaxIterations(12)}
	}
	if res, err := iterate.New(toyWorker{}, opts()...).Run(ctx, toyState{}); res == nil || res.Status != iterate.BudgetExhausted {
		t.Fatalf("premise: a budget_exhausted session: %v %v", res, err)
	}
	c, err := d.Load(ctx, "spent")
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, newHandler(t, d), "/session/spent"); strings.Contains(body, `id="extend"`) {
		t.Error("an extension form without Extends")
	}
	viewer := func() *Handler { return newHandler(t, d, Extends(DirExtensions{Path: reqs})) }
	h := viewer()
	if _, body := get(t, h, "/session/spent"); !strings.Contains(body, `<form id="extend" method="post" action="./spent/extend">`) ||
		!strings.Contains(body, `name="tokens" inputmode="numeric" value="250"`) {
		t.Fatal("no extension form with the current limits on a budget_exhausted session's page")
	}
	tok := h.extendToken("spent", c.Generation)
	for _, bad := range []map[string]string{
		{"tokens": "100", "cost": "0", "calls": "100"},   // lowered
		{"tokens": "250", "cost": "0", "calls": "100"},   // none raised
		{"tokens": "250", "cost": "5", "calls": "100"},   // a limit where there was none
		{"tokens": "x", "cost": "0", "calls": "100"},     // not a count
		{"tokens": "900", "cost": "NaN", "calls": "100"}, // not an amount
	} {
		if code, body := postExtend(h, "spent", c.Generation, tok, bad); code != http.StatusBadRequest {
			t.Errorf("%v: %d %s, want 400", bad, code, body)
		}
	}
	if code, _ := postExtend(h, "spent", c.Generation, "", map[string]string{"tokens": "900", "cost": "0", "calls": "100"}); code != http.StatusForbidden {
		t.Errorf("no token: %d, want 403", code)
	}
	if _, err := ReadDirExtension(reqs, "spent", c.Generation); err == nil {
		t.Fatal("a refused request was recorded")
	}
	if code, body := postExtend(h, "spent", c.Generation, tok, map[string]string{"tokens": "50000", "cost": "0", "calls": "100"}); code != http.StatusSeeOther {
		t.Fatalf("extend: %d %s", code, body)
	}
	rec, err := ReadDirExtension(reqs, "spent", c.Generation)
	if err != nil || rec.To.Tokens != 50000 || rec.To.Calls != 100 {
		t.Fatalf("recorded: %+v %v", rec, err)
	}
	h2 := viewer()
	if code, body := postExtend(h2, "spent", c.Generation, h2.extendToken("spent", c.Generation), map[string]string{"tokens": "900", "cost": "0", "calls": "100"}); code != http.StatusConflict || !strings.Contains(body, ErrExtended.Error()) {
		t.Errorf("a second request from another viewer: %d %s, want 409", code, body)
	}
	if rec, _ := ReadDirExtension(reqs, "spent", c.Generation); rec == nil || rec.To.Tokens != 50000 {
		t.Errorf("after the second request: %+v, want the first", rec)
	}
	if err := (DirExtensions{Path: reqs}).ExtendBudget(ctx, "spent", c.Generation, rec.To, ""); !errors.Is(err, ErrExtended) {
		t.Errorf("a second ExtendBudget: %v, want ErrExtended", err)
	}
	// The host resumes with it.
	res, err := iterate.New(toyWorker{}, opts()...).Resume(ctx, iterate.ExtendBudget(rec.To, rec.By))
	if res == nil {
		t.Fatal(err)
	}
	if n, _ := d.Load(ctx, "spent"); n == nil || n.Generation == c.Generation || n.Status == string(iterate.BudgetExhausted) && n.Iteration == c.Iteration {
		t.Errorf("the host did not go on under the raised budget: %v", n)
	}
}
