package iterate_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// spender is the researcher of the examples, spending tokens and a call
// per task.
type spender struct{ researcher }

func (s spender) Work(ctx context.Context, n notes, t iterate.Task) (iterate.Outcome[notes], error) {
	out, err := s.researcher.Work(ctx, n, t)
	out.Usage = budget.Usage{Tokens: 120, Calls: 1}
	return out, err
}

// inspected runs a loop into a Memory store and returns its result with
// the session's checkpoint.
func inspected(t *testing.T, opts ...iterate.Option) (*iterate.Result[notes], *checkpoint.Checkpoint) {
	t.Helper()
	m := new(checkpoint.Memory)
	opts = append([]iterate.Option{iterate.WithCheckpointer(m), iterate.WithSession("inspect")}, opts...)
	res, err := iterate.New(spender{}, opts...).Run(context.Background(), notes{})
	if err != nil && res == nil {
		t.Fatal(err)
	}
	c, err := m.Load(context.Background(), "inspect")
	if err != nil {
		t.Fatal(err)
	}
	return res, c
}

// TestInspect: the report of a real run's checkpoint agrees with the run's
// result, and carries its settings.
func TestInspect(t *testing.T) {
	res, c := inspected(t,
		iterate.WithMaxIterations(6),
		iterate.WithThresholds(gap.Thresholds{MinCoverage: 0.6, MinConfidence: 0.85}),
		iterate.WithBudget(budget.Limits{Tokens: 100000, Calls: 50, Wall: time.Hour}),
	)
	before := c.Clone()
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, c); diff != "" {
		t.Errorf("Inspect modified the checkpoint (-before +after):\n%s", diff)
	}
	if res.Status != iterate.Converged || c.Status != string(res.Status) {
		t.Fatalf("run: %s, checkpoint %s; want converged in both", res.Status, c.Status)
	}
	if diff := cmp.Diff(res.History.Recent, r.History.Recent); diff != "" {
		t.Errorf("History.Recent mismatch (-result +report):\n%s", diff)
	}
	if len(r.History.Recent) != res.Iterations+1 {
		t.Errorf("%d records, want %d (the initial state and each iteration)", len(r.History.Recent), res.Iterations+1)
	}
	for i, rec := range r.History.Recent {
		if rec.Iteration != i || (i > 0 && (rec.Tasks == 0 || rec.Action == "" || rec.Coverage == 0)) {
			t.Errorf("record %d: %+v, want iteration %d with its tasks, action and coverage", i, rec, i)
		}
	}
	if diff := cmp.Diff(res.Decision, r.Decision); diff != "" {
		t.Errorf("Decision mismatch (-result +report):\n%s", diff)
	}
	if r.Usage != res.Usage || r.Usage.Tokens == 0 || r.Totals != res.Totals {
		t.Errorf("Usage %+v, Totals %+v; want the result's %+v and %+v", r.Usage, r.Totals, res.Usage, res.Totals)
	}
	if r.StartedAt.IsZero() || r.LastIterationAt.Before(r.StartedAt) || r.Elapsed <= 0 || r.Elapsed != res.Totals.Duration {
		t.Errorf("StartedAt %v, LastIterationAt %v, Elapsed %v (total %v)", r.StartedAt, r.LastIterationAt, r.Elapsed, res.Totals.Duration)
	}
	wantThresholds := gap.Thresholds{MinCoverage: 0.6, MinConfidence: 0.85}.Effective()
	if diff := cmp.Diff(wantThresholds, r.History.Thresholds); diff != "" {
		t.Errorf("Thresholds mismatch (-want +got):\n%s", diff)
	}
	if r.History.MaxIterations != 6 || r.History.FailureThreshold == 0 {
		t.Errorf("MaxIterations %d, FailureThreshold %d", r.History.MaxIterations, r.History.FailureThreshold)
	}
	if want := (budget.Limits{Tokens: 100000, Calls: 50, Wall: time.Hour}); r.Limits != want {
		t.Errorf("Limits %+v, want %+v", r.Limits, want)
	}
	if !slices.Contains(r.Settings, [2]string{"coverage threshold", "0.6"}) || !slices.Contains(r.Settings, [2]string{"token limit", "100000"}) {
		t.Errorf("Settings lack the coverage threshold or the token limit: %q", r.Settings)
	}
	if r.Escalation != nil {
		t.Errorf("Escalation %+v, want none", r.Escalation)
	}
}

// TestInspectUnmet: a partial convergence's report names the unmet
// criteria.
func TestInspectUnmet(t *testing.T) {
	res, c := inspected(t, iterate.WithMaxIterations(2))
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != iterate.MaxIterations || len(r.Decision.Unmet()) == 0 {
		t.Fatalf("status %s, unmet %v; want max_iterations with unmet criteria", res.Status, r.Decision.Unmet())
	}
	if r.Decision.Unmet()[0].Name != converge.CriterionCoverage {
		t.Errorf("unmet %v, want coverage first", r.Decision.Unmet())
	}
}

// TestInspectDamaged: a record that is missing or does not decode is
// damage.
func TestInspectDamaged(t *testing.T) {
	_, c := inspected(t, iterate.WithMaxIterations(2))
	tests := []struct {
		name   string
		engine []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"garbage", []byte("\x00\xffnot json at all")},
		{"truncated", c.Engine[:len(c.Engine)/2]},
		{"wrong_types", []byte(`{"history":{"recent":"not a list"}}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := c.Clone()
			bad.Engine = tc.engine
			r, err := iterate.Inspect(bad)
			var ce *checkpoint.CorruptError
			if r != nil || !errors.Is(err, checkpoint.ErrCorrupt) || !errors.As(err, &ce) || ce.Generation != c.Generation {
				t.Errorf("Inspect: got (%v, %v), want a *checkpoint.CorruptError for generation %d", r, err, c.Generation)
			}
		})
	}
	if _, err := iterate.Inspect(nil); !errors.Is(err, checkpoint.ErrNilCheckpoint) {
		t.Errorf("Inspect(nil): %v, want ErrNilCheckpoint", err)
	}
}

// TestInspectSharesNothing: the report is the caller's.
func TestInspectSharesNothing(t *testing.T) {
	_, c := inspected(t, iterate.WithMaxIterations(2))
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := iterate.Inspect(c)
	r.History.Recent[0].Coverage = 42
	r.Settings[0][1] = "changed"
	if again.History.Recent[0].Coverage == 42 || again.Settings[0][1] == "changed" {
		t.Error("two reports of one checkpoint share memory")
	}
}

// TestInspectEscalated: an escalated session's report carries the question
// the checkpoint's envelope shows.
func TestInspectEscalated(t *testing.T) {
	res, c := inspected(t, iterate.WithMaxIterations(2),
		iterate.WithConvergence(converge.IterationLimit{Escalate: true}))
	if res.Status != iterate.Escalated {
		t.Fatalf("status %s, want escalated", res.Status)
	}
	r, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Escalation == nil || r.Escalation.Question == "" || r.Escalation.Question != c.Question {
		t.Errorf("Escalation %+v, want the question %q", r.Escalation, c.Question)
	}
}
