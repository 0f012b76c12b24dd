package iterate

import (
	"context"
	"testing"

	"github.com/refine-go/refine/gap"
)

// TestDefaultAnalyzerFindsNothingUnmeasured holds what the engine relies on
// to skip analysing the assessments of a Func without AssessFunc: the
// default analyzer finds no gap, and no error, in an empty assessment (or
// one that only says the work is complete), whatever the thresholds.
func TestDefaultAnalyzerFindsNothingUnmeasured(t *testing.T) {
	levels := []float64{-1, 0, 1e-12, 0.3, 0.7, 0.99, 1, 2}
	for _, complete := range []bool{false, true} {
		for _, cov := range levels {
			for _, conf := range levels {
				for _, conflicts := range []int{-1, 0, 5} {
					for _, allow := range []bool{false, true} {
						th := gap.Thresholds{MinCoverage: cov, MinConfidence: conf, MaxConflicts: conflicts, AllowUnanswered: allow,
							EarlyCoverage: conf, EarlyConfidence: cov}
						gaps, err := gap.Default().Analyze(context.Background(), gap.Assessment{Complete: complete}, th)
						if len(gaps) != 0 || err != nil {
							t.Fatalf("Analyze(complete %v, %+v) = %v, %v; want nothing", complete, th, gaps, err)
						}
					}
				}
			}
		}
	}
}

// TestSkippedAnalysisKeepsCancellation: the skipped analysis still stops a
// loop whose context ended, as the analyzer's own check of it does.
func TestSkippedAnalysisKeepsCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &run[int]{e: &engine[int]{defaultAnalyzer: true}, assessesNothing: true}
	if _, err := r.analyze(ctx, &gap.Assessment{}); err == nil {
		t.Fatal("analyze under an ended context: no error")
	}
}
