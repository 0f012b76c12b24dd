package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// TestFleetExtensionShown guards issues 31 and 34 (an operator's page
// never shows less than the library knows, nor a figure it disagrees
// with): once the stop of a fleet's session at its budget —
// budget_exhausted, or parked at its limit — is extended from the
// viewer's form, fleet.Session.Extension is the extension fleet.Extend
// accepted (a later request's *fleet.ExtendError names the same limits,
// author, time and generation), and the session's page tells it exactly
// as a directory's does: "Extended to <limits> by <who> at <time>", each
// figure the library's; the list's row says it is extended, to what and
// by whom. Resumed by a worker, the session's page shows no extension
// any more, its budget table the library's figures (the tokens spent,
// Result.Usage, and the raised limit, Result.Extensions' To), and its
// table of budget extensions the session's record of it (after which
// iteration, from and to what, by whom, when); the parked question the
// extension answered keeps its iteration.
//
// Mutations caught (each checked to fail): the viewer's extras telling
// fleet.Session.Extended as an empty view.ExtensionRecord, as before
// (no limits, author nor time on the page); fleet.Session.Extension not
// read for a parked session (none for it, and its page without
// "Extended to");
// the list's row not telling the extension; the viewer's extras not
// passing fleet.Answer's Iteration (the parked question's iteration blank
// once its generation is pruned).
func TestFleetExtensionShown(t *testing.T) {
	for _, park := range []bool{false, true} {
		name := "budget_exhausted"
		if park {
			name = "parked"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			pool, dbURL, schema, start := spendFleet(ctx, t, park)
			ops, err := fleet.New(ctx, pool, fleet.Schema(schema))
			if err != nil {
				t.Fatal(err)
			}
			base := server(t, "--db", dbURL, "--fleet-schema", schema, "--extend", "--answers")
			form := regexp.MustCompile(`<form id="extend" method="post" action="\./thrifty/extend"><input type="hidden" name="token" value="([0-9a-f]+)"><input type="hidden" name="generation" value="(\d+)">`)
			_, body := fetch(t, base+"/session/thrifty")
			m := form.FindStringSubmatch(body)
			if m == nil {
				t.Fatalf("no extension form: %s", body)
			}
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			res, err := client.PostForm(base+"/session/thrifty/extend", url.Values{"token": {m[1]}, "generation": {m[2]},
				"tokens": {"500"}, "cost": {"0"}, "calls": {"0"}})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusSeeOther {
				t.Fatalf("extend: %d %s, want 303", res.StatusCode, b)
			}

			// The library's own record of what it accepted.
			var xe *fleet.ExtendError
			if err := ops.Extend(ctx, "thrifty", budget.Limits{Tokens: 900}, "mallory"); !errors.As(err, &xe) {
				t.Fatalf("a second Extend: %v; want an *ExtendError naming the accepted one", err)
			}
			acc := xe.Accepted
			if gen, _ := strconv.ParseUint(m[2], 10, 64); acc.To.Tokens != 500 || acc.By == "" || acc.Generation != gen {
				t.Fatalf("accepted: %+v; want tokens 500, by the viewer's process, at generation %d", acc, gen)
			}
			s, err := ops.Session(ctx, "thrifty")
			if err != nil || s.Extension == nil {
				t.Fatalf("Session: %+v, %v; want the extension", s, err)
			}
			if x := *s.Extension; x.To != acc.To || x.By != acc.By || !x.At.Equal(acc.At) || x.Generation != acc.Generation {
				t.Errorf("Session.Extension %+v differs from the accepted extension %+v", x, acc)
			}

			_, body = fetch(t, base+"/session/thrifty")
			page := html.UnescapeString(body)
			want := "<tr id=\"extended\"><th>Extension</th><td>Extended to tokens 500 by " + acc.By + " at " +
				acc.At.UTC().Format("2006-01-02 15:04:05 UTC") + ": the session waits to be resumed under the raised limits.</td></tr>"
			if !strings.Contains(page, want) {
				t.Errorf("the page of the extended stop does not tell the accepted extension\nwant %s\n%s", want, page)
			}
			if !strings.Contains(page, "(extended: waiting to be resumed)") {
				t.Error("the page's status does not say the session waits to be resumed")
			}
			_, list := fetch(t, base+"/")
			row := regexp.MustCompile(`(?s)<tr data-session="thrifty">.*?</tr>`).FindString(html.UnescapeString(list))
			if want := "extended to tokens 500 by " + acc.By + ", waiting to be resumed"; !strings.Contains(row, want) {
				t.Errorf("the list's row does not tell the extension (want %q):\n%s", want, row)
			}

			kind, halt := start()
			r, werr := kind.Wait(ctx, "thrifty")
			halt()
			if r == nil || r.State.Steps != 5 || r.Usage.Tokens != 500 || len(r.Extensions) != 1 || r.Extensions[0].To != acc.To {
				t.Fatalf("after the extension: %v, %v; want 5 steps, 500 tokens, the accepted extension", r, werr)
			}
			_, body = fetch(t, base+"/session/thrifty")
			if strings.Contains(body, `id="extended"`) {
				t.Error("the page of the session resumed still tells the extension of its previous stop")
			}
			tokens := regexp.MustCompile(`<tr><td>tokens</td><td class="n">(\d+)</td><td class="n">(\d+)</td>`).FindStringSubmatch(body)
			if tokens == nil || tokens[1] != strconv.FormatInt(r.Usage.Tokens, 10) || tokens[2] != strconv.FormatInt(r.Extensions[0].To.Tokens, 10) {
				t.Errorf("the budget's tokens on the page: %q; want %d used of the raised %d", tokens, r.Usage.Tokens, r.Extensions[0].To.Tokens)
			}
			// The session's own record of the extension, as Result.Extensions
			// has it.
			x := r.Extensions[0]
			want = "<tr><td class=\"n\">" + strconv.Itoa(x.Iteration) + "</td><td>tokens 300</td><td>tokens 500</td><td>" + acc.By +
				"</td><td>" + x.At.UTC().Format("2006-01-02 15:04:05 UTC") + "</td></tr>"
			if x.From.Tokens != 300 || x.By != acc.By || !strings.Contains(html.UnescapeString(body), want) {
				t.Errorf("the page of the session resumed does not list its extension %+v (want %s):\n%s", x, want, body)
			}
			if park {
				// The question the extension answered keeps its iteration
				// (fleet.Answer's) once its generation is no longer kept.
				s, err := ops.Session(ctx, "thrifty")
				if err != nil || s.Answer == nil || s.Answer.Generation != acc.Generation {
					t.Fatalf("Session: %+v, %v; want the extension's answer", s, err)
				}
				want := fmt.Sprintf(`<tr data-generation="%d"><td class="n">%d</td><td class="n">%d</td>`, acc.Generation, acc.Generation, s.Answer.Iteration)
				if !strings.Contains(body, want) {
					t.Errorf("the question answered by the extension, want %s:\n%s", want, body)
				}
			}
			if park && r.Status != iterate.Escalated || !park && r.Status != iterate.BudgetExhausted {
				t.Errorf("after the extension: %s", r.Status)
			}
		})
	}
}
