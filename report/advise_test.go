package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/advise"
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
