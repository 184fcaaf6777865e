package report

import (
	"cmp"
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
//	cpu-breakdown           with --perf: a 100%-stacked bar per row, a series per kind of CPU
//	flame-ENGINE-CACHE[-GROUP]  with --perf: a row's call tree (an icicle), a series per kind
//
// GROUP names the workload (block size, and pattern, workers or consume
// mode when those vary) and is left out when there is one; PANEL is the
// same without the block size.
//
// A tree's page (bench --tree) holds two charts, files per second with
// its whiskers (data-chart "files-per-s") and CPU-s per 1,000 files
// ("cpu-per-1k-files"), a group per cache state and a bar per engine,
// with --perf the CPU breakdown and a flame graph per row, then the
// tree's table (BenchDoc), notes and definitions.
//
// An append report's page (bench --append) holds three bar charts,
// durable records per second ("append-records-per-s"), P99 per append
// ("append-p99") and CPU µs per record ("append-cpu-per-record"), a
// group per writer count and a bar per method (append_doc.go).
func HTML(w io.Writer, r *bench.Report) error {
	switch {
	case r.Tree != nil:
		return renderPage(w, treePage(r))
	case r.Append != nil:
		return renderPage(w, appendPage(r))
	}
	return renderPage(w, filePage(r))
}

// benchPage is the frame of a bench report's page: its title and the
// machine and run cards, run holding the fields before the start time.
func benchPage(r *bench.Report, title string, run ...kv) page {
	p := page{Title: title, Subtitle: subtitle(r.Started, r.Machine), Command: r.Command,
		Machine: machineKV(r.Machine, ""), Generator: strings.TrimSpace("iopath " + r.Machine.IopathVersion)}
	for _, f := range run {
		addKV(&p.Run, f.K, f.V)
	}
	if !r.Started.IsZero() {
		addKV(&p.Run, "started", stamp(r.Started))
	}
	return p
}

// temporaryNote is said of a file or tree the run created.
const temporaryNote = "temporary: created for this run and removed after"

// treePage is the page of a tree's report.
func treePage(r *bench.Report) page {
	t := r.Tree
	extra := []string{plural(int(t.Files), "file"), units.FormatSize(t.Bytes)}
	if t.Temporary {
		extra = append(extra, temporaryNote)
	}
	p := benchPage(r, "iopath bench --tree: "+t.Dir, kv{"tree", t.Dir + " (" + strings.Join(extra, ", ") + ")"}, kv{"archive", t.Archive})
	d := BenchDoc(r)
	var rows []*bench.Result
	for i := range r.Results {
		rows = append(rows, &r.Results[i]) // as treeDoc orders them
	}
	series, _ := benchSeries(rows)
	p.Sections = []section{
		{ID: "throughput", Title: "Files per second", Charts: []chart{barChart("files-per-s", "Files per second", "Median files delivered "+
			"per second of wall time (walk, open, read and close included; higher is better); the whisker spans the slowest to the fastest "+
			"run. A shaded gap is a row that failed or did not run (hover for why).", "files/s", docBars(d, "files_per_s", series), series, nil)}},
		{ID: "cpu", Title: "CPU cost", Charts: []chart{barChart("cpu-per-1k-files", "CPU per 1,000 files", "User + system CPU seconds per "+
			"1,000 files delivered (lower is better), median over the runs; the whisker spans the runs.", "CPU-s per 1k files",
			docBars(d, "cpu_s_per_1k_files", series), series, nil)}},
	}
	ids := chartIDs{"files-per-s": true, "cpu-per-1k-files": true}
	p.Sections = append(p.Sections, breakdownSection(d, series, ids)...)
	p.Sections = append(p.Sections, flameSection(d, [][]*bench.Result{rows}, nil, ids)...)
	p.Sections = append(p.Sections, docSections("results", "Results", d, series...)...)
	return p
}

// benchSeries are the chart series of rows in a Doc's order: an engine
// per name in order of appearance, so that a fio twin, which the Doc
// puts under the row it mirrors (twinOrder), is drawn beside it, hatched
// in its colour.
func benchSeries(rows []*bench.Result) (order []*hSeries, byName map[string]*hSeries) {
	byName = map[string]*hSeries{}
	var bases []string
	for _, r := range rows {
		if name := engineName(r); byName[name] == nil {
			s := &hSeries{name: name, base: name, idx: len(order)}
			if isFioResult(r) {
				s.fio, s.base = true, cmp.Or(r.Twin, hFioTwins[r.Engine], name)
			}
			if !slices.Contains(bases, s.base) {
				bases = append(bases, s.base)
			}
			order, byName[name] = append(order, s), s
		}
	}
	_, colour := nameSeries(bases)
	for _, s := range order {
		s.paint(colour[s.base].color)
	}
	return order, byName
}

// fileView draws a file's charts from its Doc (BenchDoc): a Doc group is
// a workload, a bar group or a latency chart; a row, with the result it
// came from for what the table leaves out (P90 and P99.99, the io_uring
// kernel threads' CPU, the queue depth), is a bar or a point of the
// series its engine names.
type fileView struct {
	d      *Doc
	res    [][]*bench.Result // parallel to d's groups' rows
	series []*hSeries
	byName map[string]*hSeries
	caches []string // in order of appearance
	label  []string // per group: the workload parameters that vary in the report
	panel  []string // the same without the block size
	scope  string   // "Workload: …. " when every row shares one
	gib    int      // gib_per_s's column
	ids    chartIDs
}

func newFileView(r *bench.Report) *fileView {
	d, res := fileDoc(r)
	v := &fileView{d: d, res: res, ids: chartIDs{}, gib: slices.IndexFunc(d.Columns, func(c Column) bool { return c.Key == "gib_per_s" })}
	v.series, v.byName = benchSeries(slices.Concat(res...))
	for _, x := range r.Results {
		if !slices.Contains(v.caches, x.Cache) {
			v.caches = append(v.caches, x.Cache)
		}
	}
	// A workload parameter is in a chart's label when it varies in the
	// report, else in its caption's scope; a panel's label leaves out the
	// block size.
	parts := make([][]string, len(res))
	for gi, g := range res {
		parts[gi] = workloadParts(g[0].Pattern, g[0].BS, g[0].Workers, 0, g[0].Consume)
	}
	common := func(p string) bool {
		return !slices.ContainsFunc(parts, func(q []string) bool { return !slices.Contains(q, p) })
	}
	for _, ps := range parts {
		var label, panel []string
		for _, p := range ps {
			if !common(p) {
				label = append(label, strings.TrimPrefix(p, "bs "))
				if !strings.HasPrefix(p, "bs ") {
					panel = append(panel, p)
				}
			}
		}
		v.label, v.panel = append(v.label, strings.Join(label, " · ")), append(v.panel, strings.Join(panel, " · "))
	}
	if len(parts) > 0 {
		if c := slices.DeleteFunc(slices.Clone(parts[0]), func(p string) bool { return !common(p) }); len(c) > 0 {
			v.scope = "Workload: " + strings.Join(c, " · ") + ". "
		}
	}
	return v
}

// rows are the rows of group gi in cache state c of series s.
func (v *fileView) rows(c string, gi int, s *hSeries) []int {
	var out []int
	for ri, x := range v.res[gi] {
		if x.Cache == c && v.byName[engineName(x)] == s {
			out = append(out, ri)
		}
	}
	return out
}

// groupsIn are the groups with a row in cache state c.
func (v *fileView) groupsIn(c string) []int {
	var out []int
	for gi, g := range v.res {
		if slices.ContainsFunc(g, func(x *bench.Result) bool { return x.Cache == c }) {
			out = append(out, gi)
		}
	}
	return out
}

// pick is, per series in page order, the row of group gi in cache state c
// its bar and latency charts show: the one at the deepest queue depth.
// deep names the depth chosen for series measured at several.
func (v *fileView) pick(c string, gi int) (rows []int, deep []string) {
	for _, s := range v.series {
		cell := v.rows(c, gi, s)
		if len(cell) == 0 {
			continue
		}
		best, qds := cell[0], map[int]bool{}
		for _, ri := range cell {
			qds[v.res[gi][ri].QD] = true
			if v.res[gi][ri].QD > v.res[gi][best].QD {
				best = ri
			}
		}
		rows = append(rows, best)
		if len(qds) > 1 {
			deep = append(deep, fmt.Sprintf("%s at qd %d", s.name, v.res[gi][best].QD))
		}
	}
	return rows, deep
}

func deepNote(deep []string) string {
	if len(deep) == 0 {
		return ""
	}
	var uniq []string
	for _, d := range deep {
		if !slices.Contains(uniq, d) {
			uniq = append(uniq, d)
		}
	}
	return " Engines measured at several queue depths are shown at the deepest: " + strings.Join(uniq, ", ") + "."
}

func cacheTitle(c string) string {
	if c == "" {
		return "cache state unknown"
	}
	return c + " cache"
}

// tip heads the tooltip of row ri of group gi: its name and workload.
func (v *fileView) tip(gi, ri int) string {
	if v.label[gi] == "" {
		return v.d.Groups[gi].Rows[ri].Cells[0].Text
	}
	return v.d.Groups[gi].Rows[ri].Cells[0].Text + " · " + v.label[gi]
}

// bars draws column key of the rows pick chooses in cache state c: a
// group per workload, a bar per series (docBars, over a Doc of those
// rows with the cache state hidden, as the chart's title says it). res
// are the bars' results, group by group.
func (v *fileView) bars(c, key string) (groups []hBarGroup, res [][]*bench.Result, deep []string) {
	sub := &Doc{Columns: slices.Clone(v.d.Columns)}
	for i := range sub.Columns {
		sub.Columns[i].Hidden = sub.Columns[i].Hidden || sub.Columns[i].Key == "cache"
	}
	for _, gi := range v.groupsIn(c) {
		rows, d := v.pick(c, gi)
		deep = append(deep, d...)
		g, rs := Group{Title: v.label[gi]}, []*bench.Result(nil)
		for _, ri := range rows {
			g.Rows, rs = append(g.Rows, v.d.Groups[gi].Rows[ri]), append(rs, v.res[gi][ri])
		}
		sub.Groups, res = append(sub.Groups, g), append(res, rs)
	}
	return docBars(sub, key, v.series), res, deep
}

func (v *fileView) barCharts() (tput, cpu []chart) {
	share := false
	for _, g := range v.res {
		share = share || slices.ContainsFunc(g, func(x *bench.Result) bool { return x.IOThreadCPUSPerGiB > 0 })
	}
	for _, c := range v.caches {
		groups, _, deep := v.bars(c, "gib_per_s")
		id, title := v.ids.id("throughput", c), "Throughput — "+cacheTitle(c)
		tput = append(tput, barChart(id, title, v.scope+"Median GiB/s over the runs (higher is better); the whisker spans the slowest to the fastest run. "+
			"Hatched bars are fio running the same workload beside the iopath engine of the same colour. "+
			"A shaded gap labelled “error” is a row that failed (hover for the message)."+deepNote(deep), "GiB/s", groups, v.series, decimals(2)))

		groups, res, deep := v.bars(c, "cpu_s_per_gib")
		for gi, g := range groups {
			for bi := range g.bars {
				x, b := res[gi][bi], &g.bars[bi]
				if b.err != "" {
					continue
				}
				b.tip += fmt.Sprintf("\nusr %s%%, sys %s%%", fixed(x.UsrPct, 0), fixed(x.SysPct, 0))
				if x.IOThreadCPUSPerGiB > 0 {
					b.share = hFiniteOr0(x.IOThreadCPUSPerGiB)
					b.tip += "\nof which io_uring kernel threads: " + fixed(x.IOThreadCPUSPerGiB, 3) + " CPU-s/GiB"
				}
			}
		}
		caption := v.scope + "User + system CPU seconds per GiB delivered (lower is better), median over the runs; the whisker spans the runs."
		if share {
			caption += " The darker bottom of a bar is the part spent by io_uring's kernel threads (iou-sqp, iou-wrk) for the run; it is included in the bar. fio's figures leave those threads out."
		}
		id, title = v.ids.id("cpu", c), "CPU cost — "+cacheTitle(c)
		cpu = append(cpu, barChart(id, title, caption+deepNote(deep), "CPU-s per GiB", groups, v.series, decimals(3)))
	}
	return tput, cpu
}

var hPercentiles = []string{"P50", "P90", "P99", "P99.9", "P99.99"}

func (v *fileView) latencyCharts() []chart {
	var out []chart
	for _, c := range v.caches {
		for _, gi := range v.groupsIn(c) {
			rows, deep := v.pick(c, gi)
			var lines []hLine
			var missing []string
			for _, ri := range rows {
				x, s := v.res[gi][ri], v.byName[engineName(v.res[gi][ri])]
				ns := []int64{x.LatP50Ns, x.LatP90Ns, x.LatP99Ns, x.LatP999Ns, x.LatP9999Ns}
				all := fmt.Sprintf("P50 %s · P90 %s · P99 %s · P99.9 %s · P99.99 %s · max %s", latency(ns[0]), latency(ns[1]),
					latency(ns[2]), latency(ns[3]), latency(ns[4]), latency(x.LatMaxNs))
				if n := v.d.Groups[gi].Rows[ri].Noisy; n != "" {
					all += "\nnoisy: " + n
				}
				switch {
				case notRun(x):
					missing = append(missing, s.name+" (not run: interrupted)")
				case x.Error != "":
					missing = append(missing, s.name+" (error)")
				case slices.Max(ns) <= 0:
					missing = append(missing, s.name+" (not measured)")
				default:
					l := hLine{s: s}
					for i, n := range ns {
						l.pts = append(l.pts, hPoint{x: float64(i), y: float64(n), tip: v.tip(gi, ri) + "\n" + hPercentiles[i] + " latency: " + latency(n) + "\n" + all})
					}
					lines = append(lines, l)
				}
			}
			if len(lines) == 0 {
				continue
			}
			caption := "Per-block latency percentiles (log scale, lower is better), over all runs' blocks together; values not measured are skipped."
			if len(missing) > 0 {
				caption += " Not shown: " + strings.Join(missing, ", ") + "."
			}
			out = append(out, v.groupLines("latency", "Latency", caption+deepNote(deep), c, gi, hLineSpec{
				x:     hAxisSpec{label: "percentile", cats: hPercentiles},
				y:     hAxisSpec{label: "latency (log)", log10: true, fmt: hLatencyTick},
				lines: lines}))
		}
	}
	return out
}

// groupLines draws a line chart in a grid cell of cache state c and, when
// several workloads were measured, of workload gi: its id is
// KIND-CACHE[-GROUP], its title "TITLE — CACHE[ · GROUP]", and its caption
// starts with the workload.
func (v *fileView) groupLines(kind, title, caption, c string, gi int, spec hLineSpec) chart {
	slug, title := "", title+" — "+cacheTitle(c)
	if len(v.d.Groups) > 1 {
		slug, title, caption = hSlug(v.label[gi]), title+" · "+v.label[gi], "Workload: "+v.d.Groups[gi].Title+". "+caption
	} else {
		caption = v.scope + caption
	}
	spec.id, spec.title, spec.half = v.ids.id(kind, c, slug), title, true
	return chart{ID: spec.id, Title: title, Caption: caption, SVG: template.HTML(hLineChart(spec))}
}

// sweepLines draws the throughput of rows (group, row) against x: a line
// per series, its points in x order; ticks are the xs.
func (v *fileView) sweepLines(rows [][2]int, x func(*bench.Result) int) (lines []hLine, ticks []float64) {
	for _, s := range v.series {
		var pts []hPoint
		for _, r := range rows {
			if res := v.res[r[0]][r[1]]; v.byName[engineName(res)] == s {
				pts = append(pts, docPoint(v.d, v.gib, v.d.Groups[r[0]].Rows[r[1]], float64(x(res)), v.tip(r[0], r[1])))
			}
		}
		slices.SortStableFunc(pts, func(a, b hPoint) int { return cmp.Compare(a.x, b.x) })
		if len(pts) > 0 {
			lines = append(lines, hLine{s: s, pts: pts})
		}
	}
	for _, r := range rows {
		if t := float64(x(v.res[r[0]][r[1]])); !slices.Contains(ticks, t) {
			ticks = append(ticks, t)
		}
	}
	slices.Sort(ticks)
	return lines, ticks
}

// bsCharts draws throughput against block size, per cache state and
// panel, where more than one block size was measured.
func (v *fileView) bsCharts() []chart {
	var out []chart
	for _, c := range v.caches {
		var done []string
		for _, p := range v.panel {
			gs := slices.DeleteFunc(v.groupsIn(c), func(gi int) bool { return v.panel[gi] != p })
			if slices.Contains(done, p) || len(gs) < 2 {
				continue
			}
			done = append(done, p)
			var rows [][2]int
			var deep []string
			for _, gi := range gs {
				picked, d := v.pick(c, gi)
				for _, ri := range picked {
					rows = append(rows, [2]int{gi, ri})
				}
				deep = append(deep, d...)
			}
			lines, ticks := v.sweepLines(rows, func(x *bench.Result) int { return x.BS })
			slug, title := "", "Throughput vs block size — "+cacheTitle(c)
			if slices.ContainsFunc(v.panel, func(q string) bool { return q != p }) { // several panels
				slug, title = p, title+" · "+p
			}
			id := v.ids.id("throughput-vs-bs", c, slug)
			out = append(out, chart{ID: id, Title: title,
				Caption: "Median GiB/s at each block size (log₂ axis); dashed lines with hollow points are fio. × marks a failed row." + deepNote(deep),
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
func (v *fileView) qdCharts() []chart {
	var out []chart
	for _, c := range v.caches {
		for _, gi := range v.groupsIn(c) {
			var rows [][2]int
			for _, s := range v.series {
				for _, ri := range v.rows(c, gi, s) {
					rows = append(rows, [2]int{gi, ri})
				}
			}
			queued := slices.DeleteFunc(slices.Clone(rows), func(r [2]int) bool { return v.res[gi][r[1]].QD == 0 })
			lines, ticks := v.sweepLines(queued, func(x *bench.Result) int { return x.QD })
			if len(ticks) < 2 {
				continue
			}
			var refs []string
			for _, r := range rows {
				s, row := v.byName[engineName(v.res[gi][r[1]])], v.d.Groups[gi].Rows[r[1]]
				if v.res[gi][r[1]].QD > 0 || s.fio || row.Err != "" || slices.ContainsFunc(lines, func(l hLine) bool { return l.s == s }) {
					continue
				}
				pt := docPoint(v.d, v.gib, row, 0, v.tip(gi, r[1]))
				lines = append(lines, hLine{s: s, ref: true, refY: pt.y, refTip: pt.tip + "\nno queue: one request in flight per worker"})
				refs = append(refs, s.name)
			}
			slices.SortStableFunc(lines, func(a, b hLine) int { return a.s.idx - b.s.idx })
			caption := "Median GiB/s at each queue depth per worker (log₂ axis); dashed lines with hollow points are fio."
			if len(refs) > 0 {
				caption += " Dotted flat lines: engines with no queue (" + strings.Join(refs, ", ") +
					") at their throughput for this workload, for reference; their fio twins are in the bars above."
			}
			out = append(out, v.groupLines("throughput-vs-qd", "Throughput vs queue depth", caption, c, gi, hLineSpec{
				x: hAxisSpec{label: "queue depth per worker (log₂ scale)", log2: true, ticks: ticks, fmt: func(v float64) string { return strconv.Itoa(int(v)) }},
				y: hAxisSpec{label: "GiB/s"}, lines: lines}))
		}
	}
	return out
}

// filePage is the page of a single file's report.
func filePage(r *bench.Report) page {
	title := "iopath bench report"
	if r.File.Path != "" {
		title = "iopath bench: " + r.File.Path
	}
	var file kv
	if r.File.Path != "" || r.File.SizeBytes > 0 {
		extra := []string{units.FormatSize(r.File.SizeBytes)}
		if r.File.Temporary {
			extra = append(extra, temporaryNote)
		}
		file = kv{"file", r.File.Path + " (" + strings.Join(extra, ", ") + ")"}
	}
	p := benchPage(r, title, file)
	if r.Fio != nil {
		p.Machine = append(p.Machine, kv{"fio", strings.TrimSpace(r.Fio.Version + " (" + r.Fio.Path + ")")})
	}
	var sw []string
	list := func(what string, v []int, f func(int) string) {
		if len(v) > 0 {
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = f(x)
			}
			sw = append(sw, what+" "+strings.Join(s, ", "))
		}
	}
	list("block sizes", r.Sweep.BlockSizes, func(v int) string { return units.FormatSize(int64(v)) })
	list("workers", r.Sweep.Workers, strconv.Itoa)
	list("queue depths", r.Sweep.QueueDepths, strconv.Itoa)
	if len(r.Sweep.Caches) > 0 {
		sw = append(sw, "caches "+strings.Join(r.Sweep.Caches, ", "))
	}
	addKV(&p.Run, "sweep", strings.Join(sw, " · "))
	var modes []string
	fails, noisy := 0, 0
	for _, x := range r.Results {
		if l := consumeLine(x.Consume); l != "" && !slices.Contains(modes, l) {
			modes = append(modes, l)
		}
		if x.Error != "" {
			fails++
		}
		if x.NoisyRuns > 0 {
			noisy++
		}
	}
	addKV(&p.Run, "consume", strings.Join(modes, "; "))
	summary := plural(len(r.Results), "result")
	if fails > 0 {
		summary += fmt.Sprintf(", %d failed", fails)
	}
	if noisy > 0 {
		summary += fmt.Sprintf(", %d with noisy runs", noisy)
	}
	addKV(&p.Run, "results", summary)

	v := newFileView(r)
	tput, cpu := v.barCharts()
	p.Sections = append(p.Sections,
		section{ID: "throughput", Title: "Throughput", Charts: tput},
		section{ID: "cpu", Title: "CPU cost", Charts: cpu})
	p.Sections = append(p.Sections, breakdownSection(v.d, v.series, v.ids)...)
	p.Sections = append(p.Sections, section{ID: "latency", Title: "Latency", Grid: true, Charts: v.latencyCharts(), Empty: "No latency was measured."})
	if bs := v.bsCharts(); len(bs) > 0 {
		p.Sections = append(p.Sections, section{ID: "sweep-bs", Title: "Block size sweep", Grid: true, Charts: bs})
	}
	if qd := v.qdCharts(); len(qd) > 0 {
		p.Sections = append(p.Sections, section{ID: "sweep-qd", Title: "Queue depth sweep", Grid: true, Charts: qd})
	}
	p.Sections = append(p.Sections, flameSection(v.d, v.res, v.label, v.ids)...)
	p.Sections = append(p.Sections, docSections("results", "Results", v.d, v.series...)...)
	return p
}
