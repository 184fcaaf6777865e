package report

// The HTML page of `iopath net bench --serve-file` and `--writev`, or
// sections of one: their Docs (netfile_doc.go) drawn by page.go, with
// charts made from the Docs' columns.

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
)

// NetFilePage is what NetFileHTML draws. Either result list may be empty.
type NetFilePage struct {
	Title     string // default "iopath net bench: file serving and writev"
	Command   string // the command line that produced it
	Machine   features.Machine
	FileServe *netresult.FileServeReport // its results and the methods skipped
	Writev    *netresult.WritevReport
	Notes     []string
}

// NetFileHTML writes p as one self-contained HTML page (page.go's: no
// script, no network, inline SVG charts): per side benchmark given, a
// section of charts (file serving: fs-cpu-ratio, fs-cpu, fs-gbps and,
// over several file sizes, fs-syscalls; writev: wv-cpu-ratio, wv-cpu and,
// over several k, wv-syscalls), then its Doc's results table, notes and
// definitions.
func NetFileHTML(w io.Writer, p NetFilePage) error {
	if p.Title == "" {
		p.Title = "iopath net bench: file serving and writev"
	}
	d := page{Title: p.Title, Subtitle: subtitle(time.Time{}, p.Machine), Command: p.Command,
		Machine: machineKV(p.Machine, ""), Generator: strings.TrimSpace("iopath " + p.Machine.IopathVersion)}
	if p.FileServe != nil && (len(p.FileServe.Results) > 0 || len(p.FileServe.Skipped) > 0) {
		d.Sections = append(d.Sections, nfFileSections(p.FileServe)...)
	}
	if p.Writev != nil && len(p.Writev.Results) > 0 {
		d.Sections = append(d.Sections, nfWritevSections(p.Writev.Results)...)
	}
	if len(d.Sections) == 0 {
		d.Sections = append(d.Sections, section{ID: "results", Title: "Results"})
	}
	if len(p.Notes) > 0 {
		d.Sections = append(d.Sections, section{ID: "notes", Title: "Notes", List: p.Notes})
	}
	return renderPage(w, d)
}

// nfDocSections are the results table of a side benchmark's Doc, its
// notes and definitions, titled for a page that may hold both sides.
func nfDocSections(id, title string, d *Doc, series []*hSeries) []section {
	out := docSections(id+"-results", title+" results", d, series...)
	for i := range out[1:] {
		out[i+1].Title = title + ": " + strings.ToLower(out[i+1].Title)
	}
	return out
}

func nfFileSections(rep *netresult.FileServeReport) []section {
	rows := nfFileRows(rep.Results)
	s := section{ID: "file-serving", Title: "File serving", Target: nfTargetLine(rows)}
	intro := "A file in the page cache served over loopback TCP four ways, every response verified byte for byte."
	if h := nfFileHeader(rows); h != "" {
		intro += " " + strings.ToUpper(h[:1]) + h[1:] + "."
	}
	s.Intro = []string{intro}
	d := FileServeDoc(&netresult.FileServeReport{Results: rows, Skipped: rep.Skipped})
	var names, sizes []string
	for _, r := range rows {
		names, sizes = append(names, r.Method), append(sizes, units.FormatSize(r.FileSize))
	}
	series := nfSeries(netresult.FileServeMethods(), names)
	sizes = uniq(sizes)

	// The darker foot of a ratio's bar is io_uring's kernel threads, over
	// readwrite's CPU: the Doc has a row per result, in rows' order.
	ratio, i := docBars(d, "cpu_vs_readwrite", series), 0
	for _, g := range ratio {
		for j := range g.bars {
			r := &rows[i]
			if base := nfBaseline(rows, r); g.bars[j].v > 0 && base > 0 && r.Bytes > 0 && r.IOThreadCPU > 0 {
				g.bars[j].share = r.IOThreadCPU.Seconds() / (float64(r.Bytes) / 1e9) / base
			}
			i++
		}
	}
	gbps := barChart("fs-gbps", "Throughput", "Median GB/s received and verified by the client; whiskers span the runs. On loopback the client's copy and check share the machine.",
		"GB/s", docBars(d, "gb_per_s", series), series, decimals(2))
	s.Charts = append(s.Charts, barChart("fs-cpu-ratio", "Server CPU per GB, relative to readwrite",
		"Each method's median CPU-s per GB divided by readwrite's at the same file size: below 1 is cheaper; the target is ≤ 0.6 for sendfile and splice at 1MiB. The darker foot of a bar is io_uring's kernel threads.",
		"× readwrite", ratio, series, decimals(2)))
	if len(d.Groups) == len(sizes) && len(sizes) > 1 { // one connection count: lines over the file sizes
		s.Charts = append(s.Charts,
			logLineChart("fs-cpu", "Server CPU per GB sent", "Median CPU-seconds of the serving threads (and io_uring's kernel threads) per GB (10⁹ B), lower is better (log scale: per-request costs dominate small files).",
				"file size", "CPU-s/GB", sizes, docLines(d, "server_cpu_s_per_gb", series)),
			gbps,
			logLineChart("fs-syscalls", "System calls per MB", "The server's system calls per 10⁶ B sent, counted at its call sites (log scale).",
				"file size", "syscalls/MB", sizes, docLines(d, "syscalls_per_mb", series)))
	} else {
		s.Charts = append(s.Charts,
			barChart("fs-cpu", "Server CPU per GB sent", "Median CPU-seconds of the serving threads per GB (10⁹ B), lower is better; whiskers span the runs.",
				"CPU-s/GB", docBars(d, "server_cpu_s_per_gb", series), series, decimals(3)),
			gbps)
	}
	return append([]section{s}, nfDocSections("file-serving", "File serving", d, series)...)
}

func nfWritevSections(in []netresult.Writev) []section {
	rows := nfWritevRows(in)
	s := section{ID: "writev", Title: "writev batching",
		Intro: []string{"A response of k parts sent over loopback TCP four ways; a reader drains the other end and checks every byte. The sender runs on a thread of its own, whose CPU clock and write counters are the figures."}}
	d := WritevDoc(&netresult.WritevReport{Results: rows})
	var names, ks []string
	for _, r := range rows {
		names, ks = append(names, r.Way), append(ks, strconv.Itoa(r.K))
	}
	series := nfSeries(netresult.WritevWays(), names)
	ks = uniq(ks)
	s.Charts = append(s.Charts, barChart("wv-cpu-ratio", "Sender CPU per response, relative to k writes",
		"Each way's median CPU per response divided by that of k separate writes of the same parts: below 1 is cheaper.",
		"× writes", docBars(d, "cpu_vs_writes", series), series, decimals(2)))
	if len(ks) > 1 {
		s.Charts = append(s.Charts,
			logLineChart("wv-cpu", "Sender CPU per response", "Median CPU nanoseconds of the sending thread per response, lower is better (log scale).",
				"parts per response (k)", "CPU ns/resp", ks, docLines(d, "cpu_ns_per_response", series)),
			logLineChart("wv-syscalls", "System calls per response", "write(2)/writev(2) calls as the kernel counted them for the Go ways, io_uring_enter for io_uring (log scale).",
				"parts per response (k)", "syscalls/resp", ks, docLines(d, "syscalls_per_response", series)))
	} else {
		s.Charts = append(s.Charts, barChart("wv-cpu", "Sender CPU per response", "Median CPU nanoseconds of the sending thread per response, lower is better; whiskers span the runs.",
			"CPU ns/resp", docBars(d, "cpu_ns_per_response", series), series, decimals(0)))
	}
	return append([]section{s}, nfDocSections("writev", "writev", d, series)...)
}

// nfSeries is a chart series per name: those in order first, in its
// order, then any other in order of appearance.
func nfSeries(order, names []string) []*hSeries {
	names = uniq(names)
	slices.SortStableFunc(names, func(a, b string) int { return rank(order, a) - rank(order, b) })
	series, _ := nameSeries(names)
	return series
}
