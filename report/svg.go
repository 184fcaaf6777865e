package report

// The one chart set of every HTML page (page.go): grouped bars with
// min–max whiskers (or dots on a log axis), lines (sweeps, and percentiles
// on a log axis), a tile grid, and signed-percent bars; with the SVG
// writer that escapes every text and attribute value it is given, scales,
// tick choosers and the legend they share. The charts are plain inline
// SVG: no script, no external reference; their tooltips are native SVG
// <title> elements.
//
// Every chart is <svg class="chart" data-chart=ID data-series=N> and holds
// exactly N <g class="series" data-name=NAME> elements, so that tests (and
// people) can check what was drawn. Its width and height attributes are
// its viewBox's: a chart is drawn at its natural size, one unit a CSS
// pixel, so that text is the same size in every chart of a page. Each
// chart's size comes from what it holds (bars, columns, legend rows), up
// to the width the page lays out (chartMaxW, chartHalfW in a grid).

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
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

// hEngineColors gives each known engine, tree engine, server engine,
// file-serving method and writev way its colour in every chart: io_uring is the same
// purple everywhere, and each baseline blue. fio twins are drawn in a
// lighter, hatched variant of their engine's colour.
var hEngineColors = map[string]string{
	"read": "#4e79a7", "pread": "#f28e2b", "readv": "#59a14f", "mmap": "#e15759", "io_uring": "#8e63b5", "null": "#7f7f7f",
	"net": "#4e79a7", "epoll": "#59a14f",
	"readwrite": "#4e79a7", "sendfile": "#f28e2b", "splice": "#59a14f",
	"writes": "#4e79a7", "coalesced": "#f28e2b", "net.Buffers": "#59a14f",
	"raw": "#4e79a7", "readfile": "#f28e2b", "pool": "#59a14f", "archive": "#e15759",
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

// hSeries is one line or bar colour in the charts: an iopath engine, or a
// fio ioengine's twin rows ("fio psync").
type hSeries struct {
	name  string
	fio   bool
	base  string // the iopath engine whose colour it takes
	color string
	light string // hatch background of fio bars
	dark  string // the io_uring kernel-thread share of CPU bars
	idx   int
}

// lineColor is the stroke of the series' lines: fio's is lighter.
func (s *hSeries) lineColor() string {
	if s.fio {
		return hMix(s.color, "#ffffff", 0.3)
	}
	return s.color
}

// paint gives s colour c, and the lighter and darker variants drawn
// from it.
func (s *hSeries) paint(c string) {
	s.color, s.light, s.dark = c, hMix(c, "#ffffff", 0.72), hMix(c, "#000000", 0.45)
}

// swatch is the CSS background of the series' swatch in a table.
func (s *hSeries) swatch() template.CSS {
	if s.fio {
		return template.CSS(fmt.Sprintf("background:repeating-linear-gradient(45deg,%s 0 2px,%s 2px 5px)", s.color, s.light))
	}
	return template.CSS("background:" + s.color)
}

// nameSeries makes a chart series per name, in order, coloured from
// hEngineColors or, for names not in it, from hExtraColors.
func nameSeries(names []string) (order []*hSeries, byName map[string]*hSeries) {
	byName = map[string]*hSeries{}
	next := 0
	for _, n := range names {
		c, ok := hEngineColors[n]
		if !ok {
			c = hExtraColors[next%len(hExtraColors)]
			next++
		}
		s := &hSeries{name: n, base: n, idx: len(order)}
		s.paint(c)
		order = append(order, s)
		byName[n] = s
	}
	return order, byName
}

// hSlug makes s usable in a data-chart name: lower case letters, digits
// and single dashes.
func hSlug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// chartIDs hands out chart ids unique in a page.
type chartIDs map[string]bool

// id returns a unique chart id made of parts.
func (ids chartIDs) id(parts ...string) string {
	var p []string
	for _, s := range parts {
		if s = hSlug(s); s != "" {
			p = append(p, s)
		}
	}
	base := strings.Join(p, "-")
	if base == "" {
		base = "chart"
	}
	id := base
	for n := 2; ids[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	ids[id] = true
	return id
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

// hFrame starts a chart's <svg> at its natural size; the caller ends it.
func hFrame(w *svgW, id, title string, width, height float64, nSeries int) {
	width, height = math.Ceil(width), math.Ceil(height)
	w.open("svg", false, "class", "chart", "data-chart", id, "data-series", strconv.Itoa(nSeries),
		"width", hNum(width), "height", hNum(height), "viewBox", "0 0 "+hNum(width)+" "+hNum(height),
		"role", "img", "aria-label", title)
	w.title(title)
}

// yScale draws the y axis of a plot from top to bottom between left and
// right for values up to ymax (from ymin > 0 on a log10 axis), and
// returns its scale. fmtLog labels a log axis' decades.
func yScale(w *svgW, log bool, ymin, ymax, top, bottom, left, right float64, unit string, fmtLog func(float64) string) hScale {
	var ticks []float64
	var major []bool
	var ys hScale
	labels := []string{}
	if log {
		if math.IsInf(ymin, 1) || !(ymin > 0) {
			ymin, ymax = 1, 10
		}
		ticks, major = hLogTicks(ymin, ymax)
		ys = hScale{d0: ticks[0], d1: ticks[len(ticks)-1], r0: bottom, r1: top, log: math.Log10}
		for i, t := range ticks {
			l := ""
			if major[i] {
				l = fmtLog(t)
			}
			labels = append(labels, l)
		}
	} else {
		ticks = hLinTicks(ymax)
		ys = hScale{d0: 0, d1: ticks[len(ticks)-1], r0: bottom, r1: top}
		step := 1.0
		if len(ticks) > 1 {
			step = ticks[1] - ticks[0]
		}
		for _, t := range ticks {
			labels = append(labels, hTickLabel(t, step))
		}
	}
	hYAxis(w, ys, ticks, labels, major, left, right, unit)
	return ys
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

// hBar is one bar: a median with its min–max whisker, or the gap of a row
// that failed.
type hBar struct {
	s         *hSeries
	v, lo, hi float64
	share     float64 // part of v drawn darker at the bottom (io_uring kernel threads)
	err       string  // the row has no figures: a gap labelled this ("error", "not run")
	noisy     string  // why some runs were noisy, when they were
	tip       string
}

// hBarGroup is the bars of one x position (a workload, a point).
type hBarGroup struct {
	label string // under the group
	super string // under each run of groups that share it (a message size), when the chart has rowNames
	bars  []hBar
}

type hBarSpec struct {
	id, title, unit string
	groups          []hBarGroup
	series          []*hSeries // in the page's order; those with no bar are skipped
	shareLabel      string     // legend text for the darker share, when any bar has one
	rowNames        [2]string  // names of the label and super rows, left of them ("conns", "size")
	log             bool       // a log10 axis, a dot per bar
	value           func(float64) string
	tick            func(float64) string // log axis labels
}

// hBarChart draws grouped bars: a group per workload or point, a bar per
// series in it (fio bars hatched beside their iopath twin), each with a
// whisker from the slowest to the fastest run. On a log axis a bar is a
// dot. A bar with no value says "n/m" (not measured).
func hBarChart(spec hBarSpec) string {
	const left, right = 70.0, 16.0
	present := map[*hSeries]bool{}
	ymax, ymin := 0.0, math.Inf(1)
	var anyShare, anyNoisy, anyErr bool
	nBars := 0
	for _, g := range spec.groups {
		for _, b := range g.bars {
			present[b.s] = true
			nBars++
			for _, x := range []float64{b.v, b.lo, b.hi} {
				if x > 0 && finite(x) {
					ymax, ymin = math.Max(ymax, x), math.Min(ymin, x)
				}
			}
			anyShare = anyShare || b.share > 0
			anyNoisy = anyNoisy || b.noisy != ""
			anyErr = anyErr || b.err != ""
		}
	}
	var series []*hSeries
	var items []hLegendItem
	nameW := 0.0
	for _, s := range spec.series {
		if present[s] {
			series = append(series, s)
			items = append(items, hLegendItem{name: s.name, kind: hLegBar, s: s})
			nameW = math.Max(nameW, hTextWidth(s.name, 11)+8)
		}
	}
	if anyShare {
		items = append(items, hLegendItem{name: spec.shareLabel, kind: hLegShare, color: "#333"})
	}
	if anyNoisy {
		items = append(items, hLegendItem{name: "noisy runs (kept)", kind: hLegNoisy})
	}
	if anyErr {
		items = append(items, hLegendItem{name: "not measured (error)", kind: hLegError})
	}
	value := spec.value
	if value == nil {
		value = hSig3
	}

	// The width comes from the bars: a slot per bar wide enough for the
	// series' names and the group labels, 0.8 of one between groups and
	// 0.3 on each side, up to the page's width.
	G := len(spec.groups)
	nSlots := float64(nBars) + 0.8*float64(max(G-1, 0)) + 0.6
	slot := math.Max(nameW, 48)
	for _, g := range spec.groups {
		if n := len(g.bars); n > 0 {
			slot = math.Max(slot, (hTextWidth(g.label, 12)+12)/float64(n))
		}
	}
	slot = math.Min(slot, 92)
	width := math.Min(left+math.Max(slot*nSlots, 240)+right, chartMaxW)
	slot = math.Min(slot, (width-left-right)/math.Max(nSlots, 1))
	plotR := width - right
	x0 := left + ((plotR-left)-slot*nSlots)/2 + 0.3*slot
	barW := math.Min(slot*0.8, 60)
	showNames := nameW <= slot
	showValues := slot >= 30

	var lg svgW
	top := 8 + hLegend(&lg, spec.id, items, left, 8, plotR-left) + 22
	const plotH = 250.0
	bottom := top + plotH
	labelY := bottom + 16
	if showNames {
		labelY += 16
	}
	height := labelY + 8
	if spec.rowNames[0] != "" {
		height += 32
	} else if G > 1 || G == 1 && spec.groups[0].label != "" {
		height += 4
	} else {
		height -= 16
	}

	var w svgW
	hFrame(&w, spec.id, spec.title, width, height, len(series))
	hatchDefs(&w, spec.id, series)
	w.b.WriteString(lg.b.String())
	ys := yScale(&w, spec.log, ymin, ymax, top, bottom, left, plotR, spec.unit, spec.tick)

	// x positions; series names under the bars, group labels under the
	// groups, and super labels under each run of groups that share one.
	type pos struct{ g, i int }
	cx := map[pos]float64{}
	starts, ends := make([]float64, G), make([]float64, G)
	x := x0
	w.open("g", false, "class", "axis")
	for gi, g := range spec.groups {
		starts[gi] = x
		for bi, b := range g.bars {
			cx[pos{gi, bi}] = x + slot/2
			if showNames {
				w.text(x+slot/2, bottom+14, b.s.name, "class", "bn", "text-anchor", "middle")
			}
			x += slot
		}
		ends[gi] = x
		if g.label != "" && len(g.bars) > 0 {
			if G > 1 && spec.rowNames[0] == "" {
				w.line(starts[gi]+2, labelY-11, x-2, labelY-11, "class", "bracket")
			}
			w.text((starts[gi]+x)/2, labelY+2, g.label, "class", "gl", "text-anchor", "middle")
		}
		x += 0.8 * slot
	}
	hSuperLabels(&w, spec.groups, starts, ends, left, labelY, spec.rowNames)
	w.end("g")

	for _, s := range series {
		w.open("g", false, "class", "series", "data-name", s.name)
		for gi, g := range spec.groups {
			for bi, b := range g.bars {
				if b.s == s {
					hDrawBar(&w, spec, b, cx[pos{gi, bi}], barW, ys, top, bottom, showValues, value)
				}
			}
		}
		w.end("g")
	}
	w.line(left, bottom, plotR, bottom, "class", "baseline")
	w.end("svg")
	return w.b.String()
}

// hSuperLabels writes the row names left of the label rows, and a super
// label under each run of groups that share it.
func hSuperLabels(w *svgW, groups []hBarGroup, starts, ends []float64, left, labelY float64, rowNames [2]string) {
	if rowNames[0] == "" || len(groups) == 0 {
		return
	}
	w.text(left-6, labelY+2, rowNames[0], "class", "unit", "text-anchor", "end")
	w.text(left-6, labelY+26, rowNames[1], "class", "unit", "text-anchor", "end")
	for gi := 0; gi < len(groups); {
		gj := gi
		for gj+1 < len(groups) && groups[gj+1].super == groups[gi].super {
			gj++
		}
		a, b := starts[gi]+2, ends[gj]-2
		w.line(a, labelY+10, b, labelY+10, "class", "bracket")
		w.text((a+b)/2, labelY+26, groups[gi].super, "class", "gl", "text-anchor", "middle")
		gi = gj + 1
	}
}

func hDrawBar(w *svgW, spec hBarSpec, b hBar, c, barW float64, ys hScale, top, bottom float64, showValues bool, value func(float64) string) {
	s := b.s
	bx := c - barW/2
	w.open("g", false, "class", "bar")
	defer w.end("g")
	w.title(b.tip)
	switch {
	case b.err != "":
		w.rect(bx, top, barW, bottom-top, "class", "errgap")
		w.text(c+4, bottom-8, b.err, "class", "err", "transform", "rotate(-90 "+hNum(c+4)+" "+hNum(bottom-8)+")")
		return
	case !(b.v > 0) || !finite(b.v):
		w.text(c, bottom-6, "n/m", "class", "nm", "text-anchor", "middle")
		return
	}
	y := ys.at(b.v)
	topY := y
	switch {
	case spec.log:
		topY -= 5
	case s.fio:
		w.rect(bx, y, barW, bottom-y, "fill", "url(#"+hatchID(spec.id, s)+")", "stroke", s.color, "stroke-width", "1")
	default:
		w.rect(bx, y, barW, bottom-y, "fill", s.color)
	}
	if b.share > 0 && !spec.log {
		sy := ys.at(b.share)
		w.rect(bx, sy, barW, bottom-sy, "fill", s.dark)
	}
	if b.hi > 0 && b.lo > 0 && b.hi > b.lo && finite(b.hi) {
		yl, yh := ys.at(b.lo), ys.at(b.hi)
		cw := math.Min(barW*0.5, 14)
		w.line(c, yl, c, yh, "class", "whisker")
		w.line(c-cw/2, yh, c+cw/2, yh, "class", "whisker")
		w.line(c-cw/2, yl, c+cw/2, yl, "class", "whisker")
		topY = math.Min(topY, yh)
	}
	if spec.log {
		w.el("circle", "cx", hNum(c), "cy", hNum(y), "r", "5", "fill", s.color, "stroke", "#fff", "stroke-width", "1.2")
	}
	if showValues {
		w.text(c, topY-5, value(b.v), "class", "val", "text-anchor", "middle")
		topY -= 14
	}
	if b.noisy != "" {
		hNoisyMark(w, c, topY-8)
	}
}

// --- tile grid

// hTile is one cell of a tile grid.
type hTile struct {
	fill, text, class, tip string
}

type hTileSpec struct {
	id, title string
	rows      []*hSeries  // a row per series
	cols      []hBarGroup // a column per group; its bars are not used
	rowNames  [2]string
	tiles     [][]hTile // [row][column]
	key       []hLegendItem
}

// hTileGrid draws a tile per series (row) and column, labelled under the
// columns as hBarChart labels its groups.
func hTileGrid(spec hTileSpec) string {
	labelW := 0.0
	for _, s := range spec.rows {
		labelW = math.Max(labelW, hTextWidth(s.name, 12))
	}
	left := math.Max(32+labelW+12, 70)
	colW := 60.0
	for ci, c := range spec.cols {
		colW = math.Max(colW, math.Max(hTextWidth(c.label, 12), hTextWidth(c.super, 12))+12)
		for ri := range spec.rows {
			colW = math.Max(colW, 1.1*hTextWidth(spec.tiles[ri][ci].text, 11)+18) // bold
		}
	}
	const rowH = 28.0
	width := math.Max(left+float64(len(spec.cols))*colW+16, 480)
	var lg svgW
	top := 8 + hLegend(&lg, spec.id, spec.key, 16, 8, width-32) + 10
	bottom := top + float64(len(spec.rows))*rowH
	labelY := bottom + 16
	height := labelY + 36

	var w svgW
	hFrame(&w, spec.id, spec.title, width, height, len(spec.rows))
	w.b.WriteString(lg.b.String())
	starts, ends := make([]float64, len(spec.cols)), make([]float64, len(spec.cols))
	w.open("g", false, "class", "axis")
	for i, c := range spec.cols {
		starts[i], ends[i] = left+float64(i)*colW+2, left+float64(i+1)*colW-2
		w.text(left+(float64(i)+0.5)*colW, labelY+2, c.label, "class", "gl", "text-anchor", "middle")
	}
	hSuperLabels(&w, spec.cols, starts, ends, left, labelY, spec.rowNames)
	w.end("g")
	for ri, s := range spec.rows {
		y := top + float64(ri)*rowH
		w.open("g", false, "class", "series", "data-name", s.name)
		w.rect(16, y+rowH/2-5, 10, 10, "fill", s.color, "rx", "2")
		w.text(32, y+rowH/2+4, s.name, "class", "lg")
		for ci := range spec.cols {
			t := spec.tiles[ri][ci]
			tx := left + float64(ci)*colW + 3
			w.open("g", false, "class", "tile")
			w.title(t.tip)
			w.rect(tx, y+3, colW-6, rowH-6, "fill", t.fill, "rx", "3")
			w.text(tx+(colW-6)/2, y+rowH/2+4, t.text, "class", t.class, "text-anchor", "middle")
			w.end("g")
		}
		w.end("g")
	}
	w.end("svg")
	return w.b.String()
}

// --- signed-percent bars

// hSigned is one row of a signed-percent chart: a change in percent,
// drawn left (negative) or right of zero, over a band of ± band percent
// (band < 0: none).
type hSigned struct {
	label, value, class, tip string // class: good, bad, noise, unknown
	pct, band                float64
}

// hSignedChart draws a horizontal bar per row, left or right of zero, on a
// symmetric axis rounded up to 1, 2 or 5 × 10^k percent: compare's change
// of each row. Each row is a series named by its label.
func hSignedChart(id, title string, rows []hSigned) string {
	const rowH, barH, top, valueW = 20.0, 12.0, 28.0, 70.0
	labelW := 120.0
	scale := 1.0
	for _, r := range rows {
		labelW = math.Max(labelW, hTextWidth(r.label, 12)+12)
		scale = math.Max(scale, math.Max(math.Abs(hFiniteOr0(r.pct)), hFiniteOr0(r.band)))
	}
	scale = hNiceStep(scale, 1)
	labelW = math.Min(labelW, chartMaxW/2)
	width := math.Min(labelW+480+valueW, chartMaxW)
	plotL, plotR := labelW, width-valueW
	zero, half := (plotL+plotR)/2, (plotR-plotL)/2
	x := func(pct float64) float64 { return zero + math.Max(-1, math.Min(1, pct/scale))*half }
	height := top + 8 + float64(max(len(rows), 1))*rowH

	var w svgW
	hFrame(&w, id, title, width, height, len(rows))
	w.open("g", false, "class", "axis")
	for _, t := range []float64{-scale, -scale / 2, 0, scale / 2, scale} {
		w.line(x(t), top-6, x(t), height-8, "class", "grid")
		w.text(x(t), 16, hSignedPct(t), "text-anchor", "middle")
	}
	w.end("g")
	for i, r := range rows {
		y := top + float64(i)*rowH
		w.open("g", false, "class", "series", "data-name", r.label)
		w.title(r.tip)
		w.text(4, y+rowH/2+4, r.label)
		if r.band >= 0 && finite(r.band) {
			b := math.Min(r.band, scale) / scale * half
			w.rect(zero-b, y+(rowH-barH)/2, 2*b, barH, "class", "band")
		}
		x0, x1 := zero, x(hFiniteOr0(r.pct))
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		w.rect(x0, y+(rowH-barH)/2, math.Max(x1-x0, 1), barH, "class", r.class)
		w.text(width-4, y+rowH/2+4, r.value, "text-anchor", "end")
		w.end("g")
	}
	if len(rows) == 0 {
		w.text(4, top+14, "no row was measured in both reports")
	}
	w.line(zero, top-6, zero, height-8, "class", "baseline")
	w.end("svg")
	return w.b.String()
}

func hSignedPct(f float64) string {
	if f == 0 {
		return "0%"
	}
	return fmt.Sprintf("%+g%%", f)
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
	half      bool // drawn in a two-column grid: chartHalfW wide, not chartMaxW
	x, y      hAxisSpec
	lines     []hLine
}

// hLineChart draws one line per series over a categorical, log2 or linear x
// axis and a linear or log10 y axis.
func hLineChart(spec hLineSpec) string {
	var w svgW
	width := chartMaxW
	if spec.half {
		width = chartHalfW
	}
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
	if width <= chartHalfW {
		plotH = 210
	}
	bottom := top + plotH
	height := bottom + 46

	hFrame(&w, spec.id, spec.title, width, height, len(spec.lines))
	w.b.WriteString(lg.b.String())

	ys := yScale(&w, spec.y.log10, ymin, ymax, top, bottom, left, right, spec.y.label, spec.y.fmt)

	// x axis: a categorical one is a linear one over the categories'
	// indexes.
	x := spec.x
	if x.cats != nil {
		x.ticks, x.fmt = nil, func(v float64) string { return x.cats[int(v)] }
		for i := range x.cats {
			x.ticks = append(x.ticks, float64(i))
		}
	}
	lo, hi := 1.0, 2.0
	if len(x.ticks) > 0 {
		lo, hi = slices.Min(x.ticks), slices.Max(x.ticks)
	}
	const pad = 28.0
	xs := hScale{d0: lo, d1: hi, r0: left + pad, r1: right - pad}
	if x.log2 {
		xs.log = math.Log2
	}
	w.open("g", false, "class", "axis")
	lastX, x0fmt := math.Inf(-1), x.fmt
	for _, t := range x.ticks {
		x := xs.at(t)
		w.line(x, top, x, bottom, "class", "grid minor")
		if x-lastX >= 34 {
			w.text(x, bottom+16, x0fmt(t), "text-anchor", "middle")
			lastX = x
		}
	}
	w.text((left+right)/2, bottom+36, spec.x.label, "class", "unit", "text-anchor", "middle")
	w.end("g")
	w.line(left, bottom, right, bottom, "class", "baseline")

	xOf := func(p hPoint) float64 { return xs.at(p.x) }
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

// decimals formats chart values with n decimals.
func decimals(n int) func(float64) string {
	return func(v float64) string { return strconv.FormatFloat(v, 'f', n, 64) }
}
