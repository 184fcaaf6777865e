package report

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/perf"
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
func NetHTML(w io.Writer, r *netresult.Report) error {
	engines, groups := netPoints(r)
	d := NetDoc(r) // a group per point, in groups' order
	var names, modes []string
	for _, g := range groups {
		modes = append(modes, g[0].Mode)
		for _, p := range g {
			names = append(names, p.Engine)
		}
	}
	// The engines that have a row, in the engines' order.
	series, _ := nameSeries(slices.DeleteFunc(slices.Clone(engines), func(e string) bool { return !slices.Contains(names, e) }))

	ver := r.Version
	if ver == "" {
		ver = r.Machine.IopathVersion
	}
	p := page{Title: "iopath net bench", Subtitle: subtitle(r.Started, r.Machine), Command: r.Command,
		Machine: machineKV(r.Machine, ver), Generator: strings.TrimSpace("iopath " + ver)}
	p.Banner, p.BannerOK = netVerdict(groups)
	if !strings.HasPrefix(p.Banner[0], "INTEGRITY") {
		p.Banner[0] = "Integrity: " + p.Banner[0]
	}
	if !r.Started.IsZero() {
		addKV(&p.Run, "started", stamp(r.Started))
	}
	addKV(&p.Run, "engines", strings.Join(engines, ", "))
	addKV(&p.Run, "matrix", netMatrixLine(r.Config))
	addKV(&p.Run, "runs", netRunsLine(r.Config))
	addKV(&p.Run, "pinning", netPinLine(r.Config))
	addKV(&p.Run, "address", r.Config.Addr)
	if refs := netRefsOf(r); len(refs) > 0 {
		fields, _ := netVersus(engines, groups, refs[0]) // its notes are d's
		mf, _ := netMachinery(engines, groups, refs[0])
		for _, f := range append(fields, mf...) {
			for _, line := range splitField(f) {
				addKV(&p.Run, line.Key, line.Value)
			}
		}
	}

	ids := chartIDs{}
	var cpuC, qpsC, latC, integC []chart
	var noLat []string
	for _, mode := range uniq(modes) {
		sub, points := *d, [][]*netresult.Point{}
		sub.Groups = nil
		for i, g := range groups {
			if g[0].Mode == mode && i < len(d.Groups) {
				sub.Groups, points = append(sub.Groups, d.Groups[i]), append(points, g)
			}
		}
		// bars draws the Doc's column key over mode's points (chart id
		// KIND-MODE), and says whether any was measured: a group per point
		// labelled by its connections, with the message size under each
		// run of points that share it, a bar per engine; figures are
		// multiplied by scale (to thousands, to nanoseconds).
		bars := func(key, kind, title, caption, unit string, scale float64) (chart, bool) {
			groups := docBars(&sub, key, series)
			measured := false
			for i := range groups {
				groups[i].label, groups[i].super = strconv.Itoa(points[i][0].Conns), units.FormatSize(int64(points[i][0].Size))
				for j := range groups[i].bars {
					b := &groups[i].bars[j]
					b.v, b.lo, b.hi = b.v*scale, b.lo*scale, b.hi*scale
					measured = measured || b.v > 0
				}
			}
			id := ids.id(kind, mode)
			title += " — " + mode
			spec := hBarSpec{id: id, title: title, unit: unit, groups: groups, series: series, value: hSig3, rowNames: [2]string{"conns", "size"}}
			if key == "p99_us" {
				spec.log, spec.value, spec.tick = true, func(f float64) string { return latency(int64(f)) }, hLatencyTick
			}
			return chart{ID: id, Title: title, Caption: caption, SVG: template.HTML(hBarChart(spec))}, measured
		}
		c, _ := bars("server_cpu_us_per_req", "cpu", "Server CPU per request",
			"CPU time (user + system, every thread) of the server process per request, from the kernel's process CPU clock; median over "+
				"the runs, the whisker spanning the runs' minimum to maximum. Lower is better. A shaded gap labelled “error” "+
				"is a point that could not be measured (hover for why).", "server CPU-µs per request", 1)
		cpuC = append(cpuC, c)
		c, _ = bars("qps", "qps", "Requests per second", "Requests echoed whole and verified per second, in thousands; "+
			"median over the runs, the whisker spanning the runs' minimum to maximum. Higher is better.", "thousand requests/s", 1e-3)
		qpsC = append(qpsC, c)
		if c, ok := bars("p99_us", "p99", "P99 latency", "99th-percentile latency per request, from its send to the last "+
			"byte of its echo, on a log scale: the dot is the median over the runs, the whisker spans the runs' P99s. Lower is better. "+
			"“n/m”: not measured.", "P99 latency (log scale)", 1e3); ok {
			latC = append(latC, c)
		} else {
			noLat = append(noLat, mode)
		}
		integC = append(integC, integrityChart(ids.id("integrity", mode), mode, points, series))
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
	p.Sections = append(p.Sections, breakdownSection(d, series, ids)...)
	p.Sections = append(p.Sections, flameGrid(netFlames(engines, groups), ids,
		"The server's call tree from perf's samples, per engine and load mode, over every point's measured windows together")...)
	p.Sections = append(p.Sections, docSections("results", "Results", d, series...)...)
	return renderPage(w, p)
}

// netFlames are the servers' call trees (net bench --perf), one per
// engine and mode, the points' trees merged: a graph per point would be
// dozens.
func netFlames(engines []string, groups [][]*netresult.Point) []namedFlame {
	var out []namedFlame
	var modes []string
	for _, g := range groups {
		modes = append(modes, g[0].Mode)
	}
	for _, mode := range uniq(modes) {
		for _, e := range engines {
			var f *perf.Flame
			for _, g := range groups {
				for _, p := range g {
					if p.Mode == mode && p.Engine == e && p.Flame != nil {
						if f == nil {
							f = perf.NewFlame()
						}
						f.Merge(p.Flame)
					}
				}
			}
			if f != nil {
				out = append(out, namedFlame{e + " " + mode, f.Prune(0.005)})
			}
		}
	}
	return out
}

// integrityChart draws one mode's integrity: a tile per engine (row) and
// point (column), green when every byte came back as sent, red with the
// count when not, grey with "error" for a point that was not measured.
func integrityChart(id, mode string, points [][]*netresult.Point, series []*hSeries) chart {
	title := "Integrity — " + mode
	spec := hTileSpec{id: id, title: title, rowNames: [2]string{"conns", "size"}, key: []hLegendItem{
		{name: "every byte back as sent", kind: hLegShare, color: "#59a14f"},
		{name: "bytes corrupted or lost, or connections failed", kind: hLegShare, color: "#c0392b"},
		{name: "not measured", kind: hLegShare, color: "#c9ced4"},
	}}
	for _, g := range points {
		spec.cols = append(spec.cols, hBarGroup{label: strconv.Itoa(g[0].Conns), super: units.FormatSize(int64(g[0].Size))})
	}
	for _, s := range series {
		var row []hTile
		seen := false
		for _, g := range points {
			i := slices.IndexFunc(g, func(p *netresult.Point) bool { return p.Engine == s.name })
			seen = seen || i >= 0
			if i < 0 {
				row = append(row, hTile{"#f1f3f5", "–", "tl", fmt.Sprintf("%s · %s\nnot run", s.name, keyOf(g[0]).label())})
				continue
			}
			p := g[i]
			tip := p.Engine + " · " + keyOf(p).label() + "\n"
			switch {
			case p.Err != "":
				row = append(row, hTile{"#c9ced4", "error", "tl", tip + "error: " + oneLine(p.Err)})
			case p.Corrupted == 0 && p.Lost == 0 && p.ConnErrors == 0:
				row = append(row, hTile{"#59a14f", "✓", "tl ok", tip + fmt.Sprintf(
					"every echoed byte verified in %s: 0 corrupted, 0 lost, 0 connection errors", plural(len(p.Runs), "run"))})
			default:
				row = append(row, hTile{"#c0392b", netBadTile(p), "tl bad", tip + fmt.Sprintf(
					"%d bytes corrupted, %d lost, %d connections failed, over %s", p.Corrupted, p.Lost, p.ConnErrors, plural(len(p.Runs), "run"))})
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
func netBadTile(p *netresult.Point) string {
	switch n := p.Corrupted + p.Lost; {
	case n == 0:
		return fmt.Sprintf("%d conn err", p.ConnErrors)
	case n < 100_000:
		return fmt.Sprintf("%d B bad", n)
	default:
		return units.RoughSize(n) + " bad"
	}
}
