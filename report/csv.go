package report

import (
	"bytes"
	"encoding/csv"
	"io"
	"math"
	"strconv"

	"github.com/iopath/iopath/bench"
)

// csvColumns are the CSV's columns. A name that is also a JSON key of
// bench.Result means the same thing in the same unit; runs is the number
// of runs and checksum is ok, mismatch or empty (not checked).
var csvColumns = []string{
	"tool", "engine", "twin", "cache", "pattern", "bs_bytes", "workers", "qd", "consume", "runs",
	"bytes_per_s", "bytes_per_s_min", "bytes_per_s_max", "iops",
	"cpu_s_per_gib", "io_thread_cpu_s_per_gib", "usr_pct", "sys_pct",
	"lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_p999_ns", "lat_p9999_ns", "lat_max_ns",
	"syscalls_per_pass", "minflt_per_pass", "majflt_per_pass", "nvcsw_per_pass", "nivcsw_per_pass",
	"checksum", "vs_fio", "noisy_runs", "error", "interrupted",
}

// CSV writes r's results as comma-separated values: a header line, then
// one line per result, fio's and failed ones included, in the report's
// order. Numbers are plain (full precision, a dot for decimals, no
// thousands separators); a figure that is NaN, infinite or not known
// (fio's syscalls, vs_fio without a fio twin) is empty. A row without a
// run that succeeded (it failed, could not run here, or an interrupt kept
// it from running: error "interrupted") has no figures: they are empty,
// not zeros, and the error column says why. interrupted is "true" for a
// row an interrupt cut short (its figures are from the runs it made).
func CSV(w io.Writer, r *bench.Report) error {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	if err := cw.Write(csvColumns); err != nil {
		return err
	}
	for i := range r.Results {
		if err := cw.Write(csvRecord(&r.Results[i])); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func csvRecord(r *bench.Result) []string {
	measured := hasGoodRun(r)
	i := func(n int64) string {
		if !measured {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	f := func(x float64) string {
		if !measured || math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	syscalls := ""
	if r.Syscalls >= 0 {
		syscalls = i(r.Syscalls)
	}
	interrupted := ""
	if r.Interrupted {
		interrupted = "true"
	}
	sum := ""
	if r.ChecksumOK != nil {
		sum = "mismatch"
		if *r.ChecksumOK {
			sum = "ok"
		}
	}
	vs := ""
	if r.VsFio != 0 {
		vs = f(r.VsFio)
	}
	return []string{
		toolName(r), r.Engine, r.Twin, r.Cache, r.Pattern, strconv.Itoa(r.BS), strconv.Itoa(r.Workers), strconv.Itoa(r.QD),
		r.Consume, strconv.Itoa(len(r.Runs)),
		f(r.BytesPerS), f(r.BytesPerSMin), f(r.BytesPerSMax), f(r.IOPS),
		f(r.CPUSPerGiB), f(r.IOThreadCPUSPerGiB), f(r.UsrPct), f(r.SysPct),
		i(r.LatP50Ns), i(r.LatP90Ns), i(r.LatP99Ns), i(r.LatP999Ns), i(r.LatP9999Ns), i(r.LatMaxNs),
		syscalls, i(r.MinFlt), i(r.MajFlt), i(r.NVCSw), i(r.NIVCSw),
		sum, vs, strconv.Itoa(r.NoisyRuns), oneLine(r.Error), interrupted,
	}
}

// hasGoodRun reports whether one of r's runs succeeded, so that its
// figures are measurements (a row without one holds zeros).
func hasGoodRun(r *bench.Result) bool {
	for _, run := range r.Runs {
		if run.Error == "" {
			return true
		}
	}
	return false
}

// toolName is the row's tool; rows from before the field existed are
// iopath's.
func toolName(r *bench.Result) string {
	if r.Tool == "" {
		return bench.ToolIopath
	}
	return r.Tool
}
