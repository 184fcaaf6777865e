package report

// The HTML page of `iopath net bench --serve-file` (netio/filesrv) and
// `--writev` (netio/writev), or sections of one, with inline SVG charts
// drawn by svg.go's helpers, and what it shares with their Docs
// (netfile_doc.go): the row order, the baselines, the target, the legends.

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/filesrv"
	"github.com/iopath/iopath/netio/writev"
)

// nfOrdered returns the names in want's order, then any others in order
// of appearance.
func nfOrdered(want []string, have []string) []string {
	var out []string
	for _, n := range want {
		if slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	for _, n := range have {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// --- file serving

// nfFileRows sorts rs by file size, then method (Methods order), stably.
func nfFileRows(rs []filesrv.Result) []filesrv.Result {
	order := filesrv.Methods()
	idx := func(m string) int {
		if i := slices.Index(order, m); i >= 0 {
			return i
		}
		return len(order)
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b filesrv.Result) int {
		return cmp.Or(cmp.Compare(a.FileSize, b.FileSize), cmp.Compare(a.Conns, b.Conns), cmp.Compare(idx(a.Method), idx(b.Method)))
	})
	return out
}

// nfBaseline is readwrite's CPU-s/GB for r's size and connections, or 0.
func nfBaseline(rs []filesrv.Result, r *filesrv.Result) float64 {
	for i := range rs {
		b := &rs[i]
		if b.Method == filesrv.ReadWrite && b.FileSize == r.FileSize && b.Conns == r.Conns && b.Err == "" {
			return b.CPUSecPerGB
		}
	}
	return 0
}

// nfRatio formats a/b as "0.42×", or "-" when either is missing.
func nfRatio(a, b float64) string {
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// nfNum formats v with three significant figures (trailing zeros kept,
// so that a column reads evenly), "-" when not measured.
func nfNum(v float64) string {
	if !(v > 0) || math.IsInf(v, 0) {
		return "-"
	}
	prec := 0
	for lim := 100.0; v < lim && prec < 6; lim /= 10 {
		prec++
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// nfTarget is the file-serving target: at 1 MiB, sendfile and splice use
// at most 0.6× readwrite's server CPU per GB.
const (
	nfTargetSize  = 1 << 20
	nfTargetRatio = 0.6
)

// nfTargetLine says how the 1 MiB rows did against the target, or "" when
// they were not all measured.
func nfTargetLine(rs []filesrv.Result) string {
	var parts []string
	met := true
	for _, m := range []string{filesrv.Sendfile, filesrv.Splice} {
		for i := range rs {
			r := &rs[i]
			if r.Method != m || r.FileSize != nfTargetSize || r.Err != "" {
				continue
			}
			base := nfBaseline(rs, r)
			if base <= 0 || r.CPUSecPerGB <= 0 {
				continue
			}
			ratio := r.CPUSecPerGB / base
			met = met && ratio <= nfTargetRatio
			parts = append(parts, fmt.Sprintf("%s %.2f×", m, ratio))
			break
		}
	}
	if len(parts) < 2 {
		return ""
	}
	verdict := "met"
	if !met {
		verdict = "NOT met"
	}
	return fmt.Sprintf("target at 1MiB: %s readwrite's server CPU per GB (want ≤ %.1f×): %s",
		strings.Join(parts, ", "), nfTargetRatio, verdict)
}

const fileServeLegend = `GB/s           file bytes received and verified per second of wall time (1 GB = 10⁹ B),
               median over the runs, with the slowest and fastest run
CPU-s/GB       server CPU seconds per GB sent: the threads serving the data connections
               (their own CPU clocks: kernel work on the send path included, client excluded)
               plus io_uring's kernel threads; lower is better
×readwrite     CPU-s/GB ÷ readwrite's at the same file size
syscalls/MB    the server's system calls per 10⁶ B sent, counted at its own call sites: the
               recv of each request, pread, send, sendfile, splice, io_uring_enter
sys/resp       the same per response (one response = the whole file)
proc CPU-s/GB  the whole server process (RUSAGE_SELF: Go runtime and control connection
               included), when the server ran in a process of its own
verified       ok: every response complete and byte-exact; else how many bytes differed
`

// nfFileHeader describes the server's setup when the rows share it.
func nfFileHeader(rows []filesrv.Result) string {
	if len(rows) == 0 {
		return ""
	}
	var p []string
	if !nfVaries(rows, func(r filesrv.Result) string { return strconv.FormatBool(r.InProcess) }) {
		if rows[0].InProcess {
			p = append(p, "server in the client's process (CPU from its own threads)")
		} else {
			p = append(p, "server in a child process")
		}
	}
	if !nfVaries(rows, func(r filesrv.Result) string { return strconv.Itoa(r.Conns) }) {
		p = append(p, plural(rows[0].Conns, "connection")+", one request at a time each")
	}
	if c := rows[0].Chunk; c > 0 && !nfVaries(rows, func(r filesrv.Result) string { return strconv.Itoa(r.Chunk) }) {
		p = append(p, "chunk "+units.FormatSize(int64(c)))
	}
	if d := rows[0].Depth; d > 0 && !nfVaries(rows, func(r filesrv.Result) string { return strconv.Itoa(r.Depth) }) {
		p = append(p, fmt.Sprintf("io_uring depth %d", d))
	}
	return strings.Join(p, "; ")
}

// --- writev

// nfWritevRows sorts rs by k, then way (Ways order), stably.
func nfWritevRows(rs []writev.Result) []writev.Result {
	order := writev.Ways()
	idx := func(w string) int {
		if i := slices.Index(order, w); i >= 0 {
			return i
		}
		return len(order)
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b writev.Result) int {
		return cmp.Or(cmp.Compare(a.K, b.K), cmp.Compare(idx(a.Way), idx(b.Way)))
	})
	return out
}

func nfWritesCPU(rs []writev.Result, k int) float64 {
	for _, r := range rs {
		if r.Way == writev.Writes && r.K == k && r.Err == "" {
			return r.CPUNsPerResp
		}
	}
	return 0
}

const writevLegend = `k              parts per response (64 B–1 KiB each unless configured otherwise)
syscalls/resp  system calls the sending thread made per response: write(2)/writev(2) as the
               kernel counted them (/proc/thread-self/io syscw: Go's own retries included)
               for the Go ways; io_uring_enter for io_uring
CPU ns/resp    the sending thread's CPU per response (CLOCK_THREAD_CPUTIME_ID), median over
               the runs with the lowest and highest; includes the kernel's send path
×writes        CPU ns/resp ÷ that of k separate writes
wall ns/resp   elapsed time per response (the reader shares the machine)
verified       ok: the reader got exactly the bytes sent, in order
`

// --- helpers

func nfVaries[T any](rs []T, f func(T) string) bool {
	seen := map[string]bool{}
	for _, r := range rs {
		seen[f(r)] = true
	}
	return len(seen) > 1
}

func nfInt(v float64) string {
	if !(v > 0) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatInt(int64(math.Round(v)), 10)
}

func nfVerified(ok bool, corrupted int64) string {
	switch {
	case ok:
		return "ok"
	case corrupted > 0:
		return fmt.Sprintf("%d B CORRUPT", corrupted)
	}
	return "NO"
}

// --- HTML

// NetFilePage is what NetFileHTML draws. Either result list may be empty.
type NetFilePage struct {
	Title     string // default "iopath net bench: file serving and writev"
	Command   string // the command line that produced it
	Machine   features.Machine
	FileServe []filesrv.Result
	Writev    []writev.Result
	Notes     []string
}

// NetFileHTML writes p as one self-contained HTML page (page.go's: no
// script, no network, inline SVG charts). The sections are
// FileServeHTML's and WritevHTML's.
func NetFileHTML(w io.Writer, p NetFilePage) error {
	if p.Title == "" {
		p.Title = "iopath net bench: file serving and writev"
	}
	d := page{Title: p.Title, Subtitle: subtitle(time.Time{}, p.Machine), Command: p.Command,
		Machine: machineKV(p.Machine, ""), Generator: strings.TrimSpace("iopath " + p.Machine.IopathVersion)}
	if len(p.FileServe) > 0 {
		d.Sections = append(d.Sections, nfFileSections(p.FileServe)...)
	}
	if len(p.Writev) > 0 {
		d.Sections = append(d.Sections, nfWritevSections(p.Writev)...)
	}
	if len(d.Sections) == 0 {
		d.Sections = append(d.Sections, section{ID: "results", Title: "Results"})
	}
	if len(p.Notes) > 0 {
		d.Sections = append(d.Sections, section{ID: "notes", Title: "Notes", List: p.Notes})
	}
	return renderPage(w, d)
}

// FileServeHTML writes the file-serving sections alone (<section
// id="file-serving"> with the charts, then the results table, its notes
// and definitions), for a page that has the report's styles.
func FileServeHTML(w io.Writer, rs []filesrv.Result) error {
	return renderSections(w, nfFileSections(rs))
}

// WritevHTML writes the writev sections alone (<section id="writev">...).
func WritevHTML(w io.Writer, rs []writev.Result) error {
	return renderSections(w, nfWritevSections(rs))
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

func nfFileSections(in []filesrv.Result) []section {
	rows := nfFileRows(in)
	s := section{ID: "file-serving", Title: "File serving", Target: nfTargetLine(rows)}
	intro := "A file in the page cache served over loopback TCP four ways, every response verified byte for byte."
	if h := nfFileHeader(rows); h != "" {
		intro += " " + strings.ToUpper(h[:1]) + h[1:] + "."
	}
	s.Intro = []string{intro}

	conns := nfVaries(rows, func(r filesrv.Result) string { return strconv.Itoa(r.Conns) })
	tip := func(r filesrv.Result) string {
		return fmt.Sprintf("%s, %s: %s GB/s, %s CPU-s/GB (%s readwrite), %s syscalls/MB, %d runs",
			r.Method, units.FormatSize(r.FileSize), nfNum(r.GBps), nfNum(r.CPUSecPerGB),
			nfRatio(r.CPUSecPerGB, nfBaseline(rows, &r)), nfNum(r.SyscallsPerMB), r.Runs)
	}
	p := newNFPlot(rows, filesrv.Methods(), func(r filesrv.Result) string { return r.Method }, tip,
		func(r filesrv.Result) string { return units.FormatSize(r.FileSize) },
		func(r filesrv.Result) string {
			if conns {
				return fmt.Sprintf("%s, %s", units.FormatSize(r.FileSize), plural(r.Conns, "conn"))
			}
			return units.FormatSize(r.FileSize)
		},
		func(r filesrv.Result) string {
			if r.Responses == 0 {
				return r.Err
			}
			return ""
		})
	gbps := p.bars("fs-gbps", "Throughput", "Median GB/s received and verified by the client; whiskers span the runs. On loopback the client's copy and check share the machine.",
		"GB/s", decimals(2), func(r filesrv.Result) hBar { return hBar{v: r.GBps, lo: r.GBpsMin, hi: r.GBpsMax, tip: tip(r)} })
	s.Charts = append(s.Charts, p.bars("fs-cpu-ratio", "Server CPU per GB, relative to readwrite",
		"Each method's median CPU-s per GB divided by readwrite's at the same file size: below 1 is cheaper; the target is ≤ 0.6 for sendfile and splice at 1MiB. The darker foot of a bar is io_uring's kernel threads.",
		"× readwrite", decimals(2), func(r filesrv.Result) hBar {
			base := nfBaseline(rows, &r)
			if base <= 0 || !(r.CPUSecPerGB > 0) {
				return hBar{tip: tip(r) + " (no readwrite figure to compare with)"}
			}
			b := hBar{v: r.CPUSecPerGB / base, tip: tip(r)}
			if r.Bytes > 0 && r.IOThreadCPU > 0 {
				b.share = r.IOThreadCPU.Seconds() / (float64(r.Bytes) / 1e9) / base
			}
			return b
		}))
	if !conns && len(p.cats) > 1 {
		s.Charts = append(s.Charts,
			p.lines("fs-cpu", "Server CPU per GB sent", "Median CPU-seconds of the serving threads (and io_uring's kernel threads) per GB (10⁹ B), lower is better (log scale: per-request costs dominate small files).",
				"file size", "CPU-s/GB", func(r filesrv.Result) float64 { return r.CPUSecPerGB }),
			gbps,
			p.lines("fs-syscalls", "System calls per MB", "The server's system calls per 10⁶ B sent, counted at its call sites (log scale).",
				"file size", "syscalls/MB", func(r filesrv.Result) float64 { return r.SyscallsPerMB }))
	} else {
		s.Charts = append(s.Charts,
			p.bars("fs-cpu", "Server CPU per GB sent", "Median CPU-seconds of the serving threads per GB (10⁹ B), lower is better; whiskers span the runs.",
				"CPU-s/GB", decimals(3), func(r filesrv.Result) hBar {
					return hBar{v: r.CPUSecPerGB, lo: r.CPUSecPerGBMin, hi: r.CPUSecPerGBMax, tip: tip(r)}
				}),
			gbps)
	}

	return append([]section{s}, nfDocSections("file-serving", "File serving", FileServeDoc(rows), p.order)...)
}

func nfWritevSections(in []writev.Result) []section {
	rows := nfWritevRows(in)
	s := section{ID: "writev", Title: "writev batching",
		Intro: []string{"A response of k parts sent over loopback TCP four ways; a reader drains the other end and checks every byte. The sender runs on a thread of its own, whose CPU clock and write counters are the figures."}}
	tip := func(r writev.Result) string {
		return fmt.Sprintf("%s, k=%d (%d B): %s CPU ns/resp (%s writes), %.2f syscalls/resp, %d runs",
			r.Way, r.K, r.RespBytes, nfInt(r.CPUNsPerResp), nfRatio(r.CPUNsPerResp, nfWritesCPU(rows, r.K)), r.SyscallsPerResp, r.Runs)
	}
	p := newNFPlot(rows, writev.Ways(), func(r writev.Result) string { return r.Way }, tip,
		func(r writev.Result) string { return strconv.Itoa(r.K) },
		func(r writev.Result) string { return fmt.Sprintf("k=%d", r.K) },
		func(r writev.Result) string {
			if r.Responses == 0 {
				return r.Err
			}
			return ""
		})
	s.Charts = append(s.Charts, p.bars("wv-cpu-ratio", "Sender CPU per response, relative to k writes",
		"Each way's median CPU per response divided by that of k separate writes of the same parts: below 1 is cheaper.",
		"× writes", decimals(2), func(r writev.Result) hBar {
			base := nfWritesCPU(rows, r.K)
			if base <= 0 || !(r.CPUNsPerResp > 0) {
				return hBar{tip: tip(r) + " (no writes figure to compare with)"}
			}
			return hBar{v: r.CPUNsPerResp / base, tip: tip(r)}
		}))
	if len(p.cats) > 1 {
		s.Charts = append(s.Charts,
			p.lines("wv-cpu", "Sender CPU per response", "Median CPU nanoseconds of the sending thread per response, lower is better (log scale).",
				"parts per response (k)", "CPU ns/resp", func(r writev.Result) float64 { return r.CPUNsPerResp }),
			p.lines("wv-syscalls", "System calls per response", "write(2)/writev(2) calls as the kernel counted them for the Go ways, io_uring_enter for io_uring (log scale).",
				"parts per response (k)", "syscalls/resp", func(r writev.Result) float64 { return r.SyscallsPerResp }))
	} else {
		s.Charts = append(s.Charts, p.bars("wv-cpu", "Sender CPU per response", "Median CPU nanoseconds of the sending thread per response, lower is better; whiskers span the runs.",
			"CPU ns/resp", decimals(0), func(r writev.Result) hBar {
				return hBar{v: r.CPUNsPerResp, lo: r.CPUNsPerRespMin, hi: r.CPUNsPerRespMax, tip: tip(r)}
			}))
	}
	return append([]section{s}, nfDocSections("writev", "writev", WritevDoc(rows), p.order)...)
}

// nfPlot draws a side benchmark's rows: bars in groups (a file size, a
// k), or a line per series over the x categories.
type nfPlot[T any] struct {
	rows   []T
	order  []*hSeries
	series map[string]*hSeries
	cats   []string       // x categories, in the rows' order
	name   func(T) string // the row's series
	tip    func(T) string // its tooltip
	cat    func(T) string // its x category
	group  func(T) string // its bar group
	failed func(T) string // why it has no figures, or ""
}

// newNFPlot makes a plot of rows, its series in want's order, then any
// others in order of appearance.
func newNFPlot[T any](rows []T, want []string, name, tip, cat, group, failed func(T) string) nfPlot[T] {
	p := nfPlot[T]{rows: rows, name: name, tip: tip, cat: cat, group: group, failed: failed}
	var names []string
	for _, r := range rows {
		if n := name(r); !slices.Contains(names, n) {
			names = append(names, n)
		}
		if c := cat(r); !slices.Contains(p.cats, c) {
			p.cats = append(p.cats, c)
		}
	}
	p.order, p.series = nameSeries(nfOrdered(want, names))
	return p
}

func (p nfPlot[T]) bars(id, title, caption, unit string, value func(float64) string, bar func(T) hBar) chart {
	var gs []hBarGroup
	for _, r := range p.rows {
		if l := p.group(r); len(gs) == 0 || gs[len(gs)-1].label != l {
			gs = append(gs, hBarGroup{label: l})
		}
		b := bar(r)
		if e := p.failed(r); e != "" {
			b = hBar{err: e, tip: p.name(r) + ": " + e}
		}
		b.s = p.series[p.name(r)]
		gs[len(gs)-1].bars = append(gs[len(gs)-1].bars, b)
	}
	return chart{ID: id, Title: title, Caption: caption, SVG: template.HTML(hBarChart(hBarSpec{id: id, title: title, unit: unit,
		groups: gs, series: p.order, value: value, shareLabel: "io_uring kernel threads"}))}
}

func (p nfPlot[T]) lines(id, title, caption, xLabel, unit string, y func(T) float64) chart {
	var lines []hLine
	for _, s := range p.order {
		l := hLine{s: s}
		for _, r := range p.rows {
			if p.name(r) != s.name {
				continue
			}
			pt := hPoint{x: float64(slices.Index(p.cats, p.cat(r))), y: y(r), tip: p.tip(r)}
			if e := p.failed(r); e != "" {
				pt = hPoint{x: pt.x, err: e, tip: s.name + ": " + e}
			}
			l.pts = append(l.pts, pt)
		}
		lines = append(lines, l)
	}
	return chart{ID: id, Title: title, Caption: caption, SVG: template.HTML(hLineChart(hLineSpec{id: id, title: title,
		x: hAxisSpec{label: xLabel, cats: p.cats}, y: hAxisSpec{label: unit, log10: true, fmt: hSig3}, lines: lines}))}
}

// nfDefs turns a text legend (term, then its text over indented lines)
// into definitions.
func nfDefs(legend string) []kv {
	var out []kv
	for _, line := range strings.Split(strings.TrimRight(legend, "\n"), "\n") {
		if strings.HasPrefix(line, " ") && len(out) > 0 {
			out[len(out)-1].V += " " + strings.TrimSpace(line)
			continue
		}
		term, text, _ := strings.Cut(line, "  ")
		out = append(out, kv{K: strings.TrimSpace(term), V: strings.TrimSpace(text)})
	}
	return out
}
