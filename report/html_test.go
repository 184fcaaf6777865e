package report

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/netio/netresult"
)

var htmlOut = flag.String("html-out", "", "write the HTML of the test fixtures to this directory, to look at them")

func renderHTML(t testing.TB, r *bench.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// chartInfo is what a chart's markup says about itself, and what it holds.
type chartInfo struct {
	id       string
	declared string   // data-series
	series   []string // data-name of each <g class="series">, in order
	colours  []string // fill and stroke colours used inside each series, space-separated
}

var svgRe = regexp.MustCompile(`(?s)<svg\b[^>]*>.*?</svg>`)

// charts finds every <svg> in doc (the HTML we write, or the DOM Chromium
// dumps), checks that it is well-formed XML, and lists its series.
func charts(t testing.TB, doc string) []chartInfo {
	t.Helper()
	var out []chartInfo
	for _, s := range svgRe.FindAllString(doc, -1) {
		d := xml.NewDecoder(strings.NewReader(s))
		d.Entity = xml.HTMLEntity // Chromium writes &nbsp; as such
		var c chartInfo
		isChart := false
		depth, inSeries := 0, 0 // element depth; depth of the open series, 0 when none
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("chart is not well-formed: %v\n%.400s", err, s)
			}
			if _, ok := tok.(xml.EndElement); ok {
				if depth == inSeries {
					inSeries = 0
				}
				depth--
				continue
			}
			el, ok := tok.(xml.StartElement)
			if !ok {
				continue
			}
			depth++
			attr := func(name string) string {
				for _, a := range el.Attr {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			switch {
			case el.Name.Local == "svg" && attr("class") == "chart":
				isChart = true
				c.id, c.declared = attr("data-chart"), attr("data-series")
			case el.Name.Local == "g" && attr("class") == "series":
				c.series = append(c.series, attr("data-name"))
				c.colours = append(c.colours, "")
				inSeries = depth
			}
			if inSeries > 0 {
				c.colours[len(c.colours)-1] += " " + attr("fill") + " " + attr("stroke")
			}
		}
		if !isChart {
			t.Errorf("an <svg> that is not a chart: %.200s", s)
			continue
		}
		out = append(out, c)
	}
	return out
}

// checkCharts compares the charts in doc with want: chart id -> number of
// series. Every chart must declare the series it holds.
func checkCharts(t *testing.T, doc string, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, c := range charts(t, doc) {
		if _, dup := got[c.id]; dup {
			t.Errorf("chart %q appears twice", c.id)
		}
		got[c.id] = len(c.series)
		if c.declared != fmt.Sprint(len(c.series)) {
			t.Errorf("chart %q: data-series=%q but %d series", c.id, c.declared, len(c.series))
		}
		seen := map[string]bool{}
		for _, name := range c.series {
			if name == "" || seen[name] {
				t.Errorf("chart %q: series name %q empty or repeated", c.id, name)
			}
			seen[name] = true
		}
	}
	for id, n := range want {
		if g, ok := got[id]; !ok {
			t.Errorf("chart %q missing", id)
		} else if g != n {
			t.Errorf("chart %q: %d series, want %d", id, g, n)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("unexpected chart %q (%d series)", id, got[id])
		}
	}
}

// Expected charts, worked out by hand from the fixtures.

// sample: two workloads (seq 128KiB 1 worker; readv alone in rand 4KiB 4
// workers), warm and cold, io_uring failed; one block size and one queue
// depth per workload, so no sweep charts.
var sampleCharts = map[string]int{
	"throughput-warm": 5, "throughput-cold": 2, // pread mmap io_uring null readv; pread mmap
	"cpu-warm": 5, "cpu-cold": 2,
	"latency-warm-seq-128kib-1-worker": 3, // io_uring failed: no latency
	"latency-warm-rand-4kib-4-workers": 1,
	"latency-cold-seq-128kib-1-worker": 2,
}

// smallSweep: 4 engines + 4 fio twins; bs 4KiB,128KiB; io_uring at qd 1,32;
// readv cold 128KiB failed and has no fio twin.
var smallSweepCharts = map[string]int{
	"throughput-warm": 8, "throughput-cold": 8, "cpu-warm": 8, "cpu-cold": 8,
	"latency-warm-4kib": 8, "latency-warm-128kib": 8, "latency-cold-4kib": 8,
	"latency-cold-128kib":   6, // without readv (failed) and pvsync (not run)
	"throughput-vs-bs-warm": 8, "throughput-vs-bs-cold": 8,
	// io_uring and fio io_uring as lines, pread mmap readv as flat references
	"throughput-vs-qd-warm-4kib": 5, "throughput-vs-qd-warm-128kib": 5, "throughput-vs-qd-cold-4kib": 5,
	"throughput-vs-qd-cold-128kib": 4, // readv failed
}

// bigSweep: 5 engines + 5 fio twins; 4 block sizes; io_uring at 4 depths;
// readv cold 1MiB failed.
func bigSweepCharts() map[string]int {
	want := map[string]int{"throughput-vs-bs-warm": 10, "throughput-vs-bs-cold": 10}
	for _, c := range []string{"warm", "cold"} {
		want["throughput-"+c], want["cpu-"+c] = 10, 10
		for _, bs := range []string{"4kib", "16kib", "128kib", "1mib"} {
			lat, qd := 10, 6 // qd: io_uring, fio io_uring, and read pread readv mmap flat
			if c == "cold" && bs == "1mib" {
				lat, qd = 8, 5 // readv failed, and pvsync did not run
			}
			want["latency-"+c+"-"+bs], want["throughput-vs-qd-"+c+"-"+bs] = lat, qd
		}
	}
	return want
}

var htmlFixtures = []struct {
	name   string
	report func() *bench.Report
	charts func() map[string]int
}{
	{"sample", sample, func() map[string]int { return sampleCharts }},
	{"smallSweep", smallSweep, func() map[string]int { return smallSweepCharts }},
	{"bigSweep", bigSweep, bigSweepCharts},
	{"perf", func() *bench.Report { return perfSample(true) }, func() map[string]int { return perfCharts(perfSample(true), true) }},
}

func TestHTMLCharts(t *testing.T) {
	for _, f := range htmlFixtures {
		t.Run(f.name, func(t *testing.T) {
			doc := renderHTML(t, f.report())
			checkCharts(t, doc, f.charts())
			if *htmlOut != "" {
				if err := os.WriteFile(filepath.Join(*htmlOut, f.name+".html"), []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Every row is in the table (BenchDoc's, under its workload's title):
// failed ones with their error, fio ones with their engine's hatched
// swatch, noisy ones saying why.
func TestHTMLTable(t *testing.T) {
	for _, f := range htmlFixtures {
		t.Run(f.name, func(t *testing.T) {
			r := f.report()
			doc := renderHTML(t, r)
			body := doc[strings.Index(doc, "<tbody>"):strings.Index(doc, "</tbody>")]
			groups := len(BenchDoc(r).Groups)
			if groups == 1 {
				groups = 0 // its title is in the header
			}
			if n := strings.Count(body, `<tr class="group">`); n != groups {
				t.Errorf("%d group rows, want %d", n, groups)
			}
			if n := strings.Count(body, "<tr") - groups; n != len(r.Results) {
				t.Errorf("%d table rows, want %d", n, len(r.Results))
			}
			fails, fio, noisy := 0, 0, 0
			for _, res := range r.Results {
				if res.Error != "" {
					fails++
				}
				if res.Tool == bench.ToolFio {
					fio++
				}
				if res.NoisyRuns > 0 {
					noisy++
				}
			}
			if n := strings.Count(body, `<td class="error"`); n != fails {
				t.Errorf("%d error cells, want %d", n, fails)
			}
			if n := strings.Count(body, `<span class="sw" style="background:repeating-linear-gradient`); n != fio {
				t.Errorf("%d hatched swatches, want %d fio rows", n, fio)
			}
			if n := strings.Count(body, `title="noisy runs (kept in the figures): `); n != noisy {
				t.Errorf("%d noisy rows, want %d", n, noisy)
			}
			for _, want := range []string{r.Command, r.Machine.Kernel, r.Machine.CPUModel, r.Machine.IOURing,
				r.Machine.GoVersion, r.File.Path, "2026-11-22 02:42:11 UTC"} {
				if !strings.Contains(doc, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			for _, n := range r.Notes {
				if !strings.Contains(doc, n) {
					t.Errorf("page lacks the note %q", n)
				}
			}
		})
	}
}

var (
	// attributes and CSS that make a browser fetch something
	resourceRe = regexp.MustCompile(`(?i)(?:\b(?:src|href|srcset|poster|data|action|formaction|xlink:href|background)\s*=\s*["']?([^"'\s>]*)|url\(\s*["']?([^"')]*)|@import\s+["']?([^"';\s]*))`)
	// an event handler attribute in a tag (as text, or inside a quoted
	// value, it is harmless)
	eventAttrRe = regexp.MustCompile(`<[a-zA-Z][a-zA-Z0-9]*(?:\s+[^\s="'<>]+(?:="[^"]*"|='[^']*'|=[^\s"'>]*)?)*\s+on[a-z]+\s*=`)
	forbidden   = regexp.MustCompile(`(?i)<(?:script|iframe|object|embed|img|image|use|link(?:\s+rel="(?:stylesheet|preload|prefetch|preconnect|dns-prefetch)")|base|form|meta\s+http-equiv="refresh")\b`)
)

// The page fetches nothing: no URL but a fragment or data:, no script, no
// external anything, and a CSP that would block (and log) a slip.
func TestHTMLOffline(t *testing.T) {
	for _, f := range htmlFixtures {
		t.Run(f.name, func(t *testing.T) {
			checkOffline(t, renderHTML(t, f.report()))
		})
	}
}

// checkOffline applies TestHTMLOffline's rules to doc: nothing fetched,
// no script, a CSP, unique ids and no dangling references.
func checkOffline(t *testing.T, doc string) {
	t.Helper()
	for _, s := range []string{"http://", "https://", "ftp://", "file:"} {
		if i := strings.Index(doc, s); i >= 0 {
			t.Errorf("%q in the page: …%s…", s, doc[max(i-60, 0):min(i+60, len(doc))])
		}
	}
	for _, m := range resourceRe.FindAllStringSubmatch(doc, -1) {
		ref := m[1] + m[2] + m[3]
		if !strings.HasPrefix(ref, "#") && !strings.HasPrefix(ref, "data:") {
			t.Errorf("external reference %q", m[0])
		}
		if strings.HasPrefix(ref, "//") {
			t.Errorf("protocol-relative reference %q", m[0])
		}
	}
	if m := forbidden.FindString(doc); m != "" {
		t.Errorf("page has %q", m)
	}
	if m := eventAttrRe.FindString(doc); m != "" {
		t.Errorf("event handler in a tag: %s", m)
	}
	const csp = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`
	if !strings.Contains(doc, csp) {
		t.Error("no Content-Security-Policy meta tag")
	}
	if !strings.HasPrefix(doc, "<!DOCTYPE html>") || !strings.HasSuffix(doc, "</html>\n") {
		t.Error("not a whole HTML document")
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`\sid="([^"]*)"`).FindAllStringSubmatch(doc, -1) {
		if ids[m[1]] {
			t.Errorf("id %q used twice", m[1])
		}
		ids[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`(?:href="#|url\(#)([^")]*)`).FindAllStringSubmatch(doc, -1) {
		if !ids[m[1]] {
			t.Errorf("reference to a missing id %q", m[1])
		}
	}
}

// checkEscaped fails if markup planted in a report's strings (a
// <script>, an <img>, a <b> with an event handler) came through as markup.
func checkEscaped(t *testing.T, doc string) {
	t.Helper()
	lower := strings.ToLower(doc)
	for _, bad := range []string{"<script", "<img", "<b "} {
		if i := strings.Index(lower, bad); i >= 0 {
			t.Errorf("%q in the page: …%s…", bad, doc[max(i-80, 0):min(i+80, len(doc))])
		}
	}
	if m := eventAttrRe.FindString(doc); m != "" {
		t.Errorf("event handler in a tag: %s", m)
	}
}

// The detector above must find what it is for.
func TestHTMLOfflineDetector(t *testing.T) {
	for _, bad := range []string{`<img src="https://example.com/x.png">`, `<link rel="stylesheet" href="//cdn.example/x.css">`,
		`<div style="background:url(http://x/y.png)">`, `<style>@import "https://fonts.example/f.css";</style>`,
		`<script>alert(1)</script>`, `<svg><image href="x.png"/></svg>`} {
		ext := false
		for _, m := range resourceRe.FindAllStringSubmatch(bad, -1) {
			if ref := m[1] + m[2] + m[3]; !strings.HasPrefix(ref, "#") && !strings.HasPrefix(ref, "data:") {
				ext = true
			}
		}
		if !ext && forbidden.FindString(bad) == "" {
			t.Errorf("not caught: %s", bad)
		}
	}
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{`<img src=x onerror=alert(2)>`, true}, {`<g class="a" onload="x()">`, true}, {`<svg onload=alert(1)>`, true},
		{`<g data-name="&lt;b onmouseover=alert(3)&gt;">`, false}, {`<text>&lt;b onmouseover=x&gt;</text>`, false},
	} {
		if got := eventAttrRe.MatchString(tc.s); got != tc.want {
			t.Errorf("event handler in %s: detected %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestHTMLSize(t *testing.T) {
	doc := renderHTML(t, bigSweep())
	t.Logf("bigSweep: %d bytes, %d results", len(doc), len(bigSweep().Results))
	if len(doc) >= 2<<20 {
		t.Errorf("bigSweep page is %d bytes, over 2 MB", len(doc))
	}
}

// Everything from the report is text, wherever it lands: page, table,
// chart labels, tooltips and attributes.
func TestHTMLEscaping(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	r := smallSweep()
	r.File.Path = "/tmp/" + evil
	r.Command = `iopath bench "` + evil + `" --x '"><img src=x onerror=alert(2)>`
	r.Machine.CPUModel = evil
	r.Machine.Kernel = `6.1 & "quoted"`
	r.Notes = append(r.Notes, evil)
	r.Results[0].Engine = `<b onmouseover=alert(3)>pread</b>`
	r.Results[0].Cache = `warm"><script>alert(4)</script>`
	r.Results[1].Notes = []string{evil}
	r.Results[2].Error = "failed: " + evil + " & more"
	r.Results[2].Pattern = `seq</text><script>alert(5)</script>`

	doc := renderHTML(t, r)
	checkEscaped(t, doc)
	if !strings.Contains(doc, "/tmp/&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the file path is not shown as text")
	}
	for _, c := range charts(t, doc) { // still well-formed
		if c.declared != fmt.Sprint(len(c.series)) {
			t.Errorf("chart %q: data-series=%s, %d series", c.id, c.declared, len(c.series))
		}
	}
}

func TestHTMLEmptyAndFailed(t *testing.T) {
	allFail := sample()
	for i := range allFail.Results {
		allFail.Results[i].Error = "nope"
		allFail.Results[i].Runs = nil
		allFail.Results[i].BytesPerS = 0
	}
	nonFinite := smallSweep()
	nonFinite.Results[0].BytesPerS = math.NaN()
	nonFinite.Results[0].BytesPerSMax = math.Inf(1)
	nonFinite.Results[1].CPUSPerGiB = math.Inf(1)
	nonFinite.Results[3].LatP99Ns = -5

	for _, tc := range []struct {
		name string
		r    *bench.Report
		want map[string]int
	}{
		{"zero", &bench.Report{}, map[string]int{}},
		{"empty", &bench.Report{Tool: "iopath", Results: []bench.Result{}, Notes: []string{}}, map[string]int{}},
		// Failed rows are labelled gaps in the bars; no latency to draw.
		{"allFailed", allFail, map[string]int{"throughput-warm": 5, "throughput-cold": 2, "cpu-warm": 5, "cpu-cold": 2}},
		{"nonFinite", nonFinite, smallSweepCharts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := renderHTML(t, tc.r)
			checkCharts(t, doc, tc.want)
			if !strings.HasSuffix(doc, "</html>\n") {
				t.Error("page not finished")
			}
			for _, s := range []string{"NaN", "Inf"} {
				if strings.Contains(doc, s) {
					t.Errorf("%s in the page", s)
				}
			}
			if len(tc.r.Results) == 0 && !strings.Contains(doc, "No results.") {
				t.Error(`no "No results." in an empty report`)
			}
			if tc.name == "allFailed" && strings.Count(doc, ">error</text>") != len(tc.r.Results)*2 {
				t.Errorf("%d error gaps, want %d (throughput and CPU)", strings.Count(doc, ">error</text>"), len(tc.r.Results)*2)
			}
		})
	}
}

// An engine has the same colour in every chart, and its fio twin a variant
// of it.
func TestHTMLColours(t *testing.T) {
	doc := renderHTML(t, smallSweep())
	colour := map[string]string{"pread": "#f28e2b", "fio psync": "#f28e2b", "mmap": "#e15759", "fio mmap": "#e15759",
		"io_uring": "#8e63b5", "fio io_uring": "#8e63b5", "readv": "#59a14f", "fio pvsync": "#59a14f"}
	n := 0
	for _, c := range charts(t, doc) {
		for i, name := range c.series {
			n++
			if want, ok := colour[name]; !ok {
				t.Errorf("chart %s: unexpected series %q", c.id, name)
			} else if !strings.Contains(c.colours[i], want) {
				t.Errorf("chart %s: series %q drawn without its colour %s (%s)", c.id, name, want, c.colours[i])
			}
		}
	}
	if n == 0 {
		t.Fatal("no series found")
	}
	// fio bars are hatched with their engine's colour.
	if !strings.Contains(doc, `<pattern id="h-throughput-warm-1"`) || !strings.Contains(doc, `fill="url(#h-throughput-warm-1)"`) {
		t.Error("fio psync bars are not hatched")
	}
}

// Engines with no assigned colour get one each; a fio row that does not
// name its twin still finds it; no tool means iopath.
func TestHTMLUnknownEngines(t *testing.T) {
	r := smallSweep()
	var rows []bench.Result
	for _, res := range r.Results {
		switch {
		case res.Engine == "pread" && res.Tool != bench.ToolFio:
			res.Engine, res.Tool = "foo", ""
		case res.Engine == "psync":
			res.Twin = ""
		case res.Engine == "pvsync":
			res.Engine, res.Twin = "libaio", ""
		}
		rows = append(rows, res)
	}
	r.Results = rows
	doc := renderHTML(t, r)
	for _, c := range charts(t, doc) {
		for i, name := range c.series {
			want := map[string]string{"foo": hExtraColors[0], "fio psync": hEngineColors["pread"],
				"fio libaio": hExtraColors[1], "mmap": hEngineColors["mmap"]}[name]
			if want != "" && !strings.Contains(c.colours[i], want) {
				t.Errorf("chart %s: series %q without colour %s (%s)", c.id, name, want, c.colours[i])
			}
		}
	}
	checkCharts(t, doc, smallSweepCharts)
}

// A tree's page: files/s and CPU per 1k files, a group per cache state
// and a bar per engine (a gap for the failed and the interrupted row),
// then BenchDoc's table with every row; offline like every page.
func TestHTMLTree(t *testing.T) {
	r := treeSample()
	doc := renderHTML(t, r)
	checkOffline(t, doc)
	checkCharts(t, doc, map[string]int{"files-per-s": 5, "cpu-per-1k-files": 5})
	fps := svgOf(t, doc, "files-per-s")
	for _, want := range []string{">warm</text>", ">cold</text>", ">error</text>", ">not run</text>", `class="whisker"`, `class="noisy"`,
		`fill="` + hEngineColors["io_uring"] + `"`} {
		if !strings.Contains(fps, want) {
			t.Errorf("files/s chart lacks %s", want)
		}
	}
	body := doc[strings.Index(doc, "<tbody>"):strings.Index(doc, "</tbody>")]
	if n := strings.Count(body, "<tr"); n != len(r.Results) {
		t.Errorf("%d table rows, want %d", n, len(r.Results))
	}
	if n := strings.Count(body, `<td class="error"`); n != 2 {
		t.Errorf("%d error cells, want 2", n)
	}
	for _, want := range []string{"iopath bench --tree: /var/tmp/tree", "100000 files", "/var/tmp/tree.tar.zst", r.Command,
		`<span class="sw" style="background:` + hEngineColors["pool"] + `"></span>pool ×64`, "<th>files/s</th>", "<dt>CPU-s/1k</dt>",
		r.Notes[0], "2 files could not be opened"} {
		if !strings.Contains(doc, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestHTMLDeterministic(t *testing.T) {
	a, b := renderHTML(t, bigSweep()), renderHTML(t, bigSweep())
	if a != b {
		t.Error("two renderings of the same report differ")
	}
}

func TestHTMLWriterError(t *testing.T) {
	if err := HTML(failWriter{}, sample()); err == nil {
		t.Error("no error from a failing writer")
	}
}

func TestHTMLScales(t *testing.T) {
	if got := hLinTicks(7.91); !slices.Equal(got, []float64{0, 2, 4, 6, 8}) {
		t.Errorf("hLinTicks(7.91) = %v", got)
	}
	if got := hLinTicks(0); len(got) != 6 || got[5] != 1 {
		t.Errorf("hLinTicks(0) = %v", got)
	}
	ticks, major := hLogTicks(820, 1_250_000_000)
	var labels []string
	for i, v := range ticks {
		if major[i] {
			labels = append(labels, hLatencyTick(v))
		}
	}
	if want := []string{"100ns", "1µs", "10µs", "100µs", "1ms", "10ms", "100ms", "1s", "10s"}; !slices.Equal(labels, want) {
		t.Errorf("latency ticks %v, want %v", labels, want)
	}
	ticks, major = hLogTicks(15_000, 40_000)
	labels = nil
	for i, v := range ticks {
		if major[i] {
			labels = append(labels, hLatencyTick(v))
		}
	}
	if want := []string{"10µs", "20µs", "50µs", "100µs"}; !slices.Equal(labels, want) {
		t.Errorf("latency ticks %v, want %v", labels, want)
	}
	if hSlug("seq · 128KiB · 1 worker") != "seq-128kib-1-worker" {
		t.Error(hSlug("seq · 128KiB · 1 worker"))
	}
}

// BenchmarkHTML renders the 4×4 sweep of 5 engines with fio twins.
func BenchmarkHTML(b *testing.B) {
	r := bigSweep()
	b.ReportAllocs()
	for b.Loop() {
		if err := HTML(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONBig renders the same report as JSON.
func BenchmarkJSONBig(b *testing.B) {
	r := bigSweep()
	b.ReportAllocs()
	for b.Loop() {
		if err := JSON(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// warmOnly is smallSweep without its cold rows: one cache state, so that
// the sweep sections hold one chart each (the case in which a one-column
// grid once stretched a chart to twice its size).
func warmOnly() *bench.Report {
	r := smallSweep()
	var rows []bench.Result
	for _, res := range r.Results {
		if res.Cache == "warm" {
			rows = append(rows, res)
		}
	}
	r.Results = rows
	return r
}

// pages renders one of each HTML page this package writes.
func pages(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range htmlFixtures {
		out[f.name] = renderHTML(t, f.report())
	}
	out["warmOnly"] = renderHTML(t, warmOnly())
	out["tree"] = renderHTML(t, treeSample())
	out["net"] = netRenderHTML(t, netBig())
	var b bytes.Buffer
	if err := NetFileHTML(&b, NetFilePage{FileServe: &netresult.FileServeReport{Results: fileServeFixture()}, Writev: &netresult.WritevReport{Results: writevFixture()}}); err != nil {
		t.Fatal(err)
	}
	out["netfile"] = b.String()
	return out
}

var (
	svgTagRe   = regexp.MustCompile(`<svg class="chart"[^>]*>`)
	svgAttrRe  = regexp.MustCompile(`\s(width|height|viewBox|data-chart)="([^"]*)"`)
	gridOpenRe = regexp.MustCompile(`<div class="grid">`)
)

// Text is the same size in every chart of a page: each chart is drawn at
// its natural size (width and height are its viewBox's, and the
// stylesheet gives svg.chart no size), so that one unit is one CSS pixel
// in all of them; and each fits the box the page lays it out in (a grid
// cell, or the full width).
func TestHTMLChartScale(t *testing.T) {
	for name, doc := range pages(t) {
		t.Run(name, func(t *testing.T) {
			css := doc[strings.Index(doc, "<style>"):strings.Index(doc, "</style>")]
			for _, rule := range regexp.MustCompile(`(?m)^[^{}]*svg[^{}]*\{[^}]*\}`).FindAllString(css, -1) {
				if r := strings.ReplaceAll(rule, "max-width:none", ""); strings.Contains(r, "width") || strings.Contains(r, "height") {
					t.Errorf("the stylesheet sizes the charts: %s", rule)
				}
			}
			n := 0
			for _, loc := range svgTagRe.FindAllStringIndex(doc, -1) {
				n++
				a := map[string]string{}
				for _, m := range svgAttrRe.FindAllStringSubmatch(doc[loc[0]:loc[1]], -1) {
					a[m[1]] = m[2]
				}
				vb := strings.Fields(a["viewBox"])
				if len(vb) != 4 || vb[0] != "0" || vb[1] != "0" || vb[2] != a["width"] || vb[3] != a["height"] {
					t.Errorf("chart %s: width %q height %q, viewBox %q: not drawn at its natural size", a["data-chart"], a["width"], a["height"], a["viewBox"])
					continue
				}
				var w float64
				fmt.Sscan(a["width"], &w)
				// In a grid when the last <div class="grid"> before it is
				// not closed yet.
				limit := chartMaxW
				if g := gridOpenRe.FindAllStringIndex(doc[:loc[0]], -1); len(g) > 0 {
					if !strings.Contains(doc[g[len(g)-1][0]:loc[0]], "</div>\n</section>") {
						limit = chartHalfW
					}
				}
				if w > limit && !strings.HasPrefix(a["data-chart"], "integrity") {
					t.Errorf("chart %s is %v wide, over the %v the page lays it out in", a["data-chart"], w, limit)
				}
			}
			if n == 0 && name != "zero" {
				t.Error("no chart")
			}
		})
	}
}

// The signed-percent chart (compare's) draws a bar right of zero for a
// gain, left for a loss, a band for the noise, and says when it has no
// row.
func TestHTMLSignedChart(t *testing.T) {
	svg := hSignedChart("compare-throughput", "change", []hSigned{
		{label: "pread warm", value: "+12.0%", class: "good", pct: 12, band: 3},
		{label: "mmap warm", value: "-30.0%", class: "bad", pct: -30, band: -1},
		{label: "readv warm", value: "+1.0%", class: "noise", pct: 1, band: 4},
	})
	checkCharts(t, svg, map[string]int{"compare-throughput": 3})
	zero := regexp.MustCompile(`<line x1="([0-9.]+)" y1="[0-9.]+" x2="[0-9.]+" y2="[0-9.]+" class="baseline"/>`).FindStringSubmatch(svg)
	if zero == nil {
		t.Fatalf("no zero line:\n%s", svg)
	}
	var z float64
	fmt.Sscan(zero[1], &z)
	for _, tc := range []struct {
		class string
		right bool
	}{{"good", true}, {"bad", false}, {"noise", true}} {
		m := regexp.MustCompile(`<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="[0-9.]+" class="` + tc.class + `"/>`).FindStringSubmatch(svg)
		if m == nil {
			t.Fatalf("no %s bar", tc.class)
		}
		var x, w float64
		fmt.Sscan(m[1], &x)
		fmt.Sscan(m[2], &w)
		if right := x >= z-0.1; right != tc.right || w < 1 {
			t.Errorf("%s bar at x %v width %v, zero at %v: right of zero %v, want %v", tc.class, x, w, z, right, tc.right)
		}
	}
	if n := strings.Count(svg, `class="band"`); n != 2 {
		t.Errorf("%d noise bands, want 2", n)
	}
	for _, want := range []string{">-50%<", ">+50%<", ">0%<"} { // the axis rounds 30% up to 50%
		if !strings.Contains(svg, want) {
			t.Errorf("no tick %s", want)
		}
	}
	empty := hSignedChart("c", "change", nil)
	checkCharts(t, empty, map[string]int{"c": 0})
	if !strings.Contains(empty, "no row was measured in both reports") {
		t.Error("the empty chart does not say so")
	}
}

// A Doc is drawn as the text table draws it with --wide: every column, a
// min–max beside figures that have one, group titles, a failed row's
// error after its name; then its notes and legend. A row's name has its
// series' swatch, a noisy row says why, a headline figure is bold and a
// verdict coloured.
func TestHTMLDocSections(t *testing.T) {
	d := sampleDoc()
	d.Columns[1].Headline = true
	d.Columns = append(d.Columns, Column{Key: "integrity", Title: "integrity"})
	for gi, g := range d.Groups {
		for ri := range g.Rows {
			v := []string{"ok", "BAD: 5 B lost", "", "ok"}[gi*3+ri]
			d.Groups[gi].Rows[ri].Cells = append(d.Groups[gi].Rows[ri].Cells, TextCell(v))
		}
	}
	d.Groups[1].Rows[0].Noisy = "another process used 38% of a core"
	series, _ := nameSeries([]string{"epoll", "fio", "io_uring"})
	series[1].fio = true
	var b bytes.Buffer
	if err := renderPage(&b, page{Title: "doc", Sections: docSections("results", "Results", d, series...)}); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	checkOffline(t, doc)
	for _, want := range []string{
		`<th class="l">engine</th><th>QPS</th><th class="l">min–max</th><th>P99 µs</th><th>threads</th><th>integrity</th>`,
		`<tr class="group"><th colspan="6">4 KiB</th></tr>`,
		`<tr><td class="l"><span class="sw" style="background:#59a14f"></span>epoll</td><td class="strong">100</td><td class="l muted">(90–120)</td><td>51.2</td><td>1</td><td class="ok">ok</td></tr>`,
		`<tr class="sub"><td class="l"><span class="sw" style="background:repeating-linear-gradient(`,
		`<td class="bad">BAD: 5 B lost</td>`,
		`<tr class="failed"><td class="l"><span class="sw" style="background:#8e63b5"></span>io_uring</td><td class="error" colspan="5">failed: EPERM</td></tr>`,
		`<td class="l" title="noisy runs (kept in the figures): another process used 38% of a core">net</td>`,
		`<section id="results-notes">`, `<dt>QPS</dt><dd>requests per second</dd>`,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if s := docSeries(series, "io_uring qd32"); s != series[2] {
		t.Errorf("io_uring qd32 is drawn in %v", s)
	}
	if s := docSeries(series, "epollx"); s != nil {
		t.Errorf("epollx is drawn in %s", s.name)
	}
}
