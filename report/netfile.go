package report

// The HTML page of `iopath net bench --serve-file` (netio/filesrv) and
// `--writev` (netio/writev), or sections of one, with inline SVG charts
// drawn by svg.go's helpers, and what it shares with their Docs
// (netfile_doc.go): the row order, the baselines, the target, the legends.

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/filesrv"
	"github.com/iopath/iopath/netio/writev"
)

// nfColors gives each file-serving method and each writev way its colour
// in every chart (the same hue for the baseline, for io_uring, and so on).
var nfColors = map[string]string{
	filesrv.ReadWrite: "#4e79a7", filesrv.Sendfile: "#f28e2b", filesrv.Splice: "#59a14f",
	writev.Writes: "#4e79a7", writev.Coalesced: "#f28e2b", writev.NetBuffers: "#59a14f",
	"io_uring": "#8e63b5",
}

// nfSeries makes chart series for names in order.
func nfSeries(names []string) map[string]*hSeries {
	out := map[string]*hSeries{}
	for i, n := range names {
		c, ok := nfColors[n]
		if !ok {
			c = hExtraColors[i%len(hExtraColors)]
		}
		out[n] = &hSeries{name: n, base: n, color: c, light: hMix(c, "#ffffff", 0.72), dark: hMix(c, "#000000", 0.45), idx: i}
	}
	return out
}

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

func nfSpread(lo, hi float64, runs int) string {
	if runs < 2 || !(hi > 0) {
		return ""
	}
	return "(" + nfNum(lo) + "–" + nfNum(hi) + ")"
}

func nfSpreadInt(lo, hi float64, runs int) string {
	if runs < 2 || !(hi > 0) {
		return ""
	}
	return "(" + nfInt(lo) + "–" + nfInt(hi) + ")"
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
	Machine   string // one line about the machine (kernel, CPU), if known
	FileServe []filesrv.Result
	Writev    []writev.Result
	Notes     []string
}

// NetFileHTML writes p as one self-contained HTML page: no script, no
// network (a Content-Security-Policy forbids loading anything), inline
// SVG charts. The sections are FileServeHTML's and WritevHTML's.
func NetFileHTML(w io.Writer, p NetFilePage) error {
	if p.Title == "" {
		p.Title = "iopath net bench: file serving and writev"
	}
	d := nfPage{Title: p.Title, Command: p.Command, Machine: p.Machine, Notes: p.Notes, Generator: "iopath"}
	if len(p.FileServe) > 0 {
		d.Sections = append(d.Sections, nfFileSection(p.FileServe))
	}
	if len(p.Writev) > 0 {
		d.Sections = append(d.Sections, nfWritevSection(p.Writev))
	}
	var b bytes.Buffer
	if err := nfPageTemplate.Execute(&b, d); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// FileServeHTML writes the file-serving section alone (a <section
// id="file-serving"> fragment), for a page that has the report's styles.
func FileServeHTML(w io.Writer, rs []filesrv.Result) error {
	return nfWriteSection(w, nfFileSection(rs))
}

// WritevHTML writes the writev section alone (<section id="writev">).
func WritevHTML(w io.Writer, rs []writev.Result) error {
	return nfWriteSection(w, nfWritevSection(rs))
}

func nfWriteSection(w io.Writer, s nfSection) error {
	var b bytes.Buffer
	if err := nfPageTemplate.ExecuteTemplate(&b, "section", s); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

type nfPage struct {
	Title, Command, Machine, Generator string
	Sections                           []nfSection
	Notes                              []string
}

type nfSection struct {
	ID, Title, Intro string
	Target           string
	Charts           []hChart
	Heads            []string
	Left             []bool
	Rows             []nfHRow
	Defs             []hKV
}

type nfHRow struct {
	Cells []string
	Err   string
	Span  int
	Sep   bool // first row of a group
}

func nfFileSection(in []filesrv.Result) nfSection {
	rows := nfFileRows(in)
	s := nfSection{ID: "file-serving", Title: "File serving", Target: nfTargetLine(rows)}
	s.Intro = "A file in the page cache served over loopback TCP four ways, every response verified byte for byte."
	if h := nfFileHeader(rows); h != "" {
		s.Intro += " " + strings.ToUpper(h[:1]) + h[1:] + "."
	}

	var names []string
	var sizes []int64
	for _, r := range rows {
		if !slices.Contains(names, r.Method) {
			names = append(names, r.Method)
		}
		if !slices.Contains(sizes, r.FileSize) {
			sizes = append(sizes, r.FileSize)
		}
	}
	names = nfOrdered(filesrv.Methods(), names)
	series := nfSeries(names)
	var order []*hSeries
	for _, n := range names {
		order = append(order, series[n])
	}
	label := func(r *filesrv.Result) string {
		if nfVaries(rows, func(r filesrv.Result) string { return strconv.Itoa(r.Conns) }) {
			return fmt.Sprintf("%s, %s", units.FormatSize(r.FileSize), plural(r.Conns, "conn"))
		}
		return units.FormatSize(r.FileSize)
	}
	groups := func(bar func(r *filesrv.Result) hBar) []hBarGroup {
		var gs []hBarGroup
		for i := range rows {
			r := &rows[i]
			l := label(r)
			if len(gs) == 0 || gs[len(gs)-1].label != l {
				gs = append(gs, hBarGroup{label: l})
			}
			b := bar(r)
			b.s = series[r.Method]
			if r.Responses == 0 && r.Err != "" {
				b = hBar{s: b.s, err: r.Err, tip: r.Method + ": " + r.Err}
			}
			gs[len(gs)-1].bars = append(gs[len(gs)-1].bars, b)
		}
		return gs
	}
	tip := func(r *filesrv.Result) string {
		return fmt.Sprintf("%s, %s: %s GB/s, %s CPU-s/GB (%s readwrite), %s syscalls/MB, %d runs",
			r.Method, units.FormatSize(r.FileSize), nfNum(r.GBps), nfNum(r.CPUSecPerGB),
			nfRatio(r.CPUSecPerGB, nfBaseline(rows, r)), nfNum(r.SyscallsPerMB), r.Runs)
	}
	ratio := hBarChart(hBarSpec{id: "fs-cpu-ratio", title: "Server CPU per GB, relative to readwrite", unit: "× readwrite", series: order,
		shareLabel: "io_uring kernel threads",
		groups: groups(func(r *filesrv.Result) hBar {
			base := nfBaseline(rows, r)
			if base <= 0 || !(r.CPUSecPerGB > 0) {
				return hBar{tip: tip(r) + " (no readwrite figure to compare with)"}
			}
			b := hBar{v: r.CPUSecPerGB / base, tip: tip(r), valueDecimals: 2}
			if r.Bytes > 0 && r.IOThreadCPU > 0 {
				b.share = r.IOThreadCPU.Seconds() / (float64(r.Bytes) / 1e9) / base
			}
			return b
		})})
	gbps := hBarChart(hBarSpec{id: "fs-gbps", title: "Throughput", unit: "GB/s", series: order,
		groups: groups(func(r *filesrv.Result) hBar {
			return hBar{v: r.GBps, lo: r.GBpsMin, hi: r.GBpsMax, tip: tip(r), valueDecimals: 2}
		})})
	s.Charts = append(s.Charts, hChart{ID: "fs-cpu-ratio", Title: "Server CPU per GB, relative to readwrite",
		Caption: "Each method's median CPU-s per GB divided by readwrite's at the same file size: below 1 is cheaper; the target is ≤ 0.6 for sendfile and splice at 1MiB. The darker foot of a bar is io_uring's kernel threads.",
		SVG:     template.HTML(ratio)})
	if !nfVaries(rows, func(r filesrv.Result) string { return strconv.Itoa(r.Conns) }) && len(sizes) > 1 {
		cats := make([]string, len(sizes))
		for i, sz := range sizes {
			cats[i] = units.FormatSize(sz)
		}
		line := func(id, title, unit string, y func(r *filesrv.Result) float64) string {
			var lines []hLine
			for _, n := range names {
				l := hLine{s: series[n]}
				for i := range rows {
					r := &rows[i]
					if r.Method != n {
						continue
					}
					p := hPoint{x: float64(slices.Index(sizes, r.FileSize)), y: y(r), tip: tip(r)}
					if r.Responses == 0 && r.Err != "" {
						p = hPoint{x: p.x, err: r.Err, tip: r.Method + ": " + r.Err}
					}
					l.pts = append(l.pts, p)
				}
				lines = append(lines, l)
			}
			return hLineChart(hLineSpec{id: id, title: title, width: hWideW,
				x:     hAxisSpec{label: "file size", cats: cats},
				y:     hAxisSpec{label: unit, log10: true, fmt: func(v float64) string { return hSig3(v) }},
				lines: lines})
		}
		s.Charts = append(s.Charts,
			hChart{ID: "fs-cpu", Title: "Server CPU per GB sent", Caption: "Median CPU-seconds of the serving threads (and io_uring's kernel threads) per GB (10⁹ B), lower is better (log scale: per-request costs dominate small files).",
				SVG: template.HTML(line("fs-cpu", "Server CPU per GB sent", "CPU-s/GB", func(r *filesrv.Result) float64 { return r.CPUSecPerGB }))},
			hChart{ID: "fs-gbps", Title: "Throughput", Caption: "Median GB/s received and verified by the client; whiskers span the runs. On loopback the client's copy and check share the machine.", SVG: template.HTML(gbps)},
			hChart{ID: "fs-syscalls", Title: "System calls per MB", Caption: "The server's system calls per 10⁶ B sent, counted at its call sites (log scale).",
				SVG: template.HTML(line("fs-syscalls", "System calls per MB", "syscalls/MB", func(r *filesrv.Result) float64 { return r.SyscallsPerMB }))})
	} else {
		cpu := hBarChart(hBarSpec{id: "fs-cpu", title: "Server CPU per GB sent", unit: "CPU-s/GB", series: order,
			groups: groups(func(r *filesrv.Result) hBar {
				return hBar{v: r.CPUSecPerGB, lo: r.CPUSecPerGBMin, hi: r.CPUSecPerGBMax, tip: tip(r), valueDecimals: 3}
			})})
		s.Charts = append(s.Charts,
			hChart{ID: "fs-cpu", Title: "Server CPU per GB sent", Caption: "Median CPU-seconds of the serving threads per GB (10⁹ B), lower is better; whiskers span the runs.", SVG: template.HTML(cpu)},
			hChart{ID: "fs-gbps", Title: "Throughput", Caption: "Median GB/s received and verified by the client; whiskers span the runs. On loopback the client's copy and check share the machine.", SVG: template.HTML(gbps)})
	}

	proc := slices.ContainsFunc(rows, func(r filesrv.Result) bool { return r.ProcCPUSecPerGB > 0 })
	s.Heads = []string{"size", "conns", "method", "GB/s", "min–max", "CPU-s/GB", "min–max", "×readwrite", "syscalls/MB", "sys/resp"}
	if proc {
		s.Heads = append(s.Heads, "proc CPU-s/GB")
	}
	s.Heads = append(s.Heads, "runs", "verified")
	for _, h := range s.Heads {
		s.Left = append(s.Left, h == "size" || h == "method" || h == "verified" || h == "min–max")
	}
	last := ""
	for i := range rows {
		r := &rows[i]
		key := units.FormatSize(r.FileSize) + "/" + strconv.Itoa(r.Conns)
		row := nfHRow{Sep: key != last && last != ""}
		last = key
		row.Cells = []string{units.FormatSize(r.FileSize), strconv.Itoa(r.Conns), r.Method}
		if r.Responses == 0 && r.Err != "" {
			row.Err, row.Span = r.Err, len(s.Heads)-3
		} else {
			row.Cells = append(row.Cells, nfNum(r.GBps), strings.Trim(nfSpread(r.GBpsMin, r.GBpsMax, r.Runs), "()"),
				nfNum(r.CPUSecPerGB), strings.Trim(nfSpread(r.CPUSecPerGBMin, r.CPUSecPerGBMax, r.Runs), "()"),
				nfRatio(r.CPUSecPerGB, nfBaseline(rows, r)), nfNum(r.SyscallsPerMB), nfNum(r.SyscallsPerResp))
			if proc {
				row.Cells = append(row.Cells, nfNum(r.ProcCPUSecPerGB))
			}
			row.Cells = append(row.Cells, strconv.Itoa(r.Runs), nfVerified(r.Verified, r.Corrupted))
			if r.Err != "" {
				row.Cells[len(row.Cells)-1] += " (" + oneLine(r.Err) + ")"
			}
		}
		s.Rows = append(s.Rows, row)
	}
	s.Defs = nfDefs(fileServeLegend)
	return s
}

func nfWritevSection(in []writev.Result) nfSection {
	rows := nfWritevRows(in)
	s := nfSection{ID: "writev", Title: "writev batching",
		Intro: "A response of k parts sent over loopback TCP four ways; a reader drains the other end and checks every byte. The sender runs on a thread of its own, whose CPU clock and write counters are the figures."}
	var names []string
	var ks []int
	for _, r := range rows {
		if !slices.Contains(names, r.Way) {
			names = append(names, r.Way)
		}
		if !slices.Contains(ks, r.K) {
			ks = append(ks, r.K)
		}
	}
	names = nfOrdered(writev.Ways(), names)
	series := nfSeries(names)
	var order []*hSeries
	for _, n := range names {
		order = append(order, series[n])
	}
	tip := func(r *writev.Result) string {
		return fmt.Sprintf("%s, k=%d (%d B): %s CPU ns/resp (%s writes), %.2f syscalls/resp, %d runs",
			r.Way, r.K, r.RespBytes, nfInt(r.CPUNsPerResp), nfRatio(r.CPUNsPerResp, nfWritesCPU(rows, r.K)), r.SyscallsPerResp, r.Runs)
	}
	groups := func(bar func(r *writev.Result) hBar) []hBarGroup {
		var gs []hBarGroup
		for i := range rows {
			r := &rows[i]
			l := fmt.Sprintf("k=%d", r.K)
			if len(gs) == 0 || gs[len(gs)-1].label != l {
				gs = append(gs, hBarGroup{label: l})
			}
			b := bar(r)
			b.s = series[r.Way]
			if r.Responses == 0 && r.Err != "" {
				b = hBar{s: b.s, err: r.Err, tip: r.Way + ": " + r.Err}
			}
			gs[len(gs)-1].bars = append(gs[len(gs)-1].bars, b)
		}
		return gs
	}
	gs := groups(func(r *writev.Result) hBar {
		base := nfWritesCPU(rows, r.K)
		if base <= 0 || !(r.CPUNsPerResp > 0) {
			return hBar{tip: tip(r) + " (no writes figure to compare with)"}
		}
		return hBar{v: r.CPUNsPerResp / base, tip: tip(r), valueDecimals: 2}
	})
	ratio := hBarChart(hBarSpec{id: "wv-cpu-ratio", title: "Sender CPU per response, relative to k writes", unit: "× writes", series: order, groups: gs})
	s.Charts = append(s.Charts, hChart{ID: "wv-cpu-ratio", Title: "Sender CPU per response, relative to k writes",
		Caption: "Each way's median CPU per response divided by that of k separate writes of the same parts: below 1 is cheaper.", SVG: template.HTML(ratio)})
	if len(ks) > 1 {
		cats := make([]string, len(ks))
		for i, k := range ks {
			cats[i] = strconv.Itoa(k)
		}
		line := func(id, title, unit string, y func(r *writev.Result) float64) string {
			var lines []hLine
			for _, n := range names {
				l := hLine{s: series[n]}
				for i := range rows {
					r := &rows[i]
					if r.Way != n {
						continue
					}
					p := hPoint{x: float64(slices.Index(ks, r.K)), y: y(r), tip: tip(r)}
					if r.Responses == 0 && r.Err != "" {
						p = hPoint{x: p.x, err: r.Err, tip: r.Way + ": " + r.Err}
					}
					l.pts = append(l.pts, p)
				}
				lines = append(lines, l)
			}
			return hLineChart(hLineSpec{id: id, title: title, width: hWideW,
				x:     hAxisSpec{label: "parts per response (k)", cats: cats},
				y:     hAxisSpec{label: unit, log10: true, fmt: func(v float64) string { return hSig3(v) }},
				lines: lines})
		}
		s.Charts = append(s.Charts,
			hChart{ID: "wv-cpu", Title: "Sender CPU per response", Caption: "Median CPU nanoseconds of the sending thread per response, lower is better (log scale).",
				SVG: template.HTML(line("wv-cpu", "Sender CPU per response", "CPU ns/resp", func(r *writev.Result) float64 { return r.CPUNsPerResp }))},
			hChart{ID: "wv-syscalls", Title: "System calls per response", Caption: "write(2)/writev(2) calls as the kernel counted them for the Go ways, io_uring_enter for io_uring (log scale).",
				SVG: template.HTML(line("wv-syscalls", "System calls per response", "syscalls/resp", func(r *writev.Result) float64 { return r.SyscallsPerResp }))})
	} else {
		cpu := hBarChart(hBarSpec{id: "wv-cpu", title: "Sender CPU per response", unit: "CPU ns/resp", series: order,
			groups: groups(func(r *writev.Result) hBar {
				return hBar{v: r.CPUNsPerResp, lo: r.CPUNsPerRespMin, hi: r.CPUNsPerRespMax, tip: tip(r)}
			})})
		s.Charts = append(s.Charts, hChart{ID: "wv-cpu", Title: "Sender CPU per response", Caption: "Median CPU nanoseconds of the sending thread per response, lower is better; whiskers span the runs.", SVG: template.HTML(cpu)})
	}
	s.Heads = []string{"k", "bytes/resp", "way", "syscalls/resp", "CPU ns/resp", "min–max", "×writes", "wall ns/resp", "runs", "verified"}
	for _, h := range s.Heads {
		s.Left = append(s.Left, h == "way" || h == "verified" || h == "min–max")
	}
	last := -1
	for _, r := range rows {
		row := nfHRow{Sep: r.K != last && last >= 0, Cells: []string{strconv.Itoa(r.K), strconv.Itoa(r.RespBytes), r.Way}}
		last = r.K
		if r.Responses == 0 && r.Err != "" {
			row.Err, row.Span = r.Err, len(s.Heads)-3
		} else {
			row.Cells = append(row.Cells, fixed(r.SyscallsPerResp, 2), nfInt(r.CPUNsPerResp),
				strings.Trim(nfSpreadInt(r.CPUNsPerRespMin, r.CPUNsPerRespMax, r.Runs), "()"),
				nfRatio(r.CPUNsPerResp, nfWritesCPU(rows, r.K)), nfInt(r.NsPerResp), strconv.Itoa(r.Runs), nfVerified(r.Verified, 0))
			if r.Err != "" {
				row.Cells[len(row.Cells)-1] += " (" + oneLine(r.Err) + ")"
			}
		}
		s.Rows = append(s.Rows, row)
	}
	s.Defs = nfDefs(writevLegend)
	return s
}

// nfDefs turns a text legend (term, then its text over indented lines)
// into definitions.
func nfDefs(legend string) []hKV {
	var out []hKV
	for _, line := range strings.Split(strings.TrimRight(legend, "\n"), "\n") {
		if strings.HasPrefix(line, " ") && len(out) > 0 {
			out[len(out)-1].V += " " + strings.TrimSpace(line)
			continue
		}
		term, text, _ := strings.Cut(line, "  ")
		out = append(out, hKV{K: strings.TrimSpace(term), V: strings.TrimSpace(text)})
	}
	return out
}

var nfPageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
` + pageHead + `<style>
:root{--fg:#1d232a;--muted:#5d6773;--line:#dfe3e8;--bg:#f6f7f9;--card:#fff;--err:#c0392b;--accent:#2f5d8a}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 28px 56px}
h1{font-size:25px;font-weight:650;margin:0 0 2px}
.sub{color:var(--muted);margin:0 0 16px}
h2{font-size:19px;font-weight:650;margin:34px 0 6px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;font-weight:600;margin:0 0 2px}
nav a{color:var(--accent);text-decoration:none;margin-right:14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 18px 12px;margin:14px 0}
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace;font-size:13px}
pre.cmd{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:6px 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
figcaption{color:var(--muted);font-size:13px;margin:0 0 6px;max-width:110ch}
p.target{font-weight:600}
` + chartCSS + `.chart .lg{font-size:12px}
.table-wrap{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:10px;margin:14px 0}
table{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums;width:100%}
th,td{padding:4px 8px;text-align:right;white-space:nowrap;border-bottom:1px solid #edf0f3}
th{background:#f0f2f5;font-weight:600;color:#39424c;border-bottom:1px solid var(--line)}
th.l,td.l{text-align:left}
tr.sep td{border-top:2px solid var(--line)}
td.error{color:var(--err);text-align:left;white-space:pre-wrap}
dl.defs{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;font-size:13.5px;margin:8px 0}
dl.defs dt{font-weight:600}
dl.defs dd{margin:0;color:#39424c}
ul.notes li{overflow-wrap:anywhere}
footer{color:var(--muted);font-size:12.5px;margin-top:36px}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{with .Machine}}<p class="sub">{{.}}</p>{{end}}
{{with .Command}}<pre class="cmd"><code>{{.}}</code></pre>{{end}}
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}{{if .Notes}}<a href="#notes">Notes</a>{{end}}</nav>
{{range .Sections}}{{template "section" .}}{{else}}<p>No results.</p>{{end}}
{{if .Notes}}<section id="notes">
<h2>Notes</h2>
<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
</section>{{end}}
<footer>Generated by {{.Generator}}. This page is self-contained: it loads nothing from anywhere.</footer>
</main>
</body>
</html>
`))

// The section template, alone for FileServeHTML and WritevHTML.
var _ = template.Must(nfPageTemplate.New("section").Parse(`<section id="{{.ID}}">
<h2>{{.Title}}</h2>
<p>{{.Intro}}</p>
{{with .Target}}<p class="target">{{.}}</p>{{end}}
{{range .Charts}}<figure class="card" id="{{.ID}}">
<h3>{{.Title}}</h3>
<figcaption>{{.Caption}}</figcaption>
{{.SVG}}
</figure>
{{end}}<div class="table-wrap"><table>
<thead><tr>{{$left := .Left}}{{range $i, $h := .Heads}}<th{{if index $left $i}} class="l"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Sep}} class="sep"{{end}}>{{range $i, $c := .Cells}}<td{{if index $left $i}} class="l"{{end}}>{{$c}}</td>{{end}}{{if .Err}}<td class="error" colspan="{{.Span}}">error: {{.Err}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
<dl class="defs">{{range .Defs}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>
</section>`))
