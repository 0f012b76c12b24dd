package fleet_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// Rule (issue 34, item 2): the fleet enforces a question's deadline with
// no process waiting for it. An escalated session's job is snoozed until
// its question is due (a scheduled River job); the worker that picks it
// up then resumes the session without an answer: once at the reminder's
// time (one QuestionReminder), once at the deadline (ExpireStop: the
// session ends expired; ExpireAnswer: it goes on with the default answer
// and converges). An answer before the deadline still wakes the snoozed
// job at once. Mutations caught: the escalated job completed instead of
// snoozed (no reminder, the sessions stay escalated), the due question not
// run (the same), the snooze not woken by the answer (the answered session
// waits a minute for its deadline: the test's wait fails).
func TestQuestionDeadlineNoProcessWaits(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	var mu sync.Mutex
	reminders, expired := map[string]int{}, map[string]int{}
	kind := fleet.MustRegister(w, "synthetic", func(_ context.Context, a synthArgs) (fleet.Loop[synthState], error) {
		l := synthLoop(a, nil)
		d := iterate.Deadline{After: 3 * time.Second, RemindBefore: 2 * time.Second}
		switch a.Name {
		case "default":
			d.OnExpiry, d.Default = iterate.ExpireAnswer, "left"
		case "answered":
			d = iterate.Deadline{After: time.Hour, RemindBefore: time.Minute}
		}
		l.Options = append(l.Options, iterate.WithQuestionDeadline(d), iterate.WithObserver(func(e iterate.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.(type) {
			case iterate.QuestionReminder:
				reminders[iterate.SessionOf(e)]++
			case iterate.QuestionExpired:
				expired[iterate.SessionOf(e)]++
			}
		}))
		return l, nil
	})
	ctx := waitCtx(t)
	names := []string{"stop", "default", "answered"}
	for _, name := range names {
		if _, err := kind.Submit(ctx, name, synthArgs{Name: name, Iterations: 4, TaskMillis: 1, EscalateAt: 2}); err != nil {
			t.Fatal(err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Work(wctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if _, err := kind.Wait(ctx, "answered"); !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatalf("Wait: %v; want an escalation", err)
	}
	if err := w.Answer(ctx, "answered", "right"); err != nil {
		t.Fatal(err)
	}
	want := map[string]iterate.Status{"stop": iterate.Expired, "default": iterate.MaxIterations, "answered": iterate.MaxIterations}
	for _, name := range names {
		var s fleet.Session
		for {
			var err error
			if s, err = w.Session(ctx, name); err != nil {
				t.Fatal(err)
			}
			if s.Status.Final() {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("session %s: %s (job %s) when the test's time ran out", name, s.Status, s.Job)
			case <-time.After(50 * time.Millisecond):
			}
		}
		if s.Status != want[name] && !(want[name] == iterate.MaxIterations && s.Status == iterate.Converged) {
			t.Errorf("session %s ended %s (%s); want %s", name, s.Status, s.Reason, want[name])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for name, n := range map[string]int{"stop": 1, "default": 1, "answered": 0} {
		if reminders[name] != n || expired[name] != n {
			t.Errorf("session %s: %d reminders, %d expiries; want %d of each", name, reminders[name], expired[name], n)
		}
	}
}
