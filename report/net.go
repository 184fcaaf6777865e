package report

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
)

// What every output of netresult.Report (`iopath net bench`) shares: one
// view of the report (netView: the points in a fixed order, one row per
// engine, the ratios to the reference engines and the integrity summary),
// the header lines, and the JSON. NetDoc (net_doc.go) maps the view into
// a Doc for the text formats; NetHTML (net_html.go) draws it.

// netTool is the Tool of a netresult.Report, which LoadNetJSON checks.
const netTool = netresult.EchoTool

// The reference engines the headline figure is divided by, in column
// order: epoll is io_uring's like-for-like baseline, net is Go's.
var netRefs = []string{"epoll", "net"}

// NetJSON writes r as indented JSON followed by a newline, of kind
// "net-echo" at netresult.EchoSchemaVersion (docs/schema/net-echo.schema.json).
// The output is always valid JSON: a float that is NaN or infinite is
// written as 0. r itself is not modified.
func NetJSON(w io.Writer, r *netresult.Report) error {
	return jsondoc.Write(w, netresult.EchoKind, netresult.EchoSchemaVersion, r)
}

// LoadNetJSON reads a report written by NetJSON (`iopath net bench
// --format json`), of this schema_version or version 1, whose keys it
// renames (netRenames). A file that cannot be read is an *fs.PathError; a
// file that is not JSON, not a net bench report (its "tool"), or of a
// schema_version newer than this package reads is an error naming the
// path and what is wrong.
func LoadNetJSON(path string) (*netresult.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d, err := jsondoc.Open(path, data, netName, netWant)
	if err != nil {
		return nil, err
	}
	return decodeNet(d)
}

const (
	netName = "iopath net bench report"
	netWant = "want the output of iopath net bench --format json"
)

// decodeNet decodes d as LoadNetJSON does.
func decodeNet(d *jsondoc.Doc) (*netresult.Report, error) {
	d.Name, d.Want = netName, netWant
	if tool := d.Str("tool"); tool != netTool {
		hint := ""
		if tool == "iopath" {
			hint = ": it is an iopath bench report of files"
		}
		return nil, d.Errorf("its \"tool\" is not %q%s", netTool, hint)
	}
	version, err := d.Version(netresult.EchoSchemaVersion)
	if err != nil {
		return nil, err
	}
	var renames jsondoc.Renames
	if version < 2 {
		renames = netRenames // version 1 differs in key names only
	}
	var r netresult.Report
	if err := d.Decode(&r, renames); err != nil {
		return nil, err
	}
	r.SchemaVersion = netresult.EchoSchemaVersion
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
	rows []*netresult.Point
	// byEngine is each engine's (first) row at this point.
	byEngine map[string]*netresult.Point
}

// netView is what every renderer shows of a net report.
type netView struct {
	r       *netresult.Report
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

func newNetView(r *netresult.Report) *netView {
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
			v.groups = append(v.groups, netGroup{key: k, byEngine: map[string]*netresult.Point{}})
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
		slices.SortStableFunc(g.rows, func(a, b *netresult.Point) int { return engIdx[a.Engine] - engIdx[b.Engine] })
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

func (in *netIntegrity) add(p *netresult.Point, k netKey) {
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

// refRatio is p's server CPU-µs per request divided by ref's at the same
// point: "" when p is the reference or it has no row there, n/a when one
// of the two was not measured.
func (g *netGroup) refRatio(p *netresult.Point, ref string) (float64, string) {
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
func netPinLine(c netresult.Config) string {
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
func netMatrixLine(c netresult.Config) string {
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
func netRunsLine(c netresult.Config) string {
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
