package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/units"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func ptr[T any](v T) *T { return &v }

// sample is a hand-built report with two cache states, several engines,
// a failed row, an unchecked checksum, a mismatch and notes.
func sample() *bench.Report {
	runs := func(bps ...float64) []bench.Run {
		var rs []bench.Run
		for _, b := range bps {
			rs = append(rs, bench.Run{Bytes: 1 << 30, Blocks: 8192, WallNs: int64(float64(1<<30) / b * 1e9),
				BytesPerS: b, ChecksumOK: ptr(true), Checksum: "9f1c2a7e"})
		}
		return rs
	}
	const gib = 1 << 30
	res := func(engine, cache string, bps, lo, hi float64) bench.Result {
		return bench.Result{Engine: engine, Cache: cache, Pattern: "seq", BS: 128 << 10, Workers: 1, QD: 1,
			Consume: "checksum", Runs: runs(lo, bps, hi), BytesPerS: bps, BytesPerSMin: lo, BytesPerSMax: hi,
			IOPS: bps / (128 << 10), ChecksumOK: ptr(true)}
	}
	r1 := res("pread", "warm", 7.91*gib, 7.80*gib, 8.02*gib)
	r1.CPUSPerGiB, r1.UsrPct, r1.SysPct = 0.126, 31.2, 68.4
	r1.LatP50Ns, r1.LatP99Ns, r1.LatP999Ns, r1.LatMaxNs = 14_980, 40_120, 2_104_000, 9_800_000
	r1.Syscalls, r1.MinFlt, r1.MajFlt, r1.NVCSw, r1.NIVCSw = 8_195, 312, 0, 12, 3

	r2 := res("mmap", "warm", 11.43*gib, 10.9*gib, 11.61*gib)
	r2.CPUSPerGiB, r2.UsrPct, r2.SysPct = 0.087, 58.0, 41.7
	r2.LatP50Ns, r2.LatP99Ns, r2.LatP999Ns, r2.LatMaxNs = 820, 31_400, 153_200, 1_200_000
	r2.Syscalls, r2.MinFlt, r2.MajFlt, r2.NVCSw, r2.NIVCSw = 5, 262_150, 0, 2, 11

	r3 := res("io_uring", "warm", 0, 0, 0)
	r3.Runs = nil
	r3.ChecksumOK = nil
	r3.Error = "io_uring_setup: operation not permitted\n(kernel.io_uring_disabled=2)"

	r4 := res("null", "warm", 51.2*gib, 49.9*gib, 52.3*gib)
	r4.CPUSPerGiB, r4.UsrPct, r4.SysPct = 0.001, 4, 0
	r4.LatP50Ns, r4.LatP99Ns, r4.LatP999Ns = 21, 60, 412
	r4.Syscalls, r4.MinFlt, r4.NVCSw, r4.NIVCSw = 0, 140, 1, 0
	r4.ChecksumOK = nil
	r4.Notes = []string{"delivers no file data: measures the runner itself"}

	r5 := res("pread", "cold", 1.52*gib, 1.48*gib, 1.55*gib)
	r5.CPUSPerGiB, r5.UsrPct, r5.SysPct = 0.215, 4.1, 28.5
	r5.LatP50Ns, r5.LatP99Ns, r5.LatP999Ns = 61_300, 1_950_000, 12_500_000
	r5.Syscalls, r5.MinFlt, r5.MajFlt, r5.NVCSw, r5.NIVCSw = 8_195, 301, 0, 7_912, 40

	r6 := res("mmap", "cold", 1.21*gib, 1.02*gib, 1.3*gib)
	r6.CPUSPerGiB, r6.UsrPct, r6.SysPct = 0.341, 10.3, 31.0
	r6.LatP50Ns, r6.LatP99Ns, r6.LatP999Ns = 3_100, 2_450_000, 1_250_000_000
	r6.Syscalls, r6.MinFlt, r6.MajFlt, r6.NVCSw, r6.NIVCSw = 5, 1_310_720, 16_384, 16_500, 1_234_567
	r6.ChecksumOK = ptr(false)
	r6.Runs[1].ChecksumOK = ptr(false)
	r6.Runs[1].Checksum = "00c0ffee"

	r7 := res("readv", "warm", 8.4*gib, 8.4*gib, 8.4*gib)
	r7.Pattern, r7.BS, r7.Workers, r7.QD = "rand", 4096, 4, 32
	r7.Runs = r7.Runs[:1]
	r7.CPUSPerGiB, r7.UsrPct, r7.SysPct = 0.231, 80.5, 112.25
	r7.LatP50Ns, r7.LatP99Ns, r7.LatP999Ns = 1_200, 9_999, 999_960
	r7.Syscalls, r7.MinFlt, r7.NVCSw, r7.NIVCSw = 65_536, 999, 1_000, 999_999

	return &bench.Report{
		SchemaVersion: bench.SchemaVersion,
		Tool:          "iopath",
		Command:       "iopath bench /var/tmp/data --cache warm,cold",
		Started:       time.Date(2026, 11, 22, 2, 42, 11, 0, time.UTC),
		Machine: features.Machine{Kernel: "6.18.44", Arch: "amd64", CPUModel: "Intel(R) Xeon(R) Processor",
			Cores: 2, MemBytes: 8 << 30, PageSize: 4096, THP: "madvise", Filesystem: "ext4", Device: "vda",
			IOURing: "disabled by policy (kernel.io_uring_disabled=2)", GoVersion: "go1.26.8", IopathVersion: "devel"},
		File:    bench.FileInfo{Path: "/var/tmp/data", SizeBytes: 1 << 30},
		Results: []bench.Result{r1, r2, r3, r4, r5, r6, r7},
		Notes: []string{
			"cold: the page cache was dropped with posix_fadvise(DONTNEED) before each run",
			"mmap (cold): checksum MISMATCH in run 2 of 3",
		},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestTableGolden(t *testing.T) {
	golden(t, "table.golden", render(t, "table", sample()))
}

func TestTableOneWorkloadGolden(t *testing.T) {
	r := sample()
	r.Results = r.Results[:6]
	r.File.Temporary = true
	golden(t, "table_one_workload.golden", render(t, "table", r))
}

func TestTableWidth(t *testing.T) {
	for _, l := range strings.Split(string(render(t, "table", sample())), "\n") {
		if n := width(l); n > 120 && !strings.Contains(l, "error:") && !strings.HasPrefix(l, "machine:") {
			t.Errorf("line is %d columns wide: %q", n, l)
		}
	}
}

func TestTableEmpty(t *testing.T) {
	if out := string(render(t, "table", &bench.Report{})); !strings.Contains(out, "no results") {
		t.Errorf("empty report:\n%s", out)
	}
}

func TestJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, sample()); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b.Bytes()) || !bytes.HasSuffix(b.Bytes(), []byte("}\n")) {
		t.Fatal("not valid JSON ending with a newline")
	}
	golden(t, "report.golden.json", b.Bytes())

	var back bench.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Results[5].ChecksumOK == nil || *back.Results[5].ChecksumOK || back.Results[2].ChecksumOK != nil {
		t.Error("checksum_ok did not round-trip as false and null")
	}
}

func TestJSONNonFinite(t *testing.T) {
	r := sample()
	r.Results[0].BytesPerS = math.NaN()
	r.Results[0].CPUSPerGiB = math.Inf(1)
	r.Results[1].UsrPct = math.Inf(-1)
	r.Results[1].Runs[0].BytesPerS = math.NaN()
	r.Results[1].Runs[2].ResidentBefore = math.Inf(1)

	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("json.Unmarshal: %v\n%s", err, b.Bytes())
	}
	if back.Results[0].BytesPerS != 0 || back.Results[0].CPUSPerGiB != 0 || back.Results[1].UsrPct != 0 ||
		back.Results[1].Runs[0].BytesPerS != 0 || back.Results[1].Runs[2].ResidentBefore != 0 {
		t.Error("non-finite floats were not written as 0")
	}
	if back.Results[0].UsrPct != r.Results[0].UsrPct || back.Results[1].Runs[1].BytesPerS != r.Results[1].Runs[1].BytesPerS {
		t.Error("finite floats changed")
	}
	// The caller's report is left alone.
	if !math.IsNaN(r.Results[0].BytesPerS) || !math.IsNaN(r.Results[1].Runs[0].BytesPerS) {
		t.Error("JSON modified the report it was given")
	}

	// The table shows them as n/a instead of NaN.
	if s := string(render(t, "table", r)); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
		t.Errorf("table shows NaN or Inf:\n%s", s)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterError(t *testing.T) {
	if err := Write(failWriter{}, "table", sample(), DocOptions{}); err == nil {
		t.Error("Table: no error from a failing writer")
	}
	if err := JSON(failWriter{}, sample()); err == nil {
		t.Error("JSON: no error from a failing writer")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{latency(0), "-"}, {latency(850), "850ns"}, {latency(1_234), "1.2µs"}, {latency(15_300), "15.3µs"},
		{latency(153_200), "153µs"}, {latency(999_960), "1.0ms"}, {latency(2_100_000), "2.1ms"},
		{latency(1_250_000_000), "1.2s"}, {latency(12_500_000_000), "12.5s"},
		{count(0), "0"}, {count(999), "999"}, {count(1000), "1.0k"}, {count(8_195), "8.2k"},
		{count(82_000), "82k"}, {count(999_999), "1.0M"}, {count(1_310_720), "1.3M"}, {count(13_000_000), "13M"},
		{count(2_100_000_000), "2.1G"},
		{gibps(7.91 * (1 << 30)), "7.91"}, {fixed(math.NaN(), 2), "n/a"},
		{units.RoughSize(24684084 << 10), "23.5GiB"}, {units.RoughSize(8 << 30), "8GiB"}, {units.RoughSize(100), "100B"},
		{checksum(nil), "n/a"}, {checksum(ptr(true)), "ok"}, {checksum(ptr(false)), "MISMATCH"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
