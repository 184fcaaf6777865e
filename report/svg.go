package report

// Chart primitives for the HTML report: an SVG writer that escapes every
// text and attribute value it is given, scales, tick choosers, and the two
// chart kinds the report draws (grouped bars, and lines on log or
// categorical x axes). The charts are plain inline SVG: no script, no
// external reference; their tooltips are native SVG <title> elements.
//
// Every chart is <svg class="chart" data-chart=ID data-series=N> and holds
// exactly N <g class="series" data-name=NAME> elements, so that tests (and
// people) can check what was drawn.

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// svgW accumulates SVG markup.
type svgW struct{ b strings.Builder }

// hEsc escapes s for use as SVG/HTML text or a quoted attribute value.
func hEsc(s string) string { return html.EscapeString(s) }

// hNum formats a coordinate with at most one decimal.
func hNum(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}

// open writes <name attrs...> (or <name attrs.../> when selfClose). attrs
// are name, value pairs; values are escaped here.
func (w *svgW) open(name string, selfClose bool, attrs ...string) {
	w.b.WriteByte('<')
	w.b.WriteString(name)
	for i := 0; i+1 < len(attrs); i += 2 {
		w.b.WriteByte(' ')
		w.b.WriteString(attrs[i])
		w.b.WriteString(`="`)
		w.b.WriteString(hEsc(attrs[i+1]))
		w.b.WriteByte('"')
	}
	if selfClose {
		w.b.WriteString("/>")
	} else {
		w.b.WriteByte('>')
	}
}

func (w *svgW) el(name string, attrs ...string) { w.open(name, true, attrs...) }
func (w *svgW) end(name string)                 { w.b.WriteString("</" + name + ">") }

// text writes <text x y attrs...>s</text>.
func (w *svgW) text(x, y float64, s string, attrs ...string) {
	w.open("text", false, append([]string{"x", hNum(x), "y", hNum(y)}, attrs...)...)
	w.b.WriteString(hEsc(s))
	w.end("text")
}

// title writes a native tooltip for the enclosing element.
func (w *svgW) title(s string) {
	if s == "" {
		return
	}
	w.b.WriteString("<title>")
	w.b.WriteString(hEsc(s))
	w.b.WriteString("</title>")
}

func (w *svgW) line(x1, y1, x2, y2 float64, attrs ...string) {
	w.el("line", append([]string{"x1", hNum(x1), "y1", hNum(y1), "x2", hNum(x2), "y2", hNum(y2)}, attrs...)...)
}

func (w *svgW) rect(x, y, width, height float64, attrs ...string) {
	w.el("rect", append([]string{"x", hNum(x), "y", hNum(y), "width", hNum(math.Max(width, 0)), "height", hNum(math.Max(height, 0))}, attrs...)...)
}

// --- colours

// hEngineColors gives each known engine its colour in every chart; fio
// twins are drawn in a lighter, hatched variant of their engine's colour.
var hEngineColors = map[string]string{
	"read":     "#4e79a7",
	"pread":    "#f28e2b",
	"readv":    "#59a14f",
	"mmap":     "#e15759",
	"io_uring": "#8e63b5",
	"null":     "#7f7f7f",
}

// hExtraColors are handed out, in order, to engines not in hEngineColors.
var hExtraColors = []string{"#17becf", "#bcbd22", "#9c755f", "#ff9da7", "#2f4b7c", "#d4a017", "#76b7b2", "#b6992d"}

// hFioTwins maps fio's ioengines to the iopath engine they mirror, for fio
// rows that do not name their twin.
var hFioTwins = map[string]string{"sync": "read", "psync": "pread", "pvsync": "readv", "pvsync2": "readv", "mmap": "mmap", "io_uring": "io_uring"}

// hMix blends colour c (#rrggbb) with m by f (0: c, 1: m).
func hMix(c, m string, f float64) string {
	parse := func(s string) (r, g, b float64) {
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
		if err != nil {
			return 128, 128, 128
		}
		return float64(v >> 16 & 255), float64(v >> 8 & 255), float64(v & 255)
	}
	r1, g1, b1 := parse(c)
	r2, g2, b2 := parse(m)
	at := func(a, b float64) int { return int(math.Round(a + (b-a)*f)) }
	return fmt.Sprintf("#%02x%02x%02x", at(r1, r2), at(g1, g2), at(b1, b2))
}

// --- axes and ticks

// hNiceStep returns a round step (1, 2, 2.5 or 5 × 10^k) that divides span
// into about n intervals.
func hNiceStep(span float64, n int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag*1.0000001 {
			return m * mag
		}
	}
	return 10 * mag
}

// hLinTicks returns ticks from 0 to a round top at or above hi.
func hLinTicks(hi float64) []float64 {
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	step := hNiceStep(hi, 5)
	top := math.Ceil(hi/step-1e-9) * step
	var t []float64
	for v := 0.0; v <= top+step/2; v += step {
		t = append(t, v)
	}
	return t
}

// hTickLabel formats a linear tick with as few decimals as its step needs.
func hTickLabel(v, step float64) string {
	prec := 0
	for s := step; prec < 4 && math.Abs(s-math.Round(s)) > 1e-9; s *= 10 {
		prec++
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// hSig3 formats v with three significant figures for value labels.
func hSig3(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// hLatencyTick labels a latency axis tick in ns: 1µs, 20µs, 1ms, 10s.
func hLatencyTick(ns float64) string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	switch {
	case ns < 1e3:
		return g(ns) + "ns"
	case ns < 1e6:
		return g(ns/1e3) + "µs"
	case ns < 1e9:
		return g(ns/1e6) + "ms"
	}
	return g(ns/1e9) + "s"
}

// hLogTicks returns the decades covering [lo, hi] (both > 0), with 2× and
// 5× steps added when the range spans two decades or less. major marks
// the ticks that get a label.
func hLogTicks(lo, hi float64) (ticks []float64, major []bool) {
	d0 := math.Floor(math.Log10(lo) + 1e-9)
	d1 := math.Ceil(math.Log10(hi) - 1e-9)
	if d1 <= d0 {
		d1 = d0 + 1
	}
	fine := d1-d0 <= 2
	for d := d0; d <= d1; d++ {
		p := math.Pow(10, d)
		ticks, major = append(ticks, p), append(major, true)
		if d == d1 {
			break
		}
		for _, m := range []float64{2, 5} {
			ticks, major = append(ticks, m*p), append(major, fine)
		}
	}
	return ticks, major
}

// hScale maps a data value to a pixel coordinate.
type hScale struct {
	d0, d1, r0, r1 float64
	log            func(float64) float64 // nil for linear
}

func (s hScale) at(v float64) float64 {
	d0, d1 := s.d0, s.d1
	if s.log != nil {
		v, d0, d1 = s.log(v), s.log(d0), s.log(d1)
	}
	if d1 == d0 {
		return (s.r0 + s.r1) / 2
	}
	return s.r0 + (v-d0)/(d1-d0)*(s.r1-s.r0)
}

// --- hLegend

type hLegendKind int

const (
	hLegBar hLegendKind = iota
	hLegLine
	hLegRef   // flat reference line
	hLegShare // stacked share of a bar
	hLegNoisy // noisy-run hMarker
	hLegError
)

type hLegendItem struct {
	name  string
	kind  hLegendKind
	s     *hSeries // nil for the extra items
	color string
}

// hTextWidth estimates the width of s at font size px in a system
// sans-serif (DejaVu Sans, Segoe UI, Helvetica are all close to this).
func hTextWidth(s string, px float64) float64 {
	var em float64
	for _, c := range s {
		switch {
		case strings.ContainsRune("il.,:;'|!", c):
			em += 0.28
		case strings.ContainsRune("fjtr ()-", c):
			em += 0.38
		case strings.ContainsRune("mwMW", c):
			em += 0.92
		case c == '_':
			em += 0.5
		case c >= 'A' && c <= 'Z':
			em += 0.68
		case c >= '0' && c <= '9':
			em += 0.62
		default:
			em += 0.6
		}
	}
	return em * px
}

// hLegend lays items out in rows from (x, y) within width and returns the
// height used. Series items are not the series themselves: those are the
// <g class="series"> elements of the plot.
func hLegend(w *svgW, chartID string, items []hLegendItem, x, y, width float64) float64 {
	if len(items) == 0 {
		return 0
	}
	const rowH = 18
	cx, cy := x, y
	w.open("g", false, "class", "hLegend")
	for _, it := range items {
		iw := 22 + hTextWidth(it.name, 12) + 16
		if cx > x && cx+iw > x+width {
			cx, cy = x, cy+rowH
		}
		mid := cy + 9
		switch it.kind {
		case hLegBar:
			if it.s.fio {
				w.rect(cx, mid-6, 16, 12, "fill", "url(#"+hatchID(chartID, it.s)+")", "stroke", it.s.color)
			} else {
				w.rect(cx, mid-6, 16, 12, "fill", it.s.color, "rx", "2")
			}
		case hLegLine:
			dash := ""
			if it.s.fio {
				dash = "5 3"
			}
			w.line(cx, mid, cx+16, mid, "stroke", it.s.lineColor(), "stroke-width", "2.5", "stroke-dasharray", dash)
			hMarker(w, it.s, cx+8, mid)
		case hLegRef:
			w.line(cx, mid, cx+16, mid, "stroke", it.s.color, "stroke-width", "1.5", "stroke-dasharray", "2 3")
		case hLegShare:
			w.rect(cx, mid-6, 16, 12, "fill", it.color, "rx", "2")
		case hLegNoisy:
			hNoisyMark(w, cx+8, mid)
		case hLegError:
			w.text(cx+8, mid+4, "×", "class", "err", "text-anchor", "middle")
		}
		w.text(cx+22, mid+4, it.name, "class", "lg")
		cx += iw
	}
	w.end("g")
	return cy - y + rowH
}

// hatchID names the hatch pattern of a fio series within one chart; ids
// are unique in the page because chart ids are.
func hatchID(chartID string, s *hSeries) string {
	return fmt.Sprintf("h-%s-%d", chartID, s.idx)
}

// hatchDefs defines the hatch patterns of the fio series in a chart.
func hatchDefs(w *svgW, chartID string, series []*hSeries) {
	var fio []*hSeries
	for _, s := range series {
		if s.fio {
			fio = append(fio, s)
		}
	}
	if len(fio) == 0 {
		return
	}
	w.open("defs", false)
	for _, s := range fio {
		w.open("pattern", false, "id", hatchID(chartID, s), "width", "6", "height", "6",
			"patternUnits", "userSpaceOnUse", "patternTransform", "rotate(45)")
		w.rect(0, 0, 6, 6, "fill", s.light)
		w.rect(0, 0, 2.4, 6, "fill", s.color)
		w.end("pattern")
	}
	w.end("defs")
}

func hMarker(w *svgW, s *hSeries, x, y float64) {
	if s.fio {
		w.el("circle", "cx", hNum(x), "cy", hNum(y), "r", "3.2", "fill", "#fff", "stroke", s.color, "stroke-width", "1.8")
	} else {
		w.el("circle", "cx", hNum(x), "cy", hNum(y), "r", "3.4", "fill", s.color)
	}
}

func hNoisyMark(w *svgW, x, y float64) {
	w.el("path", "d", fmt.Sprintf("M%s %sl5 8.5h-10z", hNum(x), hNum(y-5)), "class", "noisy")
}

// hFrame starts a chart's <svg>; the caller ends it.
func hFrame(w *svgW, id, title string, width, height float64, nSeries int) {
	w.open("svg", false, "class", "chart", "data-chart", id, "data-series", strconv.Itoa(nSeries),
		"viewBox", "0 0 "+hNum(width)+" "+hNum(height), "role", "img", "aria-label", title)
	w.title(title)
}

// hYAxis draws horizontal grid lines with labels at ticks, and the unit.
func hYAxis(w *svgW, ys hScale, ticks []float64, labels []string, major []bool, left, right float64, unit string) {
	w.open("g", false, "class", "axis")
	for i, t := range ticks {
		y := ys.at(t)
		cls := "grid"
		if major != nil && !major[i] {
			cls = "grid minor"
		}
		w.line(left, y, right, y, "class", cls)
		if labels[i] != "" {
			w.text(left-6, y+4, labels[i], "text-anchor", "end")
		}
	}
	top, bottom := ys.r1, ys.r0
	w.text(14, (top+bottom)/2, unit, "class", "unit", "text-anchor", "middle",
		"transform", "rotate(-90 14 "+hNum((top+bottom)/2)+")")
	w.end("g")
}

// --- bar chart

// hBar is one bar: a row's median with its min–max whisker, or the gap
// of a failed row.
type hBar struct {
	s             *hSeries
	v, lo, hi     float64
	share         float64 // part of v drawn darker at the bottom (io_uring kernel threads)
	err           string  // the row has no figures: a gap labelled this ("error", "not run")
	noisy         string  // why some runs were noisy, when they were
	tip           string
	valueDecimals int
}

type hBarGroup struct {
	label string
	bars  []hBar
}

type hBarSpec struct {
	id, title, unit string
	groups          []hBarGroup
	series          []*hSeries // in the page's order; those with no bar are skipped
	shareLabel      string     // hLegend text for the darker share, when any bar has one
}

const (
	hWideW  = 960.0
	hSmallW = 560.0
)

// hBarChart draws grouped bars: a group per workload, a bar per series in
// it, fio bars hatched beside their iopath twin.
func hBarChart(spec hBarSpec) string {
	var w svgW
	width := hWideW
	left, right := 62.0, width-16

	present := map[*hSeries]bool{}
	var ymax float64
	var anyShare, anyNoisy, anyErr bool
	nBars := 0
	for _, g := range spec.groups {
		for _, b := range g.bars {
			present[b.s] = true
			nBars++
			ymax = math.Max(ymax, hFiniteOr0(math.Max(b.v, b.hi)))
			anyShare = anyShare || b.share > 0
			anyNoisy = anyNoisy || b.noisy != ""
			anyErr = anyErr || b.err != ""
		}
	}
	var series []*hSeries
	var items []hLegendItem
	for _, s := range spec.series {
		if present[s] {
			series = append(series, s)
			items = append(items, hLegendItem{name: s.name, kind: hLegBar, s: s})
		}
	}
	if anyShare {
		items = append(items, hLegendItem{name: spec.shareLabel, kind: hLegShare, color: "#333"})
	}
	if anyNoisy {
		items = append(items, hLegendItem{name: "noisy runs (kept)", kind: hLegNoisy})
	}

	// Measure first, draw after: the hLegend's height sets the plot's top.
	var lg svgW
	lh := hLegend(&lg, spec.id, items, left, 8, right-left)
	top := 8 + lh + 22
	plotH := 250.0
	bottom := top + plotH

	// Slots: one per bar, 0.8 between groups, 0.3 on each side.
	G := len(spec.groups)
	nSlots := float64(nBars) + 0.8*float64(max(G-1, 0)) + 0.6
	slot := (right - left) / math.Max(nSlots, 1)
	slot = math.Min(slot, 92)
	x0 := left + ((right-left)-slot*nSlots)/2 + 0.3*slot
	barW := math.Min(slot*0.8, 60)

	showNames := true
	for _, s := range series {
		if hTextWidth(s.name, 11)+4 > slot {
			showNames = false
		}
	}
	showValues := slot >= 30
	groupLabels := G > 1 || (G == 1 && spec.groups[0].label != "")
	height := bottom + 10
	if showNames {
		height += 16
	}
	if groupLabels {
		height += 20
	}

	hFrame(&w, spec.id, spec.title, width, height, len(series))
	hatchDefs(&w, spec.id, series)
	w.b.WriteString(lg.b.String())

	ticks := hLinTicks(ymax)
	ys := hScale{d0: 0, d1: ticks[len(ticks)-1], r0: bottom, r1: top}
	labels := make([]string, len(ticks))
	step := 1.0
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	for i, t := range ticks {
		labels[i] = hTickLabel(t, step)
	}
	hYAxis(&w, ys, ticks, labels, nil, left, right, spec.unit)

	// Bar positions.
	type pos struct{ g, i int }
	cx := map[pos]float64{}
	x := x0
	w.open("g", false, "class", "axis")
	for gi, g := range spec.groups {
		start := x
		for bi, b := range g.bars {
			cx[pos{gi, bi}] = x + slot/2
			if showNames {
				w.text(x+slot/2, bottom+14, b.s.name, "class", "bn", "text-anchor", "middle")
			}
			x += slot
		}
		if groupLabels && len(g.bars) > 0 {
			ly := bottom + 16
			if showNames {
				ly += 16
			}
			if G > 1 {
				w.line(start+2, ly-11, x-2, ly-11, "class", "bracket")
			}
			w.text((start+x)/2, ly+2, g.label, "class", "gl", "text-anchor", "middle")
		}
		x += 0.8 * slot
	}
	w.end("g")

	for _, s := range series {
		w.open("g", false, "class", "series", "data-name", s.name)
		for gi, g := range spec.groups {
			for bi, b := range g.bars {
				if b.s != s {
					continue
				}
				c := cx[pos{gi, bi}]
				bx := c - barW/2
				w.open("g", false, "class", "bar")
				w.title(b.tip)
				if b.err != "" {
					w.rect(bx, top, barW, plotH, "class", "errgap")
					w.text(c+4, bottom-8, b.err, "class", "err", "transform", "rotate(-90 "+hNum(c+4)+" "+hNum(bottom-8)+")")
					w.end("g")
					continue
				}
				y := ys.at(hFiniteOr0(b.v))
				if s.fio {
					w.rect(bx, y, barW, bottom-y, "fill", "url(#"+hatchID(spec.id, s)+")", "stroke", s.color, "stroke-width", "1")
				} else {
					w.rect(bx, y, barW, bottom-y, "fill", s.color)
				}
				if b.share > 0 {
					sy := ys.at(b.share)
					w.rect(bx, sy, barW, bottom-sy, "fill", s.dark)
				}
				topY := y
				if b.hi > 0 && b.lo > 0 && b.hi > b.lo {
					yl, yh := ys.at(b.lo), ys.at(b.hi)
					cw := math.Min(barW*0.5, 14)
					w.line(c, yl, c, yh, "class", "whisker")
					w.line(c-cw/2, yh, c+cw/2, yh, "class", "whisker")
					w.line(c-cw/2, yl, c+cw/2, yl, "class", "whisker")
					topY = math.Min(topY, yh)
				}
				if showValues {
					w.text(c, topY-5, strconv.FormatFloat(b.v, 'f', b.valueDecimals, 64), "class", "val", "text-anchor", "middle")
					topY -= 14
				}
				if b.noisy != "" {
					hNoisyMark(&w, c, topY-8)
				}
				w.end("g")
			}
		}
		w.end("g")
	}
	w.line(left, bottom, right, bottom, "class", "baseline")
	w.end("svg")
	return w.b.String()
}

// --- line chart

type hPoint struct {
	x, y float64 // y <= 0 (or not finite): no value, the line passes on
	err  string  // the row failed: an × on the x axis, and a break in the line
	tip  string
}

type hLine struct {
	s   *hSeries
	pts []hPoint // in x order
	// ref draws the series as a flat dotted line at refY across the plot:
	// an engine with no queue, beside those with one.
	ref    bool
	refY   float64
	refTip string
}

type hAxisSpec struct {
	label string
	cats  []string // categorical axis: x is the index
	log2  bool     // log2 numeric axis
	log10 bool     // log10 numeric axis (y)
	ticks []float64
	fmt   func(float64) string
}

type hLineSpec struct {
	id, title string
	width     float64
	x, y      hAxisSpec
	lines     []hLine
}

// hLineChart draws one line per series over a categorical, log2 or linear x
// axis and a linear or log10 y axis.
func hLineChart(spec hLineSpec) string {
	var w svgW
	width := spec.width
	left, right := 62.0, width-18

	var items []hLegendItem
	var ymin, ymax = math.Inf(1), 0.0
	anyErr := false
	for _, l := range spec.lines {
		kind := hLegLine
		if l.ref {
			kind = hLegRef
			ymax = math.Max(ymax, hFiniteOr0(l.refY))
			if l.refY > 0 {
				ymin = math.Min(ymin, l.refY)
			}
		}
		items = append(items, hLegendItem{name: l.s.name, kind: kind, s: l.s})
		for _, p := range l.pts {
			if p.err != "" {
				anyErr = true
			}
			if p.y > 0 && !math.IsInf(p.y, 0) {
				ymax = math.Max(ymax, p.y)
				ymin = math.Min(ymin, p.y)
			}
		}
	}
	if anyErr {
		items = append(items, hLegendItem{name: "error", kind: hLegError})
	}
	var lg svgW
	lh := hLegend(&lg, spec.id, items, left, 8, right-left)
	top := 8 + lh + 18
	plotH := 230.0
	if width < hWideW {
		plotH = 210
	}
	bottom := top + plotH
	height := bottom + 46

	hFrame(&w, spec.id, spec.title, width, height, len(spec.lines))
	w.b.WriteString(lg.b.String())

	// y axis
	var ys hScale
	if spec.y.log10 {
		if math.IsInf(ymin, 1) {
			ymin, ymax = 1, 10
		}
		ticks, major := hLogTicks(ymin, ymax)
		ys = hScale{d0: ticks[0], d1: ticks[len(ticks)-1], r0: bottom, r1: top, log: math.Log10}
		labels := make([]string, len(ticks))
		for i, t := range ticks {
			if major[i] {
				labels[i] = spec.y.fmt(t)
			}
		}
		hYAxis(&w, ys, ticks, labels, major, left, right, spec.y.label)
	} else {
		ticks := hLinTicks(ymax)
		ys = hScale{d0: 0, d1: ticks[len(ticks)-1], r0: bottom, r1: top}
		step := 1.0
		if len(ticks) > 1 {
			step = ticks[1] - ticks[0]
		}
		labels := make([]string, len(ticks))
		for i, t := range ticks {
			labels[i] = hTickLabel(t, step)
		}
		hYAxis(&w, ys, ticks, labels, nil, left, right, spec.y.label)
	}

	// x axis
	var xs hScale
	pad := 28.0
	switch {
	case spec.x.cats != nil:
		xs = hScale{d0: 0, d1: float64(len(spec.x.cats) - 1), r0: left + pad, r1: right - pad}
	default:
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, t := range spec.x.ticks {
			lo, hi = math.Min(lo, t), math.Max(hi, t)
		}
		if math.IsInf(lo, 0) {
			lo, hi = 1, 2
		}
		xs = hScale{d0: lo, d1: hi, r0: left + pad, r1: right - pad}
		if spec.x.log2 {
			xs.log = math.Log2
		}
	}
	w.open("g", false, "class", "axis")
	if spec.x.cats != nil {
		for i, c := range spec.x.cats {
			x := xs.at(float64(i))
			w.line(x, top, x, bottom, "class", "grid minor")
			w.text(x, bottom+16, c, "text-anchor", "middle")
		}
	} else {
		lastX := math.Inf(-1)
		for _, t := range spec.x.ticks {
			x := xs.at(t)
			w.line(x, top, x, bottom, "class", "grid minor")
			if x-lastX >= 34 {
				w.text(x, bottom+16, spec.x.fmt(t), "text-anchor", "middle")
				lastX = x
			}
		}
	}
	w.text((left+right)/2, bottom+36, spec.x.label, "class", "unit", "text-anchor", "middle")
	w.end("g")
	w.line(left, bottom, right, bottom, "class", "baseline")

	xOf := func(p hPoint) float64 {
		return xs.at(p.x)
	}
	var labelYs []float64
	for _, l := range spec.lines {
		s := l.s
		w.open("g", false, "class", "series", "data-name", s.name)
		if l.ref {
			w.open("g", false, "class", "ref")
			w.title(l.refTip)
			if l.refY > 0 {
				y := ys.at(l.refY)
				w.line(left, y, right, y, "stroke", s.color, "stroke-width", "1.6", "stroke-dasharray", "2 4")
				free := true
				for _, ly := range labelYs {
					if math.Abs(ly-y) < 12 {
						free = false
					}
				}
				if free {
					labelYs = append(labelYs, y)
					w.text(right-4, y-4, s.name, "class", "reflabel", "text-anchor", "end", "fill", s.color)
				}
			}
			w.end("g")
			w.end("g")
			continue
		}
		// The line, broken at failed points.
		var d strings.Builder
		pen := false
		for _, p := range l.pts {
			if p.err != "" {
				pen = false
				continue
			}
			if !(p.y > 0) || math.IsInf(p.y, 0) {
				continue // not measured: the line passes on to the next value
			}
			if pen {
				d.WriteString("L")
			} else {
				d.WriteString("M")
			}
			d.WriteString(hNum(xOf(p)) + " " + hNum(ys.at(p.y)))
			pen = true
		}
		if d.Len() > 0 {
			dash := ""
			if s.fio {
				dash = "6 4"
			}
			w.el("path", "d", d.String(), "fill", "none", "stroke", s.lineColor(), "stroke-width", "2.2",
				"stroke-dasharray", dash, "stroke-linejoin", "round")
		}
		for _, p := range l.pts {
			x := xOf(p)
			switch {
			case p.err != "":
				w.open("g", false, "class", "pt")
				w.title(p.tip)
				w.text(x, bottom-3, "×", "class", "err", "text-anchor", "middle")
				w.end("g")
			case p.y > 0 && !math.IsInf(p.y, 0):
				w.open("g", false, "class", "pt")
				w.title(p.tip)
				hMarker(&w, s, x, ys.at(p.y))
				w.end("g")
			}
		}
		w.end("g")
	}
	w.end("svg")
	return w.b.String()
}

func hFiniteOr0(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// pageHead opens every HTML page's head: the content security policy that
// keeps a page offline and script-free, and the title. The pages' own
// templates follow it with their <style>.
const pageHead = `<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="{{.Generator}}">
<link rel="icon" href="data:,">
<title>{{.Title}}</title>
`

// chartCSS styles the inline SVG charts the same way on every page.
const chartCSS = `svg.chart{display:block;width:100%;height:auto}
.chart text{font-size:12px;fill:#2b333c}
.chart .axis text{font-size:11px;fill:#5d6773}
.chart .axis .unit{font-size:11.5px;fill:#2b333c;font-weight:600}
.chart .grid{stroke:#e4e7eb;stroke-width:1}
.chart .grid.minor{stroke:#f1f3f5}
.chart .baseline{stroke:#7d8791;stroke-width:1.2}
.chart .whisker{stroke:#1d232a;stroke-width:1.3}
.chart .val{font-size:10.5px;fill:#1d232a}
.chart .axis .bn{font-size:11px;fill:#2b333c}
.chart .axis .gl{font-size:12px;font-weight:600;fill:#1d232a}
.chart .bracket{stroke:#b7bfc8}
.chart .err{fill:var(--err);font-weight:700;font-size:12px}
.chart .errgap{fill:#fcebea;stroke:#e8aaa2;stroke-dasharray:3 3}
`
