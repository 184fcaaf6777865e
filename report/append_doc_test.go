package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
)

// appendSample is a hand-built report of bench --append: 4 KiB records,
// the four methods with 1 and 64 writers, three runs each; a noisy run,
// io_uring's kernel threads' CPU, a run cut at the cap and a failed row
// (log/io_uring ×64). Its figures are made up but shaped like real ones.
func appendSample() *bench.Report {
	const size = 4096
	mk := func(method string, writers int, rps, syncs float64, p50, p99, p999 int64, cpuUs float64) bench.Result {
		res := bench.Result{Tool: bench.ToolIopath, Engine: method, Cache: "warm", Pattern: "append", BS: size,
			Workers: writers, Runs: []bench.Run{}, ChecksumOK: ptr(true)}
		var rates []float64
		for _, f := range []float64{0.97, 1.0, 1.02} {
			n := int64(rps * f)
			wall := int64(time.Second)
			cpu := int64(cpuUs * 1e3 * float64(n))
			run := bench.Run{Passes: 1, Bytes: n * size, Blocks: n, WallNs: wall, BytesPerS: float64(n * size),
				UserNs: cpu / 4, SysNs: cpu - cpu/4, NVCSw: 2 * n, NIVCSw: n / 10, Syscalls: 2 * int64(float64(n)*syncs),
				Syncs: int64(float64(n) * syncs), LatP50Ns: p50, LatP90Ns: p99 / 2, LatP99Ns: p99, LatP999Ns: p999,
				LatP9999Ns: p999 * 2, LatMaxNs: p999 * 3, Verified: "dropped", ChecksumOK: ptr(true)}
			res.Runs = append(res.Runs, run)
			rates = append(rates, float64(n))
		}
		res.IOPS, res.BytesPerS = rates[1], rates[1]*size
		res.BytesPerSMin, res.BytesPerSMax = rates[0]*size, rates[2]*size
		res.CPUSPerGiB = cpuUs / 1e6 * (1 << 30) / size
		res.UsrPct, res.SysPct = cpuUs*rates[1]/1e4/4, cpuUs*rates[1]/1e4*3/4
		res.LatP50Ns, res.LatP90Ns, res.LatP99Ns, res.LatP999Ns, res.LatP9999Ns, res.LatMaxNs = p50, p99/2, p99, p999, 2*p999, 3*p999
		res.Syscalls, res.SyncsPerPass = res.Runs[1].Syscalls, res.Runs[1].Syncs
		res.SyncsPerRecord, res.CPUUsPerRecord = syncs, cpuUs
		return res
	}
	rows := []bench.Result{
		mk(bench.AppendFileFsync, 1, 410, 1, 2_300_000, 6_100_000, 9_800_000, 61),
		mk(bench.AppendFileFdatasync, 1, 425, 1, 2_250_000, 6_000_000, 9_500_000, 58),
		mk(bench.AppendLogPwrite, 1, 402, 1, 2_350_000, 6_300_000, 10_100_000, 66),
		mk(bench.AppendLogURing, 1, 380, 1, 2_500_000, 6_700_000, 11_000_000, 79),
		mk(bench.AppendFileFsync, 64, 418, 1, 150_000_000, 170_000_000, 190_000_000, 70),
		mk(bench.AppendFileFdatasync, 64, 431, 1, 148_000_000, 165_000_000, 180_000_000, 66),
		mk(bench.AppendLogPwrite, 64, 9_650, 1.0/22, 6_500_000, 14_000_000, 21_000_000, 9.5),
		mk(bench.AppendLogURing, 64, 0, 0, 0, 0, 0, 0),
	}
	rows[3].IOThreadCPUSPerGiB = 4e-6 * (1 << 30) / size
	for i := range rows[3].Runs {
		rows[3].Runs[i].IOThreadNs = int64(rows[3].Runs[i].Blocks) * 4000
	}
	rows[0].NoisyRuns = 1
	rows[0].Runs[2].Noisy = "other processes used 31% of a core"
	rows[6].Notes = []string{"a run stopped early at the cap of 1GiB on its file"}
	rows[6].Runs[0].Notes = rows[6].Notes
	failed := &rows[7]
	failed.Runs = []bench.Run{{Error: "records lost or corrupted: 3 records of 9400 acknowledged (3 missing, 0 damaged, 0 repeated or out of order, 0 never acknowledged); first: writer 7: 150 records acknowledged, its last in the file is record 148",
		ChecksumOK: ptr(false)}}
	failed.Error, failed.ChecksumOK = failed.Runs[0].Error, ptr(false)
	failed.IOPS, failed.BytesPerS, failed.BytesPerSMin, failed.BytesPerSMax = 0, 0, 0, 0
	return &bench.Report{
		SchemaVersion: bench.SchemaVersion,
		Tool:          bench.ToolIopath,
		Command:       "iopath bench --append --writers 1,64",
		Started:       time.Date(2026, 11, 26, 18, 2, 11, 0, time.UTC),
		Machine: features.Machine{Kernel: "6.18.44", Arch: "amd64", CPUModel: "AMD EPYC", Cores: 2, MemBytes: 24 << 30,
			PageSize: 4096, THP: "madvise", Filesystem: "ext4", Device: "vda", IOURing: "available", GoVersion: "go1.26.8",
			IopathVersion: "devel", LatencyClock: "tsc"},
		Append: &bench.AppendInfo{Dir: "/var/tmp", Filesystem: "ext4", RecordSizeBytes: size, DurationNs: int64(time.Second),
			MaxBytes: 1 << 30},
		Sweep:   bench.Sweep{BlockSizes: []int{size}, Workers: []int{1, 64}, Caches: []string{"warm"}},
		Results: rows,
		Notes:   []string{"each run appends 4KiB records from every writer for 1s to a new, empty file in /var/tmp"},
	}
}

// TestAppendDocGolden: the table (and --wide), CSV and Markdown of an
// append report.
func TestAppendDocGolden(t *testing.T) {
	r := appendSample()
	for _, tc := range []struct {
		name, format string
		wide         bool
	}{
		{"append.table.golden", "table", false},
		{"append.table_wide.golden", "table", true},
		{"append.csv.golden", "csv", false},
		{"append.markdown.golden", "markdown", false},
		{"append.gobench.golden", "gobench", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tc.format, r, DocOptions{Wide: tc.wide}); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "append.golden.json", b.Bytes())
}

// TestAppendDoc: a group per writer count, a row per method, the ratio
// to file+fsync of the same group, the failed row's error, and the
// identity of a row (method, writers, record size) for compare.
func TestAppendDoc(t *testing.T) {
	r := appendSample()
	d := BenchDoc(r)
	if d.Kind != bench.KindAppend {
		t.Errorf("kind %q", d.Kind)
	}
	if len(d.Groups) != 2 || d.Groups[0].Title != "1 writer" || d.Groups[1].Title != "64 writers" {
		t.Fatalf("groups %+v", d.Groups)
	}
	col := func(key string) int {
		for i, c := range d.Columns {
			if c.Key == key {
				return i
			}
		}
		t.Fatalf("no column %s", key)
		return -1
	}
	vs, rps, method := col("vs_file_fsync"), col("records_per_s"), col("method")
	g := d.Groups[1]
	if got := g.Rows[0].Cells[vs].Value; got != 1 {
		t.Errorf("file+fsync vs itself %v", got)
	}
	if got, want := g.Rows[2].Cells[vs].Value, 9650.0/418; got != want {
		t.Errorf("log/pwrite ×64 vs file+fsync %v, want %v", got, want)
	}
	if c := g.Rows[2].Cells[rps]; len(c.Runs) != 3 || c.Min >= c.Max || c.Value != 9650 {
		t.Errorf("records/s cell %+v", c)
	}
	if g.Rows[3].Err == "" || !strings.Contains(g.Rows[3].Err, "records lost") || g.Rows[3].Cells[method].Text != bench.AppendLogURing {
		t.Errorf("failed row %+v", g.Rows[3])
	}
	var keys, headline []string
	for _, c := range d.Columns {
		if c.Left {
			keys = append(keys, c.Key)
		}
		if c.Headline {
			headline = append(headline, c.Key)
		}
	}
	if strings.Join(keys, ",") != "method,writers,record_size" || strings.Join(headline, ",") != "records_per_s,lat_p99_ns,cpu_us_per_record" {
		t.Errorf("identity %v, headline %v", keys, headline)
	}
	var table bytes.Buffer
	if err := WriteDoc(&table, "table", d, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"23.09×", "LOST", "error: records lost or corrupted", "log/io_uring ×1: 4.0 of its 79.0 CPU µs/record",
		"log/pwrite ×64: a run stopped early", "file+fsync ×1 run 3: noisy"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, table.String())
		}
	}
}

// TestAppendJSONRoundTrip: an append report reads back as it was
// written, kind and all.
func TestAppendJSONRoundTrip(t *testing.T) {
	r := appendSample()
	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"kind": "append"`) {
		t.Fatalf("no kind append:\n%.300s", b.String())
	}
	roundTrip(t, b.Bytes(), LoadJSON, r)
}

// TestAppendCompare: two append reports compare row by row, by method
// and writer count; a slower Log is a regression.
func TestAppendCompare(t *testing.T) {
	old, cur := appendSample(), appendSample()
	slow := &cur.Results[6] // log/pwrite ×64
	for i := range slow.Runs {
		slow.Runs[i].Blocks /= 2
		slow.Runs[i].Bytes /= 2
		slow.Runs[i].BytesPerS /= 2
	}
	slow.IOPS /= 2
	slow.BytesPerS /= 2
	c := compareBench(t, old, cur)
	if c.Kind != bench.KindAppend || len(c.Rows) != len(old.Results) {
		t.Fatalf("kind %q, %d rows", c.Kind, len(c.Rows))
	}
	regs := c.Regressions(5)
	if len(regs) != 1 || regs[0].Name() != bench.AppendLogPwrite || regs[0].Group != "64 writers" {
		var names []string
		for _, r := range regs {
			names = append(names, r.Group+": "+r.Name())
		}
		t.Errorf("regressions %q, want 64 writers: log/pwrite", names)
	}
}

// TestAppendHTML: the page holds its three charts, a bar per method in
// a group per writer count, and the table.
func TestAppendHTML(t *testing.T) {
	r := appendSample()
	doc := renderHTML(t, r)
	checkCharts(t, doc, map[string]int{"append-records-per-s": 4, "append-p99": 4, "append-cpu-per-record": 4})
	for _, want := range []string{"iopath bench --append: 4KiB records", "64 writers", bench.AppendLogURing, "records lost"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}
