package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/iopath/iopath/internal/units"
)

// CompareHTML writes c as a self-contained HTML page: the same header,
// table, legend, summary and notes as CompareTable, and an inline SVG chart
// of each matched row's throughput change (a horizontal bar per row; bars
// within the noise are grey, and each row's noise band is drawn behind its
// bar). The page loads nothing: no scripts, no fonts, no external
// references; its Content-Security-Policy allows only inline styles and
// data: images. Every value from the reports is escaped by html/template.
//
// The chart is an <svg class="chart" data-chart="compare-throughput"
// data-series="N">, N being the number of bars (rows with a throughput
// delta: matched rows whose throughput was measured on both sides).
func CompareHTML(w io.Writer, c *Comparison) error {
	var b bytes.Buffer
	if err := compareTemplate.Execute(&b, comparePage(c)); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

type cmpHTMLPage struct {
	Title          string
	Fields         []cmpField
	MachineDiffers bool
	Differences    []Difference
	Summary        string
	Chart          cmpChart
	MultiGroup     bool
	Groups         []cmpHTMLGroup
	Legend         string
	NoiseRule      string
	Notes          []string
}

type cmpField struct{ Label, Value string }

type cmpHTMLGroup struct {
	Key  string
	Rows []cmpHTMLRow
}

type cmpHTMLRow struct {
	Name, Cache, Status, Error string
	Old, New, Runs             string
	Metrics                    []cmpHTMLMetric
}

type cmpHTMLMetric struct {
	Pct, Verdict, Class, Title string
}

// cmpChart is the SVG chart's geometry, in pixels, as strings so that the
// output is the same on every platform.
type cmpChart struct {
	Width, Height int
	ZeroX         string
	AxisTop       string
	AxisBottom    string
	Ticks         []cmpTick
	Bars          []cmpBar
}

type cmpTick struct{ X, Label string }

type cmpBar struct {
	Label, Value, Title, Class string
	Y, BarH, TextY             string
	BarX, BarW                 string
	BandX, BandW               string // empty: no band (spread unknown)
}

func comparePage(c *Comparison) cmpHTMLPage {
	p := cmpHTMLPage{
		Title:          "iopath compare",
		MachineDiffers: c.MachineDiffers(),
		Summary:        c.Summary.String(),
		Legend:         compareLegend,
		NoiseRule:      NoiseRule,
	}
	if c.Old.Path != "" || c.New.Path != "" {
		p.Title = fmt.Sprintf("iopath compare: %s → %s", cmpOrNone(c.Old.Path), cmpOrNone(c.New.Path))
	}
	field := func(label, value string) {
		if value != "" {
			p.Fields = append(p.Fields, cmpField{label, value})
		}
	}
	field("old", cmpSource(c.Old))
	field("new", cmpSource(c.New))
	if !p.MachineDiffers {
		field("machine", cmpMachine(c.New.Machine))
	}
	field("file", cmpFileLine(c))
	groups := compareGroups(c.Rows)
	if len(groups) == 1 {
		field("workload", groups[0].key)
	}
	for _, d := range c.Differences {
		d.Old, d.New = cmpOrNone(d.Old), cmpOrNone(d.New)
		p.Differences = append(p.Differences, d)
	}
	p.MultiGroup = len(groups) > 1
	for _, g := range groups {
		hg := cmpHTMLGroup{Key: g.key}
		for _, r := range g.rows {
			hg.Rows = append(hg.Rows, compareHTMLRow(r))
		}
		p.Groups = append(p.Groups, hg)
	}
	p.Chart = compareChart(c, p.MultiGroup)
	p.Notes = compareNotes(c, p.MultiGroup)
	return p
}

func compareHTMLRow(r *CompareRow) cmpHTMLRow {
	h := cmpHTMLRow{Name: r.Name(), Cache: r.Cache, Status: string(r.Status), Error: r.Error}
	cells := compareCells(r)
	if r.Status == StatusError {
		h.Error = cells[2]
		return h
	}
	h.Old, h.New, h.Runs = cells[2], cells[4], cells[11]
	if r.Status != StatusMatched {
		h.Metrics = []cmpHTMLMetric{{Verdict: string(r.Status), Class: string(r.Status)}, {}, {}}
		return h
	}
	for _, d := range []*Delta{r.Throughput, r.CPU, r.P99} {
		h.Metrics = append(h.Metrics, cmpHTMLMetric{Pct: cmpPct(d), Verdict: cmpVerdict(d), Class: cmpVerdictClass(d.Verdict), Title: d.Why})
	}
	return h
}

// verdictClass is the CSS class of a verdict.
func cmpVerdictClass(v Verdict) string {
	switch v {
	case VerdictFaster, VerdictBetter:
		return "good"
	case VerdictSlower, VerdictWorse:
		return "bad"
	case VerdictNoise:
		return "noise"
	}
	return "unknown"
}

// Chart geometry, in pixels.
const (
	cmpChartWidth  = 800
	cmpChartLabelW = 330 // labels on the left
	cmpChartValueW = 70  // values on the right
	cmpChartRowH   = 20
	cmpChartBarH   = 12
	cmpChartTop    = 28 // tick labels
	cmpChartBottom = 8
)

func cmpPx(f float64) string { return fmt.Sprintf("%.1f", f) }

// compareChart lays out one bar per matched row with a throughput delta.
func compareChart(c *Comparison, withWorkload bool) cmpChart {
	var rows []*CompareRow
	scale := 0.0
	for i := range c.Rows {
		r := &c.Rows[i]
		d := r.Throughput
		if d == nil || d.Verdict == VerdictNA || !finite(d.Pct) {
			continue
		}
		rows = append(rows, r)
		scale = max(scale, math.Abs(d.Pct))
		if finite(d.SpreadPct) {
			scale = max(scale, d.SpreadPct)
		}
	}
	scale = cmpNiceCeil(max(scale, 1))
	ch := cmpChart{Width: cmpChartWidth, Height: cmpChartTop + cmpChartBottom + max(len(rows), 1)*cmpChartRowH}
	plotL, plotR := float64(cmpChartLabelW), float64(cmpChartWidth-cmpChartValueW)
	zero := (plotL + plotR) / 2
	half := (plotR - plotL) / 2
	x := func(pct float64) float64 { return zero + pct/scale*half }
	ch.ZeroX = cmpPx(zero)
	ch.AxisTop, ch.AxisBottom = cmpPx(cmpChartTop-6), cmpPx(float64(ch.Height-cmpChartBottom))
	for _, t := range []float64{-scale, -scale / 2, 0, scale / 2, scale} {
		ch.Ticks = append(ch.Ticks, cmpTick{X: cmpPx(x(t)), Label: cmpSignedPct(t)})
	}
	for i, r := range rows {
		d := r.Throughput
		top := float64(cmpChartTop + i*cmpChartRowH)
		bar := cmpBar{
			Label: r.Name() + " " + r.Cache,
			Value: fmt.Sprintf("%+.1f%%", d.Pct),
			Class: cmpVerdictClass(d.Verdict),
			Y:     cmpPx(top + (cmpChartRowH-cmpChartBarH)/2),
			BarH:  cmpPx(cmpChartBarH),
			TextY: cmpPx(top + cmpChartRowH/2 + 4),
		}
		if withWorkload {
			bar.Label += " · " + cmpShortWorkload(r)
		}
		x0, x1 := zero, x(d.Pct)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		bar.BarX, bar.BarW = cmpPx(x0), cmpPx(max(x1-x0, 1))
		bar.Title = fmt.Sprintf("%s: %s → %s GiB/s, %+.1f%%, %s", bar.Label, cmpGiB(d.Old), cmpGiB(d.New), d.Pct, d.Verdict)
		if d.Verdict == VerdictUnknown {
			bar.Title += " (" + d.Why + ")"
		} else {
			band := min(d.SpreadPct, scale) / scale * half
			bar.BandX, bar.BandW = cmpPx(zero-band), cmpPx(2*band)
			bar.Title += fmt.Sprintf("; noise band ±%.1f%%", d.SpreadPct)
		}
		ch.Bars = append(ch.Bars, bar)
	}
	return ch
}

// niceCeil rounds f up to 1, 2 or 5 times a power of ten.
func cmpNiceCeil(f float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(f)))
	for _, m := range []float64{1, 2, 5, 10} {
		if f <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func cmpSignedPct(f float64) string {
	s := fmt.Sprintf("%+g%%", f)
	if f == 0 {
		s = "0%"
	}
	return s
}

// shortWorkload is a chart label's workload: "seq 4KiB qd 32".
func cmpShortWorkload(r *CompareRow) string {
	parts := []string{r.Pattern}
	if r.BS > 0 {
		parts = append(parts, units.FormatSize(int64(r.BS)))
	}
	if r.Workers > 1 {
		parts = append(parts, fmt.Sprintf("×%d", r.Workers))
	}
	if r.QD > 0 {
		parts = append(parts, fmt.Sprintf("qd %d", r.QD))
	}
	if r.Consume != "" {
		parts = append(parts, r.Consume)
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

var compareTemplate = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fff; }
h1 { font-size: 1.4em; margin: 0 0 .5em; }
h2 { font-size: 1.1em; margin: 1.5em 0 .5em; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; margin: 0; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; font-family: ui-monospace, monospace; }
.warn { border: 1px solid #d9a400; background: #fff8e1; padding: .5em 1em; margin: 1em 0; }
.warn strong { color: #8a5a00; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: .2em .6em; text-align: left; border-bottom: 1px solid #eee; }
th { background: #f5f5f5; }
td.num { text-align: right; font-family: ui-monospace, monospace; }
tr.group th { background: #fafafa; font-weight: 600; text-align: left; }
td.error { color: #b00020; }
.good { color: #1b7f3a; font-weight: 600; }
.bad { color: #b00020; font-weight: 600; }
.noise, .unknown { color: #888; }
.added { color: #1d4ed8; }
.removed { color: #7c3aed; }
p.summary { font-size: 1.1em; font-weight: 600; }
pre.legend { background: #fafafa; padding: .6em; font-size: 12px; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart text { font: 12px ui-monospace, monospace; fill: #333; }
svg.chart .axis { stroke: #555; stroke-width: 1; }
svg.chart .grid { stroke: #ddd; stroke-width: 1; }
svg.chart .band { fill: #000; fill-opacity: .08; }
svg.chart rect.good { fill: #2e9e50; }
svg.chart rect.bad { fill: #d0393e; }
svg.chart rect.noise { fill: #bbb; }
svg.chart rect.unknown { fill: #ddd; stroke: #aaa; stroke-dasharray: 2 2; }
</style>
</head>
<body>
<h1>iopath compare</h1>
<dl class="meta">
{{- range .Fields}}
<dt>{{.Label}}</dt><dd>{{.Value}}</dd>
{{- end}}
</dl>
{{- if .Differences}}
<div class="warn">
{{- if .MachineDiffers}}
<p><strong>The reports come from different machines: comparisons across machines are suspect.</strong></p>
{{- end}}
<p>The reports differ in:</p>
<table class="diff">
<thead><tr><th></th><th>old</th><th>new</th></tr></thead>
<tbody>
{{- range .Differences}}
<tr><th>{{.What}}</th><td>{{.Old}}</td><td>{{.New}}</td></tr>
{{- end}}
</tbody>
</table>
</div>
{{- end}}
<p class="summary">{{.Summary}}</p>
<h2>Throughput change, new vs old</h2>
<svg class="chart" data-chart="compare-throughput" data-series="{{len .Chart.Bars}}" width="{{.Chart.Width}}" height="{{.Chart.Height}}" viewBox="0 0 {{.Chart.Width}} {{.Chart.Height}}" role="img" aria-label="Throughput change per row, in percent; grey bars are within the noise band">
{{- range .Chart.Ticks}}
<line class="grid" x1="{{.X}}" y1="{{$.Chart.AxisTop}}" x2="{{.X}}" y2="{{$.Chart.AxisBottom}}"/>
<text x="{{.X}}" y="16" text-anchor="middle">{{.Label}}</text>
{{- end}}
{{- range .Chart.Bars}}
<g class="row">
<title>{{.Title}}</title>
<text x="4" y="{{.TextY}}">{{.Label}}</text>
{{- if .BandW}}
<rect class="band" x="{{.BandX}}" y="{{.Y}}" width="{{.BandW}}" height="{{.BarH}}"/>
{{- end}}
<rect class="{{.Class}}" x="{{.BarX}}" y="{{.Y}}" width="{{.BarW}}" height="{{.BarH}}"/>
<text x="{{$.Chart.Width}}" y="{{.TextY}}" text-anchor="end" dx="-4">{{.Value}}</text>
</g>
{{- else}}
<text x="4" y="44">no row was measured in both reports</text>
{{- end}}
<line class="axis" x1="{{.Chart.ZeroX}}" y1="{{.Chart.AxisTop}}" x2="{{.Chart.ZeroX}}" y2="{{.Chart.AxisBottom}}"/>
</svg>
<p>Bars are the change in median GiB/s; the shaded band around 0 is the row's noise band (the larger of the two sides' min–max spreads over their runs). Green: faster, red: slower, grey: within the noise, dashed: one run, spread unknown.</p>
<h2>All rows</h2>
<table class="rows">
<thead>
<tr><th rowspan="2">engine</th><th rowspan="2">cache</th><th colspan="4">GiB/s</th><th colspan="2">CPU-s/GiB</th><th colspan="2">P99</th><th rowspan="2">runs</th></tr>
<tr><th>old</th><th>new</th><th>Δ%</th><th>verdict</th><th>Δ%</th><th>verdict</th><th>Δ%</th><th>verdict</th></tr>
</thead>
<tbody>
{{- range .Groups}}
{{- if $.MultiGroup}}
<tr class="group"><th colspan="11">{{.Key}}</th></tr>
{{- end}}
{{- range .Rows}}
<tr class="{{.Status}}"><td>{{.Name}}</td><td>{{.Cache}}</td>
{{- if .Error}}<td colspan="9" class="error">{{.Error}}</td>
{{- else}}<td class="num">{{.Old}}</td><td class="num">{{.New}}</td>
{{- range $i, $m := .Metrics}}<td class="num">{{$m.Pct}}</td><td class="{{$m.Class}}"{{if $m.Title}} title="{{$m.Title}}"{{end}}>{{$m.Verdict}}</td>{{end}}
<td>{{.Runs}}</td>
{{- end}}</tr>
{{- end}}
{{- else}}
<tr><td colspan="11">no results in either report</td></tr>
{{- end}}
</tbody>
</table>
<h2>Legend</h2>
<pre class="legend">{{.Legend}}</pre>
<p>Noise rule: {{.NoiseRule}}.</p>
{{- if .Notes}}
<h2>Notes</h2>
<ul>
{{- range .Notes}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- end}}
</body>
</html>
`))
