package converge_test

import (
	"context"
	"fmt"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// The engine observes the initial state, then completes an iteration and
// observes its result, asking the policy after every observation.
func ExampleDefault() {
	h := &converge.History{MaxIterations: 4}
	policy := converge.Default()
	states := []gap.Assessment{
		{Coverage: 0.40, Confidence: 0.70},
		{Coverage: 0.60, Confidence: 0.75},
		{Coverage: 0.75, Confidence: 0.78},
		{Coverage: 0.80, Confidence: 0.84},
	}
	for i, a := range states {
		if i > 0 {
			h.Complete(converge.Attempt{Failed: false, Action: "refine", Duration: 0})
		}
		h.Observe(a, nil)
		d := policy.Decide(h)
		fmt.Printf("iteration %d: %s", h.Iteration, d.Verdict)
		for _, c := range d.Unmet() {
			fmt.Printf(" [%s]", c)
		}
		fmt.Println()
		if d.Stop() {
			fmt.Println(d.Reason)
			break
		}
	}
	// Output:
	// iteration 0: continue [coverage 0.40 < 0.70] [confidence 0.70 < 0.80]
	// iteration 1: continue [coverage 0.60 < 0.70] [confidence 0.75 < 0.80]
	// iteration 2: continue [confidence 0.78 < 0.80]
	// iteration 3: converged
	// converged: coverage 0.80 ≥ 0.70, confidence 0.84 ≥ 0.80, conflicts 0 ≤ 2, questions 0/0 answered
}

// A loop that runs out of iterations converges only partially; the reason
// lists what is still unmet.
func ExampleAny() {
	policy := converge.Any(converge.ThresholdsMet{}, converge.IterationLimit{})
	h := &converge.History{MaxIterations: 2}
	h.Observe(gap.Assessment{Coverage: 0.5, Confidence: 0.6}, nil)
	for range 2 {
		h.Complete(converge.Attempt{Failed: false, Action: "retry", Duration: 0})
		h.Observe(gap.Assessment{Coverage: 0.9, Confidence: 0.72}, nil)
	}
	d := policy.Decide(h)
	fmt.Println(d.Verdict)
	fmt.Println(d.Reason)
	// Output:
	// max_iterations
	// max iterations reached: 2 of 2, unmet: confidence 0.72 < 0.80
}

// The thresholds are declared once: the engine hands the same values to the
// gap analysis and, as History.Thresholds, to the policies. What blocks
// convergence is a gap.
func ExampleThresholdsMet() {
	th := gap.Thresholds{MinCoverage: 0.9}
	h := &converge.History{MaxIterations: 4, Thresholds: th}
	h.Observe(gap.Assessment{Coverage: 0.80, Confidence: 0.85}, nil)

	gaps, _ := gap.Default().Analyze(context.Background(), h.Current, h.Thresholds)
	for _, g := range gaps {
		fmt.Println("gap:", g)
	}
	d := converge.ThresholdsMet{}.Decide(h)
	fmt.Println(d.Verdict)
	for _, c := range d.Unmet() {
		fmt.Println("unmet:", c)
	}
	// Output:
	// gap: P2 coverage [coverage]: coverage 0.80 below 0.90
	// continue
	// unmet: coverage 0.80 < 0.90
}

func ExampleEarlyStopping() {
	policy := converge.EarlyStopping{Patience: 2, MinDelta: 0.01}
	h := &converge.History{}
	for i, score := range []float64{0.50, 0.62, 0.70, 0.705, 0.70} {
		if i > 0 {
			h.Complete(converge.Attempt{Failed: false, Action: "refine", Duration: 0})
		}
		h.Observe(gap.Assessment{Score: score}, nil)
		if d := policy.Decide(h); d.Stop() {
			fmt.Printf("iteration %d: %s\n", h.Iteration, d.Reason)
			return
		}
		fmt.Printf("iteration %d: score %.3f, continue\n", h.Iteration, score)
	}
	// Output:
	// iteration 0: score 0.500, continue
	// iteration 1: score 0.620, continue
	// iteration 2: score 0.700, continue
	// iteration 3: score 0.705, continue
	// iteration 4: plateau: score did not improve for 2 iterations (min delta 0.01)
}

func ExampleForecast() {
	h := &converge.History{MaxIterations: 5}
	for i, score := range []float64{0.61, 0.62, 0.62} {
		if i > 0 {
			h.Complete(converge.Attempt{Failed: false, Action: "retry", Duration: 0})
		}
		h.Observe(gap.Assessment{Score: score}, nil)
	}
	gaps := []gap.Gap{
		{Kind: gap.ValidationFailure, Severity: 0.7, Fixable: true},
		{Kind: gap.ValidationFailure, Severity: 1.0, Fixable: false},
	}
	o := converge.Forecast(h, gaps)
	fmt.Printf("plateau %v, expected gain %.3f, likelihood %.2f\n",
		o.DiminishingReturns, o.ExpectedGain, o.Likelihood)
	fmt.Printf("%s: %s\n", o.Recommendation, o.Reason())
	// Output:
	// plateau true, expected gain 0.128, likelihood 0.25
	// escalate: scores plateaued: variance 0.00 < 0.02, trend 0.005 < 0.010
}

func ExampleValidate() {
	policy := converge.Any(converge.Default(), converge.EarlyStopping{Patience: 40})
	err := converge.Validate(policy)
	fmt.Println(err)
	// Output:
	// converge: invalid policy: EarlyStopping.Patience must be less than the history window (32), got 40
}
