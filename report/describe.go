package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netbench"
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

// writeJSON writes v as indented JSON followed by a newline, in one Write.
// The output is always valid JSON: a float that is NaN or infinite
// (encoding/json refuses those) is written as 0; v is not modified.
func writeJSON(w io.Writer, v any) error {
	s := sanitize(reflect.ValueOf(v))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.Interface()); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Figures of a net bench point as the HTML page shows them.

// netStat is a figure over a row's runs: the median the model holds and
// the min and max of the runs.
type netStat struct{ med, lo, hi float64 }

func netSpan(med float64, runs []netbench.Run, f func(*netbench.Run) float64) netStat {
	s := netStat{med: med, lo: math.Inf(1), hi: math.Inf(-1)}
	for i := range runs {
		if x := f(&runs[i]); finite(x) {
			s.lo, s.hi = min(s.lo, x), max(s.hi, x)
		}
	}
	if math.IsInf(s.lo, 0) {
		s.lo, s.hi = 0, 0
	}
	return s
}

func netServerCPU(p *netbench.Point) netStat {
	return netSpan(p.ServerCPUPerReqUs, p.Runs, func(r *netbench.Run) float64 { return r.ServerCPUPerReqUs })
}

func netQPS(p *netbench.Point) netStat {
	return netSpan(p.QPS, p.Runs, func(r *netbench.Run) float64 { return r.QPS })
}

func netP99(p *netbench.Point) netStat {
	return netSpan(float64(p.P99Ns), p.Runs, func(r *netbench.Run) float64 { return float64(r.P99Ns) })
}

// netSpreadPct is half the min–max range of the runs as a percentage of the
// median: "±4%". Empty with fewer than two runs.
func netSpreadPct(s netStat, runs int) string {
	if runs < 2 || !(s.med > 0) || !finite(s.med) || s.hi < s.lo {
		return ""
	}
	return fmt.Sprintf("±%.0f%%", 50*(s.hi-s.lo)/s.med)
}

// netPerReq formats a CPU-µs per request figure; 0 is "not measured".
func netPerReq(us float64) string {
	if us == 0 {
		return "-"
	}
	return hSig3(us)
}

// netFmtQPS formats requests per second with three significant figures: 950,
// 8.21k, 172k, 1.23M.
func netFmtQPS(q float64) string {
	if !finite(q) {
		return "n/a"
	}
	if q < 999.5 {
		return fmt.Sprintf("%.0f", q)
	}
	v, unit := q, ""
	for _, u := range []string{"k", "M", "G"} {
		if v < 999.5 {
			break
		}
		v, unit = v/1000, u
	}
	switch {
	case v < 9.995:
		return fmt.Sprintf("%.2f%s", v, unit)
	case v < 99.95:
		return fmt.Sprintf("%.1f%s", v, unit)
	}
	return fmt.Sprintf("%.0f%s", v, unit)
}

// netFmtMBps formats MB/s with three significant figures.
func netFmtMBps(m float64) string { return hSig3(m) }
