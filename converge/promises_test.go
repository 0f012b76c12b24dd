package converge_test

// Tests of issue 20 (every documented promise holds) for this package.

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// TestValidateWindow (issue 20, item 4): a patience not less than the
// loop's history window is invalid, for the window given, through
// combinators too.
func TestValidateWindow(t *testing.T) {
	tests := []struct {
		name    string
		p       converge.Policy
		window  int
		wantErr bool
	}{
		{"patience 4 < 5", converge.EarlyStopping{Patience: 4}, 5, false},
		{"patience 5 = 5", converge.EarlyStopping{Patience: 5}, 5, true},
		{"default patience 3, window 3", converge.EarlyStopping{}, 3, true},
		{"window 0 is the default", converge.EarlyStopping{Patience: 31}, 0, false},
		{"window 0 is the default, 32", converge.EarlyStopping{Patience: 32}, 0, true},
		{"a larger window allows more", converge.EarlyStopping{Patience: 40}, 64, false},
		{"Any", converge.Any(converge.IterationLimit{}, converge.EarlyStopping{Patience: 9}), 8, true},
		{"All in Any", converge.Any(converge.All(converge.EarlyStopping{Patience: 9})), 8, true},
		{"other checks still run", converge.EarlyStopping{Patience: -1}, 8, true},
		{"a policy without a window", converge.NoProgress{}, 2, false},
		{"nil", nil, 8, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := converge.ValidateWindow(tt.p, tt.window)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, converge.ErrInvalidPolicy)) {
				t.Errorf("ValidateWindow = %v, want error: %t (matching ErrInvalidPolicy)", err, tt.wantErr)
			}
		})
	}
}

// plateauAt runs p over a loop whose state after k iterations scores
// scores[k] (scores[0] is the initial assessment), with a history window
// of window records, and returns the number of completed iterations at
// which p reports Plateau, or -1.
func plateauAt(p converge.EarlyStopping, window int, scores []float64) int {
	h := &converge.History{Window: window}
	for k, s := range scores {
		if k > 0 {
			h.Complete(converge.Attempt{})
		}
		h.Observe(gap.Assessment{Score: s}, nil)
		if p.Decide(h).Verdict == converge.Plateau {
			return k
		}
	}
	return -1
}

// referencePlateauAt is the rule EarlyStopping documents, written from its
// doc comment and nothing else: after k iterations, the window holds the
// scores of states max(0, k−window+1)..k; the monitored ones are those of
// states ≥ WarmUp, NaN included; the block is the last Patience monitored,
// each of a state > WarmUp; the reference is the best of the baseline and
// the values before the block that are not NaN, and exists when there is a
// baseline or a monitored state before the block; the loop plateaus when
// the block is full, a reference exists, and no value of the block beats
// the reference by more than MinDelta (a NaN beats nothing; anything else
// beats a reference without a value: every value before the block NaN, no
// baseline).
func referencePlateauAt(p converge.EarlyStopping, window int, scores []float64) int {
	patience := p.Patience
	if patience == 0 {
		patience = 3
	}
	if window == 0 {
		window = converge.DefaultWindow
	}
	for k := range scores {
		var monitored []int // states
		for i := max(0, k-window+1); i <= k; i++ {
			if i >= p.WarmUp {
				monitored = append(monitored, i)
			}
		}
		if len(monitored) < patience {
			continue
		}
		block, before := monitored[len(monitored)-patience:], monitored[:len(monitored)-patience]
		if block[0] <= p.WarmUp {
			continue // the block must be iterations after the warm-up
		}
		if p.Baseline == nil && len(before) == 0 {
			continue // no reference
		}
		ref, valued := math.Inf(-1), false
		if p.Baseline != nil {
			ref, valued = *p.Baseline, true
		}
		for _, i := range before {
			if !math.IsNaN(scores[i]) && (!valued || scores[i] > ref) {
				ref, valued = scores[i], true
			}
		}
		improved := false
		for _, i := range block {
			if !math.IsNaN(scores[i]) && (!valued || scores[i]-p.MinDelta > ref) {
				improved = true
			}
		}
		if !improved {
			return k
		}
	}
	return -1
}

// TestEarlyStoppingWarmUp (issue 20, item 5): the warm-up follows Keras'
// start_from_epoch: iterations before WarmUp do not count towards the
// patience, with or without a Baseline. A flat score stops the loop after
// WarmUp + Patience iterations; the table's rows are the (a Baseline
// with WarmUp 1 stopped after 2 iterations, as with none, and WarmUp 2 after
// 3), and each agrees with the reference implementation of the documented
// rule.
func TestEarlyStoppingWarmUp(t *testing.T) {
	below, low := 0.8, 0.1 // the flat score 0.5 is below the one, above the other
	flat := []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}
	tests := []struct {
		name   string
		p      converge.EarlyStopping
		scores []float64
		want   int
	}{
		{"baseline, no warm-up", converge.EarlyStopping{Patience: 2, Baseline: &below}, flat, 2},
		{"baseline, warm-up 1", converge.EarlyStopping{Patience: 2, Baseline: &below, WarmUp: 1}, flat, 3},
		{"baseline, warm-up 2", converge.EarlyStopping{Patience: 2, Baseline: &below, WarmUp: 2}, flat, 4},
		{"baseline, warm-up 3, patience 1", converge.EarlyStopping{Patience: 1, Baseline: &below, WarmUp: 3}, flat, 4},
		{"a baseline the flat score beats, warm-up 2", converge.EarlyStopping{Patience: 2, Baseline: &low, WarmUp: 2}, flat, 4},
		{"no baseline, no warm-up", converge.EarlyStopping{Patience: 2}, flat, 2},
		{"no baseline, warm-up 1", converge.EarlyStopping{Patience: 2, WarmUp: 1}, flat, 3},
		{"no baseline, warm-up 2", converge.EarlyStopping{Patience: 2, WarmUp: 2}, flat, 4},
		{"warm-up records are not the reference", converge.EarlyStopping{Patience: 2, WarmUp: 2},
			[]float64{0.9, 0.95, 0.5, 0.5, 0.5, 0.5}, 4},
		{"an improvement after the warm-up restarts the patience", converge.EarlyStopping{Patience: 2, WarmUp: 1},
			[]float64{0.5, 0.5, 0.5, 0.6, 0.6, 0.6, 0.6}, 5},
		{"beating the baseline after the warm-up continues", converge.EarlyStopping{Patience: 2, Baseline: &below, WarmUp: 1},
			[]float64{0.5, 0.5, 0.9, 0.9, 0.9, 0.9}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ref := referencePlateauAt(tt.p, 0, tt.scores); ref != tt.want {
				t.Fatalf("the reference stops at %d, the table says %d", ref, tt.want)
			}
			if got := plateauAt(tt.p, 0, tt.scores); got != tt.want {
				t.Errorf("plateau after %d iterations, want %d", got, tt.want)
			}
		})
	}
}

// TestEarlyStoppingMatchesReference (issue 20, item 5): EarlyStopping
// decides as the reference implementation of its documented rule over a
// sweep of warm-ups, patiences, baselines, deltas, windows and score
// sequences.
func TestEarlyStoppingMatchesReference(t *testing.T) {
	lo, hi := 0.45, 0.75
	sequences := [][]float64{
		{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5},
		{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0},
		{0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0},
		{0.5, 0.6, 0.5, 0.7, 0.5, 0.8, 0.5, 0.5, 0.5, 0.5},
		{0.5, 0.52, 0.54, 0.56, 0.58, 0.6, 0.6, 0.6, 0.6, 0.6},
		{0.5, math.NaN(), 0.5, 0.7, math.NaN(), 0.7, 0.7, 0.7, 0.7, 0.7},
		{0.9, 0.95, 0.5, 0.55, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6},
		{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()},
		{math.NaN(), math.NaN(), 0.5, math.NaN(), math.NaN(), math.NaN(), 0.4, 0.5, math.NaN(), math.NaN()},
		{0.5, math.Inf(1), 0.9, 0.9, 0.9, math.Inf(1), math.Inf(-1), 0.7, 0.7, 0.7},
		{math.Inf(-1), 0.1, math.Inf(-1), math.Inf(-1), math.Inf(-1), math.NaN(), 0.2, 0.2, 0.2, 0.2},
	}
	n := 0
	for _, warmUp := range []int{0, 1, 2, 3} {
		for _, patience := range []int{0, 1, 2, 3} {
			for _, baseline := range []*float64{nil, &lo, &hi} {
				for _, delta := range []float64{0, 0.05} {
					for _, window := range []int{0, 4, 6} {
						p := converge.EarlyStopping{Patience: patience, WarmUp: warmUp, Baseline: baseline, MinDelta: delta}
						if converge.ValidateWindow(p, window) != nil {
							continue
						}
						for i, scores := range sequences {
							n++
							want := referencePlateauAt(p, window, scores)
							if got := plateauAt(p, window, scores); got != want {
								b := "none"
								if baseline != nil {
									b = fmt.Sprint(*baseline)
								}
								t.Errorf("warm-up %d, patience %d, baseline %s, delta %g, window %d, sequence %d: plateau at %d, the reference at %d",
									warmUp, patience, b, delta, window, i, got, want)
							}
						}
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d cases", n)
	}
}
