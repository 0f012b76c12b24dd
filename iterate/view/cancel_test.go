package view

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// cancels records the sessions cancelled; it refuses "refused".
type cancels struct{ done []string }

func (c *cancels) Cancel(_ context.Context, session string) error {
	if session == "asked" && len(c.done) > 0 && c.done[len(c.done)-1] == "refuse-next" {
		return errors.New("cancelling <refused>")
	}
	c.done = append(c.done, session)
	return nil
}

// postCancel POSTs the cancel form of session with token to h.
func postCancel(h *Handler, session, token string, hdr ...string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "http://localhost/session/"+url.PathEscape(session)+"/cancel",
		strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestCancel guards issue 31, item 13: cancelling is off by default (no
// button, the POST not served); with Cancels, the page of a session that
// has not ended has a button, a final session's has none; a POST cancels
// only with the page's token, from the same origin, for an allowed host,
// and its success (303) comes after Cancel returned, its error shown
// (409, as text/plain). Mutations caught: the button on a
// final session, the token not checked, the cross-origin check dropped,
// Cancel's error answered as success.
func TestCancel(t *testing.T) {
	m := testStore(t)
	off := newHandler(t, m)
	if _, body := get(t, off, "/session/asked"); strings.Contains(body, `id="cancel"`) {
		t.Error("a cancel button without Cancels")
	}
	if code, _ := postCancel(off, "asked", off.cancelToken("asked")); code == http.StatusSeeOther {
		t.Error("a cancel POST served without Cancels")
	}
	c := &cancels{}
	h := newHandler(t, m, Cancels(c))
	if _, body := get(t, h, "/session/asked"); !strings.Contains(body, `<form id="cancel" method="post" action="./asked/cancel"><input type="hidden" name="token" value="`+h.cancelToken("asked")+`">`) {
		t.Error("no cancel form on an escalated session's page")
	}
	if _, body := get(t, h, "/session/done"); strings.Contains(body, `id="cancel"`) {
		t.Error("a cancel button on a converged session's page")
	}
	for _, bad := range []struct {
		what  string
		token string
		hdr   []string
	}{
		{"no token", "", nil},
		{"another session's token", h.cancelToken("done"), nil},
		{"cross-origin", h.cancelToken("asked"), []string{"Sec-Fetch-Site", "cross-site"}},
		{"another origin", h.cancelToken("asked"), []string{"Origin", "http://evil.example"}},
	} {
		if code, _ := postCancel(h, "asked", bad.token, bad.hdr...); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", bad.what, code)
		}
	}
	if len(c.done) != 0 {
		t.Fatalf("cancelled %v by refused POSTs", c.done)
	}
	if code, _ := postCancel(h, "asked", h.cancelToken("asked")); code != http.StatusSeeOther || len(c.done) != 1 || c.done[0] != "asked" {
		t.Errorf("cancel: %d, cancelled %v", code, c.done)
	}
	c.done = append(c.done, "refuse-next")
	if code, body := postCancel(h, "asked", h.cancelToken("asked")); code != http.StatusConflict || !strings.Contains(body, "cancelling <refused>") {
		t.Errorf("a refused cancel: %d %q, want 409 with the error", code, body)
	}
}
