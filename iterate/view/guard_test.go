package view

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestGuard guards Handler.Guard (issue 31, item 15: riverui beside the
// viewer): a handler guarded answers only to the viewer's hosts, refuses a
// cross-origin POST and gets the viewer's headers; a same-origin POST
// passes. Mutations caught: Guard without the host check (a rebound name
// served), without the cross-origin protection (a cross-site POST
// served), without the headers (framing allowed).
func TestGuard(t *testing.T) {
	h := newHandler(t, testStore(t), Hosts("viewer.test"))
	var served int
	g := h.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }))
	tests := []struct {
		name, method, host, site string
		want                     int
	}{
		{"get", http.MethodGet, "viewer.test", "", http.StatusOK},
		{"get_rebound", http.MethodGet, "rebound.example", "", http.StatusForbidden},
		{"get_loopback_not_named", http.MethodGet, "localhost", "", http.StatusForbidden},
		{"post_same_origin", http.MethodPost, "viewer.test", "same-origin", http.StatusOK},
		{"post_cross_site", http.MethodPost, "viewer.test", "cross-site", http.StatusForbidden},
		{"post_rebound", http.MethodPost, "rebound.example", "same-origin", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := served
			req := httptest.NewRequest(tt.method, "http://"+tt.host+"/riverui/api/jobs/retry", strings.NewReader("{}"))
			if tt.site != "" {
				req.Header.Set("Sec-Fetch-Site", tt.site)
			}
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, req)
			if rec.Code != tt.want || (served > before) != (tt.want == http.StatusOK) {
				t.Errorf("%d (served: %v), want %d", rec.Code, served > before, tt.want)
			}
			if got := rec.Header().Get("X-Frame-Options"); got != "DENY" {
				t.Errorf("X-Frame-Options %q", got)
			}
		})
	}
}

// TestLinks guards Extra.Links (issue 31, item 15): the host's links show
// on the session's page, one row each, a URL relative to the viewer's root
// resolved from the page (../), an absolute one kept, a script URL
// neutralised by the template. Mutations caught: the links not rendered,
// a root-relative URL left relative to the page (leading under
// session/).
func TestLinks(t *testing.T) {
	h := newHandler(t, testStore(t), Extras(func(context.Context) (map[string]Extra, error) {
		return map[string]Extra{"done": {Links: []Link{
			{Label: "Job", Text: "job 42 <riverui>", URL: "riverui/jobs/42"},
			{Label: "Trace", Text: "trace", URL: "https://traces.example/t/1?a=b&c=d"},
			{Label: "Bad", Text: "bad", URL: "javascript:alert(1)"},
		}}}, nil
	}))
	_, body := get(t, h, "/session/done")
	for _, want := range []string{
		`<tr class="link"><th>Job</th><td><a href="../riverui/jobs/42">job 42 &lt;riverui&gt;</a></td></tr>`,
		`<tr class="link"><th>Trace</th><td><a href="https://traces.example/t/1?a=b&amp;c=d">trace</a></td></tr>`,
		`<tr class="link"><th>Bad</th><td><a href="#ZgotmplZ">bad</a></td></tr>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if _, body := get(t, h, "/session/asked"); strings.Contains(body, `class="link"`) {
		t.Error("a link on the page of a session the host gave none")
	}
}
