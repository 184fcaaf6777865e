package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/netio/netresult"
)

// cmpDoc builds a Doc of two key columns (engine, cache), a headline
// figure where higher is better and one where lower is better.
func cmpDoc(groups ...Group) *Doc {
	return &Doc{Kind: "test", Columns: []Column{
		{Key: "engine", Title: "engine", Left: true},
		{Key: "cache", Title: "cache", Left: true},
		{Key: "gib_per_s", Title: "GiB/s", Unit: "GiB/s", Better: Higher, Prec: 2, Headline: true},
		{Key: "other", Title: "other", Prec: 1},
		{Key: "cpu_s_per_gib", Title: "CPU-s/GiB", Better: Lower, Prec: 3, Headline: true},
	}, Groups: groups}
}

func cmpRow(engine, cache string, gib, cpu []float64) Row {
	return Row{Cells: []Cell{TextCell(engine), TextCell(cache), Runs(gib), Figure(1), Runs(cpu)}}
}

func TestCompareVerdicts(t *testing.T) {
	five := func(v float64) []float64 { return []float64{v, v * 1.01, v * 0.99, v * 1.005, v * 0.995} }
	old := cmpDoc(Group{Title: "seq", Rows: []Row{
		cmpRow("pread", "warm", five(8), five(0.1)),
		cmpRow("mmap", "warm", five(10), five(0.1)),
		cmpRow("readv", "warm", []float64{5, 6, 7}, []float64{0.2, 0.3}),
		cmpRow("null", "warm", []float64{50}, []float64{0.01}),
		cmpRow("gone", "warm", five(1), five(1)),
		{Cells: []Cell{TextCell("io_uring"), TextCell("warm")}, Err: "io_uring_setup: operation not permitted"},
	}})
	newDoc := cmpDoc(Group{Title: "seq", Rows: []Row{
		cmpRow("pread", "warm", five(9), five(0.08)),                             // faster, better: every run beyond
		cmpRow("mmap", "warm", []float64{10.1, 9.9, 10, 10.05, 9.95}, five(0.1)), // overlapping: noise
		cmpRow("readv", "warm", []float64{6.5, 7, 8}, []float64{0.25, 0.26}),     // within 2 GiB/s spread
		cmpRow("null", "warm", []float64{60, 61}, []float64{0.01, 0.01}),         // one run on the old side
		{Cells: []Cell{TextCell("io_uring"), TextCell("warm")}, Err: "io_uring_setup: operation not permitted"},
		cmpRow("new", "warm", five(1), five(1)),
	}})
	c := compare(compared{doc: old, src: CompareSource{Kind: "test"}}, compared{doc: newDoc, src: CompareSource{Kind: "test"}})
	if len(c.Metrics) != 2 || c.Metrics[0].Key != "gib_per_s" || c.Metrics[1].Better != "lower" {
		t.Fatalf("metrics = %+v", c.Metrics)
	}
	want := map[string]struct {
		status   CompareStatus
		gib, cpu Verdict
		test     string
	}{
		"pread warm":    {StatusMatched, VerdictFaster, VerdictBetter, TestMannWhitney},
		"mmap warm":     {StatusMatched, VerdictNoise, VerdictNoise, TestMannWhitney},
		"readv warm":    {StatusMatched, VerdictNoise, VerdictNoise, TestMinMax},
		"null warm":     {StatusMatched, VerdictUnknown, VerdictUnknown, ""},
		"io_uring warm": {StatusError, "", "", ""},
		"new warm":      {StatusAdded, "", "", ""},
		"gone warm":     {StatusRemoved, "", "", ""},
	}
	if len(c.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(c.Rows), len(want))
	}
	for _, r := range c.Rows {
		w, ok := want[r.Name()]
		if !ok {
			t.Errorf("unexpected row %q", r.Name())
			continue
		}
		if r.Status != w.status {
			t.Errorf("%s: status %s, want %s", r.Name(), r.Status, w.status)
		}
		if w.status != StatusMatched {
			if len(r.Deltas) != 0 {
				t.Errorf("%s: deltas on a %s row", r.Name(), r.Status)
			}
			continue
		}
		if g, cp := r.Deltas[0], r.Deltas[1]; g.Verdict != w.gib || cp.Verdict != w.cpu || g.Test != w.test {
			t.Errorf("%s: verdicts %s (%s, p=%.3f) / %s, want %s (%s) / %s", r.Name(), g.Verdict, g.Test, g.P, cp.Verdict, w.gib, w.test, w.cpu)
		}
	}
	if got := c.Rows[len(c.Rows)-1].Name(); got != "gone warm" {
		t.Errorf("removed rows come last; last is %q", got)
	}
	s := c.Summary
	if s.Faster != 1 || s.Noise != 2 || s.Unknown != 1 || s.Added != 1 || s.Removed != 1 || s.Failed != 1 {
		t.Errorf("summary %+v", s)
	}
	// A drop beyond the noise, a row now failing and a removed row are
	// regressions; the rest are not.
	if rs := c.Regressions(0); len(rs) != 1 || rs[0].Name() != "gone warm" {
		t.Errorf("regressions = %v", rs)
	}
}

// TestCompareRegressions: a slower headline beyond the test counts above
// the threshold only; a row that now fails counts; not run does not.
func TestCompareRegressions(t *testing.T) {
	five := func(v float64) []float64 { return []float64{v, v * 1.01, v * 0.99, v * 1.005, v * 0.995} }
	old := cmpDoc(Group{Rows: []Row{
		cmpRow("a", "warm", five(10), five(1)),
		cmpRow("b", "warm", five(10), five(1)),
		cmpRow("c", "warm", five(10), five(1)),
	}})
	nw := cmpDoc(Group{Rows: []Row{
		cmpRow("a", "warm", five(8), five(1)), // -20%
		{Cells: []Cell{TextCell("b"), TextCell("warm")}, Err: "read: input/output error"},
		{Cells: []Cell{TextCell("c"), TextCell("warm")}, Err: "interrupted"},
	}})
	c := compare(compared{doc: old}, compared{doc: nw})
	names := func(rs []*CompareRow) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Name())
		}
		return strings.Join(s, ",")
	}
	if got := names(c.Regressions(5)); got != "a warm,b warm" {
		t.Errorf("Regressions(5) = %s", got)
	}
	if got := names(c.Regressions(25)); got != "b warm" {
		t.Errorf("Regressions(25) = %s", got)
	}
	if c.Summary.Slower != 1 || c.Summary.Failed != 1 || c.Summary.NotRun != 1 {
		t.Errorf("summary %+v", c.Summary)
	}
}

func TestCompareDifferences(t *testing.T) {
	m := features.Machine{Kernel: "6.18", CPUModel: "AMD EPYC", Cores: 2}
	m2 := m
	m2.Cores = 4
	old := CompareSource{Kind: "file", Machine: m, Props: []Field{{"file size", "1GiB"}, {"fio", "3.33"}}}
	nw := CompareSource{Kind: "file", Machine: m2, Props: []Field{{"file size", "2GiB"}}}
	c := compare(compared{doc: cmpDoc(), src: old}, compared{doc: cmpDoc(), src: nw})
	if !c.MachineDiffers() {
		t.Error("cores differ: MachineDiffers() = false")
	}
	var got []string
	for _, d := range c.Differences {
		got = append(got, d.What+":"+d.Old+"→"+d.New)
	}
	if want := "cores:2→4,file size:1GiB→2GiB,fio:3.33→"; strings.Join(got, ",") != want {
		t.Errorf("differences %s, want %s", strings.Join(got, ","), want)
	}
}

// TestCompareFormats: every format renders, the table fits 100 columns and
// the JSON is of kind compare.
func TestCompareFormats(t *testing.T) {
	old := cmpDoc(Group{Title: "seq, bs 128KiB", Rows: []Row{cmpRow("pread", "warm", []float64{8, 8.1}, []float64{0.1, 0.11})}},
		Group{Title: "rand, bs 4KiB", Rows: []Row{cmpRow("pread", "warm", []float64{1}, []float64{0.5})}})
	nw := cmpDoc(Group{Title: "seq, bs 128KiB", Rows: []Row{cmpRow("pread", "warm", []float64{9, 9.1}, []float64{0.1, 0.1})}},
		Group{Title: "rand, bs 4KiB", Rows: []Row{cmpRow("pread", "warm", []float64{1.1}, []float64{0.5})}})
	c := compare(compared{doc: old, src: CompareSource{Path: "old.json"}}, compared{doc: nw, src: CompareSource{Path: "new.json"}})
	for _, f := range KindFormats {
		var b bytes.Buffer
		if err := WriteCompare(&b, f, c, DocOptions{}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out := b.String()
		switch f {
		case "table":
			for _, l := range strings.Split(out, "\n") {
				if width(l) > docWrap {
					t.Errorf("table line of %d columns: %q", width(l), l)
				}
			}
			for _, s := range []string{"old.json", "faster", "? (1 run)", "seq, bs 128KiB", "summary: 1 faster"} {
				if !strings.Contains(out, s) {
					t.Errorf("table lacks %q:\n%s", s, out)
				}
			}
		case "json":
			if !strings.HasPrefix(out, "{\n  \"schema_version\": "+strconv.Itoa(CompareSchemaVersion)+",\n  \"kind\": \"compare\"") {
				t.Errorf("json starts %q", out[:min(len(out), 80)])
			}
		case "markdown":
			if !strings.Contains(out, "| pread |") {
				t.Errorf("markdown lacks the row:\n%s", out)
			}
		}
	}
}

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

// compareBench compares two bench reports as compare does with their
// JSON files.
func compareBench(t *testing.T, old, new *bench.Report) *Comparison {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, r *bench.Report) string {
		var b bytes.Buffer
		if err := JSON(&b, r); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := CompareFiles(write("old.json", old), write("new.json", new))
	if err != nil {
		t.Fatal(err)
	}
	c.Old.Path, c.New.Path = "old.json", "new.json"
	return c
}

func cmpFind(t *testing.T, c *Comparison, name string) *CompareRow {
	t.Helper()
	for i := range c.Rows {
		if c.Rows[i].Name() == name {
			return &c.Rows[i]
		}
	}
	t.Fatalf("no row %q", name)
	return nil
}

// TestCompareBench compares two bench reports through their JSON: the
// verdicts by the min–max rule (3 runs), errors on either side, added and
// removed rows, fio twins and the machine's differences; the table is a
// golden file and fits 100 columns.
func TestCompareBench(t *testing.T) {
	old, cur := compareReports()
	c := compareBench(t, old, cur)
	if c.Kind != "file" || len(c.Metrics) != 2 || c.Metrics[0].Key != "gib_per_s" || c.Metrics[1].Key != "cpu_s_per_gib" {
		t.Fatalf("kind %q metrics %+v", c.Kind, c.Metrics)
	}
	for _, tc := range []struct {
		name    string
		status  CompareStatus
		verdict Verdict
	}{
		{"pread warm", StatusMatched, VerdictFaster},
		{"mmap warm", StatusMatched, VerdictNoise},
		{"fio psync warm", StatusMatched, VerdictNoise},
		{"pread cold", StatusMatched, VerdictSlower},
		{"io_uring warm", StatusError, ""},
		{"readv cold", StatusError, ""},
		{"io_uring cold", StatusAdded, ""},
		{"null warm", StatusRemoved, ""},
		{"readv warm", StatusMatched, VerdictUnknown},
	} {
		r := cmpFind(t, c, tc.name)
		if r.Status != tc.status {
			t.Errorf("%s: %s, want %s", tc.name, r.Status, tc.status)
		}
		if h := r.Headline(); tc.verdict != "" && (h == nil || h.Verdict != tc.verdict) {
			t.Errorf("%s: headline %+v, want %s", tc.name, h, tc.verdict)
		}
	}
	if r := cmpFind(t, c, "mmap cold"); r.Deltas[1].Verdict != VerdictWorse {
		t.Errorf("mmap cold: CPU %+v, want worse", r.Deltas[1])
	}
	if !c.MachineDiffers() {
		t.Error("kernel and cores differ: MachineDiffers() = false")
	}
	var b bytes.Buffer
	if err := WriteCompare(&b, "table", c, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_table.golden", b.Bytes())
	for _, l := range strings.Split(b.String(), "\n") {
		if width(l) > docWrap {
			t.Errorf("line of %d columns: %q", width(l), l)
		}
	}
	b.Reset()
	if err := WriteCompare(&b, "markdown", c, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.golden.md", b.Bytes())
}

// TestCompareBenchTested: with 5 runs a side, the verdict is the
// Mann–Whitney test's.
func TestCompareBenchTested(t *testing.T) {
	old, cur := sample(), sample()
	old.Results = []bench.Result{cmpResult("iopath", "pread", "warm", 7.8, 7.9, 8.0, 8.1, 8.2)}
	cur.Results = []bench.Result{cmpResult("iopath", "pread", "warm", 8.3, 8.4, 8.5, 8.6, 8.7)}
	h := compareBench(t, old, cur).Rows[0].Headline()
	if h.Test != TestMannWhitney || h.Verdict != VerdictFaster || h.P >= stats.Alpha {
		t.Errorf("headline %+v: want faster by the Mann–Whitney test", h)
	}
	// Overlapping runs whose medians differ: the test says noise where the
	// min–max rule would not (the change, 0.2, is within neither spread
	// alone but the samples interleave).
	cur.Results = []bench.Result{cmpResult("iopath", "pread", "warm", 7.7, 8.0, 8.15, 8.3, 8.35)}
	if h := compareBench(t, old, cur).Rows[0].Headline(); h.Verdict != VerdictNoise || h.Test != TestMannWhitney {
		t.Errorf("headline %+v: want noise", h)
	}
}

// compare copes with an interrupted report: rows not run are neither
// failures nor regressions.
func TestCompareInterrupted(t *testing.T) {
	c := compareBench(t, sample(), interruptedSample())
	if c.Summary.NotRun != 2 || c.Summary.Failed != 1 {
		t.Errorf("summary %+v: want 2 not run and only the io_uring failure", c.Summary)
	}
	for _, r := range c.Regressions(0) {
		if strings.HasSuffix(r.Name(), "cold") {
			t.Errorf("a row not run counts as a regression: %+v", r)
		}
	}
	var b bytes.Buffer
	if err := WriteCompare(&b, "table", c, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not run (new): interrupted", "2 not run (interrupted)", "interrupted: incomplete"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("compare table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCompareNotApplicableIsNotAFailure(t *testing.T) {
	old, cur := sample(), sample()
	for _, r := range []*bench.Report{old, cur} {
		r.Results[0].Error = "not applicable: mmap cannot bypass the page cache"
		r.Results[0].Runs = nil
	}
	c := compareBench(t, old, cur)
	if c.Summary.NotApplicable != 1 || !strings.Contains(c.Summary.String(), "1 not applicable") {
		t.Errorf("summary %+v: %s", c.Summary, c.Summary)
	}
	if rs := c.Regressions(0); len(rs) != 0 {
		t.Errorf("a row that cannot run on either side is not a regression: %v", rs)
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
	var nb bytes.Buffer
	if err := JSON(&nb, now); err != nil {
		t.Fatal(err)
	}
	c, err := CompareFiles(write("v1.json", v1data), write("now.json", nb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		if r.Status == StatusAdded || r.Status == StatusRemoved {
			t.Errorf("%s: %s across schema versions", r.Name(), r.Status)
		}
	}

	// A current report must say it is one file, a tree or appends.
	for _, kind := range []string{`"net-echo"`, `7`} {
		bad := strings.Replace(b.String(), `"kind": "file"`, `"kind": `+kind, 1)
		if _, err := LoadJSON(write("kind.json", []byte(bad))); err == nil || !strings.Contains(err.Error(), `its "kind" is not "file", "tree" or "append"`) {
			t.Errorf("kind %s: %v", kind, err)
		}
	}
}

// TestCompareFilesErrors: every way a file can be wrong is one line that
// starts with its path.
func TestCompareFilesErrors(t *testing.T) {
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
	newer := strings.Replace(b.String(), `"schema_version": `+strconv.Itoa(bench.SchemaVersion), `"schema_version": `+strconv.Itoa(bench.SchemaVersion+1), 1)
	var feat bytes.Buffer
	if err := WriteFeatures(&feat, "json", &features.Report{}); err != nil {
		t.Fatal(err)
	}
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
		{write("features.json", feat.String()), "features.json: compare does not read features reports"},
	} {
		_, err := CompareFiles(good, tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("CompareFiles(good, %s): %v, want one line starting with the path and containing %q", filepath.Base(tc.path), err, tc.want)
		}
	}
	var tree bytes.Buffer
	if err := JSON(&tree, treeSample()); err != nil {
		t.Fatal(err)
	}
	if _, err := CompareFiles(good, write("tree.json", tree.String())); err == nil || !strings.Contains(err.Error(), "is a file report and") {
		t.Errorf("a file and a tree report: %v", err)
	}
}

// TestCompareNet: two echo reports compare on QPS, P99 and server CPU per
// request, point by point.
func TestCompareNet(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r *netresult.Report) string {
		var b bytes.Buffer
		if err := NetJSON(&b, r); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old, cur := netSample(), netSample()
	cur.Config.ServerProcs = map[string]int{}
	for _, e := range cur.Config.Engines {
		cur.Config.ServerProcs[e] = 2
	}
	for i := range cur.Points {
		p := &cur.Points[i]
		if p.Engine != "epoll" || p.Size != 64 {
			continue
		}
		p.QPS *= 1.5
		for j := range p.Runs {
			p.Runs[j].QPS *= 1.5
		}
	}
	c, err := CompareFiles(write("old.json", old), write("new.json", cur))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != "net-echo" {
		t.Errorf("kind %q", c.Kind)
	}
	// The old report predates the servers' recorded GOMAXPROCS.
	if len(c.Differences) != 1 || c.Differences[0].What != "server GOMAXPROCS" || c.Differences[0].Old != "" || c.Differences[0].New != "2" {
		t.Errorf("differences %+v, want the servers' GOMAXPROCS only", c.Differences)
	}
	var keys []string
	for _, m := range c.Metrics {
		keys = append(keys, m.Key)
	}
	if got := strings.Join(keys, ","); got != "qps,p99_us,server_cpu_us_per_req" {
		t.Errorf("metrics %s", got)
	}
	var faster []string
	for _, r := range c.Rows {
		if h := r.Headline(); h != nil && h.Verdict == VerdictFaster {
			faster = append(faster, r.Name()+" @ "+r.Group)
		}
		if r.Status == StatusAdded || r.Status == StatusRemoved {
			t.Errorf("%s (%s): %s comparing a report with its copy", r.Name(), r.Group, r.Status)
		}
	}
	if len(faster) != 1 || !strings.HasPrefix(faster[0], "epoll @ ") || !strings.Contains(faster[0], "64B") {
		t.Errorf("faster rows %q, want epoll at 64 B only", faster)
	}
	var b bytes.Buffer
	if err := WriteCompare(&b, "table", c, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if width(l) > docWrap && !strings.HasPrefix(l, "command") {
			t.Errorf("line of %d columns: %q", width(l), l)
		}
	}
}

// fileServeRounds is a file-serving report of five rounds, every method
// at 4 KiB and 1 MiB, each round's figures a little apart, reduced by
// netresult.FileServeMedians as netbench.FileServe does. faster scales the
// GB/s of sendfile at 1 MiB in every round.
func fileServeRounds(faster float64) *netresult.FileServeReport {
	jitter := []float64{0.97, 1.01, 1.0, 1.03, 0.99}
	var rs []netresult.FileServe
	for round, j := range jitter {
		for _, size := range []int64{4096, 1 << 20} {
			for i, m := range netresult.FileServeMethods() {
				gbps := (1 + float64(i)/4) * j * 0.2
				if size == 1<<20 {
					gbps *= 10
				}
				if m == netresult.Sendfile && size == 1<<20 {
					gbps *= faster
				}
				rs = append(rs, netresult.FileServe{Method: m, FileSize: size, Conns: 1, Runs: 1, Responses: 100,
					Bytes: 100 * size, Elapsed: time.Second, GBps: gbps, CPUSecPerGB: (0.5 + float64(i+round%2)/10) * j,
					SyscallsPerMB: 3, SyscallsPerResp: 2, Verified: true})
			}
		}
	}
	return fileServeReport(netresult.FileServeMedians(rs))
}

// writevRounds is a writev report of five rounds; better scales the CPU
// per response of coalesced at k=16 in every round.
func writevRounds(better float64) *netresult.WritevReport {
	jitter := []float64{0.97, 1.01, 1.0, 1.03, 0.99}
	var rs []netresult.Writev
	for _, j := range jitter {
		for _, k := range []int{1, 16} {
			for i, w := range netresult.WritevWays() {
				cpu := float64(500+100*i) * float64(k) * j
				if w == netresult.Coalesced && k == 16 {
					cpu *= better
				}
				rs = append(rs, netresult.Writev{Way: w, K: k, RespBytes: 500 * k, Runs: 1, Responses: 20000,
					NsPerResp: 2 * cpu, SyscallsPerResp: 1, CPUNsPerResp: cpu, Verified: true})
			}
		}
	}
	return writevReport(netresult.WritevMedians(rs))
}

// writeSideJSON writes a report with write into dir/name.
func writeSideJSON(t *testing.T, dir, name string, write func(io.Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cmpVerdicts returns each matched row's headline verdict with its test,
// as "name @ group: verdict (test)", and fails on a row added, removed or
// in error.
func cmpVerdicts(t *testing.T, c *Comparison) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range c.Rows {
		if r.Status != StatusMatched {
			t.Errorf("%s (%s): %s", r.Name(), r.Group, r.Status)
			continue
		}
		for _, d := range r.Deltas {
			out[r.Name()+" @ "+r.Group+" "+d.Metric] = fmt.Sprintf("%s (%s)", d.Verdict, d.Test)
		}
	}
	return out
}

// TestCompareFileServe: a file-serving report compared with itself is
// noise everywhere; with a copy where sendfile at 1 MiB served faster in
// every one of its 5 rounds, that row alone is faster by Mann–Whitney.
func TestCompareFileServe(t *testing.T) {
	dir := t.TempDir()
	old := writeSideJSON(t, dir, "old.json", func(w io.Writer) error { return FileServeJSON(w, fileServeRounds(1)) })
	same := writeSideJSON(t, dir, "same.json", func(w io.Writer) error { return FileServeJSON(w, fileServeRounds(1)) })
	fast := writeSideJSON(t, dir, "fast.json", func(w io.Writer) error { return FileServeJSON(w, fileServeRounds(1.3)) })

	c, err := CompareFiles(old, same)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != "file-serve" || len(c.Metrics) != 2 || c.Metrics[0].Key != "gb_per_s" || c.Metrics[1].Key != "server_cpu_s_per_gb" {
		t.Fatalf("kind %q, metrics %+v", c.Kind, c.Metrics)
	}
	verdicts := cmpVerdicts(t, c)
	if len(verdicts) != 2*2*len(netresult.FileServeMethods()) {
		t.Errorf("%d deltas, want one per metric, size and method: %v", len(verdicts), verdicts)
	}
	for k, v := range verdicts {
		if v != "noise (mann-whitney)" {
			t.Errorf("%s: %s comparing a report with its copy", k, v)
		}
	}
	if len(c.Differences) != 0 {
		t.Errorf("differences between a report and its copy: %+v", c.Differences)
	}

	c, err = CompareFiles(old, fast)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range cmpVerdicts(t, c) {
		want := "noise (mann-whitney)"
		if k == "sendfile @ 1MiB file gb_per_s" {
			want = "faster (mann-whitney)"
		}
		if v != want {
			t.Errorf("%s: %s, want %s", k, v, want)
		}
	}
	// Every format renders it; the table fits 100 columns.
	c.Old.Path, c.New.Path = "old.json", "fast.json"
	for _, f := range KindFormats {
		var b bytes.Buffer
		if err := WriteCompare(&b, f, c, DocOptions{}); err != nil || !strings.Contains(b.String(), "sendfile") {
			t.Errorf("%s: %v\n%s", f, err, b.String())
		}
		if f == "table" {
			for _, l := range strings.Split(b.String(), "\n") {
				if width(l) > docWrap && !strings.HasPrefix(l, "command") {
					t.Errorf("table line of %d columns: %q", width(l), l)
				}
			}
		}
	}
	var b bytes.Buffer
	if err := CompareHTML(&b, c); err != nil || !strings.Contains(b.String(), "<svg") {
		t.Errorf("html: %v", err)
	}
}

// TestCompareWritev: the same for writev, whose headline is the CPU per
// response: coalesced at k=16 using less in every round is better.
func TestCompareWritev(t *testing.T) {
	dir := t.TempDir()
	old := writeSideJSON(t, dir, "old.json", func(w io.Writer) error { return WritevJSON(w, writevRounds(1)) })
	same := writeSideJSON(t, dir, "same.json", func(w io.Writer) error { return WritevJSON(w, writevRounds(1)) })
	less := writeSideJSON(t, dir, "less.json", func(w io.Writer) error { return WritevJSON(w, writevRounds(0.7)) })

	c, err := CompareFiles(old, same)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != "writev" || len(c.Metrics) != 1 || c.Metrics[0].Key != "cpu_ns_per_response" {
		t.Fatalf("kind %q, metrics %+v", c.Kind, c.Metrics)
	}
	verdicts := cmpVerdicts(t, c)
	if len(verdicts) != 2*len(netresult.WritevWays()) {
		t.Errorf("%d deltas, want one per part count and way: %v", len(verdicts), verdicts)
	}
	for k, v := range verdicts {
		if v != "noise (mann-whitney)" {
			t.Errorf("%s: %s comparing a report with its copy", k, v)
		}
	}
	c, err = CompareFiles(old, less)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range cmpVerdicts(t, c) {
		want := "noise (mann-whitney)"
		if k == "coalesced @ k=16, 8000 B per response cpu_ns_per_response" {
			want = "better (mann-whitney)"
		}
		if v != want {
			t.Errorf("%s: %s, want %s", k, v, want)
		}
	}
}

// TestCompareSideVersions: a version 1 report (medians and extremes, no
// runs) still compares, each figure "?" (one run's worth of evidence) or
// an error row; a report newer than this iopath reads, another kind's or
// a broken one is refused in one line naming the path; the props that
// differ are listed.
func TestCompareSideVersions(t *testing.T) {
	for _, kind := range []string{"file-serve", "writev"} {
		v1 := filepath.Join("testdata", kind+".v1.json")
		c, err := CompareFiles(v1, v1)
		if err != nil {
			t.Fatal(err)
		}
		if c.Old.SchemaVersion != 1 {
			t.Errorf("%s: schema_version %d, want 1", kind, c.Old.SchemaVersion)
		}
		for _, r := range c.Rows {
			switch {
			case r.Status == StatusError:
			case r.Status != StatusMatched:
				t.Errorf("%s: %s (%s): %s", kind, r.Name(), r.Group, r.Status)
			default:
				for _, d := range r.Deltas {
					if d.Verdict != VerdictUnknown {
						t.Errorf("%s: %s (%s) %s: %s from a version 1 report", kind, r.Name(), r.Group, d.Metric, d.Verdict)
					}
				}
			}
		}
		data, err := os.ReadFile(v1)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for _, tc := range []struct{ name, old, new, want string }{
			{"newer", `"schema_version": 1`, `"schema_version": 3`, "report schema_version 3 is newer than this iopath reads (2); upgrade iopath"},
			{"zero", `"schema_version": 1`, `"schema_version": 0`, "schema_version 0 is not a positive whole number"},
			{"broken", `"results": [`, `"results": 7, "x": [`, "not a valid iopath " + kind + " report"},
		} {
			p := filepath.Join(dir, tc.name+".json")
			if err := os.WriteFile(p, []byte(strings.Replace(string(data), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := CompareFiles(v1, p)
			if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s %s: %v, want one line starting with the path and containing %q", kind, tc.name, err, tc.want)
			}
		}
	}
	if _, err := CompareFiles(filepath.Join("testdata", "file-serve.v1.json"), filepath.Join("testdata", "writev.v1.json")); err == nil ||
		!strings.Contains(err.Error(), "is a file-serve report and") {
		t.Errorf("a file-serve and a writev report: %v", err)
	}
	dir := t.TempDir()
	small := fileServeRounds(1)
	small.Results = slices.DeleteFunc(small.Results, func(r netresult.FileServe) bool { return r.FileSize > 4096 })
	small.Config.DurationNs = int64(2 * time.Second)
	c, err := CompareFiles(writeSideJSON(t, dir, "a.json", func(w io.Writer) error { return FileServeJSON(w, fileServeRounds(1)) }),
		writeSideJSON(t, dir, "b.json", func(w io.Writer) error { return FileServeJSON(w, small) }))
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for _, d := range c.Differences {
		diffs = append(diffs, d.What+": "+d.Old+" -> "+d.New)
	}
	if want := []string{"file sizes: 4KiB, 1MiB -> 4KiB", "duration: 1s -> 2s"}; !slices.Equal(diffs, want) {
		t.Errorf("differences %q, want %q", diffs, want)
	}
}

// TestCompareReadsWithWrites: a report of reads against one of writes of
// the same file shares no row, and the header says why.
func TestCompareReadsWithWrites(t *testing.T) {
	old, new := sample(), sample()
	old.Results = []bench.Result{cmpResult("iopath", "pread", "warm", 7.9)}
	w := cmpResult("iopath", "pwrite", "warm", 2.1)
	w.Pattern, w.Sync, w.Consume = "write", "none", ""
	new.Results = []bench.Result{w}
	c := compareBench(t, old, new)
	var got []string
	for _, d := range c.Differences {
		got = append(got, d.What+":"+d.Old+"→"+d.New)
	}
	if !slices.Contains(got, "access:reads→writes") {
		t.Errorf("differences %q, want access:reads→writes", got)
	}
	if c2 := compareBench(t, new, new); len(c2.Differences) != 0 {
		t.Errorf("a report against itself: %+v", c2.Differences)
	}
}
