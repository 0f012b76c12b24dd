package fleet_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// countV1 is version 0 of a kind's state (no version declared); countV2,
// version 1, renames its field.
type countV1 struct {
	Count int `json:"count"`
}

type countV2 struct {
	Total int `json:"total"`
}

// countLoop is a loop that adds one each iteration, asks a human after
// the first, and is complete at five; get and set read and write the
// count.
func countLoop[S any](get func(S) int, set func(S, int) S, opts ...iterate.Option) fleet.Loop[S] {
	w := iterate.Func(func(_ context.Context, s S, _ iterate.Round) (S, error) {
		return set(s, get(s)+1), nil
	})
	w.AssessFunc = func(_ context.Context, s S) (gap.Assessment, error) {
		return gap.Assessment{Complete: get(s) >= 5}, nil
	}
	ask := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		if sit.Iteration >= 2 && sit.AnsweredAt == 0 {
			return iterate.Plan{Action: iterate.Escalate, Escalation: &iterate.Escalation{Question: "go on?"}}, nil
		}
		return iterate.Plan{Action: iterate.Refine}, nil
	})
	var zero S
	return fleet.Loop[S]{Worker: w, Initial: zero,
		Options: append([]iterate.Option{iterate.WithStrategy(ask), iterate.WithMaxIterations(10)}, opts...)}
}

// Rule (issue 34, item 3, the fleet's side): a kind's state evolves
// across a rolling deploy. Sessions parked under the old state type are
// continued by workers of the new one, which declare its version and the
// migration (iterate.WithStateVersion): the state is migrated, and each
// session ends as if it had always had the new type. (Mutation caught: the
// new workers without the migration: the count is lost, decoded as 0, and
// the session takes 6 iterations to reach 5, not 5.)
func TestRollingDeployMigratesState(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)

	// Version 1 of the kind: its sessions park on their question.
	old, _ := startFleet(t, url, schema)
	oldKind := fleet.MustRegister(old, "count", func(context.Context, struct{}) (fleet.Loop[countV1], error) {
		return countLoop(func(s countV1) int { return s.Count }, func(s countV1, n int) countV1 { s.Count = n; return s }), nil
	})
	stopOld := workUntil(t, old)
	for _, name := range []string{"a", "b"} {
		if _, err := oldKind.Submit(ctx, name, struct{}{}); err != nil {
			t.Fatal(err)
		}
		if res, err := oldKind.Wait(ctx, name); !errors.As(err, new(*iterate.EscalationError)) || res == nil || res.State.Count != 1 {
			t.Fatalf("premise: %s parked after a step: %v", name, err)
		}
	}
	stopOld()

	// Version 2 is deployed: the state's field renamed, with its migration.
	var mu sync.Mutex
	migrated := map[string]int{}
	rename := iterate.Migration{From: 0, Migrate: func(_ context.Context, data []byte) ([]byte, error) {
		mu.Lock()
		migrated[string(data)]++
		mu.Unlock()
		return bytes.Replace(data, []byte(`"count"`), []byte(`"total"`), 1), nil
	}}
	neu, _ := startFleet(t, url, schema)
	newKind := fleet.MustRegister(neu, "count", func(context.Context, struct{}) (fleet.Loop[countV2], error) {
		return countLoop(func(s countV2) int { return s.Total }, func(s countV2, n int) countV2 { s.Total = n; return s },
			iterate.WithStateVersion(1, rename)), nil
	})
	work(t, neu)
	for _, name := range []string{"a", "b"} {
		if err := neu.Reply(ctx, name, fleet.Answer{Text: "yes", By: "ops"}); err != nil {
			t.Fatal(err)
		}
		res, err := newKind.Wait(ctx, name)
		if err != nil || res.Status != iterate.Converged || res.State.Total != 5 || res.Iterations != 5 {
			if res == nil {
				t.Fatalf("%s after the deploy: %v", name, err)
			}
			t.Fatalf("%s after the deploy: %s at total %d after %d iterations, %v; want converged at total 5 after 5 iterations",
				name, res.Status, res.State.Total, res.Iterations, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(migrated) == 0 {
		t.Error("no state was migrated")
	}
}

// workUntil works f until the returned function is called.
func workUntil(t *testing.T, f *fleet.Fleet) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Work(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Work: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
