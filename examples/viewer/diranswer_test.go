package main

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/view"
)

// TestDirAnswer guards issue 31, item 13: with --dir and --answer-dir the
// page of an escalated session has an answer form; its answer is recorded
// in the answer directory (view.ReadDirAnswer reads it) before the 303, a
// second answer, from a second viewer, gets 409; without --answer-dir
// there is no form and the POST is not served (off by default).
// Mutations caught: --answer-dir not wired (no form), answers allowed
// without it.
func TestDirAnswer(t *testing.T) {
	dir, adir := t.TempDir(), t.TempDir()
	runLoop(t, checkpoint.NewDir(dir), "asked", true)
	c, err := checkpoint.NewDir(dir).Load(context.Background(), "asked")
	if err != nil {
		t.Fatal(err)
	}
	form := regexp.MustCompile(`<form id="answer" method="post" action="\./asked/answer">\s*<input type="hidden" name="token" value="([0-9a-f]+)"><input type="hidden" name="generation" value="(\d+)">`)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	answer := func(base, text string) int {
		t.Helper()
		_, body := fetch(t, base+"/session/asked")
		m := form.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no answer form on %s", base)
		}
		res, err := client.PostForm(base+"/session/asked/answer", url.Values{"token": {m[1]}, "answer": {text}, "generation": {m[2]}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	off := server(t, "--dir", dir)
	if _, body := fetch(t, off+"/session/asked"); form.MatchString(body) {
		t.Error("an answer form without --answer-dir")
	}
	if res, err := client.PostForm(off+"/session/asked/answer", url.Values{"answer": {"x"}}); err != nil || res.StatusCode == http.StatusSeeOther {
		t.Errorf("a POST without --answer-dir: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	if _, err := view.ReadDirAnswer(adir, "asked", c.Generation); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an answer recorded without --answer-dir: %v", err)
	}

	if code := answer(server(t, "--dir", dir, "--answer-dir", adir), "go on"); code != http.StatusSeeOther {
		t.Fatalf("answer: %d", code)
	}
	rec, err := view.ReadDirAnswer(adir, "asked", c.Generation)
	if err != nil || rec.Answer != "go on" {
		t.Fatalf("recorded: %+v %v", rec, err)
	}
	if code := answer(server(t, "--dir", dir, "--answer-dir", adir), "no"); code != http.StatusConflict {
		t.Errorf("a second answer from a second viewer: %d, want 409", code)
	}
	if rec, _ := view.ReadDirAnswer(adir, "asked", c.Generation); rec == nil || rec.Answer != "go on" {
		t.Errorf("after the second answer: %+v", rec)
	}
}

// TestDirExtend guards issue 31, item 13: with --dir and --extend-dir a
// budget_exhausted session's page has the extension form, and its POST
// records the request (view.ReadDirExtension reads it); without
// --extend-dir there is no form. Mutation caught: --extend-dir not wired.
func TestDirExtend(t *testing.T) {
	dir, edir := t.TempDir(), t.TempDir()
	d := checkpoint.NewDir(dir)
	if res, err := iterate.New(worker{}, iterate.WithCheckpointer(d), iterate.WithSession("spent"),
		iterate.WithBudget(budget.Limits{Tokens: 1})).Run(context.Background(), state{}); res == nil || res.Status != iterate.BudgetExhausted {
		t.Fatalf("premise: budget_exhausted: %v %v", res, err)
	}
	form := regexp.MustCompile(`<form id="extend" method="post" action="\./spent/extend"><input type="hidden" name="token" value="([0-9a-f]+)"><input type="hidden" name="generation" value="(\d+)">`)
	if _, body := fetch(t, server(t, "--dir", dir)+"/session/spent"); form.MatchString(body) {
		t.Error("an extension form without --extend-dir")
	}
	base := server(t, "--dir", dir, "--extend-dir", edir)
	_, body := fetch(t, base+"/session/spent")
	m := form.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no extension form with --extend-dir")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.PostForm(base+"/session/spent/extend", url.Values{"token": {m[1]}, "generation": {m[2]},
		"tokens": {"100000"}, "cost": {"0"}, "calls": {"0"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	gen, _ := strconv.ParseUint(m[2], 10, 64)
	if rec, err := view.ReadDirExtension(edir, "spent", gen); res.StatusCode != http.StatusSeeOther || err != nil || rec.To.Tokens != 100000 {
		t.Errorf("extend: %d, recorded %+v %v", res.StatusCode, rec, err)
	}
}

// TestDirFork guards issue 31, item 13: with --dir and --fork-dir a
// session's page has the fork form, and its POST records the request
// (view.ReadDirFork reads it); without --fork-dir there is no form.
// Mutation caught: --fork-dir not wired.
func TestDirFork(t *testing.T) {
	dir, fdir := t.TempDir(), t.TempDir()
	runLoop(t, checkpoint.NewDir(dir), "done", false)
	form := regexp.MustCompile(`<form id="fork" method="post" action="\./done/fork"><input type="hidden" name="token" value="([0-9a-f]+)">\s*<p>Fork from generation <input name="generation" inputmode="numeric" value="(\d+)"`)
	if _, body := fetch(t, server(t, "--dir", dir)+"/session/done"); form.MatchString(body) {
		t.Error("a fork form without --fork-dir")
	}
	base := server(t, "--dir", dir, "--fork-dir", fdir)
	_, body := fetch(t, base+"/session/done")
	m := form.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no fork form with --fork-dir")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.PostForm(base+"/session/done/fork", url.Values{"token": {m[1]}, "generation": {m[2]}, "to": {"branch"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if rec, err := view.ReadDirFork(fdir, "branch"); res.StatusCode != http.StatusSeeOther || err != nil || rec.From != "done" || strconv.FormatUint(rec.Generation, 10) != m[2] {
		t.Errorf("fork: %d, recorded %+v %v", res.StatusCode, rec, err)
	}
}
