package view

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// Metric is a measure of each iteration charted on a session's page.
type Metric struct {
	// Name names the measure: a metric of converge.Record.Metric
	// ("coverage", "confidence", "score", "conflicts" or a named score of
	// the loop's assessments, such as "tests passing" or "phases
	// complete"), or one of the record's counts: "gaps", "fixable", "P1",
	// "P2", "P3", "tasks", "failed tasks", "tokens", "cost", "calls",
	// "duration" (in seconds), or "gaps:KIND" for the gaps of one kind.
	Name string
	// Label is shown for it (Name when empty).
	Label string
	// Threshold, when set, gives the level the chart draws as a line for
	// a session, or false where none applies.
	Threshold func(r *iterate.Report) (float64, bool)
}

// Coverage and Confidence chart the research metrics, with the loop's
// thresholds where it has them.
var (
	Coverage   = Metric{Name: converge.CriterionCoverage, Threshold: minCoverage}
	Confidence = Metric{Name: converge.CriterionConfidence, Threshold: minConfidence}
)

// minCoverage and minConfidence are the loop's thresholds, when it has them.
func minCoverage(r *iterate.Report) (float64, bool) {
	v := r.History.Thresholds.MinCoverage
	return v, v > 0
}

func minConfidence(r *iterate.Report) (float64, bool) {
	v := r.History.Thresholds.MinConfidence
	return v, v > 0
}

// FailingTests charts a fix loop's failing tests: the gaps of kind
// test_failure its assessments found (one per failing test the test run
// reported), with no threshold. (The history keeps no count of the passing
// tests: chart a named score for them, which the loop's Assess sets.)
var FailingTests = Metric{Name: "gaps:" + string(gap.TestFailure), Label: "failing tests"}

// Level returns a Threshold drawn at v for every session.
func Level(v float64) func(*iterate.Report) (float64, bool) {
	return func(*iterate.Report) (float64, bool) { return v, true }
}

// valueOf returns the measure named name of rec.
func valueOf(rec *converge.Record, name string) (float64, bool) {
	switch name {
	case "gaps":
		return float64(rec.Gaps), true
	case "fixable":
		return float64(rec.Fixable), true
	case "P1", "P2", "P3":
		return float64(rec.Priorities[name[1]-'1']), true
	case "tasks":
		return float64(rec.Tasks), true
	case "failed tasks":
		return float64(rec.FailedTasks), true
	case "tokens":
		return float64(rec.Tokens), true
	case "cost":
		return rec.Cost, true
	case "calls":
		return float64(rec.Calls), true
	case "duration":
		return rec.Duration.Seconds(), true
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

// defaultMetrics are the metrics charted when the host declares none: the
// assessment's metrics some record holds as other than zero, and the gaps;
// for a loop that recorded none of them and no gap, its failed tasks and
// the tokens it spent.
func defaultMetrics(recs []converge.Record) []Metric {
	var out []Metric
	nonzero := func(name string) bool {
		for i := range recs {
			if v, ok := valueOf(&recs[i], name); ok && v != 0 {
				return true
			}
		}
		return false
	}
	for _, m := range []Metric{Coverage, Confidence, {Name: "score"}, {Name: converge.CriterionConflicts}} {
		if nonzero(m.Name) {
			out = append(out, m)
		}
	}
	seen := map[string]bool{}
	var names []string
	for i := range recs {
		for k := range recs[i].Scores {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	sortStrings(names)
	for _, k := range names {
		if nonzero(k) {
			out = append(out, Metric{Name: k})
		}
	}
	out = append(out, Metric{Name: "gaps"})
	if len(out) == 1 && !nonzero("gaps") {
		// A loop that measures nothing (an agent loop judged by its
		// gates): what its tasks did is what there is to see.
		out[0] = Metric{Name: "failed tasks"}
		if nonzero("tokens") {
			out = append(out, Metric{Name: "tokens"})
		}
	}
	return out
}

// point is one value of a series.
type point struct {
	Iteration int
	Value     float64
}

// chart is one metric's chart of a session.
type chart struct {
	Label     string
	Name      string
	Points    []point
	Threshold float64
	HasLine   bool
	SVG       template.HTML
}

// Series returns the chart's points as "iteration:value" pairs, as the
// SVG's data-series attribute holds them.
func (c *chart) series() string {
	var b strings.Builder
	for i, p := range c.Points {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(p.Iteration))
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(p.Value, 'g', -1, 64))
	}
	return b.String()
}

// attemptMetric reports whether the measure named name is one of an
// iteration's attempt (what it spent and did), which an iteration not yet
// assessed has, rather than of the assessment of its state.
func attemptMetric(name string) bool {
	switch name {
	case "tasks", "failed tasks", "tokens", "cost", "calls", "duration":
		return true
	}
	return false
}

// charts builds the charts of r's history; pending, when not nil, is the
// iteration completed since the last assessment, charted by the measures
// of its attempt.
func charts(ms []Metric, r *iterate.Report, pending *converge.Record) []chart {
	recs := r.History.Recent
	if ms == nil {
		ms = defaultMetrics(recs)
	}
	var out []chart
	for _, m := range ms {
		c := chart{Name: m.Name, Label: m.Label}
		if c.Label == "" {
			c.Label = m.Name
		}
		for i := range recs {
			if v, ok := valueOf(&recs[i], m.Name); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				c.Points = append(c.Points, point{recs[i].Iteration, v})
			}
		}
		if pending != nil && attemptMetric(m.Name) {
			if v, ok := valueOf(pending, m.Name); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				c.Points = append(c.Points, point{pending.Iteration, v})
			}
		}
		if m.Threshold != nil {
			c.Threshold, c.HasLine = m.Threshold(r)
		}
		c.SVG = c.draw()
		out = append(out, c)
	}
	return out
}

// The chart's size and margins, in SVG units.
const (
	chartW, chartH         = 420.0, 140.0
	padL, padR, padT, padB = 44.0, 10.0, 10.0, 22.0
)

// draw renders the chart as SVG. Every text in it is escaped by
// template.HTMLEscapeString; the numbers are formatted here.
func (c *chart) draw() template.HTML {
	esc := template.HTMLEscapeString
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="%s" data-metric="%s" data-series="%s"`,
		chartW, chartH, esc(c.Label), esc(c.Name), esc(c.series()))
	if c.HasLine {
		fmt.Fprintf(&b, ` data-threshold="%s"`, strconv.FormatFloat(c.Threshold, 'g', -1, 64))
	}
	b.WriteString(">")
	if len(c.Points) == 0 {
		fmt.Fprintf(&b, `<text x="%g" y="%g" class="note">no values recorded</text></svg>`, padL, chartH/2)
		return template.HTML(b.String())
	}
	lo, hi := 0.0, 0.0
	first, last := c.Points[0].Iteration, c.Points[len(c.Points)-1].Iteration
	for _, p := range c.Points {
		lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
	}
	if c.HasLine {
		lo, hi = math.Min(lo, c.Threshold), math.Max(hi, c.Threshold)
	}
	// A ratio (coverage, confidence) is drawn on its whole scale, 0 to 1;
	// any other measure on its own range (a cost per iteration of a few
	// cents is not flattened against 1).
	if ratioMetric(c.Name) && hi <= 1 && lo >= 0 {
		hi = 1
	}
	if hi == lo {
		hi = lo + 1
	}
	x := func(it int) float64 {
		if last == first {
			return padL + (chartW-padL-padR)/2
		}
		return padL + float64(it-first)/float64(last-first)*(chartW-padL-padR)
	}
	y := func(v float64) float64 { return padT + (hi-v)/(hi-lo)*(chartH-padT-padB) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	// Axes and their labels.
	fmt.Fprintf(&b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, f(padL), f(padT), f(padL), f(chartH-padB))
	fmt.Fprintf(&b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, f(padL), f(chartH-padB), f(chartW-padR), f(chartH-padB))
	fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, f(padL-4), f(padT+8), esc(number(hi)))
	fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, f(padL-4), f(chartH-padB), esc(number(lo)))
	// A labelled line at each quarter between.
	for k := 1; k <= 3; k++ {
		v := lo + (hi-lo)*float64(k)/4
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`,
			f(padL), f(y(v)), f(chartW-padR), f(y(v)), f(padL-4), f(y(v)+3), esc(number(v)))
	}
	fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s">%d</text>`, f(padL), f(chartH-6), first)
	fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="end">iteration %d</text>`, f(chartW-padR), f(chartH-6), last)
	if c.HasLine {
		fmt.Fprintf(&b, `<line class="threshold" x1="%s" y1="%s" x2="%s" y2="%s"><title>threshold %s</title></line>`,
			f(padL), f(y(c.Threshold)), f(chartW-padR), f(y(c.Threshold)), esc(number(c.Threshold)))
	}
	b.WriteString(`<polyline class="series" points="`)
	for i, p := range c.Points {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f(x(p.Iteration)) + "," + f(y(p.Value)))
	}
	b.WriteString(`"/>`)
	for _, p := range c.Points {
		fmt.Fprintf(&b, `<circle class="point" cx="%s" cy="%s" r="2.5"><title>iteration %d: %s</title></circle>`,
			f(x(p.Iteration)), f(y(p.Value)), p.Iteration, esc(number(p.Value)))
	}
	b.WriteString("</svg>")
	return template.HTML(b.String()) //nolint:gosec // every text above is escaped
}

// number formats v shortly: integers without a point, others with up to
// three decimals.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// ratioMetric reports whether the measure named name is a ratio from 0 to
// 1, drawn on that whole scale.
func ratioMetric(name string) bool {
	return name == converge.CriterionCoverage || name == converge.CriterionConfidence
}
