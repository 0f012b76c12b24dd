//go:build unix

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/view"
)

// TestChromiumListLive guards issue 31, item 12, in a browser: the list
// page, under its strict CSP, polls the list's /live and reloads when a
// session on it saves a new generation (here a running session that
// converges), and shows each session's tokens and cost, the library's
// (iterate.Inspect's Usage). Mutations caught: the list's script removed
// or blocked by the CSP (the page still shows "running"), the usage
// columns removed or not the library's.
func TestChromiumListLive(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no headless Chromium: no chromium in PATH (Debian's chromium package)")
	}
	m := new(checkpoint.Memory)
	runLoop(t, m, "run", false)
	ctx := context.Background()
	c, err := m.Load(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := iterate.Inspect(c)
	if err != nil || rep.Usage.Tokens == 0 {
		t.Fatalf("the loop's usage %+v, %v (the test's premise: tokens spent)", rep, err)
	}
	next := c.Clone()
	next.Generation, next.Token = 0, 0
	c.Status, c.Generation, c.Token, c.Reason = string(iterate.Running), 0, 0, "running"
	if err := m.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	h, err := view.New(m, view.Poll(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	polled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/live" {
			once.Do(func() {
				if err := m.Save(r.Context(), next); err != nil {
					t.Error(err)
				}
				close(polled)
			})
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dom := string(chromium(t, []string{"--dump-dom", "--virtual-time-budget=5000"}, srv.URL+"/"))
	select {
	case <-polled:
	default:
		t.Fatal("the list page never polled its /live")
	}
	if !strings.Contains(dom, `<span class="status s-converged">converged</span>`) || strings.Contains(dom, `<span class="status s-running">`) {
		t.Errorf("the list did not follow the new generation:\n%s", dom)
	}
	cells := regexp.MustCompile(`<td class="n tokens">(\d+)</td><td class="n cost">([^<]*)</td>`).FindStringSubmatch(dom)
	if cells == nil || cells[1] != strconv.FormatInt(rep.Usage.Tokens, 10) || cells[2] != strconv.FormatFloat(rep.Usage.Cost, 'f', -1, 64) {
		t.Errorf("usage cells %q, the library says %d tokens, cost %v", cells, rep.Usage.Tokens, rep.Usage.Cost)
	}
}

// TestChromiumListFilter: an operator filters the list by status and
// sorts it with the page's form, in a browser: the page then shows the
// matching sessions only, with the filter and order kept in its form, and
// each row's tokens. Mutations caught: the form's status or sort not sent
// (no name), the status filter not applied.
func TestChromiumListFilter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	runLoop(t, d, "done", false)
	runLoop(t, d, "asked", true)
	c, err := d.Load(ctx, "asked")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	base := server(t, "--dir", dir)
	page := startBrowser(t).newTab(ctx, t)
	page.navigate(base + "/")
	page.waitFor("the list", `document.querySelectorAll('#sessions tr[data-session]').length === 2`)
	page.eval(`document.querySelector('select[name=status]').value='escalated'`, nil)
	page.eval(`document.querySelector('select[name=sort]').value='tokens'`, nil)
	page.click(`#filters button[type=submit]`)
	page.waitFor("the filtered list", `location.search.includes('status=escalated') && document.readyState === 'complete'`)
	var got struct {
		Rows   []string
		Tokens []string
		Sort   string
	}
	page.eval(`({Rows: [...document.querySelectorAll('#sessions tr[data-session]')].map(r => r.dataset.session),
		Tokens: [...document.querySelectorAll('#sessions td.tokens')].map(c => c.textContent),
		Sort: document.querySelector('select[name=sort]').value})`, &got)
	if len(got.Rows) != 1 || got.Rows[0] != "asked" || got.Sort != "tokens" {
		t.Errorf("filtered by status escalated, sorted by tokens: rows %v, sort %q; want [asked], tokens", got.Rows, got.Sort)
	}
	if len(got.Tokens) != 1 || got.Tokens[0] != strconv.FormatInt(rep.Usage.Tokens, 10) {
		t.Errorf("tokens %v, the library says %d", got.Tokens, rep.Usage.Tokens)
	}
	page.screenshot("list-filtered.png")
}
