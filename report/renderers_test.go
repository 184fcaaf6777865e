package report

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/iopath/iopath/bench"
)

// render writes r in format and fails the test on an error.
func render(t testing.TB, format string, r *bench.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, format, r, DocOptions{}); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return b.Bytes()
}

// fixtures are the reports every renderer's golden files are made from.
var fixtures = []struct {
	name string // golden file suffix
	make func() *bench.Report
}{
	{"", sample},
	{"_sweep", smallSweep},
	{"_tree", treeSample},
}

// treeSample is a hand-built bench --tree report: four engines, two
// cache states, a noisy row, files delivered with errors, a failed row
// and one an interrupt kept from running.
func treeSample() *bench.Report {
	r := sample()
	r.Command = "iopath bench --tree /var/tmp/tree --cache warm,cold --workers 2"
	r.File = bench.FileInfo{}
	r.Tree = &bench.TreeInfo{Dir: "/var/tmp/tree", Files: 100000, Bytes: 100000 << 12, Archive: "/var/tmp/tree.tar.zst"}
	r.Notes = []string{"cold: the page cache was dropped with posix_fadvise(DONTNEED) before each run"}
	mk := func(engine, cache string, workers, qd int, fps float64) bench.Result {
		res := bench.Result{Tool: bench.ToolIopath, Engine: engine, Cache: cache, Pattern: "tree", Workers: workers, QD: qd,
			Consume: "checksum", ChecksumOK: ptr(true), Files: 100000}
		var fs []float64
		for i, f := range []float64{0.96, 1.0, 1.03} {
			wall := int64(100000 / (fps * f) * 1e9)
			run := bench.Run{Passes: 1, Bytes: 100000 << 12, Blocks: 100000, WallNs: wall,
				BytesPerS: float64(100000<<12) / (float64(wall) / 1e9), UserNs: wall / 4, SysNs: wall / 2,
				Syscalls: 300000 + int64(i), NVCSw: 1000, NIVCSw: 50, LatP50Ns: int64(2e9 / fps), LatP99Ns: int64(9e9 / fps),
				LatP999Ns: int64(30e9 / fps), ChecksumOK: ptr(true)}
			res.Runs = append(res.Runs, run)
			fs = append(fs, float64(run.Blocks)/(float64(wall)/1e9))
		}
		res.FilesPerS, res.FilesPerSMin, res.FilesPerSMax = fs[1], fs[0], fs[2]
		res.BytesPerS = res.Runs[1].BytesPerS
		res.LatP50Ns, res.LatP99Ns, res.LatP999Ns = res.Runs[1].LatP50Ns, res.Runs[1].LatP99Ns, res.Runs[1].LatP999Ns
		res.SyscallsPerFile, res.CSwPerFile = 3, 0.0105
		res.CPUSPer1kFiles = float64(res.Runs[1].UserNs+res.Runs[1].SysNs) / 1e9 / 100
		return res
	}
	raw := mk("raw", "warm", 2, 0, 412_000)
	pool := mk("pool", "warm", 64, 0, 298_000)
	pool.NoisyRuns = 1
	pool.Runs[2].Noisy = "another process used 31% of a core"
	uring := mk("io_uring", "warm", 2, 64, 455_000)
	rf := mk("readfile", "warm", 1, 0, 161_000)
	rf.FileErrors = 2
	for i := range rf.Runs {
		rf.Runs[i].Errors = 2
	}
	rf.Notes = []string{"2 files could not be opened: permission denied"}
	rawCold := mk("raw", "cold", 2, 0, 11_800)
	uringCold := mk("io_uring", "cold", 2, 64, 0)
	uringCold.Runs = []bench.Run{{Error: "io_uring_setup: cannot allocate memory"}}
	uringCold.Error = uringCold.Runs[0].Error
	uringCold.ChecksumOK = nil
	archive := bench.Result{Tool: bench.ToolIopath, Engine: "archive", Cache: "cold", Pattern: "tree", Workers: 1,
		Consume: "checksum", Runs: []bench.Run{}, Error: bench.InterruptedError, Interrupted: true}
	r.Results = []bench.Result{raw, pool, uring, rf, rawCold, uringCold, archive}
	r.Interrupted = true
	return r
}

// wideFixtures are rendered with --wide too.
var wideFixtures = map[string]func() *bench.Report{"table_wide.golden": sample, "table_tree_wide.golden": treeSample}

func TestRenderersGolden(t *testing.T) {
	ext := map[string]string{"table": "", "csv": ".csv", "markdown": ".md", "gobench": ".txt"}
	for _, format := range []string{"table", "csv", "markdown", "gobench"} {
		for _, f := range fixtures {
			if format == "table" && f.name != "_tree" {
				continue // table.golden and table_sweep.golden below
			}
			t.Run(format+f.name, func(t *testing.T) {
				golden(t, format+f.name+".golden"+ext[format], render(t, format, f.make()))
			})
		}
	}
	for name, mk := range wideFixtures {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, "table", mk(), DocOptions{Wide: true}); err != nil {
				t.Fatal(err)
			}
			golden(t, name, b.Bytes())
		})
	}
}

func TestTableSweepGolden(t *testing.T) {
	golden(t, "table_sweep.golden", render(t, "table", smallSweep()))
}

// TestTableFits: every line of a default table fits 100 columns, but the
// command and the paths, which stay whole to be copied; --wide adds the
// columns it hides.
func TestTableFits(t *testing.T) {
	for _, f := range append(fixtures, struct {
		name string
		make func() *bench.Report
	}{"_big", bigSweep}) {
		out := string(render(t, "table", f.make()))
		for _, l := range strings.Split(out, "\n") {
			if n := width(l); n > docWrap && !strings.HasPrefix(l, "command ") && !strings.HasPrefix(l, "file ") &&
				!strings.HasPrefix(l, "tree ") {
				t.Errorf("%s: line is %d columns wide: %q", f.name, n, l)
			}
		}
		var b bytes.Buffer
		if err := Write(&b, "table", f.make(), DocOptions{Wide: true}); err != nil {
			t.Fatal(err)
		}
		head := func(s string) string {
			for _, l := range strings.Split(s, "\n") {
				if strings.HasPrefix(l, "engine ") {
					return l + " "
				}
			}
			return ""
		}
		for _, want := range []string{" P99.9 ", " cs/file ", " syscalls "} {
			if strings.Contains(head(out), want) {
				t.Errorf("%s: %s is not behind --wide", f.name, want)
			}
		}
		if h := head(b.String()); !strings.Contains(h, " P99.9 ") || strings.Contains(h, " pattern ") {
			t.Errorf("%s: --wide shows %q", f.name, h)
		}
	}
}

func TestFormats(t *testing.T) {
	want := []string{"table", "json", "csv", "markdown", "gobench"}
	if got := Formats(); !slices.Equal(got, want) {
		t.Errorf("Formats() = %q, want %q", got, want)
	}
	// Every format but JSON is the report's Doc, whatever its kind.
	for _, f := range fixtures {
		for _, format := range Formats() {
			if format == "json" {
				continue
			}
			var b bytes.Buffer
			if err := WriteDoc(&b, format, BenchDoc(f.make()), DocOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := render(t, format, f.make()); !bytes.Equal(got, b.Bytes()) || len(got) == 0 {
				t.Errorf("Write(%q) of %s differs from WriteDoc of its Doc", format, f.name)
			}
		}
	}

	var b bytes.Buffer
	err := Write(&b, "html", sample(), DocOptions{})
	if err == nil || b.Len() > 0 {
		t.Fatalf("Write(html): err %v, wrote %d bytes", err, b.Len())
	}
	for _, f := range Formats() {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not list %q", err, f)
		}
	}
}

func TestRenderersWriterError(t *testing.T) {
	for _, f := range Formats() {
		if err := Write(failWriter{}, f, smallSweep(), DocOptions{}); err == nil {
			t.Errorf("%s: no error from a failing writer", f)
		}
	}
}

// TestRenderersConcurrent renders one report in every format at once: the
// renderers only read it (run with -race).
func TestRenderersConcurrent(t *testing.T) {
	r := smallSweep()
	want := map[string][]byte{}
	for _, f := range Formats() {
		want[f] = render(t, f, r)
	}
	var wg sync.WaitGroup
	for range 4 {
		for _, f := range Formats() {
			wg.Go(func() {
				var b bytes.Buffer
				if err := Write(&b, f, r, DocOptions{}); err != nil || !bytes.Equal(b.Bytes(), want[f]) {
					t.Errorf("%s: concurrent render differs (err %v)", f, err)
				}
			})
		}
	}
	wg.Wait()
}

func TestRenderersEmpty(t *testing.T) {
	for _, f := range Formats() {
		for _, r := range []*bench.Report{{}, {Tree: &bench.TreeInfo{Dir: "/t"}}} {
			if out := render(t, f, r); len(out) == 0 {
				t.Errorf("%s: nothing written for an empty report", f)
			}
		}
	}
}

// docRows lists a Doc's rows with the text of their first cell.
func docRows(d *Doc) []Row {
	var rows []Row
	for _, g := range d.Groups {
		rows = append(rows, g.Rows...)
	}
	return rows
}

// colIndex is the index of the column with key, or -1.
func colIndex(d *Doc, key string) int {
	return slices.IndexFunc(d.Columns, func(c Column) bool { return c.Key == key })
}

func TestTableSweep(t *testing.T) {
	r := smallSweep()
	d := BenchDoc(r)
	if colIndex(d, "vs_fio") < 0 || colIndex(d, "iops") < 0 {
		t.Errorf("no vs fio or IOPS column (4 KiB blocks): %+v", d.Columns)
	}
	if colIndex(d, "checksum") >= 0 {
		t.Error("checksum column though no row was checked")
	}
	rows := docRows(d)
	cache := colIndex(d, "cache")
	for i, row := range rows {
		// Every fio row sits right under the iopath row it mirrors, in
		// the same cache state.
		if name := row.Cells[0].Text; strings.HasPrefix(name, "fio ") {
			twin := map[string]string{"fio psync": "pread", "fio mmap": "mmap", "fio io_uring": "io_uring", "fio pvsync": "readv"}[name]
			prev := rows[i-1]
			if !row.Sub || !strings.HasPrefix(prev.Cells[0].Text, twin) || prev.Cells[cache].Text != row.Cells[cache].Text {
				t.Errorf("%s row is not under its twin %s: %+v", name, twin, prev.Cells[:2])
			}
			// fio does not count syscalls: not a zero.
			if c := row.Cells[colIndex(d, "syscalls")]; finite(c.Value) {
				t.Errorf("fio row's syscalls %v", c.Value)
			}
		}
	}
	out := string(render(t, "table", r))
	for _, want := range []string{
		"\nseq, bs 4KiB, 1 worker, consume none\n", // depths differ: not in the heading
		"io_uring qd1 ", "io_uring qd32 ", // but in the engine cell
		"1.02×", "3.75~", "0.138*",
		"  - mmap (warm, bs 4KiB) run 3: noisy: another process used 38% of a core",
		"fio ENGINE: ", "vs fio", "qdN: ", "~: ", "*: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`\nreadv +cold +error: child process failed: signal: killed: injected failure\n`).MatchString(out) {
		t.Errorf("the failed row does not say why with its engine and cache:\n%s", out)
	}
	if !slices.ContainsFunc(d.Legend, func(f Field) bool { return strings.Contains(f.Value, "– for fio, which does not count them") }) {
		t.Errorf("the legend does not say fio's syscalls are not known: %q", d.Legend)
	}
	if !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "counted here; fio leaves it out") }) {
		t.Errorf("no note on io_uring's kernel threads: %q", d.Notes)
	}
	if strings.Contains(out, "pread qd") || strings.Contains(out, "mmap qd") {
		t.Error("an engine without a queue shows a queue depth")
	}
}

// TestTableOneDepth: when every queue row of a workload has one depth, it
// is in the heading and not in the engine cells.
func TestTableOneDepth(t *testing.T) {
	r := sweepSample([]int{4096, 65536}, []int{32}, []string{"pread", "io_uring"}, false)
	out := string(render(t, "table", r))
	if !strings.Contains(out, "\nseq, bs 4KiB, 1 worker, qd 32, consume none\n") || strings.Contains(out, "qd32") {
		t.Errorf("one depth not in the heading:\n%s", out)
	}
	if strings.Contains(out, "vs fio") || strings.Contains(out, "fio ENGINE") || strings.Contains(out, "qdN") {
		t.Errorf("fio column or legend without fio rows:\n%s", out)
	}
	if strings.Contains(out, "~: ") || strings.Contains(out, "3.00~") {
		// mmap is the only noisy engine and it did not run.
		t.Errorf("noisy mark without noisy rows:\n%s", out)
	}
	// IOPS only for blocks under 64 KiB.
	big := sweepSample([]int{65536, 131072}, []int{32}, []string{"pread", "io_uring"}, false)
	if colIndex(BenchDoc(r), "iops") < 0 || colIndex(BenchDoc(big), "iops") >= 0 {
		t.Error("IOPS column not shown exactly when a block size is under 64 KiB")
	}
}

// TestTableTwinOrder: fio rows move under their twins wherever the runner
// put them; a fio row without a twin stays, not a sub-row.
func TestTableTwinOrder(t *testing.T) {
	r := sweepSample([]int{4096}, []int{1}, []string{"pread", "mmap"}, true)
	// pread, fio psync, mmap, fio mmap per cache: move the fio rows first.
	var fio, ours []bench.Result
	for _, res := range r.Results {
		if res.Tool == bench.ToolFio {
			fio = append(fio, res)
		} else {
			ours = append(ours, res)
		}
	}
	orphan := fio[0]
	orphan.Twin, orphan.Engine = "libaio-twin", "libaio"
	r.Results = append(append(fio, orphan), ours...)
	d := BenchDoc(r)
	var got []string
	for _, row := range docRows(d) {
		s := row.Cells[0].Text + " " + row.Cells[1].Text
		if row.Sub {
			s = "  " + s
		}
		got = append(got, s)
	}
	want := []string{
		"fio libaio warm",
		"pread warm", "  fio psync warm", "mmap warm", "  fio mmap warm",
		"pread cold", "  fio psync cold", "mmap cold", "  fio mmap cold",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// TestBenchDocRuns: every figure made from runs carries each successful
// run's value (compare tests them), the headline figures are marked,
// and a row without figures has none.
func TestBenchDocRuns(t *testing.T) {
	for _, f := range fixtures {
		r := f.make()
		d := BenchDoc(r)
		var headline []string
		for _, c := range d.Columns {
			if c.Headline {
				headline = append(headline, c.Key)
			}
		}
		want := []string{"gib_per_s", "cpu_s_per_gib"}
		if r.Tree != nil {
			want = []string{"files_per_s", "cpu_s_per_1k_files"}
		}
		if !slices.Equal(headline, want) {
			t.Errorf("%s: headline columns %q, want %q", f.name, headline, want)
		}
		gib := colIndex(d, want[0])
		for _, row := range docRows(d) {
			c := row.Cells[gib]
			if row.Err != "" {
				if c.Num || len(c.Runs) > 0 {
					t.Errorf("%s: row %q without figures has %+v", f.name, row.Cells[0].Text, c)
				}
				continue
			}
			if len(c.Runs) == 0 || c.Min > c.Value || c.Value > c.Max {
				t.Errorf("%s: row %q: %s cell %+v", f.name, row.Cells[0].Text, want[0], c)
			}
		}
	}
	// The runs are the report's own.
	d := BenchDoc(sample())
	c := d.Groups[0].Rows[0].Cells[colIndex(d, "gib_per_s")]
	var runs []float64
	for _, run := range sample().Results[0].Runs {
		runs = append(runs, run.BytesPerS/(1<<30))
	}
	if !slices.Equal(c.Runs, runs) || c.Value != sample().Results[0].BytesPerS/(1<<30) {
		t.Errorf("pread warm: %+v, want runs %v", c, runs)
	}
}

func TestCSV(t *testing.T) {
	for _, f := range fixtures {
		r := f.make()
		d := BenchDoc(r)
		recs, err := csv.NewReader(bytes.NewReader(render(t, "csv", r))).ReadAll()
		if err != nil {
			t.Fatalf("%s: reading the CSV back: %v", f.name, err)
		}
		if len(recs) != len(r.Results)+1 {
			t.Fatalf("%s: %d records for %d results", f.name, len(recs), len(r.Results))
		}
		head := recs[0]
		col := func(rec []string, name string) string { return rec[slices.Index(head, name)] }
		for _, k := range head {
			if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(k) {
				t.Errorf("%s: column %q is not snake_case", f.name, k)
			}
		}
		// Every column, those behind --wide too.
		for _, c := range d.Columns {
			if !slices.Contains(head, c.Key) {
				t.Errorf("%s: no %s column", f.name, c.Key)
			}
		}
		key := d.Columns[slices.IndexFunc(d.Columns, func(c Column) bool { return c.Headline })].Key
		var want, got []string
		for _, res := range r.Results {
			if res.Error == "" {
				v := res.BytesPerS / (1 << 30)
				if r.Tree != nil {
					v = res.FilesPerS
				}
				want = append(want, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		for i, rec := range recs[1:] {
			if col(rec, "error") != "" {
				// Not measured: no figures, not zeros.
				if col(rec, key) != "" || col(rec, "lat_p99_ns") != "" {
					t.Errorf("%s: row %d without a good run: %q", f.name, i, rec)
				}
				continue
			}
			got = append(got, col(rec, key))
			for _, cell := range rec {
				if strings.ContainsAny(cell, "\n") || regexp.MustCompile(`^\d{1,3}(,\d{3})+$`).MatchString(cell) {
					t.Errorf("%s: row %d: cell %q", f.name, i, cell)
				}
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %s %q, want %q", f.name, key, got, want)
		}
	}

	// NaN and infinities are empty; a checksum is ok, MISMATCH or n/a.
	r := sample()
	r.Results[0].BytesPerS = math.NaN()
	r.Results[0].CPUSPerGiB = math.Inf(1)
	recs, err := csv.NewReader(bytes.NewReader(render(t, "csv", r))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(rec []string, name string) string { return rec[slices.Index(recs[0], name)] }
	if col(recs[1], "gib_per_s") != "" || col(recs[1], "cpu_s_per_gib") != "" {
		t.Errorf("NaN or Inf written: %q", recs[1])
	}
	for i, want := range []string{"ok", "ok", "", "n/a", "ok", "MISMATCH", "ok"} {
		if got := col(recs[i+1], "checksum"); got != want {
			t.Errorf("row %d: checksum %q, want %q", i, got, want)
		}
	}
}

// unescapedPipes counts the | in a markdown line that are not escaped.
func unescapedPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n
}

func TestMarkdownTables(t *testing.T) {
	for _, f := range fixtures {
		r := f.make()
		// A | in an error must not end the cell.
		r.Results = append(r.Results, r.Results[0])
		r.Results[len(r.Results)-1].Error = "pipe | in the message *and* stars"
		out := string(render(t, "markdown", r))
		tables, rows := 0, 0
		header := -1
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "|") {
				header = -1
				continue
			}
			if header < 0 {
				header = unescapedPipes(l)
				tables++
				continue
			}
			rows++
			if n := unescapedPipes(l); n != header {
				t.Errorf("%s: row has %d | and its header %d: %q", f.name, n, header, l)
			}
		}
		groups := len(BenchDoc(r).Groups)
		if tables != groups {
			t.Errorf("%s: %d tables for %d workloads", f.name, tables, groups)
		}
		// The alignment rows and one row per result.
		if rows != tables+len(r.Results) {
			t.Errorf("%s: %d table rows for %d results", f.name, rows-tables, len(r.Results))
		}
		if !strings.Contains(out, ` error: pipe \| in the message \*and\* stars |`) {
			t.Errorf("%s: error not escaped:\n%s", f.name, out)
		}
	}
	out := string(render(t, "markdown", smallSweep()))
	for _, want := range []string{"| ↳ fio psync | warm |", "| vs fio |", "| io_uring qd32 |", "3.75\\~", "0.138\\*",
		"- command: iopath bench", "\n- mmap (warm, bs 4KiB) run 3: noisy"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

func TestMarkdownEscape(t *testing.T) {
	for in, want := range map[string]string{
		"io_uring":         "io_uring",
		"_x_ a|b *c* <d>":  `\_x\_ a\|b \*c\* \<d\>`,
		"line\nbreak":      "line break",
		"`tick` [l](u) ~s": "\\`tick\\` \\[l\\](u) \\~s",
	} {
		if got := mdEscape(in); got != want {
			t.Errorf("mdEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGoBench: one line per successful run, named by the row's identity
// with no parameter that differs between engines (so that benchstat -col
// /engine lines them up), the headline figures with their runs' values.
func TestGoBench(t *testing.T) {
	for _, f := range fixtures {
		r := f.make()
		out := render(t, "gobench", r)
		type want struct {
			gib, cpu float64
		}
		var wants []want
		for _, res := range r.Results {
			if res.Error != "" {
				continue
			}
			for _, run := range res.Runs {
				if run.Error != "" {
					continue
				}
				w := want{run.BytesPerS / (1 << 30), float64(run.UserNs+run.SysNs) / 1e9 / (float64(run.Bytes) / (1 << 30))}
				if r.Tree != nil {
					w = want{float64(run.Blocks) / (float64(run.WallNs) / 1e9), float64(run.UserNs+run.SysNs) / 1e9 / float64(run.Blocks) * 1000}
				}
				wants = append(wants, w)
			}
		}
		headline := [2]string{"GiB/s", "CPU-s/GiB"}
		if r.Tree != nil {
			headline = [2]string{"files/s", "CPU-s/1k-files"}
		}

		br := benchfmt.NewReader(bytes.NewReader(out), "gobench"+f.name)
		var got []*benchfmt.Result
		units := map[string]string{}
		for br.Scan() {
			switch rec := br.Result().(type) {
			case *benchfmt.Result:
				got = append(got, rec.Clone())
			case *benchfmt.UnitMetadata:
				units[rec.OrigUnit] = rec.Value
			case *benchfmt.SyntaxError:
				t.Errorf("%s: %v", f.name, rec)
			}
		}
		if err := br.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(wants) {
			t.Fatalf("%s: %d benchmark lines, want %d (one per successful run)", f.name, len(got), len(wants))
		}
		// benchstat -col /engine: the other keys of the engines' lines
		// are the same, for each workload and cache state.
		engines := map[string]map[string]bool{}
		var gotPairs []want
		for i, g := range got {
			if g.Iters != 1 {
				t.Errorf("%s line %d: %d iterations", f.name, i, g.Iters)
			}
			if g.GetConfig("goos") != "linux" || g.GetConfig("goarch") != "amd64" ||
				g.GetConfig("pkg") != "github.com/iopath/iopath" || g.GetConfig("cpu") != r.Machine.CPUModel ||
				(g.GetConfig("file") == "" && g.GetConfig("tree") == "") {
				t.Errorf("%s line %d: config %v", f.name, i, g.Config)
			}
			base, parts := g.Name.Parts()
			if kind := map[bool]string{false: "File", true: "Tree"}[r.Tree != nil]; string(base) != kind {
				t.Errorf("%s line %d: benchmark %q, want %q", f.name, i, base, kind)
			}
			var rest []string
			engine := ""
			for _, p := range parts {
				if !regexp.MustCompile(`^/[a-z]+=[A-Za-z0-9_.]+$`).MatchString(string(p)) {
					t.Errorf("%s line %d: sub-name %q", f.name, i, p)
				}
				if strings.HasPrefix(string(p), "/qd=") {
					t.Errorf("%s line %d: the queue depth is in the name: %s", f.name, i, g.Name)
				}
				if e, ok := strings.CutPrefix(string(p), "/engine="); ok {
					engine = e
				} else {
					rest = append(rest, string(p))
				}
			}
			k := strings.Join(rest, "")
			if engines[k] == nil {
				engines[k] = map[string]bool{}
			}
			engines[k][engine] = true
			vals := map[string]float64{}
			for _, v := range g.Values {
				unit, value := v.OrigUnit, v.OrigValue
				if unit == "" {
					unit, value = v.Unit, v.Value
				}
				vals[unit] = value
			}
			gotPairs = append(gotPairs, want{vals[headline[0]], vals[headline[1]]})
		}
		// The lines are in the Doc's order (grouped by workload).
		order := func(a, b want) int { return cmp.Compare(a.gib, b.gib) }
		slices.SortFunc(gotPairs, order)
		slices.SortFunc(wants, order)
		for i, w := range wants {
			if g := gotPairs[i]; g.gib != w.gib || math.Abs(g.cpu-w.cpu) > 1e-9*w.cpu {
				t.Errorf("%s: %s %v and %s %v, want %v and %v", f.name, headline[0], g.gib, headline[1], g.cpu, w.gib, w.cpu)
			}
		}
		for k, e := range engines {
			if len(e) < 2 && (f.name == "_sweep" || f.name == "_tree") && strings.Contains(k, "cache=warm") {
				t.Errorf("%s: %s has only the engines %v: benchstat -col /engine has nothing to line up", f.name, k, e)
			}
		}
		if units[headline[0]] != "higher" || units[headline[1]] != "lower" {
			t.Errorf("%s: units %v", f.name, units)
		}
	}
}

// TestGoBenchConfigStable: the configuration lines do not change with the
// iopath version, the time or the command (benchstat would not compare
// two reports whose configuration differs), nor with a temporary file's
// random name.
func TestGoBenchConfigStable(t *testing.T) {
	config := func(r *bench.Report) string {
		var lines []string
		for _, l := range strings.Split(string(render(t, "gobench", r)), "\n") {
			if regexp.MustCompile(`^[a-z][^\s:A-Z]*:`).MatchString(l) {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	a, b := smallSweep(), smallSweep()
	a.File.Temporary, b.File.Temporary = true, true
	b.File.Path = "/tmp/iopath-12345"
	b.Machine.IopathVersion = "v0.2.0"
	b.Command += " --runs 5"
	b.Started = b.Started.Add(3600e9)
	if ca, cb := config(a), config(b); ca != cb {
		t.Errorf("configuration differs:\n%s\n---\n%s", ca, cb)
	}
	if out := string(render(t, "gobench", b)); !strings.Contains(out, "iopath v0.2.0") {
		t.Errorf("the version is not written:\n%s", out)
	}
}

func TestGoBenchValue(t *testing.T) {
	for in, want := range map[string]string{"pread": "pread", "a b/c=d": "a_b_c_d", "x-8": "x_8", "io_uring": "io_uring",
		"a-b": "a-b", "pool ×64": "pool_x64"} {
		if got := goBenchValue(in); got != want {
			t.Errorf("goBenchValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONSweepRoundTrip(t *testing.T) {
	r := smallSweep()
	roundTrip(t, render(t, "json", r), LoadJSON, r)
}

// BenchmarkRenderText renders bigSweep in every format.
func BenchmarkRenderText(b *testing.B) {
	r := bigSweep()
	for _, f := range Formats() {
		b.Run(f, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				var buf bytes.Buffer
				if err := Write(&buf, f, r, DocOptions{}); err != nil {
					b.Fatal(err)
				}
				n = buf.Len()
			}
			b.SetBytes(int64(n))
		})
	}
}

// A tree row whose CPU includes io_uring's kernel threads carries the mark
// the notes speak of, and the legend explains it.
func TestTreeIOThreadMark(t *testing.T) {
	r := treeSample()
	i := slices.IndexFunc(r.Results, func(res bench.Result) bool { return res.Error == "" && strings.HasPrefix(res.Engine, "io_uring") })
	if i < 0 {
		t.Fatal("no io_uring row in the tree fixture")
	}
	r.Results[i].IOThreadCPUSPerGiB = 0.05
	out := string(render(t, "table", r))
	if !regexp.MustCompile(`(?m)^io_uring.*[0-9]\*`).MatchString(out) || !strings.Contains(out, "*: includes io_uring's kernel threads") {
		t.Errorf("no io-thread mark or legend:\n%s", out)
	}
}
