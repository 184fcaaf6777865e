package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/bench"
)

// cmpResult is a (seq, 128KiB, 1 worker, checksum) result of runs at the
// given GiB/s. Per-run CPU and P99 follow from the throughput as in
// sweepSample: CPU-s/GiB is 0.7 / GiB/s and P99 three blocks' time.
func cmpResult(tool, engine, cache string, gibs ...float64) bench.Result {
	const gib = 1 << 30
	const bs = 128 << 10
	var runs []bench.Run
	for _, g := range gibs {
		b := g * gib
		wall := int64(gib / b * 1e9)
		runs = append(runs, bench.Run{Passes: 1, Bytes: gib, Blocks: gib / bs, WallNs: wall, BytesPerS: b,
			UserNs: wall / 5, SysNs: wall / 2, LatP99Ns: int64(3 * bs / b * 1e9), ChecksumOK: ptr(true)})
	}
	sorted := slices.Sorted(slices.Values(gibs))
	med := sorted[len(sorted)/2]
	return bench.Result{Tool: tool, Engine: engine, Cache: cache, Pattern: "seq", BS: bs, Workers: 1,
		Consume: "checksum", Runs: runs, BytesPerS: med * gib, BytesPerSMin: sorted[0] * gib,
		BytesPerSMax: sorted[len(sorted)-1] * gib, CPUSPerGiB: 0.7 / med, LatP99Ns: int64(3 * bs / (med * gib) * 1e9),
		ChecksumOK: ptr(true)}
}

func cmpFailed(engine, cache, err string) bench.Result {
	r := cmpResult("iopath", engine, cache, 1)
	r.Runs[0].Error = err
	r.Error = err
	r.BytesPerS, r.BytesPerSMin, r.BytesPerSMax, r.CPUSPerGiB, r.LatP99Ns = 0, 0, 0, 0, 0
	return r
}

func cmpRand(r bench.Result) bench.Result {
	r.Pattern, r.BS, r.Workers, r.QD = "rand", 4096, 4, 32
	return r
}

// compareReports builds an old and a new report (on sample()'s machine and
// file) that cover every case: faster and slower beyond the spread, a
// change within it, a CPU change while GiB/s is noise, a single run,
// added and removed rows, errors on either side, a fio row, noisy runs,
// and a different kernel, core count and iopath version.
func compareReports() (old, new *bench.Report) {
	old, new = sample(), sample()
	old.Results = []bench.Result{
		cmpResult("iopath", "pread", "warm", 7.80, 7.91, 8.02),
		cmpResult("iopath", "mmap", "warm", 10.90, 11.43, 11.61),
		cmpFailed("io_uring", "warm", "io_uring_setup: operation not permitted\n(kernel.io_uring_disabled=2)"),
		cmpResult("iopath", "null", "warm", 49.9, 51.2, 52.3),
		cmpResult("fio", "psync", "warm", 7.50, 7.60, 7.70),
		cmpResult("iopath", "pread", "cold", 1.48, 1.52, 1.55),
		cmpResult("iopath", "mmap", "cold", 1.02, 1.21, 1.30),
		cmpResult("iopath", "readv", "cold", 1.40, 1.45, 1.50),
		cmpRand(cmpResult("iopath", "readv", "warm", 8.40)),
	}
	old.Results[4].Twin = "pread"

	mmapCold := cmpResult("iopath", "mmap", "cold", 1.05, 1.20, 1.28)
	for i := range mmapCold.Runs {
		mmapCold.Runs[i].UserNs *= 3 // more CPU for the same throughput
	}
	mmapCold.CPUSPerGiB = 1.1 / 1.20
	mmapWarm := cmpResult("iopath", "mmap", "warm", 11.00, 11.50, 11.70)
	mmapWarm.Runs[2].Noisy = "another process used 38% of a core"
	mmapWarm.Runs[2].OtherCPUPct = 37.5
	mmapWarm.NoisyRuns = 1
	new.Results = []bench.Result{
		cmpResult("iopath", "pread", "warm", 8.90, 9.00, 9.10),
		mmapWarm,
		cmpResult("iopath", "io_uring", "warm", 9.50, 9.80, 10.00),
		cmpResult("fio", "psync", "warm", 7.55, 7.62, 7.68),
		cmpResult("iopath", "pread", "cold", 1.30, 1.33, 1.35),
		mmapCold,
		cmpFailed("readv", "cold", "child process failed: signal: killed"),
		cmpResult("iopath", "io_uring", "cold", 2.00, 2.10, 2.20),
		cmpRand(cmpResult("iopath", "readv", "warm", 8.90, 9.00, 9.20)),
	}
	new.Results[3].Twin = "pread"
	new.Started = new.Started.Add(26 * time.Hour)
	new.Machine.Kernel = "6.19.2"
	new.Machine.Cores = 4
	new.Machine.IopathVersion = "v0.3.0"
	return old, new
}

func cmpFindRow(t *testing.T, c *Comparison, tool, engine, cache string) *CompareRow {
	t.Helper()
	for i := range c.Rows {
		r := &c.Rows[i]
		if r.Tool == tool && r.Engine == engine && r.Cache == cache {
			return r
		}
	}
	t.Fatalf("no row %s %s %s", tool, engine, cache)
	return nil
}

func TestCompareVerdicts(t *testing.T) {
	c := Compare(compareReports())
	for _, tc := range []struct {
		tool, engine, cache string
		status              CompareStatus
		gibs, cpu, p99      Verdict
	}{
		{"iopath", "pread", "warm", StatusMatched, VerdictFaster, VerdictBetter, VerdictBetter},
		{"iopath", "mmap", "warm", StatusMatched, VerdictNoise, VerdictNoise, VerdictNoise},
		{"fio", "psync", "warm", StatusMatched, VerdictNoise, VerdictNoise, VerdictNoise},
		{"iopath", "pread", "cold", StatusMatched, VerdictSlower, VerdictWorse, VerdictWorse},
		{"iopath", "mmap", "cold", StatusMatched, VerdictNoise, VerdictWorse, VerdictNoise},
		{"iopath", "readv", "warm", StatusMatched, VerdictUnknown, VerdictUnknown, VerdictUnknown},
		{"iopath", "io_uring", "warm", StatusError, "", "", ""},
		{"iopath", "readv", "cold", StatusError, "", "", ""},
		{"iopath", "io_uring", "cold", StatusAdded, "", "", ""},
		{"iopath", "null", "warm", StatusRemoved, "", "", ""},
	} {
		r := cmpFindRow(t, c, tc.tool, tc.engine, tc.cache)
		if r.Status != tc.status {
			t.Errorf("%s %s: status %q, want %q", tc.engine, tc.cache, r.Status, tc.status)
			continue
		}
		if tc.status != StatusMatched {
			if r.Throughput != nil || r.CPU != nil || r.P99 != nil {
				t.Errorf("%s %s (%s): has deltas", tc.engine, tc.cache, r.Status)
			}
			continue
		}
		for _, m := range []struct {
			name string
			d    *Delta
			want Verdict
		}{{"GiB/s", r.Throughput, tc.gibs}, {"CPU", r.CPU, tc.cpu}, {"P99", r.P99, tc.p99}} {
			if m.d.Verdict != m.want {
				t.Errorf("%s %s %s: verdict %q (Δ %.2f%%, spread %.2f%%), want %q",
					tc.engine, tc.cache, m.name, m.d.Verdict, m.d.Pct, m.d.SpreadPct, m.want)
			}
		}
	}
	want := CompareSummary{Faster: 1, Slower: 1, Noise: 3, Unknown: 1, Added: 1, Removed: 1, Failed: 2}
	if c.Summary != want {
		t.Errorf("summary %+v, want %+v", c.Summary, want)
	}
	if got := c.Summary.String(); got != "1 faster, 1 slower, 3 within noise, 1 spread unknown (1 run), 1 added, 1 removed, 2 failed" {
		t.Errorf("summary line %q", got)
	}

	pw := cmpFindRow(t, c, "iopath", "pread", "warm")
	if d := pw.Throughput; math.Abs(d.Pct-(9.0/7.91-1)*100) > 1e-9 || d.Old != 7.91*(1<<30) || d.New != 9.0*(1<<30) {
		t.Errorf("pread warm: delta %+v", d)
	}
	if d := pw.Throughput; math.Abs(d.Spread-0.22*(1<<30)) > 1 {
		t.Errorf("pread warm: spread %v, want max(8.02-7.80, 9.10-8.90) GiB/s", d.Spread)
	}
}

func TestCompareErrorRows(t *testing.T) {
	c := Compare(compareReports())
	if r := cmpFindRow(t, c, "iopath", "io_uring", "warm"); r.Error != "old: io_uring_setup: operation not permitted (kernel.io_uring_disabled=2)" {
		t.Errorf("io_uring warm: error %q", r.Error)
	}
	if r := cmpFindRow(t, c, "iopath", "readv", "cold"); r.Error != "new: child process failed: signal: killed" {
		t.Errorf("readv cold: error %q", r.Error)
	}
	old, new := compareReports()
	old.Results[7] = cmpFailed("readv", "cold", "boom")
	c = Compare(old, new)
	if r := cmpFindRow(t, c, "iopath", "readv", "cold"); r.Error != "old: boom; new: child process failed: signal: killed" {
		t.Errorf("both failed: error %q", r.Error)
	}
	old.Results[7] = cmpFailed("readv", "cold", "child process failed: signal: killed")
	c = Compare(old, new)
	if r := cmpFindRow(t, c, "iopath", "readv", "cold"); r.Error != "old and new: child process failed: signal: killed" {
		t.Errorf("same error: %q", r.Error)
	}
}

// TestCompareNoiseRule checks the rule's edge: a change as large as the
// spread is significant, a smaller one is noise, no change is noise.
func TestCompareNoiseRule(t *testing.T) {
	for _, tc := range []struct {
		old, new []float64
		want     Verdict
	}{
		{[]float64{9, 10, 11}, []float64{11.5, 12, 12.5}, VerdictFaster},   // 2 = spread 2: significant
		{[]float64{9, 10, 11}, []float64{11.9, 11.99, 12.1}, VerdictNoise}, // 1.99 < 2
		{[]float64{9.5, 10, 10.5}, []float64{9, 12, 13}, VerdictNoise},     // 2 < the new side's spread, 4
		{[]float64{10, 10, 10}, []float64{10, 10, 10}, VerdictNoise},       // no change, no spread
		{[]float64{10, 10, 10}, []float64{9.99, 9.99, 9.99}, VerdictSlower},
		{[]float64{10}, []float64{20, 20, 20}, VerdictUnknown},
		{[]float64{10, 10, 10}, []float64{5}, VerdictUnknown},
	} {
		o := &bench.Report{Results: []bench.Result{cmpResult("iopath", "pread", "warm", tc.old...)}}
		n := &bench.Report{Results: []bench.Result{cmpResult("iopath", "pread", "warm", tc.new...)}}
		d := Compare(o, n).Rows[0].Throughput
		if d.Verdict != tc.want {
			t.Errorf("%v → %v: %q (Δ %.2f%%, spread %.3g), want %q", tc.old, tc.new, d.Verdict, d.Pct, d.Spread/(1<<30), tc.want)
		}
	}
}

func TestCompareSingleRun(t *testing.T) {
	c := Compare(compareReports())
	r := cmpFindRow(t, c, "iopath", "readv", "warm")
	for _, d := range []*Delta{r.Throughput, r.CPU, r.P99} {
		if d.Verdict != VerdictUnknown || d.Why != "1 run: spread unknown" || d.Spread != 0 {
			t.Errorf("single run: %+v", d)
		}
	}
	if r.Throughput.Pct == 0 {
		t.Error("single run: Δ% not computed")
	}
	if rs := slowerRows(c.Regressions(0)); len(rs) != 1 || rs[0].Engine != "pread" || rs[0].Cache != "cold" {
		t.Errorf("Regressions(0) = %v, want only pread cold", rs)
	}

	// A big drop measured with one run is not a regression.
	old, new := compareReports()
	new.Results[8] = cmpRand(cmpResult("iopath", "readv", "warm", 1))
	if rs := slowerRows(Compare(old, new).Regressions(0)); len(rs) != 1 {
		t.Errorf("Regressions(0) = %d rows, want 1 (a single-run drop is not one)", len(rs))
	}
}

func TestCompareRegressions(t *testing.T) {
	c := Compare(compareReports())
	drop := -cmpFindRow(t, c, "iopath", "pread", "cold").Throughput.Pct // 12.5%
	if rs := slowerRows(c.Regressions(drop - 0.1)); len(rs) != 1 {
		t.Errorf("Regressions(%.1f) = %d rows, want 1", drop-0.1, len(rs))
	}
	if rs := slowerRows(c.Regressions(drop)); len(rs) != 0 {
		t.Errorf("Regressions(%.1f) = %d rows, want 0", drop, len(rs))
	}
	// Whatever the threshold, a row that worked and now fails, and a row
	// that was measured and is now missing, are regressions; a row that
	// failed before and works now, or is new, is not.
	got := map[string]bool{}
	for _, r := range c.Regressions(1000) {
		got[r.Engine+" "+r.Cache+" "+string(r.Status)] = true
	}
	want := map[string]bool{}
	for _, r := range c.Rows {
		switch {
		case r.Status == StatusRemoved && r.Old.Error == "":
			want[r.Engine+" "+r.Cache+" "+string(r.Status)] = true
		case r.Status == StatusError && r.Old.Error == "" && r.New.Error != "":
			want[r.Engine+" "+r.Cache+" "+string(r.Status)] = true
		}
	}
	if len(want) < 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("failing and missing rows: got %v, want %v (the fixture must have both)", got, want)
	}
}

// slowerRows keeps the regressions that are throughput drops.
func slowerRows(rs []*CompareRow) []*CompareRow {
	var out []*CompareRow
	for _, r := range rs {
		if r.Throughput != nil {
			out = append(out, r)
		}
	}
	return out
}

func TestCompareDifferences(t *testing.T) {
	c := Compare(compareReports())
	var got []string
	for _, d := range c.Differences {
		got = append(got, d.What+": "+d.Old+" → "+d.New+" "+strconv.FormatBool(d.Machine))
	}
	want := []string{"kernel: 6.18.44 → 6.19.2 true", "cores: 2 → 4 true", "iopath version: devel → v0.3.0 false"}
	if !slices.Equal(got, want) {
		t.Errorf("differences:\n%q\nwant\n%q", got, want)
	}
	if !c.MachineDiffers() {
		t.Error("MachineDiffers() = false")
	}

	same := Compare(sample(), sample())
	if len(same.Differences) != 0 || same.MachineDiffers() {
		t.Errorf("same machine: differences %v", same.Differences)
	}
	var b bytes.Buffer
	if err := CompareTable(&b, same); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, "differ") || !strings.Contains(s, "machine:  Linux 6.18.44") {
		t.Errorf("same machine: header\n%s", s)
	}

	old, new := sample(), sample()
	new.File.SizeBytes = 4 << 30
	new.Machine.CPUModel = "AMD EPYC 7B13"
	c = Compare(old, new)
	b.Reset()
	if err := CompareTable(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"different machines", "CPU model  Intel(R) Xeon(R) Processor → AMD EPYC 7B13", "file size  1GiB → 4GiB"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("header lacks %q:\n%s", want, b.String())
		}
	}

	// Temporary files have made-up names: only their size counts.
	old, new = sample(), sample()
	old.File = bench.FileInfo{Path: "/var/tmp/iopath-bench-1.dat", SizeBytes: 1 << 30, Temporary: true}
	new.File = bench.FileInfo{Path: "/var/tmp/iopath-bench-2.dat", SizeBytes: 1 << 30, Temporary: true}
	c = Compare(old, new)
	b.Reset()
	if err := CompareTable(&b, c); err != nil {
		t.Fatal(err)
	}
	if len(c.Differences) != 0 || !strings.Contains(b.String(), "file:     temporary, made for each report (1GiB)") {
		t.Errorf("temporary files: differences %v, header:\n%s", c.Differences, b.String())
	}

	// A different file size alone is listed, but is not a machine change.
	old, new = sample(), sample()
	new.File.SizeBytes = 4 << 30
	c = Compare(old, new)
	if len(c.Differences) != 1 || c.MachineDiffers() {
		t.Errorf("file size only: %+v", c.Differences)
	}
}

func TestCompareNoisy(t *testing.T) {
	c := Compare(compareReports())
	r := cmpFindRow(t, c, "iopath", "mmap", "warm")
	if r.New.NoisyRuns != 1 || r.Old.NoisyRuns != 0 || !slices.Equal(r.New.Noisy, []string{"another process used 38% of a core"}) {
		t.Errorf("noisy: old %+v new %+v", r.Old, r.New)
	}
	var b bytes.Buffer
	if err := CompareTable(&b, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "mmap warm (seq, bs 128KiB, 1 worker, consume checksum): new: 1 of 3 runs noisy (another process used 38% of a core)") {
		t.Errorf("table does not mention the noisy run:\n%s", b.String())
	}
	if !regexp.MustCompile(`(?m)^mmap +warm .* 3→3 \*$`).MatchString(b.String()) {
		t.Errorf("mmap warm's row is not marked noisy:\n%s", b.String())
	}

	// Noisy runs in the old report, for several reasons.
	old, new := compareReports()
	for i := range old.Results[0].Runs {
		old.Results[0].Runs[i].Noisy = fmt.Sprintf("other processes used %d%% of a core", 50+i)
	}
	b.Reset()
	if err := CompareTable(&b, Compare(old, new)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "pread warm (seq, bs 128KiB, 1 worker, consume checksum): old: 3 of 3 runs noisy (other processes used 50% of a core; 2 more)") {
		t.Errorf("table does not mention the old noisy runs:\n%s", b.String())
	}
}

func TestCompareTableGolden(t *testing.T) {
	c := Compare(compareReports())
	c.Old.Path, c.New.Path = "old.json", "new.json"
	var b bytes.Buffer
	if err := CompareTable(&b, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_table.golden", b.Bytes())
	for _, l := range strings.Split(b.String(), "\n") {
		if n := cmpWidth(l); n > 110 && !strings.HasPrefix(l, "  - ") {
			t.Errorf("line is %d columns wide: %q", n, l)
		}
	}
}

// TestCompareSweep compares the sweep fixture with itself and with a copy
// 10% faster everywhere.
func TestCompareSweep(t *testing.T) {
	c := Compare(smallSweep(), smallSweep())
	n := len(smallSweep().Results)
	if len(c.Rows) != n || c.Summary.Added+c.Summary.Removed != 0 || c.Summary.Faster+c.Summary.Slower != 0 {
		t.Errorf("self-comparison: %d rows (want %d), summary %s", len(c.Rows), n, c.Summary)
	}
	if c.Summary.Failed != 1 || c.Summary.Noise != n-1 {
		t.Errorf("self-comparison: summary %s", c.Summary)
	}

	fast := smallSweep()
	for i := range fast.Results {
		r := &fast.Results[i]
		r.BytesPerS *= 1.1
		r.BytesPerSMin *= 1.1
		r.BytesPerSMax *= 1.1
	}
	c = Compare(smallSweep(), fast)
	if c.Summary.Faster != n-1 {
		t.Errorf("10%% faster: summary %s", c.Summary)
	}
	var b bytes.Buffer
	if err := CompareTable(&b, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "-- seq, bs 4KiB, 1 worker, qd 32, consume none") ||
		!strings.Contains(b.String(), "psync (fio)") {
		t.Errorf("sweep table:\n%s", b.String())
	}
}

func TestCompareEdgeCases(t *testing.T) {
	// Nil and empty reports.
	for _, c := range []*Comparison{Compare(nil, nil), Compare(&bench.Report{}, nil)} {
		var b bytes.Buffer
		if err := CompareTable(&b, c); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "no results in either report") || !strings.Contains(b.String(), "0 faster, 0 slower, 0 within noise") {
			t.Errorf("empty:\n%s", b.String())
		}
		b.Reset()
		if err := CompareHTML(&b, c); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `data-series="0"`) {
			t.Errorf("empty HTML lacks data-series=\"0\"")
		}
	}

	// An empty tool is iopath's; the same key twice is paired in order.
	old, new := sample(), sample()
	for i := range new.Results {
		new.Results[i].Tool = "iopath"
	}
	old.Results = append(old.Results, old.Results[0])
	new.Results = append(new.Results, new.Results[0])
	c := Compare(old, new)
	if c.Summary.Added+c.Summary.Removed != 0 || len(c.Rows) != len(old.Results) {
		t.Errorf("tool \"\" vs iopath, duplicate keys: %d rows, summary %s", len(c.Rows), c.Summary)
	}

	// Unmeasured latency (--no-latency) is n/a, not a change.
	old, new = compareReports()
	for i := range new.Results {
		new.Results[i].LatP99Ns = 0
	}
	r := cmpFindRow(t, Compare(old, new), "iopath", "pread", "warm")
	if r.P99.Verdict != VerdictNA || r.P99.Why != "not measured in the new report" || r.P99.Pct != 0 {
		t.Errorf("unmeasured P99: %+v", r.P99)
	}
}

func TestCompareJSON(t *testing.T) {
	old, new := compareReports()
	new.Results[0].CPUSPerGiB = math.NaN()
	new.Results[1].BytesPerSMax = math.Inf(1)
	c := Compare(old, new)
	var b bytes.Buffer
	if err := CompareJSON(&b, c); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b.Bytes()) || !bytes.HasSuffix(b.Bytes(), []byte("}\n")) {
		t.Fatalf("not valid JSON ending with a newline:\n%s", b.Bytes())
	}
	var back Comparison
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != len(c.Rows) || back.Summary != c.Summary || len(back.Differences) != 3 || back.NoiseRule != NoiseRule {
		t.Errorf("round trip: %d rows, summary %+v, differences %v", len(back.Rows), back.Summary, back.Differences)
	}
	for i := range c.Rows {
		g, w := back.Rows[i], c.Rows[i]
		if g.RowKey != w.RowKey || g.Status != w.Status || g.Error != w.Error || (g.Throughput == nil) != (w.Throughput == nil) {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
			continue
		}
		if w.Throughput != nil && finite(w.Throughput.Pct) && (g.Throughput.Verdict != w.Throughput.Verdict || g.Throughput.Pct != w.Throughput.Pct) {
			t.Errorf("row %d: throughput %+v, want %+v", i, g.Throughput, w.Throughput)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	row := raw["rows"].([]any)[0].(map[string]any)
	for _, k := range []string{"tool", "engine", "cache", "bs_bytes", "status", "old", "new", "bytes_per_s", "cpu_s_per_gib", "lat_p99_ns"} {
		if _, ok := row[k]; !ok {
			t.Errorf("JSON row lacks %q: %v", k, row)
		}
	}
	if err := CompareJSON(failWriter{}, c); err == nil {
		t.Error("CompareJSON: no error from a failing writer")
	}
	if err := CompareTable(failWriter{}, c); err == nil {
		t.Error("CompareTable: no error from a failing writer")
	}
	if err := CompareHTML(failWriter{}, c); err == nil {
		t.Error("CompareHTML: no error from a failing writer")
	}
}

func TestCompareHTML(t *testing.T) {
	old, new := compareReports()
	old.File.Path = `/tmp/<script>alert(1)</script>`
	new.File.Path = old.File.Path
	old.Results[0].Engine = `pre<b>ad`
	new.Results[0].Engine = old.Results[0].Engine
	c := Compare(old, new)
	c.Old.Path = `old<script>.json`
	c.New.Path = "new.json"
	var b bytes.Buffer
	if err := CompareHTML(&b, c); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if strings.Contains(s, "<script") || strings.Contains(s, "<b>") {
		t.Error("a path or engine name was not escaped")
	}
	if !strings.Contains(s, "/tmp/&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(s, "old&lt;script&gt;.json") {
		t.Error("the escaped path is missing")
	}
	if !strings.Contains(s, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`) {
		t.Error("no Content-Security-Policy")
	}
	for _, ref := range []string{"http:", "https:", "//", "src=", "href=", "url(", "@import"} {
		if i := strings.Index(s, ref); i >= 0 {
			t.Errorf("external reference %q: ...%s...", ref, s[max(0, i-40):min(len(s), i+40)])
		}
	}
	// One bar per matched row with a throughput delta.
	bars := 0
	for _, r := range c.Rows {
		if r.Throughput != nil && r.Throughput.Verdict != VerdictNA {
			bars++
		}
	}
	if bars != 6 {
		t.Fatalf("%d rows with a delta, want 6", bars)
	}
	m := regexp.MustCompile(`<svg class="chart" data-chart="compare-throughput" data-series="(\d+)"`).FindStringSubmatch(s)
	if m == nil || m[1] != strconv.Itoa(bars) {
		t.Errorf("svg data-series %v, want %d", m, bars)
	}
	if n := strings.Count(s, `<g class="row">`); n != bars {
		t.Errorf("%d bars drawn, want %d", n, bars)
	}
	// Noise rows grey, a band behind every bar whose spread is known.
	if n := strings.Count(s, `<rect class="noise"`); n != 3 {
		t.Errorf("%d grey noise bars, want 3", n)
	}
	if n := strings.Count(s, `<rect class="band"`); n != bars-1 {
		t.Errorf("%d noise bands, want %d", n, bars-1)
	}
	for _, want := range []string{"different machines", "1 faster, 1 slower, 3 within noise", "error (new): child process failed", "another process used 38% of a core", ">added<", ">removed<"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestLoadJSON(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var b bytes.Buffer
	if err := JSON(&b, sample()); err != nil {
		t.Fatal(err)
	}
	good := write("good.json", b.String())
	r, err := LoadJSON(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != len(sample().Results) || r.Machine.Kernel != "6.18.44" {
		t.Errorf("loaded %d results, kernel %q", len(r.Results), r.Machine.Kernel)
	}

	newer := strings.Replace(b.String(), `"schema_version": `+strconv.Itoa(bench.SchemaVersion), `"schema_version": `+strconv.Itoa(bench.SchemaVersion+1), 1)
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing.json"), "missing.json: no such file or directory"},
		{dir, ": is a directory"},
		{write("empty.json", "\n"), "empty.json: empty file"},
		{write("text.json", "hello\n"), "text.json: not JSON"},
		{write("trunc.json", b.String()[:100]), "trunc.json: not JSON"},
		{write("array.json", "[1, 2]"), "array.json: not an iopath report"},
		{write("other.json", `{"name": "x"}`), "other.json: not an iopath report"},
		{write("fio.json", `{"tool": "fio", "schema_version": 1}`), "fio.json: not an iopath report"},
		{write("noversion.json", `{"tool": "iopath"}`), "noversion.json: not an iopath report (no schema_version"},
		{write("badversion.json", `{"tool": "iopath", "schema_version": "one"}`), "badversion.json: not an iopath report (schema_version"},
		{write("newer.json", newer), fmt.Sprintf("newer.json: report schema_version %d is newer than this iopath reads (%d); upgrade iopath", bench.SchemaVersion+1, bench.SchemaVersion)},
		{write("badtype.json", `{"tool": "iopath", "schema_version": 1, "results": 7}`), "badtype.json: not a valid iopath report"},
	} {
		_, err := LoadJSON(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("LoadJSON(%s): %v, want one line starting with the path and containing %q", filepath.Base(tc.path), err, tc.want)
		}
	}
}

// Reports of older schema versions still load: version 2's keys without
// units are renamed (testdata/report.v2.json is sample() as version 2
// wrote it, kept as it was), and a report of version 1, which recorded
// the configured queue depth for every engine and had no tool, still
// matches a current report's rows (qd 0 for engines without a queue).
func TestCompareAcrossSchemaVersions(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var b bytes.Buffer
	if err := JSON(&b, sample()); err != nil {
		t.Fatal(err)
	}
	cur, err := LoadJSON(write("v3.json", b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := LoadJSON(filepath.Join("testdata", "report.v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v2, cur) {
		a, _ := json.Marshal(v2)
		c, _ := json.Marshal(cur)
		t.Errorf("version 2 loads as\n%s\nwant\n%s", a, c)
	}

	data, err := os.ReadFile(filepath.Join("testdata", "report.v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["schema_version"] = 1
	for _, r := range doc["results"].([]any) {
		delete(r.(map[string]any), "tool")
		r.(map[string]any)["qd"] = 32
	}
	v1data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	o, err := LoadJSON(write("v1.json", v1data))
	if err != nil {
		t.Fatal(err)
	}
	if o.SchemaVersion != bench.SchemaVersion || o.Machine.PageSize != 4096 || o.Results[0].BS != 128<<10 {
		t.Errorf("version 1 loads as version %d, page size %d, bs %d", o.SchemaVersion, o.Machine.PageSize, o.Results[0].BS)
	}
	// Version 1's rows match the rows of a current report whose engines
	// without a queue say qd 0.
	now := sample()
	for i := range now.Results {
		now.Results[i].Tool = bench.ToolIopath
		if now.Results[i].Engine != "io_uring" {
			now.Results[i].QD = 0
		} else {
			now.Results[i].QD = 32
		}
	}
	for _, r := range Compare(o, now).Rows {
		if r.Status == StatusAdded || r.Status == StatusRemoved {
			t.Errorf("%s %s: %s across schema versions", r.Engine, r.Cache, r.Status)
		}
	}

	// A current report must say it is one file or a tree.
	for _, kind := range []string{`"net-echo"`, `7`} {
		bad := strings.Replace(b.String(), `"kind": "file"`, `"kind": `+kind, 1)
		if _, err := LoadJSON(write("kind.json", []byte(bad))); err == nil || !strings.Contains(err.Error(), `its "kind" is not "file" or "tree"`) {
			t.Errorf("kind %s: %v", kind, err)
		}
	}
}

func TestCompareNotApplicableIsNotAFailure(t *testing.T) {
	old, cur := sample(), sample()
	for _, r := range []*bench.Report{old, cur} {
		r.Results[0].Error = "not applicable: mmap cannot bypass the page cache"
		r.Results[0].Runs = nil
	}
	c := Compare(old, cur)
	if c.Summary.NotApplicable != 1 || !strings.Contains(c.Summary.String(), "1 not applicable") {
		t.Errorf("summary %+v: %s", c.Summary, c.Summary)
	}
	if rs := c.Regressions(0); len(rs) != 0 {
		t.Errorf("a row that cannot run on either side is not a regression: %v", rs)
	}
}
