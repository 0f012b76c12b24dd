package iterate_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// nonFiniteScores score the state after n iterations: NaN, +Inf and -Inf
// among numbers, as a host's division by zero or failed parse gives them.
var nonFiniteScores = []float64{0.5, math.NaN(), math.Inf(1), 0.7, math.Inf(-1), math.NaN(), 0.2, 0.9, 0.1}

// nonFiniteLoop is a Func loop of 8 iterations whose assessments score the
// state with nonFiniteScores, in Score and in Scores; its assessment of
// the state interruptAt cancels the run (none when negative).
func nonFiniteLoop(store iterate.Checkpointer, failedSaves *int, cancel func(), interruptAt int) iterate.Engine[int] {
	w := iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s + 1, nil })
	w.AssessFunc = func(_ context.Context, s int) (gap.Assessment, error) {
		if s == interruptAt {
			cancel()
		}
		v := nonFiniteScores[s%len(nonFiniteScores)]
		return gap.Assessment{Score: v, Scores: map[string]float64{"q": -v, "ok": 1}}, nil
	}
	return iterate.New(w, iterate.WithMaxIterations(8), iterate.WithConvergence(converge.IterationLimit{}),
		iterate.WithCheckpointer(store, iterate.Strict), iterate.WithKeepBest(),
		iterate.WithObserver(func(e iterate.Event) {
			if s, ok := e.(iterate.CheckpointSaved); ok && s.Err != nil {
				*failedSaves++
			}
		}))
}

// equateNaNs compares histories with their NaNs, ignoring what a resumed
// run sets afresh (the loop's settings, the current assessment and gaps).
var equateNaNs = cmp.Options{cmpopts.EquateNaNs(), cmpopts.IgnoreUnexported(converge.History{}),
	cmpopts.IgnoreFields(converge.History{}, "Current", "Gaps", "Thresholds", "FailureThreshold")}

// TestNonFiniteScoresAreSavedAndResumedExactly (issue 28, item 5): a
// loop whose scores are NaN, +Inf or -Inf saves every checkpoint under
// Strict (on main, every save after the first NaN failed with "json:
// unsupported value: NaN", and the Strict run failed), and both Inspect
// and Resume read back the exact values: the records' Score and Scores,
// History.BestScore (+Inf, which on main blocked every save to the end).
// Mutants caught: the encoder writing null, 0 or an error for a
// non-finite float (the run fails or the values differ); +Inf and -Inf
// swapped; a float field left without its decoder (Resume fails as
// corrupt, or the value is lost).
func TestNonFiniteScoresAreSavedAndResumedExactly(t *testing.T) {
	for _, store := range []struct {
		name string
		new  func(t *testing.T) iterate.Checkpointer
	}{
		{"memory", func(*testing.T) iterate.Checkpointer { return &checkpoint.Memory{} }},
		{"dir", func(t *testing.T) iterate.Checkpointer { return checkpoint.NewDir(t.TempDir()) }},
	} {
		t.Run(store.name, func(t *testing.T) {
			cp := store.new(t)
			failed := 0
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res, err := nonFiniteLoop(cp, &failed, cancel, 5).Run(ctx, 0)
			if !errors.Is(err, iterate.ErrInterrupted) || failed != 0 {
				t.Fatalf("Run: %v, %d saves failed; want interrupted after assessing state 5, every save made", err, failed)
			}
			if res.History.BestScore != math.Inf(1) || res.History.BestIteration != 2 {
				t.Errorf("Run: best score %v at %d, want +Inf at 2", res.History.BestScore, res.History.BestIteration)
			}
			c, err := cp.Load(context.Background(), "default")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := iterate.Inspect(c)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if diff := cmp.Diff(res.History, rep.History, equateNaNs); diff != "" {
				t.Errorf("Inspect's history differs from the run's (-run +inspect):\n%s", diff)
			}

			res2, err := nonFiniteLoop(cp, &failed, func() {}, -1).Resume(context.Background())
			if err != nil || res2.Status != iterate.MaxIterations || failed != 0 {
				t.Fatalf("Resume: %v, %v, %d saves failed", res2.Status, err, failed)
			}
			// The records saved before the interruption come back as they
			// were, NaN and infinities included; the later ones score as
			// the loop scored them.
			n := len(res.History.Recent)
			if diff := cmp.Diff(res.History.Recent[:n-1], res2.History.Recent[:n-1], equateNaNs); diff != "" {
				t.Errorf("resumed records differ (-saved +resumed):\n%s", diff)
			}
			for _, r := range res2.History.Recent {
				want := nonFiniteScores[r.Iteration]
				if !cmp.Equal(r.Score, want, cmpopts.EquateNaNs()) || !cmp.Equal(r.Scores["q"], -want, cmpopts.EquateNaNs()) {
					t.Errorf("record %d: score %v, q %v; want %v, %v", r.Iteration, r.Score, r.Scores["q"], want, -want)
				}
			}
			if res2.History.BestScore != math.Inf(1) || res2.History.BestIteration != 2 {
				t.Errorf("Resume: best score %v at %d, want +Inf at 2", res2.History.BestScore, res2.History.BestIteration)
			}
			// Keep-best agrees with the history: +Inf is the best.
			if res2.Best == nil || res2.Best.Iteration != 2 || res2.Best.Score != math.Inf(1) {
				t.Errorf("Resume: Best %+v, want the state of iteration 2, scored +Inf", res2.Best)
			}
		})
	}
}

// TestNaNIsNeverTheBest (issue 28, item 5): keep-best and
// History.BestScore never keep a NaN as best, also when the first
// assessment scores NaN (on main, History.BestScore stayed NaN for the
// rest of the run: nothing compares greater than NaN), and -Inf is a score
// like any, beaten by every other. Mutants caught: the history's best
// comparison without its NaN clause; keep-best refusing the infinities
// (its former rule) or accepting NaN.
func TestNaNIsNeverTheBest(t *testing.T) {
	scores := []float64{math.NaN(), math.Inf(-1), math.NaN(), 0.3, math.NaN(), 0.2}
	w := iterate.Func(func(_ context.Context, s int, _ iterate.Round) (int, error) { return s + 1, nil })
	w.AssessFunc = func(_ context.Context, s int) (gap.Assessment, error) {
		return gap.Assessment{Score: scores[s]}, nil
	}
	for _, last := range []int{1, 2, 5} {
		res, err := iterate.New(w, iterate.WithMaxIterations(last), iterate.WithConvergence(converge.IterationLimit{}),
			iterate.WithKeepBest()).Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		wantIt, wantScore := 1, math.Inf(-1)
		if last == 5 {
			wantIt, wantScore = 3, 0.3
		}
		if res.History.BestIteration != wantIt || res.History.BestScore != wantScore {
			t.Errorf("after %d iterations: History best %v at %d, want %v at %d", last,
				res.History.BestScore, res.History.BestIteration, wantScore, wantIt)
		}
		if res.Best == nil || res.Best.Iteration != wantIt || res.Best.Score != wantScore {
			t.Errorf("after %d iterations: Best %+v, want %v at %d", last, res.Best, wantScore, wantIt)
		}
	}
}
