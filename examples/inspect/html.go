package main

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// The page is one file: inline CSS and inline SVG, no script, no external
// style sheet, font or image, so that it can be mailed or attached to a
// ticket and opened anywhere.

// Geometry of a metric's chart (two side by side on the page).
const (
	chartW, chartH = 450, 240
	padL, padR     = 56, 18
	padT, padB     = 16, 40
	pageW          = 720 // width of the budget chart
	barW           = 420 // width of a full budget bar
)

// palette colours the charts' lines, in order.
var palette = []string{"#1f77b4", "#d95f02", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"}

// point is one value of a series, placed.
type point struct {
	X, Y      float64
	Iteration int
	Value     float64
}

// chartSVG is one metric's chart: its line, its points and its threshold
// when the metric has one.
type chartSVG struct {
	Name, Color string
	Values      string // the values, space separated, as data-values
	Points      string // the polyline's points
	Dots        []point
	HasLine     bool
	Threshold   float64
	ThresholdY  float64
	Note        string // "threshold 0.70", or why there is no line
	XTicks      []tick
	YTicks      []tick
}

// tick is a label on an axis.
type tick struct {
	Pos   float64
	Label string
}

// barSVG is one resource of the budget chart.
type barSVG struct {
	Name, Text     string
	Y, Width       float64
	Limited, Over  bool
	Spent, Limit   string
	SpentW, LimitW float64
}

// pageData is what the template renders.
type pageData struct {
	Title, Session, Status, Reason, Question, Fingerprint, File string
	Generation                                                  uint64
	Iteration                                                   int
	Updated, Started, Elapsed, StopLine                         string
	Success, Final                                              bool
	W, H, PlotL, PlotR, PlotT, PlotB                            float64
	PageW                                                       float64
	Charts                                                      []chartSVG
	Bars                                                        []barSVG
	BarsH, BarW                                                 float64
	Rows                                                        []row
	Unmet, Damage                                               []string
	Settings                                                    []setting
	Tokens                                                      int64
	WindowNote                                                  string
	OpenGaps                                                    int
	Generated                                                   string
}

// row is one iteration of the history table.
type row struct {
	Iteration                    int
	Action, Tasks, Time, Summary string
	Coverage, Confidence         string
	Conflicts, Gaps              int
	Failed                       bool
	Tokens                       string
	Runs                         []converge.TaskRun
}

// writeHTML writes the session's page to path, with a chart of each of
// metrics (the default ones when none is named).
func writeHTML(path string, s *session, metrics []string) error {
	var buf bytes.Buffer
	if err := page.Execute(&buf, pageOf(s, metrics)); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the HTML page: %w", err)
	}
	return nil
}

// pageOf lays the session out.
func pageOf(s *session, metrics []string) *pageData {
	c, r := s.c, s.report
	st := iterate.Status(c.Status)
	p := &pageData{
		Title: "refine session " + c.Session, Session: c.Session, Status: c.Status, Reason: c.Reason,
		Question: question(s), Fingerprint: c.Fingerprint, File: s.path, Generation: c.Generation,
		Iteration: c.Iteration, Updated: stamp(c.Time), Started: stamp(r.StartedAt),
		Elapsed: round(r.Elapsed).String(), StopLine: stopLine(c), Success: st.Success(), Final: st.Final(),
		W: chartW, H: chartH, PlotL: padL, PlotR: chartW - padR, PlotT: padT, PlotB: chartH - padB, PageW: pageW,
		BarW: barW, Damage: s.damage, Settings: readableSettings(r), Tokens: r.Usage.Tokens,
		OpenGaps: len(r.History.Gaps), Generated: time.Now().UTC().Format("2006-01-02 15:04:05Z"),
	}
	recs := r.History.Recent
	if len(recs) > 0 && recs[0].Iteration > 0 {
		p.WindowNote = fmt.Sprintf("Iterations 0 to %d are not kept: the history keeps the latest %d.", recs[0].Iteration-1, len(recs))
	}
	for i, m := range seriesOf(r, metrics) {
		p.Charts = append(p.Charts, p.chart(&m, palette[i%len(palette)]))
	}
	for i, b := range budgetLines(r) {
		bar := barSVG{Name: b.name, Text: b.text, Y: float64(i) * 34, Limited: b.limit > 0}
		if bar.Limited {
			bar.Width = barW * min(b.spent/b.limit, 1)
			bar.Over = b.spent > b.limit
		}
		p.Bars = append(p.Bars, bar)
	}
	p.BarsH = float64(len(p.Bars)) * 34
	measured := measures(recs)
	for _, rec := range recs {
		rw := row{Iteration: rec.Iteration, Action: "-", Tasks: "-", Time: "-", Tokens: "-", Summary: rec.Summary,
			Coverage: measured.coverage(rec.Coverage), Confidence: measured.confidence(rec.Confidence),
			Conflicts: rec.Conflicts, Gaps: rec.Gaps, Failed: rec.Failed, Runs: rec.TaskRuns}
		if rec.Iteration > 0 {
			rw.Action, rw.Tasks, rw.Time = dash(rec.Action), fmt.Sprintf("%d (%d failed)", rec.Tasks, rec.FailedTasks), round(rec.Duration).String()
			rw.Tokens = strconv.FormatInt(rec.Tokens, 10)
		}
		p.Rows = append(p.Rows, rw)
	}
	for _, u := range r.Decision.Unmet() {
		p.Unmet = append(p.Unmet, u.String())
	}
	return p
}

// chart lays out the chart of one metric: iterations across, the metric's
// scale up (0 to 1 for ratios).
func (p *pageData) chart(m *metricSeries, color string) chartSVG {
	c := chartSVG{Name: m.name, Color: color, HasLine: m.hasLine, Threshold: m.threshold}
	first, last := 0, 0
	if n := len(m.iterations); n > 0 {
		first, last = m.iterations[0], m.iterations[n-1]
	}
	x := func(it int) float64 {
		if last == first {
			return (p.PlotL + p.PlotR) / 2
		}
		return p.PlotL + float64(it-first)*(p.PlotR-p.PlotL)/float64(last-first)
	}
	y := func(v float64) float64 { return p.PlotB - (v-m.lo)/(m.hi-m.lo)*(p.PlotB-p.PlotT) }
	var values, pts []string
	for i, v := range m.values {
		pt := point{X: x(m.iterations[i]), Y: y(v), Iteration: m.iterations[i], Value: v}
		c.Dots = append(c.Dots, pt)
		values = append(values, num(v))
		pts = append(pts, coord(pt.X)+","+coord(pt.Y))
	}
	c.Values, c.Points = strings.Join(values, " "), strings.Join(pts, " ")
	switch {
	case len(m.values) == 0:
		c.Note = "no values recorded"
	case m.hasLine:
		c.ThresholdY = y(m.threshold)
		c.Note = "threshold " + m.format(m.threshold)
	}
	if m.whole { // counts: whole steps
		step := math.Max(1, math.Ceil((m.hi-m.lo)/4))
		for v := math.Ceil(m.lo/step) * step; v <= m.hi; v += step {
			c.YTicks = append(c.YTicks, tick{y(v), m.format(v)})
		}
	} else {
		for i := range 5 {
			v := m.lo + float64(i)*(m.hi-m.lo)/4
			c.YTicks = append(c.YTicks, tick{y(v), m.format(v)})
		}
	}
	step := max(1, len(m.iterations)/8)
	for i, it := range m.iterations {
		if i%step == 0 || i == len(m.iterations)-1 {
			c.XTicks = append(c.XTicks, tick{x(it), strconv.Itoa(it)})
		}
	}
	return c
}

// num formats a value exactly, in the shortest form that reads back as it.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// coord formats a coordinate to a hundredth of a pixel.
func coord(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

var page = template.Must(template.New("page").Funcs(template.FuncMap{"num": num, "coord": coord}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; max-width: 980px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 2px; }
table { border-collapse: collapse; }
td, th { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; white-space: nowrap; }
td.s { white-space: normal; overflow-wrap: anywhere; }
p { overflow-wrap: anywhere; }
th { background: #f6f6f6; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.status { display: inline-block; padding: 2px 8px; border-radius: 10px; background: #eee; font-weight: 600; }
.ok { background: #d7f0d7; color: #14532d; }
.stop { background: #fde2c8; color: #7c2d12; }
.damage { background: #fde8e8; border: 1px solid #f5b5b5; padding: 8px 12px; }
.failed { color: #b91c1c; }
.muted { color: #777; }
svg text { font: 12px system-ui, sans-serif; fill: #444; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.charts figure { margin: 0; }
</style>
</head>
<body>
<h1>Session {{.Session}}</h1>
<p><span class="status{{if .Success}} ok{{else if .Final}} stop{{end}}" id="status">{{.Status}}</span>
after {{.Iteration}} iteration(s) · generation {{.Generation}} · updated {{.Updated}} · started {{.Started}} · {{.Elapsed}} in iterations</p>
{{if .Damage}}<div class="damage" id="damage"><strong>Damaged checkpoints</strong><ul>{{range .Damage}}<li>{{.}}</li>{{end}}</ul></div>{{end}}

<h2>Why it stopped</h2>
<p id="stop">{{.StopLine}}</p>
<p id="reason">{{if .Reason}}{{.Reason}}{{else}}<span class="muted">no reason recorded</span>{{end}}</p>
{{if .Unmet}}<p>Criteria not met:</p><ul id="unmet">{{range .Unmet}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Question}}<p id="question"><strong>Open question:</strong> {{.Question}}</p>{{end}}

<h2>What the loop measured, per iteration</h2>
{{if .WindowNote}}<p class="muted">{{.WindowNote}}</p>{{end}}
<div class="charts">
{{range .Charts}}<figure><figcaption><span style="color:{{.Color}}">■</span> {{.Name}}{{if .Note}} <span class="muted">({{.Note}}{{if .HasLine}}, dashed{{end}})</span>{{end}}</figcaption>
<svg class="chart" data-metric="{{.Name}}" xmlns="http://www.w3.org/2000/svg" width="{{$.W}}" height="{{$.H}}" viewBox="0 0 {{$.W}} {{$.H}}" role="img" aria-label="{{.Name}} per iteration">
<rect x="0" y="0" width="{{$.W}}" height="{{$.H}}" fill="#fff"/>
{{range .YTicks}}<line x1="{{$.PlotL}}" x2="{{$.PlotR}}" y1="{{coord .Pos}}" y2="{{coord .Pos}}" stroke="#eee"/>
<text x="{{coord $.PlotL}}" dx="-6" y="{{coord .Pos}}" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}{{range .XTicks}}<text x="{{coord .Pos}}" y="{{$.PlotB}}" dy="18" text-anchor="middle">{{.Label}}</text>
{{end}}<text x="{{coord $.PlotR}}" y="{{$.H}}" dy="-4" text-anchor="end">iteration</text>
<line x1="{{$.PlotL}}" x2="{{$.PlotR}}" y1="{{$.PlotB}}" y2="{{$.PlotB}}" stroke="#999"/>
{{if and .HasLine .Dots}}<line class="threshold" data-series="{{.Name}}" data-value="{{num .Threshold}}" x1="{{$.PlotL}}" x2="{{$.PlotR}}" y1="{{coord .ThresholdY}}" y2="{{coord .ThresholdY}}" stroke="{{.Color}}" stroke-dasharray="6 4" stroke-width="1.5"/>
{{end}}<polyline class="series" data-series="{{.Name}}" data-values="{{.Values}}" points="{{.Points}}" fill="none" stroke="{{.Color}}" stroke-width="2.5"/>
{{$c := .}}{{range .Dots}}<circle cx="{{coord .X}}" cy="{{coord .Y}}" r="4" fill="{{$c.Color}}" data-series="{{$c.Name}}" data-iteration="{{.Iteration}}" data-value="{{num .Value}}"><title>iteration {{.Iteration}}: {{$c.Name}} {{num .Value}}</title></circle>
{{end}}</svg></figure>
{{end}}</div>

<h2>Budget spent against its limits</h2>
<svg id="budget" xmlns="http://www.w3.org/2000/svg" width="{{.PageW}}" height="{{.BarsH}}" viewBox="0 0 {{.PageW}} {{.BarsH}}" role="img" aria-label="budget spent against limits">
{{range .Bars}}<text x="0" y="{{coord .Y}}" dy="18">{{.Name}}</text>
{{if .Limited}}<rect x="90" y="{{coord .Y}}" width="{{$.BarW}}" height="22" fill="#eee"/><rect class="spent" data-resource="{{.Name}}" x="90" y="{{coord .Y}}" width="{{coord .Width}}" height="22" fill="{{if .Over}}#dc2626{{else}}#16a34a{{end}}"/>{{end}}
<text x="{{if .Limited}}520{{else}}90{{end}}" y="{{coord .Y}}" dy="16">{{.Text}}</text>
{{end}}</svg>
<p class="muted">{{.Tokens}} tokens in all; per iteration in the history below.</p>

<h2>History</h2>
<table id="history">
<tr><th>iteration</th><th>action</th><th>tasks</th><th>tokens</th><th>coverage</th><th>confidence</th><th>conflicts</th><th>gaps</th><th>time</th><th>summary</th></tr>
{{range .Rows}}<tr{{if .Failed}} class="failed"{{end}}><td class="n">{{.Iteration}}</td><td>{{.Action}}{{if .Failed}} (failed){{end}}</td><td>{{.Tasks}}
{{- range .Runs}}<div class="task">{{if .Role}}{{.Role}}{{else}}task{{end}}: {{if .Err}}<span class="err">failed: {{.Err}}</span>{{else}}ok{{end}}{{with .Output}}<details><summary>output</summary><pre>{{.}}</pre></details>{{end}}</div>{{end}}</td><td class="n tokens">{{.Tokens}}</td><td class="n">{{.Coverage}}</td><td class="n">{{.Confidence}}</td><td class="n">{{.Conflicts}}</td><td class="n">{{.Gaps}}</td><td class="n">{{.Time}}</td><td class="s">{{.Summary}}</td></tr>
{{end}}</table>
{{if .OpenGaps}}<p>{{.OpenGaps}} gap(s) open at the latest assessment.</p>{{end}}

<h2>Settings</h2>
<p class="muted">fingerprint {{.Fingerprint}} · file {{.File}}</p>
<table id="settings">
{{range .Settings}}<tr><td>{{.Name}}</td><td class="s">{{.Value}}</td></tr>
{{end}}</table>
<p class="muted">Generated by inspect at {{.Generated}}.</p>
</body>
</html>
`))
