package gap

import (
	"context"

	"github.com/refine-go/refine/internal/byptr"
)

// Analyzer finds the gaps of an assessment under the loop's thresholds: the
// same [Thresholds] the convergence policy judges by, so that whatever keeps
// a loop from converging is a gap the strategy can target.
//
// Analyze must not modify the assessment (its slices and maps are shared
// with the caller). The returned slice belongs to the caller, which may
// reorder and modify it (as [Prioritize] does): an Analyzer returns a fresh
// slice, or nil, on every call. A Gap may share read-only slices (such as
// Focus) with the assessment. An invalid assessment gives an error matching
// [ErrInvalidAssessment].
type Analyzer interface {
	Analyze(ctx context.Context, a Assessment, t Thresholds) ([]Gap, error)
}

// AnalyzerFunc adapts a function to [Analyzer].
type AnalyzerFunc func(ctx context.Context, a Assessment, t Thresholds) ([]Gap, error)

// Analyze returns f(ctx, a, t).
func (f AnalyzerFunc) Analyze(ctx context.Context, a Assessment, t Thresholds) ([]Gap, error) {
	return f(ctx, a, t)
}

var (
	_ Analyzer = Research{}
	_ Analyzer = Quality{}
	_ Analyzer = AnalyzerFunc(nil)
	_ Analyzer = combined(nil)
	_ Analyzer = defaultAnalyzer{}
)

// Combine returns an Analyzer that runs the analyzers in order and
// concatenates their gaps. Nil analyzers are skipped. It checks ctx before
// each analyzer and returns context.Cause(ctx) once ctx is done. The first
// error stops the analysis and is returned unchanged (with no gaps). Combine
// does not prioritise; see [Prioritize]. The result is safe for concurrent
// use if the analyzers are.
func Combine(analyzers ...Analyzer) Analyzer {
	c := make(combined, 0, len(analyzers))
	for _, an := range analyzers {
		if an != nil {
			c = append(c, an)
		}
	}
	return c
}

type combined []Analyzer

func (c combined) Analyze(ctx context.Context, a Assessment, t Thresholds) ([]Gap, error) {
	var out []Gap
	for _, an := range c {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		// The built-in analyzers append to out directly. (A static call,
		// unlike a call through an interface, lets &a stay on the stack.)
		var err error
		switch an := an.(type) {
		case Research:
			out, err = an.appendGaps(out, &a, t)
		case Quality:
			out, err = an.appendGaps(out, &a, t)
		default:
			out, err = appendAnalyzed(ctx, out, an, a, t)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendAnalyzed appends the gaps of an to out.
func appendAnalyzed(ctx context.Context, out []Gap, an Analyzer, a Assessment, t Thresholds) ([]Gap, error) {
	gaps, err := an.Analyze(ctx, a, t)
	if err != nil {
		return nil, err
	}
	if out == nil {
		// Clip, so that appending the next analyzer's gaps never writes
		// past the end of this analyzer's slice.
		return gaps[:len(gaps):len(gaps)], nil
	}
	return append(out, gaps...), nil
}

// Default returns the analyzer a loop uses when it is given none: the
// [Research] and [Quality] analyzers, combined
// (research gaps first), then ordered by [Prioritize]. It needs no
// configuration, and an assessment that measured nothing has no gaps. It is
// safe for concurrent use.
func Default() Analyzer { return defaultAnalyzer{} }

// defaultAnalyzer is Combine(Research{}, Quality{}) followed by Prioritize,
// with static calls so that analysing an empty assessment does not
// allocate, one copy of the assessment and one slice for all gaps.
type defaultAnalyzer struct{}

// Settings describes the analyzer as a host configures it, for the
// fingerprint of a loop's settings and the changes a resume reports.
func (defaultAnalyzer) Settings() string { return "gap.Default()" }

func (defaultAnalyzer) Analyze(ctx context.Context, a Assessment, t Thresholds) ([]Gap, error) {
	return analyzeDefault(ctx, &a, t)
}

func init() { byptr.Analyze = analyzeDefault }

// analyzeDefault is the default analyzer's Analyze with a pointer to the
// assessment, which it does not keep: the engine's (see package byptr).
func analyzeDefault(ctx context.Context, a *Assessment, t Thresholds) ([]Gap, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if a.measuredNothing() {
		return nil, nil // the common case of loops that do not assess
	}
	rp, err := Research{}.plan(a, t)
	if err != nil {
		return nil, err
	}
	// Signals are all Quality reads: without them it finds nothing and
	// reports no error (the thresholds it would validate, Research just
	// did), so the common research assessment skips its plan.
	var qp qualityPlan
	if !a.Signals.Empty() {
		if qp, err = (Quality{}).plan(a, t); err != nil {
			return nil, err
		}
	}
	if rp.n+qp.n == 0 {
		return nil, nil
	}
	gaps := make([]Gap, 0, rp.n+qp.n)
	gaps = rp.fill(gaps, a)
	gaps = qp.fill(gaps, a)
	return prioritize(gaps, a), nil
}
