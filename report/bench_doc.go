package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/units"
)

// BenchDoc maps a benchmark report into a Doc: a single file's (kind
// "file": one group per workload, fio rows under the iopath rows they
// mirror), a tree's (kind "tree", bench --tree) or durable appends'
// (kind "append", bench --append: append_doc.go). Every figure cell
// made from runs carries each successful run's value, for compare's
// test and for gobench.
func BenchDoc(r *bench.Report) *Doc {
	switch {
	case r.Tree != nil:
		return treeDoc(r)
	case r.Append != nil:
		return appendDoc(r)
	}
	d, _ := fileDoc(r)
	return d
}

// Markers set after a figure, explained in the legend and the notes.
const (
	noisyMark    = "~" // after GiB/s or files/s: some runs were noisy
	ioThreadMark = "*" // after CPU-s/GiB: includes io_uring kernel threads
)

// consumeModes says in a few words what each consume mode makes the CPU do
// with the bytes an engine delivers.
var consumeModes = map[string]string{
	"checksum": "every byte read by the CPU",
	"touch":    "one byte read per page",
	"none":     "bytes land in a buffer and nothing reads them further (fio's semantics; mmap copies each block out, as fio's mmap engine does)",
}

// benchCol is a column of a benchmark Doc and how a result fills it;
// ok are the result's runs that succeeded.
type benchCol struct {
	Column
	cell func(res *bench.Result, ok []bench.Run) Cell
}

// okRuns are r's runs that succeeded (for a tree, that delivered files).
func okRuns(r *bench.Result, tree bool) []bench.Run {
	var ok []bench.Run
	for _, run := range r.Runs {
		if run.Error == "" && (!tree || run.Blocks > 0) {
			ok = append(ok, run)
		}
	}
	return ok
}

// runsCell is a figure: v is the report's own (what its JSON says), and
// the cell carries each run's get, with their min–max; none when a run
// lacks the figure (get is NaN or infinite).
func runsCell(v float64, ok []bench.Run, get func(bench.Run) float64) Cell {
	vals := make([]float64, 0, len(ok))
	for _, run := range ok {
		x := get(run)
		if !finite(x) {
			return Figure(v)
		}
		vals = append(vals, x)
	}
	if len(vals) == 0 {
		return Figure(v)
	}
	c := Runs(vals)
	c.Value = v
	return c
}

// figCol is a column of a figure over the runs (runsCell): sum is the
// result's own, run each run's.
func figCol(c Column, sum func(*bench.Result) float64, run func(bench.Run) float64) benchCol {
	return benchCol{c, func(res *bench.Result, ok []bench.Run) Cell { return runsCell(sum(res), ok, run) }}
}

// marked sets mark after the figures of the rows when holds for.
func (c benchCol) marked(mark string, when func(*bench.Result) bool) benchCol {
	cell := c.cell
	c.cell = func(res *bench.Result, ok []bench.Run) Cell {
		x := cell(res, ok)
		if when(res) {
			x.Mark = mark
		}
		return x
	}
	return c
}

func noisyRuns(res *bench.Result) bool { return res.NoisyRuns > 0 }

func ioThreads(res *bench.Result) bool { return res.IOThreadCPUSPerGiB > 0 }

// perPass divides a run's counter by its passes over the file.
func perPass(n int64, run bench.Run) float64 { return float64(n) / float64(max(run.Passes, 1)) }

func runSecs(run bench.Run) float64 { return float64(max(run.WallNs, 1)) / 1e9 }

// latencyCols are P50, P99 and P99.9 (--wide): nanoseconds shown as
// 15.0µs; per-run values only when every run measured it.
func latencyCols() []benchCol {
	col := func(key, title string, wide bool, sum func(*bench.Result) int64, run func(bench.Run) int64) benchCol {
		return benchCol{Column{Key: key, Title: title, Unit: "ns", Better: Lower, Wide: wide},
			func(res *bench.Result, ok []bench.Run) Cell {
				ns := sum(res)
				if ns <= 0 {
					return Figure(math.NaN())
				}
				c := runsCell(float64(ns), ok, func(x bench.Run) float64 {
					if v := run(x); v > 0 {
						return float64(v)
					}
					return math.NaN()
				})
				c.Text = latency(ns)
				return c
			}}
	}
	return []benchCol{
		col("lat_p50_ns", "P50", false, func(x *bench.Result) int64 { return x.LatP50Ns }, func(x bench.Run) int64 { return x.LatP50Ns }),
		col("lat_p99_ns", "P99", false, func(x *bench.Result) int64 { return x.LatP99Ns }, func(x bench.Run) int64 { return x.LatP99Ns }),
		col("lat_p999_ns", "P99.9", true, func(x *bench.Result) int64 { return x.LatP999Ns }, func(x bench.Run) int64 { return x.LatP999Ns }),
	}
}

// syncCols are a write row's sync calls per pass and their P50 and P99.
func syncCols() []benchCol {
	lat := func(key, title string, get func(*bench.Result) int64) benchCol {
		return benchCol{Column{Key: key, Title: title, Unit: "ns", Better: Lower},
			func(res *bench.Result, _ []bench.Run) Cell {
				ns := get(res)
				if ns <= 0 {
					return Figure(math.NaN())
				}
				c := Figure(float64(ns))
				c.Text = latency(ns)
				return c
			}}
	}
	n := countCol("syncs_per_pass", "syncs", func(x *bench.Result) int64 { return x.SyncsPerPass }, func(x bench.Run) int64 { return x.Syncs })
	n.Wide = false
	return []benchCol{n,
		lat("sync_lat_p50_ns", "sync P50", func(x *bench.Result) int64 { return x.SyncLatP50Ns }),
		lat("sync_lat_p99_ns", "sync P99", func(x *bench.Result) int64 { return x.SyncLatP99Ns })}
}

// countCol is a per-pass counter shown abbreviated (8.2k).
func countCol(key, title string, sum func(*bench.Result) int64, run func(bench.Run) int64) benchCol {
	return benchCol{Column{Key: key, Title: title, Better: Lower, Wide: true},
		func(res *bench.Result, ok []bench.Run) Cell {
			n := sum(res)
			if n < 0 {
				return Figure(math.NaN()) // not counted (fio)
			}
			c := runsCell(float64(n), ok, func(x bench.Run) float64 { return perPass(run(x), x) })
			c.Text = count(n)
			return c
		}}
}

// textCol is a Left column; a hidden one is a parameter of the workload,
// which the group's title shows.
func textCol(key, title string, hidden bool, text func(*bench.Result) string) benchCol {
	return benchCol{Column{Key: key, Title: title, Left: true, Hidden: hidden},
		func(res *bench.Result, _ []bench.Run) Cell { return TextCell(text(res)) }}
}

// checksumCol says whether every run delivered the reference bytes.
var checksumCol = benchCol{Column{Key: "checksum", Title: "checksum"},
	func(res *bench.Result, _ []bench.Run) Cell { return TextCell(checksum(res.ChecksumOK)) }}

// The legend's lines for the marks, the same in a file's Doc and a tree's.
var (
	noisyLegend    = Field{noisyMark, "some runs were noisy (kept in the figures: see the notes)"}
	ioThreadLegend = Field{ioThreadMark, "includes io_uring's kernel threads (SQPOLL, io-wq), which fio leaves out"}
)

// newBenchDoc is a Doc of kind with cols and a row per result of groups,
// each group under its title (sub says which rows are twins under the
// row above); its header, config, legend and notes are the caller's.
func newBenchDoc(r *bench.Report, kind string, cols []benchCol, titles []string, groups [][]*bench.Result, sub map[*bench.Result]bool) *Doc {
	d := &Doc{Kind: kind}
	for _, c := range cols {
		d.Columns = append(d.Columns, c.Column)
	}
	for gi, g := range groups {
		dg := Group{Title: titles[gi]}
		for _, res := range g {
			dg.Rows = append(dg.Rows, benchRow(cols, res, sub[res], kind == "tree"))
		}
		d.Groups = append(d.Groups, dg)
	}
	alignMarks(d)
	if len(r.Results) == 0 {
		d.After = []string{"no results"}
	}
	return d
}

// marked reports whether a figure of d carries mark.
func (d *Doc) marked(mark string) bool {
	for _, g := range d.Groups {
		for _, r := range g.Rows {
			if slices.ContainsFunc(r.Cells, func(c Cell) bool { return c.Mark == mark }) {
				return true
			}
		}
	}
	return false
}

// addIf appends k: v to fs when on.
func addIf(fs *[]Field, on bool, k, v string) {
	if on {
		*fs = append(*fs, Field{k, v})
	}
}

// benchHeader is a bench Doc's header: what was read, the machine, more,
// then the command and the start time, wrapped (wrapFields).
func benchHeader(r *bench.Report, what []Field, more ...Field) []Field {
	fs := append(append(what, Field{"machine", machineLine(r)}, Field{"io_uring", r.Machine.IOURing}), more...)
	fs = append(fs, Field{"command", units.EscapeControls(r.Command)})
	if !r.Started.IsZero() {
		fs = append(fs, Field{"started", r.Started.Format("2006-01-02 15:04:05 MST")})
	}
	return wrapFields(fs)
}

// benchConfig is a bench Doc's gobench configuration: the machine, and
// what was read (key): its path, or "temporary", and extra.
func benchConfig(r *bench.Report, key, path string, temporary bool, extra string) []Field {
	fs := []Field{{"goos", "linux"}, {"goarch", r.Machine.Arch}, {"pkg", "github.com/iopath/iopath"}, {"cpu", r.Machine.CPUModel}}
	if temporary {
		return append(fs, Field{key, "temporary (" + extra + ")"})
	}
	if path != "" {
		fs = append(fs, Field{key, units.QuotePath(path) + " (" + extra + ")"})
	}
	return fs
}

// fileDoc is BenchDoc for one file, with the result each row came from.
func fileDoc(r *bench.Report) (*Doc, [][]*bench.Result) {
	groups := groupResults(r.Results)
	var all []*bench.Result
	titles := make([]string, len(groups))
	ordered := make([][]*bench.Result, len(groups))
	sub := map[*bench.Result]bool{}
	labels := map[*bench.Result]string{}
	var fioRows, vsFio, unknownSyscalls, qdCells, checked, small, writes, syncs bool
	for gi, g := range groups {
		// The title names the queue depth when all its rows with a queue
		// share one; else their engines do.
		var depths []int
		for _, res := range g {
			if res.QD > 0 && !slices.Contains(depths, res.QD) {
				depths = append(depths, res.QD)
			}
		}
		titles[gi] = workload(g[0], 0)
		if len(depths) == 1 {
			titles[gi] = workload(g[0], depths[0])
		}
		var under map[*bench.Result]bool
		ordered[gi], under = twinOrder(g)
		for _, res := range ordered[gi] {
			label := engineName(res)
			// A fio twin too: a row's Left cells are its identity
			// (compare, gobench), unique within its workload.
			if len(depths) > 1 && res.QD > 0 {
				label += fmt.Sprintf(" qd%d", res.QD)
				qdCells = true
			}
			labels[res], sub[res] = label, under[res]
			all = append(all, res)
			fioRows = fioRows || isFioResult(res)
			small = small || res.BS > 0 && res.BS < 64<<10
			writes = writes || res.Sync != ""
			syncs = syncs || res.SyncsPerPass > 0
			if res.Error == "" {
				vsFio = vsFio || (res.VsFio > 0 && finite(res.VsFio))
				unknownSyscalls = unknownSyscalls || res.Syscalls < 0
				checked = checked || res.ChecksumOK != nil
			}
		}
	}
	vsFio = vsFio || fioRows
	workload := ""
	if len(groups) == 1 {
		workload, titles[0] = titles[0], "" // in the header
	}

	gib := func(res *bench.Result) float64 { return res.BytesPerS / (1 << 30) }
	cols := []benchCol{
		textCol("engine", "engine", false, func(res *bench.Result) string { return labels[res] }),
		textCol("cache", "cache", false, func(res *bench.Result) string { return res.Cache }),
		textCol("pattern", "pattern", true, func(res *bench.Result) string { return res.Pattern }),
		textCol("bs", "bs", true, func(res *bench.Result) string { return units.FormatSize(int64(res.BS)) }),
		textCol("workers", "workers", true, func(res *bench.Result) string { return fmt.Sprint(res.Workers) }),
		textCol("consume", "consume", true, func(res *bench.Result) string { return res.Consume }),
	}
	if writes {
		// A write row's sync mode is part of its workload (compare and
		// gobench keep rows of different modes apart).
		cols = append(cols, textCol("sync", "sync", true, func(res *bench.Result) string { return res.Sync }))
	}
	cols = append(cols,
		figCol(Column{Key: "gib_per_s", Title: "GiB/s", Unit: "GiB/s", Better: Higher, Prec: 2, Spread: true, Headline: true},
			gib, func(x bench.Run) float64 { return x.BytesPerS / (1 << 30) }).marked(noisyMark, noisyRuns))
	if small {
		cols = append(cols, benchCol{Column{Key: "iops", Title: "IOPS", Unit: "IOPS", Better: Higher},
			func(res *bench.Result, ok []bench.Run) Cell {
				c := runsCell(res.IOPS, ok, func(x bench.Run) float64 { return float64(x.Blocks) / runSecs(x) })
				c.Text = count(int64(res.IOPS + 0.5))
				return c
			}})
	}
	if vsFio {
		cols = append(cols, benchCol{Column{Key: "vs_fio", Title: "vs fio", Better: Higher, Prec: 2},
			func(res *bench.Result, _ []bench.Run) Cell {
				if isFioResult(res) || res.VsFio <= 0 {
					return Cell{}
				}
				c := Figure(res.VsFio)
				c.Text = ratio(res.VsFio)
				return c
			}})
	}
	pct := func(ns func(bench.Run) int64) func(bench.Run) float64 {
		return func(x bench.Run) float64 { return 100 * float64(ns(x)) / float64(max(x.WallNs, 1)) }
	}
	cols = append(cols,
		figCol(Column{Key: "cpu_s_per_gib", Title: "CPU-s/GiB", Unit: "CPU-s/GiB", Better: Lower, Prec: 3, Headline: true},
			func(res *bench.Result) float64 { return res.CPUSPerGiB }, func(x bench.Run) float64 {
				if x.Bytes == 0 {
					return math.NaN()
				}
				return float64(x.UserNs+x.SysNs) / 1e9 / (float64(x.Bytes) / (1 << 30))
			}).marked(ioThreadMark, ioThreads),
		figCol(Column{Key: "usr_pct", Title: "usr%", Unit: "%", Wide: true}, func(res *bench.Result) float64 { return res.UsrPct },
			pct(func(x bench.Run) int64 { return x.UserNs })),
		figCol(Column{Key: "sys_pct", Title: "sys%", Unit: "%", Wide: true}, func(res *bench.Result) float64 { return res.SysPct },
			pct(func(x bench.Run) int64 { return x.SysNs })))
	cols = append(cols, latencyCols()...)
	if syncs {
		cols = append(cols, syncCols()...)
	}
	kinds := perfKinds(all)
	cols = append(cols, perfCols(kinds)...)
	cols = append(cols,
		countCol("syscalls", "syscalls", func(x *bench.Result) int64 { return x.Syscalls }, func(x bench.Run) int64 { return x.Syscalls }),
		countCol("minflt", "minflt", func(x *bench.Result) int64 { return x.MinFlt }, func(x bench.Run) int64 { return x.MinFlt }),
		countCol("majflt", "majflt", func(x *bench.Result) int64 { return x.MajFlt }, func(x bench.Run) int64 { return x.MajFlt }),
		countCol("nvcsw", "vcsw", func(x *bench.Result) int64 { return x.NVCSw }, func(x bench.Run) int64 { return x.NVCSw }),
		countCol("nivcsw", "ivcsw", func(x *bench.Result) int64 { return x.NIVCSw }, func(x bench.Run) int64 { return x.NIVCSw }),
		// The queue depth differs between engines (pread has none): a
		// figure, not part of a row's name (gobench, compare).
		benchCol{Column{Key: "qd", Title: "qd", Wide: true}, func(res *bench.Result, ok []bench.Run) Cell {
			return runsCell(float64(res.QD), ok, func(bench.Run) float64 { return float64(res.QD) })
		}})
	runtime := hasRuntime(all)
	if runtime {
		cols = append(cols, runtimeCols()...)
	}
	if checked {
		cols = append(cols, checksumCol)
	}

	d := newBenchDoc(r, "file", cols, titles, ordered, sub)
	var clock, fio string
	if r.Machine.LatencyClock != "" {
		clock = r.Machine.LatencyClock + " (per-block latency)"
	}
	if r.Fio != nil {
		fio = r.Fio.Version
		if r.Fio.Path != "" {
			fio = strings.TrimSpace(fio + " (" + units.QuotePath(r.Fio.Path) + ")")
		}
	}
	var modes []string
	for _, res := range r.Results {
		if l := consumeLine(res.Consume); !slices.Contains(modes, l) {
			modes = append(modes, l)
		}
	}
	d.Header = benchHeader(r, []Field{{"file", fmt.Sprintf("%s (%s)", units.QuotePath(r.File.Path), fileExtra(r.File))}},
		Field{"clock", clock}, Field{"version", versionLine(r)}, Field{"fio", fio},
		Field{"consume", strings.Join(modes, "; ")}, Field{"workload", workload})
	d.Config = benchConfig(r, "file", r.File.Path, r.File.Temporary, units.FormatSize(r.File.SizeBytes))
	if len(r.Results) == 0 {
		return d, ordered
	}

	l := &d.Legend
	addIf(l, fioRows, "fio ENGINE", "fio running the same workload with that ioengine, under the iopath engine it mirrors (its twin)")
	addIf(l, qdCells, "qdN", "queue depth per worker, after the engine when it varies within a workload")
	addIf(l, !writes, "GiB/s", "median over the runs (min–max) of bytes delivered to the consumer per second of wall time, open and close included")
	addIf(l, writes, "GiB/s", "median over the runs (min–max) of bytes written per second of wall time, open, syncs and close included")
	addIf(l, d.marked(noisyMark), noisyLegend.Key, noisyLegend.Value)
	addIf(l, small, "IOPS", "blocks per second, median")
	addIf(l, vsFio, "vs fio", "median GiB/s over its fio twin's")
	addIf(l, true, "CPU-s/GiB", "user+system CPU seconds per GiB, steadier than GiB/s on a busy machine")
	addIf(l, d.marked(ioThreadMark), ioThreadLegend.Key, ioThreadLegend.Value)
	addIf(l, !writes, "P50 P99", "latency per block, request issued to data available")
	addIf(l, writes, "P50 P99", "latency per block, write issued to write returned (or, for mmap, the copy into the mapping); syncs are timed apart")
	addIf(l, syncs, "syncs", "sync calls per pass (fsync, fdatasync, msync, io_uring FSYNC), median; sync P50 P99: the latency of one")
	perfLegend(l, kinds)
	unchecked := "consume none or touch, the null engine"
	if fioRows {
		unchecked += ", fio"
	}
	addIf(l, checked && !writes, "checksum", "ok: every run delivered the reference (pread) bytes; MISMATCH: a run did not; n/a: not checked ("+unchecked+")")
	addIf(l, checked && writes, "checksum", "ok: after every run the file, read back from the device, held exactly what was written; MISMATCH: it did not")
	syscalls, vcsw := "", ""
	if unknownSyscalls {
		syscalls, vcsw = "; – for fio, which does not count them", "; fio counts all switches under vcsw"
	}
	wideRuntime := ""
	if runtime {
		wideRuntime = runtimeWide
	}
	addIf(l, true, "--wide adds", "usr% sys% (CPU as % of one core), P99.9, syscalls (per pass, at the engine's own call sites"+syscalls+
		"), minflt majflt (page faults per pass), vcsw ivcsw (context switches per pass"+vcsw+"), qd"+wideRuntime)
	d.Notes = benchNotes(r, all)
	return d, ordered
}

// benchRow is res's row: its cells, or for a row without figures its
// name and why.
func benchRow(cols []benchCol, res *bench.Result, sub, tree bool) Row {
	row := Row{Sub: sub}
	ok := okRuns(res, tree)
	for _, c := range cols {
		if res.Error != "" && !c.Left {
			row.Cells = append(row.Cells, Cell{})
			continue
		}
		row.Cells = append(row.Cells, c.cell(res, ok))
	}
	if res.Error != "" {
		row.Err = failure(res)
	}
	for _, run := range res.Runs {
		if run.Noisy != "" {
			row.Noisy = oneLine(run.Noisy)
			break
		}
	}
	return row
}

// alignMarks gives the figures of a column in which some have a mark a
// blank one, so that the digits stay aligned in a table.
func alignMarks(d *Doc) {
	for i := range d.Columns {
		marked := false
		for _, g := range d.Groups {
			for _, r := range g.Rows {
				marked = marked || (i < len(r.Cells) && r.Cells[i].Mark != "")
			}
		}
		if !marked {
			continue
		}
		for _, g := range d.Groups {
			for j := range g.Rows {
				if c := &g.Rows[j].Cells[i]; c.Num && c.Mark == "" && finite(c.Value) {
					c.Mark = " "
				}
			}
		}
	}
}

// wrapFields drops the fields without a value and wraps the others to fit
// docWrap columns, as continuation fields, except the paths and the
// command, which stay whole to be copied.
func wrapFields(fs []Field) []Field {
	kw := 0
	for _, f := range fs {
		kw = max(kw, width(f.Key))
	}
	var out []Field
	for _, f := range fs {
		switch {
		case f.Value == "":
		case f.Key == "file" || f.Key == "tree" || f.Key == "archive" || f.Key == "command":
			out = append(out, f)
		default:
			lines := strings.Split(strings.TrimSuffix(wrapText("", f.Value, 0, docWrap-kw-2), "\n"), "\n")
			out = append(out, Field{f.Key, lines[0]})
			for _, l := range lines[1:] {
				out = append(out, Field{"", l})
			}
		}
	}
	return out
}

// treeDoc is BenchDoc for a tree of files (bench --tree).
func treeDoc(r *bench.Report) *Doc {
	t := r.Tree
	var errs bool
	var rows []*bench.Result
	for i := range r.Results {
		errs = errs || r.Results[i].FileErrors > 0
		rows = append(rows, &r.Results[i])
	}
	per := func(n int64, x bench.Run) float64 { return float64(n) / float64(max(x.Blocks, 1)) }
	cols := []benchCol{
		textCol("engine", "engine", false, func(res *bench.Result) string {
			name := res.Engine
			if res.Workers > 1 {
				name += fmt.Sprintf(" ×%d", res.Workers)
			}
			if res.QD > 0 {
				name += fmt.Sprintf(" qd%d", res.QD)
			}
			return name
		}),
		textCol("cache", "cache", false, func(res *bench.Result) string { return res.Cache }),
		figCol(Column{Key: "files_per_s", Title: "files/s", Unit: "files/s", Better: Higher, Spread: true, Headline: true},
			func(res *bench.Result) float64 { return res.FilesPerS },
			func(x bench.Run) float64 { return float64(x.Blocks) / runSecs(x) }).marked(noisyMark, noisyRuns),
		figCol(Column{Key: "gib_per_s", Title: "GiB/s", Unit: "GiB/s", Better: Higher, Prec: 2},
			func(res *bench.Result) float64 { return res.BytesPerS / (1 << 30) }, func(x bench.Run) float64 { return x.BytesPerS / (1 << 30) }),
	}
	cols = append(cols, latencyCols()...)
	cols = append(cols,
		figCol(Column{Key: "cpu_s_per_1k_files", Title: "CPU-s/1k", Unit: "CPU-s/1k-files", Better: Lower, Prec: 4, Headline: true},
			func(res *bench.Result) float64 { return res.CPUSPer1kFiles },
			func(x bench.Run) float64 { return 1000 * per(x.UserNs+x.SysNs, x) / 1e9 }).marked(ioThreadMark, ioThreads), // the notes say how much
		figCol(Column{Key: "syscalls_per_file", Title: "syscalls/file", Unit: "syscalls/file", Better: Lower, Prec: 2, Wide: true},
			func(res *bench.Result) float64 { return res.SyscallsPerFile }, func(x bench.Run) float64 { return per(x.Syscalls, x) }),
		figCol(Column{Key: "csw_per_file", Title: "cs/file", Unit: "cs/file", Better: Lower, Prec: 2, Wide: true},
			func(res *bench.Result) float64 { return res.CSwPerFile }, func(x bench.Run) float64 { return per(x.NVCSw+x.NIVCSw, x) }),
		figCol(Column{Key: "file_errors", Title: "errors", Better: Lower, Wide: !errs},
			func(res *bench.Result) float64 { return float64(res.FileErrors) }, func(x bench.Run) float64 { return perPass(x.Errors, x) }))
	kinds := perfKinds(rows)
	cols = append(cols, perfCols(kinds)...)
	runtime := hasRuntime(rows)
	if runtime {
		cols = append(cols, runtimeCols()...)
	}
	cols = append(cols, checksumCol)

	d := newBenchDoc(r, "tree", cols, []string{""}, [][]*bench.Result{rows}, nil)
	extra := []string{plural(int(t.Files), "file"), units.FormatSize(t.Bytes)}
	what := strings.Join(extra, ", ")
	if t.Temporary {
		what += ", temporary"
	}
	archive := ""
	if t.Archive != "" {
		archive = units.QuotePath(t.Archive)
	}
	d.Header = benchHeader(r, []Field{{"tree", fmt.Sprintf("%s (%s)", units.QuotePath(t.Dir), what)}, {"archive", archive}},
		Field{"version", versionLine(r)})
	d.Config = benchConfig(r, "tree", t.Dir, t.Temporary, strings.Join(extra, ", "))
	if len(r.Results) == 0 {
		return d
	}
	l := &d.Legend
	addIf(l, true, "engine", "×N workers, qdN files in flight per worker")
	addIf(l, true, "files/s", "median over the runs (min–max) of files delivered (each whole, or with its own error) per second of wall time, walk, open, read and close included")
	addIf(l, d.marked(noisyMark), noisyLegend.Key, noisyLegend.Value)
	addIf(l, true, "GiB/s", "bytes delivered per second, median")
	addIf(l, true, "P50 P99", "latency per file, its first syscall to its bytes being available")
	addIf(l, true, "CPU-s/1k", "user+system CPU seconds per 1,000 files")
	addIf(l, d.marked(ioThreadMark), ioThreadLegend.Key, ioThreadLegend.Value)
	addIf(l, errs, "errors", "files delivered with their own error, per pass")
	perfLegend(l, kinds)
	addIf(l, true, "checksum", "ok: every run delivered the bytes os.ReadFile reads, file by file")
	wideErrs := "; errors, files delivered with their own error"
	if errs {
		wideErrs = ""
	}
	if runtime {
		wideErrs += runtimeWide
	}
	addIf(l, true, "--wide adds", "P99.9; syscalls/file, counted at the engine's own call sites, the walk not counted "+
		"(openat, read, close for raw; those the os package makes for readfile and pool; io_uring_enter for io_uring; "+
		"reads of the archive for archive); cs/file, context switches per file"+wideErrs)
	d.Notes = benchNotes(r, rows)
	return d
}

// isFioResult reports whether r is a fio twin's row.
func isFioResult(r *bench.Result) bool { return r.Tool == bench.ToolFio }

// twinOrder puts each fio row of a workload right under the iopath row it
// mirrors (same engine, cache and queue depth), and reports which were
// placed so. A fio row without its twin in the group keeps its place.
func twinOrder(rs []*bench.Result) ([]*bench.Result, map[*bench.Result]bool) {
	twinOf := map[*bench.Result][]*bench.Result{}
	taken := map[*bench.Result]bool{}
	under := map[*bench.Result]bool{}
	for _, f := range rs {
		if !isFioResult(f) {
			continue
		}
		for _, o := range rs {
			if isFioResult(o) || taken[o] || o.Engine != f.Twin || o.Cache != f.Cache || o.QD != f.QD ||
				(o.Twin != "" && o.Twin != f.Engine) {
				continue
			}
			taken[o] = true
			under[f] = true
			twinOf[o] = append(twinOf[o], f)
			break
		}
	}
	out := make([]*bench.Result, 0, len(rs))
	for _, res := range rs {
		if under[res] {
			continue
		}
		out = append(out, res)
		out = append(out, twinOf[res]...)
	}
	return out, under
}

// failure is what a row without figures shows in their place: "not run
// (interrupted)" for a row an interrupt kept from running, else "error: "
// and the row's error.
func failure(r *bench.Result) string {
	if notRun(r) {
		return "not run (interrupted)"
	}
	return "error: " + oneLine(r.Error)
}

// groupResults groups results by workload (all but the queue depth) in
// order of first appearance, keeping their order within a group.
func groupResults(results []bench.Result) [][]*bench.Result {
	var groups [][]*bench.Result
	index := map[string]int{}
	for i := range results {
		key := workload(&results[i], 0)
		j, ok := index[key]
		if !ok {
			j, index[key] = len(groups), len(groups)
			groups = append(groups, nil)
		}
		groups[j] = append(groups[j], &results[i])
	}
	return groups
}

// workload describes r's workload, with queue depth qd when it is not 0.
func workload(r *bench.Result, qd int) string {
	parts := workloadParts(r.Pattern, r.BS, r.Workers, qd, r.Consume)
	if r.Sync != "" {
		parts = append(parts, "sync "+r.Sync)
	}
	return strings.Join(parts, ", ")
}

// benchNotes gathers the notes: the report's own, each row's (a note that
// several rows of one engine share is written once), why runs were noisy,
// and how much CPU io_uring's kernel threads used.
func benchNotes(r *bench.Report, rows []*bench.Result) []string {
	var notes []string
	for _, n := range r.Notes {
		notes = append(notes, oneLine(n))
	}
	names := rowNames(rows)

	type shared struct {
		name, text string
		rows       []*bench.Result
	}
	var order []*shared
	byKey := map[[2]string]*shared{}
	for _, res := range rows {
		for _, n := range res.Notes {
			k := [2]string{engineName(res), oneLine(n)}
			s := byKey[k]
			if s == nil {
				s = &shared{name: k[0], text: k[1]}
				byKey[k] = s
				order = append(order, s)
			}
			s.rows = append(s.rows, res)
		}
	}
	for _, s := range order {
		var label string
		switch {
		case len(s.rows) > 1 && len(s.rows) == names.count[s.name]:
			label = s.name
		case len(s.rows) > 3:
			label = fmt.Sprintf("%s (%d rows)", s.name, len(s.rows))
		default:
			var q []string
			for _, res := range s.rows {
				q = append(q, names.qualifier(res))
			}
			label = fmt.Sprintf("%s (%s)", s.name, strings.Join(q, "; "))
		}
		notes = append(notes, label+": "+s.text)
	}

	for _, res := range rows {
		if res.Error != "" || res.NoisyRuns == 0 {
			continue
		}
		said := 0
		for i, run := range res.Runs {
			if run.Noisy != "" {
				notes = append(notes, fmt.Sprintf("%s run %d: noisy: %s", names.label(res), i+1, oneLine(run.Noisy)))
				said++
			}
		}
		if said == 0 {
			notes = append(notes, fmt.Sprintf("%s: %d of %d runs were noisy", names.label(res), res.NoisyRuns, len(res.Runs)))
		}
	}

	// The io_uring kernel threads' CPU, per engine: a row's own figures,
	// or the span of several rows'.
	var tNames []string
	tRows := map[string][]*bench.Result{}
	for _, res := range rows {
		if name := engineName(res); res.Error == "" && res.IOThreadCPUSPerGiB > 0 {
			if tRows[name] == nil {
				tNames = append(tNames, name)
			}
			tRows[name] = append(tRows[name], res)
		}
	}
	const what = "was io_uring's kernel threads (SQPOLL iou-sqp, io-wq iou-wrk) working for the run: " +
		"counted here; fio leaves it out"
	for _, name := range tNames {
		rs := tRows[name]
		if len(rs) == 1 {
			notes = append(notes, fmt.Sprintf("%s: %s of its %s CPU-s/GiB %s", names.label(rs[0]),
				fixed(rs[0].IOThreadCPUSPerGiB, 3), fixed(rs[0].CPUSPerGiB, 3), what))
			continue
		}
		lo, hi, pctLo, pctHi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1) // CPU-s/GiB, and % of the row's
		for _, res := range rs {
			lo, hi = min(lo, res.IOThreadCPUSPerGiB), max(hi, res.IOThreadCPUSPerGiB)
			if res.CPUSPerGiB > 0 && finite(res.CPUSPerGiB) {
				pct := 100 * res.IOThreadCPUSPerGiB / res.CPUSPerGiB
				pctLo, pctHi = min(pctLo, pct), max(pctHi, pct)
			}
		}
		share := ""
		if pctLo <= pctHi {
			share = ", " + span(pctLo, pctHi, 0, "%") + " of it,"
		}
		notes = append(notes, fmt.Sprintf("%s (%d rows marked %s): %s CPU-s/GiB of each row's figure%s %s",
			name, len(rs), ioThreadMark, span(lo, hi, 3, ""), share, what))
	}
	return notes
}

// span formats a range of figures, or one when they round alike.
func span(lo, hi float64, prec int, unit string) string {
	a, b := fixed(lo, prec), fixed(hi, prec)
	if a == b {
		return a + unit
	}
	return a + "–" + b + unit
}

// engineName names a row's engine: "pread", or "fio psync" for fio's.
func engineName(r *bench.Result) string {
	if isFioResult(r) {
		return "fio " + r.Engine
	}
	return r.Engine
}

// noteDims are the workload parameters that may tell an engine's rows
// apart in a note.
func noteDims(r *bench.Result) [5]string {
	return [5]string{r.Pattern, "bs " + units.FormatSize(int64(r.BS)), plural(r.Workers, "worker"), fmt.Sprintf("qd %d", r.QD), "consume " + r.Consume}
}

// names labels rows in notes: the engine and, in parentheses, the cache
// state and whatever else tells the engine's rows apart.
type names struct {
	count  map[string]int     // rows per engine name
	varies map[string][5]bool // per engine name, which noteDims vary
}

func rowNames(rows []*bench.Result) *names {
	n := &names{count: map[string]int{}, varies: map[string][5]bool{}}
	first := map[string][5]string{}
	for _, res := range rows {
		name, d := engineName(res), noteDims(res)
		n.count[name]++
		f, ok := first[name]
		if !ok {
			first[name] = d
			continue
		}
		v := n.varies[name]
		for k := range v {
			v[k] = v[k] || f[k] != d[k]
		}
		n.varies[name] = v
	}
	return n
}

// qualifier is what sets res apart from its engine's other rows.
func (n *names) qualifier(res *bench.Result) string {
	q := []string{res.Cache}
	for k, d := range noteDims(res) {
		if n.varies[engineName(res)][k] {
			q = append(q, d)
		}
	}
	return strings.Join(q, ", ")
}

// label is "mmap (warm, bs 4KiB)".
func (n *names) label(res *bench.Result) string {
	return fmt.Sprintf("%s (%s)", engineName(res), n.qualifier(res))
}
