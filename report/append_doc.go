package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/units"
)

// The adapter of bench --append (kind "append") into the Doc and the
// HTML page: a group per writer count, a row per append method.

// appendBase is the method the "vs file+fsync" column divides by.
const appendBase = bench.AppendFileFsync

// appendMethods says what each append method does, for the legend.
var appendMethods = []Field{
	{bench.AppendFileFsync, "os.File.Write of the record, then f.Sync (fsync), under a mutex, per record: what most Go code does"},
	{bench.AppendFileFdatasync, "the same with fdatasync(2) (internal/sys.Fdatasync) for the sync"},
	{bench.AppendLogPwrite, "iopath.Log with WithEngine(\"pwrite\"): Appends waiting at once share one pwrite(2) and one fdatasync(2) (group commit)"},
	{bench.AppendLogURing, "iopath.Log with WithEngine(\"io_uring\"): group commit as one io_uring WRITE linked to an FSYNC (DATASYNC)"},
}

// perRecord divides a run's counter by its durable records; NaN for a
// run without any.
func perRecord(n int64, x bench.Run) float64 {
	if x.Blocks <= 0 {
		return math.NaN()
	}
	return float64(n) / float64(x.Blocks)
}

// appendDoc is BenchDoc for durable appends (bench --append).
func appendDoc(r *bench.Report) *Doc {
	a := r.Append
	// A group per writer count, in the order of the results.
	var titles []string
	var groups [][]*bench.Result
	at := map[int]int{}
	for i := range r.Results {
		res := &r.Results[i]
		gi, ok := at[res.Workers]
		if !ok {
			gi, at[res.Workers] = len(groups), len(groups)
			groups = append(groups, nil)
			titles = append(titles, plural(res.Workers, "writer"))
		}
		groups[gi] = append(groups[gi], res)
	}
	// The vs file+fsync ratio: a row's median records/s over that of
	// file+fsync with as many writers.
	base := map[int]float64{}
	for _, g := range groups {
		for _, res := range g {
			if res.Engine == appendBase && res.Error == "" && res.IOPS > 0 {
				base[res.Workers] = res.IOPS
			}
		}
	}
	var checked bool
	for _, res := range r.Results {
		checked = checked || res.ChecksumOK != nil
	}

	lat := latencyCols()
	for i := range lat {
		lat[i].Wide = false // P99.9 too: how bad the tail of a durable append is
		if lat[i].Key == "lat_p99_ns" {
			lat[i].Headline = true
		}
	}
	pct := func(ns func(bench.Run) int64) func(bench.Run) float64 {
		return func(x bench.Run) float64 { return 100 * float64(ns(x)) / float64(max(x.WallNs, 1)) }
	}
	cols := []benchCol{
		textCol("method", "method", false, func(res *bench.Result) string { return res.Engine }),
		textCol("writers", "writers", true, func(res *bench.Result) string { return fmt.Sprint(res.Workers) }),
		textCol("record_size", "record", true, func(res *bench.Result) string { return units.FormatSize(int64(res.BS)) }),
		figCol(Column{Key: "records_per_s", Title: "records/s", Unit: "records/s", Better: Higher, Spread: true, Headline: true},
			func(res *bench.Result) float64 { return res.IOPS },
			func(x bench.Run) float64 { return float64(x.Blocks) / runSecs(x) }).marked(noisyMark, noisyRuns),
		figCol(Column{Key: "mb_per_s", Title: "MB/s", Unit: "MB/s", Better: Higher, Prec: 2},
			func(res *bench.Result) float64 { return res.BytesPerS / 1e6 }, func(x bench.Run) float64 { return x.BytesPerS / 1e6 }),
	}
	if len(base) > 0 {
		cols = append(cols, benchCol{Column{Key: "vs_file_fsync", Title: "vs " + appendBase, Better: Higher, Prec: 2},
			func(res *bench.Result, _ []bench.Run) Cell {
				b := base[res.Workers]
				if b <= 0 || res.IOPS <= 0 {
					return Figure(math.NaN())
				}
				c := Figure(res.IOPS / b)
				c.Text = ratio(c.Value)
				return c
			}})
	}
	cols = append(cols, lat...)
	cols = append(cols,
		figCol(Column{Key: "syncs_per_record", Title: "fsyncs/record", Better: Lower, Prec: 3},
			func(res *bench.Result) float64 { return res.SyncsPerRecord }, func(x bench.Run) float64 { return perRecord(x.Syncs, x) }),
		figCol(Column{Key: "cpu_us_per_record", Title: "CPU µs/record", Unit: "µs/record", Better: Lower, Prec: 1, Headline: true},
			func(res *bench.Result) float64 { return res.CPUUsPerRecord },
			func(x bench.Run) float64 { return perRecord(x.UserNs+x.SysNs, x) / 1e3 }).marked(ioThreadMark, ioThreads),
		figCol(Column{Key: "writes_per_record", Title: "writes/record", Better: Lower, Prec: 3, Wide: true},
			func(res *bench.Result) float64 {
				return medianRuns(res, func(x bench.Run) float64 { return perRecord(x.Syscalls-x.Syncs, x) })
			},
			func(x bench.Run) float64 { return perRecord(x.Syscalls-x.Syncs, x) }),
		figCol(Column{Key: "csw_per_record", Title: "cs/record", Better: Lower, Prec: 2, Wide: true},
			func(res *bench.Result) float64 {
				return medianRuns(res, func(x bench.Run) float64 { return perRecord(x.NVCSw+x.NIVCSw, x) })
			},
			func(x bench.Run) float64 { return perRecord(x.NVCSw+x.NIVCSw, x) }),
		figCol(Column{Key: "usr_pct", Title: "usr%", Unit: "%", Wide: true}, func(res *bench.Result) float64 { return res.UsrPct },
			pct(func(x bench.Run) int64 { return x.UserNs })),
		figCol(Column{Key: "sys_pct", Title: "sys%", Unit: "%", Wide: true}, func(res *bench.Result) float64 { return res.SysPct },
			pct(func(x bench.Run) int64 { return x.SysNs })))
	if checked {
		cols = append(cols, benchCol{Column{Key: "verified", Title: "verified"},
			func(res *bench.Result, _ []bench.Run) Cell {
				switch ok := res.ChecksumOK; {
				case ok == nil:
					return TextCell("n/a")
				case *ok:
					return TextCell("ok")
				}
				return TextCell("LOST")
			}})
	}

	d := newBenchDoc(r, bench.KindAppend, cols, titles, groups, nil)
	what, extra := "", ""
	if a != nil {
		what = fmt.Sprintf("%s records, %v a run (at most %s a file), in temporary files in %s",
			units.FormatSize(int64(a.RecordSizeBytes)), time.Duration(a.DurationNs), units.FormatSize(a.MaxBytes), units.QuotePath(a.Dir))
		if a.Filesystem != "" {
			what += " (" + a.Filesystem + ")"
		}
		extra = units.FormatSize(int64(a.RecordSizeBytes)) + " records, " + a.Filesystem
	}
	var clock string
	if r.Machine.LatencyClock != "" {
		clock = r.Machine.LatencyClock + " (per-append latency)"
	}
	d.Header = benchHeader(r, []Field{{"appends", what}}, Field{"clock", clock}, Field{"version", versionLine(r)})
	d.Config = []Field{{"goos", "linux"}, {"goarch", r.Machine.Arch}, {"pkg", "github.com/iopath/iopath"}, {"cpu", r.Machine.CPUModel}}
	if extra != "" {
		d.Config = append(d.Config, Field{"append", extra})
	}
	if len(r.Results) == 0 {
		return d
	}
	l := &d.Legend
	var methods []string
	for _, res := range r.Results {
		if !slices.Contains(methods, res.Engine) {
			methods = append(methods, res.Engine)
		}
	}
	for _, f := range appendMethods {
		addIf(l, slices.Contains(methods, f.Key), f.Key, f.Value)
	}
	addIf(l, true, "records/s", "median over the runs (min–max) of records made durable (the append returned) per second of wall time")
	addIf(l, d.marked(noisyMark), noisyLegend.Key, noisyLegend.Value)
	addIf(l, true, "MB/s", "record bytes made durable per second (10^6 bytes), median")
	addIf(l, len(base) > 0, "vs "+appendBase, "median records/s over "+appendBase+"'s with as many writers")
	addIf(l, true, "P50 P99 P99.9", "latency of one append, call to return (waiting for the mutex or for a commit included), over all runs' appends")
	addIf(l, true, "fsyncs/record", "sync calls per durable record, median: fsync or fdatasync for the os.File methods (one a record), a Log's group commits (fdatasync, or io_uring FSYNC requests)")
	addIf(l, true, "CPU µs/record", "user+system CPU of the process (every thread, io_uring's too) per durable record, median")
	addIf(l, d.marked(ioThreadMark), ioThreadMark, "includes io_uring's kernel threads (io-wq workers)")
	addIf(l, checked, "verified", "ok: after every run the file, its pages dropped from the page cache, was read back and held every acknowledged record intact, each writer's in order; LOST: a run's did not (the run failed)")
	addIf(l, true, "--wide adds", "writes/record (write calls, or io_uring WRITE requests, per record), cs/record (context switches per record), usr% sys% (CPU as % of one core)")
	d.Notes = appendNotes(r)
	return d
}

// medianRuns is the median of get over res's runs that succeeded.
func medianRuns(res *bench.Result, get func(bench.Run) float64) float64 {
	ok := okRuns(res, true)
	if len(ok) == 0 {
		return math.NaN()
	}
	return stats.MedianOf(ok, get)
}

// appendLabel names an append row in notes: "log/pwrite ×8".
func appendLabel(res *bench.Result) string { return fmt.Sprintf("%s ×%d", res.Engine, res.Workers) }

// appendNotes are the report's notes, each row's (one text shared by
// several rows written once, with their labels), why runs were noisy,
// and the share of CPU io_uring's kernel threads took.
func appendNotes(r *bench.Report) []string {
	var notes []string
	for _, n := range r.Notes {
		notes = append(notes, oneLine(n))
	}
	var order []string
	labels := map[string][]string{}
	for i := range r.Results {
		res := &r.Results[i]
		for _, n := range res.Notes {
			n = oneLine(n)
			if labels[n] == nil {
				order = append(order, n)
			}
			labels[n] = append(labels[n], appendLabel(res))
		}
	}
	for _, n := range order {
		notes = append(notes, strings.Join(labels[n], ", ")+": "+n)
	}
	for i := range r.Results {
		res := &r.Results[i]
		if res.Error != "" {
			continue
		}
		for j, run := range res.Runs {
			if run.Noisy != "" {
				notes = append(notes, fmt.Sprintf("%s run %d: noisy: %s", appendLabel(res), j+1, oneLine(run.Noisy)))
			}
		}
		if res.IOThreadCPUSPerGiB > 0 {
			us := medianRuns(res, func(x bench.Run) float64 { return perRecord(x.IOThreadNs, x) / 1e3 })
			notes = append(notes, fmt.Sprintf("%s: %s of its %s CPU µs/record was io_uring's kernel threads (io-wq) working for it",
				appendLabel(res), fixed(us, 1), fixed(res.CPUUsPerRecord, 1)))
		}
	}
	return notes
}

// appendPage is the page of an append report: durable records per
// second, P99 per append and CPU per record, a bar per method in a
// group per writer count, then the table, notes and definitions.
func appendPage(r *bench.Report) page {
	a := r.Append
	title := "iopath bench --append"
	var what string
	if a != nil {
		title += ": " + units.FormatSize(int64(a.RecordSizeBytes)) + " records"
		what = fmt.Sprintf("%s records, %v a run (at most %s a file), in %s (%s): each run's file made for it and removed after",
			units.FormatSize(int64(a.RecordSizeBytes)), time.Duration(a.DurationNs), units.FormatSize(a.MaxBytes), a.Dir, a.Filesystem)
	}
	p := benchPage(r, title, kv{"appends", what})
	d := BenchDoc(r)
	var rows []*bench.Result
	for i := range r.Results {
		rows = append(rows, &r.Results[i]) // as appendDoc orders them
	}
	series, _ := benchSeries(rows)
	// P99 in milliseconds: an axis of nanoseconds would read 150000000.
	p99 := docBars(d, "lat_p99_ns", series)
	for _, g := range p99 {
		for i := range g.bars {
			b := &g.bars[i]
			b.v, b.lo, b.hi = b.v/1e6, b.lo/1e6, b.hi/1e6
		}
	}
	lat := func(ms float64) string { return latency(int64(ms * 1e6)) }
	p.Sections = []section{
		{ID: "throughput", Title: "Durable records per second", Charts: []chart{barChart("append-records-per-s", "Durable records per second",
			"Median records made durable per second (the append returned; higher is better), a group per writer count; the whisker spans "+
				"the slowest to the fastest run. A shaded gap is a row that failed or did not run (hover for why).",
			"records/s", docBars(d, "records_per_s", series), series, nil)}},
		{ID: "latency", Title: "Latency", Charts: []chart{barChart("append-p99", "P99 per append", "The 99th percentile of one append's "+
			"latency, call to return, over all runs' appends (lower is better); the whisker spans the runs' own P99s.", "ms",
			p99, series, lat)}},
		{ID: "cpu", Title: "CPU cost", Charts: []chart{barChart("append-cpu-per-record", "CPU per record", "User + system CPU "+
			"microseconds per durable record (lower is better), median over the runs; the whisker spans the runs.", "µs/record",
			docBars(d, "cpu_us_per_record", series), series, nil)}},
	}
	p.Sections = append(p.Sections, docSections("results", "Results", d, series...)...)
	return p
}
