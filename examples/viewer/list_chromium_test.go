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
