package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// registerSynthV2 registers the synthetic kind as a new version would: a
// version in its host settings and another iteration limit, allowing those
// changes (or not) for sessions saved by the old version.
func registerSynthV2(f *fleet.Fleet, allow ...string) *fleet.Kind[synthArgs, synthState] {
	return fleet.MustRegister(f, "synthetic", func(_ context.Context, a synthArgs) (fleet.Loop[synthState], error) {
		l := synthLoop(a, nil)
		l.Options = append(l.Options, iterate.WithMaxIterations(a.Iterations+7), iterate.WithFingerprint("v2"))
		l.AllowChanges = allow
		return l, nil
	})
}

// Rule: a rolling deploy finishes every session. Sessions saved by the
// old version (escalated, and one interrupted mid-run) are refused by a
// new-version worker that allows no change — they fail after MaxAttempts,
// with the changes named — and continued by one whose kind allows the
// changed settings by name: they converge as they would have. A change
// not allowed is still refused. (Mutations caught: ignoring
// Loop.AllowChanges — the upgraded worker refuses too and the sessions
// fail; allowing any change whatever the names — the session refused for
// an unlisted setting converges.)
func TestUpgrade(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)
	old, _ := startFleet(t, url, schema, fleet.MaxAttempts(2)) // the jobs' attempts, set at submit
	oldKind := registerSynth(old, nil)
	const n = 3
	for i := range n {
		name := fmt.Sprintf("u-%d", i)
		if _, err := oldKind.Submit(ctx, name, synthArgs{Name: name, Iterations: 3, TaskMillis: 1, EscalateAt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- old.Work(wctx) }()
	for i := range n {
		if _, err := oldKind.Wait(ctx, fmt.Sprintf("u-%d", i)); !errors.As(err, new(*iterate.EscalationError)) {
			t.Fatalf("Wait: %v", err)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := old.Answer(ctx, fmt.Sprintf("u-%d", i), "go"); err != nil {
			t.Fatal(err)
		}
	}

	// A new version that allows only the iteration limit: the version
	// change ("host settings") is refused, and the sessions fail.
	strict, _ := startFleet(t, url, schema, fleet.Lease(time.Second))
	strictKind := registerSynthV2(strict, "max iterations")
	sctx, sstop := context.WithCancel(ctx)
	sdone := make(chan error, 1)
	go func() { sdone <- strict.Work(sctx) }()
	for i := range n {
		_, err := strictKind.Wait(ctx, fmt.Sprintf("u-%d", i))
		var fe *fleet.FailedError
		if !errors.As(err, &fe) || !strings.Contains(fe.LastError, "host settings") {
			t.Fatalf("u-%d under a worker not allowing its version: %v; want failed, naming host settings", i, err)
		}
	}
	sstop()
	if err := <-sdone; err != nil {
		t.Fatal(err)
	}

	// The upgraded worker allows both: retried, every session converges.
	up, _ := startFleet(t, url, schema)
	upKind := registerSynthV2(up, "max iterations", "host settings")
	work(t, up)
	for i := range n {
		name := fmt.Sprintf("u-%d", i)
		if err := up.Retry(ctx, name); err != nil {
			t.Fatal(err)
		}
		res, err := upKind.Wait(ctx, name)
		if err != nil || res.Status != iterate.Converged || res.State.Answer != "go" {
			t.Fatalf("%s after the upgrade: %+v, %v", name, res, err)
		}
	}
}
