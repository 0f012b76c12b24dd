package view

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

var (
	listFingerprint = regexp.MustCompile(`<body data-fingerprint="([0-9a-f]+)" data-poll="(\d+)">`)
	scriptNonce     = regexp.MustCompile(`<script nonce="([0-9a-f]+)">`)
)

// listLive GETs the list's /live with query and returns its fingerprint.
func listLive(t *testing.T, h *Handler, query string) string {
	t.Helper()
	resp, body := get(t, h, "/live"+query)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/live%s: %d %s", query, resp.StatusCode, body)
	}
	var l ListLive
	if err := json.Unmarshal([]byte(body), &l); err != nil || l.Fingerprint == "" {
		t.Fatalf("/live%s: %q: %v", query, body, err)
	}
	return l.Fingerprint
}

// TestListLive guards issue 31, item 12 (auto-refresh): the list page
// carries the fingerprint of its rows and a script, allowed by the page's
// CSP nonce and no other, that polls the list's /live for the same query
// and reloads when it differs; /live tells the page's fingerprint while
// nothing changed and another once a session on the page saved a new
// generation. Mutations caught: no script, or one the CSP does not allow
// (no nonce); /live ignoring the query (the filter's page); a fingerprint
// of the rows' names only (a session's progress never refreshes the
// page); a fingerprint that changes at every request.
func TestListLive(t *testing.T) {
	ctx := context.Background()
	m := testStore(t)
	h := newHandler(t, m)
	for _, query := range []string{"", "?status=escalated", "?after=asked"} {
		resp, body := get(t, h, "/"+query)
		fp := listFingerprint.FindStringSubmatch(body)
		if fp == nil || fp[2] != "2000" {
			t.Fatalf("/%s: no fingerprint and poll of 2000 ms on the body: %v", query, fp)
		}
		nonce := scriptNonce.FindStringSubmatch(body)
		if nonce == nil || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'nonce-"+nonce[1]+"'") {
			t.Fatalf("/%s: the script's nonce %v is not the CSP's %q", query, nonce, resp.Header.Get("Content-Security-Policy"))
		}
		if !strings.Contains(body, `url="live"+location.search`) {
			t.Errorf("/%s: the script does not poll the list's /live with the page's query", query)
		}
		if got := listLive(t, h, query); got != fp[1] {
			t.Errorf("/live%s = %s, the page's fingerprint is %s (nothing changed)", query, got, fp[1])
		}
	}
	all := listLive(t, h, "")
	esc := listLive(t, h, "?status=escalated")
	if esc == all {
		t.Error("/live tells the same fingerprint for the whole list and for the escalated sessions")
	}
	c, err := m.Load(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	x := c.Clone()
	x.Generation, x.Token = 0, 0
	if err := m.Save(ctx, x); err != nil {
		t.Fatal(err)
	}
	if got := listLive(t, h, ""); got == all {
		t.Error("a new generation of a session on the page left /live's fingerprint as it was")
	}
	if got := listLive(t, h, "?status=escalated"); got != esc {
		t.Error("a new generation of a converged session changed the fingerprint of the escalated sessions' page")
	}
}

// TestListLiveLoadsNothing guards issue 31, item 12: the list's /live
// lists the page's rows and loads no generation (a poll every two seconds
// costs a listing, not a page's usage). Mutation caught: /live filling the
// rows' usage (100 loads a poll).
func TestListLiveLoadsNothing(t *testing.T) {
	s := &loadCounting{Memory: manySessions(t, 450)}
	h := newHandler(t, s)
	for _, query := range []string{"", "?after=s0300"} {
		s.loaded = nil
		listLive(t, h, query)
		if len(s.loaded) > 0 {
			t.Errorf("/live%s loaded %d sessions, want none", query, len(s.loaded))
		}
	}
}
