//go:build unix

package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/iterate"
)

// TestChromiumFleetAnswer answers a fleet session's escalation in a real
// headless Chromium: it opens the session's page, types the answer into
// the form and clicks its button; the session then resumes on a worker,
// which the page shows holding it, and the page, following the session by
// itself, reaches its end: converged, with the answer in its state (the
// fleet's result, read with Wait). It guards issue 31, item 13 (answer, a
// fleet). Mutations caught: the form's POST not reaching fleet.Fleet.Reply
// (the session never resumes), the answer altered on its way (another
// answer in the worker and in the state).
func TestChromiumFleetAnswer(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no headless Chromium: no chromium in PATH (Debian's chromium package)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const holder = "worker-e2e"
	// The first round after the answer waits for release, so that the
	// test sees the worker holding the session before it ends.
	resumed, release := make(chan string, 1), make(chan struct{})
	plans, dbURL, schema := escalatedPlan(ctx, t, "ticket-9", "T-9", holder, func(ctx context.Context, answer string) error {
		select {
		case resumed <- answer:
		default:
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})

	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--answers", "--poll", "100ms")
	page := startBrowser(t).newTab(ctx, t)
	url := base + "/session/ticket-9"
	page.navigate(url)
	page.waitFor("the answer form", `document.querySelector('form#answer button[type=submit]')`)
	var question string
	page.eval(`document.getElementById('question').textContent`, &question)
	if question != "approve <T-9>?" {
		t.Errorf("the question reads %q", question)
	}
	const answer = `approved <from the browser> & more`
	page.typeInto("#answer-text", answer)
	page.screenshot("fleet-answer-typed.png")
	page.click(`form#answer button[type=submit]`)

	// The form posts, and its answer resumes the session on the worker,
	// which holds it (waiting for release) while the page, back on the
	// session, no longer offers the form.
	select {
	case got := <-resumed:
		if got != answer {
			t.Errorf("the worker got the answer %q, want %q", got, answer)
		}
	case <-ctx.Done():
		t.Fatal("the session did not resume on a worker after the answer was clicked")
	}
	page.waitFor("the session's page after the answer", `location.pathname.endsWith('/session/ticket-9') && document.readyState === 'complete' && !document.getElementById('answer')`)
	for !page.truth(`[...document.querySelectorAll('#summary tr')].some(r => r.cells.length == 2 && r.cells[0].textContent == 'Holder' && r.cells[1].textContent.startsWith('` + holder + `'))`) {
		// The page reloads by itself only when a checkpoint is saved; the
		// holder is news of the fleet's, so the test reloads it.
		select {
		case <-ctx.Done():
			t.Fatal("the page never showed the worker holding the session")
		case <-time.After(100 * time.Millisecond):
		}
		page.navigate(url)
	}
	page.screenshot("fleet-resumed.png")

	// Released, the session ends; the page follows it to its end by
	// itself (it polls, and reloads on a new checkpoint).
	close(release)
	page.waitFor("the session's end on its page", `document.querySelector('#summary .status') && document.querySelector('#summary .status').textContent == 'converged'`)
	page.screenshot("fleet-converged.png")
	var text string
	page.eval(`document.getElementById('summary').innerText`, &text)
	if strings.Contains(text, "(live)") {
		t.Errorf("the ended session's page:\n%s", text)
	}
	res, err := plans.Wait(ctx, "ticket-9")
	if err != nil {
		t.Fatalf("Wait after the answer: %v", err)
	}
	if res.Status != iterate.Converged || res.State.Approved != answer {
		t.Errorf("after the answer: %s, approved %q", res.Status, res.State.Approved)
	}
}
