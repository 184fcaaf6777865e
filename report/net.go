package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
)

// What every output of netresult.Report (`iopath net bench`) shares: the
// order of its points (netPoints), the integrity verdict, the header
// lines, and the JSON. NetDoc (net_doc.go) is its one model; NetHTML
// (net_html.go) draws that Doc with the integrity tiles.

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
	data, err := jsondoc.ReadFile(path)
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

// --- the order and the verdict every output shares

// netKey is one point of the matrix.
type netKey struct {
	conns, size int
	mode        string
	loss        float64
	lossSet     bool
	lossWindow  int64 // ns: --recovery
	restart     bool
}

func keyOf(p *netresult.Point) netKey {
	return netKey{p.Conns, p.Size, p.Mode, p.Loss, p.LossSet, p.LossWindowNs, p.Restart}
}

// label is "1000 conns × 64B × pingpong", and "× 10% loss" after it for a
// point run under packet loss (net bench --loss).
func (k netKey) label() string {
	l := fmt.Sprintf("%s × %s × %s", plural(k.conns, "conn"), units.FormatSize(int64(k.size)), k.mode)
	if k.lossSet {
		l += " × " + lossName(k.loss) + " loss"
	}
	if k.lossWindow > 0 {
		l += " for " + time.Duration(k.lossWindow).String()
	}
	if k.restart {
		l += " × server restarted"
	}
	return l
}

// lossName is a share of packets dropped as a percentage: 0%, 1%, 0.5%.
func lossName(f float64) string {
	return strconv.FormatFloat(100*f, 'f', -1, 64) + "%"
}

// netPoints orders r's points as every output shows them: a group per
// point of the matrix, by mode, message size, then connections, so that
// each mode's points read as growing load; in a group, a row per engine.
// Modes and engines keep the order the command named them in (engines
// says it, with any other a point names after them).
func netPoints(r *netresult.Report) (engines []string, groups [][]*netresult.Point) {
	modes := slices.Clone(r.Config.Modes)
	ps := make([]*netresult.Point, len(r.Points))
	engines = slices.Clone(r.Config.Engines)
	for i := range r.Points {
		ps[i] = &r.Points[i]
		engines, modes = append(engines, ps[i].Engine), append(modes, ps[i].Mode)
	}
	engines, modes = uniq(engines), uniq(modes)
	slices.SortStableFunc(ps, func(a, b *netresult.Point) int {
		return cmp.Or(cmp.Compare(slices.Index(modes, a.Mode), slices.Index(modes, b.Mode)), cmp.Compare(a.Size, b.Size),
			cmp.Compare(a.Conns, b.Conns), cmp.Compare(a.Loss, b.Loss), cmp.Compare(slices.Index(engines, a.Engine), slices.Index(engines, b.Engine)))
	})
	for i, p := range ps {
		if i == 0 || keyOf(p) != keyOf(ps[i-1]) {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], p)
	}
	return engines, groups
}

// netVerdict is what the load generator found wrong over groups: "0
// corrupted or lost bytes in 12 runs", or, in capitals, what went wrong
// and where, then a line for connection errors and one for points not
// measured. clean says that some run was measured and none corrupted or
// lost a byte or had a connection fail.
func netVerdict(groups [][]*netresult.Point) (lines []string, clean bool) {
	var runs, badRuns, errRuns, failed int
	var corrupted, lost, connErrors, leaked int64
	var bad, errs, leaks []string
	for _, g := range groups {
		for _, p := range g {
			if p.Err != "" {
				failed++
			}
			runs += len(p.Runs)
			// The point's sums are what count; its runs are looked at
			// only to say how many were hit.
			nBad, nErr := 0, 0
			for _, run := range p.Runs {
				if run.Corrupted > 0 || run.Lost > 0 {
					nBad++
				}
				if run.ConnErrors > 0 {
					nErr++
				}
			}
			at := p.Engine + " at " + keyOf(p).label()
			pLost := p.Lost
			if p.Restart {
				pLost = 0 // the restart's, in its column
			}
			if p.Corrupted > 0 || pLost > 0 {
				corrupted, lost, badRuns = corrupted+p.Corrupted, lost+pLost, badRuns+max(nBad, 1)
				bad = append(bad, fmt.Sprintf("%s: %d corrupted, %d lost bytes", at, p.Corrupted, pLost))
			}
			if p.Restart {
				// A restart's failed connections and lost requests are
				// what the reconnect strategy is measured by (columns),
				// not an engine's fault; a corrupted byte still is.
			} else if p.ConnErrors > 0 {
				connErrors, errRuns = connErrors+p.ConnErrors, errRuns+max(nErr, 1)
				errs = append(errs, fmt.Sprintf("%s: %d", at, p.ConnErrors))
			}
			if p.LeakedFDs > 0 {
				leaked += p.LeakedFDs
				leaks = append(leaks, fmt.Sprintf("%s: %d", at, p.LeakedFDs))
			}
		}
	}
	switch {
	case runs == 0:
		lines = append(lines, "NO RUN WAS MEASURED: nothing was verified")
	case corrupted == 0 && lost == 0:
		lines = append(lines, fmt.Sprintf("0 corrupted or lost bytes in %s", plural(runs, "run")))
	default:
		lines = append(lines, fmt.Sprintf("INTEGRITY FAILURE: %d CORRUPTED AND %d LOST BYTES in %d of %s: %s",
			corrupted, lost, badRuns, plural(runs, "run"), strings.Join(bad, "; ")))
	}
	if connErrors > 0 {
		lines = append(lines, fmt.Sprintf("%d CONNECTION ERRORS in %d of %s: %s", connErrors, errRuns,
			plural(runs, "run"), strings.Join(errs, "; ")))
	}
	if leaked > 0 {
		lines = append(lines, fmt.Sprintf("%d DESCRIPTORS LEAKED by the servers (held after the runs' connections had closed): %s",
			leaked, strings.Join(leaks, "; ")))
	}
	if failed > 0 {
		lines = append(lines, fmt.Sprintf("%s not measured (error): not verified", plural(failed, "point")))
	}
	return lines, runs > 0 && corrupted == 0 && lost == 0 && connErrors == 0 && leaked == 0
}

// --- header

// netMachine describes the machine in one line (a net report has no
// file, so no filesystem).
func netMachine(m features.Machine) string {
	m.Filesystem, m.Device = "", ""
	kernel := strings.TrimSpace(strings.TrimSpace("Linux "+m.Kernel) + " " + m.Arch)
	return strings.Join(append([]string{kernel}, hardwareParts(m)...), ", ")
}

// netCPUList formats CPU numbers with ranges of three or more: "0",
// "1-3", "0,2,4,5", "0-2,5,7-9".
func netCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); i++ {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i+1 {
			parts, i = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j])), j
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
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
		if p := netProcs(c); p != "" {
			s += ", server with GOMAXPROCS " + p
		}
	} else {
		s = where("server", c.ServerCPUs)
		if p := netProcs(c); p != "" {
			s += " with GOMAXPROCS " + p
		}
		s += ", " + where("load generator", c.ClientCPUs)
	}
	if n := oneLine(c.PinNote); n != "" {
		s += ": " + n
	}
	return s
}

// netProcs is the GOMAXPROCS the servers ran with, by engine in the
// report's order: "1 (net) or 2 (epoll, io_uring)", "2" when all had the
// same, or "" when the report does not say (made before it was recorded).
func netProcs(c netresult.Config) string {
	var vals []int
	by := map[int][]string{}
	for _, e := range c.Engines {
		v, ok := c.ServerProcs[e]
		if !ok {
			continue
		}
		if by[v] == nil {
			vals = append(vals, v)
		}
		by[v] = append(by[v], e)
	}
	if len(vals) == 0 {
		return ""
	}
	if len(vals) == 1 {
		return strconv.Itoa(vals[0])
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = strconv.Itoa(v) + " (" + strings.Join(by[v], ", ") + ")"
	}
	return strings.Join(parts, " or ")
}

// netMatrixLine describes the matrix: "conns 1, 1000 × sizes 64B, 16KiB ×
// modes pingpong".
func netMatrixLine(c netresult.Config) string {
	var conns, sizes, parts []string
	for _, n := range c.Conns {
		conns = append(conns, strconv.Itoa(n))
	}
	for _, n := range c.Sizes {
		sizes = append(sizes, units.FormatSize(int64(n)))
	}
	for i, v := range [][]string{conns, sizes, c.Modes} {
		if len(v) > 0 {
			parts = append(parts, []string{"conns ", "sizes ", "modes "}[i]+strings.Join(v, ", "))
		}
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
