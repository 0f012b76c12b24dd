package view

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
)

// TestCancelExtendedStop guards the cancel and extension forms of a stop
// at the budget: a budget_exhausted session's page offers the extension
// form and no cancel (the stop is its end); once an extension of the stop
// is recorded (waiting to be resumed), the cancel that stops the resume;
// a session the host tells cancelled (Extra.Cancelled) is offered neither
// the extension form (the host refuses it) nor the cancel (examples/viewer's
// TestFleetCancelExtendedStop checks it over a fleet). Mutations caught
// (checked to fail): the cancel offered by status alone; the extension
// form offered whatever Extra.Cancelled says.
func TestCancelExtendedStop(t *testing.T) {
	ctx := context.Background()
	d, c := spentSession(t)
	reqs := DirExtensions{Path: t.TempDir(), Now: func() time.Time { return time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC) }}
	cancelled := false
	h := newHandler(t, d, Extends(reqs), Cancels(&cancels{}),
		ExtraOf(func(context.Context, string) (Extra, error) { return Extra{Cancelled: cancelled}, nil }))
	forms := func() (extend, cancel bool) {
		t.Helper()
		_, page := get(t, h, "/session/spent")
		return strings.Contains(page, `<form id="extend"`), strings.Contains(page, `<form id="cancel"`)
	}
	if e, c := forms(); !e || c {
		t.Errorf("a stop not extended: extension offered %v (want true), cancel %v (want false)", e, c)
	}
	cancelled = true
	if e, c := forms(); e || c {
		t.Errorf("a cancelled stop: extension offered %v, cancel %v (want neither)", e, c)
	}
	cancelled = false
	if err := reqs.ExtendBudget(ctx, "spent", c.Generation, budget.Limits{Tokens: 50000, Calls: 100}, "alice"); err != nil {
		t.Fatal(err)
	}
	if e, c := forms(); e || !c {
		t.Errorf("an extended stop: extension offered %v (want false), cancel %v (want true)", e, c)
	}
	cancelled = true
	if e, c := forms(); e || c {
		t.Errorf("an extended stop cancelled: extension offered %v, cancel %v (want neither)", e, c)
	}
}
