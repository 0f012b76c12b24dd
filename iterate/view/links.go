package view

import (
	"net/url"
	"strings"
)

// Link is a link the host gives to a page of its own about a session (a
// fleet's job in a job console such as riverui), shown on the session's
// page in a row of its summary: Label heads the row, Text is the link's
// text. URL is absolute, or relative to the viewer's root (as in
// "riverui/jobs/42"): the page resolves it from where it is served.
type Link struct {
	Label, Text, URL string
}

// pageLinks returns links with each URL relative to the viewer's root
// rewritten for a page below the root: up is the way back to it ("../").
func pageLinks(links []Link, up string) []Link {
	out := make([]Link, 0, len(links))
	for _, l := range links {
		if u, err := url.Parse(l.URL); err == nil && u.Scheme == "" && u.Host == "" && !strings.HasPrefix(l.URL, "/") {
			l.URL = up + l.URL
		}
		out = append(out, l)
	}
	return out
}
