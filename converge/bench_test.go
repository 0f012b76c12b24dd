package converge

import (
	"strconv"
	"testing"

	"github.com/refine-go/refine/gap"
)

// loopHistory returns the history of a loop of limit max after n iterations
// of the engine's cheapest path: assessments that measured nothing.
func loopHistory(n, max int) *History {
	h := &History{MaxIterations: max}
	for i := 0; i <= n; i++ {
		if i > 0 {
			h.Complete(Attempt{Action: "refine", Tasks: 1})
		}
		h.Observe(gap.Assessment{}, nil)
	}
	return h
}

// coverageGap returns the gap the default analyzer finds in a coverage of
// files/100, as BenchmarkLoop/gap of package iterate has it.
func coverageGap(files int) []gap.Gap {
	return []gap.Gap{{Kind: gap.Coverage, Priority: gap.P1, Severity: 0.5, Fixable: true, Target: "coverage",
		Detail: "coverage 0." + strconv.Itoa(files) + " below 0.70 (" + strconv.Itoa(files) + " of 100 files)", Source: "research"}}
}

// BenchmarkStandardDecide measures Default().Decide on the two paths of
// BenchmarkLoop: an assessment that measured nothing (func) and one
// coverage gap (gap).
func BenchmarkStandardDecide(b *testing.B) {
	p := Default()
	b.Run("unmeasured", func(b *testing.B) {
		h := loopHistory(40, 1000)
		b.ReportAllocs()
		for b.Loop() {
			if p.Decide(h).Stop() {
				b.Fatal("stopped")
			}
		}
	})
	b.Run("coverage", func(b *testing.B) {
		h := loopHistory(40, 1000)
		h.Complete(Attempt{Action: "expand", Tasks: 1})
		h.Observe(gap.Assessment{FilesAnalyzed: 41, EstimatedFiles: 100}, coverageGap(41))
		b.ReportAllocs()
		for b.Loop() {
			if p.Decide(h).Stop() {
				b.Fatal("stopped")
			}
		}
	})
}

// BenchmarkObserve measures History.Complete and History.Observe of one
// iteration, with a full window.
func BenchmarkObserve(b *testing.B) {
	b.Run("unmeasured", func(b *testing.B) {
		h := loopHistory(100, 0)
		b.ReportAllocs()
		for b.Loop() {
			h.Complete(Attempt{Action: "refine", Tasks: 1})
			h.Observe(gap.Assessment{}, nil)
		}
	})
	b.Run("coverage", func(b *testing.B) {
		h := loopHistory(100, 0)
		var gaps [50][]gap.Gap
		for i := range gaps {
			gaps[i] = coverageGap(i + 10)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			h.Complete(Attempt{Action: "expand", Tasks: 1})
			h.Observe(gap.Assessment{FilesAnalyzed: i%50 + 10, EstimatedFiles: 100}, gaps[i%50])
			i++
		}
	})
}
