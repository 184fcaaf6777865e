package report

import (
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
// The page is page.go's: offline, no script, everything escaped.
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
//
// A tree's page (bench --tree) holds two charts, files per second with
// its whiskers (data-chart "files-per-s") and CPU-s per 1,000 files
// ("cpu-per-1k-files"), a group per cache state and a bar per engine,
// then the tree's table (BenchDoc), notes and definitions.
func HTML(w io.Writer, r *bench.Report) error {
	if r.Tree != nil {
		return renderPage(w, treePage(r))
	}
	return renderPage(w, newHModel(r).page())
}

// treePage is the page of a tree's report.
func treePage(r *bench.Report) page {
	t := r.Tree
	p := page{Title: "iopath bench --tree: " + t.Dir, Subtitle: subtitle(r.Started, r.Machine), Command: r.Command,
		Machine: machineKV(r.Machine, ""), Generator: strings.TrimSpace("iopath " + r.Machine.IopathVersion)}
	extra := []string{plural(int(t.Files), "file"), units.FormatSize(t.Bytes)}
	if t.Temporary {
		extra = append(extra, "temporary: created for this run and removed after")
	}
	addKV(&p.Run, "tree", t.Dir+" ("+strings.Join(extra, ", ")+")")
	addKV(&p.Run, "archive", t.Archive)
	if !r.Started.IsZero() {
		addKV(&p.Run, "started", stamp(r.Started))
	}
	var names []string
	for _, res := range r.Results {
		if !slices.Contains(names, res.Engine) {
			names = append(names, res.Engine)
		}
	}
	series, _ := nameSeries(names)
	d := BenchDoc(r)
	p.Sections = []section{
		{ID: "throughput", Title: "Files per second", Charts: []chart{barChart("files-per-s", "Files per second", "Median files delivered "+
			"per second of wall time (walk, open, read and close included; higher is better); the whisker spans the slowest to the fastest "+
			"run. A shaded gap is a row that failed or did not run (hover for why).", "files/s", docBars(d, "files_per_s", series), series, nil)}},
		{ID: "cpu", Title: "CPU cost", Charts: []chart{barChart("cpu-per-1k-files", "CPU per 1,000 files", "User + system CPU seconds per "+
			"1,000 files delivered (lower is better), median over the runs; the whisker spans the runs.", "CPU-s per 1k files",
			docBars(d, "cpu_s_per_1k_files", series), series, nil)}},
	}
	p.Sections = append(p.Sections, docSections("results", "Results", d, series...)...)
	return p
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
	ids    chartIDs
}

func isFio(r *bench.Result) bool { return r.Tool == bench.ToolFio }

func seriesName(r *bench.Result) string {
	if isFio(r) {
		return "fio " + r.Engine
	}
	return r.Engine
}

func newHModel(rep *bench.Report) *hModel {
	m := &hModel{rep: rep, cells: map[hKey][]*hRow{}, ids: chartIDs{}}
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
		s.paint(c)
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

func (m *hModel) throughputCharts() []chart {
	var out []chart
	for _, c := range m.caches {
		groups, deep := m.barGroups(c, func(row *hRow) hBar {
			r := row.r
			b := hBar{v: hGiB(r.BytesPerS), noisy: hNoisy(r), tip: hTip(row, hThroughputLine(r))}
			if len(r.Runs) > 1 {
				b.lo, b.hi = hGiB(r.BytesPerSMin), hGiB(r.BytesPerSMax)
			}
			return b
		})
		id := m.ids.id("throughput", c)
		title := "Throughput — " + cacheTitle(c)
		out = append(out, chart{ID: id, Title: title,
			Caption: m.scope() + "Median GiB/s over the runs (higher is better); the whisker spans the slowest to the fastest run. " +
				"Hatched bars are fio running the same workload beside the iopath engine of the same colour. " +
				"A shaded gap labelled “error” is a row that failed (hover for the message)." + m.deepNote(deep),
			SVG: template.HTML(hBarChart(hBarSpec{id: id, title: title, unit: "GiB/s", groups: groups, series: m.series, value: decimals(2)}))})
	}
	return out
}

func (m *hModel) cpuCharts() []chart {
	var out []chart
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
			return hBar{v: hFiniteOr0(r.CPUSPerGiB), share: hFiniteOr0(r.IOThreadCPUSPerGiB),
				noisy: hNoisy(r), tip: hTip(row, line)}
		})
		id := m.ids.id("cpu", c)
		title := "CPU cost — " + cacheTitle(c)
		caption := m.scope() + "User + system CPU seconds per GiB delivered (lower is better), median over the runs."
		if share {
			caption += " The darker bottom of a bar is the part spent by io_uring's kernel threads (iou-sqp, iou-wrk) for the run; it is included in the bar. fio's figures leave those threads out."
		}
		out = append(out, chart{ID: id, Title: title, Caption: caption + m.deepNote(deep),
			SVG: template.HTML(hBarChart(hBarSpec{id: id, title: title, unit: "CPU-s per GiB", groups: groups, series: m.series,
				shareLabel: "io_uring kernel threads", value: decimals(3)}))})
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

func (m *hModel) latencyCharts() []chart {
	var out []chart
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
			caption := "Per-block latency percentiles (log scale, lower is better), over all runs' blocks together; values not measured are skipped."
			if len(missing) > 0 {
				caption += " Not shown: " + strings.Join(missing, ", ") + "."
			}
			out = append(out, m.groupLines("latency", "Latency", caption+m.deepNote(deep), c, g, multi, hLineSpec{
				x:     hAxisSpec{label: "percentile", cats: hPercentiles},
				y:     hAxisSpec{label: "latency (log)", log10: true, fmt: hLatencyTick},
				lines: lines}))
		}
	}
	return out
}

// groupLines draws a line chart in a grid cell of cache state c and, when
// several workloads were measured (multi), of workload g: its id is
// KIND-CACHE[-GROUP], its title "TITLE — CACHE[ · GROUP]", and its caption
// starts with the workload.
func (m *hModel) groupLines(kind, title, caption, c string, g *hGroup, multi bool, spec hLineSpec) chart {
	gslug := ""
	title += " — " + cacheTitle(c)
	if multi {
		gslug, title, caption = g.slug, title+" · "+g.label, "Workload: "+g.desc+". "+caption
	} else {
		caption = m.scope() + caption
	}
	spec.id, spec.title, spec.half = m.ids.id(kind, c, gslug), title, true
	return chart{ID: spec.id, Title: title, Caption: caption, SVG: template.HTML(hLineChart(spec))}
}

// throughputPoint is row's throughput at x in a sweep chart.
func throughputPoint(row *hRow, x float64) hPoint {
	pt := hPoint{x: x, tip: hTip(row, hThroughputLine(row.r))}
	if row.r.Error != "" {
		pt.err = row.r.Error
	} else {
		pt.y = hGiB(row.r.BytesPerS)
	}
	return pt
}

// bsCharts draws throughput against block size, per cache state and
// panel, where more than one block size was measured.
func (m *hModel) bsCharts() []chart {
	var out []chart
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
					per[row.s] = append(per[row.s], throughputPoint(row, float64(g.bs)))
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
			id := m.ids.id("throughput-vs-bs", c, pslug)
			out = append(out, chart{ID: id, Title: title,
				Caption: "Median GiB/s at each block size (log₂ axis); dashed lines with hollow points are fio. × marks a failed row." +
					m.deepNote(hUniq(deep)),
				SVG: template.HTML(hLineChart(hLineSpec{id: id, title: title, half: true,
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
func (m *hModel) qdCharts() []chart {
	var out []chart
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
					pts = append(pts, throughputPoint(row, float64(r.QD)))
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
			caption := "Median GiB/s at each queue depth per worker (log₂ axis); dashed lines with hollow points are fio."
			if len(refs) > 0 {
				caption += " Dotted flat lines: engines with no queue (" + strings.Join(refs, ", ") +
					") at their throughput for this workload, for reference; their fio twins are in the bars above."
			}
			out = append(out, m.groupLines("throughput-vs-qd", "Throughput vs queue depth", caption, c, g, multi, hLineSpec{
				x: hAxisSpec{label: "queue depth per worker (log₂ scale)", log2: true, ticks: ticks, fmt: func(v float64) string { return strconv.Itoa(int(v)) }},
				y: hAxisSpec{label: "GiB/s"}, lines: lines}))
		}
	}
	return out
}

// --- page

func (m *hModel) page() page {
	r := m.rep
	p := page{Title: "iopath bench report", Subtitle: subtitle(r.Started, r.Machine), Command: r.Command,
		Machine: machineKV(r.Machine, ""), Generator: strings.TrimSpace("iopath " + r.Machine.IopathVersion)}
	if r.File.Path != "" {
		p.Title = "iopath bench: " + r.File.Path
	}
	if r.Fio != nil {
		p.Machine = append(p.Machine, kv{"fio", strings.TrimSpace(r.Fio.Version + " (" + r.Fio.Path + ")")})
	}
	add := func(k, v string) { addKV(&p.Run, k, v) }
	if r.File.Path != "" || r.File.SizeBytes > 0 {
		extra := []string{units.FormatSize(r.File.SizeBytes)}
		if r.File.Temporary {
			extra = append(extra, "temporary: created for this run and removed after")
		}
		add("file", r.File.Path+" ("+strings.Join(extra, ", ")+")")
	}
	if !r.Started.IsZero() {
		add("started", stamp(r.Started))
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
	add("sweep", strings.Join(sw, " · "))
	var modes []string
	fails, noisy := 0, 0
	for _, row := range m.rows {
		if l := consumeLine(row.r.Consume); l != "" && !slices.Contains(modes, l) {
			modes = append(modes, l)
		}
		if row.r.Error != "" {
			fails++
		}
		if row.r.NoisyRuns > 0 {
			noisy++
		}
	}
	add("consume", strings.Join(modes, "; "))
	summary := plural(len(r.Results), "result")
	if fails > 0 {
		summary += fmt.Sprintf(", %d failed", fails)
	}
	if noisy > 0 {
		summary += fmt.Sprintf(", %d with noisy runs", noisy)
	}
	add("results", summary)

	p.Sections = append(p.Sections,
		section{ID: "throughput", Title: "Throughput", Charts: m.throughputCharts()},
		section{ID: "cpu", Title: "CPU cost", Charts: m.cpuCharts()},
		section{ID: "latency", Title: "Latency", Grid: true, Charts: m.latencyCharts(), Empty: "No latency was measured."})
	if bs := m.bsCharts(); len(bs) > 0 {
		p.Sections = append(p.Sections, section{ID: "sweep-bs", Title: "Block size sweep", Grid: true, Charts: bs})
	}
	if qd := m.qdCharts(); len(qd) > 0 {
		p.Sections = append(p.Sections, section{ID: "sweep-qd", Title: "Queue depth sweep", Grid: true, Charts: qd})
	}
	p.Sections = append(p.Sections, docSections("results", "Results", BenchDoc(r), m.series...)...)
	return p
}
