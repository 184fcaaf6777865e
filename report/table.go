package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/units"
)

// consumeModes says in a few words what each consume mode makes the CPU do
// with the bytes an engine delivers.
var consumeModes = map[string]string{
	"checksum": "every byte read by the CPU",
	"touch":    "one byte read per page",
	"none":     "bytes land in a buffer and nothing reads them further (fio's semantics; mmap copies each block out, as fio's mmap engine does)",
}

// colID names a column of the results table.
type colID int

const (
	colEngine colID = iota
	colCache
	colGiBps
	colSpread
	colVsFio
	colCPU
	colUsr
	colSys
	colP50
	colP99
	colP999
	colSyscalls
	colMinflt
	colMajflt
	colVcsw
	colIvcsw
	colChecksum
)

// column is one column of the table. top is an optional label printed on
// the line above head, right-aligned to the column's right edge; it may
// reach over the columns to its left and does not widen its own. md is
// the head in markdown, where there is no line above (head when empty).
type column struct {
	id        colID
	top, head string
	md        string
	right     bool // right-align (numbers)
	gap       int  // spaces before the column
}

// columns are all the table's columns; a view shows those its rows need.
var columns = []column{
	{id: colEngine, head: "engine"},
	{id: colCache, head: "cache", gap: 2},
	{id: colGiBps, head: "GiB/s", right: true, gap: 2},
	{id: colSpread, head: "(min–max)", gap: 1},
	{id: colVsFio, head: "vs fio", right: true, gap: 1},
	{id: colCPU, top: "CPU-s", head: "/GiB", md: "CPU-s/GiB", right: true, gap: 1},
	{id: colUsr, head: "usr%", right: true, gap: 1},
	{id: colSys, head: "sys%", right: true, gap: 1},
	{id: colP50, head: "P50", right: true, gap: 2},
	{id: colP99, head: "P99", right: true, gap: 1},
	{id: colP999, top: "latency", head: "P99.9", right: true, gap: 1},
	{id: colSyscalls, head: "syscalls", right: true, gap: 1},
	{id: colMinflt, head: "minflt", right: true, gap: 1},
	{id: colMajflt, head: "majflt", right: true, gap: 1},
	{id: colVcsw, head: "vcsw", right: true, gap: 2},
	{id: colIvcsw, head: "ivcsw", right: true, gap: 1},
	{id: colChecksum, head: "checksum", gap: 2},
}

// Markers set after a figure, explained in the legend and the notes.
const (
	noisyMark    = "~" // after GiB/s: some runs were noisy
	ioThreadMark = "*" // after CPU-s/GiB: includes io_uring kernel threads
)

// view is what the table and markdown renderers show of a report: the
// rows in display order, grouped by workload, the columns they need and
// which marks and labels occur (so that the legend explains just those).
type view struct {
	groups []viewGroup
	cols   []column

	fioRows         bool // some row is fio's
	vsFio           bool // the vs fio column is shown
	noisy           bool // some row has noisy runs
	ioThread        bool // some row's CPU includes io_uring kernel threads
	unknownSyscalls bool // some row's syscalls are not known (fio)
	qdCells         bool // some engine cell shows its queue depth
	checksums       bool // some row's checksum was checked
}

// viewGroup is one workload: a heading and its rows.
type viewGroup struct {
	heading string
	rows    []viewRow
}

// viewRow is one result as shown.
type viewRow struct {
	res *bench.Result
	// label is the engine cell without indentation: "pread",
	// "io_uring qd8", "fio psync".
	label string
	// under is true for a fio row placed right under its iopath twin
	// (indented in the table).
	under bool
}

func isFioResult(r *bench.Result) bool { return r.Tool == bench.ToolFio }

func finite(f float64) bool { return stats.Finite(f) }

// newView lays out r's results.
func newView(r *bench.Report) *view {
	v := &view{}
	for _, g := range groupResults(r.Results) {
		vg := viewGroup{heading: g.key}
		depths := map[int]bool{}
		for _, res := range g.results {
			if res.QD > 0 {
				depths[res.QD] = true
			}
		}
		qdCells := len(depths) > 1
		ordered, under := twinOrder(g.results)
		for _, res := range ordered {
			label := res.Engine
			if isFioResult(res) {
				label = "fio " + res.Engine
			}
			if qdCells && res.QD > 0 && !under[res] {
				label += fmt.Sprintf(" qd%d", res.QD)
				v.qdCells = true
			}
			vg.rows = append(vg.rows, viewRow{res: res, label: label, under: under[res]})

			if isFioResult(res) {
				v.fioRows, v.vsFio = true, true
			}
			if res.Error != "" {
				continue
			}
			if res.VsFio > 0 && finite(res.VsFio) {
				v.vsFio = true
			}
			if res.NoisyRuns > 0 {
				v.noisy = true
			}
			if res.IOThreadCPUSPerGiB > 0 {
				v.ioThread = true
			}
			if res.Syscalls < 0 {
				v.unknownSyscalls = true
			}
			if res.ChecksumOK != nil {
				v.checksums = true
			}
		}
		v.groups = append(v.groups, vg)
	}
	for _, c := range columns {
		if (c.id == colVsFio && !v.vsFio) || (c.id == colChecksum && !v.checksums) {
			continue
		}
		v.cols = append(v.cols, c)
	}
	return v
}

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

// cells formats a row's cells, one per column of v; a failed row has only
// the engine and cache. With pad, figures that lack a mark another row
// has get a space instead, to keep the digits aligned.
func (v *view) cells(row viewRow, pad bool) []string {
	r := row.res
	if r.Error != "" {
		return []string{row.label, r.Cache}
	}
	mark := func(on bool, any bool, m string) string {
		switch {
		case on:
			return m
		case any && pad:
			return " "
		}
		return ""
	}
	out := make([]string, 0, len(v.cols))
	for _, c := range v.cols {
		var s string
		switch c.id {
		case colEngine:
			s = row.label
		case colCache:
			s = r.Cache
		case colGiBps:
			s = gibps(r.BytesPerS) + mark(r.NoisyRuns > 0, v.noisy, noisyMark)
		case colSpread:
			if len(r.Runs) > 1 {
				s = fmt.Sprintf("(%s–%s)", gibps(r.BytesPerSMin), gibps(r.BytesPerSMax))
			}
		case colVsFio:
			if !isFioResult(r) && r.VsFio > 0 {
				s = ratio(r.VsFio)
			}
		case colCPU:
			s = fixed(r.CPUSPerGiB, 3) + mark(r.IOThreadCPUSPerGiB > 0, v.ioThread, ioThreadMark)
		case colUsr:
			s = fixed(r.UsrPct, 0)
		case colSys:
			s = fixed(r.SysPct, 0)
		case colP50:
			s = latency(r.LatP50Ns)
		case colP99:
			s = latency(r.LatP99Ns)
		case colP999:
			s = latency(r.LatP999Ns)
		case colSyscalls:
			s = "-"
			if r.Syscalls >= 0 {
				s = count(r.Syscalls)
			}
		case colMinflt:
			s = count(r.MinFlt)
		case colMajflt:
			s = count(r.MajFlt)
		case colVcsw:
			s = count(r.NVCSw)
		case colIvcsw:
			s = count(r.NIVCSw)
		case colChecksum:
			s = checksum(r.ChecksumOK)
		}
		out = append(out, s)
	}
	return out
}

// notRun reports whether an interrupt kept r from making any run.
func notRun(r *bench.Result) bool { return r.Error == bench.InterruptedError }

// failure is what a row without figures shows in their place: "not run
// (interrupted)" for a row an interrupt kept from running, else "error: "
// and the row's error.
func failure(r *bench.Result) string {
	if notRun(r) {
		return "not run (interrupted)"
	}
	return "error: " + oneLine(r.Error)
}

// ratio formats a throughput ratio: 0.97×.
func ratio(f float64) string {
	if !finite(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", f)
}

// legendEntry explains one column or mark.
type legendEntry struct{ term, text string }

// legend explains the columns v shows and the marks and labels that occur.
func (v *view) legend() []legendEntry {
	l := []legendEntry{}
	if v.fioRows {
		l = append(l, legendEntry{"fio ENGINE", "fio running the same workload with that ioengine, printed under " +
			"the iopath engine it mirrors (its twin)"})
	}
	if v.qdCells {
		l = append(l, legendEntry{"qdN", "queue depth per worker, after the engine when it varies within a workload; " +
			"engines without a queue have none"})
	}
	l = append(l, legendEntry{"GiB/s", "median over the runs (min–max): bytes delivered to the consumer per second " +
		"of wall time, open and close included; 1 GiB = 2^30 bytes"})
	if v.noisy {
		l = append(l, legendEntry{noisyMark, "after GiB/s: some runs were noisy (another process used the CPU, " +
			"or a warm run lost cached pages); they are kept in the figures: see the notes"})
	}
	if v.vsFio {
		l = append(l, legendEntry{"vs fio", "the engine's median GiB/s divided by its fio twin's: " +
			"above 1.00× is faster than fio"})
	}
	l = append(l, legendEntry{"CPU-s/GiB", "user+system CPU seconds per GiB delivered: lower is better, and steadier " +
		"than GiB/s on a busy machine"})
	if v.ioThread {
		l = append(l, legendEntry{ioThreadMark, "after CPU-s/GiB: includes the CPU of io_uring's kernel threads " +
			"(SQPOLL, io-wq), which fio leaves out: see the notes"})
	}
	l = append(l,
		legendEntry{"usr% sys%", "user and system CPU time as % of one core over the wall time"},
		legendEntry{"P50 P99 P99.9", "latency per block: request issued to data available to the consumer"})
	sc := "per pass over the file, counted at the engine's own call sites, not the Go runtime's"
	if v.unknownSyscalls {
		sc += "; -: not known (fio does not count them)"
	}
	cs := "voluntary and involuntary context switches per pass"
	if v.unknownSyscalls {
		cs += "; fio rows: fio counts all switches together, shown under vcsw"
	}
	l = append(l,
		legendEntry{"syscalls", sc},
		legendEntry{"minflt majflt", "minor and major page faults per pass (major: the page was read from disk)"},
		legendEntry{"vcsw ivcsw", cs})
	if v.checksums {
		unchecked := "consume none or touch, the null engine"
		if v.fioRows {
			unchecked += ", fio"
		}
		l = append(l, legendEntry{"checksum", "ok: every run delivered the reference (pread) bytes; MISMATCH: a run " +
			"did not; n/a: not checked (" + unchecked + ")"})
	}
	return l
}

// legendText lays the legend out in two columns, wrapped.
func legendText(entries []legendEntry) string {
	const indent = 15
	var b strings.Builder
	for _, e := range entries {
		lead := e.term + strings.Repeat(" ", max(indent-width(e.term), 1))
		b.WriteString(wrapText(lead, e.text, indent, 88))
	}
	return b.String()
}

// wrapText writes lead followed by text's words, wrapped before column
// wrap, continuing under column indent; each line ends with a newline. A
// word longer than a line is not broken.
func wrapText(lead, text string, indent, wrap int) string {
	var b strings.Builder
	line, n := lead, width(lead)
	first := true
	for _, word := range strings.Fields(text) {
		if !first && n+1+width(word) > wrap {
			b.WriteString(line + "\n")
			line, n, first = strings.Repeat(" ", indent), indent, true
		}
		if !first {
			line += " "
			n++
		}
		line += word
		n += width(word)
		first = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

// textWrap is the column before which the header and the notes wrap.
const textWrap = 120

// Table writes r as a side-by-side table for people: a header with the
// file, the machine and the consume mode, one row per result (grouped by
// workload under a heading line when there is more than one, fio rows
// under the iopath rows they mirror), a legend and the notes.
func Table(w io.Writer, r *bench.Report) error {
	var b bytes.Buffer
	v := newView(r)
	writeHeader(&b, r, v)

	var rows [][]string
	var indents []int
	for _, g := range v.groups {
		for _, row := range g.rows {
			rows = append(rows, v.cells(row, true))
			in := 0
			if row.under {
				in = 2
			}
			indents = append(indents, in)
		}
	}
	widths := make([]int, len(v.cols))
	for i, c := range v.cols {
		widths[i] = width(c.head)
	}
	for n, row := range rows {
		for i, cell := range row {
			w := width(cell)
			if i == 0 {
				w += indents[n]
			}
			widths[i] = max(widths[i], w)
		}
	}
	// The last column is not padded on the right, so lines end cleanly.
	line := func(cells []string, indent int) {
		var l strings.Builder
		for i, c := range v.cols {
			if i >= len(cells) {
				break
			}
			cell := cells[i]
			if i == 0 {
				cell = strings.Repeat(" ", indent) + cell
			}
			l.WriteString(strings.Repeat(" ", c.gap))
			pad := strings.Repeat(" ", widths[i]-width(cell))
			if c.right {
				l.WriteString(pad + cell)
			} else {
				l.WriteString(cell)
				if i < len(cells)-1 {
					l.WriteString(pad)
				}
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}

	if len(r.Results) == 0 {
		b.WriteString("\nno results\n")
	} else {
		b.WriteByte('\n')
		b.WriteString(v.topLine(widths))
		heads := make([]string, len(v.cols))
		for i, c := range v.cols {
			heads[i] = c.head
		}
		line(heads, 0)
		n := 0
		for _, g := range v.groups {
			if len(v.groups) > 1 {
				fmt.Fprintf(&b, "-- %s\n", g.heading)
			}
			for _, row := range g.rows {
				if row.res.Error != "" {
					line(rows[n][:2], indents[n])
					b.Truncate(b.Len() - 1)
					b.WriteString(strings.Repeat(" ", widths[1]-width(rows[n][1])+2))
					b.WriteString(failure(row.res) + "\n")
				} else {
					line(rows[n], indents[n])
				}
				n++
			}
		}
		b.WriteByte('\n')
		b.WriteString(legendText(v.legend()))
	}

	if notes := reportNotes(r, v); len(notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range notes {
			b.WriteString(wrapText("  - ", n, 4, textWrap))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// headerField is one line of a report's header.
type headerField struct{ label, value string }

// headerFields lists the report's header lines that have a value.
func headerFields(r *bench.Report, v *view) []headerField {
	var out []headerField
	field := func(label, value string) {
		if value != "" {
			out = append(out, headerField{label, value})
		}
	}
	field("file", fmt.Sprintf("%s (%s)", units.QuotePath(r.File.Path), fileExtra(r.File)))
	field("machine", machineLine(r))
	field("io_uring", r.Machine.IOURing)
	if r.Machine.LatencyClock != "" {
		field("clock", r.Machine.LatencyClock+" (per-block latency)")
	}
	field("version", versionLine(r))
	if r.Fio != nil {
		fio := r.Fio.Version
		if r.Fio.Path != "" {
			fio = strings.TrimSpace(fio + " (" + units.QuotePath(r.Fio.Path) + ")")
		}
		field("fio", fio)
	}
	var modes []string
	seen := map[string]bool{}
	for _, res := range r.Results {
		if !seen[res.Consume] {
			seen[res.Consume] = true
			modes = append(modes, consumeLine(res.Consume))
		}
	}
	field("consume", strings.Join(modes, "; "))
	if len(v.groups) == 1 {
		field("workload", v.groups[0].heading)
	}
	field("command", units.EscapeControls(r.Command))
	if !r.Started.IsZero() {
		field("started", r.Started.Format("2006-01-02 15:04:05 MST"))
	}
	return out
}

func writeHeader(b *bytes.Buffer, r *bench.Report, v *view) {
	for _, f := range headerFields(r, v) {
		lead := fmt.Sprintf("%-9s ", f.label+":")
		if f.label == "file" || f.label == "command" {
			// Paths and commands stay whole, to be copied.
			b.WriteString(lead + f.value + "\n")
			continue
		}
		b.WriteString(wrapText(lead, f.value, 10, textWrap))
	}
}

// fileExtra is what the header says about the file besides its path.
func fileExtra(f bench.FileInfo) string {
	extra := []string{units.FormatSize(f.SizeBytes)}
	if f.Temporary {
		extra = append(extra, "temporary")
	}
	return strings.Join(extra, ", ")
}

// machineLine describes the machine in one line.
func machineLine(r *bench.Report) string {
	m := r.Machine
	kernel := "Linux " + m.Kernel
	if m.Kernel == "" {
		kernel = "Linux"
	}
	parts := append([]string{strings.TrimSpace(kernel + " " + m.Arch)}, hardwareParts(m)...)
	if m.THP != "" {
		parts = append(parts, "THP "+m.THP)
	}
	return strings.Join(parts, ", ")
}

// versionLine gives the Go and iopath versions.
func versionLine(r *bench.Report) string {
	var ver []string
	if v := r.Machine.GoVersion; v != "" {
		ver = append(ver, v)
	}
	if v := r.Machine.IopathVersion; v != "" {
		ver = append(ver, "iopath "+v)
	}
	return strings.Join(ver, ", ")
}

// topLine renders the labels that sit above the column heads.
func (v *view) topLine(widths []int) string {
	var total int
	ends := make([]int, len(v.cols))
	for i, c := range v.cols {
		total += c.gap + widths[i]
		ends[i] = total
	}
	line := []rune(strings.Repeat(" ", total))
	has := false
	for i, c := range v.cols {
		if c.top == "" {
			continue
		}
		has = true
		top := []rune(c.top)
		copy(line[ends[i]-len(top):], top)
	}
	if !has {
		return ""
	}
	return strings.TrimRight(string(line), " ") + "\n"
}

func consumeLine(mode string) string {
	if mode == "" {
		return ""
	}
	if what, ok := consumeModes[mode]; ok {
		return mode + ": " + what
	}
	return mode
}

// group is one workload's results. key is its heading: pattern, block
// size, workers, the queue depth when all its rows with a queue share one,
// and consume mode.
type group struct {
	key     string
	results []*bench.Result
}

// groupResults groups results by workload (all but the queue depth) in
// order of first appearance, keeping their order within a group.
func groupResults(results []bench.Result) []group {
	var groups []group
	index := map[string]int{}
	for i := range results {
		res := &results[i]
		key := workload(res, 0)
		j, ok := index[key]
		if !ok {
			j = len(groups)
			index[key] = j
			groups = append(groups, group{key: key})
		}
		groups[j].results = append(groups[j].results, res)
	}
	for i, g := range groups {
		qd := 0
		for _, res := range g.results {
			if res.QD > 0 {
				if qd != 0 && res.QD != qd {
					qd = 0
					break
				}
				qd = res.QD
			}
		}
		groups[i].key = workload(g.results[0], qd)
	}
	return groups
}

// workload describes r's workload, with queue depth qd when it is not 0.
func workload(r *bench.Result, qd int) string {
	return strings.Join(workloadParts(r.Pattern, r.BS, r.Workers, qd, r.Consume), ", ")
}

// reportNotes gathers the notes: the report's own, each row's (a note that
// several rows of one engine share is written once), why runs were noisy,
// and how much CPU io_uring's kernel threads used.
func reportNotes(r *bench.Report, v *view) []string {
	var notes []string
	for _, n := range r.Notes {
		notes = append(notes, oneLine(n))
	}

	var rows []*bench.Result
	for _, g := range v.groups {
		for _, row := range g.rows {
			rows = append(rows, row.res)
		}
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

	type threads struct {
		name         string
		rows         []*bench.Result
		lo, hi       float64 // CPU-s/GiB of the kernel threads
		pctLo, pctHi float64 // as % of the row's CPU-s/GiB
		havePct      bool
	}
	var tOrder []*threads
	tByName := map[string]*threads{}
	for _, res := range rows {
		if res.Error != "" || res.IOThreadCPUSPerGiB <= 0 {
			continue
		}
		name := engineName(res)
		t := tByName[name]
		if t == nil {
			t = &threads{name: name, lo: math.Inf(1), pctLo: math.Inf(1)}
			tByName[name] = t
			tOrder = append(tOrder, t)
		}
		t.rows = append(t.rows, res)
		t.lo, t.hi = min(t.lo, res.IOThreadCPUSPerGiB), max(t.hi, res.IOThreadCPUSPerGiB)
		if res.CPUSPerGiB > 0 && finite(res.CPUSPerGiB) {
			pct := 100 * res.IOThreadCPUSPerGiB / res.CPUSPerGiB
			t.pctLo, t.pctHi, t.havePct = min(t.pctLo, pct), max(t.pctHi, pct), true
		}
	}
	for _, t := range tOrder {
		const what = "was io_uring's kernel threads (SQPOLL iou-sqp, io-wq iou-wrk) working for the run: " +
			"counted here; fio leaves it out"
		if len(t.rows) == 1 {
			res := t.rows[0]
			notes = append(notes, fmt.Sprintf("%s: %s of its %s CPU-s/GiB %s", names.label(res),
				fixed(res.IOThreadCPUSPerGiB, 3), fixed(res.CPUSPerGiB, 3), what))
			continue
		}
		share := ""
		if t.havePct {
			share = ", " + span(t.pctLo, t.pctHi, 0, "%") + " of it,"
		}
		notes = append(notes, fmt.Sprintf("%s (%d rows marked %s): %s CPU-s/GiB of each row's figure%s %s",
			t.name, len(t.rows), ioThreadMark, span(t.lo, t.hi, 3, ""), share, what))
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

// names labels rows in notes: the engine and, in parentheses, the cache
// state and whatever else tells the engine's rows apart.
type names struct {
	count  map[string]int             // rows per engine name
	varies map[string]map[string]bool // engine name -> dimension -> varies
	first  map[string]*bench.Result
}

func rowNames(rows []*bench.Result) *names {
	n := &names{count: map[string]int{}, varies: map[string]map[string]bool{}, first: map[string]*bench.Result{}}
	for _, res := range rows {
		name := engineName(res)
		n.count[name]++
		f := n.first[name]
		if f == nil {
			n.first[name] = res
			n.varies[name] = map[string]bool{}
			continue
		}
		v := n.varies[name]
		v["pattern"] = v["pattern"] || f.Pattern != res.Pattern
		v["bs"] = v["bs"] || f.BS != res.BS
		v["workers"] = v["workers"] || f.Workers != res.Workers
		v["qd"] = v["qd"] || f.QD != res.QD
		v["consume"] = v["consume"] || f.Consume != res.Consume
	}
	return n
}

// qualifier is what sets res apart from its engine's other rows.
func (n *names) qualifier(res *bench.Result) string {
	v := n.varies[engineName(res)]
	q := []string{res.Cache}
	if v["pattern"] {
		q = append(q, res.Pattern)
	}
	if v["bs"] {
		q = append(q, "bs "+units.FormatSize(int64(res.BS)))
	}
	if v["workers"] {
		q = append(q, plural(res.Workers, "worker"))
	}
	if v["qd"] {
		q = append(q, fmt.Sprintf("qd %d", res.QD))
	}
	if v["consume"] {
		q = append(q, "consume "+res.Consume)
	}
	return strings.Join(q, ", ")
}

// label is "mmap (warm, bs 4KiB)".
func (n *names) label(res *bench.Result) string {
	return fmt.Sprintf("%s (%s)", engineName(res), n.qualifier(res))
}

func gibps(bytesPerS float64) string { return fixed(bytesPerS/(1<<30), 2) }

func fixed(f float64, prec int) string {
	if !finite(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", prec, f)
}

// latency formats nanoseconds with three significant figures at most:
// 850ns, 1.2µs, 15.3µs, 153µs, 2.1ms, 1.25s. Zero (not measured) is "-".
func latency(ns int64) string {
	if ns <= 0 {
		return "-"
	}
	if ns < 1000 {
		return fmt.Sprintf("%dns", ns)
	}
	v, unit := float64(ns)/1e3, "µs"
	if v >= 999.5 {
		v, unit = v/1e3, "ms"
	}
	if v >= 999.5 {
		v, unit = v/1e3, "s"
	}
	switch {
	case v < 99.95:
		return fmt.Sprintf("%.1f%s", v, unit)
	default:
		return fmt.Sprintf("%.0f%s", v, unit)
	}
}

// count abbreviates a count: 950, 8.2k, 82k, 1.3M, 13M, 2.1G.
func count(n int64) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	v, unit := float64(n), ""
	for _, u := range []string{"k", "M", "G", "T"} {
		if v < 999.5 {
			break
		}
		v, unit = v/1000, u
	}
	if v < 9.95 {
		return fmt.Sprintf("%.1f%s", v, unit)
	}
	return fmt.Sprintf("%.0f%s", v, unit)
}

func checksum(ok *bool) string {
	switch {
	case ok == nil:
		return "n/a"
	case *ok:
		return "ok"
	}
	return "MISMATCH"
}

// plural formats a count of things: "1 worker", "4 workers".
func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// oneLine makes s one line of inert text: runs of white space become one
// space, and what would not print as itself (an escape byte in a file
// name inside an error) is escaped as Go quotes it.
func oneLine(s string) string { return units.EscapeControls(strings.Join(strings.Fields(s), " ")) }

func width(s string) int { return utf8.RuneCountInString(s) }
