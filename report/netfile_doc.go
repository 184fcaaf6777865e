package report

// The Docs of `iopath net bench --serve-file` (netio/filesrv) and
// `--writev` (netio/writev), with what their HTML (netfile.go) reads
// beside them: the row order, the baselines and the target.

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
)

// rank is name's place in order, or len(order) for a name not in it.
func rank(order []string, name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

// nfFileRows sorts rs by file size, connections, then method (in
// FileServeMethods' order), stably.
func nfFileRows(rs []netresult.FileServe) []netresult.FileServe {
	order := netresult.FileServeMethods()
	return slices.SortedStableFunc(slices.Values(rs), func(a, b netresult.FileServe) int {
		return cmp.Or(cmp.Compare(a.FileSize, b.FileSize), cmp.Compare(a.Conns, b.Conns), cmp.Compare(rank(order, a.Method), rank(order, b.Method)))
	})
}

// nfWritevRows sorts rs by k, then way (in WritevWays' order), stably.
func nfWritevRows(rs []netresult.Writev) []netresult.Writev {
	order := netresult.WritevWays()
	return slices.SortedStableFunc(slices.Values(rs), func(a, b netresult.Writev) int {
		return cmp.Or(cmp.Compare(a.K, b.K), cmp.Compare(rank(order, a.Way), rank(order, b.Way)))
	})
}

// nfBaseline is readwrite's CPU-s/GB for r's size and connections, or 0.
func nfBaseline(rs []netresult.FileServe, r *netresult.FileServe) float64 {
	for _, b := range rs {
		if b.Method == netresult.ReadWrite && b.FileSize == r.FileSize && b.Conns == r.Conns && b.Err == "" {
			return b.CPUSecPerGB
		}
	}
	return 0
}

// nfWritesCPU is k separate writes' CPU per response, or 0.
func nfWritesCPU(rs []netresult.Writev, k int) float64 {
	for _, r := range rs {
		if r.Way == netresult.Writes && r.K == k && r.Err == "" {
			return r.CPUNsPerResp
		}
	}
	return 0
}

// The file-serving target: at 1 MiB, sendfile and splice use at most
// 0.6× readwrite's server CPU per GB.
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
		i := slices.IndexFunc(rs, func(r netresult.FileServe) bool {
			return r.Method == m && r.FileSize == nfTargetSize && r.Err == "" && r.CPUSecPerGB > 0 && nfBaseline(rs, &r) > 0
		})
		if i < 0 {
			return ""
		}
		ratio := rs[i].CPUSecPerGB / nfBaseline(rs, &rs[i])
		met = met && ratio <= nfTargetRatio
		parts = append(parts, fmt.Sprintf("%s %.2f×", m, ratio))
	}
	verdict := "met"
	if !met {
		verdict = "NOT met"
	}
	return fmt.Sprintf("target at 1MiB: %s readwrite's server CPU per GB (want ≤ %.1f×): %s",
		strings.Join(parts, ", "), nfTargetRatio, verdict)
}

// nfFileHeader describes the server's setup, as far as the rows share it.
func nfFileHeader(rows []netresult.FileServe) string {
	if len(rows) == 0 {
		return ""
	}
	r := rows[0]
	same := func(f func(netresult.FileServe) any) bool {
		return !slices.ContainsFunc(rows, func(x netresult.FileServe) bool { return f(x) != f(r) })
	}
	var p []string
	if same(func(x netresult.FileServe) any { return x.InProcess }) {
		p = append(p, map[bool]string{true: "server in the client's process (CPU from its own threads)", false: "server in a child process"}[r.InProcess])
	}
	if same(func(x netresult.FileServe) any { return x.Conns }) {
		p = append(p, plural(r.Conns, "connection")+", one request at a time each")
	}
	if r.Chunk > 0 && same(func(x netresult.FileServe) any { return x.Chunk }) {
		p = append(p, "chunk "+units.FormatSize(int64(r.Chunk)))
	}
	if r.Depth > 0 && same(func(x netresult.FileServe) any { return x.Depth }) {
		p = append(p, fmt.Sprintf("io_uring depth %d", r.Depth))
	}
	return strings.Join(p, "; ")
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

// FileServeDoc maps a file-serving report (`net bench --serve-file`)
// into a Doc: one group per file size (and connection count, when it
// varies), a row per method. The headline figures are GB/s and the
// server's CPU-s per GB; ×readwrite divides the latter by readwrite's at
// the same size. The 1 MiB target, the methods skipped and the runs that
// failed beside others that did not are notes. The figures' cells carry
// each run's value (Cell.Runs, for compare's test) when the results keep
// them (schema_version 2 on).
func FileServeDoc(rep *netresult.FileServeReport) *Doc {
	rows := nfFileRows(rep.Results)
	d := &Doc{Kind: "net-bench-serve-file", Title: "File serving from the page cache over loopback TCP, every byte verified"}
	d.Header = splitField(Field{"setup", nfFileHeader(rows)})
	for _, k := range rep.Skipped {
		d.Notes = append(d.Notes, fmt.Sprintf("%s skipped: %s", k.Engine, oneLine(k.Reason)))
	}
	if len(rows) == 0 {
		return d
	}
	conns := slices.ContainsFunc(rows, func(r netresult.FileServe) bool { return r.Conns != rows[0].Conns })
	d.Columns = []Column{
		{Key: "method", Title: "method", Left: true},
		{Key: "gb_per_s", Title: "GB/s", Unit: "GB/s", Better: Higher, Prec: 2, Spread: true, Headline: true},
		{Key: "server_cpu_s_per_gb", Title: "CPU-s/GB", Unit: "s/GB", Better: Lower, Prec: 3, Spread: true, Headline: true},
		{Key: "cpu_vs_readwrite", Title: "×readwrite", Unit: "×", Better: Lower, Prec: 2},
		{Key: "syscalls_per_mb", Title: "syscalls/MB", Better: Lower, Prec: 1},
		{Key: "syscalls_per_response", Title: "sys/resp", Better: Lower, Prec: 2, Wide: true},
	}
	proc := slices.ContainsFunc(rows, func(r netresult.FileServe) bool { return r.ProcCPUSecPerGB > 0 })
	if proc {
		d.Columns = append(d.Columns, Column{Key: "process_cpu_s_per_gb", Title: "proc CPU-s/GB", Unit: "s/GB", Better: Lower, Prec: 3, Wide: true})
	}
	d.Columns = append(d.Columns,
		Column{Key: "file_size", Title: "bytes", Unit: "B", Wide: true},
		Column{Key: "conns", Title: "conns", Wide: true},
		Column{Key: "runs", Title: "runs", Wide: true},
		Column{Key: "verified", Title: "verified"})
	for i := range rows {
		r := &rows[i]
		title := units.FormatSize(r.FileSize) + " file"
		if conns {
			title += ", " + plural(r.Conns, "connection")
		}
		per := func(f func(netresult.FileServeRun) float64) []float64 { return stats.Map(r.PerRun, f) }
		cells := []Cell{
			withRuns(spanCell(r.GBps, r.GBpsMin, r.GBpsMax), per(func(x netresult.FileServeRun) float64 { return x.GBps })),
			withRuns(spanCell(r.CPUSecPerGB, r.CPUSecPerGBMin, r.CPUSecPerGBMax), per(func(x netresult.FileServeRun) float64 { return x.CPUSecPerGB })),
			ratioCell(r.CPUSecPerGB, nfBaseline(rows, r)),
			withRuns(measured(r.SyscallsPerMB), per(func(x netresult.FileServeRun) float64 { return x.SyscallsPerMB })),
			withRuns(measured(r.SyscallsPerResp), per(func(x netresult.FileServeRun) float64 { return x.SyscallsPerResp })),
		}
		if proc {
			cells = append(cells, withRuns(measured(r.ProcCPUSecPerGB), per(func(x netresult.FileServeRun) float64 { return x.ProcCPUSecPerGB })))
		}
		nfRow(d, title, r.Method, r.Method+" "+units.FormatSize(r.FileSize), r.Responses, r.Err, append(cells,
			Figure(float64(r.FileSize)), Figure(float64(r.Conns)), Figure(float64(r.Runs)), TextCell(nfVerified(r.Verified, r.Corrupted))))
	}
	if l := nfTargetLine(rows); l != "" {
		d.Notes = append([]string{l}, d.Notes...)
	}
	d.Legend = []Field{
		{"GB/s", "file bytes received and verified per second of wall time (1 GB = 10⁹ B), median over the runs, with the slowest and fastest run"},
		{"CPU-s/GB", "server CPU seconds per GB sent: the threads serving the data connections (their own CPU clocks: kernel work on the send path " +
			"included, client excluded) plus io_uring's kernel threads; lower is better"},
		{"×readwrite", "CPU-s/GB ÷ readwrite's at the same file size"},
		{"syscalls/MB", "the server's system calls per 10⁶ B sent, counted at its own call sites: the recv of each request, pread, send, sendfile, splice, io_uring_enter"},
		{"sys/resp", "the same per response (one response = the whole file)"},
		{"proc CPU-s/GB", "the whole server process (RUSAGE_SELF: Go runtime and control connection included), when the server ran in a process of its own"},
		{"verified", "ok: every response complete and byte-exact; else how many bytes differed"},
	}
	return d
}

// WritevDoc maps a writev report (`net bench --writev`) into a Doc: one
// group per part count k, a row per way. The headline figure is the
// sending thread's CPU per response; ×writes divides it by that of k
// separate writes. The figures' cells carry each run's value (Cell.Runs,
// for compare's test) when the results keep them (schema_version 2 on).
func WritevDoc(rep *netresult.WritevReport) *Doc {
	rows := nfWritevRows(rep.Results)
	d := &Doc{Kind: "net-bench-writev", Title: "A response of k parts sent over loopback TCP four ways, every byte verified by the reader"}
	if len(rows) == 0 {
		return d
	}
	d.Columns = []Column{
		{Key: "way", Title: "way", Left: true},
		{Key: "syscalls_per_response", Title: "syscalls/resp", Better: Lower, Prec: 2},
		{Key: "cpu_ns_per_response", Title: "CPU ns/resp", Unit: "ns", Better: Lower, Spread: true, Headline: true},
		{Key: "cpu_vs_writes", Title: "×writes", Unit: "×", Better: Lower, Prec: 2},
		{Key: "ns_per_response", Title: "wall ns/resp", Unit: "ns", Better: Lower},
		{Key: "parts", Title: "k", Wide: true},
		{Key: "response_bytes", Title: "bytes/resp", Unit: "B", Wide: true},
		{Key: "runs", Title: "runs", Wide: true},
		{Key: "verified", Title: "verified"},
	}
	for i := range rows {
		r := &rows[i]
		per := func(f func(netresult.WritevRun) float64) []float64 { return stats.Map(r.PerRun, f) }
		nfRow(d, fmt.Sprintf("k=%d, %d B per response", r.K, r.RespBytes), r.Way, fmt.Sprintf("%s k=%d", r.Way, r.K), r.Responses, r.Err, []Cell{
			withRuns(Figure(r.SyscallsPerResp), per(func(x netresult.WritevRun) float64 { return x.SyscallsPerResp })),
			withRuns(spanCell(r.CPUNsPerResp, r.CPUNsPerRespMin, r.CPUNsPerRespMax), per(func(x netresult.WritevRun) float64 { return x.CPUNsPerResp })),
			ratioCell(r.CPUNsPerResp, nfWritesCPU(rows, r.K)),
			withRuns(measured(r.NsPerResp), per(func(x netresult.WritevRun) float64 { return x.NsPerResp })),
			Figure(float64(r.K)), Figure(float64(r.RespBytes)), Figure(float64(r.Runs)),
			TextCell(nfVerified(r.Verified, 0)),
		})
	}
	d.Legend = []Field{
		{"k", "parts per response (64 B–1 KiB each unless configured otherwise)"},
		{"syscalls/resp", "system calls the sending thread made per response: write(2)/writev(2) as the kernel counted them " +
			"(/proc/thread-self/io syscw: Go's own retries included) for the Go ways; io_uring_enter for io_uring"},
		{"CPU ns/resp", "the sending thread's CPU per response (CLOCK_THREAD_CPUTIME_ID), median over the runs with the lowest and highest; includes the kernel's send path"},
		{"×writes", "CPU ns/resp ÷ that of k separate writes"},
		{"wall ns/resp", "elapsed time per response (the reader shares the machine)"},
		{"verified", "ok: the reader got exactly the bytes sent, in order"},
	}
	return d
}

// nfRow adds a result's row to d under title (a group of its own when
// the last one has another title): its name, then its cells, or its
// error when no response came back; an error beside responses (a run that
// failed among others that did not) is a note saying where.
func nfRow(d *Doc, title, name, where string, responses int64, err string, cells []Cell) {
	if len(d.Groups) == 0 || d.Groups[len(d.Groups)-1].Title != title {
		d.Groups = append(d.Groups, Group{Title: title})
	}
	g := &d.Groups[len(d.Groups)-1]
	if responses == 0 && err != "" {
		g.Rows = append(g.Rows, Row{Cells: []Cell{TextCell(name)}, Err: "error: " + oneLine(err)})
		return
	}
	if err != "" {
		d.Notes = append(d.Notes, where+": "+oneLine(err))
	}
	g.Rows = append(g.Rows, Row{Cells: append([]Cell{TextCell(name)}, cells...)})
}

// measured is a figure where 0 means "not measured": "–" then.
func measured(v float64) Cell {
	if !(v > 0) {
		return Figure(math.NaN())
	}
	return Figure(v)
}

// withRuns gives c, a result's median, its runs' values (none: a version
// 1 report kept none): the figure shown stays the one the result holds,
// and compare tests the runs.
func withRuns(c Cell, runs []float64) Cell {
	if c.Num && finite(c.Value) && len(runs) > 0 {
		c.Runs = runs
	}
	return c
}

// spanCell is a median with its runs' extremes.
func spanCell(med, lo, hi float64) Cell {
	c := measured(med)
	if c.Num && finite(c.Value) && lo > 0 && hi > 0 {
		c.Min, c.Max = lo, hi
	}
	return c
}

// ratioCell is a/b, or "–" when either is missing.
func ratioCell(a, b float64) Cell {
	if !(a > 0) || !(b > 0) || !finite(a) || !finite(b) {
		return Figure(math.NaN())
	}
	return Figure(a / b)
}

// WriteFileServe writes a file-serving report in one of KindFormats:
// JSON is the report itself (FileServeJSON), the others its Doc.
func WriteFileServe(w io.Writer, format string, r *netresult.FileServeReport, o DocOptions) error {
	if format == "json" {
		return FileServeJSON(w, r)
	}
	return WriteDoc(w, format, FileServeDoc(r), o)
}

// WriteWritev writes a writev report in one of KindFormats: JSON is the
// report itself (WritevJSON), the others its Doc.
func WriteWritev(w io.Writer, format string, r *netresult.WritevReport, o DocOptions) error {
	if format == "json" {
		return WritevJSON(w, r)
	}
	return WriteDoc(w, format, WritevDoc(r), o)
}
