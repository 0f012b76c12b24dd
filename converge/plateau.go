package converge

import (
	"math"
	"strconv"
	"strings"
)

// defaultPatience is the patience of [EarlyStopping] when its Patience is zero.
const defaultPatience = 3

// metricScore names the quality score, as [gap.Assessment.Metric] does.
const metricScore = "score"

var defaultPlateauMetrics = []string{metricScore}

// EarlyStopping stops a loop whose metrics stopped improving, in the manner of
// Keras' EarlyStopping callback (verdict Plateau), over the bounded window of records of the
// [History] (h.Recent).
//
// The rule, for each metric, over the records of the window that have it:
//
//   - Warm-up: the first WarmUp iterations are not monitored, as Keras'
//     start_from_epoch: their records neither count towards the patience
//     nor serve as the reference. The record of the state the warm-up ends
//     with (Record.Iteration = WarmUp; the initial assessment when WarmUp
//     is 0) is monitored as the reference only: the first monitored
//     iteration is measured against the state it started from.
//   - Block: the last Patience monitored records, each the result of an
//     iteration after the warm-up (Record.Iteration > WarmUp).
//   - Reference: the best of Baseline (when set) and the monitored records
//     before the block (Record.Iteration ≥ WarmUp); best is the highest
//     value, or the lowest with Minimize.
//   - Improvement: a value of the block better than the reference by more
//     than MinDelta (v − MinDelta > reference, or v + MinDelta < reference
//     with Minimize).
//
// Values that are not finite: a NaN counts as no improvement, as in Keras
// (which compares it and finds it no better): it fills the block like any
// value but never improves and is never the reference. While every value
// before the block is NaN and there is no Baseline, the reference has no
// value and any value of the block that is not NaN improves (as Keras'
// best starts at ∓Inf). The infinities compare as numbers: +Inf improves on
// any finite reference (with Minimize, −Inf does) and, once the reference,
// is never improved on.
//
// Decide returns verdict Plateau when every metric has a full block and a
// reference and none of them improved; otherwise it returns Continue. So a
// metric that stays flat stops the loop after exactly WarmUp + Patience
// iterations, with or without a Baseline, and never before. A metric
// missing from the records (an unknown name) never lets the loop plateau.
//
// Where it differs from Keras' EarlyStopping (version 3):
//
//   - Baseline: the block must beat the better of the Baseline and the
//     values before it, so the loop stops once no value beats the Baseline
//     for Patience iterations, also while the metric improves below it.
//     Keras stops only on an epoch that does not improve on its running
//     best: an epoch that improves below the baseline does not reset its
//     wait but does not stop training either, so a metric improving below
//     the baseline at every epoch never stops it.
//   - Warm-up: the state the warm-up ends with (Record.Iteration =
//     WarmUp, the result of its last iteration) is monitored, as the
//     reference; Keras' start_from_epoch = WarmUp ignores that epoch (its
//     epoch WarmUp−1) altogether, and its first monitored epoch, compared
//     with a best of ∓Inf, is always an improvement. So without a Baseline
//     Keras stops one epoch later than the rule above (after WarmUp +
//     Patience + 1 epochs of a flat metric), and a high value at the end
//     of the warm-up can stop this loop where Keras, never having seen it,
//     goes on.
//   - Patience 0 means 3 here; in Keras, patience 0 stops at the first
//     epoch without improvement, as patience 1 does.
//   - The reference is the best value seen before the block, not the
//     running best that only moves by more than MinDelta; the verdicts
//     differ only when several small steps add up to more than MinDelta.
//
// Patience must be less than the window of the History (see
// [EarlyStopping.Validate] and [ValidateWindow]); a block larger than the
// window never fills and the loop never plateaus.
//
// Decide does not allocate when it continues. The zero value watches the
// score with a patience of 3 and no warm-up. EarlyStopping is not modified by
// Decide and is safe for concurrent use as long as Metrics and Baseline are
// not modified.
type EarlyStopping struct {
	// Metrics names the metrics to watch, as [Record.Metric] names them
	// ("score", "coverage", "confidence", "conflicts" or a key of
	// [gap.Assessment.Scores]); empty means []string{"score"}.
	Metrics []string `json:"metrics,omitempty"`
	// Patience is the number of iterations without improvement after which
	// the loop stops; 0 means 3.
	Patience int `json:"patience,omitempty"`
	// MinDelta is the change that counts as an improvement (strictly more).
	MinDelta float64 `json:"min_delta,omitempty"`
	// Baseline, when set, is a value each metric must beat by more than
	// MinDelta.
	Baseline *float64 `json:"baseline,omitempty"`
	// WarmUp is the number of first iterations whose records are not
	// monitored (Keras' start_from_epoch); see the rule above.
	WarmUp int `json:"warm_up,omitempty"`
	// Minimize makes lower values better (e.g. for "conflicts").
	Minimize bool `json:"minimize,omitempty"`
}

// Validate returns an error matching [ErrInvalidPolicy] when Patience is negative or not less
// than [DefaultWindow], MinDelta is negative or not finite, WarmUp is
// negative, Baseline is not finite, or a metric name is empty. For a loop
// with another window, [ValidateWindow] checks Patience against it.
func (p EarlyStopping) Validate() error { return p.validateWindow(DefaultWindow) }

func (p EarlyStopping) validateWindow(window int) error {
	if err := checkCount("EarlyStopping", "Patience", p.Patience); err != nil {
		return err
	}
	if countOr(p.Patience, defaultPatience) >= window {
		return invalid("EarlyStopping", "Patience",
			"must be less than the history window ("+strconv.Itoa(window)+"), got "+strconv.Itoa(countOr(p.Patience, defaultPatience)))
	}
	if p.MinDelta < 0 || math.IsNaN(p.MinDelta) || math.IsInf(p.MinDelta, 0) {
		return invalid("EarlyStopping", "MinDelta", "must be a finite value >= 0, got "+formatFloat(p.MinDelta))
	}
	if err := checkCount("EarlyStopping", "WarmUp", p.WarmUp); err != nil {
		return err
	}
	if p.Baseline != nil && (math.IsNaN(*p.Baseline) || math.IsInf(*p.Baseline, 0)) {
		return invalid("EarlyStopping", "Baseline", "must be finite, got "+formatFloat(*p.Baseline))
	}
	for i, m := range p.Metrics {
		if m == "" {
			return invalid("EarlyStopping", "Metrics["+strconv.Itoa(i)+"]", "must not be empty")
		}
	}
	return nil
}

// Decide returns Plateau when no watched metric improved within the
// patience, and Continue otherwise.
func (p EarlyStopping) Decide(h *History) Decision {
	patience := countOr(p.Patience, defaultPatience)
	if h == nil || patience < 0 || h.Iteration <= p.WarmUp {
		return Decision{}
	}
	metrics := p.Metrics
	if len(metrics) == 0 {
		metrics = defaultPlateauMetrics
	}
	for _, m := range metrics {
		if !p.stalled(h, m, patience) {
			return Decision{}
		}
	}
	return Decision{Verdict: Plateau, Reason: p.reason(metrics, patience)}
}

// monitored returns the value of metric in r and whether r is monitored
// (a NaN is: it counts as no improvement).
func (p *EarlyStopping) monitored(r *Record, metric string) (float64, bool) {
	if r.Iteration < p.WarmUp {
		return 0, false
	}
	return r.Metric(metric)
}

// stalled reports whether metric has a full patience block and a reference
// and did not improve within the block.
func (p *EarlyStopping) stalled(h *History, metric string, patience int) bool {
	n, after := 0, 0 // monitored records; those after the warm-up (Iteration > WarmUp)
	for i := range h.Recent {
		if _, ok := p.monitored(&h.Recent[i], metric); ok {
			n++
			if h.Recent[i].Iteration > p.WarmUp {
				after++
			}
		}
	}
	if after < patience || (p.Baseline == nil && n < patience+1) {
		return false
	}
	// The reference has no value while every value before the block is
	// NaN (and there is no baseline): then any value that is not NaN
	// improves, as on Keras' first epoch.
	var ref float64
	haveRef := false
	if p.Baseline != nil {
		ref, haveRef = *p.Baseline, true
	}
	k := 0
	for i := range h.Recent {
		v, ok := p.monitored(&h.Recent[i], metric)
		if !ok {
			continue
		}
		switch {
		case math.IsNaN(v):
			// Never the reference, never an improvement.
		case k < n-patience:
			if !haveRef || p.better(v, ref, 0) {
				ref, haveRef = v, true
			}
		case !haveRef || p.better(v, ref, p.MinDelta):
			return false
		}
		k++
	}
	return true
}

// better reports whether v beats ref by more than delta.
func (p *EarlyStopping) better(v, ref, delta float64) bool {
	if p.Minimize {
		return v+delta < ref
	}
	return v-delta > ref
}

// reason returns e.g. "plateau: score did not improve for 3 iterations
// (min delta 0.01, baseline 0.80)".
func (p *EarlyStopping) reason(metrics []string, patience int) string {
	var sb strings.Builder
	sb.WriteString("plateau: ")
	sb.WriteString(strings.Join(metrics, ", "))
	sb.WriteString(" did not improve for ")
	sb.WriteString(plural(patience, "iteration"))
	var notes []string
	if p.MinDelta > 0 {
		notes = append(notes, "min delta "+formatFloat(p.MinDelta))
	}
	if p.Baseline != nil {
		notes = append(notes, "baseline "+formatFloat(*p.Baseline))
	}
	if len(notes) > 0 {
		sb.WriteString(" (" + strings.Join(notes, ", ") + ")")
	}
	return sb.String()
}
