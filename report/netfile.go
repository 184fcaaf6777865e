package report

// The HTML page of `iopath net bench --serve-file` (netio/filesrv) and
// `--writev` (netio/writev), or sections of one, with inline SVG charts
// drawn by svg.go's helpers, and what it shares with their Docs
// (netfile_doc.go): the row order, the baselines, the target, the legends.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
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
func nfFileRows(rs []netresult.FileServe) []netresult.FileServe {
	order := netresult.FileServeMethods()
	idx := func(m string) int {
		if i := slices.Index(order, m); i >= 0 {
			return i
		}
		return len(order)
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b netresult.FileServe) int {
		return cmp.Or(cmp.Compare(a.FileSize, b.FileSize), cmp.Compare(a.Conns, b.Conns), cmp.Compare(idx(a.Method), idx(b.Method)))
	})
	return out
}

// nfBaseline is readwrite's CPU-s/GB for r's size and connections, or 0.
func nfBaseline(rs []netresult.FileServe, r *netresult.FileServe) float64 {
	for i := range rs {
		b := &rs[i]
		if b.Method == netresult.ReadWrite && b.FileSize == r.FileSize && b.Conns == r.Conns && b.Err == "" {
			return b.CPUSecPerGB
		}
	}
	return 0
}

// nfTarget is the file-serving target: at 1 MiB, sendfile and splice use
// at most 0.6× readwrite's server CPU per GB.
const (
	nfTargetSize  = 1 << 20
	nfTargetRatio = 0.6
)

// nfTargetLine says how the 1 MiB rows did against the target, or "" when
// they were not all measured.
func nfTargetLine(rs []netresult.FileServe) string {
	var parts []string
	met := true
	for _, m := range []string{netresult.Sendfile, netresult.Splice} {
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
func nfFileHeader(rows []netresult.FileServe) string {
	if len(rows) == 0 {
		return ""
	}
	var p []string
	if !nfVaries(rows, func(r netresult.FileServe) string { return strconv.FormatBool(r.InProcess) }) {
		if rows[0].InProcess {
			p = append(p, "server in the client's process (CPU from its own threads)")
		} else {
			p = append(p, "server in a child process")
		}
	}
	if !nfVaries(rows, func(r netresult.FileServe) string { return strconv.Itoa(r.Conns) }) {
		p = append(p, plural(rows[0].Conns, "connection")+", one request at a time each")
	}
	if c := rows[0].Chunk; c > 0 && !nfVaries(rows, func(r netresult.FileServe) string { return strconv.Itoa(r.Chunk) }) {
		p = append(p, "chunk "+units.FormatSize(int64(c)))
	}
	if d := rows[0].Depth; d > 0 && !nfVaries(rows, func(r netresult.FileServe) string { return strconv.Itoa(r.Depth) }) {
		p = append(p, fmt.Sprintf("io_uring depth %d", d))
	}
	return strings.Join(p, "; ")
}

// --- writev

// nfWritevRows sorts rs by k, then way (Ways order), stably.
func nfWritevRows(rs []netresult.Writev) []netresult.Writev {
	order := netresult.WritevWays()
	idx := func(w string) int {
		if i := slices.Index(order, w); i >= 0 {
			return i
		}
		return len(order)
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b netresult.Writev) int {
		return cmp.Or(cmp.Compare(a.K, b.K), cmp.Compare(idx(a.Way), idx(b.Way)))
	})
	return out
}

func nfWritesCPU(rs []netresult.Writev, k int) float64 {
	for _, r := range rs {
		if r.Way == netresult.Writes && r.K == k && r.Err == "" {
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
	FileServe []netresult.FileServe
	Writev    []netresult.Writev
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
func FileServeHTML(w io.Writer, rs []netresult.FileServe) error {
	return renderSections(w, nfFileSections(rs))
}

// WritevHTML writes the writev sections alone (<section id="writev">...).
func WritevHTML(w io.Writer, rs []netresult.Writev) error {
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

func nfFileSections(in []netresult.FileServe) []section {
	rows := nfFileRows(in)
	s := section{ID: "file-serving", Title: "File serving", Target: nfTargetLine(rows)}
	intro := "A file in the page cache served over loopback TCP four ways, every response verified byte for byte."
	if h := nfFileHeader(rows); h != "" {
		intro += " " + strings.ToUpper(h[:1]) + h[1:] + "."
	}
	s.Intro = []string{intro}
	d := FileServeDoc(&netresult.FileServeReport{Results: rows})
	var names, sizes []string
	for _, r := range rows {
		names, sizes = nfAdd(names, r.Method), nfAdd(sizes, units.FormatSize(r.FileSize))
	}
	series, _ := nameSeries(nfOrdered(netresult.FileServeMethods(), names))

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
		names, ks = nfAdd(names, r.Way), nfAdd(ks, strconv.Itoa(r.K))
	}
	series, _ := nameSeries(nfOrdered(netresult.WritevWays(), names))
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

// nfAdd appends s to list unless it is in it.
func nfAdd(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
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
