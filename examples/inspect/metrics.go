package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// The charts (the HTML page's and the sparklines) show the metrics the user
// names with --metric, or, without, what the loop measured: a research
// loop's coverage and confidence, a fix loop's tests passing and failing, a
// plan's tasks done and phases complete (the named scores of their
// assessments).

// metricHelp is --metric's usage.
const metricHelp = "chart `name` (repeatable, in order): coverage, confidence, score, conflicts, a named score of the loop's\n" +
	"assessments (fixloop: \"tests passing\", \"tests failing\"; planrunner: \"tasks done\", \"phases complete\"),\n" +
	"or a count: gaps, gaps:KIND, tasks, failed tasks. Without it: the metrics the loop recorded as other than 0"

// metricList is the repeatable --metric flag.
type metricList []string

func (m *metricList) String() string { return strings.Join(*m, ", ") }

func (m *metricList) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return fmt.Errorf("an empty metric name")
	}
	*m = append(*m, s)
	return nil
}

// valueOf returns the metric named name of rec: a metric of
// converge.Record.Metric, or one of the record's counts.
func valueOf(rec *converge.Record, name string) (float64, bool) {
	switch name {
	case "gaps":
		return float64(rec.Gaps), true
	case "tasks":
		return float64(rec.Tasks), true
	case "failed tasks":
		return float64(rec.FailedTasks), true
	}
	if k, ok := strings.CutPrefix(name, "gaps:"); ok {
		for kind, n := range rec.Kinds {
			if string(kind) == k {
				return float64(n), true
			}
		}
		return 0, true
	}
	return rec.Metric(name)
}

// defaultMetrics are the metrics charted when the user names none: those
// of coverage, confidence, score and conflicts, then of the named scores
// (by name), that some record holds as other than 0. A loop that measured
// none of them (an agent loop, whose signals are its AI CLI's exit status
// and its gates: a failed iteration) gets its gaps, when it found some,
// and its failed tasks.
func defaultMetrics(recs []converge.Record) []string {
	nonzero := func(name string) bool {
		for i := range recs {
			if v, ok := valueOf(&recs[i], name); ok && v != 0 {
				return true
			}
		}
		return false
	}
	var out []string
	for _, n := range []string{converge.CriterionCoverage, converge.CriterionConfidence, "score", converge.CriterionConflicts} {
		if nonzero(n) {
			out = append(out, n)
		}
	}
	var named []string
	for i := range recs {
		for k := range recs[i].Scores {
			if !slices.Contains(named, k) {
				named = append(named, k)
			}
		}
	}
	slices.Sort(named)
	for _, n := range named {
		if nonzero(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		if nonzero("gaps") {
			out = append(out, "gaps")
		}
		out = append(out, "failed tasks")
	}
	return out
}

// thresholdOf returns the level the loop holds the metric to, when it has
// one: its coverage and confidence thresholds (when not off) and the most
// conflicts it tolerates.
// A named score or a count has none.
func thresholdOf(r *iterate.Report, name string) (float64, bool) {
	t := r.History.Thresholds
	switch name {
	case converge.CriterionCoverage:
		return t.MinCoverage, t.MinCoverage > 0
	case converge.CriterionConfidence:
		return t.MinConfidence, t.MinConfidence > 0
	case converge.CriterionConflicts:
		return float64(max(t.MaxConflicts, 0)), true // negative: none tolerated
	}
	return 0, false
}

// metricSeries is one metric of the history.
type metricSeries struct {
	name       string
	iterations []int
	values     []float64
	threshold  float64
	hasLine    bool
	lo, hi     float64 // the scale: 0 to 1 for ratios, else the values' range with 0
	whole      bool    // every value (and the threshold) is a whole number
}

// seriesOf returns the series of each metric of r's history.
func seriesOf(r *iterate.Report, metrics []string) []metricSeries {
	recs := r.History.Recent
	if len(metrics) == 0 {
		metrics = defaultMetrics(recs)
	}
	out := make([]metricSeries, 0, len(metrics))
	for _, name := range metrics {
		s := metricSeries{name: name}
		for i := range recs {
			if v, ok := valueOf(&recs[i], name); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				s.iterations = append(s.iterations, recs[i].Iteration)
				s.values = append(s.values, v)
			}
		}
		s.threshold, s.hasLine = thresholdOf(r, name)
		s.whole = true
		for _, v := range s.values {
			s.lo, s.hi = min(s.lo, v), max(s.hi, v)
			s.whole = s.whole && v == math.Trunc(v)
		}
		if s.hasLine {
			s.lo, s.hi = min(s.lo, s.threshold), max(s.hi, s.threshold)
			s.whole = s.whole && s.threshold == math.Trunc(s.threshold)
		}
		if s.lo >= 0 && s.hi <= 1+1e-9 { // a ratio, give or take a rounding
			s.hi = 1
		}
		if s.hi == s.lo {
			s.hi = s.lo + 1
		}
		out = append(out, s)
	}
	return out
}

// format formats a value of the series for reading: a count as a whole
// number, a ratio (on the 0–1 scale) with two decimals, another value with
// at most three.
func (s *metricSeries) format(v float64) string {
	switch {
	case s.whole:
		return num(v)
	case s.lo == 0 && s.hi == 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(v, 'f', 3, 64), "0"), ".")
}

// spark draws the series as a sparkline on its scale: the 0–1 scale of
// ratios is absolute, so that coverage and confidence compare.
func (s *metricSeries) spark() string {
	scaled := make([]float64, len(s.values))
	for i, v := range s.values {
		scaled[i] = (v - s.lo) / (s.hi - s.lo)
	}
	return sparkline(scaled)
}

// trend describes the series: first, last and the threshold.
func (s *metricSeries) trend() string {
	if len(s.values) == 0 {
		return "no values recorded"
	}
	out := s.format(s.values[0]) + " → " + s.format(s.values[len(s.values)-1])
	if s.hasLine {
		out += " (threshold " + s.format(s.threshold) + ")"
	}
	return out
}

// title is the metric's name with a capital, as a label.
func title(name string) string {
	if name == "" {
		return name
	}
	return strings.ToUpper(name[:1]) + name[1:]
}
