package view

import (
	"context"
	"errors"
	"io/fs"
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

// postFork POSTs the fork form of session to h.
func postFork(h *Handler, session, token string, gen uint64, to string) (int, string) {
	form := url.Values{"token": {token}, "generation": {strconv.FormatUint(gen, 10)}, "to": {to}}
	req := httptest.NewRequest(http.MethodPost, "http://localhost/session/"+session+"/fork", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestForkRequest guards issue 31, item 13: with Forks (off without) a
// session's page requests a fork of it from a kept generation as a new
// session; DirForks records it durably and once per new name before the
// 303 (a second, from another viewer, 409 with ErrForkExists); the name of
// a session of the store (409), no valid name or the session's own (400),
// a generation not kept (400) are refused; the host reads the request and
// runs the fork with iterate.ForkFrom, its checkpoints naming their
// origin. Mutations caught: the form offered without Forks, a taken name
// accepted, a generation not kept accepted, a second request written over
// the first.
func TestForkRequest(t *testing.T) {
	ctx := context.Background()
	dir, reqs := t.TempDir(), t.TempDir()
	d := checkpoint.NewDir(dir, checkpoint.KeepAll())
	opts := func(session string) []iterate.Option {
		return []iterate.Option{iterate.WithCheckpointer(d), iterate.WithSession(session),
			iterate.WithBudget(budget.Limits{Tokens: 50000, Calls: 100}), iterate.WithMaxIterations(12)}
	}
	for _, s := range []string{"done", "other"} {
		if res, err := iterate.New(toyWorker{}, opts(s)...).Run(ctx, toyState{}); res == nil {
			t.Fatal(err)
		}
	}
	if _, body := get(t, newHandler(t, d), "/session/done"); strings.Contains(body, `id="fork"`) {
		t.Error("a fork form without Forks")
	}
	viewer := func() *Handler { return newHandler(t, d, Forks(DirForks{Path: reqs})) }
	h := viewer()
	if _, body := get(t, h, "/session/done"); !strings.Contains(body, `<form id="fork" method="post" action="./done/fork">`) {
		t.Fatal("no fork form with Forks")
	}
	tok := h.forkToken("done")
	for _, bad := range []struct {
		what string
		gen  uint64
		to   string
		code int
	}{
		{"a taken name", 2, "other", http.StatusConflict},
		{"its own name", 2, "done", http.StatusBadRequest},
		{"no valid name", 2, "../x", http.StatusBadRequest},
		{"a generation not kept", 999, "branch", http.StatusBadRequest},
	} {
		if code, body := postFork(h, "done", tok, bad.gen, bad.to); code != bad.code {
			t.Errorf("%s: %d %s, want %d", bad.what, code, body, bad.code)
		}
	}
	if code, _ := postFork(h, "done", h.forkToken("other"), 2, "branch"); code != http.StatusForbidden {
		t.Errorf("another session's token: %d, want 403", code)
	}
	if _, err := ReadDirFork(reqs, "branch"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused request was recorded: %v", err)
	}
	if code, body := postFork(h, "done", tok, 2, "branch"); code != http.StatusSeeOther {
		t.Fatalf("fork: %d %s", code, body)
	}
	rec, err := ReadDirFork(reqs, "branch")
	if err != nil || rec.From != "done" || rec.Generation != 2 || rec.To != "branch" {
		t.Fatalf("recorded: %+v %v", rec, err)
	}
	h2 := viewer()
	if code, body := postFork(h2, "done", h2.forkToken("done"), 3, "branch"); code != http.StatusConflict || !strings.Contains(body, ErrForkExists.Error()) {
		t.Errorf("a second request for the name: %d %s, want 409", code, body)
	}
	if rec, _ := ReadDirFork(reqs, "branch"); rec == nil || rec.Generation != 2 {
		t.Errorf("after the second request: %+v, want the first", rec)
	}
	// The host runs the fork.
	if res, err := iterate.New(toyWorker{}, opts(rec.To)...).Resume(ctx, iterate.ForkFrom(rec.From, rec.Generation)); res == nil {
		t.Fatal(err)
	}
	c, err := d.Load(ctx, "branch")
	if err != nil || c.Origin.Session != "done" || c.Origin.Generation != 2 {
		t.Errorf("the fork run by the host: %+v %v", c, err)
	}
}
