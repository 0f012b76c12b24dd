package fleet_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// Rule: a session whose job is given up past MaxAttempts (here a build
// function that panics) is not stranded: Session says iterate.Failed with
// the last error, Kind.Wait returns a *FailedError (ErrFailed) instead of
// blocking, Retry runs it again (a fresh allowance of attempts) and it
// converges; Retry of a session that has not failed is ErrNotFailed. The
// worker logs each panic and the session given up.
// (Mutations caught: listing a discarded job's session by its checkpoint
// alone — "queued" and Wait blocks until its deadline; Retry through
// River's JobRetry or reconcile's retries of discarded jobs — one attempt,
// or never failed at all.)
func TestFailedRetried(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	core, logs := observer.New(zap.WarnLevel)
	w, _ := startFleet(t, url, schema, fleet.Lease(time.Second), fleet.MaxAttempts(3), fleet.Logger(zap.New(core)))
	var broken atomic.Bool
	broken.Store(true)
	kind := fleet.MustRegister(w, "synthetic", func(_ context.Context, a synthArgs) (fleet.Loop[synthState], error) {
		if broken.Load() {
			panic("the build is broken")
		}
		return synthLoop(a, nil), nil
	})
	work(t, w)
	ctx := waitCtx(t)
	a := synthArgs{Name: "doomed", Iterations: 3, TaskMillis: 1}
	if _, err := kind.Submit(ctx, "doomed", a); err != nil {
		t.Fatal(err)
	}
	res, err := kind.Wait(ctx, "doomed")
	var fe *fleet.FailedError
	if !errors.Is(err, fleet.ErrFailed) || !errors.As(err, &fe) || res != nil || fe.Attempts != 3 ||
		!strings.Contains(fe.LastError, "the build is broken") {
		t.Fatalf("Wait: %v, %v; want a *FailedError after 3 attempts, naming the panic", res, err)
	}
	s, err := w.Session(ctx, "doomed")
	if err != nil || s.Status != iterate.Failed || !strings.Contains(s.LastError, "the build is broken") {
		t.Fatalf("Session: %+v, %v; want failed with the panic", s, err)
	}
	// What the worker logs: each panic with its stack, the session given up.
	if n := logs.FilterMessage("fleet: panic running a session").Len(); n != 3 {
		t.Errorf("%d panics logged; want 3", n)
	}
	if n := logs.FilterMessage("fleet: session failed: its job is given up; Fleet.Retry runs it again").Len(); n != 1 {
		t.Errorf("the failure logged %d times; want 1", n)
	}
	if ok, err := kind.Submit(ctx, "doomed", a); ok || err != nil {
		t.Errorf("Submit of a failed session: %v, %v; want false, nil", ok, err)
	}
	broken.Store(false)
	if err := w.Retry(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	res, err = kind.Wait(ctx, "doomed")
	if err != nil || res.Status != iterate.Converged {
		t.Fatalf("Wait after Retry: %v, %v", res, err)
	}
	if err := w.Retry(ctx, "doomed"); !errors.Is(err, fleet.ErrNotFailed) {
		t.Errorf("Retry of a converged session: %v; want ErrNotFailed", err)
	}
	if err := w.Retry(ctx, "nope"); !errors.Is(err, fleet.ErrUnknownSession) {
		t.Errorf("Retry of an unknown session: %v", err)
	}
}
