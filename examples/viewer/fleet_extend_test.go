package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// spent counts a spending session's steps.
type spent struct {
	Steps int `json:"steps"`
}

// thriftyFleet prepares, in a schema of its own on the test's server, a
// fleet whose session "thrifty" (of the kind "spend": 100 tokens a step,
// 300 at most) stopped at its budget after 3 steps, no worker left
// running. start starts a worker of the fleet, which halt stops (at the
// test's end otherwise). It returns the pool, the database's URL and the
// schema.
func thriftyFleet(ctx context.Context, t *testing.T) (pool *pgxpool.Pool, dbURL, schema string, start func() (kind *fleet.Kind[struct{}, spent], halt func())) {
	t.Helper()
	return spendFleet(ctx, t, false)
}

// spendFleet is thriftyFleet, its session parked at its budget's limit
// (iterate.WithParkAtLimit: escalated) rather than stopped when park is
// set.
func spendFleet(ctx context.Context, t *testing.T, park bool) (pool *pgxpool.Pool, dbURL, schema string, start func() (kind *fleet.Kind[struct{}, spent], halt func())) {
	t.Helper()
	dbURL = serverURL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	schema = fmt.Sprintf("viewer_extend_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	// A fleet of its own for each phase, worked until stopped: the
	// extension is posted while no worker runs, so that the second one
	// meets the stop extended by the first, not a session moved on.
	start = func() (*fleet.Kind[struct{}, spent], func()) {
		f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.Poll(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		kind := fleet.MustRegister(f, "spend", func(context.Context, struct{}) (fleet.Loop[spent], error) {
			step := func(_ context.Context, s spent, r iterate.Round) (spent, error) {
				r.Charge(budget.Usage{Tokens: 100})
				s.Steps++
				return s, nil
			}
			opts := []iterate.Option{iterate.WithBudget(budget.Limits{Tokens: 300}), iterate.WithMaxIterations(100)}
			if park {
				opts = append(opts, iterate.WithParkAtLimit())
			}
			return fleet.Loop[spent]{Worker: iterate.Func(step), Options: opts}, nil
		})
		work, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- f.Work(work) }()
		var once sync.Once
		halt := func() {
			once.Do(func() {
				stop()
				if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("Work: %v", err)
				}
			})
		}
		t.Cleanup(halt)
		return kind, halt
	}
	kind, halt := start()
	if _, err := kind.Submit(ctx, "thrifty", struct{}{}); err != nil {
		t.Fatal(err)
	}
	want := iterate.BudgetExhausted
	if park {
		want = iterate.Escalated
	}
	if res, _ := kind.Wait(ctx, "thrifty"); res == nil || res.Status != want || res.State.Steps != 3 {
		t.Fatalf("premise: %s after 3 steps: %v", want, res)
	}
	halt()
	return pool, dbURL, schema, start
}

// TestFleetExtend guards issue 34, item 1 (the viewer's action over a
// fleet): with --extend the page of a fleet's budget_exhausted session has
// the extension form (none without it); its POST extends the session
// through fleet.Fleet.Extend, a worker resumes it under the raised limits,
// every counter kept, and the extension is recorded in the session; a
// second, other extension of the same stop is refused (409), naming the
// accepted one. Mutations caught: --extend not wired (no form); a second
// extension of a stop taken as the first again (fleet.Extend's once per
// stop: 303, not 409).
func TestFleetExtend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL, schema, start := thriftyFleet(ctx, t)
	form := regexp.MustCompile(`<form id="extend" method="post" action="\./thrifty/extend"><input type="hidden" name="token" value="([0-9a-f]+)"><input type="hidden" name="generation" value="(\d+)">`)
	if _, body := fetch(t, server(t, "--db", dbURL, "--fleet-schema", schema)+"/session/thrifty"); form.MatchString(body) {
		t.Error("an extension form without --extend")
	}
	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--extend")
	_, body := fetch(t, base+"/session/thrifty")
	m := form.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no extension form with --extend: %s", body)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(tokens string) (int, string) {
		t.Helper()
		res, err := client.PostForm(base+"/session/thrifty/extend", url.Values{"token": {m[1]}, "generation": {m[2]},
			"tokens": {tokens}, "cost": {"0"}, "calls": {"0"}})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	if code, _ := post("500"); code != http.StatusSeeOther {
		t.Fatalf("extend: %d, want 303", code)
	}
	// Extended, not resumed yet: the page says so and offers no form
	// (mutation caught: extras not telling fleet.Session.Extended as
	// view.Extra.Extension — the form with the old limits again).
	if _, body := fetch(t, base+"/session/thrifty"); form.MatchString(body) || !strings.Contains(body, `<tr id="extended">`) {
		t.Errorf("the page of a stop extended: no sign of the extension, or the form again: %s", body)
	}
	if code, body := post("900"); code != http.StatusConflict || !strings.Contains(body, "already extended to tokens 500") {
		t.Errorf("a second, other extension of the same stop: %d %q, want 409 naming the accepted one", code, body)
	}
	kind, _ := start()
	res, err := kind.Wait(ctx, "thrifty")
	if err != nil || res.Status != iterate.BudgetExhausted || res.State.Steps != 5 || res.Usage.Tokens != 500 ||
		len(res.Extensions) != 1 || res.Extensions[0].To.Tokens != 500 {
		t.Fatalf("after the extension: %v (steps %d, tokens %d, extensions %+v), %v; want 5 steps, 500 tokens, one extension to 500",
			res.Status, res.State.Steps, res.Usage.Tokens, res.Extensions, err)
	}
}

// TestFleetExtendParked guards the viewer's extension of a fleet session
// parked at its budget's limit (iterate.WithParkAtLimit: escalated, its
// Escalation.Parked set): its page has the extension form beside the
// answer form, which says a plain answer stops the session at its budget;
// the form's POST extends it through fleet.Fleet.Extend, answering its
// question (who and when shown with the answer), after which the page
// offers neither form; a worker continues the session under the raised
// limits until it parks again. Mutations caught: the form offered for
// budget_exhausted only (no form on the parked page); the POST refusing a
// parked session (409, not 303).
func TestFleetExtendParked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL, schema, start := spendFleet(ctx, t, true)
	form := regexp.MustCompile(`<form id="extend" method="post" action="\./thrifty/extend"><input type="hidden" name="token" value="([0-9a-f]+)"><input type="hidden" name="generation" value="(\d+)">`)
	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--extend", "--answers")
	_, body := fetch(t, base+"/session/thrifty")
	m := form.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, `<form id="answer"`) || !strings.Contains(body, "a plain answer stops it there (budget_exhausted)") {
		t.Fatalf("the page of a parked session: want the extension form, and the answer form saying what a plain answer does: %s", body)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.PostForm(base+"/session/thrifty/extend", url.Values{"token": {m[1]}, "generation": {m[2]},
		"tokens": {"500"}, "cost": {"0"}, "calls": {"0"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("extend: %d %s, want 303", res.StatusCode, b)
	}
	_, body = fetch(t, base+"/session/thrifty")
	if form.MatchString(body) || strings.Contains(body, `<form id="answer"`) || !strings.Contains(body, "extend the budget to tokens 500") {
		t.Errorf("the page of a parked session extended: want no form, the extension as its answer: %s", body)
	}
	kind, _ := start()
	r, _ := kind.Wait(ctx, "thrifty")
	if r == nil || r.Status != iterate.Escalated || r.State.Steps != 5 || len(r.Extensions) != 1 || r.Extensions[0].To.Tokens != 500 {
		t.Fatalf("after the extension: %v; want parked again after 5 steps, one extension to 500", r)
	}
}
