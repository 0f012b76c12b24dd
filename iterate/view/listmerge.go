package view

import (
	"context"
	"fmt"

	"github.com/refine-go/refine/checkpoint"
)

// SessionExtra is what the host knows of one session, with its name: an
// item of a page [ExtrasAfter]'s function lists.
type SessionExtra struct {
	Session string
	Extra   Extra
}

// ExtrasAfter sets a function that tells what the host knows of its
// sessions a page at a time: those whose names sort after after (every
// one from ""), by name, at most limit of them (fewer only at the end of
// the list). The list then reads the pages its rows need as it goes,
// merged by name with the store's listing: each row gets its session's
// extras, and the sessions the host tells a status of that have no
// checkpoint (a fleet's queued sessions) are listed in their place. A
// page of the list then costs what it costs among 100 sessions however
// many the host has, where [Extras]' function, which it replaces for the
// list, tells every session for each page. A session's page and actions
// read [ExtraOf]'s function, which must be given with it. A fleet host
// adapts fleet.Fleet's SessionsAfter to it. An error is shown, and the
// list goes on without.
func ExtrasAfter(f func(ctx context.Context, after string, limit int) ([]SessionExtra, error)) Option {
	return func(h *Handler) error {
		h.extrasAfter = f
		return nil
	}
}

// extrasPage is how many sessions' extras the list asks the host for at
// a time (ExtrasAfter): a page of rows, and the one after it.
const extrasPage = pageRows + 1

// hostPages reads the host's extras (ExtrasAfter) a page at a time, in
// name order, as the list's merge advances.
type hostPages struct {
	ctx   context.Context
	list  func(ctx context.Context, after string, limit int) ([]SessionExtra, error)
	buf   []SessionExtra
	after string
	done  bool
	err   error
	reads int // the pages asked for
}

// peek returns the host's next session, nil at the end of its list or
// after an error (h.err). Sessions a page lists out of order (not after
// the one before) are passed over, and a page that lists none after the
// cursor ends the list, so that a host's bad page cannot loop.
func (hp *hostPages) peek() *SessionExtra {
	for len(hp.buf) == 0 && !hp.done {
		page, err := hp.list(hp.ctx, hp.after, extrasPage)
		hp.reads++
		if err != nil {
			hp.err, hp.done = fmt.Errorf("reading what the host knows of the sessions after %q: %w", hp.after, err), true
			break
		}
		hp.done = len(page) < extrasPage
		var keep []SessionExtra
		for _, x := range page {
			if x.Session > hp.after {
				keep = append(keep, x)
				hp.after = x.Session
			}
		}
		if len(keep) == 0 {
			hp.done = true
		}
		hp.buf = keep
	}
	if len(hp.buf) == 0 {
		return nil
	}
	return &hp.buf[0]
}

// pop passes the host's next session.
func (hp *hostPages) pop() { hp.buf = hp.buf[1:] }

// rowMaker makes the row of a session of the store and reports whether
// it passes the page's filters (see listRows).
type rowMaker func(c *checkpoint.Checkpoint, err error, x Extra, extrasOK bool) (row, bool)

// mapRows fills p's rows from the store's listing and Extras' map of
// every session: the store's sessions after p.After until the page is
// full (or maxScan were examined), then the sessions the host tells a
// status of that the store did not list, up to where it was read. It
// returns whether the listing was read to its end, the sessions counted
// (for Total) and the name it was read up to.
func (h *Handler) mapRows(ctx context.Context, p *listPage, match func(*row) bool, stored rowMaker) (complete bool, scanned int, cursor string) {
	extras, extrasErr := h.extrasOf(ctx)
	if extrasErr != nil {
		p.Errors = append(p.Errors, extrasErr.Error())
	}
	complete = true
	examined := 0
	listed := map[string]bool{}
	for c, err := range sessionsAfter(ctx, h.store, p.After) {
		if c == nil {
			if err != nil {
				p.Errors = append(p.Errors, err.Error())
			}
			continue
		}
		scanned++
		listed[c.Session] = true
		if p.After != "" && c.Session <= p.After {
			continue
		}
		if len(p.Rows) == pageRows {
			complete, cursor = false, p.Rows[len(p.Rows)-1].Name
			break
		}
		if examined == maxScan {
			// A filter few sessions pass: the page ends here, partial,
			// rather than reading the whole listing.
			complete, p.Searched = false, true
			break
		}
		examined++
		cursor = c.Session
		if rw, ok := stored(c, err, extras[c.Session], h.extras != nil && extrasErr == nil); ok {
			p.Rows = append(p.Rows, rw)
		}
	}
	// Sessions the host knows of that have no checkpoint yet (a fleet's
	// queued sessions) are listed too, with the status the host tells, in
	// their place by name.
	for name, x := range extras {
		if listed[name] || x.Status == "" || p.After != "" && name <= p.After ||
			!complete && name > cursor {
			continue
		}
		rw := row{Name: name, Link: "session/" + link(name)[2:], Status: x.Status, Extra: x}
		if match(&rw) {
			p.Rows = append(p.Rows, rw)
			scanned++
		}
	}
	return complete, scanned, cursor
}

// mergeRows fills p's rows as mapRows does, with ExtrasAfter's pages
// instead of a map of every session: the store's listing and the host's,
// both in name order from p.After on, are merged as they are read, so
// that each of the store's sessions gets its extras and the host's
// sessions the store does not list (with a status) come in their place,
// until the page is full. The host's sessions without a checkpoint count
// among the sessions a filtered page examines (maxScan), as the store's
// do: a page reads at most maxScan sessions of each listing.
func (h *Handler) mergeRows(ctx context.Context, p *listPage, match func(*row) bool, stored rowMaker) (complete bool, scanned int, cursor string) {
	hp := &hostPages{ctx: ctx, list: h.extrasAfter, after: p.After}
	complete = true
	examined := 0
	// full reports, before a session is examined, whether the page ends
	// there: it is full, or maxScan sessions were examined.
	full := func() bool {
		if len(p.Rows) == pageRows {
			complete, cursor = false, p.Rows[len(p.Rows)-1].Name
			return true
		}
		if examined == maxScan {
			complete, p.Searched = false, true
			return true
		}
		return false
	}
	// hostOnly lists the host's sessions before name ("" for all the
	// rest) that the store does not list; it reports whether the page
	// ended.
	hostOnly := func(name string) bool {
		for x := hp.peek(); x != nil && (name == "" || x.Session < name); x = hp.peek() {
			if x.Extra.Status == "" {
				hp.pop()
				continue
			}
			rw := row{Name: x.Session, Link: "session/" + link(x.Session)[2:], Status: x.Extra.Status, Extra: x.Extra}
			if !match(&rw) {
				if examined == maxScan {
					complete, p.Searched = false, true
					return true
				}
				examined++
				cursor = x.Session
				hp.pop()
				continue
			}
			if full() {
				return true
			}
			examined++
			cursor = x.Session
			hp.pop()
			p.Rows = append(p.Rows, rw)
			scanned++
		}
		return false
	}
	ended := false
	for c, err := range sessionsAfter(ctx, h.store, p.After) {
		if c == nil {
			if err != nil {
				p.Errors = append(p.Errors, err.Error())
			}
			continue
		}
		scanned++
		if p.After != "" && c.Session <= p.After {
			continue
		}
		if hostOnly(c.Session) || full() {
			ended = true
			break
		}
		examined++
		cursor = c.Session
		var x Extra
		if n := hp.peek(); n != nil && n.Session == c.Session {
			x = n.Extra
			hp.pop()
		}
		if rw, ok := stored(c, err, x, hp.err == nil); ok {
			p.Rows = append(p.Rows, rw)
		}
	}
	if !ended {
		hostOnly("")
	}
	if hp.err != nil {
		p.Errors = append(p.Errors, hp.err.Error())
	}
	return complete, scanned, cursor
}
