package converge

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/refine-go/refine/gap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// step is one assessment of a simulated loop; failed and action describe the
// iteration that produced it (ignored for the first, initial, step).
type step struct {
	a      gap.Assessment
	gaps   []gap.Gap
	failed bool
	action string
}

// run builds a History as the engine does: it observes the initial state,
// then for every further step completes one iteration and observes its state.
func run(max, window int, steps ...step) *History {
	h := &History{MaxIterations: max, Window: window}
	for i, s := range steps {
		if i > 0 {
			h.Complete(Attempt{Failed: s.failed, Action: s.action, Duration: time.Second})
		}
		h.Observe(s.a, s.gaps)
	}
	return h
}

// scored returns one step per score.
func scored(scores ...float64) []step {
	out := make([]step, len(scores))
	for i, s := range scores {
		out[i] = step{a: gap.Assessment{Score: s}}
	}
	return out
}

// research returns an assessment with the given coverage and confidence.
func research(cov, conf float64) gap.Assessment {
	return gap.Assessment{Coverage: cov, Confidence: conf}
}

// at returns a history with the latest assessment a after iteration of max.
func at(iteration, max int, a gap.Assessment) *History {
	steps := make([]step, iteration+1)
	steps[iteration] = step{a: a}
	return run(max, 0, steps...)
}

func ptr(v float64) *float64 { return &v }

// under sets the loop's thresholds of h, as the engine does, and returns h.
func under(th gap.Thresholds, h *History) *History {
	h.Thresholds = th
	return h
}

// failingAfter sets the failure threshold of h, as the engine does, and
// returns h.
func failingAfter(n int, h *History) *History {
	h.FailureThreshold = n
	return h
}
