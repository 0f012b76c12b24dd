package iterate_test

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// TestHealthyPersistentRunWarnsNothing: a run whose saves, journal saves and
// lock release all succeed warns of nothing, in its log or as an event.
// (The mutations "warn when a journal save succeeds" and "warn when the
// lock is released", `err == nil` in place of `err != nil`, changed nothing
// else a test saw.)
func TestHealthyPersistentRunWarnsNothing(t *testing.T) {
	plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 2)}, nil
	})
	core, logs := observer.New(zapcore.WarnLevel)
	var warned []string
	_, err := iterate.New[int](&goexiter{}, iterate.WithMaxIterations(2), iterate.WithStrategy(plan),
		iterate.WithSession("s"), iterate.WithLogger(zap.New(core)),
		iterate.WithObserver(func(e iterate.Event) {
			if w, ok := e.(iterate.Warned); ok {
				warned = append(warned, w.Message)
			}
		}),
		iterate.WithCheckpointer(checkpoint.NewDir(t.TempDir()), iterate.Strict|iterate.Journal)).Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range logs.All() {
		t.Errorf("logged at %s: %s", e.Level, e.Message)
	}
	for _, w := range warned {
		t.Errorf("warned: %s", w)
	}
}
