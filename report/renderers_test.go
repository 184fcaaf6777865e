package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/units"
)

// render writes r in format and fails the test on an error.
func render(t testing.TB, format string, r *bench.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, format, r); err != nil {
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
}

func TestRenderersGolden(t *testing.T) {
	ext := map[string]string{"csv": ".csv", "markdown": ".md", "gobench": ".txt"}
	for _, format := range []string{"csv", "markdown", "gobench"} {
		for _, f := range fixtures {
			t.Run(format+f.name, func(t *testing.T) {
				golden(t, format+f.name+".golden"+ext[format], render(t, format, f.make()))
			})
		}
	}
}

func TestTableSweepGolden(t *testing.T) {
	golden(t, "table_sweep.golden", render(t, "table", smallSweep()))
}

func TestFormats(t *testing.T) {
	want := []string{"table", "json", "csv", "markdown", "gobench"}
	if got := Formats(); !slices.Equal(got, want) {
		t.Errorf("Formats() = %q, want %q", got, want)
	}
	direct := map[string]func(io.Writer, *bench.Report) error{
		"table": Table, "json": JSON, "csv": CSV, "markdown": Markdown, "gobench": GoBench,
	}
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := direct[f](&b, smallSweep()); err != nil {
			t.Fatal(err)
		}
		if got := render(t, f, smallSweep()); !bytes.Equal(got, b.Bytes()) || len(got) == 0 {
			t.Errorf("Write(%q) differs from its renderer", f)
		}
	}

	var b bytes.Buffer
	err := Write(&b, "html", sample())
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
		if err := Write(failWriter{}, f, smallSweep()); err == nil {
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
				if err := Write(&b, f, r); err != nil || !bytes.Equal(b.Bytes(), want[f]) {
					t.Errorf("%s: concurrent render differs (err %v)", f, err)
				}
			})
		}
	}
	wg.Wait()
}

func TestRenderersEmpty(t *testing.T) {
	for _, f := range Formats() {
		if out := render(t, f, &bench.Report{}); len(out) == 0 {
			t.Errorf("%s: nothing written for an empty report", f)
		}
	}
}

// tableLines returns the result lines of a table: from the column heads
// to the blank line before the legend.
func tableLines(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "engine ") })
	if start < 0 {
		t.Fatalf("no column heads in\n%s", out)
	}
	end := start + slices.Index(lines[start:], "")
	return lines[start:end]
}

func TestTableSweep(t *testing.T) {
	out := string(render(t, "table", smallSweep()))
	lines := tableLines(t, out)
	if !strings.Contains(lines[0], "vs fio") {
		t.Errorf("no vs fio column: %q", lines[0])
	}
	if strings.Contains(lines[0], "checksum") {
		t.Errorf("checksum column shown though no row was checked: %q", lines[0])
	}
	for i, l := range lines {
		if n := width(l); n > 130 {
			t.Errorf("table line is %d columns wide: %q", n, l)
		}
		// Every fio row sits right under the iopath row it mirrors, in
		// the same cache state.
		if f := strings.Fields(l); len(f) > 1 && f[0] == "fio" {
			if !strings.HasPrefix(l, "  fio ") {
				t.Errorf("fio row not indented: %q", l)
			}
			twin := map[string]string{"psync": "pread", "mmap": "mmap", "io_uring": "io_uring", "pvsync": "readv"}[f[1]]
			if !strings.HasPrefix(lines[i-1], twin+" ") || cacheOf(lines[i-1]) != cacheOf(l) {
				t.Errorf("fio %s row is not under its twin %s:\n%s\n%s", f[1], twin, lines[i-1], l)
			}
		}
	}
	for _, want := range []string{
		"-- seq, bs 4KiB, 1 worker, consume none\n", // depths differ: not in the heading
		"io_uring qd1 ", "io_uring qd32 ", // but in the engine cell
		"1.02×", "3.75~", "0.138*",
		"mmap (warm, bs 4KiB) run 3: noisy: another process used 38% of a core",
		"counted here; fio leaves it out",
		"readv           cold   error: child process failed",
		"fio ENGINE", "vs fio ", "qdN", "\n~ ", "\n* ", "-: not known",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pread qd") || strings.Contains(out, "mmap qd") {
		t.Error("an engine without a queue shows a queue depth")
	}
	// fio rows' unknown syscalls are "-".
	for _, l := range lines {
		if strings.HasPrefix(l, "  fio ") && !strings.Contains(l, "      -    300") {
			t.Errorf("fio row's syscalls are not -: %q", l)
		}
	}
}

// cacheOf finds the cache state in a table line.
func cacheOf(line string) string {
	for _, f := range strings.Fields(line) {
		if f == "warm" || f == "cold" || f == "direct" {
			return f
		}
	}
	return ""
}

// TestTableOneDepth: when every queue row of a workload has one depth, it
// is in the heading and not in the engine cells.
func TestTableOneDepth(t *testing.T) {
	r := sweepSample([]int{4096, 65536}, []int{32}, []string{"pread", "io_uring"}, false)
	out := string(render(t, "table", r))
	if !strings.Contains(out, "-- seq, bs 4KiB, 1 worker, qd 32, consume none\n") || strings.Contains(out, "qd32") {
		t.Errorf("one depth not in the heading:\n%s", out)
	}
	if strings.Contains(out, "vs fio") || strings.Contains(out, "fio ENGINE") || strings.Contains(out, "qdN") {
		t.Errorf("fio column or legend without fio rows:\n%s", out)
	}
	if strings.Contains(out, "\n~ ") || strings.Contains(out, "3.00~") {
		// mmap is the only noisy engine and it did not run.
		t.Errorf("noisy mark without noisy rows:\n%s", out)
	}
}

// TestTableTwinOrder: fio rows move under their twins wherever the runner
// put them; a fio row without a twin stays, unindented.
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
	lines := tableLines(t, string(render(t, "table", r)))
	var got []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		got = append(got, indent+f[0]+" "+f[1]+" "+f[2])
	}
	want := []string{
		"fio libaio warm",
		"pread warm 3.00", "  fio psync warm", "mmap warm 3.75~", "  fio mmap warm",
		"pread cold 0.60", "  fio psync cold", "mmap cold 0.75~", "  fio mmap cold",
	}
	for i := range got {
		if i < len(want) && !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("row %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d rows, want %d:\n%s", len(got), len(want), strings.Join(lines, "\n"))
	}
}

func TestCSV(t *testing.T) {
	for _, f := range fixtures {
		r := f.make()
		out := render(t, "csv", r)
		cr := csv.NewReader(bytes.NewReader(out))
		cr.FieldsPerRecord = len(csvColumns)
		recs, err := cr.ReadAll()
		if err != nil {
			t.Fatalf("%s: reading the CSV back: %v", f.name, err)
		}
		if len(recs) != len(r.Results)+1 {
			t.Fatalf("%s: %d records for %d results", f.name, len(recs), len(r.Results))
		}
		if !slices.Equal(recs[0], csvColumns) {
			t.Errorf("header %q", recs[0])
		}
		col := func(rec []string, name string) string { return rec[slices.Index(csvColumns, name)] }
		for i, rec := range recs[1:] {
			res := r.Results[i]
			if col(rec, "engine") != res.Engine || col(rec, "cache") != res.Cache || col(rec, "error") != oneLine(res.Error) {
				t.Errorf("row %d: %q", i, rec)
			}
			if !hasGoodRun(&res) {
				// Not measured: no figures, not zeros.
				if col(rec, "bytes_per_s") != "" || col(rec, "lat_p99_ns") != "" || col(rec, "error") == "" {
					t.Errorf("row %d without a good run: %q", i, rec)
				}
			} else if bps, err := strconv.ParseFloat(col(rec, "bytes_per_s"), 64); err != nil || bps != res.BytesPerS {
				t.Errorf("row %d: bytes_per_s %q, want %v", i, col(rec, "bytes_per_s"), res.BytesPerS)
			}
			if res.Tool == bench.ToolFio && (col(rec, "syscalls_per_pass") != "" || col(rec, "tool") != "fio" || col(rec, "twin") == "") {
				t.Errorf("fio row %d: %q", i, rec)
			}
			if res.VsFio > 0 {
				if v, err := strconv.ParseFloat(col(rec, "vs_fio"), 64); err != nil || v != res.VsFio {
					t.Errorf("row %d: vs_fio %q, want %v", i, col(rec, "vs_fio"), res.VsFio)
				}
			}
			for _, cell := range rec {
				if strings.ContainsAny(cell, "\n") || regexp.MustCompile(`^\d{1,3}(,\d{3})+$`).MatchString(cell) {
					t.Errorf("row %d: cell %q", i, cell)
				}
			}
		}
	}

	// Column names are the JSON keys of bench.Result where one exists.
	keys := map[string]bool{}
	rt := reflect.TypeFor[bench.Result]()
	for i := range rt.NumField() {
		keys[strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	for _, c := range csvColumns {
		if !keys[c] && c != "checksum" {
			t.Errorf("CSV column %q is not a JSON key of bench.Result", c)
		}
	}

	// NaN and infinities are empty; a checksum is ok, mismatch or empty.
	r := sample()
	r.Results[0].BytesPerS = math.NaN()
	r.Results[0].CPUSPerGiB = math.Inf(1)
	recs, err := csv.NewReader(bytes.NewReader(render(t, "csv", r))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(rec []string, name string) string { return rec[slices.Index(csvColumns, name)] }
	if col(recs[1], "bytes_per_s") != "" || col(recs[1], "cpu_s_per_gib") != "" {
		t.Errorf("NaN or Inf written: %q", recs[1])
	}
	for i, want := range []string{"ok", "ok", "", "", "ok", "mismatch", "ok"} {
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
		groups := len(groupResults(r.Results))
		if tables != groups {
			t.Errorf("%s: %d tables for %d workloads", f.name, tables, groups)
		}
		// The alignment rows and one row per result.
		if rows != tables+len(r.Results) {
			t.Errorf("%s: %d table rows for %d results", f.name, rows-tables, len(r.Results))
		}
		if !strings.Contains(out, `| **error** | pipe \| in the message \*and\* stars |`) {
			t.Errorf("%s: error not escaped:\n%s", f.name, out)
		}
	}
	out := string(render(t, "markdown", smallSweep()))
	for _, want := range []string{"| ↳ fio psync | warm |", "| vs fio |", "| io_uring qd32 |", "3.75\\~", "0.138\\*", "| - |",
		"- **command:** `iopath bench", "### Notes", "<details>"} {
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
	for in, want := range map[string]string{"a": "`a`", "a`b": "``a`b``", "`a": "`` `a ``"} {
		if got := mdCode(in); got != want {
			t.Errorf("mdCode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGoBench(t *testing.T) {
	for _, f := range fixtures {
		r := f.make()
		out := render(t, "gobench", r)

		// What the lines must be: one per successful run.
		type want struct {
			name   string
			passes int
			values map[string]float64
		}
		var wants []want
		for _, res := range r.Results {
			tool := res.Tool
			if tool == "" {
				tool = "iopath"
			}
			name := "Read/tool=" + tool + "/engine=" + res.Engine + "/cache=" + res.Cache + "/pattern=" + res.Pattern +
				"/bs=" + units.FormatSize(int64(res.BS)) + "/workers=" + strconv.Itoa(res.Workers) +
				"/qd=" + strconv.Itoa(res.QD) + "/consume=" + res.Consume
			for _, run := range res.Runs {
				if run.Error != "" {
					continue
				}
				passes := max(run.Passes, 1)
				v := map[string]float64{
					"ns/op": float64(run.WallNs) / float64(passes),
					"MB/s":  run.BytesPerS / 1e6,
				}
				if c := run.UserNs + run.SysNs; c > 0 {
					v["cpu-s/GiB"] = float64(c) / 1e9 / (float64(run.Bytes) / (1 << 30))
				}
				if run.LatP50Ns > 0 {
					v["p50-ns"] = float64(run.LatP50Ns)
				}
				if run.LatP99Ns > 0 {
					v["p99-ns"] = float64(run.LatP99Ns)
				}
				if res.Tool != bench.ToolFio {
					v["syscalls/op"] = float64(run.Syscalls) / float64(passes)
				}
				wants = append(wants, want{name, passes, v})
			}
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
		for i, g := range got {
			w := wants[i]
			if string(g.Name) != w.name || g.Iters != w.passes {
				t.Errorf("%s line %d: %s %d, want %s %d", f.name, i, g.Name, g.Iters, w.name, w.passes)
			}
			if g.GetConfig("goos") != "linux" || g.GetConfig("goarch") != "amd64" ||
				g.GetConfig("pkg") != "github.com/iopath/iopath" || g.GetConfig("cpu") != r.Machine.CPUModel ||
				g.GetConfig("file") == "" {
				t.Errorf("%s line %d: config %v", f.name, i, g.Config)
			}
			// benchstat's keys: the sub-names parse as key=value.
			_, parts := g.Name.Parts()
			for _, p := range parts {
				if !regexp.MustCompile(`^/[a-z]+=[A-Za-z0-9_.]+$`).MatchString(string(p)) {
					t.Errorf("%s line %d: sub-name %q", f.name, i, p)
				}
			}
			gotVals := map[string]float64{}
			for _, v := range g.Values {
				// Orig* are set when benchfmt tidied the unit (ns to sec,
				// MB to B).
				unit, value := v.OrigUnit, v.OrigValue
				if unit == "" {
					unit, value = v.Unit, v.Value
				}
				gotVals[unit] = value
			}
			if !reflect.DeepEqual(gotVals, w.values) {
				t.Errorf("%s line %d (%s): values %v, want %v", f.name, i, g.Name, gotVals, w.values)
			}
		}
		for _, u := range gobenchUnits {
			if units[u] != "lower" {
				t.Errorf("%s: unit %s: better=%q", f.name, u, units[u])
			}
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
	for in, want := range map[string]string{"pread": "pread", "a b/c=d": "a_b_c_d", "x-8": "x_8", "io_uring": "io_uring", "a-b": "a-b"} {
		if got := gobenchValue(in); got != want {
			t.Errorf("gobenchValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONSweepRoundTrip(t *testing.T) {
	r := smallSweep()
	path := filepath.Join(t.TempDir(), "sweep.json")
	if err := os.WriteFile(path, render(t, "json", r), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(back)
		t.Errorf("smallSweep did not round-trip through JSON:\n%s\n%s", a, b)
	}
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
				if err := Write(&buf, f, r); err != nil {
					b.Fatal(err)
				}
				n = buf.Len()
			}
			b.SetBytes(int64(n))
		})
	}
}
