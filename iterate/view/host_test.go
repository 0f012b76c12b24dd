package view

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestHostChecked: a request naming a host the handler does not answer to
// is refused, page, /live and answer alike, so a site rebinding its name to
// the viewer's address reads no page and no answer token and posts no
// answer. By default the loopback names are allowed; Hosts replaces them.
// Mutation caught: no Host check (every request served).
func TestHostChecked(t *testing.T) {
	a := &answers{}
	h := newHandler(t, testStore(t), Answers(a))
	do := func(h *Handler, method, host, path string, form url.Values) int {
		req := httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.Host = host
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "same-origin")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, host := range []string{"localhost", "LOCALHOST:8080", "127.0.0.1:5555", "127.9.9.9", "[::1]:80", "localhost."} {
		if code := do(h, http.MethodGet, host, "/session/asked", nil); code != http.StatusOK {
			t.Errorf("Host %q: %d, want 200", host, code)
		}
	}
	evil := []string{"evil.example", "evil.example:8080", "localhost.evil.example", "192.168.1.5", "", "127.0.0.1.evil.example"}
	for _, host := range evil {
		for _, path := range []string{"/", "/session/asked", "/session/asked/live"} {
			if code := do(h, http.MethodGet, host, path, nil); code != http.StatusForbidden {
				t.Errorf("Host %q %s: %d, want 403", host, path, code)
			}
		}
		gen, _ := testGen(t, h, "asked")
		form := url.Values{"token": {h.token("asked", gen)}, "answer": {"rebound"}, "generation": {strconv.FormatUint(gen, 10)}}
		if code := do(h, http.MethodPost, host, "/session/asked/answer", form); code != http.StatusForbidden {
			t.Errorf("Host %q answer: %d, want 403", host, code)
		}
	}
	if len(a.got) != 0 {
		t.Fatalf("answers through another host: %v", a.got)
	}
	named := newHandler(t, testStore(t), Hosts("viewer.corp.example", "10.0.0.7"))
	for host, want := range map[string]int{"viewer.corp.example:443": 200, "Viewer.Corp.Example": 200, "10.0.0.7:80": 200,
		"localhost": 403, "evil.example": 403, "127.0.0.1": 403} {
		if code := do(named, http.MethodGet, host, "/", nil); code != want {
			t.Errorf("Hosts(...), Host %q: %d, want %d", host, code, want)
		}
	}
	if _, err := New(testStore(t), Hosts("a/b")); err == nil {
		t.Error("Hosts accepted a name with a slash")
	}
}
