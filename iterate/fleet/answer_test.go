package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// Rule: an open question is answered once (compare-and-set in the
// database). Eight concurrent answers from eight processes' handles give
// exactly one nil; the seven others are *fleet.AnswerError matching
// fleet.ErrAnswered and naming the accepted answer, its author and time;
// the session runs with the accepted answer, and Session and Answers
// record it. A late answer (the session resumed with the first) and an
// answer to a question no longer open are refused, typed. (Mutation
// caught: Answer overwriting the session's answer, as before — all eight
// get nil and the session runs with whichever wrote first, or with one
// the table no longer shows; dropping the ON CONFLICT check in Reply, the
// same.)
func TestAnswerOnce(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	kind := registerSynth(w, nil)
	ctx := waitCtx(t)
	a := synthArgs{Name: "once", Iterations: 4, TaskMillis: 1, EscalateAt: 2}
	if _, err := kind.Submit(ctx, "once", a); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Work(wctx) }()
	if _, err := kind.Wait(ctx, "once"); !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatalf("Wait: %v; want an escalation", err)
	}
	// No worker runs while the answers race: they race on the database
	// alone.
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	const n = 8
	handles := make([]*fleet.Fleet, n)
	for i := range handles {
		handles[i], _ = startFleet(t, url, schema)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = handles[i].Reply(ctx, "once", fleet.Answer{Text: fmt.Sprintf("way-%d", i), By: fmt.Sprintf("user-%d", i)})
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("answers %d and %d both accepted", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no answer accepted: %v", errs)
	}
	wantText, wantBy := fmt.Sprintf("way-%d", winner), fmt.Sprintf("user-%d", winner)
	for i, err := range errs {
		if i == winner {
			continue
		}
		var ae *fleet.AnswerError
		if !errors.Is(err, fleet.ErrAnswered) || !errors.As(err, &ae) || ae.Accepted == nil ||
			ae.Accepted.Text != wantText || ae.Accepted.By != wantBy || ae.Accepted.At.IsZero() {
			t.Errorf("answer %d: %v; want ErrAnswered naming %s by %s", i, err, wantText, wantBy)
		}
	}
	s, err := w.Session(ctx, "once")
	if err != nil || !s.Answered || s.Answer == nil || s.Answer.Text != wantText || s.Answer.By != wantBy ||
		s.Answer.Question != "which way, once?" || s.Answer.At.IsZero() {
		t.Fatalf("Session: %+v (answer %+v), %v", s, s.Answer, err)
	}
	// An answer for another question than the open one.
	if err := w.Reply(ctx, "once", fleet.Answer{Text: "x", Question: "another?"}); !errors.Is(err, fleet.ErrQuestionChanged) {
		t.Errorf("answer to another question: %v; want ErrQuestionChanged", err)
	}
	work(t, w)
	// A late answer, once the session resumed (or while it resumes): refused.
	if err := w.Answer(ctx, "once", "late"); !errors.Is(err, fleet.ErrAnswered) && !errors.Is(err, fleet.ErrNotEscalated) {
		t.Errorf("late answer: %v; want ErrAnswered or ErrNotEscalated", err)
	}
	res, err := kind.Wait(ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Answer != wantText {
		t.Errorf("the session ran with %q; the accepted answer is %q", res.State.Answer, wantText)
	}
	var ae *fleet.AnswerError
	if err := w.Answer(ctx, "once", "after"); !errors.As(err, &ae) || !errors.Is(err, fleet.ErrNotEscalated) || ae.Status != iterate.Converged {
		t.Errorf("answer to a converged session: %v", err)
	}
	list, err := w.Answers(ctx, "once")
	if err != nil || len(list) != 1 || list[0].Text != wantText || list[0].By != wantBy || list[0].Iteration != s.Iteration {
		t.Errorf("Answers: %+v, %v", list, err)
	}
	if _, err := w.Answers(ctx, "nope"); !errors.Is(err, fleet.ErrUnknownSession) {
		t.Errorf("Answers of an unknown session: %v", err)
	}
}

// Rule: an answer given while the session's job is running, and its newest
// checkpoint still the escalation, is the one the session runs with, and a
// second answer then is refused. Repeated, since the window is a race.
// (Mutation caught: a second answer overwriting the first — nil returned
// and the table naming the second while the session ran with the first.)
func TestAnswerWhileResuming(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema, fleet.Concurrency(4))
	kind := registerSynth(w, nil)
	work(t, w)
	ctx := waitCtx(t)
	const n = 4
	for i := range n {
		name := fmt.Sprintf("r-%d", i)
		if _, err := kind.Submit(ctx, name, synthArgs{Name: name, Iterations: 3, TaskMillis: 1, EscalateAt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		name := fmt.Sprintf("r-%d", i)
		if _, err := kind.Wait(ctx, name); !errors.As(err, new(*iterate.EscalationError)) {
			t.Fatalf("Wait %s: %v", name, err)
		}
		if err := w.Reply(ctx, name, fleet.Answer{Text: "alice", By: "alice"}); err != nil {
			t.Fatal(err)
		}
		err := w.Reply(ctx, name, fleet.Answer{Text: "bob", By: "bob"})
		if err == nil {
			t.Fatalf("%s: the second answer was accepted", name)
		}
		res, err := kind.Wait(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := w.Session(ctx, name)
		if res.State.Answer != "alice" || s.Answer == nil || s.Answer.Text != "alice" || s.Answer.By != "alice" {
			t.Errorf("%s ran with %q; the session records %+v", name, res.State.Answer, s.Answer)
		}
	}
}
