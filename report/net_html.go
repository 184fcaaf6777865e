package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netbench"
)

// NetHTML writes r as one self-contained HTML page for people: the
// integrity verdict first; the machine, the command, the versions and the
// pinning; per mode, charts of the server's CPU per request (the
// headline), QPS and P99 latency at every point of the matrix, engines side
// by side; a matrix of every point's integrity; the full results table;
// the skipped engines; and the notes.
//
// The page follows the rules of HTML: it works offline and fetches
// nothing, has no script, and a Content-Security-Policy meta tag blocks
// (and makes the browser log) any attempt to load something. Everything
// taken from the report is escaped.
//
// Charts are <svg class="chart" data-chart=ID data-series=N>, each series
// (an engine) a <g class="series" data-name=ENGINE>:
//
//	cpu-MODE           server CPU-µs per request, grouped bars with min–max whiskers over the runs
//	qps-MODE           thousands of requests per second, the same
//	p99-MODE           P99 latency on a log scale, a dot per engine with a min–max whisker
//	                   (left out for a mode that measured no latency: stream)
//	integrity-MODE     a tile per engine and point: ok, or the bytes corrupted or lost
//
// MODE is the mode made into a slug: pingpong, pipeline-8, stream.
func NetHTML(w io.Writer, r *netbench.Report) error {
	var b bytes.Buffer
	b.Grow(64 << 10)
	if err := netPage.Execute(&b, newNetHTML(r).page()); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// netEngineColors gives each known server engine its colour in every
// chart; io_uring keeps the colour it has in the file report.
var netEngineColors = map[string]string{
	"net":      "#4e79a7",
	"epoll":    "#59a14f",
	"io_uring": "#8e63b5",
}

type netHTML struct {
	v      *netView
	series []*hSeries // engines with a row, in display order
	byName map[string]*hSeries
	ids    map[string]bool
}

func newNetHTML(r *netbench.Report) *netHTML {
	m := &netHTML{v: newNetView(r), byName: map[string]*hSeries{}, ids: map[string]bool{}}
	has := map[string]bool{}
	for _, p := range r.Points {
		has[p.Engine] = true
	}
	next := 0
	for _, e := range m.v.engines {
		if !has[e] {
			continue
		}
		c, ok := netEngineColors[e]
		if !ok {
			c = hExtraColors[next%len(hExtraColors)]
			next++
		}
		s := &hSeries{name: e, base: e, color: c, light: hMix(c, "#ffffff", 0.72), dark: hMix(c, "#000000", 0.45),
			idx: len(m.series)}
		m.series = append(m.series, s)
		m.byName[e] = s
	}
	return m
}

// id returns a unique element id made of parts.
func (m *netHTML) id(parts ...string) string {
	var p []string
	for _, s := range parts {
		if s = hSlug(s); s != "" {
			p = append(p, s)
		}
	}
	base := strings.Join(p, "-")
	id := base
	for n := 2; m.ids[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	m.ids[id] = true
	return id
}

// groupsOf returns the points of one mode, in the view's order.
func (m *netHTML) groupsOf(mode string) []*netGroup {
	var out []*netGroup
	for i := range m.v.groups {
		if g := &m.v.groups[i]; g.key.mode == mode {
			out = append(out, g)
		}
	}
	return out
}

// netTip is the tooltip of a row's mark in a chart.
func netTip(p *netbench.Point, lines ...string) string {
	head := fmt.Sprintf("%s · %s", p.Engine, netKey{p.Conns, p.Size, p.Mode}.label())
	if p.Err != "" {
		return head + "\nerror: " + oneLine(p.Err)
	}
	return strings.Join(append([]string{head}, lines...), "\n")
}

// netRunsNote is "median of 3 runs (min 1.2, max 1.4)", or "1 run".
func netRunsNote(s netStat, n int, f func(float64) string) string {
	if n < 2 {
		return plural(n, "run")
	}
	return fmt.Sprintf("median of %d runs (min %s, max %s)", n, f(s.lo), f(s.hi))
}

// cells builds one chart's groups: a cell per engine with a row at each
// point of mode.
func (m *netHTML) cells(mode string, cell func(g *netGroup, p *netbench.Point) nCell) []nGroup {
	var out []nGroup
	for _, g := range m.groupsOf(mode) {
		ng := nGroup{key: g.key}
		for _, p := range g.rows {
			c := nCell{s: m.byName[p.Engine]}
			if p.Err != "" {
				c.err, c.tip = oneLine(p.Err), netTip(p)
			} else {
				c = cell(g, p)
				c.s = m.byName[p.Engine]
			}
			ng.cells = append(ng.cells, c)
		}
		out = append(out, ng)
	}
	return out
}

func (m *netHTML) cpuChart(mode string) hChart {
	groups := m.cells(mode, func(g *netGroup, p *netbench.Point) nCell {
		s := netServerCPU(p)
		line := fmt.Sprintf("server %s CPU-µs per request, %s", netPerReq(p.ServerCPUPerReqUs), netRunsNote(s, len(p.Runs), hSig3))
		var vs []string
		for _, ref := range m.v.refs {
			if _, r := g.refRatio(p, ref); r != "" {
				vs = append(vs, r+" "+ref)
			}
		}
		if len(vs) > 0 {
			line += "\n" + strings.Join(vs, ", ")
		}
		c := nCell{v: hFiniteOr0(p.ServerCPUPerReqUs), tip: netTip(p, line,
			fmt.Sprintf("client %s CPU-µs per request", netPerReq(p.ClientCPUPerReqUs)))}
		if len(p.Runs) > 1 {
			c.lo, c.hi = s.lo, s.hi
		}
		return c
	})
	id := m.id("cpu", mode)
	title := "Server CPU per request — " + mode
	return hChart{ID: id, Title: title,
		Caption: "CPU time (user + system, every thread) of the server process per request, from the kernel's process CPU clock; median over " +
			"the runs, the whisker spanning the runs' minimum to maximum. Lower is better. A shaded gap labelled “error” " +
			"is a point that could not be measured (hover for why).",
		SVG: template.HTML(netBarChart(nChartSpec{id: id, title: title, unit: "server CPU-µs per request",
			groups: groups, series: m.series, value: hSig3}))}
}

func (m *netHTML) qpsChart(mode string) hChart {
	groups := m.cells(mode, func(_ *netGroup, p *netbench.Point) nCell {
		s := netQPS(p)
		c := nCell{v: hFiniteOr0(p.QPS) / 1e3, tip: netTip(p,
			fmt.Sprintf("%s requests per second, %s", netFmtQPS(p.QPS), netRunsNote(s, len(p.Runs), netFmtQPS)),
			fmt.Sprintf("%s MB/s echoed", netFmtMBps(p.MBps)))}
		if len(p.Runs) > 1 {
			c.lo, c.hi = s.lo/1e3, s.hi/1e3
		}
		return c
	})
	id := m.id("qps", mode)
	title := "Requests per second — " + mode
	return hChart{ID: id, Title: title,
		Caption: "Requests echoed whole and verified per second, in thousands; median over the runs, the whisker " +
			"spanning the runs' minimum to maximum. Higher is better.",
		SVG: template.HTML(netBarChart(nChartSpec{id: id, title: title, unit: "thousand requests/s",
			groups: groups, series: m.series, value: hSig3}))}
}

// p99Chart draws P99 latency, or nothing (ok false) when no row of mode
// measured a latency.
func (m *netHTML) p99Chart(mode string) (c hChart, ok bool) {
	any := false
	groups := m.cells(mode, func(_ *netGroup, p *netbench.Point) nCell {
		s := netP99(p)
		c := nCell{v: float64(max(p.P99Ns, 0)), tip: netTip(p,
			fmt.Sprintf("P99 %s, %s", latency(p.P99Ns), netRunsNote(s, len(p.Runs), func(f float64) string { return latency(int64(f)) })),
			fmt.Sprintf("P50 %s · P99 %s · P99.9 %s · max %s", latency(p.P50Ns), latency(p.P99Ns), latency(p.P999Ns), latency(p.MaxNs)))}
		if len(p.Runs) > 1 {
			c.lo, c.hi = s.lo, s.hi
		}
		any = any || c.v > 0
		return c
	})
	if !any {
		return hChart{}, false
	}
	id := m.id("p99", mode)
	title := "P99 latency — " + mode
	return hChart{ID: id, Title: title,
		Caption: "99th-percentile latency per request, from its send to the last byte of its echo, on a log scale: " +
			"the dot is the median over the runs, the whisker spans the runs' P99s. Lower is better. " +
			"“n/m”: not measured.",
		SVG: template.HTML(netBarChart(nChartSpec{id: id, title: title, unit: "P99 latency (log scale)",
			groups: groups, series: m.series, log: true, value: func(f float64) string { return latency(int64(f)) },
			tick: hLatencyTick}))}, true
}

// --- the grouped chart

// nCell is one engine at one point: a bar (or a dot on a log scale) at v
// with a whisker from lo to hi, or the gap of a point that failed.
type nCell struct {
	s         *hSeries
	v, lo, hi float64
	err       string
	tip       string
}

type nGroup struct {
	key   netKey
	cells []nCell
}

type nChartSpec struct {
	id, title, unit string
	groups          []nGroup
	series          []*hSeries
	log             bool                 // log10 y axis, dots instead of bars
	value           func(float64) string // value labels
	tick            func(float64) string // log axis labels
}

// netBarChart draws a chart of one mode's points: a group per point,
// a bar (or dot) per engine in it, labelled with the connections under
// each group and the message size under each run of groups that share
// it (rows headed "conns" and "size").
func netBarChart(spec nChartSpec) string {
	var w svgW
	width := hWideW
	left, right := 70.0, width-16

	present := map[*hSeries]bool{}
	ymax, ymin := 0.0, math.Inf(1)
	anyErr := false
	nBars := 0
	for _, g := range spec.groups {
		for _, c := range g.cells {
			present[c.s] = true
			nBars++
			anyErr = anyErr || c.err != ""
			for _, x := range []float64{c.v, c.lo, c.hi} {
				if x > 0 && finite(x) {
					ymax, ymin = math.Max(ymax, x), math.Min(ymin, x)
				}
			}
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
	if anyErr {
		items = append(items, hLegendItem{name: "not measured (error)", kind: hLegError})
	}

	var lg svgW
	lh := hLegend(&lg, spec.id, items, left, 8, right-left)
	top := 8 + lh + 22
	const plotH = 250.0
	bottom := top + plotH

	G := len(spec.groups)
	nSlots := float64(nBars) + 0.8*float64(max(G-1, 0)) + 0.6
	slot := math.Min((right-left)/math.Max(nSlots, 1), 92)
	x0 := left + ((right-left)-slot*nSlots)/2 + 0.3*slot
	barW := math.Min(slot*0.8, 60)
	showNames := true
	for _, s := range series {
		if hTextWidth(s.name, 11)+4 > slot {
			showNames = false
		}
	}
	showValues := slot >= 34
	labelY := bottom + 16
	if showNames {
		labelY += 16
	}
	height := labelY + 40

	hFrame(&w, spec.id, spec.title, width, height, len(series))
	w.b.WriteString(lg.b.String())

	var ys hScale
	if spec.log {
		if math.IsInf(ymin, 1) {
			ymin, ymax = 1e3, 1e4
		}
		ticks, major := hLogTicks(ymin, ymax)
		ys = hScale{d0: ticks[0], d1: ticks[len(ticks)-1], r0: bottom, r1: top, log: math.Log10}
		labels := make([]string, len(ticks))
		for i, t := range ticks {
			if major[i] {
				labels[i] = spec.tick(t)
			}
		}
		hYAxis(&w, ys, ticks, labels, major, left, right, spec.unit)
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
		hYAxis(&w, ys, ticks, labels, nil, left, right, spec.unit)
	}

	// x positions, engine names, the connections under each group and
	// the message size under each run of groups that share it.
	type pos struct{ g, i int }
	cx := map[pos]float64{}
	starts, ends := make([]float64, G), make([]float64, G)
	x := x0
	w.open("g", false, "class", "axis")
	for gi, g := range spec.groups {
		starts[gi] = x
		for ci, c := range g.cells {
			cx[pos{gi, ci}] = x + slot/2
			if showNames {
				w.text(x+slot/2, bottom+14, c.s.name, "class", "bn", "text-anchor", "middle")
			}
			x += slot
		}
		ends[gi] = x
		w.text((starts[gi]+ends[gi])/2, labelY, strconv.Itoa(g.key.conns), "class", "gl", "text-anchor", "middle")
		x += 0.8 * slot
	}
	if G > 0 {
		w.text(left-6, labelY, "conns", "class", "unit", "text-anchor", "end")
		w.text(left-6, labelY+24, "size", "class", "unit", "text-anchor", "end")
	}
	for gi := 0; gi < G; {
		gj := gi
		for gj+1 < G && spec.groups[gj+1].key.size == spec.groups[gi].key.size {
			gj++
		}
		a, b := starts[gi]+2, ends[gj]-2
		w.line(a, labelY+8, b, labelY+8, "class", "bracket")
		w.text((a+b)/2, labelY+24, units.FormatSize(int64(spec.groups[gi].key.size)), "class", "gl", "text-anchor", "middle")
		gi = gj + 1
	}
	w.end("g")

	for _, s := range series {
		w.open("g", false, "class", "series", "data-name", s.name)
		for gi, g := range spec.groups {
			for ci, c := range g.cells {
				if c.s != s {
					continue
				}
				mid := cx[pos{gi, ci}]
				bx := mid - barW/2
				w.open("g", false, "class", "bar")
				w.title(c.tip)
				switch {
				case c.err != "":
					w.rect(bx, top, barW, plotH, "class", "errgap")
					w.text(mid+4, bottom-8, "error", "class", "err", "transform", "rotate(-90 "+hNum(mid+4)+" "+hNum(bottom-8)+")")
				case !(c.v > 0) || !finite(c.v):
					w.text(mid, bottom-6, "n/m", "class", "nm", "text-anchor", "middle")
				default:
					y := ys.at(c.v)
					topY := y
					if spec.log {
						topY -= 5
					} else {
						w.rect(bx, y, barW, bottom-y, "fill", s.color)
					}
					if c.hi > 0 && c.lo > 0 && c.hi > c.lo {
						yl, yh := ys.at(c.lo), ys.at(c.hi)
						cw := math.Min(barW*0.5, 14)
						w.line(mid, yl, mid, yh, "class", "whisker")
						w.line(mid-cw/2, yh, mid+cw/2, yh, "class", "whisker")
						w.line(mid-cw/2, yl, mid+cw/2, yl, "class", "whisker")
						topY = math.Min(topY, yh)
					}
					if spec.log {
						w.el("circle", "cx", hNum(mid), "cy", hNum(y), "r", "5", "fill", s.color, "stroke", "#fff", "stroke-width", "1.2")
					}
					if showValues {
						w.text(mid, topY-5, spec.value(c.v), "class", "val", "text-anchor", "middle")
					}
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

// --- the integrity matrix

// integrityChart draws one mode's integrity: a tile per engine (row) and
// point (column), green when every byte came back as sent, red with the
// count when not, grey with "error" for a point that was not measured.
func (m *netHTML) integrityChart(mode string) hChart {
	id := m.id("integrity", mode)
	title := "Integrity — " + mode
	groups := m.groupsOf(mode)
	var series []*hSeries
	for _, s := range m.series {
		for _, g := range groups {
			if g.byEngine[s.name] != nil {
				series = append(series, s)
				break
			}
		}
	}

	labelW := 0.0
	for _, s := range series {
		labelW = math.Max(labelW, hTextWidth(s.name, 12))
	}
	left := math.Max(32+labelW+12, 70)
	colW := 60.0
	for _, g := range groups {
		colW = math.Max(colW, hTextWidth(units.FormatSize(int64(g.key.size)), 12)+12)
		for _, p := range g.rows {
			if p.Err == "" && (p.Corrupted != 0 || p.Lost != 0 || p.ConnErrors != 0) {
				colW = math.Max(colW, 1.1*hTextWidth(netBadTile(p), 11)+18) // bold
			}
		}
	}
	const rowH = 28.0
	keyItems := []hLegendItem{
		{name: "every byte back as sent", kind: hLegShare, color: "#59a14f"},
		{name: "bytes corrupted or lost, or connections failed", kind: hLegShare, color: "#c0392b"},
		{name: "not measured", kind: hLegShare, color: "#c9ced4"},
	}
	width := math.Max(hWideW, left+float64(len(groups))*colW+16)
	var lg svgW
	lh := hLegend(&lg, id, keyItems, 16, 8, width-32)
	top := 8 + lh + 10
	bottom := top + float64(len(series))*rowH
	labelY := bottom + 16
	height := labelY + 36

	var w svgW
	hFrame(&w, id, title, width, height, len(series))
	w.b.WriteString(lg.b.String())
	// Columns are labelled as in the other charts: connections under
	// each, the message size under each run of columns that share it.
	w.open("g", false, "class", "axis")
	for i, g := range groups {
		w.text(left+(float64(i)+0.5)*colW, labelY, strconv.Itoa(g.key.conns), "class", "gl", "text-anchor", "middle")
	}
	for gi := 0; gi < len(groups); {
		gj := gi
		for gj+1 < len(groups) && groups[gj+1].key.size == groups[gi].key.size {
			gj++
		}
		a, b := left+float64(gi)*colW+4, left+float64(gj+1)*colW-4
		w.line(a, labelY+8, b, labelY+8, "class", "bracket")
		w.text((a+b)/2, labelY+24, units.FormatSize(int64(groups[gi].key.size)), "class", "gl", "text-anchor", "middle")
		gi = gj + 1
	}
	if len(groups) > 0 {
		w.text(left-6, labelY, "conns", "class", "unit", "text-anchor", "end")
		w.text(left-6, labelY+24, "size", "class", "unit", "text-anchor", "end")
	}
	w.end("g")
	for ri, s := range series {
		y := top + float64(ri)*rowH
		w.open("g", false, "class", "series", "data-name", s.name)
		w.rect(16, y+rowH/2-5, 10, 10, "fill", s.color, "rx", "2")
		w.text(32, y+rowH/2+4, s.name, "class", "lg")
		for ci, g := range groups {
			p := g.byEngine[s.name]
			tx := left + float64(ci)*colW + 3
			w.open("g", false, "class", "tile")
			var fill, text, cls string
			switch {
			case p == nil:
				w.title(fmt.Sprintf("%s · %s\nnot run", s.name, g.key.label()))
				fill, text, cls = "#f1f3f5", "–", "tl"
			case p.Err != "":
				w.title(netTip(p))
				fill, text, cls = "#c9ced4", "error", "tl"
			case p.Corrupted == 0 && p.Lost == 0 && p.ConnErrors == 0:
				w.title(netTip(p, fmt.Sprintf("every echoed byte verified in %s: 0 corrupted, 0 lost, 0 connection errors",
					plural(len(p.Runs), "run"))))
				fill, text, cls = "#59a14f", "✓", "tl ok"
			default:
				w.title(netTip(p, fmt.Sprintf("%d bytes corrupted, %d lost, %d connections failed, over %s",
					p.Corrupted, p.Lost, p.ConnErrors, plural(len(p.Runs), "run"))))
				fill, text, cls = "#c0392b", netBadTile(p), "tl bad"
			}
			w.rect(tx, y+3, colW-6, rowH-6, "fill", fill, "rx", "3")
			w.text(tx+(colW-6)/2, y+rowH/2+4, text, "class", cls, "text-anchor", "middle")
			w.end("g")
		}
		w.end("g")
	}
	w.end("svg")
	return hChart{ID: id, Title: title,
		Caption: "The load generator checks every echoed byte against what it sent. A tile per engine and point, over all its runs; hover for the counts.",
		SVG:     template.HTML(w.b.String())}
}

// netBadTile is the text of a point's red tile: the bytes corrupted or
// lost, or the connections that failed.
func netBadTile(p *netbench.Point) string {
	switch n := p.Corrupted + p.Lost; {
	case n == 0:
		return fmt.Sprintf("%d conn err", p.ConnErrors)
	case n < 100_000:
		return fmt.Sprintf("%d B bad", n)
	default:
		return units.RoughSize(n) + " bad"
	}
}

// --- page

type netPageData struct {
	Title, Subtitle string
	Verdict         []string
	VerdictOK       bool
	Machine, Run    []hKV
	Command         string
	Sections        []hSection
	Columns         []hCell
	Rows            []hTRow
	Skipped         []hKV
	Notes           []string
	Defs            []hKV
	Generator       string
}

var netColumns = []hCell{
	{Text: "engine", Class: "l"}, {Text: "conns"}, {Text: "size"}, {Text: "mode", Class: "l"},
	{Text: "integrity", Class: "l", Title: "every echoed byte checked: ok, or bytes corrupted and lost and connections failed, over the runs"},
	{Text: "server CPU-µs/req", Title: "the headline: server CPU time per request, median over the runs"},
	{Text: "±", Class: "l", Title: "half the min–max range of the runs, as % of the median"},
	{Text: "vs epoll", Title: "server CPU-µs/req ÷ epoll's at the same point"},
	{Text: "vs net", Title: "server CPU-µs/req ÷ net's at the same point"},
	{Text: "QPS"}, {Text: "client CPU-µs/req"},
	{Text: "P50"}, {Text: "P99"}, {Text: "P99.9"}, {Text: "max"}, {Text: "MB/s", Title: "1 MB = 10⁶ bytes"},
	{Text: "runs"},
}

const netErrCol = 4 // cells before the error message in a failed row

func (m *netHTML) row(g *netGroup, p *netbench.Point) hTRow {
	s := m.byName[p.Engine]
	out := hTRow{Cells: []hCell{
		{Text: p.Engine, Class: "l eng", Style: template.CSS("background:" + s.color), Swatch: true},
		{Text: strconv.Itoa(p.Conns)}, {Text: units.FormatSize(int64(p.Size))}, {Text: p.Mode, Class: "l"},
	}}
	if p.Err != "" {
		out.Class, out.Err, out.ErrSpan = "failed", oneLine(p.Err), len(netColumns)-netErrCol
		return out
	}
	_, vsEpoll := g.refRatio(p, "epoll")
	_, vsNet := g.refRatio(p, "net")
	in := hCell{Text: "ok", Class: "l ok"}
	if p.Corrupted != 0 || p.Lost != 0 || p.ConnErrors != 0 {
		in = hCell{Text: fmt.Sprintf("BAD: %d corrupted, %d lost B, %d conn err", p.Corrupted, p.Lost, p.ConnErrors), Class: "l bad"}
	}
	out.Cells = append(out.Cells, in,
		hCell{Text: netPerReq(p.ServerCPUPerReqUs), Class: "strong"},
		hCell{Text: netSpreadPct(netServerCPU(p), len(p.Runs)), Class: "l muted"},
		hCell{Text: vsEpoll}, hCell{Text: vsNet},
		hCell{Text: netFmtQPS(p.QPS)}, hCell{Text: netPerReq(p.ClientCPUPerReqUs)},
		hCell{Text: latency(p.P50Ns)}, hCell{Text: latency(p.P99Ns)}, hCell{Text: latency(p.P999Ns)}, hCell{Text: latency(p.MaxNs)},
		hCell{Text: netFmtMBps(p.MBps)}, hCell{Text: strconv.Itoa(len(p.Runs))})
	return out
}

var netDefs = []hKV{
	{"server CPU-µs/req", "the headline: CPU time (user + system, every thread) the server process used per request, read from the kernel's process CPU clock around each measured window; lower is better. Median over the runs; ± and the whiskers give the runs' spread."},
	{"vs epoll, vs net", "the server CPU-µs per request divided by that engine's at the same point: below 1.00× costs less CPU per request."},
	{"QPS", "requests (messages echoed whole and verified) per second of the measured window, median over the runs."},
	{"client CPU-µs/req", "CPU time of the load generator per request."},
	{"P50 … max", "latency per request: from its send to the last byte of its echo; “-” when not measured (stream mode)."},
	{"MB/s", "echoed bytes per second; 1 MB = 10⁶ bytes."},
	{"integrity", "the load generator checks every echoed byte against what it sent: ok when no byte was corrupted or lost and no connection failed, in every run."},
	{"point", "one cell of the matrix: connections × message size × mode, every engine measured at it, interleaved run by run."},
}

func (m *netHTML) page() netPageData {
	r := m.v.r
	p := netPageData{Title: "iopath net bench", Generator: "iopath"}
	ver := r.Version
	if ver == "" {
		ver = r.Machine.IopathVersion
	}
	if ver != "" {
		p.Generator += " " + ver
	}
	var sub []string
	if !r.Started.IsZero() {
		sub = append(sub, r.Started.Format("2006-01-02 15:04:05 MST"))
	}
	if r.Machine.Kernel != "" || r.Machine.CPUModel != "" {
		sub = append(sub, strings.TrimPrefix(strings.TrimSpace(r.Machine.CPUModel+", Linux "+r.Machine.Kernel), ", "))
	}
	p.Subtitle = strings.Join(sub, " · ")
	p.Verdict, p.VerdictOK = m.v.integ.summary(), m.v.integ.ok() && m.v.integ.runs > 0
	if !strings.HasPrefix(p.Verdict[0], "INTEGRITY") {
		p.Verdict[0] = "Integrity: " + p.Verdict[0]
	}

	add := func(kv *[]hKV, k, v string) {
		if v = strings.TrimSpace(v); v != "" {
			*kv = append(*kv, hKV{k, v})
		}
	}
	mc := r.Machine
	kernel := mc.Arch
	if mc.Kernel != "" {
		kernel = "Linux " + mc.Kernel
		if mc.Arch != "" {
			kernel += " (" + mc.Arch + ")"
		}
	}
	add(&p.Machine, "kernel", kernel)
	cpu := mc.CPUModel
	if mc.Cores > 0 {
		cpu = strings.TrimPrefix(strings.TrimSpace(cpu+", "+plural(mc.Cores, "core")), ", ")
	}
	add(&p.Machine, "CPU", cpu)
	if mc.MemBytes > 0 {
		add(&p.Machine, "memory", units.RoughSize(mc.MemBytes))
	}
	add(&p.Machine, "io_uring", mc.IOURing)
	add(&p.Machine, "Go", mc.GoVersion)
	add(&p.Machine, "iopath", ver)

	if !r.Started.IsZero() {
		add(&p.Run, "started", r.Started.Format("2006-01-02 15:04:05 MST"))
	}
	add(&p.Run, "engines", strings.Join(m.v.engines, ", "))
	add(&p.Run, "matrix", netMatrixLine(r.Config))
	add(&p.Run, "runs", netRunsLine(r.Config))
	add(&p.Run, "pinning", netPinLine(r.Config))
	add(&p.Run, "address", r.Config.Addr)
	p.Command = r.Command

	var cpuC, qpsC, latC []hChart
	var noLat []string
	for _, mode := range m.v.modes {
		if len(m.groupsOf(mode)) == 0 {
			continue
		}
		cpuC = append(cpuC, m.cpuChart(mode))
		qpsC = append(qpsC, m.qpsChart(mode))
		if c, ok := m.p99Chart(mode); ok {
			latC = append(latC, c)
		} else {
			noLat = append(noLat, mode)
		}
	}
	const empty = "No results."
	latIntro := ""
	if len(noLat) > 0 {
		latIntro = "No latency was measured in mode " + strings.Join(noLat, ", ") + "."
	}
	p.Sections = []hSection{
		{ID: "cpu", Title: "Server CPU per request", Charts: cpuC, Empty: empty},
		{ID: "qps", Title: "Requests per second", Charts: qpsC, Empty: empty},
		{ID: "latency", Title: "P99 latency", Intro: latIntro, Charts: latC, Empty: "No latency was measured."},
	}
	var integC []hChart
	for _, mode := range m.v.modes {
		if len(m.groupsOf(mode)) > 0 {
			integC = append(integC, m.integrityChart(mode))
		}
	}
	p.Sections = append(p.Sections, hSection{ID: "integrity", Title: "Integrity", Charts: integC, Empty: empty})

	p.Columns = netColumns
	for gi := range m.v.groups {
		g := &m.v.groups[gi]
		for _, pt := range g.rows {
			p.Rows = append(p.Rows, m.row(g, pt))
		}
	}
	for _, s := range r.Skipped {
		p.Skipped = append(p.Skipped, hKV{s.Engine, oneLine(s.Reason)})
	}
	for _, n := range r.Notes {
		p.Notes = append(p.Notes, oneLine(n))
	}
	p.Defs = netDefs
	return p
}

var netPage = template.Must(template.New("net").Parse(`<!DOCTYPE html>
<html lang="en">
` + pageHead + `<style>
:root{--fg:#1d232a;--muted:#5d6773;--line:#dfe3e8;--bg:#f6f7f9;--card:#fff;--err:#c0392b;--ok:#2e7d32;--accent:#2f5d8a}
*{box-sizing:border-box}
html{color-scheme:light;-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 28px 56px}
header h1{font-size:25px;font-weight:650;margin:0 0 2px;letter-spacing:-.01em}
header .sub{color:var(--muted);margin:0 0 16px}
h2{font-size:19px;font-weight:650;margin:34px 0 6px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;font-weight:600;margin:0 0 2px}
nav{font-size:13.5px;margin:8px 0 0}
nav a{color:var(--accent);text-decoration:none;margin-right:14px;white-space:nowrap}
nav a:hover{text-decoration:underline}
.verdict{border-radius:10px;padding:10px 16px;margin:0 0 14px;font-weight:600;border:1px solid}
.verdict p{margin:2px 0;overflow-wrap:anywhere}
.verdict.ok{background:#edf7ee;border-color:#a9d3ad;color:var(--ok)}
.verdict.bad{background:#fdecea;border-color:#e8aaa2;color:var(--err);font-weight:750}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 18px 12px;margin:14px 0}
.meta{display:grid;grid-template-columns:repeat(auto-fit,minmax(330px,1fr));gap:14px}
.meta .card{margin:0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:0;font-size:14px}
dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0;overflow-wrap:anywhere}
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace;font-size:13px}
pre.cmd{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:6px 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
figure{margin:0}
figcaption{color:var(--muted);font-size:13px;margin:0 0 6px;max-width:110ch}
.intro{color:var(--muted);font-size:13.5px;margin:4px 0}
` + chartCSS + `.chart .nm{font-size:10.5px;fill:#8a939c}
.chart .lg{font-size:12px}
.chart .tl{font-size:11px;fill:#39424c;font-weight:600}
.chart .tl.ok{fill:#fff;font-size:13px}
.chart .tl.bad{fill:#fff;font-weight:700}
.chart .bar:hover rect,.chart .bar:hover circle,.chart .tile:hover rect{opacity:.8}
.empty{color:var(--muted);font-style:italic}
.table-wrap{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:10px;margin:14px 0}
table{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums;width:100%}
th,td{padding:4px 8px;text-align:right;white-space:nowrap;border-bottom:1px solid #edf0f3}
th{position:sticky;top:0;background:#f0f2f5;font-weight:600;color:#39424c;border-bottom:1px solid var(--line)}
th.l,td.l{text-align:left}
tr:hover td{background:#f3f6fa}
td.strong{font-weight:650}
td.muted{color:var(--muted)}
td.bad{color:var(--err);font-weight:700}
td.ok{color:var(--ok)}
td.error{color:var(--err);text-align:left;white-space:pre-wrap;min-width:30ch}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:-1px}
ul.notes{margin:6px 0;padding-left:20px}
ul.notes li{margin:2px 0;overflow-wrap:anywhere}
dl.defs{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;font-size:13.5px;margin:8px 0}
dl.defs dt{font-weight:600}
dl.defs dd{margin:0;color:#39424c}
footer{color:var(--muted);font-size:12.5px;margin-top:36px}
@media (max-width:600px){main{padding:16px 12px 40px}.meta{grid-template-columns:1fr}}
@media print{
@page{size:A4 landscape;margin:10mm}
body{background:#fff;font-size:10pt}
main{max-width:none;padding:0}
nav{display:none}
.card{border:none;padding:0;margin:8px 0}
figure,.card,tr{break-inside:avoid}
h2{break-after:avoid}
.table-wrap{overflow:visible;border:none}
table{font-size:7pt}
th,td{padding:1px 3px}
th{position:static}
tr:hover td{background:none}
}
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{with .Subtitle}}<p class="sub">{{.}}</p>{{end}}
</header>
<div class="verdict {{if .VerdictOK}}ok{{else}}bad{{end}}" role="status">{{range .Verdict}}<p>{{.}}</p>{{end}}</div>
<div class="meta">
<section class="card"><h3>Machine</h3>
{{if .Machine}}<dl class="kv">{{range .Machine}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>{{else}}<p class="empty">not recorded</p>{{end}}
</section>
<section class="card"><h3>Run</h3>
{{if .Run}}<dl class="kv">{{range .Run}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>{{end}}
{{with .Command}}<pre class="cmd"><code>{{.}}</code></pre>{{end}}
</section>
</div>
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}<a href="#results">Results</a>{{if .Skipped}}<a href="#skipped">Skipped</a>{{end}}{{if .Notes}}<a href="#notes">Notes</a>{{end}}<a href="#definitions">Definitions</a></nav>
{{range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{with .Intro}}<p class="intro">{{.}}</p>{{end}}
{{if .Charts}}{{range .Charts}}<figure class="card" id="{{.ID}}">
<h3>{{.Title}}</h3>
<figcaption>{{.Caption}}</figcaption>
{{.SVG}}
</figure>
{{end}}{{else}}<p class="empty">{{.Empty}}</p>{{end}}
</section>
{{end}}
<section id="results">
<h2>Results</h2>
{{if .Rows}}<div class="table-wrap"><table>
<thead><tr>{{range .Columns}}<th class="{{.Class}}"{{with .Title}} title="{{.}}"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{with .Class}} class="{{.}}"{{end}}>{{range .Cells}}<td{{with .Class}} class="{{.}}"{{end}}{{with .Title}} title="{{.}}"{{end}}>{{if .Swatch}}<span class="sw" style="{{.Style}}"></span>{{end}}{{.Text}}</td>{{end}}{{if .Err}}<td class="error" colspan="{{.ErrSpan}}">error: {{.Err}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>{{else}}<p class="empty">No results.</p>{{end}}
</section>
{{if .Skipped}}<section id="skipped">
<h2>Skipped engines</h2>
<dl class="defs">{{range .Skipped}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>
</section>{{end}}
{{if .Notes}}<section id="notes">
<h2>Notes</h2>
<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
</section>{{end}}
<section id="definitions">
<h2>Definitions</h2>
<dl class="defs">{{range .Defs}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>
</section>
<footer>Generated by {{.Generator}}. This page is self-contained: it loads nothing from anywhere.</footer>
</main>
</body>
</html>
`))
