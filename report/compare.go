package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/units"
)

// LoadJSON reads a report written by `iopath bench --format json` (the
// kinds "file" and "tree"), of this schema_version or an older one, whose
// keys it renames (benchRenames) and whose figures bench.Upgrade brings up
// to date. Its errors are one line and name path: the file is missing or
// unreadable, is not JSON, is JSON but not an iopath report, or has a
// schema_version newer than this iopath knows (then the fix is to upgrade
// iopath).
func LoadJSON(path string) (*bench.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file, not an iopath JSON report", path)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s: not JSON (%v at byte %d)", path, se, se.Offset)
		}
		return nil, fmt.Errorf("%s: not an iopath report (JSON, but not an object)", path)
	}
	const want = "want the output of iopath bench --format json"
	var tool string
	if raw, ok := probe["tool"]; !ok || json.Unmarshal(raw, &tool) != nil || tool != bench.ToolIopath {
		return nil, fmt.Errorf("%s: not an iopath report (its \"tool\" is not \"iopath\"; %s)", path, want)
	}
	var version int
	raw, ok := probe["schema_version"]
	if !ok {
		return nil, fmt.Errorf("%s: not an iopath report (no schema_version; %s)", path, want)
	}
	if err := json.Unmarshal(raw, &version); err != nil || version < 1 {
		return nil, fmt.Errorf("%s: not an iopath report (schema_version %s is not a positive whole number)", path, oneLine(string(raw)))
	}
	if version > bench.SchemaVersion {
		return nil, fmt.Errorf("%s: report schema_version %d is newer than this iopath reads (%d); upgrade iopath", path, version, bench.SchemaVersion)
	}
	if version < 3 {
		// Versions 1 and 2 had keys without their units: rename them.
		if data, err = benchRenames.rename(data); err != nil {
			return nil, fmt.Errorf("%s: not a valid iopath report: %v", path, oneLine(err.Error()))
		}
	} else {
		var kind string
		if raw, ok := probe["kind"]; !ok || json.Unmarshal(raw, &kind) != nil || (kind != bench.KindFile && kind != bench.KindTree) {
			return nil, fmt.Errorf("%s: not an iopath bench report (its \"kind\" is not %q or %q; %s)", path, bench.KindFile, bench.KindTree, want)
		}
	}
	var r bench.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a valid iopath report: %v", path, oneLine(err.Error()))
	}
	r.SchemaVersion = version
	if err := bench.Upgrade(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Verdict says whether a metric changed by more than its noise.
type Verdict string

const (
	// VerdictFaster and VerdictSlower are for throughput (higher is better).
	VerdictFaster Verdict = "faster"
	VerdictSlower Verdict = "slower"
	// VerdictBetter and VerdictWorse are for CPU-s/GiB and P99 latency
	// (lower is better).
	VerdictBetter Verdict = "better"
	VerdictWorse  Verdict = "worse"
	// VerdictNoise: the change is smaller than the runs' own spread.
	VerdictNoise Verdict = "noise"
	// VerdictUnknown: a side has fewer than two runs (values), so there is
	// no spread to judge the change by; Delta.Why says "1 run: spread
	// unknown". Such a change is never called significant.
	VerdictUnknown Verdict = "?"
	// VerdictNA: the metric was not measured on a side (0, e.g. latency
	// with --no-latency), so there is nothing to compare.
	VerdictNA Verdict = "n/a"
)

// CompareStatus says how a row of one report relates to the other.
type CompareStatus string

const (
	StatusMatched CompareStatus = "matched" // in both reports, both succeeded: deltas
	StatusAdded   CompareStatus = "added"   // only in the new report
	StatusRemoved CompareStatus = "removed" // only in the old report
	StatusError   CompareStatus = "error"   // in both, and failed on at least one side: no deltas
)

// RowKey identifies a result across reports: rows with equal keys are
// compared. An empty tool is taken as "iopath".
type RowKey struct {
	Tool    string `json:"tool"`
	Engine  string `json:"engine"`
	Cache   string `json:"cache"`
	Pattern string `json:"pattern"`
	BS      int    `json:"bs_bytes"`
	Workers int    `json:"workers"`
	QD      int    `json:"qd"`
	Consume string `json:"consume"`
}

func cmpKeyOf(r *bench.Result) RowKey {
	tool := r.Tool
	if tool == "" {
		tool = bench.ToolIopath
	}
	return RowKey{Tool: tool, Engine: r.Engine, Cache: r.Cache, Pattern: r.Pattern, BS: r.BS,
		Workers: r.Workers, QD: r.QD, Consume: r.Consume}
}

// CompareSide is one report's figures for a row.
type CompareSide struct {
	BytesPerS    float64 `json:"bytes_per_s"` // median
	BytesPerSMin float64 `json:"bytes_per_s_min"`
	BytesPerSMax float64 `json:"bytes_per_s_max"`
	CPUSPerGiB   float64 `json:"cpu_s_per_gib"` // median
	LatP99Ns     int64   `json:"lat_p99_ns"`    // over all runs' blocks
	Runs         int     `json:"runs"`          // runs that succeeded
	// NoisyRuns counts the runs marked noisy; Noisy lists their distinct
	// reasons.
	NoisyRuns int      `json:"noisy_runs"`
	Noisy     []string `json:"noisy,omitempty"`
	Error     string   `json:"error,omitempty"`
	// Interrupted says an interrupt stopped this side's benchmark before
	// the row's runs were all made: its figures are from fewer runs, or
	// (Error "interrupted") it was not run.
	Interrupted bool `json:"interrupted,omitempty"`

	total int // runs, failed ones included
	// Per-run values of the runs that succeeded, for the spreads.
	cpu []float64
	p99 []float64
}

func cmpSideOf(r *bench.Result) *CompareSide {
	s := &CompareSide{BytesPerS: r.BytesPerS, BytesPerSMin: r.BytesPerSMin, BytesPerSMax: r.BytesPerSMax,
		CPUSPerGiB: r.CPUSPerGiB, LatP99Ns: r.LatP99Ns, Error: oneLine(r.Error), Interrupted: r.Interrupted}
	s.total = len(r.Runs)
	for _, run := range r.Runs {
		if run.Noisy != "" {
			s.NoisyRuns++
			if why := oneLine(run.Noisy); !slices.Contains(s.Noisy, why) {
				s.Noisy = append(s.Noisy, why)
			}
		}
		if run.Error != "" {
			continue
		}
		s.Runs++
		if run.Bytes > 0 {
			s.cpu = append(s.cpu, float64(run.UserNs+run.SysNs)/1e9/(float64(run.Bytes)/(1<<30)))
		}
		if run.LatP99Ns > 0 {
			s.p99 = append(s.p99, float64(run.LatP99Ns))
		}
	}
	return s
}

// Delta is one metric's change between the reports.
type Delta struct {
	Old float64 `json:"old"`
	New float64 `json:"new"`
	// Pct is (New−Old)/Old × 100; 0 when the verdict is n/a.
	Pct float64 `json:"delta_pct"`
	// Spread is the noise band, in the metric's unit: the larger of the
	// two sides' min–max spread over their runs. 0 when unknown.
	Spread float64 `json:"spread"`
	// SpreadPct is Spread as a percentage of Old: a change with |Pct|
	// below it is noise.
	SpreadPct float64 `json:"spread_pct"`
	Verdict   Verdict `json:"verdict"`
	// Why explains a "?" or "n/a" verdict ("1 run: spread unknown").
	Why string `json:"why,omitempty"`
}

// judge builds a Delta. spread is max(old spread, new spread); runs is the
// fewer successful runs either side had and values the fewer per-run values
// either side had to compute its spread from; up is the verdict for an
// increase beyond the spread and down for a decrease.
func cmpJudge(old, new, spread float64, runs, values int, up, down Verdict) *Delta {
	d := &Delta{Old: old, New: new}
	oldOK, newOK := finite(old) && old > 0, finite(new) && new > 0
	if !oldOK || !newOK {
		d.Verdict = VerdictNA
		switch {
		case !oldOK && !newOK:
			d.Why = "not measured in either report"
		case !oldOK:
			d.Why = "not measured in the old report"
		default:
			d.Why = "not measured in the new report"
		}
		return d
	}
	d.Pct = (new - old) / old * 100
	switch {
	case runs < 2:
		d.Verdict = VerdictUnknown
		d.Why = plural(runs, "run") + ": spread unknown"
		return d
	case values < 2:
		d.Verdict = VerdictUnknown
		d.Why = "no per-run figures: spread unknown"
		return d
	}
	if !finite(spread) || spread < 0 {
		spread = 0
	}
	d.Spread = spread
	d.SpreadPct = spread / old * 100
	diff := math.Abs(new - old)
	switch {
	case diff == 0 || diff < spread:
		d.Verdict = VerdictNoise
	case new > old:
		d.Verdict = up
	default:
		d.Verdict = down
	}
	return d
}

// CompareRow is one result key's comparison.
type CompareRow struct {
	RowKey
	Status CompareStatus `json:"status"`
	// Old and New are the two reports' figures; nil on the side a row is
	// missing from.
	Old *CompareSide `json:"old"`
	New *CompareSide `json:"new"`
	// Throughput (bytes/s, higher is better), CPU (CPU-s/GiB, lower is
	// better) and P99 (ns, lower is better) are set for matched rows only.
	Throughput *Delta `json:"bytes_per_s,omitempty"`
	CPU        *Delta `json:"cpu_s_per_gib,omitempty"`
	P99        *Delta `json:"lat_p99_ns,omitempty"`
	// Error, for an error row, says which side failed and why.
	Error string `json:"error,omitempty"`
}

// Workload describes the row's workload: "seq, bs 128KiB, 1 worker, qd 1,
// consume checksum".
func (r *CompareRow) Workload() string {
	return strings.Join(workloadParts(r.Pattern, r.BS, r.Workers, r.QD, r.Consume), ", ")
}

// Name is the row's engine, with "(fio)" after a fio row's ioengine.
func (r *CompareRow) Name() string {
	if r.Tool != "" && r.Tool != bench.ToolIopath {
		return r.Engine + " (" + r.Tool + ")"
	}
	return r.Engine
}

// CompareSource describes one of the compared reports.
type CompareSource struct {
	// Path is the JSON file the report was read from; Compare leaves it
	// empty and its caller may set it.
	Path          string           `json:"path,omitempty"`
	SchemaVersion int              `json:"schema_version"`
	Command       string           `json:"command"`
	Started       time.Time        `json:"started"`
	Machine       features.Machine `json:"machine"`
	File          bench.FileInfo   `json:"file"`
	Fio           *bench.FioInfo   `json:"fio,omitempty"`
	// Interrupted says the benchmark was stopped before every run was
	// made: the report is incomplete.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Difference is a property in which the two reports differ.
type Difference struct {
	What string `json:"what"`
	Old  string `json:"old"`
	New  string `json:"new"`
	// Machine is true for a property of the machine (kernel, CPU, cores,
	// memory, ...): figures from different machines are not comparable.
	Machine bool `json:"machine"`
}

// CompareSummary counts the rows by throughput verdict and status.
type CompareSummary struct {
	Faster  int `json:"faster"`
	Slower  int `json:"slower"`
	Noise   int `json:"noise"`
	Unknown int `json:"unknown"`        // verdict "?": a side had a single run
	NA      int `json:"not_comparable"` // verdict "n/a"
	Added   int `json:"added"`
	Removed int `json:"removed"`
	Failed  int `json:"failed"` // error rows
	// NotApplicable counts rows that could not run on either side (mmap
	// with O_DIRECT, an engine the kernel does not support): not failures.
	NotApplicable int `json:"not_applicable"`
	// NotRun counts rows an interrupt kept from running on a side (the
	// report was cut short): not failures, and nothing to compare.
	NotRun int `json:"not_run"`
}

// String is the summary line: "3 faster, 1 slower, 8 within noise", then
// the other counts that are not zero.
func (s CompareSummary) String() string {
	parts := []string{fmt.Sprintf("%d faster, %d slower, %d within noise", s.Faster, s.Slower, s.Noise)}
	for _, c := range []struct {
		n    int
		what string
	}{
		{s.Unknown, "spread unknown (1 run)"}, {s.NA, "not comparable"},
		{s.Added, "added"}, {s.Removed, "removed"}, {s.Failed, "failed"}, {s.NotApplicable, "not applicable"},
		{s.NotRun, "not run (interrupted)"},
	} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return strings.Join(parts, ", ")
}

// Comparison is what Compare found: the rows of two reports matched by key,
// with their deltas and verdicts, and how the reports themselves differ.
// CompareTable, CompareJSON and CompareHTML render it.
type Comparison struct {
	Old CompareSource `json:"old"`
	New CompareSource `json:"new"`
	// Differences lists what differs between the reports' machines, files
	// and iopath versions, in a fixed order.
	Differences []Difference   `json:"differences"`
	Rows        []CompareRow   `json:"rows"`
	Summary     CompareSummary `json:"summary"`
	// NoiseRule states the rule the verdicts follow, for readers of the JSON.
	NoiseRule string `json:"noise_rule"`
}

// NoiseRule is the rule by which a change is called noise.
const NoiseRule = "a change is noise when |new - old| < max(old max - old min, new max - new min), " +
	"the min-max spread of each side's successful runs (GiB/s: bytes_per_s_min..max; " +
	"CPU-s/GiB: (user+sys) seconds per GiB of each run; P99: each run's P99); " +
	"with fewer than two runs on a side the spread is unknown and the verdict is \"?\""

// MachineDiffers reports whether the reports come from different machines.
func (c *Comparison) MachineDiffers() bool {
	for _, d := range c.Differences {
		if d.Machine {
			return true
		}
	}
	return false
}

// Regressions returns the rows that got worse: matched rows whose
// throughput got slower beyond the noise by more than pct percent (a drop
// of exactly pct is not counted; noise and "?" rows never count), rows that
// succeeded in the old report and fail in the new one, and rows measured
// in the old report that the new one lacks.
func (c *Comparison) Regressions(pct float64) []*CompareRow {
	var out []*CompareRow
	for i := range c.Rows {
		r := &c.Rows[i]
		switch {
		case r.Throughput != nil && r.Throughput.Verdict == VerdictSlower && -r.Throughput.Pct > pct:
			out = append(out, r)
		case r.Status == StatusError && r.Old != nil && r.New != nil && r.Old.Error == "" && r.New.Error != "" &&
			r.New.Error != bench.InterruptedError:
			// It worked before and fails now: the worst regression. (Not
			// run because the new benchmark was interrupted is not.)
			out = append(out, r)
		case r.Status == StatusRemoved && r.Old != nil && r.Old.Error == "":
			// It was measured before and is gone now.
			out = append(out, r)
		}
	}
	return out
}

// Compare matches the results of old and new by RowKey (tool, engine,
// cache, pattern, block size, workers, queue depth, consume) and compares
// each pair's median throughput, CPU-s/GiB and P99 latency.
//
// A change is noise when it is smaller than the runs' own spread:
// |new − old| < max(old spread, new spread), where a side's spread is
// max − min over its successful runs: for throughput the result's
// BytesPerSMax − BytesPerSMin, for CPU-s/GiB each run's (UserNs+SysNs)
// seconds per GiB of its Bytes, for P99 each run's LatP99Ns. A change of
// zero is noise too. With fewer than two runs on a side there is no spread:
// the verdict is VerdictUnknown ("?", "1 run: spread unknown"), never a
// significant change. A metric that is 0 on a side (not measured) gets
// VerdictNA.
//
// Rows in only one report are StatusAdded or StatusRemoved; rows that failed
// on either side are StatusError and have no deltas. Rows are in the new
// report's order, removed rows after them, grouped by workload in order of
// first appearance. Results with the same key in one report are paired in
// order. A nil report counts as an empty one.
func Compare(old, new *bench.Report) *Comparison {
	if old == nil {
		old = &bench.Report{}
	}
	if new == nil {
		new = &bench.Report{}
	}
	c := &Comparison{Old: cmpSourceOf(old), New: cmpSourceOf(new), NoiseRule: NoiseRule}
	c.Differences = compareDifferences(old, new)

	type slot struct {
		key RowKey
		n   int // occurrence of key in its report
	}
	oldIndex := map[slot]int{}
	seen := map[RowKey]int{}
	for i := range old.Results {
		k := cmpKeyOf(&old.Results[i])
		oldIndex[slot{k, seen[k]}] = i
		seen[k]++
	}
	used := make([]bool, len(old.Results))
	var rows []CompareRow
	clear(seen)
	for i := range new.Results {
		nr := &new.Results[i]
		k := cmpKeyOf(nr)
		s := slot{k, seen[k]}
		seen[k]++
		row := CompareRow{RowKey: k, New: cmpSideOf(nr)}
		j, ok := oldIndex[s]
		if !ok {
			row.Status = StatusAdded
			rows = append(rows, row)
			continue
		}
		used[j] = true
		row.Old = cmpSideOf(&old.Results[j])
		cmpFillRow(&row)
		rows = append(rows, row)
	}
	for i := range old.Results {
		if !used[i] {
			rows = append(rows, CompareRow{RowKey: cmpKeyOf(&old.Results[i]), Status: StatusRemoved, Old: cmpSideOf(&old.Results[i])})
		}
	}

	// Group by workload, keeping the order within each group.
	var order []string
	groups := map[string][]CompareRow{}
	for _, r := range rows {
		w := r.Workload()
		if _, ok := groups[w]; !ok {
			order = append(order, w)
		}
		groups[w] = append(groups[w], r)
	}
	c.Rows = []CompareRow{}
	for _, w := range order {
		c.Rows = append(c.Rows, groups[w]...)
	}

	for _, r := range c.Rows {
		s := &c.Summary
		switch r.Status {
		case StatusAdded:
			s.Added++
		case StatusRemoved:
			s.Removed++
		case StatusError:
			switch {
			case r.Old.Error == bench.InterruptedError || r.New.Error == bench.InterruptedError:
				s.NotRun++
			case cmpNotApplicable(r.Old.Error) && cmpNotApplicable(r.New.Error):
				s.NotApplicable++
			default:
				s.Failed++
			}
		case StatusMatched:
			switch r.Throughput.Verdict {
			case VerdictFaster:
				s.Faster++
			case VerdictSlower:
				s.Slower++
			case VerdictNoise:
				s.Noise++
			case VerdictUnknown:
				s.Unknown++
			default:
				s.NA++
			}
		}
	}
	return c
}

// cmpNotApplicable says an error means the row could not run at all there,
// as the runner words it, rather than that it failed.
func cmpNotApplicable(err string) bool {
	return strings.HasPrefix(err, "not applicable") || strings.Contains(err, "not supported")
}

// fillRow judges a row present in both reports.
func cmpFillRow(row *CompareRow) {
	o, n := row.Old, row.New
	if o.Error != "" || n.Error != "" {
		row.Status = StatusError
		switch {
		case o.Error != "" && n.Error != "" && o.Error == n.Error:
			row.Error = "old and new: " + n.Error
		case o.Error != "" && n.Error != "":
			row.Error = "old: " + o.Error + "; new: " + n.Error
		case o.Error != "":
			row.Error = "old: " + o.Error
		default:
			row.Error = "new: " + n.Error
		}
		return
	}
	row.Status = StatusMatched
	runs := min(o.Runs, n.Runs)
	row.Throughput = cmpJudge(o.BytesPerS, n.BytesPerS,
		max(o.BytesPerSMax-o.BytesPerSMin, n.BytesPerSMax-n.BytesPerSMin), runs, runs, VerdictFaster, VerdictSlower)
	row.CPU = cmpJudge(o.CPUSPerGiB, n.CPUSPerGiB, max(stats.Spread(o.cpu), stats.Spread(n.cpu)),
		runs, min(len(o.cpu), len(n.cpu)), VerdictWorse, VerdictBetter)
	row.P99 = cmpJudge(float64(o.LatP99Ns), float64(n.LatP99Ns), max(stats.Spread(o.p99), stats.Spread(n.p99)),
		runs, min(len(o.p99), len(n.p99)), VerdictWorse, VerdictBetter)
}

func cmpSourceOf(r *bench.Report) CompareSource {
	return CompareSource{SchemaVersion: r.SchemaVersion, Command: r.Command, Started: r.Started,
		Machine: r.Machine, File: r.File, Fio: r.Fio, Interrupted: r.Interrupted}
}

// differences lists how the reports' machines, files and versions differ.
func compareDifferences(old, new *bench.Report) []Difference {
	ds := []Difference{}
	add := func(what, o, n string, machine bool) {
		if o != n {
			ds = append(ds, Difference{What: what, Old: o, New: n, Machine: machine})
		}
	}
	size := func(n int64) string {
		if n <= 0 {
			return ""
		}
		return units.FormatSize(n)
	}
	num := func(n int) string {
		if n <= 0 {
			return ""
		}
		return fmt.Sprint(n)
	}
	om, nm := old.Machine, new.Machine
	add("kernel", om.Kernel, nm.Kernel, true)
	add("arch", om.Arch, nm.Arch, true)
	add("CPU model", om.CPUModel, nm.CPUModel, true)
	add("cores", num(om.Cores), num(nm.Cores), true)
	add("memory", size(om.MemBytes), size(nm.MemBytes), true)
	add("page size", num(om.PageSize), num(nm.PageSize), true)
	add("THP", om.THP, nm.THP, true)
	add("filesystem", om.Filesystem, nm.Filesystem, true)
	add("device", om.Device, nm.Device, true)
	add("io_uring", om.IOURing, nm.IOURing, false)
	add("latency clock", om.LatencyClock, nm.LatencyClock, false)
	if !old.File.Temporary || !new.File.Temporary {
		// Temporary files have made-up names: only their sizes matter.
		add("file", units.QuotePath(old.File.Path), units.QuotePath(new.File.Path), false)
	}
	add("file size", size(old.File.SizeBytes), size(new.File.SizeBytes), false)
	add("Go version", om.GoVersion, nm.GoVersion, false)
	add("iopath version", om.IopathVersion, nm.IopathVersion, false)
	fio := func(f *bench.FioInfo) string {
		if f == nil {
			return ""
		}
		return f.Version
	}
	add("fio version", fio(old.Fio), fio(new.Fio), false)
	return ds
}

// compareLegend explains the text table.
const compareLegend = `GiB/s      medians, old → new; Δ% = (new − old) / old; higher is faster
CPU-s/GiB  Δ% of the median user+system CPU seconds per GiB; lower is better
P99        Δ% of the per-block P99 latency over all runs; lower is better
noise      the change is smaller than the runs' own spread:
           |new − old| < max(old max − old min, new max − new min), the min–max over each
           side's successful runs (GiB/s: the reported min–max; CPU-s/GiB: each run's
           (user+sys) per GiB; P99: each run's P99)
? (1 run)  a side had a single run: spread unknown, so no verdict (a bare ?: no per-run figures)
n/a        not measured on a side
runs       successful runs, old→new; * some were noisy, kept in the figures (see notes)
`

// CompareTable writes c as a text table for people: which reports, how
// they differ (machine, file, version), one row per result key grouped by
// workload, a legend with the noise rule, a summary line and notes on noisy
// runs.
func CompareTable(w io.Writer, c *Comparison) error {
	var b bytes.Buffer
	writeCompareHeader(&b, c)

	groups := compareGroups(c.Rows)
	if len(c.Rows) == 0 {
		b.WriteString("\nno results in either report\n")
	} else {
		heads := []string{"engine", "cache", "old", "", "new", "Δ%", "verdict", "Δ%", "verdict", "Δ%", "verdict", "runs"}
		right := []bool{false, false, true, false, true, true, false, true, false, true, false, false}
		gaps := []int{0, 2, 2, 1, 1, 1, 1, 2, 1, 2, 1, 2}
		var table [][]string
		for _, g := range groups {
			for _, r := range g.rows {
				table = append(table, compareCells(r))
			}
		}
		widths := make([]int, len(heads))
		for i, h := range heads {
			widths[i] = cmpWidth(h)
		}
		for _, row := range table {
			if len(row) == len(heads) {
				for i, cell := range row {
					widths[i] = max(widths[i], cmpWidth(cell))
				}
			} else {
				for i := range 2 {
					widths[i] = max(widths[i], cmpWidth(row[i]))
				}
			}
		}
		// An error row has three cells; its last runs on unpadded.
		line := func(cells []string) {
			var l strings.Builder
			for i, cell := range cells {
				l.WriteString(strings.Repeat(" ", gaps[i]))
				if len(cells) < len(heads) && i == len(cells)-1 {
					l.WriteString(cell)
					break
				}
				pad := strings.Repeat(" ", widths[i]-cmpWidth(cell))
				if right[i] {
					l.WriteString(pad + cell)
				} else {
					l.WriteString(cell + pad)
				}
			}
			b.WriteString(strings.TrimRight(l.String(), " "))
			b.WriteByte('\n')
		}
		// The labels above the column heads, each starting over the first
		// column it covers.
		starts := make([]int, len(heads))
		total := 0
		for i := range heads {
			total += gaps[i]
			starts[i] = total
			total += widths[i]
		}
		top := []rune(strings.Repeat(" ", total))
		for _, t := range []struct {
			label string
			col   int
		}{{"GiB/s", 2}, {"CPU-s/GiB", 7}, {"P99", 9}} {
			copy(top[starts[t.col]:], []rune(t.label))
		}
		b.WriteByte('\n')
		b.WriteString(strings.TrimRight(string(top), " ") + "\n")
		line(heads)
		n := 0
		for _, g := range groups {
			if len(groups) > 1 {
				fmt.Fprintf(&b, "-- %s\n", g.key)
			}
			for range g.rows {
				line(table[n])
				n++
			}
		}
		b.WriteByte('\n')
		b.WriteString(compareLegend)
	}
	fmt.Fprintf(&b, "\nsummary: %s\n", c.Summary)

	if notes := compareNotes(c, len(groups) > 1); len(notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range notes {
			b.WriteString("  - " + n + "\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func writeCompareHeader(b *bytes.Buffer, c *Comparison) {
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(b, "%-9s %s\n", label+":", value)
		}
	}
	field("old", cmpSource(c.Old))
	field("new", cmpSource(c.New))
	if !c.MachineDiffers() {
		field("machine", cmpMachine(c.New.Machine))
	}
	field("file", cmpFileLine(c))
	if groups := compareGroups(c.Rows); len(groups) == 1 {
		field("workload", groups[0].key)
	}
	if len(c.Differences) == 0 {
		return
	}
	if c.MachineDiffers() {
		b.WriteString("\nWARNING: the reports come from different machines; comparisons across machines are suspect.\n")
	}
	b.WriteString("\nthe reports differ in:\n")
	w := 0
	for _, d := range c.Differences {
		w = max(w, cmpWidth(d.What))
	}
	for _, d := range c.Differences {
		fmt.Fprintf(b, "  %s%s  %s → %s\n", d.What, strings.Repeat(" ", w-cmpWidth(d.What)), cmpOrNone(d.Old), cmpOrNone(d.New))
	}
}

func cmpOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return oneLine(s)
}

func cmpSource(s CompareSource) string {
	var parts []string
	if s.Machine.IopathVersion != "" {
		parts = append(parts, "iopath "+s.Machine.IopathVersion)
	}
	if !s.Started.IsZero() {
		parts = append(parts, s.Started.UTC().Format("2006-01-02 15:04:05 MST"))
	}
	if s.Interrupted {
		parts = append(parts, "interrupted: incomplete")
	}
	desc := strings.Join(parts, ", ")
	path := units.QuotePath(s.Path)
	switch {
	case s.Path == "":
		return desc
	case desc == "":
		return path
	}
	return path + " (" + desc + ")"
}

func cmpMachine(m features.Machine) string {
	var parts []string
	if m.Kernel != "" {
		parts = append(parts, strings.TrimSpace("Linux "+m.Kernel+" "+m.Arch))
	}
	return strings.Join(append(parts, hardwareParts(m)...), ", ")
}

type compareGroup struct {
	key  string
	rows []*CompareRow
}

// compareGroups splits rows (already grouped by Compare) at workload changes.
func compareGroups(rows []CompareRow) []compareGroup {
	var gs []compareGroup
	for i := range rows {
		r := &rows[i]
		w := r.Workload()
		if len(gs) == 0 || gs[len(gs)-1].key != w {
			gs = append(gs, compareGroup{key: w})
		}
		gs[len(gs)-1].rows = append(gs[len(gs)-1].rows, r)
	}
	return gs
}

// compareCells formats one row of the text table. An error row has three
// cells: engine, cache and the error.
func compareCells(r *CompareRow) []string {
	cells := []string{r.Name(), r.Cache}
	gib := func(s *CompareSide) string {
		if s == nil {
			return "-"
		}
		return cmpGiB(s.BytesPerS)
	}
	runs := func() string {
		n := func(s *CompareSide) string {
			if s == nil {
				return "-"
			}
			return fmt.Sprint(s.Runs)
		}
		out := n(r.Old) + "→" + n(r.New)
		if (r.Old != nil && r.Old.NoisyRuns > 0) || (r.New != nil && r.New.NoisyRuns > 0) {
			out += " *"
		}
		return out
	}
	switch r.Status {
	case StatusError:
		what := "error"
		if (r.Old != nil && r.Old.Error == bench.InterruptedError) || (r.New != nil && r.New.Error == bench.InterruptedError) {
			what = "not run"
		}
		return append(cells, what+" ("+strings.Replace(r.Error, ": ", "): ", 1))
	case StatusAdded, StatusRemoved:
		return append(cells, gib(r.Old), "→", gib(r.New), "", string(r.Status), "", "", "", "", runs())
	}
	return append(cells, gib(r.Old), "→", gib(r.New),
		cmpPct(r.Throughput), cmpVerdict(r.Throughput),
		cmpPct(r.CPU), cmpVerdict(r.CPU),
		cmpPct(r.P99), cmpVerdict(r.P99), runs())
}

func cmpGiB(bps float64) string {
	if !finite(bps) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", bps/(1<<30))
}

func cmpPct(d *Delta) string {
	if d == nil || d.Verdict == VerdictNA || !finite(d.Pct) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", d.Pct)
}

func cmpVerdict(d *Delta) string {
	switch {
	case d == nil:
		return ""
	case d.Verdict == VerdictUnknown && strings.HasSuffix(d.Why, " run: spread unknown"):
		return "? (" + strings.TrimSuffix(d.Why, ": spread unknown") + ")"
	}
	return string(d.Verdict)
}

// compareNotes lists, row by row and side by side, the rows an interrupt
// cut short and the noisy runs.
func compareNotes(c *Comparison, withWorkload bool) []string {
	var notes []string
	for i := range c.Rows {
		r := &c.Rows[i]
		label := r.Name() + " " + r.Cache
		if withWorkload {
			label += " (" + r.Workload() + ")"
		}
		for _, side := range []struct {
			name string
			s    *CompareSide
		}{{"old", r.Old}, {"new", r.New}} {
			if side.s == nil {
				continue
			}
			if side.s.Interrupted && side.s.Error == "" {
				notes = append(notes, fmt.Sprintf("%s: %s: cut short by an interrupt after %s",
					label, side.name, plural(side.s.total, "run")))
			}
			if side.s.NoisyRuns == 0 {
				continue
			}
			notes = append(notes, fmt.Sprintf("%s: %s: %d of %s noisy (%s)",
				label, side.name, side.s.NoisyRuns, plural(side.s.total, "run"), cmpReasons(side.s.Noisy)))
		}
	}
	return notes
}

// cmpReasons shows the first reason a side's runs were noisy, and how many
// other reasons there were (they mostly differ only in their figures).
func cmpReasons(rs []string) string {
	switch len(rs) {
	case 0:
		return "no reason given"
	case 1:
		return rs[0]
	}
	return fmt.Sprintf("%s; %d more", rs[0], len(rs)-1)
}

// cmpFileLine describes the file both reports read, or "" when they read
// different files (Differences then says how).
func cmpFileLine(c *Comparison) string {
	o, n := c.Old.File, c.New.File
	switch {
	case o.SizeBytes != n.SizeBytes:
		return ""
	case o.Temporary && n.Temporary:
		return fmt.Sprintf("temporary, made for each report (%s)", units.FormatSize(n.SizeBytes))
	case o.Path == n.Path && n.Path != "":
		return fmt.Sprintf("%s (%s)", units.QuotePath(n.Path), units.FormatSize(n.SizeBytes))
	}
	return ""
}

func cmpWidth(s string) int { return utf8.RuneCountInString(s) }

// CompareSchemaVersion is the schema_version of `iopath compare --format
// json` (docs/schema/compare.schema.json).
const CompareSchemaVersion = 1

// CompareJSON writes c as indented JSON followed by a newline, of kind
// "compare". The output is always valid JSON: a float that is NaN or
// infinite is written as 0.
func CompareJSON(w io.Writer, c *Comparison) error {
	return jsondoc.Write(w, "compare", CompareSchemaVersion, c)
}
