package report

// The one chart set of every HTML page (page.go): grouped bars with
// min–max whiskers (or dots on a log axis), lines (sweeps, and percentiles
// on a log axis), a tile grid, and signed-percent bars. Each draws on a
// plot, which holds the SVG writer (it escapes every text and attribute
// value it is given) and the plot area, and draws what the four share:
// the frame, the legend, the axes and their grid, and the series groups.
// The charts are plain inline SVG: no script, no external reference; their
// tooltips are native SVG <title> elements.
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
	return strconv.FormatFloat(math.Round(hFiniteOr0(f)*10)/10, 'f', -1, 64)
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
		w.b.WriteByte('/')
	}
	w.b.WriteByte('>')
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
	if s != "" {
		w.b.WriteString("<title>" + hEsc(s) + "</title>")
	}
}

func (w *svgW) line(x1, y1, x2, y2 float64, attrs ...string) {
	w.el("line", append([]string{"x1", hNum(x1), "y1", hNum(y1), "x2", hNum(x2), "y2", hNum(y2)}, attrs...)...)
}

func (w *svgW) rect(x, y, width, height float64, attrs ...string) {
	w.el("rect", append([]string{"x", hNum(x), "y", hNum(y), "width", hNum(math.Max(width, 0)), "height", hNum(math.Max(height, 0))}, attrs...)...)
}

func (w *svgW) circle(x, y, r float64, attrs ...string) {
	w.el("circle", append([]string{"cx", hNum(x), "cy", hNum(y), "r", hNum(r)}, attrs...)...)
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
	var a, b [3]int
	fmt.Sscanf(c, "#%02x%02x%02x", &a[0], &a[1], &a[2])
	fmt.Sscanf(m, "#%02x%02x%02x", &b[0], &b[1], &b[2])
	for i := range a {
		a[i] = int(math.Round(float64(a[i]) + float64(b[i]-a[i])*f))
	}
	return fmt.Sprintf("#%02x%02x%02x", a[0], a[1], a[2])
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

// dash is the stroke-dasharray of the series' lines: d for fio's.
func (s *hSeries) dash(d string) string {
	if s.fio {
		return d
	}
	return ""
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
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
	}), "-")
}

// chartIDs hands out chart ids unique in a page.
type chartIDs map[string]bool

// id returns a unique chart id made of parts.
func (ids chartIDs) id(parts ...string) string {
	base := hSlug(strings.Join(parts, " "))
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

// --- ticks

// hNiceStep returns a round step (1, 2, 2.5 or 5 × 10^k) that divides span
// into about n intervals.
func hNiceStep(span float64, n int) float64 {
	if !(span > 0) || !finite(span) {
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
	if !(hi > 0) || !finite(hi) {
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
	case !finite(v):
		return "n/a"
	case a == 0:
		return "0"
	case a < 1:
		return strconv.FormatFloat(v, 'g', 3, 64)
	default:
		return strconv.FormatFloat(v, 'f', max(0, 2-int(math.Floor(math.Log10(a)))), 64)
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

// --- the plot every chart draws on

// plot is a chart being drawn: its markup, and the plot area from x0 to x1
// across and y0 to y1 down, which the axes span.
type plot struct {
	svgW
	id, label      string
	x0, x1, y0, y1 float64
	series         int // <g class="series"> opened
}

// svg returns the chart: an <svg> at its natural size around what was
// drawn.
func (p *plot) svg(width, height float64) string {
	w, h := hNum(math.Ceil(width)), hNum(math.Ceil(height))
	var f svgW
	f.open("svg", false, "class", "chart", "data-chart", p.id, "data-series", strconv.Itoa(p.series),
		"width", w, "height", h, "viewBox", "0 0 "+w+" "+h, "role", "img", "aria-label", p.label)
	f.title(p.label)
	return f.b.String() + p.b.String() + "</svg>"
}

// openSeries opens the <g class="series"> of one series, with more
// attributes when given; the caller ends it.
func (p *plot) openSeries(name string, attrs ...string) {
	p.series++
	p.open("g", false, append([]string{"class", "series", "data-name", name}, attrs...)...)
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

// yAxis draws the y axis across the plot for values up to hi (from lo > 0
// on a log10 axis, whose decades logTick labels): its grid lines, their
// labels and the unit; and returns its scale.
func (p *plot) yAxis(log bool, lo, hi float64, unit string, logTick func(float64) string) hScale {
	ys := hScale{r0: p.y1, r1: p.y0}
	var ticks []float64
	var major []bool
	if log {
		if math.IsInf(lo, 1) || !(lo > 0) {
			lo, hi = 1, 10
		}
		ticks, major = hLogTicks(lo, hi)
		ys.log = math.Log10
	} else {
		ticks = hLinTicks(hi)
	}
	ys.d0, ys.d1 = ticks[0], ticks[len(ticks)-1]
	p.open("g", false, "class", "axis")
	for i, t := range ticks {
		y, label, class := ys.at(t), "", "grid"
		switch {
		case !log:
			label = hTickLabel(t, ticks[1]-ticks[0])
		case major[i]:
			label = logTick(t)
		default:
			class = "grid minor"
		}
		p.line(p.x0, y, p.x1, y, "class", class)
		if label != "" {
			p.text(p.x0-6, y+4, label, "text-anchor", "end")
		}
	}
	mid := (p.y0 + p.y1) / 2
	p.text(14, mid, unit, "class", "unit", "text-anchor", "middle", "transform", "rotate(-90 14 "+hNum(mid)+")")
	p.end("g")
	return ys
}

// xAxis draws a vertical grid line down the plot at each tick, labelled at
// labelY when clear of the previous label, and the unit under the labels.
func (p *plot) xAxis(xs hScale, ticks []float64, label func(float64) string, labelY float64, class, unit string) {
	p.open("g", false, "class", "axis")
	last := math.Inf(-1)
	for _, t := range ticks {
		x := xs.at(t)
		p.line(x, p.y0, x, p.y1, "class", class)
		if x-last >= 34 {
			p.text(x, labelY, label(t), "text-anchor", "middle")
			last = x
		}
	}
	if unit != "" {
		p.text((p.x0+p.x1)/2, labelY+20, unit, "class", "unit", "text-anchor", "middle")
	}
	p.end("g")
}

// groupAxis labels each group that is not empty at labelY, under its
// extent from starts to ends (bracketed when several share the axis and it
// has no rowNames). With rowNames, it names the two label rows left of the plot, and
// brackets a super label under each run of groups that share one. It
// returns the chart's height below them.
func (p *plot) groupAxis(groups []hBarGroup, starts, ends []float64, labelY float64, rowNames [2]string) float64 {
	p.open("g", false, "class", "axis")
	defer p.end("g")
	labelled := false
	for i, g := range groups {
		a, b := starts[i]+2, ends[i]-2
		if g.label == "" || ends[i] <= starts[i] {
			continue
		}
		labelled = true
		if len(groups) > 1 && rowNames[0] == "" {
			p.line(a, labelY-11, b, labelY-11, "class", "bracket")
		}
		p.text((a+b)/2, labelY+2, g.label, "class", "gl", "text-anchor", "middle")
	}
	switch {
	case rowNames[0] == "" && labelled:
		return labelY + 12
	case rowNames[0] == "":
		return labelY - 8
	}
	p.text(p.x0-6, labelY+2, rowNames[0], "class", "unit", "text-anchor", "end")
	p.text(p.x0-6, labelY+26, rowNames[1], "class", "unit", "text-anchor", "end")
	for i := 0; i < len(groups); {
		j := i
		for j+1 < len(groups) && groups[j+1].super == groups[i].super {
			j++
		}
		a, b := starts[i]+2, ends[j]-2
		p.line(a, labelY+10, b, labelY+10, "class", "bracket")
		p.text((a+b)/2, labelY+26, groups[i].super, "class", "gl", "text-anchor", "middle")
		i = j + 1
	}
	return labelY + 40
}

// --- legend

type hLegendKind int

const (
	hLegShare hLegendKind = iota // a swatch: a series' bars (hatched for fio), a bar's stacked share, a tile
	hLegLine
	hLegRef   // flat reference line
	hLegNoisy // noisy-run marker
	hLegError
)

type hLegendItem struct {
	name  string
	kind  hLegendKind
	s     *hSeries // nil for the extra items
	color string   // the swatch of an item with no series
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

// legend lays items out in rows from (x, y) within width and returns the
// y below them. Series items are not the series themselves: those are the
// <g class="series"> elements of the plot.
func (p *plot) legend(items []hLegendItem, x, y, width float64) float64 {
	if len(items) == 0 {
		return y
	}
	const rowH = 18
	cx, cy := x, y
	p.open("g", false, "class", "legend")
	for _, it := range items {
		iw := 22 + hTextWidth(it.name, 12) + 16
		if cx > x && cx+iw > x+width {
			cx, cy = x, cy+rowH
		}
		p.key(it, cx, cy+9)
		cx += iw
	}
	p.end("g")
	return cy + rowH
}

// key draws an item's swatch from x, centred on y, and its name after it.
func (p *plot) key(it hLegendItem, x, y float64) {
	c := it.color
	if it.s != nil {
		c = it.s.color
	}
	switch {
	case it.kind == hLegShare && it.s != nil && it.s.fio:
		p.rect(x, y-6, 16, 12, "fill", "url(#"+p.hatch(it.s)+")", "stroke", c)
	case it.kind == hLegShare:
		p.rect(x, y-6, 16, 12, "fill", c, "rx", "2")
	case it.kind == hLegLine:
		p.line(x, y, x+16, y, "stroke", it.s.lineColor(), "stroke-width", "2.5", "stroke-dasharray", it.s.dash("5 3"))
		p.marker(it.s, x+8, y)
	case it.kind == hLegRef:
		p.line(x, y, x+16, y, "stroke", c, "stroke-width", "1.5", "stroke-dasharray", "2 3")
	case it.kind == hLegNoisy:
		p.noisy(x+8, y)
	case it.kind == hLegError:
		p.text(x+8, y+4, "×", "class", "err", "text-anchor", "middle")
	}
	p.text(x+22, y+4, it.name)
}

// hatch is the id of fio series s's hatch pattern in this chart (hatches
// defines it): unique in the page because chart ids are.
func (p *plot) hatch(s *hSeries) string { return fmt.Sprintf("h-%s-%d", p.id, s.idx) }

// hatches defines the hatch patterns of the fio series in a chart.
func (p *plot) hatches(series []*hSeries) {
	for _, s := range series {
		if !s.fio {
			continue
		}
		p.open("pattern", false, "id", p.hatch(s), "width", "6", "height", "6",
			"patternUnits", "userSpaceOnUse", "patternTransform", "rotate(45)")
		p.rect(0, 0, 6, 6, "fill", s.light)
		p.rect(0, 0, 2.4, 6, "fill", s.color)
		p.end("pattern")
	}
}

// marker is a point of a series' line: hollow for fio.
func (p *plot) marker(s *hSeries, x, y float64) {
	if s.fio {
		p.circle(x, y, 3.2, "fill", "#fff", "stroke", s.color, "stroke-width", "1.8")
	} else {
		p.circle(x, y, 3.4, "fill", s.color)
	}
}

// noisy marks a bar whose runs were noisy: a small warning triangle.
func (p *plot) noisy(x, y float64) {
	p.el("path", "d", fmt.Sprintf("M%s %sl5 8.5h-10z", hNum(x), hNum(y-5)), "class", "noisy")
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
	const left, right, plotH = 70.0, 16.0, 250.0
	present := map[*hSeries]bool{}
	lo, hi := math.Inf(1), 0.0
	var share, noisy, failed bool
	nBars := 0
	for _, g := range spec.groups {
		for _, b := range g.bars {
			present[b.s], nBars = true, nBars+1
			for _, v := range []float64{b.v, b.lo, b.hi} {
				if v > 0 && finite(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			share, noisy, failed = share || b.share > 0, noisy || b.noisy != "", failed || b.err != ""
		}
	}
	var series []*hSeries
	var items []hLegendItem
	nameW := 0.0
	for _, s := range spec.series {
		if present[s] {
			series = append(series, s)
			items = append(items, hLegendItem{name: s.name, kind: hLegShare, s: s})
			nameW = math.Max(nameW, hTextWidth(s.name, 11)+8)
		}
	}
	if share {
		items = append(items, hLegendItem{name: spec.shareLabel, kind: hLegShare, color: "#333"})
	}
	if noisy {
		items = append(items, hLegendItem{name: "noisy runs (kept)", kind: hLegNoisy})
	}
	if failed {
		items = append(items, hLegendItem{name: "not measured (error)", kind: hLegError})
	}
	value := spec.value
	if value == nil {
		value = hSig3
	}

	// The width comes from the bars: a slot per bar wide enough for the
	// series' names and the group labels, 0.8 of one between groups and
	// 0.3 on each side, up to the page's width.
	nSlots := float64(nBars) + 0.8*float64(max(len(spec.groups)-1, 0)) + 0.6
	slot := math.Max(nameW, 48)
	for _, g := range spec.groups {
		if n := len(g.bars); n > 0 {
			slot = math.Max(slot, (hTextWidth(g.label, 12)+12)/float64(n))
		}
	}
	slot = math.Min(slot, 92)
	width := math.Min(left+math.Max(slot*nSlots, 240)+right, chartMaxW)
	slot = math.Min(slot, (width-left-right)/math.Max(nSlots, 1))
	showNames := nameW <= slot

	p := plot{id: spec.id, label: spec.title, x0: left, x1: width - right}
	p.hatches(series)
	p.y0 = p.legend(items, left, 8, p.x1-left) + 22
	p.y1 = p.y0 + plotH
	ys := p.yAxis(spec.log, lo, hi, spec.unit, spec.tick)
	starts, ends := make([]float64, len(spec.groups)), make([]float64, len(spec.groups))
	x := left + (p.x1-left-slot*nSlots)/2 + 0.3*slot
	for i, g := range spec.groups {
		starts[i], ends[i] = x, x+slot*float64(len(g.bars))
		x = ends[i] + 0.8*slot
	}
	labelY := p.y1 + 16
	if showNames {
		labelY += 16
	}
	height := p.groupAxis(spec.groups, starts, ends, labelY, spec.rowNames)
	for _, s := range series {
		p.openSeries(s.name)
		for gi, g := range spec.groups {
			for bi, b := range g.bars {
				if b.s != s {
					continue
				}
				c := starts[gi] + (float64(bi)+0.5)*slot
				if showNames {
					p.text(c, p.y1+14, s.name, "class", "bn", "text-anchor", "middle")
				}
				p.bar(b, c, math.Min(slot*0.8, 60), ys, spec.log, slot >= 30, value)
			}
		}
		p.end("g")
	}
	p.line(left, p.y1, p.x1, p.y1, "class", "baseline")
	return p.svg(width, height)
}

// bar draws b centred on c, with its whisker, its value above it when
// showValue, and its noisy mark.
func (p *plot) bar(b hBar, c, barW float64, ys hScale, log, showValue bool, value func(float64) string) {
	s, bx := b.s, c-barW/2
	p.open("g", false, "class", "bar")
	defer p.end("g")
	p.title(b.tip)
	switch {
	case b.err != "":
		p.rect(bx, p.y0, barW, p.y1-p.y0, "class", "errgap")
		p.text(c+4, p.y1-8, b.err, "class", "err", "transform", "rotate(-90 "+hNum(c+4)+" "+hNum(p.y1-8)+")")
		return
	case !(b.v > 0) || !finite(b.v):
		p.text(c, p.y1-6, "n/m", "class", "nm", "text-anchor", "middle")
		return
	}
	y := ys.at(b.v)
	top := y
	switch {
	case log:
		top -= 5
	case s.fio:
		p.rect(bx, y, barW, p.y1-y, "fill", "url(#"+p.hatch(s)+")", "stroke", s.color, "stroke-width", "1")
	default:
		p.rect(bx, y, barW, p.y1-y, "fill", s.color)
	}
	if b.share > 0 && !log {
		sy := ys.at(b.share)
		p.rect(bx, sy, barW, p.y1-sy, "fill", s.dark)
	}
	if b.hi > 0 && b.lo > 0 && b.hi > b.lo && finite(b.hi) {
		yl, yh, cw := ys.at(b.lo), ys.at(b.hi), math.Min(barW*0.5, 14)
		p.line(c, yl, c, yh, "class", "whisker")
		p.line(c-cw/2, yh, c+cw/2, yh, "class", "whisker")
		p.line(c-cw/2, yl, c+cw/2, yl, "class", "whisker")
		top = math.Min(top, yh)
	}
	if log {
		p.circle(c, y, 5, "fill", s.color, "stroke", "#fff", "stroke-width", "1.2")
	}
	if showValue {
		p.text(c, top-5, value(b.v), "class", "val", "text-anchor", "middle")
		top -= 14
	}
	if b.noisy != "" {
		p.noisy(c, top-8)
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
	const rowH = 28.0
	left, colW := 70.0, 60.0
	for _, s := range spec.rows {
		left = math.Max(left, 16+22+hTextWidth(s.name, 12)+12)
	}
	for ci, c := range spec.cols {
		colW = math.Max(colW, math.Max(hTextWidth(c.label, 12), hTextWidth(c.super, 12))+12)
		for ri := range spec.rows {
			colW = math.Max(colW, 1.1*hTextWidth(spec.tiles[ri][ci].text, 11)+18) // bold
		}
	}
	width := math.Max(left+float64(len(spec.cols))*colW+16, 480)
	p := plot{id: spec.id, label: spec.title, x0: left, x1: width - 16}
	p.hatches(spec.rows)
	p.y0 = p.legend(spec.key, 16, 8, width-32) + 10
	p.y1 = p.y0 + float64(len(spec.rows))*rowH
	starts, ends := make([]float64, len(spec.cols)), make([]float64, len(spec.cols))
	for i := range spec.cols {
		starts[i], ends[i] = left+float64(i)*colW, left+float64(i+1)*colW
	}
	height := p.groupAxis(spec.cols, starts, ends, p.y1+16, spec.rowNames)
	for ri, s := range spec.rows {
		y := p.y0 + float64(ri)*rowH
		p.openSeries(s.name)
		p.key(hLegendItem{name: s.name, kind: hLegShare, s: s}, 16, y+rowH/2)
		for ci, t := range spec.tiles[ri] {
			p.open("g", false, "class", "tile")
			p.title(t.tip)
			p.rect(starts[ci]+3, y+3, colW-6, rowH-6, "fill", t.fill, "rx", "3")
			p.text(starts[ci]+colW/2, y+rowH/2+4, t.text, "class", t.class, "text-anchor", "middle")
			p.end("g")
		}
		p.end("g")
	}
	return p.svg(width, height)
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
	const rowH, barH, valueW = 20.0, 12.0, 70.0
	labelW, scale := 120.0, 1.0
	for _, r := range rows {
		labelW = math.Max(labelW, hTextWidth(r.label, 12)+12)
		scale = math.Max(scale, math.Max(math.Abs(hFiniteOr0(r.pct)), hFiniteOr0(r.band)))
	}
	scale = hNiceStep(scale, 1)
	labelW = math.Min(labelW, chartMaxW/2)
	width := math.Min(labelW+480+valueW, chartMaxW)
	p := plot{id: id, label: title, x0: labelW, x1: width - valueW, y0: 22}
	p.y1 = p.y0 + 6 + float64(max(len(rows), 1))*rowH
	xs := hScale{d0: -scale, d1: scale, r0: p.x0, r1: p.x1}
	zero := xs.at(0)
	p.xAxis(xs, []float64{-scale, -scale / 2, 0, scale / 2, scale}, hSignedPct, 16, "grid", "")
	for i, r := range rows {
		y := p.y0 + 6 + float64(i)*rowH + (rowH-barH)/2
		p.openSeries(r.label)
		p.title(r.tip)
		p.text(4, y+barH/2+4, r.label)
		if r.band >= 0 && finite(r.band) {
			b := math.Min(r.band, scale)
			p.rect(xs.at(-b), y, xs.at(b)-xs.at(-b), barH, "class", "band")
		}
		x := xs.at(math.Max(-scale, math.Min(scale, hFiniteOr0(r.pct))))
		p.rect(math.Min(zero, x), y, math.Max(math.Abs(x-zero), 1), barH, "class", r.class)
		p.text(width-4, y+barH/2+4, r.value, "text-anchor", "end")
		p.end("g")
	}
	if len(rows) == 0 {
		p.text(4, p.y0+20, "no row was measured in both reports")
	}
	p.line(zero, p.y0, zero, p.y1, "class", "baseline")
	return p.svg(width, p.y1+8)
}

func hSignedPct(f float64) string {
	if f == 0 {
		return "0%"
	}
	return fmt.Sprintf("%+g%%", f)
}

// --- 100%-stacked horizontal bars

// hStackPart is one share every bar of a stacked chart may hold (a kind
// of CPU): a series of the chart, in its colour.
type hStackPart struct {
	name, color string
}

// hStackBar is one bar: a row's shares in percent, one per part (0: none
// drawn), drawn end to end across 100%.
type hStackBar struct {
	label  string
	s      *hSeries // the row's engine: the swatch before its label
	shares []float64
	tips   []string // per part: the segment's tooltip
}

// hStackGroup is a run of bars under a heading (a cache state).
type hStackGroup struct {
	label string
	bars  []hStackBar
}

type hStackSpec struct {
	id, title, unit string
	parts           []hStackPart
	groups          []hStackGroup
}

// hStackChart draws a horizontal bar per row, each split into its parts'
// shares and stretched to 100% (a row's shares that do not add up to 100
// are scaled to), a heading over each group, the parts' legend on top
// and a percent axis under the bars. Each part is a series holding its
// segments; a segment wide enough shows its share.
func hStackChart(spec hStackSpec) string {
	const rowH, barH, headH, right = 22.0, 15.0, 22.0, 18.0
	present := make([]bool, len(spec.parts))
	labelW := 90.0
	nRows := 0
	for _, g := range spec.groups {
		for _, b := range g.bars {
			labelW = math.Max(labelW, 22+hTextWidth(b.label, 12)+12)
			for i, v := range b.shares {
				present[i] = present[i] || v > 0
			}
			nRows++
		}
	}
	labelW = math.Min(labelW, chartMaxW/3)
	width := math.Min(labelW+640+right, chartMaxW)
	p := plot{id: spec.id, label: spec.title, x0: labelW, x1: width - right}
	var items []hLegendItem
	for i, part := range spec.parts {
		if present[i] {
			items = append(items, hLegendItem{name: part.name, kind: hLegShare, color: part.color})
		}
	}
	p.y0 = p.legend(items, 16, 8, width-32) + 10
	p.y1 = p.y0 + float64(len(spec.groups))*headH + float64(nRows)*rowH + 4
	xs := hScale{d0: 0, d1: 100, r0: p.x0, r1: p.x1}
	p.xAxis(xs, []float64{0, 25, 50, 75, 100}, func(v float64) string { return hNum(v) + "%" }, p.y1+16, "grid", spec.unit)

	// Where each bar goes, and the headings and the row labels.
	type at struct{ y, sum float64 }
	pos := make([][]at, len(spec.groups))
	y := p.y0
	p.open("g", false, "class", "axis")
	for gi, g := range spec.groups {
		p.text(16, y+headH-6, g.label, "class", "gl")
		y += headH
		for _, b := range g.bars {
			sum := 0.0
			for _, v := range b.shares {
				sum += math.Max(hFiniteOr0(v), 0)
			}
			pos[gi] = append(pos[gi], at{y + (rowH-barH)/2, sum})
			if b.s != nil {
				p.rect(16, y+rowH/2-5, 10, 10, "fill", b.s.color, "rx", "2")
			}
			p.text(32, y+rowH/2+4, b.label)
			y += rowH
		}
	}
	p.end("g")
	for i, part := range spec.parts {
		if !present[i] {
			continue
		}
		p.openSeries(part.name)
		for gi, g := range spec.groups {
			for bi, b := range g.bars {
				a := pos[gi][bi]
				if i >= len(b.shares) || !(b.shares[i] > 0) || a.sum <= 0 {
					continue
				}
				before := 0.0
				for _, v := range b.shares[:i] {
					before += math.Max(hFiniteOr0(v), 0)
				}
				x0, x1 := xs.at(100*before/a.sum), xs.at(100*(before+b.shares[i])/a.sum)
				p.open("g", false, "class", "seg")
				if i < len(b.tips) {
					p.title(b.tips[i])
				}
				p.rect(x0, a.y, x1-x0, barH, "fill", part.color)
				if label := pctText(b.shares[i]); x1-x0 >= hTextWidth(label, 10.5)+6 {
					p.text((x0+x1)/2, a.y+barH/2+4, label, "class", "val", "text-anchor", "middle")
				}
				p.end("g")
			}
		}
		p.end("g")
	}
	if nRows == 0 {
		p.text(p.x0, p.y0+16, "no row was recorded")
	}
	return p.svg(width, p.y1+46)
}

// --- line chart

type hPoint struct {
	x, y float64 // y <= 0 (or not finite): no value, the line passes on
	err  string  // the row failed: an × on the x axis, and a break in the line
	tip  string
}

// measured says p has a value to draw.
func (p hPoint) measured() bool { return p.err == "" && p.y > 0 && finite(p.y) }

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
	log2  bool     // log2 numeric axis (x)
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
	width, plotH := chartMaxW, 230.0
	if spec.half {
		width, plotH = chartHalfW, 210
	}
	p := plot{id: spec.id, label: spec.title, x0: 62, x1: width - 18}
	var items []hLegendItem
	lo, hi := math.Inf(1), 0.0
	failed := false
	for _, l := range spec.lines {
		it := hLegendItem{name: l.s.name, kind: hLegLine, s: l.s}
		if l.ref {
			it.kind = hLegRef
			l.pts = []hPoint{{y: l.refY}}
		}
		items = append(items, it)
		for _, pt := range l.pts {
			failed = failed || pt.err != ""
			if pt.measured() {
				lo, hi = math.Min(lo, pt.y), math.Max(hi, pt.y)
			}
		}
	}
	if failed {
		items = append(items, hLegendItem{name: "error", kind: hLegError})
	}
	p.y0 = p.legend(items, p.x0, 8, p.x1-p.x0) + 18
	p.y1 = p.y0 + plotH
	ys := p.yAxis(spec.y.log10, lo, hi, spec.y.label, spec.y.fmt)

	// A categorical x axis is a linear one over the categories' indexes.
	x := spec.x
	if x.cats != nil {
		x.ticks, x.fmt = nil, func(v float64) string { return x.cats[int(v)] }
		for i := range x.cats {
			x.ticks = append(x.ticks, float64(i))
		}
	}
	xs := hScale{d0: 1, d1: 2, r0: p.x0 + 28, r1: p.x1 - 28}
	if len(x.ticks) > 0 {
		xs.d0, xs.d1 = slices.Min(x.ticks), slices.Max(x.ticks)
	}
	if x.log2 {
		xs.log = math.Log2
	}
	p.xAxis(xs, x.ticks, x.fmt, p.y1+16, "grid minor", x.label)
	p.line(p.x0, p.y1, p.x1, p.y1, "class", "baseline")

	var refYs []float64 // the reference lines' labels, kept apart
	for _, l := range spec.lines {
		s := l.s
		p.openSeries(s.name)
		if l.ref {
			p.open("g", false, "class", "ref")
			p.title(l.refTip)
			if l.refY > 0 {
				y := ys.at(l.refY)
				p.line(p.x0, y, p.x1, y, "stroke", s.color, "stroke-width", "1.6", "stroke-dasharray", "2 4")
				if !slices.ContainsFunc(refYs, func(ly float64) bool { return math.Abs(ly-y) < 12 }) {
					refYs = append(refYs, y)
					p.text(p.x1-4, y-4, s.name, "class", "reflabel", "text-anchor", "end", "fill", s.color)
				}
			}
			p.end("g")
			p.end("g")
			continue
		}
		// The line, broken at failed points.
		var d strings.Builder
		pen := "M"
		for _, pt := range l.pts {
			if pt.err != "" {
				pen = "M"
			} else if pt.measured() {
				d.WriteString(pen + hNum(xs.at(pt.x)) + " " + hNum(ys.at(pt.y)))
				pen = "L"
			}
		}
		if d.Len() > 0 {
			p.el("path", "d", d.String(), "fill", "none", "stroke", s.lineColor(), "stroke-width", "2.2",
				"stroke-dasharray", s.dash("6 4"), "stroke-linejoin", "round")
		}
		for _, pt := range l.pts {
			if pt.err == "" && !pt.measured() {
				continue
			}
			p.open("g", false, "class", "pt")
			p.title(pt.tip)
			if pt.err != "" {
				p.text(xs.at(pt.x), p.y1-3, "×", "class", "err", "text-anchor", "middle")
			} else {
				p.marker(s, xs.at(pt.x), ys.at(pt.y))
			}
			p.end("g")
		}
		p.end("g")
	}
	return p.svg(width, p.y1+46)
}

func hFiniteOr0(f float64) float64 {
	if !finite(f) {
		return 0
	}
	return f
}

// decimals formats chart values with n decimals.
func decimals(n int) func(float64) string {
	return func(v float64) string { return strconv.FormatFloat(v, 'f', n, 64) }
}
