package view

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"

	"github.com/refine-go/refine/iterate"
)

// Canceller cancels a session for good, from any process, durably: its
// Cancel returns once the cancellation is recorded (fleet.Fleet.Cancel
// does, in its database; a worker running the session stops it at its
// next safe point). A directory's sessions have none: nothing a viewer
// can record reaches the process running a loop.
type Canceller interface {
	Cancel(ctx context.Context, session string) error
}

// Cancels adds a "Cancel" button to the page of each session that has not
// ended (running, escalated, interrupted, queued, or stopped at its
// budget with an extension waiting to be resumed: the cancel stops the
// resume), unless the host tells it cancelled ([Extra].Cancelled), which
// cancels it through c. It is off without this option. The button's form carries a
// token bound to the session and to a secret of this handler, and POSTs
// are checked as an answer's are (host, cross-origin); an error of Cancel
// is shown to the operator (409), and success only once Cancel returned.
func Cancels(c Canceller) Option {
	return func(h *Handler) error {
		if c == nil {
			return errors.New("view: Cancels with a nil Canceller")
		}
		h.canceller = c
		return nil
	}
}

// cancelToken is the cancel form's token of session.
func (h *Handler) cancelToken(session string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte("cancel\x00"))
	m.Write([]byte(session))
	return hex.EncodeToString(m.Sum(nil))
}

// cancellable reports whether a session of status can be cancelled from
// its page.
func (h *Handler) cancellable(status string) bool {
	return h.canceller != nil && status != "" && !iterate.Status(status).Final()
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form does not read: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !hmac.Equal([]byte(r.PostForm.Get("token")), []byte(h.cancelToken(name))) {
		http.Error(w, "the form's token is missing or wrong: reload the page and cancel again", http.StatusForbidden)
		return
	}
	if err := h.canceller.Cancel(r.Context(), name); err != nil {
		http.Error(w, "cancelling: "+err.Error(), http.StatusConflict)
		return
	}
	w.Header().Set("Location", "../"+url.PathEscape(name))
	w.WriteHeader(http.StatusSeeOther)
}
