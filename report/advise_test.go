package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/advise"
	"github.com/iopath/iopath/perf"
)

// adviseMeasure is a measured candidate of three rounds at rate±5%
// (files/s for many files, bytes/s for one), with the medians advise
// computes from them.
func adviseMeasure(kind advise.Kind, engine string, workers int, c advise.Cache, rate, base float64) advise.Measurement {
	cand := advise.Candidate{Engine: engine, Workers: workers}
	m := advise.Measurement{Candidate: cand, Label: cand.Label(), Cache: c, Baseline: rate == base}
	for _, f := range []float64{0.95, 1, 1.05} {
		rd := advise.Round{Passes: 1, Seconds: 1, Files: int64(rate * f), Bytes: int64(rate*f) * 4096, CPU: 0.1 * f}
		if kind == advise.OneFile {
			rd.Files, rd.Bytes = 1, int64(rate*f)
		}
		m.Rounds = append(m.Rounds, rd)
	}
	m.Rate, m.RateMin, m.RateMax, m.Ratio = rate, rate*0.95, rate*1.05, rate/base
	if kind == advise.ManyFiles {
		m.FilesPerS, m.BytesPerS, m.CPUPer1kFiles = rate, rate*4096, 0.1/rate*1000
	} else {
		m.BytesPerS, m.CPUPerGiB = rate, 0.1/(rate/(1<<30))
	}
	return m
}

// adviseFixture is a many-files result: three candidates warm and cold,
// io_uring left out in both states for one reason, and a cold phase that
// did not hold (the data stayed cached).
func adviseFixture() *advise.Result {
	k := advise.ManyFiles
	skip := func(c advise.Cache) advise.Measurement {
		return advise.Measurement{Candidate: advise.Candidate{Engine: "io_uring", Workers: 1}, Label: "io_uring", Cache: c,
			Skipped: "io_uring is not supported: disabled by kernel.io_uring_disabled", Rounds: []advise.Round{}}
	}
	return &advise.Result{
		SchemaVersion: advise.SchemaVersion,
		Inventory: advise.Inventory{Paths: []string{"/srv/assets"}, Kind: k, Files: 100_000, Bytes: 100_000 << 12,
			Median: 4096, P90: 4096, Max: 4096},
		Residency: 1, CacheNow: advise.Warm, RateUnit: "files/s", GOMAXPROCS: 2, Budget: 20, Elapsed: 19.6,
		Sample: advise.Sample{Files: 20_000, Bytes: 20_000 << 12},
		Phases: []advise.Phase{{Cache: advise.Warm, Rounds: 3, Valid: true}, {Cache: advise.Cold, Rounds: 3, Valid: false,
			Notes: []string{"the data stayed cached"}}},
		Measurements: []advise.Measurement{
			adviseMeasure(k, "readfile", 1, advise.Warm, 138_000, 138_000),
			adviseMeasure(k, "raw", 2, advise.Warm, 481_000, 138_000),
			skip(advise.Warm),
			adviseMeasure(k, "readfile", 1, advise.Cold, 10_000, 10_000),
			adviseMeasure(k, "raw", 2, advise.Cold, 21_000, 10_000),
			skip(advise.Cold),
		},
		Recommendation: advise.Recommendation{Candidate: advise.Candidate{Engine: "raw", Workers: 2},
			Text: "use `raw` with 2 workers: 3.5× os.ReadFile on your 100,000 files (median 4 KiB), cached now."},
		Snippet: "err := iopath.ReadFiles(ctx, paths, func(path string, data []byte, err error) error {\n\treturn err\n}, iopath.WithEngine(\"raw\"))\n",
		Notes:   []string{"cold: the data stayed cached after the drops"},
	}
}

// adviseOneFile is a one-file result of a small file: its rates in MiB/s.
func adviseOneFile() *advise.Result {
	k := advise.OneFile
	return &advise.Result{
		SchemaVersion: advise.SchemaVersion,
		Inventory:     advise.Inventory{Paths: []string{"/data/index.bin"}, Kind: k, Files: 1, Bytes: 3 << 20, Median: 3 << 20, P90: 3 << 20, Max: 3 << 20},
		Residency:     -1, CacheNow: advise.Warm, RateUnit: "bytes/s", Budget: 5, Elapsed: 4.2,
		Sample: advise.Sample{Files: 1, Bytes: 3 << 20},
		Phases: []advise.Phase{{Cache: advise.Warm, Rounds: 3, Valid: true}, {Cache: advise.Cold, Skipped: "out of budget"}},
		Measurements: []advise.Measurement{
			adviseMeasure(k, "read", 1, advise.Warm, 900<<20, 900<<20),
			adviseMeasure(k, "mmap", 1, advise.Warm, 700<<20, 900<<20),
			{Candidate: advise.Candidate{Engine: "read", Workers: 1}, Label: "read", Cache: advise.Cold, Baseline: true,
				Skipped: "the budget left too little time"},
		},
		Recommendation: advise.Recommendation{Candidate: advise.Candidate{Engine: "read", Workers: 1}, Text: "use `read`: plain read is as fast as any."},
		Snippet:        "data, err := iopath.ReadFile(path)\n",
	}
}

func TestAdviseGolden(t *testing.T) {
	for _, f := range DocFormats {
		var b bytes.Buffer
		if err := WriteAdvise(&b, f, adviseFixture(), DocOptions{}); err != nil {
			t.Fatal(err)
		}
		golden(t, "advise."+f+".golden", b.Bytes())
		checkWidth(t, "advise."+f+".golden", b.String(), false)
	}
	var b bytes.Buffer
	if err := WriteAdvise(&b, "table", adviseOneFile(), DocOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "advise_file.table.golden", b.Bytes())
}

func TestAdviseDoc(t *testing.T) {
	d := AdviseDoc(adviseFixture())
	row := func(engine, cache string) Row {
		t.Helper()
		for _, r := range d.Groups[0].Rows {
			if r.Cells[0].Text == engine && (len(r.Cells) < 2 || r.Cells[1].Text == cache) {
				return r
			}
		}
		t.Fatalf("no row %s %s", engine, cache)
		return Row{}
	}
	// The rate carries its rounds, for compare's test.
	if c := row("raw ×2", "warm").Cells[2]; c.Value != 481_000 || len(c.Runs) != 3 || c.Min != 456_950 {
		t.Errorf("raw ×2 warm files/s %+v", c)
	}
	if c := row("readfile (baseline)", "warm").Cells[4]; c.Value != 1 {
		t.Errorf("baseline ratio %v", c.Value)
	}
	// The cold phase did not hold: its rows are marked, and a note says why.
	if row("raw ×2", "cold*").Cells[1].Text != "cold*" || !slices.Contains(d.Notes, "cold*: not used for the advice: the data was not cold (see the notes)") {
		t.Errorf("an invalid phase is not marked: notes %q", d.Notes)
	}
	// io_uring, left out of both states for one reason, is listed once,
	// after the measured rows.
	rows := d.Groups[0].Rows
	if last := rows[len(rows)-1]; last.Cells[0].Text != "io_uring" || !strings.HasPrefix(last.Err, "not measured: io_uring is not supported") ||
		slices.IndexFunc(rows, func(r Row) bool { return r.Err != "" }) != len(rows)-1 {
		t.Errorf("rows %+v", rows)
	}
	if len(d.After) != 1 || !strings.Contains(d.After[0], "use `raw` with 2 workers") || !strings.Contains(d.After[0], "\terr := iopath.ReadFiles") {
		t.Errorf("after %q", d.After)
	}
	if d.Columns[4].Title != "× os.ReadFile" {
		t.Errorf("ratio column %q", d.Columns[4].Title)
	}
	// One small file: rates in MiB/s, not 0.00 GiB/s.
	d = AdviseDoc(adviseOneFile())
	if c := d.Columns[2]; c.Key != "mib_per_s" || d.Columns[3].Title != "× plain read" {
		t.Errorf("columns %+v", d.Columns)
	}
	if c := d.Groups[0].Rows[1].Cells[2]; math.Abs(c.Value-700) > 1e-9 {
		t.Errorf("mmap MiB/s %v", c.Value)
	}
	// Left out in one state: the row says which.
	if r := d.Groups[0].Rows[2]; r.Cells[1].Text != "cold" || r.Err != "not measured cold: the budget left too little time" {
		t.Errorf("row %+v", r)
	}
}

// adviseRecorded is adviseFixture recorded with perf (advise --perf): a
// breakdown per measured row, with no network share anywhere.
func adviseRecorded() *advise.Result {
	r := adviseFixture()
	for i := range r.Measurements {
		m := &r.Measurements[i]
		if !m.Measured() {
			continue
		}
		b := &perf.Breakdown{Samples: 1200 + int64(i), CPUNs: (1200 + int64(i)) * 250_000,
			User: 0.25, GoRuntime: 0.05, Syscall: 0.04, Copy: 0.4, Fault: 0, IOUring: 0, Kernel: 0.26}
		if m.Cache == advise.Cold {
			b.Fault, b.Kernel = 0.01, 0.25
		}
		m.Perf = b
		m.PerfProfile = "/tmp/prof/" + advise.ProfileFile(m.Label, m.Cache)
	}
	return r
}

func TestAdvisePerf(t *testing.T) {
	// Without a recording: no second table, no perf columns.
	if AdvisePerfDoc(adviseFixture()) != nil {
		t.Error("a perf table without a recording")
	}
	for _, c := range AdviseDoc(adviseFixture()).Columns {
		if strings.HasPrefix(c.Key, "perf_") {
			t.Errorf("column %s without a recording", c.Key)
		}
	}
	r := adviseRecorded()
	p := AdvisePerfDoc(r)
	var keys []string
	for _, c := range p.Columns {
		keys = append(keys, c.Key)
	}
	// io_uring and net are zero everywhere: left out.
	want := "engine cache perf_samples perf_user_pct perf_go_runtime_pct perf_syscall_pct perf_copy_pct perf_fault_pct perf_kernel_pct"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("perf columns %s, want %s", got, want)
	}
	rows := p.Groups[0].Rows
	if len(rows) != 4 || rows[0].Cells[0].Text != "readfile (baseline)" || rows[0].Cells[1].Text != "warm" ||
		rows[3].Cells[1].Text != "cold*" || rows[0].Cells[2].Value != 1200 || rows[0].Cells[6].Value != 40 {
		t.Errorf("perf rows %+v", rows)
	}

	var b bytes.Buffer
	if err := WriteAdvise(&b, "table", r, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	checkWidth(t, "advise_perf.table.golden", out, false)
	// The figures, their legend, the perf table and its legend, then the
	// notes and the advice.
	order := []string{"files/s", "× os.ReadFile: the rate divided", "Where the CPU went (perf)",
		"engine               cache  samples  user  go_runtime  syscall  copy  fault  kernel",
		"readfile (baseline)  warm      1200  25.0         5.0      4.0  40.0    0.0    26.0",
		"copy: the kernel copying", "Notes:", "use `raw` with 2 workers"}
	at := 0
	for _, s := range order {
		i := strings.Index(out[at:], s)
		if i < 0 {
			t.Fatalf("%q missing, or out of order, in\n%s", s, out)
		}
		at += i + len(s)
	}
	if strings.Contains(out, "io_uring:") || strings.Contains(out, " net") {
		t.Errorf("a kind zero everywhere is shown:\n%s", out)
	}
	// Without a recording, the output is what it always was.
	var plain, doc bytes.Buffer
	WriteAdvise(&plain, "table", adviseFixture(), DocOptions{})
	WriteDoc(&doc, "table", AdviseDoc(adviseFixture()), DocOptions{})
	if plain.String() != doc.String() {
		t.Error("WriteAdvise without perf differs from the Doc")
	}

	// CSV: the breakdown in each row's record.
	b.Reset()
	if err := WriteAdvise(&b, "csv", r, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[0], "perf_samples,perf_user_pct,perf_go_runtime_pct,perf_syscall_pct,perf_copy_pct,perf_fault_pct,perf_kernel_pct,error") ||
		!strings.HasSuffix(lines[1], ",1200,25,5,4,40,0,26,") {
		t.Errorf("csv:\n%s", b.String())
	}
	// Markdown: a second table.
	b.Reset()
	if err := WriteAdvise(&b, "markdown", r, DocOptions{}); err != nil {
		t.Fatal(err)
	}
	if md := b.String(); strings.Count(md, "| engine | cache |") != 2 || !strings.Contains(md, "**Where the CPU went (perf)") {
		t.Errorf("markdown:\n%s", md)
	}
}
