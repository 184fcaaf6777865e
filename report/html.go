package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/units"
)

// HTML writes r as one self-contained HTML page for people: the machine,
// the command and the file; charts of throughput, CPU cost and latency per
// engine and cache state (and, for a sweep, throughput against block size
// and queue depth); the full results table; and the notes.
//
// The page works offline and fetches nothing: the charts are inline SVG
// drawn here, there is no script, no web font and no external image, and
// a Content-Security-Policy meta tag blocks (and makes the browser log) any
// attempt to load something. Everything taken from the report is escaped.
//
// Charts are <svg class="chart" data-chart=ID data-series=N>, each series
// a <g class="series" data-name=NAME>:
//
//	throughput-CACHE        GiB/s bars per engine, fio twins hatched beside theirs
//	cpu-CACHE               CPU-s per GiB bars, io_uring kernel-thread share darker
//	latency-CACHE[-GROUP]   P50…P99.99 per engine on a log scale, one per workload
//	throughput-vs-bs-CACHE[-PANEL]  when more than one block size was measured
//	throughput-vs-qd-CACHE[-GROUP]  when more than one queue depth was measured
//
// GROUP names the workload (block size, and pattern, workers or consume
// mode when those vary) and is left out when there is one; PANEL is the
// same without the block size.
func HTML(w io.Writer, r *bench.Report) error {
	m := newHModel(r)
	var b bytes.Buffer
	b.Grow(64 << 10)
	if err := htmlPage.Execute(&b, m.page()); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
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

// hGroup is a workload without its queue depth: the bars of one x group,
// one latency chart. Engines with a queue appear at their deepest depth.
type hGroup struct {
	label, slug, desc string
	bs                int
	panel             *hPanel
}

// hPanel is a workload without block size and queue depth: one line in a
// throughput-vs-block-size chart per series.
type hPanel struct {
	key, label, slug string
}

type hRow struct {
	r *bench.Result
	s *hSeries
	g *hGroup
}

type hKey struct {
	cache string
	g     *hGroup
	s     *hSeries
}

type hModel struct {
	rep    *bench.Report
	rows   []hRow
	series []*hSeries
	groups []*hGroup
	panels []*hPanel
	caches []string
	cells  map[hKey][]*hRow
	common string // the workload dimensions every row shares
	ids    map[string]bool
}

func isFio(r *bench.Result) bool { return r.Tool == bench.ToolFio }

func seriesName(r *bench.Result) string {
	if isFio(r) {
		return "fio " + r.Engine
	}
	return r.Engine
}

func newHModel(rep *bench.Report) *hModel {
	m := &hModel{rep: rep, cells: map[hKey][]*hRow{}, ids: map[string]bool{}}
	res := rep.Results

	// Series: iopath engines in order of appearance, each followed by the
	// fio rows that mirror it; fio rows with no iopath twin last.
	byName := map[string]*hSeries{}
	var iop, fio []*hSeries
	for i := range res {
		r := &res[i]
		name := seriesName(r)
		if byName[name] != nil {
			continue
		}
		s := &hSeries{name: name, fio: isFio(r), base: r.Engine}
		if s.fio {
			s.base = r.Twin
			if s.base == "" {
				s.base = hFioTwins[r.Engine]
			}
			if s.base == "" {
				s.base = name
			}
			fio = append(fio, s)
		} else {
			iop = append(iop, s)
		}
		byName[name] = s
	}
	for _, s := range iop {
		m.series = append(m.series, s)
		for _, f := range fio {
			if f.base == s.name {
				m.series = append(m.series, f)
			}
		}
	}
	for _, f := range fio {
		if !slices.Contains(m.series, f) {
			m.series = append(m.series, f)
		}
	}
	colors := map[string]string{}
	next := 0
	for i, s := range m.series {
		s.idx = i
		c, ok := colors[s.base]
		if !ok {
			c, ok = hEngineColors[s.base]
			if !ok {
				c = hExtraColors[next%len(hExtraColors)]
				next++
			}
			colors[s.base] = c
		}
		s.color, s.light, s.dark = c, hMix(c, "#ffffff", 0.72), hMix(c, "#000000", 0.45)
	}

	// Which workload dimensions vary decides how groups are labelled.
	distinct := func(f func(r *bench.Result) string) bool {
		seen := map[string]bool{}
		for i := range res {
			seen[f(&res[i])] = true
		}
		return len(seen) > 1
	}
	vPattern := distinct(func(r *bench.Result) string { return r.Pattern })
	vBS := distinct(func(r *bench.Result) string { return strconv.Itoa(r.BS) })
	vWorkers := distinct(func(r *bench.Result) string { return strconv.Itoa(r.Workers) })
	vConsume := distinct(func(r *bench.Result) string { return r.Consume })
	parts := func(r *bench.Result, all, withBS bool) []string {
		var p []string
		if r.Pattern != "" && (all || vPattern) {
			p = append(p, r.Pattern)
		}
		if withBS && r.BS > 0 && (all || vBS) {
			p = append(p, units.FormatSize(int64(r.BS)))
		}
		if r.Workers > 0 && (all || vWorkers) {
			p = append(p, plural(r.Workers, "worker"))
		}
		if r.Consume != "" && (all || vConsume) {
			p = append(p, "consume "+r.Consume)
		}
		return p
	}
	if len(res) > 0 {
		r := &res[0]
		var c []string
		if r.Pattern != "" && !vPattern {
			c = append(c, r.Pattern)
		}
		if r.BS > 0 && !vBS {
			c = append(c, "bs "+units.FormatSize(int64(r.BS)))
		}
		if r.Workers > 0 && !vWorkers {
			c = append(c, plural(r.Workers, "worker"))
		}
		if r.Consume != "" && !vConsume {
			c = append(c, "consume "+r.Consume)
		}
		m.common = strings.Join(c, " · ")
	}

	groups := map[string]*hGroup{}
	panels := map[string]*hPanel{}
	seenCache := map[string]bool{}
	m.rows = make([]hRow, len(res))
	for i := range res {
		r := &res[i]
		pk := fmt.Sprintf("%s|%d|%s", r.Pattern, r.Workers, r.Consume)
		p := panels[pk]
		if p == nil {
			pp := parts(r, false, false)
			p = &hPanel{key: pk, label: strings.Join(pp, " · "), slug: hSlug(strings.Join(pp, " "))}
			panels[pk] = p
			m.panels = append(m.panels, p)
		}
		gk := fmt.Sprintf("%s|%d", pk, r.BS)
		g := groups[gk]
		if g == nil {
			gp := parts(r, false, true)
			g = &hGroup{label: strings.Join(gp, " · "), slug: hSlug(strings.Join(gp, " ")), bs: r.BS, panel: p,
				desc: strings.Join(parts(r, true, true), " · ")}
			groups[gk] = g
			m.groups = append(m.groups, g)
		}
		if !seenCache[r.Cache] {
			seenCache[r.Cache] = true
			m.caches = append(m.caches, r.Cache)
		}
		m.rows[i] = hRow{r: r, s: byName[seriesName(r)], g: g}
		k := hKey{r.Cache, g, m.rows[i].s}
		m.cells[k] = append(m.cells[k], &m.rows[i])
	}
	return m
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

// id returns a unique chart id made of parts.
func (m *hModel) id(parts ...string) string {
	var p []string
	for _, s := range parts {
		if s = hSlug(s); s != "" {
			p = append(p, s)
		}
	}
	id := strings.Join(p, "-")
	if id == "" {
		id = "chart"
	}
	for n := 2; m.ids[id]; n++ {
		id = fmt.Sprintf("%s-%d", strings.Join(p, "-"), n)
	}
	m.ids[id] = true
	return id
}

// pick returns, per series in page order, the row shown for it in the
// charts of (cache, g): the one at the deepest queue depth. deepest
// lists the depths chosen for series measured at more than one.
func (m *hModel) pick(cache string, g *hGroup) (rows []*hRow, deepest []string) {
	for _, s := range m.series {
		cell := m.cells[hKey{cache, g, s}]
		if len(cell) == 0 {
			continue
		}
		best := cell[0]
		qds := map[int]bool{}
		for _, row := range cell {
			qds[row.r.QD] = true
			if row.r.QD > best.r.QD {
				best = row
			}
		}
		rows = append(rows, best)
		if len(qds) > 1 {
			deepest = append(deepest, fmt.Sprintf("%s at qd %d", s.name, best.r.QD))
		}
	}
	return rows, deepest
}

func (m *hModel) groupsIn(cache string) []*hGroup {
	var gs []*hGroup
	for _, g := range m.groups {
		for _, s := range m.series {
			if len(m.cells[hKey{cache, g, s}]) > 0 {
				gs = append(gs, g)
				break
			}
		}
	}
	return gs
}

// --- formatting

func hGiB(bps float64) float64 { return hFiniteOr0(bps) / (1 << 30) }

// hWorkload describes a row's workload in full.
func hWorkload(r *bench.Result) string {
	return strings.Join(workloadParts(r.Pattern, r.BS, r.Workers, r.QD, r.Consume), " · ")
}

// hNoisy says which runs were noisy and why.
func hNoisy(r *bench.Result) string {
	if r.NoisyRuns == 0 {
		return ""
	}
	s := fmt.Sprintf("%d of %d runs noisy (kept in the figures)", r.NoisyRuns, len(r.Runs))
	var why []string
	for _, run := range r.Runs {
		if run.Noisy != "" && !slices.Contains(why, run.Noisy) {
			why = append(why, run.Noisy)
		}
	}
	if len(why) > 0 {
		s += ": " + strings.Join(why, "; ")
	}
	return s
}

// hTip is the tooltip of a row's bar or point.
func hTip(row *hRow, lines ...string) string {
	r := row.r
	head := fmt.Sprintf("%s · %s · %s", row.s.name, r.Cache, hWorkload(r))
	if r.Error != "" {
		return head + "\n" + failure(r)
	}
	out := append([]string{head}, lines...)
	if n := hNoisy(r); n != "" {
		out = append(out, n)
	}
	return strings.Join(out, "\n")
}

func hThroughputLine(r *bench.Result) string {
	s := fmt.Sprintf("%s GiB/s", gibps(r.BytesPerS))
	if len(r.Runs) > 1 {
		s += fmt.Sprintf(" (min %s, max %s, %d runs)", gibps(r.BytesPerSMin), gibps(r.BytesPerSMax), len(r.Runs))
	}
	if r.VsFio > 0 && r.Twin != "" {
		s += fmt.Sprintf("; %.2f× fio %s", r.VsFio, r.Twin)
	}
	return s
}

// --- charts

type hChart struct {
	ID, Title, Caption string
	SVG                template.HTML
}

type hSection struct {
	ID, Title string
	Intro     string
	Grid      bool
	Charts    []hChart
	Empty     string
}

func cacheTitle(c string) string {
	if c == "" {
		return "cache state unknown"
	}
	return c + " cache"
}

func (m *hModel) barGroups(cache string, bar func(row *hRow) hBar) ([]hBarGroup, []string) {
	var groups []hBarGroup
	var deep []string
	for _, g := range m.groupsIn(cache) {
		rows, d := m.pick(cache, g)
		deep = append(deep, d...)
		bg := hBarGroup{label: g.label}
		for _, row := range rows {
			b := bar(row)
			b.s = row.s
			if row.r.Error != "" {
				gap := "error"
				if notRun(row.r) {
					gap = "not run"
				}
				b = hBar{s: row.s, err: gap, tip: hTip(row)}
			}
			bg.bars = append(bg.bars, b)
		}
		groups = append(groups, bg)
	}
	return groups, hUniq(deep)
}

func hUniq(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func (m *hModel) deepNote(deep []string) string {
	if len(deep) == 0 {
		return ""
	}
	return " Engines measured at several queue depths are shown at the deepest: " + strings.Join(deep, ", ") + "."
}

func (m *hModel) throughputCharts() []hChart {
	var out []hChart
	for _, c := range m.caches {
		groups, deep := m.barGroups(c, func(row *hRow) hBar {
			r := row.r
			b := hBar{v: hGiB(r.BytesPerS), valueDecimals: 2, noisy: hNoisy(r), tip: hTip(row, hThroughputLine(r))}
			if len(r.Runs) > 1 {
				b.lo, b.hi = hGiB(r.BytesPerSMin), hGiB(r.BytesPerSMax)
			}
			return b
		})
		id := m.id("throughput", c)
		title := "Throughput — " + cacheTitle(c)
		out = append(out, hChart{ID: id, Title: title,
			Caption: m.scope() + "Median GiB/s over the runs (higher is better); the whisker spans the slowest to the fastest run. " +
				"Hatched bars are fio running the same workload beside the iopath engine of the same colour. " +
				"A shaded gap labelled “error” is a row that failed (hover for the message)." + m.deepNote(deep),
			SVG: template.HTML(hBarChart(hBarSpec{id: id, title: title, unit: "GiB/s", groups: groups, series: m.series}))})
	}
	return out
}

func (m *hModel) cpuCharts() []hChart {
	var out []hChart
	share := false
	for _, row := range m.rows {
		share = share || row.r.IOThreadCPUSPerGiB > 0
	}
	for _, c := range m.caches {
		groups, deep := m.barGroups(c, func(row *hRow) hBar {
			r := row.r
			line := fmt.Sprintf("%s CPU-s/GiB (usr %s%%, sys %s%%)", fixed(r.CPUSPerGiB, 3), fixed(r.UsrPct, 0), fixed(r.SysPct, 0))
			if r.IOThreadCPUSPerGiB > 0 {
				line += fmt.Sprintf("\nof which io_uring kernel threads: %s CPU-s/GiB", fixed(r.IOThreadCPUSPerGiB, 3))
			}
			return hBar{v: hFiniteOr0(r.CPUSPerGiB), share: hFiniteOr0(r.IOThreadCPUSPerGiB), valueDecimals: 3,
				noisy: hNoisy(r), tip: hTip(row, line)}
		})
		id := m.id("cpu", c)
		title := "CPU cost — " + cacheTitle(c)
		caption := m.scope() + "User + system CPU seconds per GiB delivered (lower is better), median over the runs."
		if share {
			caption += " The darker bottom of a bar is the part spent by io_uring's kernel threads (iou-sqp, iou-wrk) for the run; it is included in the bar. fio's figures leave those threads out."
		}
		out = append(out, hChart{ID: id, Title: title, Caption: caption + m.deepNote(deep),
			SVG: template.HTML(hBarChart(hBarSpec{id: id, title: title, unit: "CPU-s per GiB", groups: groups, series: m.series,
				shareLabel: "io_uring kernel threads"}))})
	}
	return out
}

// scope names the workload a chart covers when every row shares it.
func (m *hModel) scope() string {
	if m.common == "" {
		return ""
	}
	return "Workload: " + m.common + ". "
}

var hPercentiles = []string{"P50", "P90", "P99", "P99.9", "P99.99"}

func hLat(r *bench.Result) []int64 {
	return []int64{r.LatP50Ns, r.LatP90Ns, r.LatP99Ns, r.LatP999Ns, r.LatP9999Ns}
}

func (m *hModel) latencyCharts() []hChart {
	var out []hChart
	multi := len(m.groups) > 1
	for _, c := range m.caches {
		for _, g := range m.groupsIn(c) {
			rows, deep := m.pick(c, g)
			var lines []hLine
			var missing []string
			for _, row := range rows {
				r := row.r
				l := hLine{s: row.s}
				any := false
				for i, ns := range hLat(r) {
					if r.Error != "" {
						break
					}
					tip := hTip(row, fmt.Sprintf("%s latency: %s", hPercentiles[i], latency(ns)),
						fmt.Sprintf("P50 %s · P90 %s · P99 %s · P99.9 %s · P99.99 %s · max %s",
							latency(r.LatP50Ns), latency(r.LatP90Ns), latency(r.LatP99Ns), latency(r.LatP999Ns),
							latency(r.LatP9999Ns), latency(r.LatMaxNs)))
					l.pts = append(l.pts, hPoint{x: float64(i), y: float64(ns), tip: tip})
					any = any || ns > 0
				}
				if !any {
					why := "not measured"
					switch {
					case notRun(r):
						why = "not run: interrupted"
					case r.Error != "":
						why = "error"
					}
					missing = append(missing, row.s.name+" ("+why+")")
					continue
				}
				lines = append(lines, l)
			}
			if len(lines) == 0 {
				continue
			}
			gslug := ""
			title := "Latency — " + cacheTitle(c)
			if multi {
				gslug = g.slug
				title += " · " + g.label
			}
			id := m.id("latency", c, gslug)
			caption := "Per-block latency percentiles (log scale, lower is better), over all runs' blocks together; values not measured are skipped."
			if multi {
				caption = "Workload: " + g.desc + ". " + caption
			} else {
				caption = m.scope() + caption
			}
			if len(missing) > 0 {
				caption += " Not shown: " + strings.Join(missing, ", ") + "."
			}
			caption += m.deepNote(deep)
			out = append(out, hChart{ID: id, Title: title, Caption: caption,
				SVG: template.HTML(hLineChart(hLineSpec{id: id, title: title, width: hSmallW,
					x:     hAxisSpec{label: "percentile", cats: hPercentiles},
					y:     hAxisSpec{label: "latency (log)", log10: true, fmt: hLatencyTick},
					lines: lines}))})
		}
	}
	return out
}

// bsCharts draws throughput against block size, per cache state and
// panel, where more than one block size was measured.
func (m *hModel) bsCharts() []hChart {
	var out []hChart
	multi := len(m.panels) > 1
	for _, c := range m.caches {
		for _, p := range m.panels {
			var gs []*hGroup
			for _, g := range m.groupsIn(c) {
				if g.panel == p {
					gs = append(gs, g)
				}
			}
			if len(gs) < 2 {
				continue
			}
			slices.SortStableFunc(gs, func(a, b *hGroup) int { return a.bs - b.bs })
			var ticks []float64
			per := map[*hSeries][]hPoint{}
			var deep []string
			for _, g := range gs {
				ticks = append(ticks, float64(g.bs))
				rows, d := m.pick(c, g)
				deep = append(deep, d...)
				for _, row := range rows {
					r := row.r
					pt := hPoint{x: float64(g.bs), tip: hTip(row, hThroughputLine(r))}
					if r.Error != "" {
						pt.err = r.Error
					} else {
						pt.y = hGiB(r.BytesPerS)
					}
					per[row.s] = append(per[row.s], pt)
				}
			}
			var lines []hLine
			for _, s := range m.series {
				if pts := per[s]; len(pts) > 0 {
					lines = append(lines, hLine{s: s, pts: pts})
				}
			}
			pslug, title := "", "Throughput vs block size — "+cacheTitle(c)
			if multi {
				pslug = p.slug
				title += " · " + p.label
			}
			id := m.id("throughput-vs-bs", c, pslug)
			out = append(out, hChart{ID: id, Title: title,
				Caption: "Median GiB/s at each block size (log₂ axis); dashed lines with hollow points are fio. × marks a failed row." +
					m.deepNote(hUniq(deep)),
				SVG: template.HTML(hLineChart(hLineSpec{id: id, title: title, width: hSmallW,
					x: hAxisSpec{label: "block size (log₂ scale)", log2: true, ticks: ticks, fmt: func(v float64) string { return units.FormatSize(int64(v)) }},
					y: hAxisSpec{label: "GiB/s"}, lines: lines}))})
		}
	}
	return out
}

// qdCharts draws throughput against queue depth, per cache state and
// workload, where more than one depth was measured. Engines with no queue
// (QD 0: one request in flight per worker) are drawn as flat dotted lines
// at their throughput for the same workload, so that each depth can be
// read against them; fio twins of those engines are left out, as their
// bars show them.
func (m *hModel) qdCharts() []hChart {
	var out []hChart
	multi := len(m.groups) > 1
	for _, c := range m.caches {
		for _, g := range m.groupsIn(c) {
			qds := map[int]bool{}
			for _, s := range m.series {
				for _, row := range m.cells[hKey{c, g, s}] {
					if row.r.QD > 0 {
						qds[row.r.QD] = true
					}
				}
			}
			if len(qds) < 2 {
				continue
			}
			var ticks []float64
			for q := range qds {
				ticks = append(ticks, float64(q))
			}
			slices.Sort(ticks)
			var lines []hLine
			var refs []string
			for _, s := range m.series {
				cell := m.cells[hKey{c, g, s}]
				var pts []hPoint
				var flat *hRow
				for _, row := range cell {
					r := row.r
					if r.QD == 0 {
						if flat == nil {
							flat = row
						}
						continue
					}
					pt := hPoint{x: float64(r.QD), tip: hTip(row, hThroughputLine(r))}
					if r.Error != "" {
						pt.err = r.Error
					} else {
						pt.y = hGiB(r.BytesPerS)
					}
					pts = append(pts, pt)
				}
				switch {
				case len(pts) > 0:
					slices.SortStableFunc(pts, func(a, b hPoint) int { return int(a.x - b.x) })
					lines = append(lines, hLine{s: s, pts: pts})
				case flat != nil && !s.fio && flat.r.Error == "":
					lines = append(lines, hLine{s: s, ref: true, refY: hGiB(flat.r.BytesPerS),
						refTip: hTip(flat, hThroughputLine(flat.r), "no queue: one request in flight per worker")})
					refs = append(refs, s.name)
				}
			}
			gslug, title := "", "Throughput vs queue depth — "+cacheTitle(c)
			if multi {
				gslug = g.slug
				title += " · " + g.label
			}
			id := m.id("throughput-vs-qd", c, gslug)
			caption := "Median GiB/s at each queue depth per worker (log₂ axis); dashed lines with hollow points are fio."
			if multi {
				caption = "Workload: " + g.desc + ". " + caption
			}
			if len(refs) > 0 {
				caption += " Dotted flat lines: engines with no queue (" + strings.Join(refs, ", ") +
					") at their throughput for this workload, for reference; their fio twins are in the bars above."
			}
			out = append(out, hChart{ID: id, Title: title, Caption: caption,
				SVG: template.HTML(hLineChart(hLineSpec{id: id, title: title, width: hSmallW,
					x: hAxisSpec{label: "queue depth per worker (log₂ scale)", log2: true, ticks: ticks, fmt: func(v float64) string { return strconv.Itoa(int(v)) }},
					y: hAxisSpec{label: "GiB/s"}, lines: lines}))})
		}
	}
	return out
}

// --- page

type hKV struct{ K, V string }

type hCell struct {
	Text, Class, Title string
	Style              template.CSS // a swatch's colours, from hEngineColors only
	Swatch             bool
}

type hTRow struct {
	Class   string
	Cells   []hCell
	Err     string
	ErrSpan int
}

type hPageData struct {
	Title     string
	Subtitle  string
	Machine   []hKV
	Run       []hKV
	Command   string
	Sections  []hSection
	Columns   []hCell
	Rows      []hTRow
	Notes     []string
	Defs      []hKV
	Generator string
}

var hColumns = []hCell{
	{Text: "engine", Class: "l"}, {Text: "cache", Class: "l"}, {Text: "pattern", Class: "l"}, {Text: "bs"},
	{Text: "workers"}, {Text: "qd", Title: "queue depth per worker; 0: no queue"}, {Text: "consume", Class: "l"},
	{Text: "GiB/s", Title: "median over the runs"}, {Text: "min–max", Class: "l"}, {Text: "vs fio", Title: "median throughput ÷ the fio twin's"},
	{Text: "CPU-s/GiB", Title: "user+system CPU seconds per GiB delivered"}, {Text: "io thr", Title: "of CPU-s/GiB: io_uring kernel threads (iou-sqp, iou-wrk), included"},
	{Text: "usr%"}, {Text: "sys%"},
	{Text: "P50"}, {Text: "P90"}, {Text: "P99"}, {Text: "P99.9"}, {Text: "P99.99"}, {Text: "max"},
	{Text: "syscalls", Title: "per pass over the file"}, {Text: "minflt"}, {Text: "majflt"}, {Text: "vcsw"}, {Text: "ivcsw"},
	{Text: "checksum", Class: "l"}, {Text: "runs", Class: "l"},
}

const hErrCol = 7 // cells before the error message in a failed row

var hDefs = []hKV{
	{"GiB/s", "bytes delivered to the consumer per second of wall time, open and close included, median over the runs; 1 GiB = 2³⁰ bytes. The whisker and min–max span the slowest and fastest run."},
	{"CPU-s/GiB", "user + system CPU seconds per GiB delivered: lower is better, and steadier than GiB/s on a busy machine. For io_uring it includes the kernel threads (iou-sqp, iou-wrk) working for the run; fio's figure does not."},
	{"usr% sys%", "user and system CPU time as % of one core over the wall time."},
	{"P50 … P99.99", "latency per block: request issued to data available to the consumer, over all runs' blocks together; “-” when not measured."},
	{"syscalls", "per pass over the file, counted at the engine's own call sites, not the Go runtime's."},
	{"minflt majflt", "minor and major page faults per pass (major: the page was read from disk)."},
	{"vcsw ivcsw", "voluntary and involuntary context switches per pass."},
	{"checksum", "ok: every run delivered the reference (pread) bytes; MISMATCH: a run did not; n/a: not checked (consume none or touch, the null engine, fio)."},
	{"qd", "queue depth per worker; 0 for engines with no queue (one request in flight per worker)."},
	{"fio rows", "fio running the same workload with the named ioengine, beside the iopath engine it mirrors; hatched bars and dashed lines in the charts."},
	{"noisy", "a run during which another process took more than 10% of a core, or a warm run lost cached pages; kept in the figures and marked ▲."},
}

func (m *hModel) page() hPageData {
	r := m.rep
	p := hPageData{Title: "iopath bench report"}
	if r.File.Path != "" {
		p.Title = "iopath bench: " + r.File.Path
	}
	var sub []string
	if !r.Started.IsZero() {
		sub = append(sub, r.Started.Format("2006-01-02 15:04:05 MST"))
	}
	if r.Machine.Kernel != "" || r.Machine.CPUModel != "" {
		sub = append(sub, strings.TrimSpace(r.Machine.CPUModel+", Linux "+r.Machine.Kernel))
	}
	p.Subtitle = strings.Join(sub, " · ")

	mc := r.Machine
	add := func(kv *[]hKV, k, v string) {
		if v = strings.TrimSpace(v); v != "" {
			*kv = append(*kv, hKV{k, v})
		}
	}
	kernel := ""
	if mc.Kernel != "" {
		kernel = "Linux " + mc.Kernel
		if mc.Arch != "" {
			kernel += " (" + mc.Arch + ")"
		}
	} else {
		kernel = mc.Arch
	}
	add(&p.Machine, "kernel", kernel)
	cpu := mc.CPUModel
	if mc.Cores > 0 {
		cpu = strings.TrimSpace(cpu + ", " + plural(mc.Cores, "core"))
		cpu = strings.TrimPrefix(cpu, ", ")
	}
	add(&p.Machine, "CPU", cpu)
	var mem []string
	if mc.MemBytes > 0 {
		mem = append(mem, units.RoughSize(mc.MemBytes))
	}
	if mc.PageSize > 0 {
		mem = append(mem, units.FormatSize(int64(mc.PageSize))+" pages")
	}
	if mc.THP != "" {
		mem = append(mem, "THP "+mc.THP)
	}
	add(&p.Machine, "memory", strings.Join(mem, ", "))
	fs := mc.Filesystem
	if mc.Device != "" {
		fs = strings.TrimSpace(fs + " on " + mc.Device)
	}
	add(&p.Machine, "filesystem", fs)
	add(&p.Machine, "io_uring", mc.IOURing)
	if mc.LatencyClock != "" {
		add(&p.Machine, "latency clock", mc.LatencyClock)
	}
	add(&p.Machine, "Go", mc.GoVersion)
	add(&p.Machine, "iopath", mc.IopathVersion)
	if r.Fio != nil {
		add(&p.Machine, "fio", strings.TrimSpace(r.Fio.Version+" ("+r.Fio.Path+")"))
	}

	if r.File.Path != "" || r.File.SizeBytes > 0 {
		f := r.File.Path
		extra := []string{units.FormatSize(r.File.SizeBytes)}
		if r.File.Temporary {
			extra = append(extra, "temporary: created for this run and removed after")
		}
		add(&p.Run, "file", f+" ("+strings.Join(extra, ", ")+")")
	}
	if !r.Started.IsZero() {
		add(&p.Run, "started", r.Started.Format("2006-01-02 15:04:05 MST"))
	}
	var sw []string
	list := func(what string, v []int, f func(int) string) {
		if len(v) == 0 {
			return
		}
		var s []string
		for _, x := range v {
			s = append(s, f(x))
		}
		sw = append(sw, what+" "+strings.Join(s, ", "))
	}
	list("block sizes", r.Sweep.BlockSizes, func(v int) string { return units.FormatSize(int64(v)) })
	list("workers", r.Sweep.Workers, strconv.Itoa)
	list("queue depths", r.Sweep.QueueDepths, strconv.Itoa)
	if len(r.Sweep.Caches) > 0 {
		sw = append(sw, "caches "+strings.Join(r.Sweep.Caches, ", "))
	}
	add(&p.Run, "sweep", strings.Join(sw, " · "))
	var modes []string
	for _, row := range m.rows {
		if l := consumeLine(row.r.Consume); l != "" && !slices.Contains(modes, l) {
			modes = append(modes, l)
		}
	}
	add(&p.Run, "consume", strings.Join(modes, "; "))
	fails, noisy := 0, 0
	for _, row := range m.rows {
		if row.r.Error != "" {
			fails++
		}
		if row.r.NoisyRuns > 0 {
			noisy++
		}
	}
	summary := plural(len(r.Results), "result")
	if fails > 0 {
		summary += fmt.Sprintf(", %d failed", fails)
	}
	if noisy > 0 {
		summary += fmt.Sprintf(", %d with noisy runs", noisy)
	}
	add(&p.Run, "results", summary)
	p.Command = r.Command

	empty := "No results."
	p.Sections = append(p.Sections,
		hSection{ID: "throughput", Title: "Throughput", Charts: m.throughputCharts(), Empty: empty},
		hSection{ID: "cpu", Title: "CPU cost", Charts: m.cpuCharts(), Empty: empty},
		hSection{ID: "latency", Title: "Latency", Grid: true, Charts: m.latencyCharts(), Empty: "No latency was measured."})
	if bs := m.bsCharts(); len(bs) > 0 {
		p.Sections = append(p.Sections, hSection{ID: "sweep-bs", Title: "Block size sweep", Grid: true, Charts: bs})
	}
	if qd := m.qdCharts(); len(qd) > 0 {
		p.Sections = append(p.Sections, hSection{ID: "sweep-qd", Title: "Queue depth sweep", Grid: true, Charts: qd})
	}

	p.Columns = hColumns
	for _, row := range m.rows {
		p.Rows = append(p.Rows, hTableRow(row))
	}
	p.Notes = m.notes()
	p.Defs = hDefs
	p.Generator = "iopath"
	if mc.IopathVersion != "" {
		p.Generator += " " + mc.IopathVersion
	}
	return p
}

func hTableRow(row hRow) hTRow {
	r := row.r
	s := row.s
	sw := "background:" + s.color
	if s.fio {
		sw = fmt.Sprintf("background:repeating-linear-gradient(45deg,%s 0 2px,%s 2px 5px)", s.color, s.light)
	}
	eng := hCell{Text: s.name, Class: "l eng", Style: template.CSS(sw), Swatch: true}
	if s.fio && r.Twin != "" {
		eng.Title = "fio " + r.Engine + ", twin of iopath's " + r.Twin
	}
	out := hTRow{}
	if s.fio {
		out.Class = "fio"
	}
	bs := ""
	if r.BS > 0 {
		bs = units.FormatSize(int64(r.BS))
	}
	out.Cells = []hCell{eng, {Text: r.Cache, Class: "l"}, {Text: r.Pattern, Class: "l"}, {Text: bs},
		{Text: strconv.Itoa(r.Workers)}, {Text: strconv.Itoa(r.QD)}, {Text: r.Consume, Class: "l"}}
	if r.Error != "" {
		out.Class = strings.TrimSpace(out.Class + " failed")
		out.Err = failure(r)
		out.ErrSpan = len(hColumns) - hErrCol
		return out
	}
	spread, vs := "", ""
	if len(r.Runs) > 1 {
		spread = gibps(r.BytesPerSMin) + "–" + gibps(r.BytesPerSMax)
	}
	if r.VsFio > 0 {
		vs = fmt.Sprintf("%.2f×", r.VsFio)
	}
	iot := ""
	if r.IOThreadCPUSPerGiB > 0 {
		iot = fixed(r.IOThreadCPUSPerGiB, 3)
	}
	cnt := func(n int64) string {
		if n < 0 {
			return "-" // not counted (fio)
		}
		return count(n)
	}
	runs := hCell{Text: strconv.Itoa(len(r.Runs)), Class: "l"}
	if n := hNoisy(r); n != "" {
		runs.Text += fmt.Sprintf(" ▲ %d noisy", r.NoisyRuns)
		runs.Class += " noisy"
		runs.Title = n
	}
	ck := hCell{Text: checksum(r.ChecksumOK), Class: "l"}
	if r.ChecksumOK != nil && !*r.ChecksumOK {
		ck.Class += " bad"
	}
	out.Cells = append(out.Cells,
		hCell{Text: gibps(r.BytesPerS), Class: "num strong"}, hCell{Text: spread, Class: "l muted"}, hCell{Text: vs},
		hCell{Text: fixed(r.CPUSPerGiB, 3)}, hCell{Text: iot}, hCell{Text: fixed(r.UsrPct, 0)}, hCell{Text: fixed(r.SysPct, 0)},
		hCell{Text: latency(r.LatP50Ns)}, hCell{Text: latency(r.LatP90Ns)}, hCell{Text: latency(r.LatP99Ns)},
		hCell{Text: latency(r.LatP999Ns)}, hCell{Text: latency(r.LatP9999Ns)}, hCell{Text: latency(r.LatMaxNs)},
		hCell{Text: cnt(r.Syscalls)}, hCell{Text: cnt(r.MinFlt)}, hCell{Text: cnt(r.MajFlt)}, hCell{Text: cnt(r.NVCSw)},
		hCell{Text: cnt(r.NIVCSw)}, ck, runs)
	return out
}

// notes lists the report's notes, then the rows' notes; a row note shared
// by several rows of a series is listed once, with the rows it is about.
func (m *hModel) notes() []string {
	var out []string
	for _, n := range m.rep.Notes {
		out = append(out, oneLine(n))
	}
	type key struct{ series, note string }
	var order []key
	where := map[key][]string{}
	for _, row := range m.rows {
		for _, n := range row.r.Notes {
			k := key{row.s.name, oneLine(n)}
			if _, ok := where[k]; !ok {
				order = append(order, k)
			}
			w := row.r.Cache
			if row.g.label != "" {
				w += " " + row.g.label
			}
			if row.r.QD > 0 {
				w += fmt.Sprintf(" qd %d", row.r.QD)
			}
			where[k] = append(where[k], w)
		}
	}
	for _, k := range order {
		w := where[k]
		if len(w) > 4 {
			w = append(w[:3:3], fmt.Sprintf("%d more", len(w)-3))
		}
		out = append(out, fmt.Sprintf("%s (%s): %s", k.series, strings.Join(w, ", "), k.note))
	}
	return out
}

var htmlPage = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
` + pageHead + `<style>
:root{--fg:#1d232a;--muted:#5d6773;--line:#dfe3e8;--bg:#f6f7f9;--card:#fff;--err:#c0392b;--accent:#2f5d8a}
*{box-sizing:border-box}
html{color-scheme:light;-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 28px 56px}
header h1{font-size:25px;font-weight:650;margin:0 0 2px;letter-spacing:-.01em;overflow-wrap:anywhere}
header .sub{color:var(--muted);margin:0 0 16px}
h2{font-size:19px;font-weight:650;margin:34px 0 6px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;font-weight:600;margin:0 0 2px}
nav{font-size:13.5px;margin:8px 0 0}
nav a{color:var(--accent);text-decoration:none;margin-right:14px;white-space:nowrap}
nav a:hover{text-decoration:underline}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 18px 12px;margin:14px 0}
.meta{display:grid;grid-template-columns:repeat(auto-fit,minmax(330px,1fr));gap:14px}
.meta .card{margin:0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:0;font-size:14px}
dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0;overflow-wrap:anywhere}
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace;font-size:13px}
pre.cmd{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:6px 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(470px,1fr));gap:14px}
.grid .card{margin:0}
figure{margin:0}
figcaption{color:var(--muted);font-size:13px;margin:0 0 6px;max-width:110ch}
` + chartCSS + `.chart .noisy{fill:#f0b400;stroke:#7a5a00;stroke-width:.7}
.chart .lg{font-size:12px}
.chart .reflabel{font-size:10.5px;font-weight:600}
.chart .bar:hover rect,.chart .pt:hover circle{opacity:.8}
.empty{color:var(--muted);font-style:italic}
.table-wrap{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:10px;margin:14px 0}
table{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums;width:100%}
th,td{padding:4px 8px;text-align:right;white-space:nowrap;border-bottom:1px solid #edf0f3}
th{position:sticky;top:0;background:#f0f2f5;font-weight:600;color:#39424c;border-bottom:1px solid var(--line)}
th.l,td.l{text-align:left}
tr.fio td{background:#fafbfc;color:#4a535d}
tr:hover td{background:#f3f6fa}
td.strong{font-weight:650}
td.muted{color:var(--muted)}
td.noisy{color:#8a6400}
td.bad{color:var(--err);font-weight:700}
td.error{color:var(--err);text-align:left;white-space:pre-wrap;min-width:30ch}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:-1px}
ul.notes{margin:6px 0;padding-left:20px}
ul.notes li{margin:2px 0;overflow-wrap:anywhere}
dl.defs{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;font-size:13.5px;margin:8px 0}
dl.defs dt{font-weight:600}
dl.defs dd{margin:0;color:#39424c}
footer{color:var(--muted);font-size:12.5px;margin-top:36px}
@media (max-width:600px){main{padding:16px 12px 40px}.grid,.meta{grid-template-columns:1fr}}
@media print{
@page{size:A4 landscape;margin:10mm}
body{background:#fff;font-size:10pt}
main{max-width:none;padding:0}
nav{display:none}
.card{border:none;padding:0;margin:8px 0}
figure,.card,tr{break-inside:avoid}
h2{break-after:avoid}
.grid{grid-template-columns:1fr 1fr}
.table-wrap{overflow:visible;border:none}
table{font-size:6.5pt}
th,td{padding:1px 3px}
th{position:static}
tr.fio td,tr:hover td{background:none}
}
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{with .Subtitle}}<p class="sub">{{.}}</p>{{end}}
</header>
<div class="meta">
<section class="card"><h3>Machine</h3>
{{if .Machine}}<dl class="kv">{{range .Machine}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>{{else}}<p class="empty">not recorded</p>{{end}}
</section>
<section class="card"><h3>Run</h3>
{{if .Run}}<dl class="kv">{{range .Run}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>{{end}}
{{with .Command}}<pre class="cmd"><code>{{.}}</code></pre>{{end}}
</section>
</div>
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}<a href="#results">Results</a>{{if .Notes}}<a href="#notes">Notes</a>{{end}}<a href="#definitions">Definitions</a></nav>
{{range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{if .Charts}}{{if .Grid}}<div class="grid">{{end}}
{{range .Charts}}<figure class="card" id="{{.ID}}">
<h3>{{.Title}}</h3>
<figcaption>{{.Caption}}</figcaption>
{{.SVG}}
</figure>
{{end}}{{if .Grid}}</div>{{end}}{{else}}<p class="empty">{{.Empty}}</p>{{end}}
</section>
{{end}}
<section id="results">
<h2>Results</h2>
{{if .Rows}}<div class="table-wrap"><table>
<thead><tr>{{range .Columns}}<th class="{{.Class}}"{{with .Title}} title="{{.}}"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{with .Class}} class="{{.}}"{{end}}>{{range .Cells}}<td{{with .Class}} class="{{.}}"{{end}}{{with .Title}} title="{{.}}"{{end}}>{{if .Swatch}}<span class="sw" style="{{.Style}}"></span>{{end}}{{.Text}}</td>{{end}}{{if .Err}}<td class="error" colspan="{{.ErrSpan}}">{{.Err}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>{{else}}<p class="empty">No results.</p>{{end}}
</section>
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
