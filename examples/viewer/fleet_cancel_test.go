package main

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFleetCancel guards issue 31, item 13: with --cancel a fleet
// session's page has a cancel button (none without it); its POST cancels
// the session through fleet.Fleet.Cancel, and the page, once the 303 came,
// comes to show it cancelled (the cancellation is in the database). Mutations
// caught: --cancel not wired (no button), the button served without it.
func TestFleetCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL, schema := escalatedPlan(ctx, t, "ticket-9", "T-9", "", nil)
	form := regexp.MustCompile(`<form id="cancel" method="post" action="\./ticket-9/cancel"><input type="hidden" name="token" value="([0-9a-f]+)">`)
	if _, body := fetch(t, server(t, "--db", dbURL, "--fleet-schema", schema)+"/session/ticket-9"); form.MatchString(body) {
		t.Error("a cancel button without --cancel")
	}
	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--cancel")
	_, body := fetch(t, base+"/session/ticket-9")
	m := form.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no cancel button on the escalated session's page: %s", body)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.PostForm(base+"/session/ticket-9/cancel", url.Values{"token": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d", res.StatusCode)
	}
	// The cancellation is recorded when Cancel returns; the checkpoint
	// says so at once when no worker holds the session, else once its
	// worker lets it go: the page is read until it does.
	for {
		_, body = fetch(t, base+"/session/ticket-9")
		if strings.Contains(body, `<span class="status s-cancelled">cancelled</span>`) && !form.MatchString(body) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after the cancel the page shows: %s", regexp.MustCompile(`(?s)<table id="summary">.*?</table>`).FindString(body))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
