package fleet_test

import (
	"strings"
	"testing"

	"github.com/refine-go/refine/iterate/fleet"
)

// Rule: the fleet's errors say "fleet:" once and nothing of River's
// internals. (Mutation caught: wrapping a sentinel under a "fleet: …"
// message with %w, as before — "fleet: session "x": fleet: session
// cancelled before it started".)
func TestErrorTexts(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	f, _ := startFleet(t, url, schema)
	kind := registerSynth(f, nil)
	ctx := waitCtx(t)
	a := synthArgs{Name: "gone", Iterations: 2}
	if _, err := kind.Submit(ctx, "gone", a); err != nil {
		t.Fatal(err)
	}
	_, notStopped := kind.Result(ctx, "gone")
	if err := f.Cancel(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	_, submitErr := kind.Submit(ctx, "gone", a)
	_, waitErr := kind.Wait(ctx, "gone")
	_, unknown := f.Session(ctx, "nope")
	for _, err := range []error{
		notStopped, submitErr, waitErr, unknown,
		f.Answer(ctx, "gone", "x"),
		f.Retry(ctx, "gone"),
		f.Retry(ctx, "nope"),
		f.Answer(ctx, "nope", "x"),
		f.Cancel(ctx, "nope"),
	} {
		if err == nil {
			t.Error("no error")
			continue
		}
		msg := err.Error()
		if strings.Count(msg, "fleet:") != 1 || strings.Contains(strings.ToLower(msg), "river") ||
			strings.Contains(msg, "JobCancelError") {
			t.Errorf("error text %q", msg)
		}
	}
	var s fleet.Session
	s, _ = f.Session(ctx, "gone")
	if strings.Contains(s.LastError, "JobCancelError") {
		t.Errorf("LastError %q", s.LastError)
	}
}
