package fleet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// Rule (issues 31 and 34: an operator's page shows what the library
// accepted): Fleet.Session and Fleet.Sessions tell the extension accepted
// for a session's newest stop at its budget — budget_exhausted, or parked
// at its budget's limit (escalated) — with the limits, who asked, when
// and the generation of the stop, each exactly as Fleet.Extend accepted
// it (the *ExtendError of a later request names the same one), until a
// worker resumed the session under it (then none: the session's
// Result.Extensions has it, to the same limits by the same author). A
// session cancelled after its stop was extended is resumed by no worker:
// it tells no extension, and Kind.Wait returns its stop.
//
// Mutations caught (each checked to fail): the extension's join on the
// session alone, not the newest generation (an extension still told
// after the resume); At or Generation not read (differs from the
// accepted one); the extension told for budget_exhausted only, as
// Session.Extended was (none for the parked session); the extension told
// of a cancelled session (Extension set, and Wait blocking on it).
func TestSessionExtension(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	spend, park := registerSpend(w), registerParking(w)
	ops, _ := startFleet(t, url, schema) // another process: no worker
	ctx := waitCtx(t)

	for _, name := range []string{"spent", "dropped"} {
		if _, err := spend.Submit(ctx, name, spendArgs{Tokens: 300}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := park.Submit(ctx, "parked", spendArgs{Tokens: 300}); err != nil {
		t.Fatal(err)
	}
	stop := working(t, w)
	for _, name := range []string{"spent", "dropped"} {
		if res, err := spend.Wait(ctx, name); err != nil || res.Status != iterate.BudgetExhausted {
			t.Fatalf("Wait %s: %v; want budget_exhausted", name, brief(res, err))
		}
	}
	waitParked(t, ctx, park, "parked", 3, 300, 0)
	stop() // no worker resumes what follows

	accepted := map[string]fleet.Extension{}
	for _, x := range []struct {
		session string
		status  iterate.Status
		by      string
	}{{"spent", iterate.BudgetExhausted, "alice"}, {"parked", iterate.Escalated, "bob"}} {
		if s, err := ops.Session(ctx, x.session); err != nil || s.Extension != nil || s.Extended {
			t.Fatalf("Session %s before Extend: %+v, %v; want no extension", x.session, s, err)
		}
		stopped, err := ops.Store().Load(ctx, x.session)
		if err != nil {
			t.Fatal(err)
		}
		if err := ops.Extend(ctx, x.session, budget.Limits{Tokens: 500}, x.by); err != nil {
			t.Fatal(err)
		}
		// The library's own record of what it accepted: a second, other
		// request is refused naming it.
		var xe *fleet.ExtendError
		if err := ops.Extend(ctx, x.session, budget.Limits{Tokens: 900}, "mallory"); !errors.As(err, &xe) {
			t.Fatalf("a second Extend of %s: %v; want an *ExtendError", x.session, err)
		}
		acc := xe.Accepted
		if acc.By != x.by || acc.To.Tokens != 500 || acc.Generation != stopped.Generation || acc.At.IsZero() {
			t.Fatalf("accepted for %s: %+v; want %s's tokens 500 at generation %d", x.session, acc, x.by, stopped.Generation)
		}
		accepted[x.session] = acc
		s, err := ops.Session(ctx, x.session)
		if err != nil || s.Status != x.status || s.Extension == nil || !s.Extended {
			t.Fatalf("Session %s after Extend: %+v, %v; want %s, extended", x.session, s, err, x.status)
		}
		if d := cmp.Diff(acc, *s.Extension); d != "" {
			t.Errorf("Session(%s).Extension differs from the accepted extension (-accepted +told):\n%s", x.session, d)
		}
		list, err := ops.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list {
			if l.Name == x.session && (l.Extension == nil || cmp.Diff(acc, *l.Extension) != "") {
				t.Errorf("Sessions' %s: extension %+v; want the accepted %+v", x.session, l.Extension, acc)
			}
		}
	}

	// Extended, then cancelled: no worker resumes it.
	if err := ops.Extend(ctx, "dropped", budget.Limits{Tokens: 500}, "carol"); err != nil {
		t.Fatal(err)
	}
	if err := ops.Cancel(ctx, "dropped"); err != nil {
		t.Fatal(err)
	}
	if s, err := ops.Session(ctx, "dropped"); err != nil || s.Extension != nil || s.Extended {
		t.Errorf("Session of a session cancelled after its extension: %+v, %v; want no extension", s, err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if res, err := spend.Wait(short, "dropped"); err != nil || res.Status != iterate.BudgetExhausted || res.State.Steps != 3 {
		t.Errorf("Wait of a session cancelled after its extension: %v; want its stop, budget_exhausted after 3 steps", brief(res, err))
	}

	// Resumed: the extension is the session's own.
	stop = working(t, w)
	resumed := map[string]*iterate.Result[spendState]{"parked": waitParked(t, ctx, park, "parked", 5, 500, 1)}
	res, err := spend.Wait(ctx, "spent")
	if err != nil || res.Status != iterate.BudgetExhausted || res.State.Steps != 5 {
		t.Fatalf("Wait spent after Extend: %v; want budget_exhausted after 5 steps", brief(res, err))
	}
	resumed["spent"] = res
	stop()
	for name, res := range resumed {
		acc := accepted[name]
		if len(res.Extensions) != 1 || res.Extensions[0].To != acc.To || res.Extensions[0].By != acc.By {
			t.Errorf("%s's Result.Extensions: %+v; want the accepted %+v", name, res.Extensions, acc)
		}
		if s, err := ops.Session(ctx, name); err != nil || s.Extension != nil || s.Extended {
			t.Errorf("Session %s once resumed and stopped again: extension %+v, %v; want none", name, s.Extension, err)
		}
	}
}
