package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
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
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/perf"
)

// --- fixtures

// netRun is one measured window of 2 s.
func netRun(qps, serverUs, clientUs float64, size int, p50, p99, p999, maxNs int64) netresult.Run {
	req := int64(qps * 2)
	return netresult.Run{Requests: req, Bytes: req * int64(size), ElapsedNs: 2e9, QPS: qps, MBps: qps * float64(size) / 1e6,
		ServerCPUNs: int64(serverUs * 1e3 * float64(req)), ClientCPUNs: int64(clientUs * 1e3 * float64(req)),
		ServerCPUPerReqUs: serverUs, ClientCPUPerReqUs: clientUs,
		P50Ns: p50, P90Ns: (p50 + p99) / 2, P99Ns: p99, P999Ns: p999, MaxNs: maxNs, DialNs: 120e6}
}

// netPoint makes a point of runs, with the medians and sums the runner
// would compute.
func netPoint(engine string, conns, size int, mode string, runs ...netresult.Run) netresult.Point {
	p := netresult.Point{Engine: engine, Conns: conns, Size: size, Mode: mode, Runs: runs}
	med := func(f func(r *netresult.Run) float64) float64 {
		var v []float64
		for i := range runs {
			v = append(v, f(&runs[i]))
		}
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	p.QPS = med(func(r *netresult.Run) float64 { return r.QPS })
	p.MBps = med(func(r *netresult.Run) float64 { return r.MBps })
	p.ServerCPUPerReqUs = med(func(r *netresult.Run) float64 { return r.ServerCPUPerReqUs })
	p.ClientCPUPerReqUs = med(func(r *netresult.Run) float64 { return r.ClientCPUPerReqUs })
	p.P50Ns = int64(med(func(r *netresult.Run) float64 { return float64(r.P50Ns) }))
	p.P99Ns = int64(med(func(r *netresult.Run) float64 { return float64(r.P99Ns) }))
	p.P999Ns = int64(med(func(r *netresult.Run) float64 { return float64(r.P999Ns) }))
	p.MaxNs = int64(med(func(r *netresult.Run) float64 { return float64(r.MaxNs) }))
	for _, r := range runs {
		p.Corrupted += r.Corrupted
		p.Lost += r.Lost
		p.ConnErrors += r.ConnErrors
	}
	return p
}

var netMachineFixture = features.Machine{Kernel: "6.18.44", Arch: "amd64", CPUModel: "Intel(R) Xeon(R) Processor",
	Cores: 2, MemBytes: 8 << 30, PageSize: 4096, IOURing: "available", GoVersion: "go1.26.8", IopathVersion: "devel"}

// netSample is 3 engines × 2 points × 2 runs, with a skipped engine, a
// point that failed (io_uring at 16KiB) and corrupted bytes (epoll at
// 16KiB, run 2). The points are not in display order: the renderers
// order them.
func netSample() *netresult.Report {
	const ms = 1_000_000
	bad := netRun(64_000, 17.9, 13.9, 16384, 15*ms, 29*ms, 40*ms, 71*ms)
	bad.Corrupted = 4096
	return &netresult.Report{
		SchemaVersion: netresult.EchoSchemaVersion,
		Tool:          netTool,
		Version:       "devel",
		Command:       "iopath net bench --engines net,epoll,io_uring,io_uring-sqpoll --conns 1000 --size 64,16k --runs 2 --duration 2s",
		Started:       time.Date(2026, 11, 23, 9, 15, 2, 0, time.UTC),
		Machine:       netMachineFixture,
		Config: netresult.Config{Engines: []string{"net", "epoll", "io_uring", "io_uring-sqpoll"}, Conns: []int{1000},
			Sizes: []int{64, 16384}, Modes: []string{"pingpong"}, DurationNs: 2e9, WarmupNs: 5e8, Runs: 2,
			ServerCPUs: []int{0}, ClientCPUs: []int{1}, Addr: "127.0.0.1:0"},
		Points: []netresult.Point{
			{Engine: "io_uring", Conns: 1000, Size: 16384, Mode: "pingpong",
				Err: "server child exited: signal: killed\n(out of memory?)"},
			netPoint("net", 1000, 16384, "pingpong",
				netRun(61_000, 21.0, 14.2, 16384, 16*ms, 31*ms, 44*ms, 80*ms),
				netRun(63_000, 20.2, 13.8, 16384, 15*ms, 30*ms, 42*ms, 95*ms)),
			netPoint("epoll", 1000, 16384, "pingpong",
				netRun(66_000, 17.1, 14.0, 16384, 14*ms, 27*ms, 38*ms, 60*ms), bad),
			netPoint("io_uring", 1000, 64, "pingpong",
				netRun(197_000, 5.3, 4.7, 64, 4_900_000, 8_900_000, 12_000_000, 20_500_000),
				netRun(201_000, 4.9, 4.6, 64, 4_800_000, 8_500_000, 11_600_000, 19_900_000)),
			netPoint("net", 1000, 64, "pingpong",
				netRun(168_000, 10.1, 5.2, 64, 5_500_000, 11_800_000, 17_900_000, 30_200_000),
				netRun(176_000, 9.5, 5.0, 64, 5_700_000, 12_400_000, 18_100_000, 41_000_000)),
			netPoint("epoll", 1000, 64, "pingpong",
				netRun(181_000, 6.4, 4.9, 64, 5_300_000, 9_600_000, 14_000_000, 22_000_000),
				netRun(185_000, 6.0, 4.8, 64, 5_200_000, 9_200_000, 13_100_000, 25_000_000)),
		},
		Skipped: []netresult.Skip{{Engine: "io_uring-sqpoll", Reason: "SQPOLL: io_uring_setup: operation not permitted"}},
		Notes: []string{
			"server CPU is read from /proc/PID/stat at 10 ms resolution",
			"loopback: the kernel copies every byte anyway, so SEND_ZC cannot win here",
		},
	}
}

// netBig is the full matrix of the issue for one pinned machine: 3
// engines × conns {1, 100, 1000, 10000} × sizes {64B, 1KiB, 16KiB} ×
// modes {pingpong, stream}, 3 runs each; stream measures no latency.
func netBig() *netresult.Report {
	r := &netresult.Report{SchemaVersion: netresult.EchoSchemaVersion, Tool: netTool, Version: "devel",
		Command: "iopath net bench --modes pingpong,stream", Machine: netMachineFixture,
		Started: time.Date(2026, 11, 23, 9, 15, 2, 0, time.UTC),
		Config: netresult.Config{Engines: []string{"net", "epoll", "io_uring"}, Conns: []int{1, 100, 1000, 10000},
			Sizes: []int{64, 1024, 16384}, Modes: []string{"pingpong", "stream"}, DurationNs: 5e9, WarmupNs: 1e9,
			Runs: 3, PinNote: "2 CPUs: server and load generator share them", Addr: "127.0.0.1:0"}}
	cost := map[string]float64{"net": 1, "epoll": 0.7, "io_uring": 0.6}
	for _, mode := range r.Config.Modes {
		for _, size := range r.Config.Sizes {
			for _, conns := range r.Config.Conns {
				for _, e := range r.Config.Engines {
					base := (3 + float64(size)/2048) * cost[e] * (1 + math.Log10(float64(conns))/8)
					q := 40_000 / cost[e] * (1 + math.Log10(float64(conns))) / (1 + float64(size)/8192)
					var runs []netresult.Run
					for i, f := range []float64{0.97, 1, 1.04} {
						lat := int64(float64(conns) * 1e9 / q * f)
						run := netRun(q*f, base/f, base/2, size, lat, 3*lat, 5*lat, 9*lat+int64(i))
						if mode == "stream" {
							run.P50Ns, run.P90Ns, run.P99Ns, run.P999Ns, run.MaxNs = 0, 0, 0, 0, 0
						}
						runs = append(runs, run)
					}
					r.Points = append(r.Points, netPoint(e, conns, size, mode, runs...))
				}
			}
		}
	}
	return r
}

func netRender(t testing.TB, format string, r *netresult.Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteNet(&b, format, r, DocOptions{}); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return b.Bytes()
}

func netRenderHTML(t testing.TB, r *netresult.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := NetHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// --- text formats

func TestNetGolden(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		wide         bool
	}{
		{"table", "table.golden", false}, {"table", "table_wide.golden", true},
		{"markdown", "markdown.golden.md", false}, {"csv", "csv.golden.csv", false}, {"json", "report.golden.json", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteNet(&b, tc.format, netSample(), DocOptions{Wide: tc.wide}); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("net", tc.file), b.Bytes())
		})
	}
}

// docCell is the cell of d's row named engine under the group titled
// group, in the column keyed key.
func docCell(t *testing.T, d *Doc, group, engine, key string) (Cell, Row) {
	t.Helper()
	col := slices.IndexFunc(d.Columns, func(c Column) bool { return c.Key == key })
	if col < 0 {
		t.Fatalf("no column %q in %v", key, d.Columns)
	}
	for _, g := range d.Groups {
		if g.Title != group {
			continue
		}
		for _, r := range g.Rows {
			if r.Cells[0].Text == engine {
				if col >= len(r.Cells) {
					return Cell{}, r
				}
				return r.Cells[col], r
			}
		}
	}
	t.Fatalf("no row %s under %q", engine, group)
	return Cell{}, Row{}
}

// The adapter orders rows itself: points by mode, size and connections,
// engines as the command named them.
func TestNetOrder(t *testing.T) {
	r := netSample()
	want := map[string][]byte{}
	for _, f := range KindFormats {
		if f != "json" {
			want[f] = netRender(t, f, r)
		}
	}
	slices.Reverse(r.Points)
	for f, w := range want {
		if got := netRender(t, f, r); !bytes.Equal(got, w) {
			t.Errorf("%s depends on the order of the points:\n%s", f, got)
		}
	}
	var got []string
	for _, g := range NetDoc(r).Groups {
		got = append(got, g.Title)
		for _, row := range g.Rows {
			got = append(got, row.Cells[0].Text)
		}
	}
	wantRows := []string{"1000 conns × 64B × pingpong", "net", "epoll", "io_uring", "1000 conns × 16KiB × pingpong", "net", "epoll", "io_uring"}
	if !slices.Equal(got, wantRows) {
		t.Errorf("groups and rows %q, want %q", got, wantRows)
	}
}

func TestNetDoc(t *testing.T) {
	d := NetDoc(netSample())
	const p64, p16k = "1000 conns × 64B × pingpong", "1000 conns × 16KiB × pingpong"
	// io_uring at 64B: 5.1 µs (4.9–5.3) against epoll's 6.2 and net's 9.8.
	if c, _ := docCell(t, d, p64, "io_uring", "server_cpu_us_per_req"); c.Value != 5.1 || c.Min != 4.9 || c.Max != 5.3 || len(c.Runs) != 2 {
		t.Errorf("io_uring server CPU %+v, want 5.1 (4.9–5.3) over 2 runs", c)
	}
	for _, tc := range []struct {
		engine, key string
		want        float64
	}{
		// A ratio is the median of the runs' ratios, run by run.
		{"io_uring", "server_cpu_vs_epoll", (5.3/6.4 + 4.9/6.0) / 2}, {"io_uring", "server_cpu_vs_net", (5.3/10.1 + 4.9/9.5) / 2},
		{"epoll", "server_cpu_vs_net", (6.4/10.1 + 6.0/9.5) / 2}, {"io_uring", "qps", 199_000}, {"io_uring", "p99_us", 8700},
	} {
		if c, _ := docCell(t, d, p64, tc.engine, tc.key); math.Abs(c.Value-tc.want) > 1e-9 {
			t.Errorf("%s %s = %v, want %v", tc.engine, tc.key, c.Value, tc.want)
		}
	}
	// A reference has no ratio to itself.
	if c, _ := docCell(t, d, p64, "epoll", "server_cpu_vs_epoll"); c.Num || c.Text != "" {
		t.Errorf("epoll vs epoll %+v, want an empty cell", c)
	}
	// Every figure built from runs carries them, for compare's test.
	if c, _ := docCell(t, d, p64, "net", "qps"); !slices.Equal(c.Runs, []float64{168_000, 176_000}) {
		t.Errorf("net QPS runs %v", c.Runs)
	}
	var heads []string
	for _, c := range d.Columns {
		if c.Headline {
			heads = append(heads, c.Key)
		}
	}
	if !slices.Equal(heads, []string{"qps", "p99_us", "server_cpu_us_per_req"}) {
		t.Errorf("headline columns %q", heads)
	}
	if c, _ := docCell(t, d, p16k, "epoll", "integrity"); c.Text != "BAD" {
		t.Errorf("epoll 16KiB integrity %q", c.Text)
	}
	if c, _ := docCell(t, d, p16k, "epoll", "corrupted_bytes"); c.Value != 4096 {
		t.Errorf("epoll 16KiB corrupted %v", c.Value)
	}
	if _, row := docCell(t, d, p16k, "io_uring", "engine"); row.Err != "error: server child exited: signal: killed (out of memory?)" {
		t.Errorf("failed row %q", row.Err)
	}
	out := string(netRender(t, "table", netSample()))
	for _, want := range []string{
		"pinning    server on CPU 0, load generator on CPU 1\n",
		"integrity  FAILED: see the notes\n",
		"  - skipped io_uring-sqpoll: SQPOLL: io_uring_setup: operation not permitted\n",
		"runs       2 runs per engine and point of 2s each, after a 500ms warm-up\n",
		"  - INTEGRITY FAILURE: 4096 CORRUPTED AND 0 LOST BYTES in 1 of 10 runs: epoll at 1000 conns",
		"  - 1 point not measured (error): not verified\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	// Clean runs say so in the header.
	r := netSample()
	r.Points[2] = netPoint("epoll", 1000, 16384, "pingpong", r.Points[2].Runs[0])
	r.Points[0] = netPoint("io_uring", 1000, 16384, "pingpong", r.Points[1].Runs...)
	out = string(netRender(t, "table", r))
	if !strings.Contains(out, "\nintegrity  0 corrupted or lost bytes in 11 runs\n") || strings.Contains(out, "FAILED") {
		t.Errorf("clean report does not say so:\n%s", out)
	}
	if c, _ := docCell(t, NetDoc(r), p16k, "epoll", "runs"); c.Value != 1 {
		t.Errorf("a point with fewer runs than asked: runs %v", c.Value)
	}

	// Connection errors are loud too, and no pinning is stated.
	r = netSample()
	r.Points[4].Runs[1].ConnErrors = 3
	r.Points[4].ConnErrors = 3
	r.Config.ServerCPUs, r.Config.ClientCPUs = nil, nil
	r.Config.PinNote = "sched_setaffinity: operation not permitted"
	out = string(netRender(t, "table", r))
	for _, want := range []string{"3 CONNECTION ERRORS in 1 of 10 runs: net at 1000 conns × 64B × pingpong: 3",
		"pinning    not pinned: sched_setaffinity: operation not permitted"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if c, _ := docCell(t, NetDoc(r), p64, "net", "conn_errors"); c.Value != 3 {
		t.Errorf("net conn errors %v", c.Value)
	}

	// A point an interruption left unmeasured says so, not "error".
	r = netSample()
	r.Points[0].Err = netresult.NotRun
	if _, row := docCell(t, NetDoc(r), p16k, "io_uring", "engine"); row.Err != "not run: interrupted" {
		t.Errorf("interrupted row %q", row.Err)
	}
}

// Without epoll or net there is nothing to divide by: no ratio column.
func TestNetTableNoReference(t *testing.T) {
	r := netSample()
	var pts []netresult.Point
	for _, p := range r.Points {
		if p.Engine != "epoll" {
			pts = append(pts, p)
		}
	}
	r.Points = pts
	out := string(netRender(t, "table", r))
	if strings.Contains(out, "vs epoll") || !strings.Contains(out, "vs net") {
		t.Errorf("columns:\n%s", out)
	}
	// A reference that failed gives no ratio, not a ratio to zero.
	r = netSample()
	r.Points[1].Err, r.Points[1].ServerCPUPerReqUs = "dial: connection refused", 0
	if c, _ := docCell(t, NetDoc(r), "1000 conns × 16KiB × pingpong", "epoll", "server_cpu_vs_net"); !c.Num || !math.IsNaN(c.Value) {
		t.Errorf("epoll against a failed net: %+v, want no figure", c)
	}
}

// The default table fits a terminal of 100 columns with every engine,
// the longest names and the largest figures; only the command line,
// which is copied whole, may be longer.
func TestNetTableWidth(t *testing.T) {
	r := netBig()
	r.Config.Engines = append(r.Config.Engines, "io_uring-sqpoll")
	for _, p := range slices.Clone(r.Points) {
		if p.Engine == "io_uring" {
			p.Engine = "io_uring-sqpoll"
			for i := range p.Runs {
				p.Runs[i].QPS *= 10
			}
			p.QPS *= 10
			r.Points = append(r.Points, p)
		}
	}
	for _, wide := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteNet(&b, "table", r, DocOptions{Wide: wide}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "io_uring-sqpoll") {
			t.Fatalf("no io_uring-sqpoll row:\n%s", b.String())
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if width(line) > docWrap && !wide && !strings.HasPrefix(line, "command") {
				t.Errorf("line wider than %d columns: %q", docWrap, line)
			}
		}
		if strings.Contains(b.String(), "P50 µs") != wide {
			t.Errorf("wide %v: the wide columns are shown %v", wide, !wide)
		}
	}
}

func TestNetMarkdown(t *testing.T) {
	r := netSample()
	r.Points[1].Err = "a | b *c*"
	out := string(netRender(t, "markdown", r))
	if !regexp.MustCompile(`\n\| net \|[ |]*\| error: a \\\| b \\\*c\\\* \|\n`).MatchString(out) {
		t.Errorf("error row not escaped:\n%s", out)
	}
	if !strings.Contains(out, "- INTEGRITY FAILURE: 4096 CORRUPTED") {
		t.Errorf("integrity failure not in the notes:\n%s", out)
	}
}

func TestNetCSV(t *testing.T) {
	r := netSample()
	recs, err := csv.NewReader(bytes.NewReader(netRender(t, "csv", r))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(r.Points) {
		t.Fatalf("%d records, want %d", len(recs), 1+len(r.Points))
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	// ratio is the CSV's figure for the median of two runs' ratios.
	ratio := func(a1, b1, a2, b2 float64) string { return strconv.FormatFloat((a1/b1+a2/b2)/2, 'f', -1, 64) }
	// Each record is one engine at one point, in the table's order.
	want := []struct{ engine, size, vsEpoll, corrupted, err string }{
		{"net", "64", ratio(10.1, 6.4, 9.5, 6.0), "0", ""},
		{"epoll", "64", "", "0", ""},
		{"io_uring", "64", ratio(5.3, 6.4, 4.9, 6.0), "0", ""},
		{"net", "16384", ratio(21.0, 17.1, 20.2, 17.9), "0", ""},
		{"epoll", "16384", "", "4096", ""},
		{"io_uring", "", "", "", "error: server child exited: signal: killed (out of memory?)"},
	}
	for i, w := range want {
		rec := recs[i+1]
		got := []string{rec[col["engine"]], rec[col["size_bytes"]], rec[col["server_cpu_vs_epoll"]], rec[col["corrupted_bytes"]], rec[col["error"]]}
		if !slices.Equal(got, []string{w.engine, w.size, w.vsEpoll, w.corrupted, w.err}) {
			t.Errorf("record %d: %q, want %q", i+1, got, w)
		}
	}
	if rec := recs[3]; rec[col["server_cpu_us_per_req_min"]] != "4.9" || rec[col["server_cpu_us_per_req_max"]] != "5.3" ||
		rec[col["qps"]] != "199000" || rec[col["p99_us"]] != "8700" || rec[col["runs"]] != "2" {
		t.Errorf("io_uring 64B record %q", rec)
	}
	// CSV names that are JSON keys of a point mean the same.
	keys := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[netresult.Point]()) {
		keys[strings.Split(f.Tag.Get("json"), ",")[0]] = true
	}
	for _, k := range []string{"engine", "conns", "size_bytes", "mode", "qps", "mb_per_s", "server_cpu_us_per_req",
		"client_cpu_us_per_req", "corrupted_bytes", "lost_bytes", "conn_errors", "error"} {
		if _, ok := col[k]; !keys[k] || !ok {
			t.Errorf("%q: JSON key %v, CSV column %v", k, keys[k], ok)
		}
	}
}

func TestNetJSONRoundTrip(t *testing.T) {
	r := netSample()
	roundTrip(t, netRender(t, "json", r), LoadNetJSON, r)
}

func TestNetJSONNonFinite(t *testing.T) {
	r := netSample()
	r.Points[3].QPS = math.NaN()
	r.Points[3].ServerCPUPerReqUs = math.Inf(1)
	r.Points[4].Runs[0].MBps = math.Inf(-1)
	out := netRender(t, "json", r)
	var back netresult.Report
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if back.Points[3].QPS != 0 || back.Points[3].ServerCPUPerReqUs != 0 || back.Points[4].Runs[0].MBps != 0 {
		t.Error("non-finite floats were not written as 0")
	}
	if back.Points[3].MBps != r.Points[3].MBps || !math.IsNaN(r.Points[3].QPS) {
		t.Error("finite floats changed, or the report was modified")
	}
	for _, f := range []string{"table", "markdown", "csv"} {
		if s := string(netRender(t, f, r)); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
			t.Errorf("%s shows NaN or Inf:\n%s", f, s)
		}
	}
}

func TestLoadNetJSONErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	_, err := LoadNetJSON(missing)
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}

	var fileReport bytes.Buffer
	if err := JSON(&fileReport, sample()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"empty", " \n", "empty file"},
		{"text", "QPS 172k\n", "not JSON"},
		{"truncated", `{"tool": "iopath net bench", "schema_version": 1, "points": [`, "not JSON"},
		{"array", `[1, 2]`, "JSON, but not an object"},
		{"no tool", `{"schema_version": 1}`, `its "tool" is not "iopath net bench"`},
		{"file report", fileReport.String(), "it is an iopath bench report of files"},
		{"no schema", `{"tool": "iopath net bench"}`, "no schema_version"},
		{"schema text", `{"tool": "iopath net bench", "schema_version": "1"}`, `schema_version "1" is not a positive whole number`},
		{"schema 0", `{"tool": "iopath net bench", "schema_version": 0}`, "schema_version 0 is not a positive whole number"},
		{"newer", `{"tool": "iopath net bench", "schema_version": 99}`, "schema_version 99 is newer than this iopath reads (" + strconv.Itoa(netresult.EchoSchemaVersion) + "); upgrade iopath"},
		{"bad field", `{"tool": "iopath net bench", "schema_version": 1, "points": {"x": 1}}`, "not a valid iopath net bench report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := LoadNetJSON(path)
			if err == nil || r != nil {
				t.Fatalf("no error (report %v)", r)
			}
			if !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q after the path", err, tc.want)
			}
		})
	}
}

func TestWriteNet(t *testing.T) {
	for _, bad := range []string{"html", "gobench", "", "TABLE"} {
		var b bytes.Buffer
		err := WriteNet(&b, bad, netSample(), DocOptions{})
		if err == nil || b.Len() > 0 {
			t.Fatalf("WriteNet(%q): err %v, wrote %d bytes", bad, err, b.Len())
		}
		if !strings.Contains(err.Error(), "valid formats are table, json, csv, markdown") {
			t.Errorf("WriteNet(%q): %v", bad, err)
		}
	}
}

func TestNetWriterError(t *testing.T) {
	for _, f := range KindFormats {
		if err := WriteNet(failWriter{}, f, netSample(), DocOptions{}); err == nil {
			t.Errorf("%s: no error from a failing writer", f)
		}
	}
	if err := NetHTML(failWriter{}, netSample()); err == nil {
		t.Error("html: no error from a failing writer")
	}
}

func TestNetEmpty(t *testing.T) {
	for _, r := range []*netresult.Report{{}, {Tool: netTool, Points: []netresult.Point{}, Config: netresult.Config{Engines: []string{"net"}}}} {
		for _, f := range KindFormats {
			if out := netRender(t, f, r); len(out) == 0 {
				t.Errorf("%s: nothing written for an empty report", f)
			}
		}
		out := string(netRender(t, "table", r))
		if !strings.Contains(out, "integrity  FAILED: see the notes") || !strings.Contains(out, "  - NO RUN WAS MEASURED") {
			t.Errorf("empty table:\n%s", out)
		}
		doc := netRenderHTML(t, r)
		checkCharts(t, doc, map[string]int{})
		if !strings.Contains(doc, "No results.") || !strings.Contains(doc, `<div class="banner bad"`) {
			t.Error("empty page does not say so")
		}
	}
}

// The renderers only read the report (run with -race).
func TestNetConcurrent(t *testing.T) {
	r := netSample()
	want := map[string][]byte{}
	for _, f := range KindFormats {
		want[f] = netRender(t, f, r)
	}
	want["html"] = []byte(netRenderHTML(t, r))
	var wg sync.WaitGroup
	for range 3 {
		for f := range want {
			wg.Go(func() {
				var b bytes.Buffer
				var err error
				if f == "html" {
					err = NetHTML(&b, r)
				} else {
					err = WriteNet(&b, f, r, DocOptions{})
				}
				if err != nil || !bytes.Equal(b.Bytes(), want[f]) {
					t.Errorf("%s: concurrent render differs (err %v)", f, err)
				}
			})
		}
	}
	wg.Wait()
}

func TestNetFormatHelpers(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{netCPUList([]int{0}), "0"}, {netCPUList([]int{1, 2, 3}), "1-3"}, {netCPUList([]int{0, 2, 4, 5}), "0,2,4,5"},
		{netCPUList([]int{0, 1, 2, 5, 7, 8, 9}), "0-2,5,7-9"},
		{netPinLine(netresult.Config{ServerCPUs: []int{0}, ClientCPUs: []int{1, 2, 3}}), "server on CPU 0, load generator on CPUs 1-3"},
		{netPinLine(netresult.Config{ServerCPUs: []int{3}}), "server on CPU 3, load generator not pinned"},
		{netPinLine(netresult.Config{PinNote: "1 CPU"}), "not pinned: 1 CPU"},
		{netPinLine(netresult.Config{Engines: []string{"net", "epoll", "io_uring"}, ServerCPUs: []int{1}, ClientCPUs: []int{0},
			ServerProcs: map[string]int{"net": 1, "epoll": 2, "io_uring": 2}}),
			"server on CPU 1 with GOMAXPROCS 1 (net) or 2 (epoll, io_uring), load generator on CPU 0"},
		{netPinLine(netresult.Config{Engines: []string{"epoll", "io_uring"}, ServerCPUs: []int{1}, ClientCPUs: []int{0},
			ServerProcs: map[string]int{"epoll": 2, "io_uring": 2, "skipped": 9}}),
			"server on CPU 1 with GOMAXPROCS 2, load generator on CPU 0"},
		{netPinLine(netresult.Config{Engines: []string{"epoll"}, ServerProcs: map[string]int{"epoll": 3}, PinNote: "1 CPU"}),
			"not pinned, server with GOMAXPROCS 3: 1 CPU"},
		{netKey{conns: 1, size: 1024, mode: "pipeline:8"}.label(), "1 conn × 1KiB × pipeline:8"},
		{netKey{conns: 10, size: 64, mode: "pingpong", loss: 0.1, lossSet: true}.label(), "10 conns × 64B × pingpong × 10% loss"},
		{netKey{conns: 10, size: 64, mode: "pingpong", lossSet: true}.label(), "10 conns × 64B × pingpong × 0% loss"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// --- HTML

var (
	netSampleCharts = map[string]int{"cpu-pingpong": 3, "qps-pingpong": 3, "p99-pingpong": 3, "integrity-pingpong": 3}
	netBigCharts    = map[string]int{"cpu-pingpong": 3, "cpu-stream": 3, "qps-pingpong": 3, "qps-stream": 3,
		"p99-pingpong": 3, "integrity-pingpong": 3, "integrity-stream": 3} // stream measures no latency
)

// netHTMLCase is a net report whose page the tests draw, with the
// charts it must hold.
type netHTMLCase struct {
	name string
	r    *netresult.Report
	want map[string]int
}

func netHTMLFixtures() []netHTMLCase {
	return []netHTMLCase{{"sample", netSample(), netSampleCharts}, {"big", netBig(), netBigCharts}}
}

func TestNetHTMLCharts(t *testing.T) {
	for _, tc := range netHTMLFixtures() {
		t.Run(tc.name, func(t *testing.T) {
			doc := netRenderHTML(t, tc.r)
			checkCharts(t, doc, tc.want)
			checkOffline(t, doc)
			if *htmlOut != "" {
				if err := os.WriteFile(filepath.Join(*htmlOut, "net_"+tc.name+".html"), []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// svgOf returns the markup of chart id in doc.
func svgOf(t *testing.T, doc, id string) string {
	t.Helper()
	i := strings.Index(doc, `data-chart="`+id+`"`)
	if i < 0 {
		t.Fatalf("no chart %q", id)
	}
	i = strings.LastIndex(doc[:i], "<svg")
	return doc[i : i+strings.Index(doc[i:], "</svg>")]
}

func TestNetHTMLContent(t *testing.T) {
	r := netSample()
	doc := netRenderHTML(t, r)
	body := doc[strings.Index(doc, "<tbody>"):strings.Index(doc, "</tbody>")]
	groups := len(NetDoc(r).Groups)
	if n := strings.Count(body, "<tr") - groups; n != len(r.Points) {
		t.Errorf("%d table rows, want %d", n, len(r.Points))
	}
	if n := strings.Count(body, `<td class="error"`); n != 1 {
		t.Errorf("%d error cells, want 1", n)
	}
	if n := strings.Count(body, `<td>4096</td><td>0</td><td>0</td><td class="bad">BAD</td>`); n != 1 {
		t.Errorf("%d bad integrity cells, want 1", n)
	}
	for _, want := range []string{r.Command, r.Machine.Kernel, r.Machine.CPUModel, r.Machine.GoVersion, "iopath</dt><dd>devel",
		"server on CPU 0, load generator on CPU 1", "2026-11-23 09:15:02 UTC", "conns 1000 × sizes 64B, 16KiB × modes pingpong",
		"<li>skipped io_uring-sqpoll: SQPOLL: io_uring_setup: operation not permitted</li>",
		`<div class="banner bad" role="status"><p>INTEGRITY FAILURE: 4096 CORRUPTED`,
		`<td class="strong">5.10</td><td class="l muted">(4.90–5.30)</td><td>0.82</td><td>0.52</td>`} {
		if !strings.Contains(doc, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, n := range r.Notes {
		if !strings.Contains(doc, n) {
			t.Errorf("page lacks the note %q", n)
		}
	}
	// The headline chart: a bar per measured row with a whisker, a gap
	// for the failed one.
	cpu := svgOf(t, doc, "cpu-pingpong")
	if n := strings.Count(cpu, `class="whisker"`); n != 5*3 {
		t.Errorf("%d whisker lines in the CPU chart, want 15", n)
	}
	if n := strings.Count(cpu, `class="errgap"`); n != 1 {
		t.Errorf("%d error gaps in the CPU chart, want 1", n)
	}
	for _, l := range []string{">1000</text>", ">conns</text>", ">64B</text>", ">16KiB</text>", ">size</text>", ">server CPU-µs per request</text>"} {
		if !strings.Contains(cpu, l) {
			t.Errorf("CPU chart lacks the label %s", l)
		}
	}
	// The latency chart is a log scale of dots.
	p99 := svgOf(t, doc, "p99-pingpong")
	if n := strings.Count(p99, "<circle"); n != 5 {
		t.Errorf("%d dots in the P99 chart, want 5", n)
	}
	if !strings.Contains(p99, ">10ms</text>") {
		t.Error("P99 axis lacks a 10ms tick")
	}
	// The integrity matrix: 4 ok tiles, 1 bad, 1 error.
	in := svgOf(t, doc, "integrity-pingpong")
	if ok, bad, e := strings.Count(in, `class="tl ok"`), strings.Count(in, `class="tl bad"`), strings.Count(in, ">error</text>"); ok != 4 || bad != 1 || e != 1 {
		t.Errorf("integrity tiles: %d ok, %d bad, %d error; want 4, 1, 1", ok, bad, e)
	}

	// A clean report has a green verdict.
	r.Points = r.Points[3:]
	if doc := netRenderHTML(t, r); !strings.Contains(doc, `<div class="banner ok" role="status"><p>Integrity: 0 corrupted or lost bytes in 6 runs</p>`) {
		t.Error("clean report has no green verdict")
	}
}

func TestNetHTMLEscaping(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	r := netSample()
	r.Command = `iopath net bench "` + evil + `" --x '"><img src=x onerror=alert(2)>`
	r.Machine.CPUModel = evil
	r.Notes = append(r.Notes, evil)
	r.Skipped[0].Reason = evil
	r.Config.PinNote = evil
	r.Points[0].Err = "died: " + evil + " & more"
	for i := range r.Points {
		if r.Points[i].Engine == "net" {
			r.Points[i].Engine = `<b onmouseover=alert(3)>net</b>`
		}
		if r.Points[i].Size == 64 {
			r.Points[i].Mode = `pp</text><script>alert(5)</script>`
		}
	}
	r.Config.Engines[0] = `<b onmouseover=alert(3)>net</b>`

	doc := netRenderHTML(t, r)
	checkEscaped(t, doc)
	for _, c := range charts(t, doc) { // still well-formed
		if c.declared != strings.TrimSpace(c.declared) || len(c.series) == 0 {
			t.Errorf("chart %q: %d series", c.id, len(c.series))
		}
	}
}

func TestNetHTMLNonFinite(t *testing.T) {
	r := netSample()
	r.Points[3].ServerCPUPerReqUs = math.NaN()
	r.Points[3].Runs[0].ServerCPUPerReqUs = math.Inf(1)
	r.Points[4].QPS = math.Inf(1)
	r.Points[5].Runs[1].QPS = math.NaN()
	r.Points[5].P99Ns = -1
	doc := netRenderHTML(t, r)
	checkCharts(t, doc, netSampleCharts)
	for _, s := range []string{"NaN", "Inf"} {
		if strings.Contains(doc, s) {
			t.Errorf("%s in the page", s)
		}
	}
}

func TestNetHTMLDeterministic(t *testing.T) {
	if a, b := netRenderHTML(t, netBig()), netRenderHTML(t, netBig()); a != b {
		t.Error("two renderings of the same report differ")
	}
	doc := netRenderHTML(t, netBig())
	t.Logf("big: %d bytes, %d points", len(doc), len(netBig().Points))
	if len(doc) >= 1<<20 {
		t.Errorf("page is %d bytes, over 1 MB", len(doc))
	}
}

// A real browser loads the page offline: the charts are in the DOM it
// built, the console stays silent and the screenshot is not blank.
func TestBrowserNetHTML(t *testing.T) {
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Skip("/usr/bin/chromium not found (apt-get install -y chromium): the page is not checked in a browser")
	}
	bin := findChromium(t)
	for _, tc := range netHTMLFixtures() {
		t.Run(tc.name, func(t *testing.T) {
			dom, shot := browse(t, bin, netRenderHTML(t, tc.r), true)
			checkDOM(t, dom, tc.want, len(tc.r.Points))
			if *htmlOut != "" {
				b, _ := os.ReadFile(shot)
				os.WriteFile(filepath.Join(*htmlOut, "net_"+tc.name+".png"), b, 0o644)
			}
		})
	}
}

// TestNetDocPerf: a report recorded with --perf gains a share column per
// kind some point spent CPU in (in %, the point's merged breakdown), with
// its legend; a point not recorded shows "–", and a failed recording is
// a note. Without --perf there is none of it.
func TestNetDocPerf(t *testing.T) {
	const p64, p16k = "1000 conns × 64B × pingpong", "1000 conns × 16KiB × pingpong"
	headerValue := func(d *Doc, key string) string {
		for _, f := range d.Header {
			if f.Key == key {
				return f.Value
			}
		}
		return ""
	}
	plain := NetDoc(netSample())
	for _, c := range plain.Columns {
		if strings.HasPrefix(c.Key, "perf_") {
			t.Errorf("column %s without perf", c.Key)
		}
	}
	if v := headerValue(plain, "machinery"); v != "" {
		t.Errorf("machinery %q without perf", v)
	}
	r := netSample()
	set := func(i int, b perf.Breakdown) {
		r.Points[i].Perf = &b
		for j := range r.Points[i].Runs {
			r.Points[i].Runs[j].Perf = &b
		}
	}
	set(3, perf.Breakdown{Samples: 800, CPUNs: 2e8, User: 0.02, Syscall: 0.03, IOUring: 0.15, Net: 0.7, Kernel: 0.1}) // io_uring 64B
	set(5, perf.Breakdown{Samples: 900, CPUNs: 2e8, User: 0.05, Syscall: 0.1, Net: 0.75, Kernel: 0.1})                // epoll 64B
	r.Points[4].PerfError = "run 1: not recorded: perf control: enable: perf did not answer within 5s"                // net 64B
	d := NetDoc(r)
	var keys []string
	for _, c := range d.Columns {
		if strings.HasPrefix(c.Key, "perf_") {
			keys = append(keys, c.Key)
			if c.Wide || c.Unit != "%" {
				t.Errorf("column %+v: want it in the table, in %%", c)
			}
		}
	}
	if want := []string{"perf_user_pct", "perf_syscall_pct", "perf_io_uring_pct", "perf_net_pct", "perf_kernel_pct"}; !slices.Equal(keys, want) {
		t.Errorf("perf columns %q, want %q (no kind that is 0 everywhere)", keys, want)
	}
	if c, _ := docCell(t, d, p64, "io_uring", "perf_io_uring_pct"); c.Value != 15 {
		t.Errorf("io_uring's io_uring share %v, want 15", c.Value)
	}
	if c, _ := docCell(t, d, p64, "epoll", "perf_net_pct"); c.Value != 75 {
		t.Errorf("epoll's net share %v, want 75", c.Value)
	}
	if c, _ := docCell(t, d, p16k, "net", "perf_net_pct"); finite(c.Value) {
		t.Errorf("a point not recorded shows %v, want –", c.Value)
	}
	var legend []string
	for _, f := range d.Legend {
		legend = append(legend, f.Key)
	}
	for _, want := range []string{"user% … kernel%", "uring%", "net%"} {
		if !slices.Contains(legend, want) {
			t.Errorf("legend %q lacks %q", legend, want)
		}
	}
	// The header sums up each engine's machinery (syscall, polling,
	// io_uring, own code) and the floor under epoll: 1 − epoll's.
	machinery := "epoll 15.0%, io_uring 20.0% of the server's CPU"
	if f := headerValue(d, "machinery"); f != machinery {
		t.Errorf("machinery %q, want %q", f, machinery)
	}
	if h := html.UnescapeString(netRenderHTML(t, r)); !strings.Contains(h, machinery) || !strings.Contains(h, "an engine with none") {
		t.Errorf("the HTML page lacks the machinery line")
	}
	out := string(netRender(t, "table", r))
	for _, want := range []string{"uring%", "net%", "75.0", "perf: net at 1000 conns × 64B × pingpong: run 1: not recorded",
		"machinery  " + machinery, "an engine with none, doing epoll's kernel work: 0.85× epoll's CPU µs/req",
		"machinery (--perf): an engine's syscall entry/exit"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The JSON keeps it all, and reads back.
	var b bytes.Buffer
	if err := NetJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "net.json")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadNetJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Points[3].Perf; got == nil || *got != *r.Points[3].Perf || back.Points[4].PerfError != r.Points[4].PerfError {
		t.Errorf("read back: perf %+v, error %q", got, back.Points[4].PerfError)
	}
}

// net bench --perf's page: the servers' breakdown, and a flame graph per
// engine and mode, the points' call trees merged.
func TestNetHTMLPerf(t *testing.T) {
	r := netSample()
	var plain bytes.Buffer
	if err := NetHTML(&plain, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), `id="flame"`) || strings.Contains(plain.String(), `id="breakdown"`) {
		t.Error("a page without recordings has perf's sections")
	}
	tree := func(leaf string) *perf.Flame {
		return &perf.Flame{Name: "all", Value: 100, Children: []*perf.Flame{{Name: "netio.(*uloop).run", Kind: "user", Value: 100,
			Children: []*perf.Flame{{Name: leaf, Kind: "net", Value: 80}}}}}
	}
	for i := range r.Points {
		b := perf.Breakdown{Samples: 100, CPUNs: 1e8, User: 0.2, Net: 0.8}
		r.Points[i].Perf = &b
		r.Points[i].Flame = tree(fmt.Sprintf("tcp_sendmsg_%d", i%2))
	}
	var buf bytes.Buffer
	if err := NetHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, `id="breakdown"`) || !strings.Contains(page, `id="flame"`) {
		t.Fatal("no breakdown or flame graphs on a page with recordings")
	}
	engines, groups := netPoints(r)
	trees := netFlames(engines, groups)
	var pairs []string
	for _, g := range groups {
		for _, p := range g {
			if k := p.Engine + " " + p.Mode; !slices.Contains(pairs, k) {
				pairs = append(pairs, k)
			}
		}
	}
	if len(trees) != len(pairs) {
		t.Fatalf("%d flame graphs, want one per engine and mode that has points: %q", len(trees), pairs)
	}
	for _, f := range trees {
		points := 0
		for _, g := range groups {
			for _, p := range g {
				if strings.HasPrefix(f.what, p.Engine+" ") && strings.HasSuffix(f.what, " "+p.Mode) {
					points++
				}
			}
		}
		if f.flame.Value != int64(100*points) || !strings.Contains(page, html.EscapeString(f.what)) {
			t.Errorf("%s: %d samples over %d points", f.what, f.flame.Value, points)
		}
	}
}

// versusReport is epoll and io_uring at three points, runs runs each:
// io_uring's server CPU per request is epoll's times more[i] in run i
// at 64B, times less[i] at 16KiB, and times mixed[i] at 1KiB.
func versusReport(more, less, mixed []float64) *netresult.Report {
	r := &netresult.Report{Tool: netTool, Machine: netMachineFixture,
		Config: netresult.Config{Engines: []string{"epoll", "io_uring"}, Conns: []int{1000},
			Sizes: []int{64, 1024, 16384}, Modes: []string{"pingpong"}, DurationNs: 1e9, Runs: len(more)}}
	for _, pt := range []struct {
		size int
		f    []float64
	}{{64, more}, {1024, mixed}, {16384, less}} {
		var ep, ur []netresult.Run
		for i, f := range pt.f {
			base := 5 + float64(i%3) // the machine's drift from run to run
			ep = append(ep, netRun(100_000, base, 4, pt.size, 1e6, 2e6, 3e6, 4e6))
			ur = append(ur, netRun(100_000, base*f, 4, pt.size, 1e6, 2e6, 3e6, 4e6))
		}
		r.Points = append(r.Points, netPoint("epoll", 1000, pt.size, "pingpong", ep...), netPoint("io_uring", 1000, pt.size, "pingpong", ur...))
	}
	return r
}

// The header says at how many points an engine used more or less CPU
// than epoll beyond the noise, by a sign test over the paired runs, and
// a note names the points where it used more.
func TestNetVersus(t *testing.T) {
	more := []float64{1.05, 1.2, 1.1, 1.08, 1.15, 1.1}
	less := []float64{0.9, 0.95, 0.8, 0.92, 0.85, 0.9}
	mixed := []float64{1.1, 0.9, 1.05, 0.95, 1.2, 0.98}
	r := versusReport(more, less, mixed)
	out := string(netRender(t, "table", r))
	for _, want := range []string{
		"\nvs epoll   io_uring: 1.01× epoll's CPU µs/req at the median of 3 points (0.90× to 1.10×)\n",
		"\n           beyond the noise: more CPU at 1 point, less at 1, neither at 1\n",
		"\n           (a sign test over each point's runs, p < 0.05)\n",
		"  - io_uring used more server CPU per request than epoll beyond the noise at: 1000 conns × 64B ×\n    pingpong (1.10×)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if page := netRenderHTML(t, r); !strings.Contains(page, "beyond the noise: more CPU at 1 point, less at 1, neither at 1") {
		t.Errorf("the HTML page lacks the sign test's counts")
	}
	// The column is the median of the paired ratios, with their range:
	// the drift of epoll's runs cancels.
	c, _ := docCell(t, NetDoc(r), "1000 conns × 64B × pingpong", "io_uring", "server_cpu_vs_epoll")
	if math.Abs(c.Value-1.1) > 1e-9 || math.Abs(c.Min-1.05) > 1e-9 || math.Abs(c.Max-1.2) > 1e-9 {
		t.Errorf("io_uring vs epoll at 64B: %v (%v–%v), want 1.10 (1.05–1.20)", c.Value, c.Min, c.Max)
	}

	// Five runs all one way are not enough for the test to tell.
	r = versusReport(more[:5], less[:5], mixed[:5])
	out = string(netRender(t, "table", r))
	if want := "           (5 runs per point: a sign test needs 6 to tell a point from the noise)\n"; !strings.Contains(out, want) || strings.Contains(out, "beyond the noise:") {
		t.Errorf("5 runs: table lacks %q or gives a verdict:\n%s", want, out)
	}

	// A point whose runs do not pair up (one lost) is divided median by
	// median, and left out of the count.
	r = versusReport(more, less, mixed)
	r.Points[1].Runs = r.Points[1].Runs[:5]
	c, _ = docCell(t, NetDoc(r), "1000 conns × 64B × pingpong", "io_uring", "server_cpu_vs_epoll")
	if want := r.Points[1].ServerCPUPerReqUs / r.Points[0].ServerCPUPerReqUs; c.Value != want || len(c.Runs) != 0 {
		t.Errorf("unpaired io_uring vs epoll: %+v, want %v", c, want)
	}
	out = string(netRender(t, "table", r))
	if want := "io_uring: 0.96× epoll's CPU µs/req at the median of 2 points (0.90× to 1.01×)"; !strings.Contains(out, want) ||
		!strings.Contains(out, "beyond the noise: more CPU at 0 points, less at 1, neither at 1") {
		t.Errorf("unpaired: table lacks %q or counts the point:\n%s", want, out)
	}
}

// With one point, the verdict is a word beside its ratio.
func TestNetVersusOnePoint(t *testing.T) {
	r := versusReport([]float64{1.05, 1.2, 1.1, 1.08, 1.15, 1.1}, nil, nil)
	r.Points = r.Points[:2]
	out := string(netRender(t, "table", r))
	if want := "\nvs epoll   io_uring: 1.10× epoll's CPU µs/req: more, beyond the noise\n"; !strings.Contains(out, want) {
		t.Errorf("table lacks %q:\n%s", want, out)
	}
	r.Points[1].Runs[0].ServerCPUPerReqUs = 1 // one run of six the other way
	out = string(netRender(t, "table", r))
	if want := "\nvs epoll   io_uring: 1.10× epoll's CPU µs/req: within the noise\n"; !strings.Contains(out, want) {
		t.Errorf("table lacks %q:\n%s", want, out)
	}
}
