package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/units"
)

// Descriptions shared by the renderers, so that every output names a
// workload or a machine the same way.

// workloadParts names a workload's parameters in order: "seq", "bs
// 128KiB", "1 worker", "qd 32", "consume none". Zero values are left out
// (qd 0: an engine without a queue).
func workloadParts(pattern string, bs, workers, qd int, consume string) []string {
	parts := []string{}
	if pattern != "" {
		parts = append(parts, pattern)
	}
	if bs > 0 {
		parts = append(parts, "bs "+units.FormatSize(int64(bs)))
	}
	if workers > 0 {
		parts = append(parts, plural(workers, "worker"))
	}
	if qd > 0 {
		parts = append(parts, fmt.Sprintf("qd %d", qd))
	}
	if consume != "" {
		parts = append(parts, "consume "+consume)
	}
	return parts
}

// hardwareParts describes a machine's CPU, cores, memory and filesystem:
// "Intel(R) Xeon(R) Processor", "2 cores", "24GiB RAM", "ext4 on vda".
// Unknown values are left out.
func hardwareParts(m features.Machine) []string {
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
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
	return parts
}

// Helpers of the text and HTML renderers, moved here unchanged from the
// hand-written bench writers (issue 14).

func checksum(ok *bool) string {
	switch {
	case ok == nil:
		return "n/a"
	case *ok:
		return "ok"
	}
	return "MISMATCH"
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

// fileExtra is what the header says about the file besides its path.
func fileExtra(f bench.FileInfo) string {
	extra := []string{units.FormatSize(f.SizeBytes)}
	if f.Temporary {
		extra = append(extra, "temporary")
	}
	return strings.Join(extra, ", ")
}

func finite(f float64) bool { return stats.Finite(f) }

func fixed(f float64, prec int) string {
	if !finite(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", prec, f)
}

func gibps(bytesPerS float64) string { return fixed(bytesPerS/(1<<30), 2) }

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

// notRun reports whether an interrupt kept r from making any run.
func notRun(r *bench.Result) bool { return r.Error == bench.InterruptedError }

// oneLine makes s one line of inert text: runs of white space become one
// space, and what would not print as itself (an escape byte in a file
// name inside an error) is escaped as Go quotes it.
func oneLine(s string) string { return units.OneLine(s) }

// plural formats a count of things: "1 worker", "4 workers".
func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ratio formats a throughput ratio: 0.97×.
func ratio(f float64) string {
	if !finite(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", f)
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

func width(s string) int { return utf8.RuneCountInString(s) }

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

// mdRow writes one table row; with escape the cells are escaped first.
func mdRow(b *bytes.Buffer, cells []string, escape bool) {
	b.WriteString("|")
	for _, c := range cells {
		if escape {
			c = mdEscape(c)
		}
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

// mdEscape makes s literal markdown text on one line: the characters that
// could start markup are backslash-escaped (| too, which would end a table
// cell), except _ inside a word, which GitHub leaves alone (io_uring).
func mdEscape(s string) string {
	s = oneLine(s)
	rs := []rune(s)
	var b strings.Builder
	word := func(i int) bool {
		return i >= 0 && i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]))
	}
	for i, r := range rs {
		switch r {
		case '\\', '|', '*', '`', '[', ']', '<', '>', '~', '#', '&', '!':
			b.WriteByte('\\')
		case '_':
			if !word(i-1) || !word(i+1) {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// uniq is s without its repeats, in order of first appearance.
func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
