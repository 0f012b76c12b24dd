package view

import (
	"net/http"
	"strconv"
)

// Guard returns a handler serving next behind the checks the viewer's
// pages are behind, for a handler a host mounts beside them (a fleet's
// riverui): a request naming a host the viewer does not answer to (Hosts)
// is refused (403), as is a cross-origin request of a method that is not
// safe (http.CrossOriginProtection); responses carry the viewer's headers
// against sniffing, framing and referrers.
func (h *Handler) Guard(next http.Handler) http.Handler {
	next = http.NewCrossOriginProtection().Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.admit(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// admit sets the headers of every response and reports whether r names a
// host the handler answers to, refusing it (403) when not.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request) bool {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if !h.hostAllowed(r.Host) {
		// DNS rebinding: another site's name resolving to this address.
		http.Error(w, "this viewer does not answer to the host "+strconv.Quote(r.Host), http.StatusForbidden)
		return false
	}
	return true
}
