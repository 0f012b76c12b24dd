//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// TestChromiumFleetAnswer answers a fleet session's escalation in a real
// headless Chromium: it opens the session's page, types the answer into
// the form and clicks its button; the session then resumes on a worker,
// which the page shows holding it, and the page, following the session by
// itself, reaches its end: converged, with the answer in its state.
func TestChromiumFleetAnswer(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no headless Chromium: no chromium in PATH (Debian's chromium package)")
	}
	dbURL := serverURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the schema is dropped
	schema := fmt.Sprintf("viewer_chromium_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	const holder = "worker-e2e"
	f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.Poll(50*time.Millisecond), fleet.Holder(holder))
	if err != nil {
		t.Fatal(err)
	}
	// The first round after the answer waits for release, so that the
	// test sees the worker holding the session before it ends.
	resumed, release := make(chan string, 1), make(chan struct{})
	plans := fleet.MustRegister(f, "plan", func(_ context.Context, tk ticket) (fleet.Loop[plan], error) {
		w := iterate.Func(func(ctx context.Context, p plan, r iterate.Round) (plan, error) {
			p.Steps++
			if r.Task.Answer != "" && p.Approved == "" {
				select {
				case resumed <- r.Task.Answer:
				default:
				}
				select {
				case <-release:
				case <-ctx.Done():
					return p, ctx.Err()
				}
				p.Approved = r.Task.Answer
			}
			return p, nil
		})
		w.AssessFunc = func(_ context.Context, p plan) (gap.Assessment, error) {
			return gap.Assessment{Complete: p.Approved != ""}, nil
		}
		ask := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
			if sit.Iteration > 2 && sit.AnsweredAt == 0 {
				return iterate.Plan{Action: iterate.Escalate, Escalation: &iterate.Escalation{Question: "approve <" + tk.ID + ">?"}}, nil
			}
			return iterate.Plan{Action: iterate.Refine}, nil
		})
		return fleet.Loop[plan]{Worker: w, Options: []iterate.Option{iterate.WithStrategy(ask), iterate.WithMaxIterations(6)}}, nil
	})
	if _, err := plans.Submit(ctx, "ticket-9", ticket{ID: "T-9"}); err != nil {
		t.Fatal(err)
	}
	work, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Work(work) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Work: %v", err)
		}
	}()
	if _, err := plans.Wait(ctx, "ticket-9"); !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatalf("Wait: %v; want an escalation", err)
	}

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
