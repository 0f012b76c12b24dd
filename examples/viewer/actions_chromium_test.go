//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
	"github.com/refine-go/refine/iterate/view"
)

// The Chromium tests of the actions click through the real pages and check
// what the store (the directories the host reads, the fleet's database)
// holds afterwards, not only the page; each writes a screenshot.

// replaceText replaces the text of the input that selector finds with
// text, as a user selecting it and typing would.
func (p *tab) replaceText(selector, text string) {
	p.t.Helper()
	sel, _ := json.Marshal(selector)
	p.eval(`(function(){const e=document.querySelector(`+string(sel)+`); e.focus(); e.select()})()`, nil)
	p.do("Input.insertText", map[string]any{"text": text}, nil)
}

// submit clicks the button that selector finds and waits for the page the
// form's POST leads to: a page loaded anew (the one clicked on is marked)
// whose path ends with path.
func (p *tab) submit(selector, path string) {
	p.t.Helper()
	p.eval(`window.viewerClicked = true`, nil)
	p.click(selector)
	data, _ := json.Marshal(path)
	p.waitFor("the page after the click on "+selector, `!window.viewerClicked && document.readyState === 'complete' && location.pathname.endsWith(`+string(data)+`)`)
}

// patience bounds a wait for the outcome of a click (within the test's
// context, which leaves the checks time to say why they fail).
const patience = time.Minute

// until polls check, every 50 milliseconds, until it returns nil, and
// fails the test with its last error after patience.
func until(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.After(patience)
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("%s: %v", what, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestChromiumDirAnswer guards issue 31, item 13, in a browser: an
// operator types an answer to a directory's escalated session
// (--answer-dir) and submits it; the answer is recorded (view.ReadDirAnswer)
// and the page comes back; a second answer from another viewer's tab opened
// before it shows the operator the typed refusal (409, "answered already"), the
// first answer kept. Mutations caught: the answer form not posting (no
// record), a second answer recorded over the first (no refusal shown).
func TestChromiumDirAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, adir := t.TempDir(), t.TempDir()
	d := checkpoint.NewDir(dir)
	runLoop(t, d, "asked", true)
	c, err := d.Load(ctx, "asked")
	if err != nil {
		t.Fatal(err)
	}
	// Two viewers, so that the refusal comes from the record, not from
	// the first viewer's memory.
	base, other := server(t, "--dir", dir, "--answer-dir", adir), server(t, "--dir", dir, "--answer-dir", adir)
	b := startBrowser(t)
	first, second := b.newTab(ctx, t), b.newTab(ctx, t)
	for p, url := range map[*tab]string{first: base, second: other} {
		p.navigate(url + "/session/asked")
		p.waitFor("the answer form", `document.querySelector('form#answer button[type=submit]')`)
	}
	first.typeInto("#answer-text", "go on <please>")
	first.click(`form#answer button[type=submit]`)
	first.waitFor("the session's page after the answer", `location.pathname.endsWith('/session/asked') && document.readyState === 'complete'`)
	for {
		rec, err := view.ReadDirAnswer(adir, "asked", c.Generation)
		if err == nil {
			if rec.Answer != "go on <please>" {
				t.Fatalf("recorded %q", rec.Answer)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the answer was not recorded: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	second.typeInto("#answer-text", "no")
	second.click(`form#answer button[type=submit]`)
	second.waitFor("the refusal", `document.body && document.body.innerText.includes('answered already')`)
	second.screenshot("dir-answer-refused.png")
	if rec, _ := view.ReadDirAnswer(adir, "asked", c.Generation); rec == nil || rec.Answer != "go on <please>" {
		t.Errorf("after the second answer: %+v", rec)
	}
}

// TestChromiumDirFork guards issue 31, item 13 (fork from a generation) in a
// browser: on a directory session's page (--fork-dir) an operator types an
// older kept generation and a new session's name into the fork form and
// clicks it; the page comes back, and the request recorded for the host
// (view.ReadDirFork) names that generation, the session and the new name.
// Mutations caught: the form's generation not taken (the newest one
// recorded instead), the form not posting (no record).
func TestChromiumDirFork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, fdir := t.TempDir(), t.TempDir()
	runLoop(t, checkpoint.NewDir(dir), "done", false)
	base := server(t, "--dir", dir, "--fork-dir", fdir)
	page := startBrowser(t).newTab(ctx, t)
	page.navigate(base + "/session/done")
	page.waitFor("the fork form", `document.querySelector('form#fork button[type=submit]')`)
	// The oldest kept generation, as the page lists them, and the newest.
	var gens []uint64
	page.eval(`[...document.querySelectorAll('#generations tbody tr td:first-child')].map(td => parseInt(td.textContent, 10))`, &gens)
	var newest uint64
	page.eval(`parseInt(document.querySelector('form#fork input[name=generation]').value, 10)`, &newest)
	if len(gens) < 2 {
		t.Fatalf("premise: two kept generations or more, the page lists %v", gens)
	}
	from := gens[0]
	for _, g := range gens {
		from = min(from, g)
	}
	if from == newest {
		t.Fatalf("premise: a kept generation older than %d, the page lists %v", newest, gens)
	}
	page.replaceText(`form#fork input[name=generation]`, strconv.FormatUint(from, 10))
	page.typeInto(`form#fork input[name=to]`, "done-branch")
	page.screenshot("dir-fork-typed.png")
	page.submit(`form#fork button[type=submit]`, "/session/done")
	page.screenshot("dir-fork-requested.png")
	var rec *view.ForkRecord
	until(t, "the fork was not recorded", func() (err error) {
		rec, err = view.ReadDirFork(fdir, "done-branch")
		return err
	})
	if rec.From != "done" || rec.Generation != from || rec.To != "done-branch" {
		t.Errorf("recorded %+v, want from done at generation %d to done-branch", rec, from)
	}
}

// TestChromiumDirExtend guards issue 31, item 13 (resume a stopped session
// with a raised budget) in a browser: on the page of a directory's
// budget_exhausted session (--extend-dir) an operator raises the tokens
// in the extension form and clicks it; the page comes back, and the
// request recorded for the host (view.ReadDirExtension) holds the typed
// limit for the stop the page showed. Mutations caught: the typed limit
// not taken (the old one recorded, or none: refused as not raising), the
// form not posting (no record).
func TestChromiumDirExtend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, edir := t.TempDir(), t.TempDir()
	d := checkpoint.NewDir(dir)
	if res, err := iterate.New(worker{}, iterate.WithCheckpointer(d), iterate.WithSession("spent"),
		iterate.WithBudget(budget.Limits{Tokens: 1})).Run(ctx, state{}); res == nil || res.Status != iterate.BudgetExhausted {
		t.Fatalf("premise: budget_exhausted: %v %v", res, err)
	}
	c, err := d.Load(ctx, "spent")
	if err != nil {
		t.Fatal(err)
	}
	base := server(t, "--dir", dir, "--extend-dir", edir)
	page := startBrowser(t).newTab(ctx, t)
	page.navigate(base + "/session/spent")
	page.waitFor("the extension form", `document.querySelector('form#extend button[type=submit]')`)
	page.replaceText(`form#extend input[name=tokens]`, "250000")
	page.screenshot("dir-extend-typed.png")
	page.submit(`form#extend button[type=submit]`, "/session/spent")
	page.screenshot("dir-extend-requested.png")
	var rec *view.ExtensionRecord
	until(t, "the extension was not recorded", func() (err error) {
		rec, err = view.ReadDirExtension(edir, "spent", c.Generation)
		return err
	})
	if rec.To.Tokens != 250000 {
		t.Errorf("recorded %+v, want tokens raised to 250000", rec)
	}
}

// TestChromiumFleetCancel guards issue 31, item 13 (cancel) in a browser:
// on a fleet session's page (--cancel) an operator clicks the cancel
// button; the page comes to show the session cancelled, with no button,
// and the fleet's database has it cancelled (fleet.Fleet.Session, from a
// fleet handle of the test's own). Mutations caught: the button not
// posting, or the POST not reaching fleet.Fleet.Cancel (the fleet keeps
// the session escalated).
func TestChromiumFleetCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL, schema := escalatedPlan(ctx, t, "ticket-5", "T-5", "", nil)
	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--cancel")
	page := startBrowser(t).newTab(ctx, t)
	url := base + "/session/ticket-5"
	page.navigate(url)
	page.waitFor("the cancel button", `document.querySelector('form#cancel button[type=submit]')`)
	page.screenshot("fleet-cancel-offered.png")
	page.submit(`form#cancel button[type=submit]`, "/session/ticket-5")
	// The fleet has the cancellation once Cancel returned; the page shows
	// it once the checkpoint says so too: it is reloaded until then.
	deadline := time.After(patience)
	for !page.truth(`document.querySelector('#summary .status') && document.querySelector('#summary .status').textContent == 'cancelled' && !document.getElementById('cancel')`) {
		select {
		case <-deadline:
			var text string
			page.eval(`document.body.innerText`, &text)
			t.Fatalf("the page never showed the session cancelled:\n%s", text)
		case <-time.After(100 * time.Millisecond):
		}
		page.navigate(url)
	}
	page.screenshot("fleet-cancelled.png")
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f, err := fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := f.Session(ctx, "ticket-5"); err != nil || s.Status != fleet.Cancelled {
		t.Errorf("the fleet has the session %s, %v; want cancelled", s.Status, err)
	}
}

// TestChromiumFleetExtend guards issue 34, item 1 and issue 31, item 13
// (resume a stopped session with a raised budget) in a browser: on the
// page of a fleet's budget_exhausted session (--extend) an operator raises
// the tokens from 300 to 500 and clicks the form's button; the page comes
// back telling the extension as the fleet has it (fleet.Fleet.Session's
// Extension: its limits, who, when), and a worker resumes the session under the typed limit: 2 more steps,
// 500 tokens, the extension recorded. Mutations caught: the button not
// posting, or the POST not reaching fleet.Fleet.Extend (not extended), the
// typed limit not taken (another budget).
func TestChromiumFleetExtend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, dbURL, schema, start := thriftyFleet(ctx, t)
	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--extend")
	page := startBrowser(t).newTab(ctx, t)
	page.navigate(base + "/session/thrifty")
	page.waitFor("the extension form", `document.querySelector('form#extend button[type=submit]')`)
	page.replaceText(`form#extend input[name=tokens]`, "500")
	page.screenshot("fleet-extend-typed.png")
	page.submit(`form#extend button[type=submit]`, "/session/thrifty")
	page.screenshot("fleet-extend-requested.png")
	f, err := fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	var x *fleet.Extension
	until(t, "the fleet has no extension of the stop", func() error {
		s, err := f.Session(ctx, "thrifty")
		if err == nil && s.Extension == nil {
			err = errors.New("the session's stop is not extended")
		}
		x = s.Extension
		return err
	})
	// The page the browser came back to tells the fleet's extension, each
	// figure the fleet's (mutation caught: the viewer's extras telling
	// an empty extension — "Extended:" alone).
	var told string
	page.eval(`document.querySelector('tr#extended td') ? document.querySelector('tr#extended td').textContent : ''`, &told)
	if want := "Extended to tokens 500 by " + x.By + " at " + x.At.UTC().Format("2006-01-02 15:04:05 UTC"); !strings.HasPrefix(told, want) {
		t.Errorf("the page tells %q; want %q…", told, want)
	}
	kind, _ := start()
	res, err := kind.Wait(ctx, "thrifty")
	if err != nil || res.Status != iterate.BudgetExhausted || res.State.Steps != 5 || res.Usage.Tokens != 500 ||
		len(res.Extensions) != 1 || res.Extensions[0].To.Tokens != 500 {
		t.Fatalf("after the extension: %v (steps %d, tokens %d, extensions %+v), %v; want 5 steps, 500 tokens, one extension to 500",
			res.Status, res.State.Steps, res.Usage.Tokens, res.Extensions, err)
	}
}
