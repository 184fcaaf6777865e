package fio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The files in testdata were recorded with fio 3.33 on a 1 MiB file with
// bs=4096 (see TestRecordTestdata): one pass is 1048576 bytes, 256 blocks.
func TestParseRecorded(t *testing.T) {
	tests := []struct {
		file          string
		bytes, blocks int64
		runtimeNs     int64
		userNs, sysNs int64
		ctx, minflt   int64
		p50, p9999    int64
		max           int64
		warnings      int
	}{
		{file: "psync_seq.json", bytes: 1 << 20, blocks: 256, runtimeNs: 1e6, minflt: 15,
			p50: 612, p9999: 27520, max: 27530},
		{file: "io_uring_rand_qd8.json", bytes: 1 << 20, blocks: 256, runtimeNs: 1e6, minflt: 10,
			p50: 8160, p9999: 34048, max: 34013},
		// Two jobs of 300 ms with group_reporting: job_runtime is their sum
		// (601 ms) and usr_cpu, sys_cpu the mean: 22.795341% and 27.620632%.
		{file: "psync_rand_2jobs_group.json", bytes: 2573656064, blocks: 628334, runtimeNs: 302e6,
			userNs: 137e6, sysNs: 166e6, ctx: 236, minflt: 27, p50: 302, p9999: 98816, max: 28553825},
		// Two entries: bytes, blocks and faults summed, the longer runtime,
		// each percentile the larger of the two (p50 from the second job,
		// p99.99 from the first).
		{file: "psync_seq_2jobs_nogroup.json", bytes: 1 << 20, blocks: 256, runtimeNs: 1e6, minflt: 28,
			p50: 620, p9999: 13248, max: 13293},
		// fio's percentiles are bucket midpoints: p99.99 exceeds the max.
		{file: "psync_warning.json", bytes: 1 << 20, blocks: 256, runtimeNs: 1e6, minflt: 15,
			p50: 580, p9999: 23168, max: 23068, warnings: 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := Parse(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.Version != "fio-3.33" {
				t.Errorf("Version %q", r.Version)
			}
			check := func(name string, got, want int64) {
				if got != want {
					t.Errorf("%s = %d, want %d", name, got, want)
				}
			}
			check("Bytes", r.Bytes, tt.bytes)
			check("Blocks", r.Blocks, tt.blocks)
			check("RuntimeNs", r.RuntimeNs, tt.runtimeNs)
			check("UserNs", r.UserNs, tt.userNs)
			check("SysNs", r.SysNs, tt.sysNs)
			check("Ctx", r.Ctx, tt.ctx)
			check("MinFlt", r.MinFlt, tt.minflt)
			check("LatP50Ns", r.LatP50Ns, tt.p50)
			check("LatP9999Ns", r.LatP9999Ns, tt.p9999)
			check("LatMaxNs", r.LatMaxNs, tt.max)
			p := []int64{r.LatP50Ns, r.LatP90Ns, r.LatP99Ns, r.LatP999Ns, r.LatP9999Ns}
			for i := 1; i < len(p); i++ {
				if p[i] < p[i-1] {
					t.Errorf("percentiles out of order: %v", p)
				}
			}
			if want := float64(tt.bytes) / (float64(tt.runtimeNs) / 1e9); r.BytesPerS != want {
				t.Errorf("BytesPerS %g, want %g", r.BytesPerS, want)
			}
			if want := float64(tt.blocks) / (float64(tt.runtimeNs) / 1e9); r.IOPS != want {
				t.Errorf("IOPS %g, want %g", r.IOPS, want)
			}
			if len(r.Warnings) != tt.warnings {
				t.Errorf("Warnings %q, want %d", r.Warnings, tt.warnings)
			}
			if r.Command != nil || r.PassBytes != 0 || r.ProcessUserNs != 0 {
				t.Errorf("Parse set Run's fields: %+v", r)
			}
		})
	}
}

// The write files were recorded as the read ones (TestRecordTestdata):
// fio's write side, and its sync section for --fdatasync=4.
func TestParseRecordedWrite(t *testing.T) {
	tests := []struct {
		file          string
		bytes, blocks int64
		runtimeNs     int64
		userNs, sysNs int64
		ctx, minflt   int64
		p50, p9999    int64
		max           int64
		// sync: count, mean, P50, P99, max
		syncs, syncMean, syncP50, syncP99, syncMax int64
	}{
		// psync, 256 blocks of 4 KiB, an fdatasync after every 4th but
		// the last: 63.
		{file: "psync_write_fdatasync4.json", bytes: 1 << 20, blocks: 256, runtimeNs: 350e6,
			userNs: 2e6, sysNs: 15e6, ctx: 183, minflt: 16, p50: 5152, p9999: 362496, max: 362760,
			syncs: 63, syncMean: 5445811, syncP50: 2506752, syncP99: 67633152, syncMax: 67294747},
		// io_uring O_DIRECT, 16 blocks of 64 KiB at queue depth 8: no sync.
		{file: "io_uring_write_direct.json", bytes: 1 << 20, blocks: 16, runtimeNs: 16e6,
			userNs: 1e6, sysNs: 1e6, ctx: 13, minflt: 10, p50: 4489216, p9999: 12124160, max: 12114479},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := Parse(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !r.Write || r.Version != "fio-3.33" {
				t.Errorf("Write %v, Version %q", r.Write, r.Version)
			}
			for _, c := range []struct {
				name      string
				got, want int64
			}{
				{"Bytes", r.Bytes, tt.bytes}, {"Blocks", r.Blocks, tt.blocks}, {"RuntimeNs", r.RuntimeNs, tt.runtimeNs},
				{"UserNs", r.UserNs, tt.userNs}, {"SysNs", r.SysNs, tt.sysNs}, {"Ctx", r.Ctx, tt.ctx},
				{"MinFlt", r.MinFlt, tt.minflt}, {"LatP50Ns", r.LatP50Ns, tt.p50},
				{"LatP9999Ns", r.LatP9999Ns, tt.p9999}, {"LatMaxNs", r.LatMaxNs, tt.max},
				{"SyncCount", r.SyncCount, tt.syncs}, {"SyncLatMeanNs", r.SyncLatMeanNs, tt.syncMean},
				{"SyncLatP50Ns", r.SyncLatP50Ns, tt.syncP50}, {"SyncLatP99Ns", r.SyncLatP99Ns, tt.syncP99},
				{"SyncLatMaxNs", r.SyncLatMaxNs, tt.syncMax},
			} {
				if c.got != c.want {
					t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
				}
			}
			if want := float64(tt.bytes) / (float64(tt.runtimeNs) / 1e9); r.BytesPerS != want {
				t.Errorf("BytesPerS %g, want %g", r.BytesPerS, want)
			}
			if len(r.Warnings) != 0 {
				t.Errorf("Warnings %q", r.Warnings)
			}
		})
	}
	// The read files have no write side and no syncs.
	r, err := Parse(readTestdata(t, "psync_seq.json"))
	if err != nil || r.Write || r.SyncCount != 0 || r.SyncLatMaxNs != 0 {
		t.Errorf("psync_seq.json: %+v, %v", r, err)
	}
}

// TestParseWriteEntries checks the write side of several job entries:
// sums, the sync mean weighted by each entry's count, and a mixed job
// refused.
func TestParseWriteEntries(t *testing.T) {
	out := `{"fio version": "fio-3.33", "jobs": [
	  {"jobname": "a", "error": 0, "job_runtime": 100, "read": {"io_bytes": 0, "runtime": 0},
	   "write": {"io_bytes": 4096, "total_ios": 1, "runtime": 2, "lat_ns": {"max": 700,
	     "percentile": {"50.000000": 600, "99.990000": 700}}},
	   "sync": {"total_ios": 0, "lat_ns": {"N": 1, "mean": 1000, "max": 1000,
	     "percentile": {"50.000000": 1000, "99.000000": 1000}}}},
	  {"jobname": "b", "error": 0, "job_runtime": 100,
	   "write": {"io_bytes": 8192, "total_ios": 2, "runtime": 4, "lat_ns": {"max": 900,
	     "percentile": {"50.000000": 500, "99.990000": 900}}},
	   "sync": {"total_ios": 0, "lat_ns": {"N": 3, "mean": 2000, "max": 5000,
	     "percentile": {"50.000000": 1500, "99.000000": 4800}}}}]}`
	r, err := Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Write || r.Bytes != 12288 || r.Blocks != 3 || r.RuntimeNs != 4e6 || r.LatP50Ns != 600 ||
		r.LatP9999Ns != 900 || r.LatMaxNs != 900 {
		t.Errorf("write side: %+v", r)
	}
	// Mean (1*1000 + 3*2000) / 4; P50, P99 and max the largest.
	if r.SyncCount != 4 || r.SyncLatMeanNs != 1750 || r.SyncLatP50Ns != 1500 || r.SyncLatP99Ns != 4800 ||
		r.SyncLatMaxNs != 5000 {
		t.Errorf("syncs: count %d mean %d P50 %d P99 %d max %d", r.SyncCount, r.SyncLatMeanNs,
			r.SyncLatP50Ns, r.SyncLatP99Ns, r.SyncLatMaxNs)
	}
	mixed := `{"jobs": [{"jobname": "rw", "error": 0, "read": {"io_bytes": 4096}, "write": {"io_bytes": 4096}}]}`
	if r, err := Parse([]byte(mixed)); err == nil || !strings.Contains(err.Error(), "both read and write") {
		t.Errorf("mixed job: %+v, %v; want an error", r, err)
	}
}

func TestParseWarning(t *testing.T) {
	r, err := Parse(readTestdata(t, "psync_warning.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1"
	if len(r.Warnings) != 1 || r.Warnings[0] != want {
		t.Errorf("Warnings %q, want [%q]", r.Warnings, want)
	}
	// Text after the JSON is kept too.
	out := append(readTestdata(t, "psync_seq.json"), "\n  fio: trailing words \n"...)
	if r, err = Parse(out); err != nil || len(r.Warnings) != 1 || r.Warnings[0] != "fio: trailing words" {
		t.Errorf("Parse with trailing text: %v, %q", err, r.Warnings)
	}
}

// A job that failed (O_DIRECT with a 1000-byte block: EINVAL) is an error
// naming the job and its errno; fio printed "fio: ..." lines before the
// JSON and no latency percentiles.
func TestParseJobError(t *testing.T) {
	out := readTestdata(t, "psync_direct_einval.json")
	if !strings.HasPrefix(string(out), "fio: ") {
		t.Fatalf("testdata does not start with fio's message: %.40q", out)
	}
	_, err := Parse(out)
	if err == nil || !strings.Contains(err.Error(), `"psync"`) || !strings.Contains(err.Error(), "error 22 (invalid argument)") {
		t.Errorf("Parse: %v; want the job's error 22", err)
	}
}

func TestParseMissingFields(t *testing.T) {
	// No percentiles, no job_runtime (fio before it was added), no lat_ns.
	out := `{"fio version": "fio-3.18", "jobs": [
	  {"jobname": "a", "error": 0, "usr_cpu": 10, "sys_cpu": 20, "ctx": 3,
	   "read": {"io_bytes": 4096, "total_ios": 1, "runtime": 2}},
	  {"jobname": "b", "error": 0, "job_runtime": 1000, "usr_cpu": 12.5, "sys_cpu": 50, "majf": 2,
	   "read": {"io_bytes": 8192, "total_ios": 2, "runtime": 4, "lat_ns": {"max": 900, "N": 2}}}]}`
	r, err := Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes != 12288 || r.Blocks != 3 || r.RuntimeNs != 4e6 || r.BytesPerS != 12288/0.004 {
		t.Errorf("Bytes %d, Blocks %d, RuntimeNs %d, BytesPerS %g", r.Bytes, r.Blocks, r.RuntimeNs, r.BytesPerS)
	}
	if r.UserNs != 125e6 || r.SysNs != 500e6 || r.Ctx != 3 || r.MajFlt != 2 {
		t.Errorf("UserNs %d, SysNs %d, Ctx %d, MajFlt %d", r.UserNs, r.SysNs, r.Ctx, r.MajFlt)
	}
	if r.LatP50Ns != 0 || r.LatP9999Ns != 0 || r.LatMaxNs != 900 {
		t.Errorf("latency %d %d %d, want 0 0 900", r.LatP50Ns, r.LatP9999Ns, r.LatMaxNs)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "job_runtime") {
		t.Errorf("Warnings %q: want one about job_runtime", r.Warnings)
	}
	// Nothing read: zero rates, not a division by zero.
	r, err = Parse([]byte(`{"jobs": [{"jobname": "z", "error": 0, "read": {}}]}`))
	if err != nil || r.BytesPerS != 0 || r.IOPS != 0 {
		t.Errorf("empty job: %+v, %v", r, err)
	}
}

func TestParseGarbage(t *testing.T) {
	for _, tt := range []struct{ name, out, want string }{
		{"empty", "", "no JSON object"},
		{"text", "fio: some failure\nand more\n", "no JSON object"},
		{"truncated", "{\n  \"fio version\" : \"fio-3.33\",\n  \"jobs\" : [", "not valid JSON"},
		{"wrong types", `{"jobs": [{"jobname": "a", "read": {"io_bytes": "many"}}]}`, "not valid JSON"},
		{"no jobs", `{"fio version": "fio-3.33", "jobs": []}`, "no jobs"},
		{"not fio", `{"hello": "world"}`, "no jobs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(tt.out))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %+v, %v; want an error containing %q", tt.out, r, err, tt.want)
			}
		})
	}
}

// FuzzParse feeds Parse fio's recorded outputs, changed: it must never
// panic, and a result it returns must hold together.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"jobs": [{"jobname": "w", "write": {"io_bytes": 1e3, "runtime": 1}, "sync": {"lat_ns": {"N": 2, "mean": 3}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			if r != nil {
				t.Errorf("Parse returned a result with its error %v", err)
			}
			return
		}
		if r.RuntimeNs <= 0 && (r.BytesPerS != 0 || r.IOPS != 0) {
			t.Errorf("rates %g, %g without a runtime", r.BytesPerS, r.IOPS)
		}
		if r.SyncCount <= 0 && r.SyncLatMeanNs != 0 {
			t.Errorf("sync mean %d without syncs", r.SyncLatMeanNs)
		}
	})
}
