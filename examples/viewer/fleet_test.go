package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// ticket and plan are the arguments and the state of the fleet test's
// kind: three steps, then a question before the last one.
type ticket struct{ ID string }

type plan struct {
	Steps    int
	Approved string
}

// escalatedPlan starts, in a schema of its own on the test's server, a
// fleet worker (named holder) of the kind "plan", submits session for the
// ticket id, and waits for its escalation ("approve <id>?"). The first
// round given the answer calls answered, when set, before it approves;
// its error fails the round. It returns the kind, the database's URL and
// the schema.
func escalatedPlan(ctx context.Context, t *testing.T, session, id, holder string,
	answered func(ctx context.Context, answer string) error) (*fleet.Kind[ticket, plan], string, string) {
	t.Helper()
	dbURL := serverURL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the schema is dropped
	schema := fmt.Sprintf("viewer_fleet_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	opts := []fleet.Option{fleet.Schema(schema), fleet.Poll(50 * time.Millisecond)}
	if holder != "" {
		opts = append(opts, fleet.Holder(holder))
	}
	f, err := fleet.New(ctx, pool, opts...)
	if err != nil {
		t.Fatal(err)
	}
	plans := fleet.MustRegister(f, "plan", func(_ context.Context, tk ticket) (fleet.Loop[plan], error) {
		w := iterate.Func(func(ctx context.Context, p plan, r iterate.Round) (plan, error) {
			p.Steps++
			if r.Task.Answer != "" && p.Approved == "" {
				if answered != nil {
					if err := answered(ctx, r.Task.Answer); err != nil {
						return p, err
					}
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
	if _, err := plans.Submit(ctx, session, ticket{ID: id}); err != nil {
		t.Fatal(err)
	}
	work, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Work(work) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Work: %v", err)
		}
	})
	if _, err := plans.Wait(ctx, session); !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatalf("Wait: %v; want an escalation", err)
	}
	return plans, dbURL, schema
}

// TestFleetAnswer answers a fleet session's escalation from its page; the
// session then resumes on a worker with the answer.
func TestFleetAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	plans, dbURL, schema := escalatedPlan(ctx, t, "ticket-7", "T-7", "", nil)

	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--answers")
	code, body := fetch(t, base+"/?status=escalated")
	if code != http.StatusOK || !strings.Contains(body, `data-session="ticket-7"`) || !strings.Contains(body, "approve &lt;T-7&gt;?") {
		t.Fatalf("listing: %d %s", code, body)
	}
	code, body = fetch(t, base+"/session/ticket-7")
	m := regexp.MustCompile(`<form id="answer" method="post" action="\./ticket-7/answer">\s*<input type="hidden" name="token" value="([0-9a-f]+)"><input type="hidden" name="generation" value="(\d+)">`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("session: %d, no answer form: %s", code, body)
	}
	// Escalated by its strategy, the session's decision is its status, not
	// the convergence check's "continue"; it is not "(live)".
	if !strings.Contains(body, `<td id="decision">escalated`) || strings.Contains(body, "(live)") {
		t.Errorf("the escalated session's summary: %s", regexp.MustCompile(`(?s)<table id="summary">.*?</table>`).FindString(body))
	}
	maybeScreenshot(t, "fleet-escalated.png", base+"/session/ticket-7")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	postTo := func(base, token, answer string) int {
		res, err := client.PostForm(base+"/session/ticket-7/answer", url.Values{"token": {token}, "answer": {answer}, "generation": {m[2]}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	post := func(token string) int {
		return postTo(base, token, "approved")
	}
	if c := post("bad"); c != http.StatusForbidden {
		t.Fatalf("a wrong token: status %d", c)
	}
	if c := post(m[1]); c != http.StatusSeeOther {
		t.Fatalf("answer: status %d", c)
	}
	// A second answer is refused, not stored over the first: from the
	// same viewer, and from another one (the fleet says it is answered, or
	// the session moved on).
	if c := postTo(base, m[1], "rejected"); c != http.StatusConflict {
		t.Errorf("a second answer: status %d, want 409", c)
	}
	other := server(t, "--db", dbURL, "--fleet-schema", schema, "--answers")
	_, obody := fetch(t, other+"/session/ticket-7")
	if om := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(obody); om != nil {
		t.Errorf("another viewer offers the answered session's form")
	}
	res, err := plans.Wait(ctx, "ticket-7")
	if err != nil {
		t.Fatalf("Wait after the answer: %v", err)
	}
	if res.Status != iterate.Converged || res.State.Approved != "approved" {
		t.Errorf("after the answer: %s, approved %q", res.Status, res.State.Approved)
	}
	// The question is shown with the answer the fleet accepted and who gave
	// it (the viewer answers through fleet.Reply, which records them).
	// Mutation caught: the extras leaving the fleet's answer out ("the
	// answer is not recorded by the host").
	_, body = fetch(t, base+"/session/ticket-7")
	if !regexp.MustCompile(`<td class="answer"><pre>approved</pre></td><td>[^<]+</td>`).MatchString(body) {
		t.Errorf("the answered question: %s", regexp.MustCompile(`(?s)<table id="answers">.*?</table>`).FindString(body))
	}
	code, body = fetch(t, base+"/")
	if code != http.StatusOK || !strings.Contains(body, "<td>plan</td>") || !strings.Contains(body, `<span class="status s-converged">converged</span>`) {
		t.Errorf("listing after the answer: %d %s", code, body)
	}
}

// TestFleetQueued: a fleet's sessions not started yet (no worker runs) are
// listed and counted, with their kind. Mutation caught: the list built from
// the store's checkpoints alone (0 of 0 with 3 submitted).
func TestFleetQueued(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbURL := serverURL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	schema := fmt.Sprintf("viewer_queued_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	f, err := fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	plans := fleet.MustRegister(f, "plan", func(context.Context, ticket) (fleet.Loop[plan], error) {
		return fleet.Loop[plan]{}, errors.New("not run: no worker")
	})
	for _, s := range []string{"q-1", "q-2", "q-3"} {
		if _, err := plans.Submit(ctx, s, ticket{ID: s}); err != nil {
			t.Fatal(err)
		}
	}
	base := server(t, "--db", dbURL, "--fleet-schema", schema)
	code, body := fetch(t, base+"/")
	if code != http.StatusOK || !strings.Contains(body, "3 of 3 sessions") || strings.Count(body, `<span class="status s-queued">queued</span>`) != 3 {
		t.Errorf("the list of 3 queued sessions: %d %s", code, regexp.MustCompile(`\d+ of \d+ sessions`).FindString(body))
	}
	if code, body := fetch(t, base+"/session/q-2"); code != http.StatusOK || !strings.Contains(body, "not started yet") {
		t.Errorf("a queued session's page: %d", code)
	}
}
