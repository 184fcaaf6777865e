package report

import (
	"fmt"
	"html/template"
	"io"
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
// The page is page.go's: offline, no script, everything escaped.
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
	return renderPage(w, newNetHTML(r).page())
}

type netHTML struct {
	v      *netView
	series []*hSeries // engines with a row, in display order
	byName map[string]*hSeries
	ids    chartIDs
}

func newNetHTML(r *netbench.Report) *netHTML {
	m := &netHTML{v: newNetView(r), ids: chartIDs{}}
	has := map[string]bool{}
	for _, p := range r.Points {
		has[p.Engine] = true
	}
	var names []string
	for _, e := range m.v.engines {
		if has[e] {
			names = append(names, e)
		}
	}
	m.series, m.byName = nameSeries(names)
	return m
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

// cells builds one chart's groups: a bar per engine with a row at each
// point of mode, the connections under each point and the message size
// under each run of points that share it.
func (m *netHTML) cells(mode string, cell func(g *netGroup, p *netbench.Point) hBar) []hBarGroup {
	var out []hBarGroup
	for _, g := range m.groupsOf(mode) {
		ng := hBarGroup{label: strconv.Itoa(g.key.conns), super: units.FormatSize(int64(g.key.size))}
		for _, p := range g.rows {
			c := hBar{err: "error", tip: netTip(p)}
			if p.Err == "" {
				c = cell(g, p)
			}
			c.s = m.byName[p.Engine]
			ng.bars = append(ng.bars, c)
		}
		out = append(out, ng)
	}
	return out
}

// netBars draws one mode's bars: chart id KIND-MODE, titled "TITLE — MODE".
func (m *netHTML) netBars(kind, mode, title, caption, unit string, groups []hBarGroup, log bool) chart {
	id := m.ids.id(kind, mode)
	title += " — " + mode
	spec := hBarSpec{id: id, title: title, unit: unit, groups: groups, series: m.series, value: hSig3,
		rowNames: [2]string{"conns", "size"}, log: log}
	if log {
		spec.value, spec.tick = func(f float64) string { return latency(int64(f)) }, hLatencyTick
	}
	return chart{ID: id, Title: title, Caption: caption, SVG: template.HTML(hBarChart(spec))}
}

func (m *netHTML) cpuChart(mode string) chart {
	groups := m.cells(mode, func(g *netGroup, p *netbench.Point) hBar {
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
		c := hBar{v: hFiniteOr0(p.ServerCPUPerReqUs), tip: netTip(p, line,
			fmt.Sprintf("client %s CPU-µs per request", netPerReq(p.ClientCPUPerReqUs)))}
		if len(p.Runs) > 1 {
			c.lo, c.hi = s.lo, s.hi
		}
		return c
	})
	return m.netBars("cpu", mode, "Server CPU per request",
		"CPU time (user + system, every thread) of the server process per request, from the kernel's process CPU clock; median over "+
			"the runs, the whisker spanning the runs' minimum to maximum. Lower is better. A shaded gap labelled “error” "+
			"is a point that could not be measured (hover for why).",
		"server CPU-µs per request", groups, false)
}

func (m *netHTML) qpsChart(mode string) chart {
	groups := m.cells(mode, func(_ *netGroup, p *netbench.Point) hBar {
		s := netQPS(p)
		c := hBar{v: hFiniteOr0(p.QPS) / 1e3, tip: netTip(p,
			fmt.Sprintf("%s requests per second, %s", netFmtQPS(p.QPS), netRunsNote(s, len(p.Runs), netFmtQPS)),
			fmt.Sprintf("%s MB/s echoed", netFmtMBps(p.MBps)))}
		if len(p.Runs) > 1 {
			c.lo, c.hi = s.lo/1e3, s.hi/1e3
		}
		return c
	})
	return m.netBars("qps", mode, "Requests per second",
		"Requests echoed whole and verified per second, in thousands; median over the runs, the whisker "+
			"spanning the runs' minimum to maximum. Higher is better.",
		"thousand requests/s", groups, false)
}

// p99Chart draws P99 latency, or nothing (ok false) when no row of mode
// measured a latency.
func (m *netHTML) p99Chart(mode string) (c chart, ok bool) {
	any := false
	groups := m.cells(mode, func(_ *netGroup, p *netbench.Point) hBar {
		s := netP99(p)
		c := hBar{v: float64(max(p.P99Ns, 0)), tip: netTip(p,
			fmt.Sprintf("P99 %s, %s", latency(p.P99Ns), netRunsNote(s, len(p.Runs), func(f float64) string { return latency(int64(f)) })),
			fmt.Sprintf("P50 %s · P99 %s · P99.9 %s · max %s", latency(p.P50Ns), latency(p.P99Ns), latency(p.P999Ns), latency(p.MaxNs)))}
		if len(p.Runs) > 1 {
			c.lo, c.hi = s.lo, s.hi
		}
		any = any || c.v > 0
		return c
	})
	if !any {
		return chart{}, false
	}
	return m.netBars("p99", mode, "P99 latency",
		"99th-percentile latency per request, from its send to the last byte of its echo, on a log scale: "+
			"the dot is the median over the runs, the whisker spans the runs' P99s. Lower is better. "+
			"“n/m”: not measured.",
		"P99 latency (log scale)", groups, true), true
}

// --- the integrity matrix

// integrityChart draws one mode's integrity: a tile per engine (row) and
// point (column), green when every byte came back as sent, red with the
// count when not, grey with "error" for a point that was not measured.
func (m *netHTML) integrityChart(mode string) chart {
	id := m.ids.id("integrity", mode)
	title := "Integrity — " + mode
	groups := m.groupsOf(mode)
	spec := hTileSpec{id: id, title: title, rowNames: [2]string{"conns", "size"}, key: []hLegendItem{
		{name: "every byte back as sent", kind: hLegShare, color: "#59a14f"},
		{name: "bytes corrupted or lost, or connections failed", kind: hLegShare, color: "#c0392b"},
		{name: "not measured", kind: hLegShare, color: "#c9ced4"},
	}}
	for _, g := range groups {
		spec.cols = append(spec.cols, hBarGroup{label: strconv.Itoa(g.key.conns), super: units.FormatSize(int64(g.key.size))})
	}
	for _, s := range m.series {
		var row []hTile
		seen := false
		for _, g := range groups {
			p := g.byEngine[s.name]
			seen = seen || p != nil
			switch {
			case p == nil:
				row = append(row, hTile{"#f1f3f5", "–", "tl", fmt.Sprintf("%s · %s\nnot run", s.name, g.key.label())})
			case p.Err != "":
				row = append(row, hTile{"#c9ced4", "error", "tl", netTip(p)})
			case p.Corrupted == 0 && p.Lost == 0 && p.ConnErrors == 0:
				row = append(row, hTile{"#59a14f", "✓", "tl ok", netTip(p, fmt.Sprintf(
					"every echoed byte verified in %s: 0 corrupted, 0 lost, 0 connection errors", plural(len(p.Runs), "run")))})
			default:
				row = append(row, hTile{"#c0392b", netBadTile(p), "tl bad", netTip(p, fmt.Sprintf(
					"%d bytes corrupted, %d lost, %d connections failed, over %s", p.Corrupted, p.Lost, p.ConnErrors, plural(len(p.Runs), "run")))})
			}
		}
		if seen {
			spec.rows, spec.tiles = append(spec.rows, s), append(spec.tiles, row)
		}
	}
	return chart{ID: id, Title: title,
		Caption: "The load generator checks every echoed byte against what it sent. A tile per engine and point, over all its runs; hover for the counts.",
		SVG:     template.HTML(hTileGrid(spec))}
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

func (m *netHTML) page() page {
	r := m.v.r
	ver := r.Version
	if ver == "" {
		ver = r.Machine.IopathVersion
	}
	p := page{Title: "iopath net bench", Subtitle: subtitle(r.Started, r.Machine), Command: r.Command,
		Machine: machineKV(r.Machine, ver), Generator: strings.TrimSpace("iopath " + ver)}
	p.Banner, p.BannerOK = m.v.integ.summary(), m.v.integ.ok() && m.v.integ.runs > 0
	if !strings.HasPrefix(p.Banner[0], "INTEGRITY") {
		p.Banner[0] = "Integrity: " + p.Banner[0]
	}
	if !r.Started.IsZero() {
		addKV(&p.Run, "started", stamp(r.Started))
	}
	addKV(&p.Run, "engines", strings.Join(m.v.engines, ", "))
	addKV(&p.Run, "matrix", netMatrixLine(r.Config))
	addKV(&p.Run, "runs", netRunsLine(r.Config))
	addKV(&p.Run, "pinning", netPinLine(r.Config))
	addKV(&p.Run, "address", r.Config.Addr)

	var cpuC, qpsC, latC, integC []chart
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
		integC = append(integC, m.integrityChart(mode))
	}
	lat := section{ID: "latency", Title: "P99 latency", Charts: latC, Empty: "No latency was measured."}
	if len(noLat) > 0 {
		lat.Intro = []string{"No latency was measured in mode " + strings.Join(noLat, ", ") + "."}
	}
	p.Sections = []section{
		{ID: "cpu", Title: "Server CPU per request", Charts: cpuC},
		{ID: "qps", Title: "Requests per second", Charts: qpsC},
		lat,
		{ID: "integrity", Title: "Integrity", Charts: integC},
	}
	p.Sections = append(p.Sections, docSections("results", "Results", NetDoc(r), m.series...)...)
	return p
}
