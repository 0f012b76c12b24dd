package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate/fleet"
	"github.com/refine-go/refine/iterate/view"
)

// statements records the SQL a pool runs.
type statements struct {
	mu  sync.Mutex
	sql []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, d.SQL)
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements recorded since the last take.
func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sql
	s.sql = nil
	return out
}

// TestFleetSessionPageReadsOneSession guards issue 31, item 10 for a
// fleet (a session's page costs the same however many sessions the fleet
// has): the page of a fleet's session and its /live read what the fleet
// knows of that session alone (fleet.Fleet.Session,
// through view.ExtraOf), never the list of every session
// (fleet.Fleet.Sessions; nor does the list page, which reads a page of
// them, fleet.Fleet.SessionsAfter); the page still tells what the fleet
// knows (kind, the extension). Mutations caught (checked to fail):
// fleetOptions without view.ExtraOf (the page reads every session: the
// listing's statement, the sessions table joined whole); the list wired
// with view.Extras (every session read for the list).
func TestFleetSessionPageReadsOneSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL, schema, _ := thriftyFleet(ctx, t)
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
	h, err := view.New(f.Store(), fleetOptions(f, options{fleetSchema: schema, extend: true})...)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost"+path, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		return w.Body.String()
	}
	readsAll := func(what string) {
		t.Helper()
		for _, q := range rec.take() {
			if listsAll(q) {
				t.Errorf("%s read every session of the fleet:\n%s", what, q)
				return
			}
		}
	}
	rec.take()
	if page := get("/session/thrifty"); !strings.Contains(page, "<tr><th>Kind</th><td>spend</td></tr>") {
		t.Errorf("the page does not tell the session's kind:\n%s", page)
	}
	readsAll("the session's page")
	get("/session/thrifty/live")
	readsAll("its /live")
	if err := f.Extend(ctx, "thrifty", budget.Limits{Tokens: 500}, "alice"); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if page := get("/session/thrifty"); !strings.Contains(page, "Extended to tokens 500 by alice") {
		t.Errorf("the page does not tell the extension:\n%s", page)
	}
	readsAll("the page of the extended session")
	get("/session/thrifty/live")
	readsAll("its /live")
	// The list reads a page of them, not all.
	if list := get("/"); !strings.Contains(list, "extended to tokens 500 by alice") {
		t.Errorf("the list does not tell the extension:\n%s", list)
	}
	readsAll("the list")
}

// listsAll reports whether q is the statement of fleet.Fleet.Sessions,
// which reads every session: the sessions table joined whole (Session
// picks one of it, SessionsAfter joins a page of it, a subquery), in
// name order.
func listsAll(q string) bool {
	return wholeTable.MatchString(q) && strings.HasSuffix(strings.TrimSpace(q), "ORDER BY s.session")
}

var wholeTable = regexp.MustCompile(`fleet_sessions s\s+LEFT JOIN`)
