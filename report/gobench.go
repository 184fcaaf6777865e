package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/units"
)

// gobenchUnits are the units of the figures GoBench writes for each run,
// besides ns/op and MB/s, which benchstat knows. All of them are better
// lower; the Unit lines tell benchstat so.
var gobenchUnits = []string{"cpu-s/GiB", "p50-ns", "p99-ns", "syscalls/op"}

// GoBench writes r in the Go benchmark format that `go test -bench`
// prints, so that benchstat can summarise and compare reports:
//
//	benchstat old.txt new.txt
//	benchstat -col /engine -row /bs new.txt
//
// One benchmark op is one pass over the file. Each successful run is one
// line (benchstat needs the samples): its name carries the workload as
// key=value sub-names (tool, engine, cache, pattern, bs, workers, qd,
// consume), the iteration count is the run's passes, and the figures are
// ns/op (wall time per pass), MB/s (10^6 bytes per second, as the
// testing package writes it), cpu-s/GiB (user+system CPU seconds per GiB,
// io_uring kernel threads included), p50-ns and p99-ns (per-block
// latency) and syscalls/op (not for fio, which does not count them).
// Failed runs are left out, and so are rows an interrupt kept from
// running (a comment line says how many); fio rows are tool=fio with
// fio's ioengine as the engine.
//
// The configuration lines (goos, goarch, pkg, cpu, file) are only those
// that describe what was measured, because benchstat puts results whose
// configuration differs in separate tables: the iopath version, the
// command and the time are written on lines benchstat ignores, so that
// two versions' reports compare.
func GoBench(w io.Writer, r *bench.Report) error {
	var b bytes.Buffer
	config := func(key, value string) {
		if value = oneLine(value); value != "" {
			fmt.Fprintf(&b, "%s: %s\n", key, value)
		}
	}
	config("goos", "linux")
	config("goarch", r.Machine.Arch)
	config("pkg", "github.com/iopath/iopath")
	config("cpu", r.Machine.CPUModel)
	if r.File.Temporary {
		config("file", "temporary ("+units.FormatSize(r.File.SizeBytes)+")")
	} else if r.File.Path != "" {
		config("file", units.QuotePath(r.File.Path)+" ("+units.FormatSize(r.File.SizeBytes)+")")
	}
	comment := func(label, value string) {
		if value = oneLine(value); value != "" {
			fmt.Fprintf(&b, "# %s: %s\n", label, value)
		}
	}
	comment("version", versionLine(r))
	comment("machine", machineLine(r))
	if r.Fio != nil {
		comment("fio", r.Fio.Version)
	}
	comment("command", r.Command)
	if !r.Started.IsZero() {
		comment("started", r.Started.Format("2006-01-02 15:04:05 MST"))
	}
	if r.Interrupted {
		notRunRows, cut := 0, 0
		for i := range r.Results {
			switch res := &r.Results[i]; {
			case notRun(res):
				notRunRows++
			case res.Interrupted:
				cut++
			}
		}
		comment("interrupted", fmt.Sprintf("the results are incomplete: %d rows not run, %d with fewer runs than asked", notRunRows, cut))
	}
	for _, u := range gobenchUnits {
		fmt.Fprintf(&b, "Unit %s better=lower\n", u)
	}

	for i := range r.Results {
		res := &r.Results[i]
		name := gobenchName(res)
		for _, run := range res.Runs {
			if run.Error != "" || run.WallNs <= 0 || run.Bytes <= 0 {
				continue
			}
			passes := max(run.Passes, 1)
			b.WriteString(name)
			fmt.Fprintf(&b, " \t%d", passes)
			value := func(v float64, unit string) {
				if finite(v) {
					fmt.Fprintf(&b, " \t%s %s", strconv.FormatFloat(v, 'f', -1, 64), unit)
				}
			}
			bps := run.BytesPerS
			if bps <= 0 || !finite(bps) {
				bps = float64(run.Bytes) / (float64(run.WallNs) / 1e9)
			}
			value(float64(run.WallNs)/float64(passes), "ns/op")
			value(bps/1e6, "MB/s")
			if cpu := run.UserNs + run.SysNs; cpu > 0 {
				value(float64(cpu)/1e9/(float64(run.Bytes)/(1<<30)), "cpu-s/GiB")
			}
			if run.LatP50Ns > 0 {
				value(float64(run.LatP50Ns), "p50-ns")
			}
			if run.LatP99Ns > 0 {
				value(float64(run.LatP99Ns), "p99-ns")
			}
			if !isFioResult(res) && res.Syscalls >= 0 && run.Syscalls >= 0 {
				value(float64(run.Syscalls)/float64(passes), "syscalls/op")
			}
			b.WriteByte('\n')
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// gobenchName is the benchmark name of res's runs:
// BenchmarkRead/tool=iopath/engine=pread/cache=warm/pattern=seq/bs=128KiB/workers=1/qd=0/consume=none.
func gobenchName(res *bench.Result) string {
	var b strings.Builder
	b.WriteString("BenchmarkRead")
	part := func(key, value string) {
		b.WriteString("/" + key + "=" + gobenchValue(value))
	}
	part("tool", toolName(res))
	part("engine", res.Engine)
	part("cache", res.Cache)
	part("pattern", res.Pattern)
	part("bs", units.FormatSize(int64(res.BS)))
	part("workers", strconv.Itoa(res.Workers))
	part("qd", strconv.Itoa(res.QD))
	part("consume", res.Consume)
	return b.String()
}

// gobenchValue makes s safe as a sub-name value: no space (which ends the
// name), no / or = (which separate sub-names and keys) and no trailing
// -N (which would read as GOMAXPROCS).
func gobenchValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' || r == '=' {
			return '_'
		}
		return r
	}, s)
	if i := strings.LastIndexByte(s, '-'); i >= 0 && i < len(s)-1 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			s = s[:i] + "_" + s[i+1:]
		}
	}
	return s
}
