package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/units"
)

// Verdict says whether a figure changed by more than its noise.
type Verdict string

const (
	// VerdictFaster and VerdictSlower are for figures where higher is
	// better (GiB/s, files/s, QPS).
	VerdictFaster Verdict = "faster"
	VerdictSlower Verdict = "slower"
	// VerdictBetter and VerdictWorse are for figures where lower is
	// better (CPU per GiB or per request, P99 latency).
	VerdictBetter Verdict = "better"
	VerdictWorse  Verdict = "worse"
	// VerdictNoise: the test found no change (see Delta.Test).
	VerdictNoise Verdict = "noise"
	// VerdictUnknown: a side has a single run, so there is nothing to
	// judge the change by; Delta.Why says "1 run: spread unknown". Such a
	// change is never called significant.
	VerdictUnknown Verdict = "?"
	// VerdictNA: the figure was not measured on a side.
	VerdictNA Verdict = "n/a"
)

// The tests a Delta's verdict comes from (Delta.Test), and the rule in
// words (Comparison.NoiseRule): stats.Judge judges.
const (
	TestMannWhitney = stats.TestMannWhitney
	TestMinMax      = stats.TestMinMax
	NoiseRule       = stats.NoiseRule
)

// CompareStatus says how a row of one report relates to the other.
type CompareStatus string

const (
	StatusMatched CompareStatus = "matched" // in both reports, both succeeded: deltas
	StatusAdded   CompareStatus = "added"   // only in the new report
	StatusRemoved CompareStatus = "removed" // only in the old report
	StatusError   CompareStatus = "error"   // in both, and failed on at least one side: no deltas
)

// CompareSource describes one of the compared reports.
type CompareSource struct {
	// Path is the JSON file the report was read from.
	Path          string           `json:"path,omitempty"`
	Kind          string           `json:"kind"`
	SchemaVersion int              `json:"schema_version"`
	Command       string           `json:"command"`
	Started       time.Time        `json:"started"`
	Machine       features.Machine `json:"machine"`
	// Props are the settings two reports of the kind should share to be
	// compared (the file and its size, the fio version, connections and
	// payload...): a difference is listed.
	Props []Field `json:"-"`
	// Interrupted says the measurement was stopped before every run was
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

// CompareMetric is one headline figure of the compared kind.
type CompareMetric struct {
	Key    string `json:"key"`
	Title  string `json:"title"`
	Unit   string `json:"unit,omitempty"`
	Better string `json:"better"` // "higher" or "lower"

	col Column
}

// CompareFigure is one side's value of a metric: the median over its runs, their
// extremes and the runs themselves.
type CompareFigure struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Runs   []float64 `json:"runs,omitempty"`
}

// CompareSide is one report's row.
type CompareSide struct {
	// Figures holds one CompareFigure per metric, in Comparison.Metrics' order;
	// nil for a row that failed.
	Figures []*CompareFigure `json:"figures,omitempty"`
	Error   string           `json:"error,omitempty"`
	// Noisy is why some runs were noisy ("" when none was); they are kept
	// in the figures.
	Noisy string `json:"noisy,omitempty"`
	// Runs is how many runs the row's figures come from.
	Runs int `json:"run_count"`
}

// Delta is one metric's change between the reports.
type Delta struct {
	Metric string  `json:"metric"`
	Old    float64 `json:"old"`
	New    float64 `json:"new"`
	// Pct is (New−Old)/Old × 100; 0 when the verdict is n/a.
	Pct     float64 `json:"delta_pct"`
	Verdict Verdict `json:"verdict"`
	// Test is the rule the verdict comes from: TestMannWhitney or
	// TestMinMax ("" when there was nothing to test).
	Test string `json:"test,omitempty"`
	// P is the Mann–Whitney test's p-value.
	P float64 `json:"p,omitempty"`
	// Spread is the min–max rule's noise band, in the metric's unit.
	Spread float64 `json:"spread,omitempty"`
	// Why explains a "?" or "n/a" verdict ("1 run: spread unknown").
	Why string `json:"why,omitempty"`
}

// CompareRow is one row's comparison, named by the texts of its
// report's key columns (engine, cache...) within its group (workload).
// Key holds those the table shows; Fields all of them by column key.
type CompareRow struct {
	Group  string            `json:"group,omitempty"`
	Key    []string          `json:"key"`
	Status CompareStatus     `json:"status"`
	Old    *CompareSide      `json:"old"`
	New    *CompareSide      `json:"new"`
	Deltas []*Delta          `json:"deltas,omitempty"`
	Fields map[string]string `json:"fields"`
	// Error, for an error row, says which side failed and why.
	Error string `json:"error,omitempty"`
}

// Name is the row's key, as the report's table shows it.
func (r *CompareRow) Name() string { return strings.Join(r.Key, " ") }

// Headline is the row's first metric's change: the one the summary counts
// and --fail-on-regression judges (nil when the row is not matched).
func (r *CompareRow) Headline() *Delta {
	if len(r.Deltas) == 0 {
		return nil
	}
	return r.Deltas[0]
}

// CompareSummary counts the rows by headline verdict and status.
type CompareSummary struct {
	Faster  int `json:"faster"` // better, for a headline where lower is better
	Slower  int `json:"slower"`
	Noise   int `json:"noise"`
	Unknown int `json:"unknown"`        // verdict "?": a side had a single run
	NA      int `json:"not_comparable"` // verdict "n/a"
	Added   int `json:"added"`
	Removed int `json:"removed"`
	Failed  int `json:"failed"`
	// NotApplicable counts rows that could not run on either side (mmap
	// with O_DIRECT, an engine the kernel does not support): not failures.
	NotApplicable int `json:"not_applicable"`
	// NotRun counts rows an interrupt kept from running on a side.
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

// Comparison is what Compare found: two reports' rows matched by key, each
// headline metric's change and verdict, and how the reports differ.
type Comparison struct {
	// Kind is the kind of the two reports ("file", "tree", "net-echo"...).
	Kind string        `json:"compared_kind"`
	Old  CompareSource `json:"old"`
	New  CompareSource `json:"new"`
	// Differences lists what differs between the reports' machines and
	// settings, in a fixed order.
	Differences []Difference    `json:"differences"`
	Metrics     []CompareMetric `json:"metrics"`
	Rows        []CompareRow    `json:"rows"`
	Summary     CompareSummary  `json:"summary"`
	NoiseRule   string          `json:"noise_rule"`

	keyCols []Column // the key columns of the reports' tables
}

// MachineDiffers reports whether the reports come from different machines.
func (c *Comparison) MachineDiffers() bool {
	return slices.ContainsFunc(c.Differences, func(d Difference) bool { return d.Machine })
}

// Regressions returns the rows that got worse: matched rows whose headline
// figure got worse beyond the noise by more than pct percent (a change of
// exactly pct is not counted; noise and "?" never count), rows that
// succeeded in the old report and fail in the new one, and rows measured
// in the old report that the new one lacks.
func (c *Comparison) Regressions(pct float64) []*CompareRow {
	var out []*CompareRow
	for i := range c.Rows {
		r := &c.Rows[i]
		h := r.Headline()
		switch {
		case h != nil && (h.Verdict == VerdictSlower || h.Verdict == VerdictWorse) && math.Abs(h.Pct) > pct:
			out = append(out, r)
		case r.Status == StatusError && r.Old.Error == "" && r.New.Error != "" && !cmpNotRun(r.New.Error):
			// It worked before and fails now (not merely not run because
			// the new measurement was interrupted).
			out = append(out, r)
		case r.Status == StatusRemoved && r.Old.Error == "":
			out = append(out, r)
		}
	}
	return out
}

// compared is one report made ready for compare: its table and its source.
type compared struct {
	doc *Doc
	src CompareSource
}

// keyedRow is a row of a Doc as compare names it: by its group and its
// key columns' texts (the Doc's text columns, hidden ones included), with
// an id that pairs the n-th row of a name in one report with the n-th in
// the other.
type keyedRow struct {
	id    string
	row   *Row
	named CompareRow // Group, Key and Fields
}

func keyedRows(d *Doc) []keyedRow {
	var out []keyedRow
	seen := map[string]int{}
	for gi := range d.Groups {
		g := &d.Groups[gi]
		for ri := range g.Rows {
			r := &g.Rows[ri]
			k := keyedRow{id: g.Title, row: r, named: CompareRow{Group: g.Title, Fields: map[string]string{}}}
			for i, col := range d.Columns {
				if col.Left && i < len(r.Cells) {
					t := r.Cells[i].Text
					k.id += "\x00" + t
					k.named.Fields[col.Key] = t
					if !col.Hidden {
						k.named.Key = append(k.named.Key, t)
					}
				}
			}
			seen[k.id]++
			k.id += "\x00" + strconv.Itoa(seen[k.id])
			out = append(out, k)
		}
	}
	return out
}

// metricsOf lists old's headline columns that new has too (by key), with
// their indexes in each.
func metricsOf(old, new *Doc) (ms []CompareMetric, oi, ni []int) {
	for i, c := range old.Columns {
		j := slices.IndexFunc(new.Columns, func(n Column) bool { return n.Key == c.Key })
		if !c.Headline || j < 0 {
			continue
		}
		better := "higher"
		if c.Better == Lower {
			better = "lower"
		}
		ms = append(ms, CompareMetric{Key: c.Key, Title: c.Title, Unit: c.Unit, Better: better, col: c})
		oi, ni = append(oi, i), append(ni, j)
	}
	return ms, oi, ni
}

// sideOf is a row's side: its figures for the metrics at idx.
func sideOf(r *Row, idx []int) *CompareSide {
	s := &CompareSide{Error: strings.TrimPrefix(oneLine(r.Err), "error: "), Noisy: oneLine(r.Noisy)}
	if r.Err != "" {
		return s
	}
	for _, i := range idx {
		var c Cell
		if i < len(r.Cells) {
			c = r.Cells[i]
		}
		f := &CompareFigure{Median: c.Value, Min: c.Min, Max: c.Max, Runs: c.Runs}
		if !c.Num {
			f.Median, f.Min, f.Max = math.NaN(), math.NaN(), math.NaN()
		}
		s.Figures = append(s.Figures, f)
		s.Runs = max(s.Runs, len(c.Runs))
	}
	if s.Runs == 0 && len(s.Figures) > 0 {
		s.Runs = 1 // a figure without its runs is one measurement
	}
	return s
}

// compare matches the rows of two reports of one kind by their group
// (workload) and key columns (engine, cache...) and judges the change of
// each headline figure (Column.Headline) by stats.Judge. A figure not
// measured on a side (not a finite number above zero) gets VerdictNA.
//
// Rows in only one report are StatusAdded or StatusRemoved; rows that
// failed on either side are StatusError and have no deltas. Rows are in
// the new report's order, removed rows after them, grouped as in the
// reports. Rows with the same name in one report are paired in order.
func compare(old, new compared) *Comparison {
	c := &Comparison{Kind: new.src.Kind, Old: old.src, New: new.src, Differences: differences(old.src, new.src),
		Rows: []CompareRow{}, NoiseRule: NoiseRule}
	var oi, ni []int
	c.Metrics, oi, ni = metricsOf(old.doc, new.doc)
	for _, col := range new.doc.Columns {
		if col.Left {
			c.keyCols = append(c.keyCols, col)
		}
	}
	oldRows := keyedRows(old.doc)
	oldAt := map[string]int{}
	for i, r := range oldRows {
		oldAt[r.id] = i
	}
	used := make([]bool, len(oldRows))
	for _, nr := range keyedRows(new.doc) {
		r := nr.named
		r.Status, r.New = StatusAdded, sideOf(nr.row, ni)
		if j, ok := oldAt[nr.id]; ok {
			used[j], r.Old = true, sideOf(oldRows[j].row, oi)
			c.judgeRow(&r)
		}
		c.Rows = append(c.Rows, r)
	}
	for j, or := range oldRows {
		if !used[j] {
			r := or.named
			r.Status, r.Old = StatusRemoved, sideOf(or.row, oi)
			c.Rows = append(c.Rows, r)
		}
	}
	// Group, keeping the order within each group.
	first := map[string]int{}
	for i, r := range slices.Backward(c.Rows) {
		first[r.Group] = i
	}
	slices.SortStableFunc(c.Rows, func(a, b CompareRow) int { return first[a.Group] - first[b.Group] })
	for i := range c.Rows {
		c.count(&c.Rows[i])
	}
	return c
}

func (c *Comparison) count(r *CompareRow) {
	s := &c.Summary
	switch r.Status {
	case StatusAdded:
		s.Added++
	case StatusRemoved:
		s.Removed++
	case StatusError:
		switch {
		case cmpNotRun(r.Old.Error) || cmpNotRun(r.New.Error):
			s.NotRun++
		case notApplicable(r.Old.Error) && notApplicable(r.New.Error):
			s.NotApplicable++
		default:
			s.Failed++
		}
	default:
		v := VerdictNA
		if h := r.Headline(); h != nil {
			v = h.Verdict
		}
		*map[Verdict]*int{VerdictFaster: &s.Faster, VerdictBetter: &s.Faster, VerdictSlower: &s.Slower, VerdictWorse: &s.Slower,
			VerdictNoise: &s.Noise, VerdictUnknown: &s.Unknown, VerdictNA: &s.NA}[v]++
	}
}

// cmpNotRun says an error means an interrupt kept the row from running.
func cmpNotRun(err string) bool {
	return strings.HasPrefix(err, "interrupted") || strings.HasPrefix(err, "not run")
}

// notApplicable says an error means the row could not run there at all
// (as the runners word it), rather than that it failed.
func notApplicable(err string) bool {
	return strings.HasPrefix(err, "not applicable") || strings.Contains(err, "not supported")
}

// judgeRow judges a row present in both reports.
func (c *Comparison) judgeRow(row *CompareRow) {
	o, n := row.Old, row.New
	if o.Error != "" || n.Error != "" {
		row.Status = StatusError
		switch {
		case o.Error != "" && o.Error == n.Error:
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
	for i, m := range c.Metrics {
		row.Deltas = append(row.Deltas, judge(m, o.Figures[i], n.Figures[i]))
	}
}

// judge compares one metric's figures.
func judge(m CompareMetric, o, n *CompareFigure) *Delta {
	d := &Delta{Metric: m.Key, Old: o.Median, New: n.Median}
	oldOK, newOK := finite(o.Median) && o.Median > 0, finite(n.Median) && n.Median > 0
	if !oldOK || !newOK {
		d.Verdict = VerdictNA
		d.Old, d.New = finiteOr0(o.Median), finiteOr0(n.Median)
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
	d.Pct = (n.Median - o.Median) / o.Median * 100
	lower := m.col.Better == Lower
	j := stats.Judge(o.Runs, n.Runs, !lower)
	d.Test, d.P, d.Spread = j.Test, j.P, j.Spread
	switch j.Change {
	case stats.Unknown:
		d.Verdict, d.Why = VerdictUnknown, "1 run: spread unknown"
	case stats.Noise:
		d.Verdict = VerdictNoise
	case stats.Better:
		d.Verdict = map[bool]Verdict{false: VerdictFaster, true: VerdictBetter}[lower]
	default:
		d.Verdict = map[bool]Verdict{false: VerdictSlower, true: VerdictWorse}[lower]
	}
	return d
}

func finiteOr0(f float64) float64 {
	if !finite(f) {
		return 0
	}
	return f
}

// differences lists how the reports' machines and settings differ.
func differences(old, new CompareSource) []Difference {
	ds := []Difference{}
	add := func(what, o, n string, machine bool) {
		if o != n {
			ds = append(ds, Difference{What: what, Old: o, New: n, Machine: machine})
		}
	}
	// n's text, "" for 0: not recorded.
	pos := func(n int64, f func(int64) string) string {
		if n <= 0 {
			return ""
		}
		return f(n)
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	om, nm := old.Machine, new.Machine
	add("kernel", om.Kernel, nm.Kernel, true)
	add("arch", om.Arch, nm.Arch, true)
	add("CPU model", om.CPUModel, nm.CPUModel, true)
	add("cores", pos(int64(om.Cores), itoa), pos(int64(nm.Cores), itoa), true)
	add("memory", pos(om.MemBytes, units.FormatSize), pos(nm.MemBytes, units.FormatSize), true)
	add("page size", pos(int64(om.PageSize), itoa), pos(int64(nm.PageSize), itoa), true)
	add("THP", om.THP, nm.THP, true)
	add("filesystem", om.Filesystem, nm.Filesystem, true)
	add("device", om.Device, nm.Device, true)
	add("io_uring", om.IOURing, nm.IOURing, false)
	add("latency clock", om.LatencyClock, nm.LatencyClock, false)
	add("buffer skew", skewString(om), skewString(nm), false)
	add("mapped copy", copyRoutine(om), copyRoutine(nm), false)
	// The kind's own settings, in the new report's order, then those only
	// the old one has.
	only := map[string]string{}
	for _, f := range old.Props {
		only[f.Key] = f.Value
	}
	for _, f := range new.Props {
		add(f.Key, only[f.Key], f.Value, false)
		delete(only, f.Key)
	}
	for _, f := range old.Props {
		if v, ok := only[f.Key]; ok {
			add(f.Key, v, "", false)
		}
	}
	add("Go version", om.GoVersion, nm.GoVersion, false)
	add("iopath version", om.IopathVersion, nm.IopathVersion, false)
	return ds
}

// copyRoutine is a machine's copy routine for mappings, or "" when not
// recorded.
func copyRoutine(m features.Machine) string {
	if m.MappedCopy == nil {
		return ""
	}
	return m.MappedCopy.Routine
}

// skewString is a machine's buffer skew ("16 B"), or "" when not recorded.
func skewString(m features.Machine) string {
	if m.BufferPlacement == nil {
		return ""
	}
	return strconv.Itoa(m.BufferPlacement.Skew) + " B"
}
