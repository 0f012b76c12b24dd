package fleet

import (
	"testing"
	"time"
)

// Rule (issue 30, the fleet in production): a worker reconciles every
// finished session on its first poll and every fullReconcileEvery polls,
// and in between only what changed since its last poll and
// reconcileWindow before it. (Mutations caught: no first full pass — the
// sessions answered while no worker ran are never retried; no periodic
// full pass; a window that does not cover the time since the last poll.)
func TestReconcilerWindow(t *testing.T) {
	var r reconciler
	t0 := time.Unix(1_000_000, 0)
	if w := r.window(t0); w != 0 {
		t.Fatalf("first window %v, want 0 (all)", w)
	}
	r.done(t0, 0)
	now := t0
	for i := range fullReconcileEvery {
		now = now.Add(3 * time.Second)
		w := r.window(now)
		if want := 3*time.Second + reconcileWindow; w != want {
			t.Fatalf("poll %d: window %v, want %v", i+1, w, want)
		}
		r.done(now, w)
	}
	now = now.Add(time.Second)
	if w := r.window(now); w != 0 {
		t.Fatalf("after %d windowed polls: window %v, want 0 (all)", fullReconcileEvery, w)
	}
	r.done(now, 0)
	if w := r.window(now.Add(time.Second)); w != time.Second+reconcileWindow {
		t.Fatalf("after a full pass: window %v", w)
	}
}
