package view

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
)

// hostList is a host's extras of every session, by name, told whole
// (Extras) or a page at a time (ExtrasAfter), counting the pages asked
// and the sessions they told.
type hostList struct {
	m     map[string]Extra
	pages int
	told  int
	fail  int // the pages asked for after this many fail (0: none)
}

func (l *hostList) all(context.Context) (map[string]Extra, error) { return l.m, nil }

func (l *hostList) one(_ context.Context, s string) (Extra, error) { return l.m[s], nil }

func (l *hostList) after(_ context.Context, after string, limit int) ([]SessionExtra, error) {
	l.pages++
	if l.fail > 0 && l.pages > l.fail {
		return nil, errors.New("host down")
	}
	var out []SessionExtra
	for _, name := range slices.Sorted(maps.Keys(l.m)) {
		if name > after && len(out) < limit {
			out = append(out, SessionExtra{Session: name, Extra: l.m[name]})
		}
	}
	l.told += len(out)
	return out, nil
}

// mergeFixture is a store of stored sessions and a host knowing most of
// them and queued ones besides, interleaved by name: of n names, every
// 5th is queued (host only, status queued), every 7th stored but unknown
// to the host, every 11th queued without a status (not listed), the rest
// both, of kinds fix and plan; then tail queued sessions named t…, after
// every stored one.
func mergeFixture(t *testing.T, n, tail int) (*checkpoint.Memory, *hostList) {
	t.Helper()
	ctx := context.Background()
	m := new(checkpoint.Memory)
	host := &hostList{m: map[string]Extra{}}
	statuses := []string{"converged", "escalated", "running", "budget_exhausted"}
	now := time.Now()
	for i := range n {
		name := fmt.Sprintf("s%05d", i)
		kind := []string{"fix", "plan"}[i%2]
		switch {
		case i%5 == 0:
			host.m[name] = Extra{Kind: kind, Status: "queued"}
		case i%11 == 0:
			host.m[name] = Extra{Kind: kind}
		default:
			st := statuses[i%len(statuses)]
			if err := m.Save(ctx, &checkpoint.Checkpoint{Session: name, Status: st, Iteration: i % 9,
				Reason: "r" + name, Time: now.Add(-time.Duration(i) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if i%7 != 0 {
				host.m[name] = Extra{Kind: kind, Status: st, Holder: "w" + name[len(name)-1:]}
			}
		}
	}
	for i := range tail {
		host.m[fmt.Sprintf("t%05d", i)] = Extra{Kind: "fix", Status: "queued"}
	}
	return m, host
}

// pageOf lists the page of the list the query asks for, as listRows
// makes it.
func pageOf(h *Handler, query string) listPage {
	r := httptest.NewRequest(http.MethodGet, "http://localhost/?"+query, nil)
	p := h.listRows(r)
	p.Ages, p.Statuses = nil, nil
	if !p.Searched {
		p.SearchedTo = "" // shown only on a partial page
	}
	return p
}

// TestExtrasAfterListsAsExtras guards issue 31 (a fleet's list page costs
// the same at 100,000 sessions): the list read with ExtrasAfter, merging
// the host's pages with the store's listing, shows every page as the
// list read with Extras' map of every session does: the same rows with
// the same extras, queued sessions (the host's, with a status and no
// checkpoint) in their place by name, sessions the host does not know,
// the same next links, totals and partial pages, under every filter and
// order, walking each query's pages to its end. Mutations caught
// (checked to fail): the host's sessions after the store's last not
// listed (mergeRows without hostOnly("")); a stored session's extras
// dropped (not taken from the host's matching entry); host-only rows not
// counted in Total.
func TestExtrasAfterListsAsExtras(t *testing.T) {
	m, host := mergeFixture(t, 700, 30)
	old := newHandler(t, m, Extras(host.all))
	merged := newHandler(t, m, ExtrasAfter(host.after), ExtraOf(host.one))
	for _, q := range []string{"", "status=queued", "status=converged", "kind=fix", "kind=plan&status=escalated",
		"q=s0012", "q=w3", "sort=age", "status=escalated&sort=iteration", "age=3h", "after=s00333", "status=nothing"} {
		query, pages, rows := q, 0, 0
		for {
			want, got := pageOf(old, query), pageOf(merged, query)
			if d := cmp.Diff(want, got, cmp.AllowUnexported(row{})); d != "" {
				t.Fatalf("?%s: the merged page differs from the map's (-map +merged):\n%s", query, d)
			}
			pages++
			rows += len(got.Rows)
			if got.Next == "" || pages > 20 {
				break
			}
			query = strings.TrimPrefix(got.Next, "?")
		}
		t.Logf("?%s: %d pages, %d rows", q, pages, rows)
	}
	// The fixture has each case the merge meets.
	p := pageOf(merged, "")
	has := map[string]bool{}
	for _, rw := range p.Rows {
		has["queued"] = has["queued"] || rw.Status == "queued" && !rw.stored
		has["unknown"] = has["unknown"] || rw.stored && rw.Kind == ""
		has["known"] = has["known"] || rw.stored && rw.Kind != ""
	}
	if len(has) != 3 || !has["queued"] || !has["unknown"] || !has["known"] || p.Next == "" {
		t.Errorf("the first page lacks a case: %v, next %q", has, p.Next)
	}
}

// TestExtrasAfterReadsItsPage guards issue 31: with ExtrasAfter, a page of
// the list reads the host's pages its rows need, not the host's every
// session: among 5,000 sessions, the first page, a page in the middle and
// a page filtered by status (queued, which only the host tells) each ask
// for at most a few pages, a filter that few sessions pass at most
// maxScan sessions' worth; and a failing host is said on the page, whose
// rows go on without extras. Mutations caught (checked to fail): the
// host read to its end before merging (extrasPage of every session), the
// host-only sessions not counted in maxScan (a filter no session passes
// reads the host's every page).
func TestExtrasAfterReadsItsPage(t *testing.T) {
	m, host := mergeFixture(t, 5000, 3000)
	h := newHandler(t, m, ExtrasAfter(host.after), ExtraOf(host.one))
	for _, c := range []struct {
		query    string
		maxPages int // of extrasPage sessions
	}{
		{"", 2},
		{"after=s02500", 2},
		{"status=queued", 7},
		{"status=nothing", 2*maxScan/extrasPage + 2},
		{"status=queued&after=s04900", 2},
		{"status=nothing&after=s04999", maxScan/extrasPage + 1},
	} {
		host.pages, host.told = 0, 0
		p := pageOf(h, c.query)
		if host.pages > c.maxPages+1 || host.told > c.maxPages*extrasPage {
			t.Errorf("?%s: the host read %d times, telling %d sessions; want at most %d pages", c.query, host.pages, host.told, c.maxPages)
		}
		if strings.HasPrefix(c.query, "status=nothing") && !p.Searched {
			t.Errorf("?%s: the page is not partial", c.query)
		}
		if c.query == "status=queued" && len(p.Rows) != pageRows {
			t.Errorf("?%s: %d rows, want %d", c.query, len(p.Rows), pageRows)
		}
	}
	host.fail, host.pages = 1, 0 // the page's second read of the host fails
	p := pageOf(h, "status=converged")
	if len(p.Rows) != pageRows || len(p.Errors) != 1 || !strings.Contains(p.Errors[0], "host down") {
		t.Errorf("a failing host: %d rows, errors %q", len(p.Rows), p.Errors)
	}
	if p.Rows[0].Kind == "" || p.Rows[len(p.Rows)-1].Kind != "" {
		t.Errorf("a failing host: the rows before the failure lack their extras, or those after have some")
	}
	if _, err := New(m, ExtrasAfter(host.after)); err == nil {
		t.Errorf("ExtrasAfter without ExtraOf accepted")
	}
}
