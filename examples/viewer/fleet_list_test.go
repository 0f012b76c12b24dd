package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate/fleet"
	"github.com/refine-go/refine/iterate/view"
)

var (
	listRow  = regexp.MustCompile(`(?s)<tr data-session="[^"]*".*?</tr>`)
	listNext = regexp.MustCompile(`<a id="next" href="\?([^"]+)"`)
	rowAge   = regexp.MustCompile(`>\d+[smhd]</td>`)
)

// TestFleetListReadsAPage guards issue 31 for a fleet's list (a page of
// it costs the same however many sessions the fleet has): the viewer's
// list (view.ExtrasAfter over fleet.Fleet.SessionsAfter) reads a page of
// the fleet's sessions, never every session (fleet.Fleet.Sessions), and
// shows every page as the list read with every session's extras
// (view.Extras) does: the same rows (kind, status, the extension of a
// stopped session, queued sessions interleaved by name, a session the
// store has that the fleet does not know), the same next links, under
// filters by status and kind. Mutations caught (checked to fail):
// fleetOptions with view.Extras for the list (every session read);
// extrasAfter dropping each page's last session (its kind and status
// lost, a queued session missing).
func TestFleetListReadsAPage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL, schema, start := thriftyFleet(ctx, t)
	kind, halt := start()
	halt() // no worker: the sessions below stay queued
	var subs []fleet.Submission[struct{}]
	for i := range 230 {
		subs = append(subs, fleet.Submission[struct{}]{Session: fmt.Sprintf("t%03d", i)}) // around "thrifty"
	}
	if _, err := kind.SubmitMany(ctx, subs); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	rec := &statements{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f, err := fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Extend(ctx, "thrifty", budget.Limits{Tokens: 500}, "alice"); err != nil {
		t.Fatal(err)
	}
	// A session the store has that the fleet does not know.
	if err := f.Store().Save(ctx, &checkpoint.Checkpoint{Session: "t100x", Status: "converged", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	merged, err := view.New(f.Store(), fleetOptions(f, options{fleetSchema: schema})...)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := view.New(f.Store(), view.Extras(extras(f, false)), view.ExtraOf(extraOf(f, false)))
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler, query string) (rows []string, next string) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost/?"+query, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET /?%s: %d %s", query, w.Code, w.Body)
		}
		for _, r := range listRow.FindAllString(w.Body.String(), -1) {
			rows = append(rows, rowAge.ReplaceAllString(r, ">age</td>"))
		}
		if m := listNext.FindStringSubmatch(w.Body.String()); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		return rows, next
	}
	for _, q := range []string{"", "status=queued", "kind=spend", "status=budget_exhausted", "status=converged"} {
		query, n := q, 0
		for pages := 0; pages < 10; pages++ {
			rec.take()
			got, next := get(merged, query)
			for _, s := range rec.take() {
				if listsAll(s) {
					t.Fatalf("?%s: the list read every session of the fleet:\n%s", query, s)
				}
			}
			want, wantNext := get(whole, query)
			if strings.Join(got, "\n") != strings.Join(want, "\n") || next != wantNext {
				t.Fatalf("?%s: the page differs from the list of every session's extras:\n%s\nnext %q\nwant:\n%s\nnext %q",
					query, strings.Join(got, "\n"), next, strings.Join(want, "\n"), wantNext)
			}
			n += len(got)
			if next == "" {
				break
			}
			query = next
		}
		t.Logf("?%s: %d rows", q, n)
		if want := map[string]int{"": 232, "status=queued": 230, "status=budget_exhausted": 1, "status=converged": 1}[q]; q != "kind=spend" && n != want {
			t.Errorf("?%s: %d rows, want %d", q, n, want)
		}
	}
}
