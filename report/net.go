package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netbench"
)

// Renderers of netbench.Report, the result of `iopath net bench`: the
// side-by-side table, JSON, CSV and markdown here, the HTML page in
// net_html.go. They share one view of the report (netView): the points
// in a fixed order, one row per engine, the ratios to the reference
// engines and the integrity summary, so that every format says the same.

// netTool is the Tool of a netbench.Report, which LoadNetJSON checks
// (netbench has no constant for it, and cannot import this package).
const netTool = netbench.Tool

// The reference engines the headline figure is divided by, in column
// order: epoll is io_uring's like-for-like baseline, net is Go's.
var netRefs = []string{"epoll", "net"}

// netFormats are the text formats of a net report, by name.
var netFormats = []struct {
	name  string
	write func(io.Writer, *netbench.Report) error
}{
	{"table", NetTable},
	{"json", NetJSON},
	{"csv", NetCSV},
	{"markdown", NetMarkdown},
}

// NetFormats lists the names WriteNet accepts, the default (table) first.
func NetFormats() []string {
	names := make([]string, len(netFormats))
	for i, f := range netFormats {
		names[i] = f.name
	}
	return names
}

// WriteNet writes r to w in the named format (one of NetFormats). An
// unknown name is an error that lists the valid ones, and writes nothing.
func WriteNet(w io.Writer, format string, r *netbench.Report) error {
	for _, f := range netFormats {
		if f.name == format {
			return f.write(w, r)
		}
	}
	return fmt.Errorf("unknown format %q for a net report: valid formats are %s", format, strings.Join(NetFormats(), ", "))
}

// NetJSON writes r as indented JSON followed by a newline, of kind
// "net-echo" at netbench.SchemaVersion (docs/schema/net-echo.schema.json).
// The output is always valid JSON: a float that is NaN or infinite is
// written as 0. r itself is not modified.
func NetJSON(w io.Writer, r *netbench.Report) error {
	return jsondoc.Write(w, netbench.Kind, netbench.SchemaVersion, r)
}

// LoadNetJSON reads a report written by NetJSON (`iopath net bench
// --format json`), of this schema_version or version 1, whose keys it
// renames (netRenames). A file that cannot be read is an *fs.PathError; a
// file that is not JSON, not a net bench report (its "tool"), or of a
// schema_version newer than this package reads is an error naming the
// path and what is wrong.
func LoadNetJSON(path string) (*netbench.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const want = "want the output of iopath net bench --format json"
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file, not an iopath net bench report (%s)", path, want)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s: not JSON (%v at byte %d)", path, se, se.Offset)
		}
		return nil, fmt.Errorf("%s: not an iopath net bench report (JSON, but not an object; %s)", path, want)
	}
	var tool string
	if raw, ok := probe["tool"]; !ok || json.Unmarshal(raw, &tool) != nil || tool != netTool {
		hint := ""
		if tool == "iopath" {
			hint = " (it is an iopath bench report of files)"
		}
		return nil, fmt.Errorf("%s: not an iopath net bench report: its \"tool\" is not %q%s; %s", path, netTool, hint, want)
	}
	raw, ok := probe["schema_version"]
	if !ok {
		return nil, fmt.Errorf("%s: not an iopath net bench report: no schema_version; %s", path, want)
	}
	var version int
	if err := json.Unmarshal(raw, &version); err != nil || version < 1 {
		return nil, fmt.Errorf("%s: schema_version %s is not a positive whole number", path, oneLine(string(raw)))
	}
	if version > netbench.SchemaVersion {
		return nil, fmt.Errorf("%s: net report schema_version %d is newer than this iopath reads (%d); upgrade iopath",
			path, version, netbench.SchemaVersion)
	}
	if version < 2 {
		// Version 1 differs in key names only.
		if data, err = netRenames.rename(data); err != nil {
			return nil, fmt.Errorf("%s: not a valid iopath net bench report: %s", path, oneLine(err.Error()))
		}
	}
	var r netbench.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a valid iopath net bench report: %s", path, oneLine(err.Error()))
	}
	r.SchemaVersion = netbench.SchemaVersion
	return &r, nil
}

// --- the view every renderer shares

// netKey is one point of the matrix.
type netKey struct {
	conns, size int
	mode        string
}

// label is "1000 conns × 64B × pingpong".
func (k netKey) label() string {
	return fmt.Sprintf("%s × %s × %s", plural(k.conns, "conn"), units.FormatSize(int64(k.size)), k.mode)
}

// netGroup is one point: its rows, one per engine in display order.
type netGroup struct {
	key  netKey
	rows []*netbench.Point
	// byEngine is each engine's (first) row at this point.
	byEngine map[string]*netbench.Point
}

// netView is what every renderer shows of a net report.
type netView struct {
	r       *netbench.Report
	engines []string // display order: Config.Engines, then any other
	modes   []string // in order
	groups  []netGroup
	refs    []string // reference engines that have a row somewhere
	spread  bool     // some row has more than one run
	runsCol bool     // some measured row has a run count other than Config.Runs
	latency bool     // some row has a latency (stream mode has none)
	integ   netIntegrity
}

// netIntegrity sums what the load generator found wrong over the report.
type netIntegrity struct {
	runs       int   // runs measured
	badRuns    int   // runs with corrupted or lost bytes
	errRuns    int   // runs with connection errors
	corrupted  int64 // bytes
	lost       int64
	connErrors int64
	bad        []string // "epoll at 100 conns × 16KiB × pipeline:8: 4096 corrupted, 0 lost bytes"
	errs       []string // the same for connection errors
	failed     int      // points not measured (Err)
}

func newNetView(r *netbench.Report) *netView {
	v := &netView{r: r}
	seen := map[string]bool{}
	addEngine := func(e string) {
		if !seen[e] {
			seen[e] = true
			v.engines = append(v.engines, e)
		}
	}
	for _, e := range r.Config.Engines {
		addEngine(e)
	}
	seenMode := map[string]bool{}
	for _, m := range r.Config.Modes {
		if !seenMode[m] {
			seenMode[m] = true
			v.modes = append(v.modes, m)
		}
	}
	index := map[netKey]int{}
	for i := range r.Points {
		p := &r.Points[i]
		addEngine(p.Engine)
		if !seenMode[p.Mode] {
			seenMode[p.Mode] = true
			v.modes = append(v.modes, p.Mode)
		}
		k := netKey{p.Conns, p.Size, p.Mode}
		j, ok := index[k]
		if !ok {
			j = len(v.groups)
			index[k] = j
			v.groups = append(v.groups, netGroup{key: k, byEngine: map[string]*netbench.Point{}})
		}
		g := &v.groups[j]
		g.rows = append(g.rows, p)
		if g.byEngine[p.Engine] == nil {
			g.byEngine[p.Engine] = p
		}
	}
	// Points by mode, then message size, then connections: each mode's
	// points read as growing load.
	modeIdx := map[string]int{}
	for i, m := range v.modes {
		modeIdx[m] = i
	}
	sort.SliceStable(v.groups, func(i, j int) bool {
		a, b := v.groups[i].key, v.groups[j].key
		if a.mode != b.mode {
			return modeIdx[a.mode] < modeIdx[b.mode]
		}
		if a.size != b.size {
			return a.size < b.size
		}
		return a.conns < b.conns
	})
	engIdx := map[string]int{}
	for i, e := range v.engines {
		engIdx[e] = i
	}
	hasRow := map[string]bool{}
	for gi := range v.groups {
		g := &v.groups[gi]
		slices.SortStableFunc(g.rows, func(a, b *netbench.Point) int { return engIdx[a.Engine] - engIdx[b.Engine] })
		for _, p := range g.rows {
			hasRow[p.Engine] = true
			v.integ.add(p, g.key)
			if p.Err != "" {
				continue
			}
			if len(p.Runs) > 1 {
				v.spread = true
			}
			if len(p.Runs) != r.Config.Runs {
				v.runsCol = true
			}
			if p.P50Ns > 0 || p.P99Ns > 0 || p.P999Ns > 0 || p.MaxNs > 0 {
				v.latency = true
			}
		}
	}
	for _, e := range netRefs {
		if hasRow[e] {
			v.refs = append(v.refs, e)
		}
	}
	return v
}

func (in *netIntegrity) add(p *netbench.Point, k netKey) {
	if p.Err != "" {
		in.failed++
	}
	in.runs += len(p.Runs)
	bad, errs := 0, 0
	for _, run := range p.Runs {
		if run.Corrupted > 0 || run.Lost > 0 {
			bad++
		}
		if run.ConnErrors > 0 {
			errs++
		}
	}
	// The point's sums are what count; a run that shows them is looked
	// for only to say how many runs were hit.
	if p.Corrupted > 0 || p.Lost > 0 {
		in.corrupted += p.Corrupted
		in.lost += p.Lost
		in.badRuns += max(bad, 1)
		in.bad = append(in.bad, fmt.Sprintf("%s at %s: %d corrupted, %d lost bytes", p.Engine, k.label(), p.Corrupted, p.Lost))
	}
	if p.ConnErrors > 0 {
		in.connErrors += p.ConnErrors
		in.errRuns += max(errs, 1)
		in.errs = append(in.errs, fmt.Sprintf("%s at %s: %d", p.Engine, k.label(), p.ConnErrors))
	}
}

// ok reports whether no byte was corrupted or lost and no connection
// failed.
func (in *netIntegrity) ok() bool { return in.corrupted == 0 && in.lost == 0 && in.connErrors == 0 }

// summary is the integrity verdict: "0 corrupted or lost bytes in 12
// runs", or, in capitals, what went wrong and where.
func (in *netIntegrity) summary() []string {
	var out []string
	switch {
	case in.runs == 0:
		out = append(out, "NO RUN WAS MEASURED: nothing was verified")
	case in.corrupted == 0 && in.lost == 0:
		out = append(out, fmt.Sprintf("0 corrupted or lost bytes in %s", plural(in.runs, "run")))
	default:
		out = append(out, fmt.Sprintf("INTEGRITY FAILURE: %d CORRUPTED AND %d LOST BYTES in %d of %s: %s",
			in.corrupted, in.lost, in.badRuns, plural(in.runs, "run"), strings.Join(in.bad, "; ")))
	}
	if in.connErrors > 0 {
		out = append(out, fmt.Sprintf("%d CONNECTION ERRORS in %d of %s: %s", in.connErrors, in.errRuns,
			plural(in.runs, "run"), strings.Join(in.errs, "; ")))
	}
	if in.failed > 0 {
		out = append(out, fmt.Sprintf("%s not measured (error): not verified", plural(in.failed, "point")))
	}
	return out
}

// --- cells

// netStat is a figure over a row's runs: the median the model holds and
// the min and max of the runs.
type netStat struct{ med, lo, hi float64 }

func netSpan(med float64, runs []netbench.Run, f func(*netbench.Run) float64) netStat {
	s := netStat{med: med, lo: math.Inf(1), hi: math.Inf(-1)}
	for i := range runs {
		if x := f(&runs[i]); finite(x) {
			s.lo, s.hi = min(s.lo, x), max(s.hi, x)
		}
	}
	if math.IsInf(s.lo, 0) {
		s.lo, s.hi = 0, 0
	}
	return s
}

func netServerCPU(p *netbench.Point) netStat {
	return netSpan(p.ServerCPUPerReqUs, p.Runs, func(r *netbench.Run) float64 { return r.ServerCPUPerReqUs })
}

func netQPS(p *netbench.Point) netStat {
	return netSpan(p.QPS, p.Runs, func(r *netbench.Run) float64 { return r.QPS })
}

func netP99(p *netbench.Point) netStat {
	return netSpan(float64(p.P99Ns), p.Runs, func(r *netbench.Run) float64 { return float64(r.P99Ns) })
}

// netSpreadPct is half the min–max range of the runs as a percentage of the
// median: "±4%". Empty with fewer than two runs.
func netSpreadPct(s netStat, runs int) string {
	if runs < 2 || !(s.med > 0) || !finite(s.med) || s.hi < s.lo {
		return ""
	}
	return fmt.Sprintf("±%.0f%%", 50*(s.hi-s.lo)/s.med)
}

// netPerReq formats a CPU-µs per request figure; 0 is "not measured".
func netPerReq(us float64) string {
	if us == 0 {
		return "-"
	}
	return hSig3(us)
}

// netFmtQPS formats requests per second with three significant figures: 950,
// 8.21k, 172k, 1.23M.
func netFmtQPS(q float64) string {
	if !finite(q) {
		return "n/a"
	}
	if q < 999.5 {
		return fmt.Sprintf("%.0f", q)
	}
	v, unit := q, ""
	for _, u := range []string{"k", "M", "G"} {
		if v < 999.5 {
			break
		}
		v, unit = v/1000, u
	}
	switch {
	case v < 9.995:
		return fmt.Sprintf("%.2f%s", v, unit)
	case v < 99.95:
		return fmt.Sprintf("%.1f%s", v, unit)
	}
	return fmt.Sprintf("%.0f%s", v, unit)
}

// netFmtMBps formats MB/s with three significant figures.
func netFmtMBps(m float64) string { return hSig3(m) }

// refRatio is p's server CPU-µs per request divided by ref's at the same
// point: "" when p is the reference or it has no row there, n/a when one
// of the two was not measured.
func (g *netGroup) refRatio(p *netbench.Point, ref string) (float64, string) {
	rp := g.byEngine[ref]
	if rp == nil || p.Engine == ref {
		return 0, ""
	}
	a, b := p.ServerCPUPerReqUs, rp.ServerCPUPerReqUs
	if rp.Err != "" || !(a > 0) || !(b > 0) || !finite(a) || !finite(b) {
		return 0, "n/a"
	}
	return a / b, ratio(a / b)
}

// netIntegrityCell is a row's integrity cell: ok, or the numbers in capitals.
func netIntegrityCell(p *netbench.Point) string {
	if p.Corrupted == 0 && p.Lost == 0 && p.ConnErrors == 0 {
		return "ok"
	}
	return fmt.Sprintf("BAD: %d corrupted, %d lost bytes, %d conn errors", p.Corrupted, p.Lost, p.ConnErrors)
}

// netColID names a column of the net table.
type netColID int

const (
	ncEngine netColID = iota
	ncCPU
	ncSpread
	ncVsEpoll
	ncVsNet
	ncQPS
	ncClient
	ncP50
	ncP99
	ncP999
	ncMax
	ncMBps
	ncRuns
	ncIntegrity
)

// netCol is a column of the net table; top is printed on the line above
// head, right-aligned to the column's end.
type netCol struct {
	id        netColID
	top, head string
	md        string // the head in markdown (head when empty)
	right     bool
	gap       int
}

// cols are the columns v shows.
func (v *netView) cols() []netCol {
	all := []netCol{
		{id: ncEngine, head: "engine"},
		{id: ncCPU, top: "▼ headline: server", head: "CPU-µs/req", md: "▼ server CPU-µs/req", right: true, gap: 2},
		{id: ncSpread, head: "", gap: 1},
		{id: ncVsEpoll, head: "vs epoll", right: true, gap: 2},
		{id: ncVsNet, head: "vs net", right: true, gap: 2},
		{id: ncQPS, head: "QPS", right: true, gap: 2},
		{id: ncClient, top: "client", head: "CPU-µs/req", md: "client CPU-µs/req", right: true, gap: 2},
		{id: ncP50, head: "P50", right: true, gap: 2},
		{id: ncP99, head: "P99", right: true, gap: 1},
		{id: ncP999, head: "P99.9", right: true, gap: 1},
		{id: ncMax, top: "latency", head: "max", right: true, gap: 1},
		{id: ncMBps, head: "MB/s", right: true, gap: 2},
		{id: ncRuns, head: "runs", right: true, gap: 2},
		{id: ncIntegrity, head: "integrity", gap: 2},
	}
	var out []netCol
	for _, c := range all {
		switch {
		case c.id == ncSpread && !v.spread,
			c.id == ncVsEpoll && !slices.Contains(v.refs, "epoll"),
			c.id == ncVsNet && !slices.Contains(v.refs, "net"),
			c.id == ncRuns && !v.runsCol:
			continue
		}
		out = append(out, c)
	}
	return out
}

// cells formats a measured row, one cell per column.
func (v *netView) cells(g *netGroup, p *netbench.Point, cols []netCol) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		var s string
		switch c.id {
		case ncEngine:
			s = p.Engine
		case ncCPU:
			s = netPerReq(p.ServerCPUPerReqUs)
		case ncSpread:
			if p.ServerCPUPerReqUs != 0 {
				s = netSpreadPct(netServerCPU(p), len(p.Runs))
			}
		case ncVsEpoll:
			_, s = g.refRatio(p, "epoll")
		case ncVsNet:
			_, s = g.refRatio(p, "net")
		case ncQPS:
			s = netFmtQPS(p.QPS)
		case ncClient:
			s = netPerReq(p.ClientCPUPerReqUs)
		case ncP50:
			s = latency(p.P50Ns)
		case ncP99:
			s = latency(p.P99Ns)
		case ncP999:
			s = latency(p.P999Ns)
		case ncMax:
			s = latency(p.MaxNs)
		case ncMBps:
			s = netFmtMBps(p.MBps)
		case ncRuns:
			s = strconv.Itoa(len(p.Runs))
		case ncIntegrity:
			s = netIntegrityCell(p)
		}
		out[i] = s
	}
	return out
}

// legend explains the columns v shows.
func (v *netView) legend() []legendEntry {
	cpu := "the headline (▼): CPU time (user+system, every thread) the server process used per request, from " +
		"the kernel's process CPU clock, median over the runs; lower is better"
	if v.spread {
		cpu += "; ±: half the min–max range of the runs, as % of the median"
	}
	l := []legendEntry{{"CPU-µs/req", cpu}}
	for _, ref := range v.refs {
		l = append(l, legendEntry{"vs " + ref, "server CPU-µs/req divided by " + ref + "'s at the same point: " +
			"below 1.00× costs less CPU per request than " + ref})
	}
	l = append(l,
		legendEntry{"QPS", "requests echoed whole and verified per second, median over the runs"},
		legendEntry{"client", "CPU-µs/req of the load generator: the client's share of the machine"},
		legendEntry{"P50 … max", "latency per request, from its send to the last byte of its echo, median over " +
			"the runs; µs = microseconds, ms = milliseconds; -: not measured (stream mode)"},
		legendEntry{"MB/s", "echoed bytes per second, 1 MB = 10^6 bytes"})
	if v.runsCol {
		l = append(l, legendEntry{"runs", fmt.Sprintf("runs measured at the point (%d asked for)", v.r.Config.Runs)})
	}
	l = append(l, legendEntry{"integrity", "ok: every echoed byte matched what was sent, none was lost and no " +
		"connection failed, in every run; BAD: the sums over the runs"})
	return l
}

// --- header

// netMachine describes the machine in one line (a net report has no
// file, so no filesystem).
func netMachine(m features.Machine) string {
	kernel := "Linux " + m.Kernel
	if m.Kernel == "" {
		kernel = "Linux"
	}
	parts := []string{strings.TrimSpace(kernel + " " + m.Arch)}
	if s := strings.TrimSpace(m.CPUModel); s != "" {
		parts = append(parts, s)
	}
	if m.Cores > 0 {
		parts = append(parts, plural(m.Cores, "core"))
	}
	if m.MemBytes > 0 {
		parts = append(parts, units.RoughSize(m.MemBytes)+" RAM")
	}
	return strings.Join(parts, ", ")
}

// netCPUList formats CPU numbers with ranges: "0", "1-3", "0,2,4-5".
func netCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(cpus[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(cpus[i]), strconv.Itoa(cpus[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// netPinLine says where the server and the load generator ran.
func netPinLine(c netbench.Config) string {
	where := func(who string, cpus []int) string {
		switch len(cpus) {
		case 0:
			return who + " not pinned"
		case 1:
			return who + " on CPU " + netCPUList(cpus)
		}
		return who + " on CPUs " + netCPUList(cpus)
	}
	var s string
	if len(c.ServerCPUs) == 0 && len(c.ClientCPUs) == 0 {
		s = "not pinned"
	} else {
		s = where("server", c.ServerCPUs) + ", " + where("load generator", c.ClientCPUs)
	}
	if n := oneLine(c.PinNote); n != "" {
		s += ": " + n
	}
	return s
}

func netIntList(v []int, f func(int) string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = f(x)
	}
	return strings.Join(s, ", ")
}

// netMatrixLine describes the matrix: "conns 1, 1000 × sizes 64B, 16KiB ×
// modes pingpong".
func netMatrixLine(c netbench.Config) string {
	var parts []string
	if len(c.Conns) > 0 {
		parts = append(parts, "conns "+netIntList(c.Conns, strconv.Itoa))
	}
	if len(c.Sizes) > 0 {
		parts = append(parts, "sizes "+netIntList(c.Sizes, func(n int) string { return units.FormatSize(int64(n)) }))
	}
	if len(c.Modes) > 0 {
		parts = append(parts, "modes "+strings.Join(c.Modes, ", "))
	}
	return strings.Join(parts, " × ")
}

// netRunsLine says how each point was measured.
func netRunsLine(c netbench.Config) string {
	if c.Runs <= 0 {
		return ""
	}
	s := plural(c.Runs, "run") + " per engine and point"
	if c.DurationNs > 0 {
		s += " of " + time.Duration(c.DurationNs).String()
		if c.Runs > 1 {
			s += " each"
		}
	}
	if c.WarmupNs > 0 {
		s += ", after a " + time.Duration(c.WarmupNs).String() + " warm-up"
	}
	if c.Runs > 1 {
		s += "; engines interleaved run by run; medians shown"
	}
	return s
}

// netHeader lists the report's header lines that have a value.
func netHeader(r *netbench.Report) []headerField {
	var out []headerField
	field := func(label, value string) {
		if value = strings.TrimSpace(value); value != "" {
			out = append(out, headerField{label, value})
		}
	}
	field("command", r.Command)
	field("machine", netMachine(r.Machine))
	field("io_uring", r.Machine.IOURing)
	ver := []string{}
	if r.Machine.GoVersion != "" {
		ver = append(ver, r.Machine.GoVersion)
	}
	iv := r.Version
	if iv == "" {
		iv = r.Machine.IopathVersion
	}
	if iv != "" {
		ver = append(ver, "iopath "+iv)
	}
	field("version", strings.Join(ver, ", "))
	field("pinning", netPinLine(r.Config))
	field("matrix", netMatrixLine(r.Config))
	field("runs", netRunsLine(r.Config))
	field("address", r.Config.Addr)
	if !r.Started.IsZero() {
		field("started", r.Started.Format("2006-01-02 15:04:05 MST"))
	}
	return out
}

// netSkipLines are "ENGINE: reason", one per skipped engine.
func netSkipLines(r *netbench.Report) []string {
	var out []string
	for _, s := range r.Skipped {
		out = append(out, s.Engine+": "+oneLine(s.Reason))
	}
	return out
}

// --- table

// NetTable writes r as a side-by-side table for people: a header with
// the command, the machine, the pinning and the matrix; one group of rows
// per point of the matrix (connections × message size × mode), one row per
// engine in the order the command named them, with the server's CPU per
// request first (the headline) and its ratio to epoll's and net's at the
// same point; the skipped engines and why; a legend; the notes; and the
// integrity verdict over every run.
func NetTable(w io.Writer, r *netbench.Report) error {
	var b bytes.Buffer
	v := newNetView(r)
	for _, f := range netHeader(r) {
		lead := fmt.Sprintf("%-9s ", f.label+":")
		if f.label == "command" {
			b.WriteString(lead + f.value + "\n") // whole, to be copied
			continue
		}
		b.WriteString(wrapText(lead, f.value, 10, textWrap))
	}
	for i, s := range netSkipLines(r) {
		lead := strings.Repeat(" ", 10)
		if i == 0 {
			lead = "skipped:  "
		}
		b.WriteString(wrapText(lead, s, 12, textWrap))
	}

	cols := v.cols()
	if len(v.groups) == 0 {
		b.WriteString("\nno results\n")
	} else {
		b.WriteByte('\n')
		cells := make([][][]string, len(v.groups))
		widths := make([]int, len(cols))
		for i, c := range cols {
			widths[i] = width(c.head)
		}
		for gi := range v.groups {
			g := &v.groups[gi]
			for _, p := range g.rows {
				var row []string
				if p.Err != "" {
					row = []string{p.Engine}
				} else {
					row = v.cells(g, p, cols)
				}
				for i, c := range row {
					widths[i] = max(widths[i], width(c))
				}
				cells[gi] = append(cells[gi], row)
			}
		}
		line := func(row []string) {
			var l strings.Builder
			for i, c := range cols {
				if i >= len(row) {
					break
				}
				l.WriteString(strings.Repeat(" ", c.gap))
				pad := strings.Repeat(" ", widths[i]-width(row[i]))
				if c.right {
					l.WriteString(pad + row[i])
				} else {
					l.WriteString(row[i] + pad)
				}
			}
			b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
		}
		b.WriteString(netTopLine(cols, widths))
		heads := make([]string, len(cols))
		for i, c := range cols {
			heads[i] = c.head
		}
		line(heads)
		for gi, g := range v.groups {
			fmt.Fprintf(&b, "-- %s\n", g.key.label())
			for ri, p := range g.rows {
				row := cells[gi][ri]
				if p.Err != "" {
					b.WriteString(fmt.Sprintf("%-*s  error: %s\n", widths[0], p.Engine, oneLine(p.Err)))
					continue
				}
				line(row)
			}
		}
		b.WriteByte('\n')
		b.WriteString(legendText(v.legend()))
	}

	if len(r.Notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range r.Notes {
			b.WriteString(wrapText("  - ", oneLine(n), 4, textWrap))
		}
	}
	b.WriteByte('\n')
	for i, s := range v.integ.summary() {
		lead := strings.Repeat(" ", 11)
		if i == 0 {
			lead = "integrity: "
		}
		b.WriteString(wrapText(lead, s, 11, textWrap))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// netTopLine renders the labels that sit above the column heads; a label
// wider than the columns up to its own is cut at the left margin.
func netTopLine(cols []netCol, widths []int) string {
	total := 0
	ends := make([]int, len(cols))
	for i, c := range cols {
		total += c.gap + widths[i]
		ends[i] = total
	}
	line := []rune(strings.Repeat(" ", total))
	has := false
	for i, c := range cols {
		if c.top == "" {
			continue
		}
		has = true
		top := []rune(c.top)
		start := ends[i] - len(top)
		if start < 0 {
			top, start = top[-start:], 0
		}
		copy(line[start:], top)
	}
	if !has {
		return ""
	}
	return strings.TrimRight(string(line), " ") + "\n"
}

// --- markdown

// NetMarkdown writes r as a GitHub-flavoured markdown document: the
// header as a list, one table per point with a row per engine (the same
// columns as NetTable, the headline in bold), the skipped engines, the
// legend in a collapsed <details> block, the notes and the integrity
// verdict. Text from the report is escaped.
func NetMarkdown(w io.Writer, r *netbench.Report) error {
	var b bytes.Buffer
	v := newNetView(r)
	b.WriteString("# iopath net bench\n\n")
	for _, f := range netHeader(r) {
		value := mdEscape(f.value)
		if f.label == "command" {
			value = mdCode(f.value)
		}
		fmt.Fprintf(&b, "- **%s:** %s\n", f.label, value)
	}
	if sk := netSkipLines(r); len(sk) > 0 {
		b.WriteString("- **skipped:**\n")
		for _, s := range sk {
			b.WriteString("  - " + mdEscape(s) + "\n")
		}
	}

	cols := v.cols()
	// The spread joins the headline's cell.
	var mdCols []netCol
	for _, c := range cols {
		if c.id != ncSpread {
			mdCols = append(mdCols, c)
		}
	}
	if len(v.groups) == 0 {
		b.WriteString("\nNo results.\n")
	}
	for gi := range v.groups {
		g := &v.groups[gi]
		fmt.Fprintf(&b, "\n### %s\n\n", mdEscape(g.key.label()))
		heads := make([]string, len(mdCols))
		aligns := make([]string, len(mdCols))
		for i, c := range mdCols {
			heads[i] = c.head
			if c.md != "" {
				heads[i] = c.md
			}
			aligns[i] = ":---"
			if c.right {
				aligns[i] = "---:"
			}
		}
		mdRow(&b, heads, true)
		mdRow(&b, aligns, false)
		for _, p := range g.rows {
			if p.Err != "" {
				row := []string{mdEscape(p.Engine), "**error**", mdEscape(oneLine(p.Err))}
				for len(row) < len(mdCols) {
					row = append(row, "")
				}
				mdRow(&b, row, false)
				continue
			}
			cells := v.cells(g, p, cols)
			var row []string
			for i, c := range cols {
				s := mdEscape(cells[i])
				switch c.id {
				case ncSpread:
					continue
				case ncCPU:
					s = "**" + s + "**"
					if v.spread {
						if sp := cells[i+1]; sp != "" {
							s += " " + sp
						}
					}
				case ncIntegrity:
					if cells[i] != "ok" {
						s = "**" + s + "**"
					}
				}
				row = append(row, s)
			}
			mdRow(&b, row, false)
		}
	}
	if len(v.groups) > 0 {
		b.WriteString("\n<details>\n<summary>What the columns mean</summary>\n\n")
		for _, e := range v.legend() {
			fmt.Fprintf(&b, "- %s: %s\n", mdCode(e.term), mdEscape(e.text))
		}
		b.WriteString("\n</details>\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n### Notes\n\n")
		for _, n := range r.Notes {
			b.WriteString("- " + mdEscape(n) + "\n")
		}
	}
	b.WriteString("\n### Integrity\n\n")
	for _, s := range v.integ.summary() {
		if s = mdEscape(s); !strings.HasPrefix(s, "0 corrupted") {
			s = "**" + s + "**" // every other line says what went wrong
		}
		b.WriteString("- " + s + "\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// --- CSV

// netCSVColumns are the CSV's columns. A name that is also a JSON key of
// netbench.Point means the same thing in the same unit; the _min and _max
// columns are over the runs, runs is their number and the _vs_ columns are
// the server CPU-µs per request divided by that engine's at the same point.
var netCSVColumns = []string{
	"engine", "conns", "size_bytes", "mode", "runs",
	"server_cpu_us_per_req", "server_cpu_us_per_req_min", "server_cpu_us_per_req_max",
	"server_cpu_vs_epoll", "server_cpu_vs_net",
	"qps", "qps_min", "qps_max", "client_cpu_us_per_req",
	"p50_ns", "p99_ns", "p999_ns", "max_ns", "mb_per_s",
	"corrupted_bytes", "lost_bytes", "conn_errors", "error",
}

// NetCSV writes r as comma-separated values: a header line, then one line
// per engine per point, in NetTable's order, failed points included (their
// figures zero, their error in the last column). Numbers are plain (full
// precision, a dot for decimals); a figure that is NaN, infinite or not
// applicable (the ratio of a reference engine to itself) is empty. Skipped
// engines have no line: they are in the JSON.
func NetCSV(w io.Writer, r *netbench.Report) error {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	if err := cw.Write(netCSVColumns); err != nil {
		return err
	}
	v := newNetView(r)
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	f := func(x float64) string {
		if !finite(x) {
			return ""
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	for gi := range v.groups {
		g := &v.groups[gi]
		for _, p := range g.rows {
			cpu, q := netServerCPU(p), netQPS(p)
			vs := func(ref string) string {
				x, s := g.refRatio(p, ref)
				if s == "" || s == "n/a" {
					return ""
				}
				return f(x)
			}
			rec := []string{
				p.Engine, i(int64(p.Conns)), i(int64(p.Size)), p.Mode, i(int64(len(p.Runs))),
				f(p.ServerCPUPerReqUs), f(cpu.lo), f(cpu.hi), vs("epoll"), vs("net"),
				f(p.QPS), f(q.lo), f(q.hi), f(p.ClientCPUPerReqUs),
				i(p.P50Ns), i(p.P99Ns), i(p.P999Ns), i(p.MaxNs), f(p.MBps),
				i(p.Corrupted), i(p.Lost), i(p.ConnErrors), oneLine(p.Err),
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
