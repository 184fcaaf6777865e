package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/units"
)

// consumeModes says in a few words what each consume mode makes the CPU do
// with the bytes an engine delivers.
var consumeModes = map[string]string{
	"checksum": "every byte read by the CPU",
	"touch":    "one byte read per page",
	"none":     "bytes land in a buffer and nothing reads them further (fio's semantics; mmap copies each block out, as fio's mmap engine does)",
}

// column is one column of the table. top is an optional label printed on
// the line above head, right-aligned to the column's right edge; it may
// reach over the columns to its left and does not widen its own.
type column struct {
	top, head string
	right     bool // right-align (numbers)
	gap       int  // spaces before the column
}

var columns = []column{
	{head: "engine"},
	{head: "cache", gap: 2},
	{head: "GiB/s", right: true, gap: 2},
	{head: "(min–max)", gap: 1},
	{top: "CPU-s", head: "/GiB", right: true, gap: 1},
	{head: "usr%", right: true, gap: 1},
	{head: "sys%", right: true, gap: 1},
	{head: "P50", right: true, gap: 2},
	{head: "P99", right: true, gap: 1},
	{top: "latency", head: "P99.9", right: true, gap: 1},
	{head: "syscalls", right: true, gap: 1},
	{head: "minflt", right: true, gap: 1},
	{head: "majflt", right: true, gap: 1},
	{head: "vcsw", right: true, gap: 2},
	{head: "ivcsw", right: true, gap: 1},
	{head: "checksum", gap: 2},
}

const legend = `GiB/s          median over the runs (min–max): bytes delivered to the consumer per
               second of wall time, open and close included; 1 GiB = 2^30 bytes
CPU-s/GiB      user+system CPU seconds per GiB delivered: lower is better, and steadier
               than GiB/s on a busy machine
usr% sys%      user and system CPU time as % of one core over the wall time
P50 P99 P99.9  latency per block: request issued to data available to the consumer
syscalls       per pass over the file, counted at the engine's own call sites, not the
               Go runtime's
minflt majflt  minor and major page faults per pass (major: the page was read from disk)
vcsw ivcsw     voluntary and involuntary context switches per pass
checksum       ok: every run delivered the reference (pread) bytes; MISMATCH: a run did
               not; n/a: not checked (consume none or touch, the null engine)
`

// Table writes r as a side-by-side table for people: a header with the
// file, the machine and the consume mode, one row per result (grouped by
// workload under a heading line when there is more than one), a legend and
// the notes.
func Table(w io.Writer, r *bench.Report) error {
	var b bytes.Buffer
	writeHeader(&b, r)

	groups := groupResults(r.Results)
	rows := [][]string{}
	for _, g := range groups {
		for _, res := range g.results {
			rows = append(rows, cells(res))
		}
	}
	widths := make([]int, len(columns))
	for i, c := range columns {
		widths[i] = width(c.head)
	}
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], width(cell))
		}
	}
	// The last column is not padded on the right, so lines end cleanly.
	line := func(cells []string) {
		var l strings.Builder
		for i, c := range columns {
			if i >= len(cells) {
				break
			}
			l.WriteString(strings.Repeat(" ", c.gap))
			pad := strings.Repeat(" ", widths[i]-width(cells[i]))
			if c.right {
				l.WriteString(pad + cells[i])
			} else {
				l.WriteString(cells[i])
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
		b.WriteString(topLine(widths))
		heads := make([]string, len(columns))
		for i, c := range columns {
			heads[i] = c.head
		}
		line(heads)
		n := 0
		for _, g := range groups {
			if len(groups) > 1 {
				fmt.Fprintf(&b, "-- %s\n", g.key)
			}
			for _, res := range g.results {
				if res.Error != "" {
					line(rows[n][:2])
					b.Truncate(b.Len() - 1)
					b.WriteString(strings.Repeat(" ", widths[1]-width(rows[n][1])+2))
					b.WriteString("error: " + oneLine(res.Error) + "\n")
				} else {
					line(rows[n])
				}
				n++
			}
		}
		b.WriteByte('\n')
		b.WriteString(legend)
	}

	var notes []string
	for _, n := range r.Notes {
		notes = append(notes, oneLine(n))
	}
	for _, res := range r.Results {
		for _, n := range res.Notes {
			notes = append(notes, fmt.Sprintf("%s (%s): %s", res.Engine, res.Cache, oneLine(n)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range notes {
			b.WriteString("  - " + n + "\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func writeHeader(b *bytes.Buffer, r *bench.Report) {
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(b, "%-9s %s\n", label+":", value)
		}
	}
	file := r.File.Path
	extra := []string{units.FormatSize(r.File.SizeBytes)}
	if r.File.Temporary {
		extra = append(extra, "temporary")
	}
	field("file", fmt.Sprintf("%s (%s)", file, strings.Join(extra, ", ")))

	m := r.Machine
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	kernel := "Linux " + m.Kernel
	if m.Kernel == "" {
		kernel = "Linux"
	}
	add(strings.TrimSpace(kernel + " " + m.Arch))
	add(m.CPUModel)
	if m.Cores > 0 {
		add(plural(m.Cores, "core"))
	}
	if m.MemBytes > 0 {
		add(units.RoughSize(m.MemBytes) + " RAM")
	}
	fs := m.Filesystem
	if m.Device != "" {
		fs = strings.TrimSpace(fs + " on " + m.Device)
	}
	add(fs)
	if m.THP != "" {
		add("THP " + m.THP)
	}
	field("machine", strings.Join(parts, ", "))
	field("io_uring", m.IOURing)
	if m.LatencyClock != "" {
		field("clock", m.LatencyClock+" (per-block latency)")
	}
	var ver []string
	if m.GoVersion != "" {
		ver = append(ver, m.GoVersion)
	}
	if m.IopathVersion != "" {
		ver = append(ver, "iopath "+m.IopathVersion)
	}
	field("version", strings.Join(ver, ", "))

	groups := groupResults(r.Results)
	var modes []string
	seen := map[string]bool{}
	for _, res := range r.Results {
		if !seen[res.Consume] {
			seen[res.Consume] = true
			modes = append(modes, consumeLine(res.Consume))
		}
	}
	field("consume", strings.Join(modes, "; "))
	if len(groups) == 1 {
		field("workload", groups[0].key)
	}
	field("command", r.Command)
	if !r.Started.IsZero() {
		field("started", r.Started.Format("2006-01-02 15:04:05 MST"))
	}
}

// topLine renders the labels that sit above the column heads.
func topLine(widths []int) string {
	var total int
	ends := make([]int, len(columns))
	for i, c := range columns {
		total += c.gap + widths[i]
		ends[i] = total
	}
	line := []rune(strings.Repeat(" ", total))
	has := false
	for i, c := range columns {
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

type group struct {
	key     string
	results []*bench.Result
}

// groupResults groups results by workload in order of first appearance,
// keeping their order within a group.
func groupResults(results []bench.Result) []group {
	var groups []group
	index := map[string]int{}
	for i := range results {
		res := &results[i]
		key := workload(res)
		j, ok := index[key]
		if !ok {
			j = len(groups)
			index[key] = j
			groups = append(groups, group{key: key})
		}
		groups[j].results = append(groups[j].results, res)
	}
	return groups
}

func workload(r *bench.Result) string {
	parts := []string{}
	if r.Pattern != "" {
		parts = append(parts, r.Pattern)
	}
	if r.BS > 0 {
		parts = append(parts, "bs "+units.FormatSize(int64(r.BS)))
	}
	if r.Workers > 0 {
		parts = append(parts, plural(r.Workers, "worker"))
	}
	if r.QD > 0 {
		parts = append(parts, fmt.Sprintf("qd %d", r.QD))
	}
	if r.Consume != "" {
		parts = append(parts, "consume "+r.Consume)
	}
	return strings.Join(parts, ", ")
}

// cells formats one result's row.
func cells(r *bench.Result) []string {
	row := []string{r.Engine, r.Cache}
	if r.Error != "" {
		return row
	}
	spread := ""
	if len(r.Runs) > 1 {
		spread = fmt.Sprintf("(%s–%s)", gibps(r.BytesPerSMin), gibps(r.BytesPerSMax))
	}
	return append(row,
		gibps(r.BytesPerS), spread,
		fixed(r.CPUSPerGiB, 3), fixed(r.UsrPct, 0), fixed(r.SysPct, 0),
		latency(r.LatP50Ns), latency(r.LatP99Ns), latency(r.LatP999Ns),
		count(r.Syscalls), count(r.MinFlt), count(r.MajFlt), count(r.NVCSw), count(r.NIVCSw),
		checksum(r.ChecksumOK))
}

func gibps(bytesPerS float64) string { return fixed(bytesPerS/(1<<30), 2) }

func fixed(f float64, prec int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
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

// roughSize formats n bytes in the largest binary unit not above it, with
// one decimal unless exact: 8GiB, 23.5GiB, 512MiB.
func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func width(s string) int { return utf8.RuneCountInString(s) }
