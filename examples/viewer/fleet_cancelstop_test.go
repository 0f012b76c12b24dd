package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate/fleet"
)

// TestFleetCancelExtendedStop guards the viewer's actions over a fleet
// (issues 31 and 34): a budget_exhausted session's page offers no cancel
// (the stop is its end) but the extension form; once its stop is
// extended, the stop is not its end (a worker will resume it), and the
// page offers the cancel that stops the resume; once cancelled, the page
// offers neither the extension form, which fleet.Fleet.Extend would
// refuse (409), nor the cancel. Mutations caught (checked to fail): the
// cancel offered by status alone (none on the extended stop); the
// extension form offered whatever view.Extra.Cancelled says (or
// examples/viewer not passing fleet.Session.Cancelled).
func TestFleetCancelExtendedStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, dbURL, schema, _ := thriftyFleet(ctx, t)
	f, err := fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	cancelForm := regexp.MustCompile(`<form id="cancel" method="post" action="\./thrifty/cancel"><input type="hidden" name="token" value="([0-9a-f]+)">`)
	extendForm := regexp.MustCompile(`<form id="extend" method="post"`)
	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--extend", "--cancel")
	if _, body := fetch(t, base+"/session/thrifty"); cancelForm.MatchString(body) || !extendForm.MatchString(body) {
		t.Fatalf("the stop not extended: cancel offered %v, extension offered %v", cancelForm.MatchString(body), extendForm.MatchString(body))
	}
	if err := f.Extend(ctx, "thrifty", budget.Limits{Tokens: 500}, "alice"); err != nil {
		t.Fatal(err)
	}
	_, body := fetch(t, base+"/session/thrifty")
	m := cancelForm.FindStringSubmatch(body)
	if m == nil || extendForm.MatchString(body) {
		t.Fatalf("the extended stop (no worker runs): cancel offered %v, extension offered %v:\n%s", m != nil, extendForm.MatchString(body), body)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.PostForm(base+"/session/thrifty/cancel", url.Values{"token": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d", res.StatusCode)
	}
	if err := f.Extend(ctx, "thrifty", budget.Limits{Tokens: 700}, "bob"); !errors.Is(err, fleet.ErrCancelled) {
		t.Fatalf("premise: Extend of the cancelled session: %v, want ErrCancelled", err)
	}
	_, body = fetch(t, base+"/session/thrifty")
	if extendForm.MatchString(body) || cancelForm.MatchString(body) || !strings.Contains(body, "budget_exhausted") {
		t.Errorf("the cancelled stop: extension offered %v, cancel offered %v:\n%s", extendForm.MatchString(body), cancelForm.MatchString(body), body)
	}
}
