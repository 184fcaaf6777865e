package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
)

// CompareSchemaVersion is the version of compare's JSON.
const CompareSchemaVersion = 2

// WriteCompare writes c in one of KindFormats.
func WriteCompare(w io.Writer, format string, c *Comparison, o DocOptions) error {
	if format == "json" {
		return jsondoc.Write(w, "compare", CompareSchemaVersion, c)
	}
	return WriteDoc(w, format, CompareDoc(c), o)
}

// CompareDoc is c for people: which reports, how they differ, one row per
// key with the first headline figure old → new and every headline
// figure's change and verdict, the legend with the noise rule, the
// summary and notes.
func CompareDoc(c *Comparison) *Doc {
	d := &Doc{Kind: "compare", After: []string{"summary: " + c.Summary.String()}}
	add := func(k, v string) {
		if v != "" {
			d.Header = append(d.Header, Field{k, v})
		}
	}
	add("old", compareSource(c.Old))
	add("new", compareSource(c.New))
	if !c.MachineDiffers() {
		add("machine", compareMachine(c.New.Machine))
	}
	for _, p := range c.New.Props {
		if !slices.ContainsFunc(c.Differences, func(x Difference) bool { return x.What == p.Key }) {
			add(p.Key, p.Value)
		}
	}
	grouped := c.grouped()
	if !grouped && len(c.Rows) > 0 {
		add("workload", c.Rows[0].Group)
	}
	for i, df := range c.Differences {
		d.Header = append(d.Header, Field{map[bool]string{true: "differs"}[i == 0], df.What + ": " + orNone(df.Old) + " → " + orNone(df.New)})
	}
	if c.MachineDiffers() {
		d.Notes = append(d.Notes, "WARNING: the reports come from different machines; comparisons across machines are suspect.")
	}
	if len(c.Rows) == 0 {
		d.Notes = append(d.Notes, "no results in either report")
		return d
	}

	for _, k := range c.keyCols {
		if !k.Hidden {
			d.Columns = append(d.Columns, Column{Key: k.Key, Title: k.Title, Left: true})
		}
	}
	for i, m := range c.Metrics {
		better := m.Better + " is better"
		title, what := m.Title+" Δ%", "Δ% of the medians"
		if i == 0 {
			d.Columns = append(d.Columns,
				Column{Key: m.Key + "_old", Title: m.Title + " old", Unit: m.Unit, Prec: m.col.Prec},
				Column{Key: m.Key + "_new", Title: "new", Unit: m.Unit, Prec: m.col.Prec})
			title, what = "Δ%", "medians old → new, Δ% = (new − old) / old"
		}
		d.Columns = append(d.Columns, Column{Key: m.Key + "_delta_pct", Title: title, Unit: "%"},
			Column{Key: m.Key + "_verdict", Title: "verdict", Left: true})
		d.Legend = append(d.Legend, Field{m.Title, what + "; " + better})
	}
	d.Columns = append(d.Columns, Column{Key: "runs", Title: "runs", Left: true})
	d.Legend = append(d.Legend,
		Field{"verdict", "≥5 runs a side: Mann–Whitney U test, p < 0.05; 2–4 runs: noise when within the larger min–max spread; ? (1 run): no spread to judge by; n/a: not measured"},
		Field{"runs", "old→new; * some noisy, kept (see notes)"})

	// One group per workload, untitled when there is only one.
	for i := range c.Rows {
		r := &c.Rows[i]
		if len(d.Groups) == 0 || grouped && d.Groups[len(d.Groups)-1].Title != r.Group {
			d.Groups = append(d.Groups, Group{Title: map[bool]string{true: r.Group}[grouped]})
		}
		g := &d.Groups[len(d.Groups)-1]
		g.Rows = append(g.Rows, compareDocRow(c, r))
		for _, side := range []struct {
			name string
			s    *CompareSide
		}{{"old", r.Old}, {"new", r.New}} {
			if side.s != nil && side.s.Noisy != "" {
				d.Notes = append(d.Notes, rowLabel(r, grouped, " (%s)")+": "+side.name+": noisy runs ("+side.s.Noisy+")")
			}
		}
	}
	return d
}

// rowLabel is a row's name, with its group in form when there are several.
func rowLabel(r *CompareRow, groups bool, form string) string {
	if groups && r.Group != "" {
		return r.Name() + fmt.Sprintf(form, r.Group)
	}
	return r.Name()
}

// compareDocRow is one row of the comparison's table.
func compareDocRow(c *Comparison, r *CompareRow) Row {
	var row Row
	for _, k := range r.Key {
		row.Cells = append(row.Cells, TextCell(k))
	}
	if r.Status == StatusError {
		o, n := cmpNotRun(r.Old.Error), cmpNotRun(r.New.Error)
		switch {
		case o || n:
			row.Err = "not run (" + map[[2]bool]string{{true, true}: "old and new", {true, false}: "old", {false, true}: "new"}[[2]bool{o, n}] + "): interrupted"
		default:
			row.Err = "error (" + strings.Replace(r.Error, ": ", "): ", 1)
		}
		return row
	}
	first := func(s *CompareSide) Cell {
		if s == nil || len(s.Figures) == 0 {
			return TextCell("-")
		}
		f := s.Figures[0]
		return Cell{Num: true, Value: f.Median, Min: f.Min, Max: f.Max, Runs: f.Runs}
	}
	for i := range c.Metrics {
		if i == 0 {
			row.Cells = append(row.Cells, first(r.Old), first(r.New))
		}
		if r.Status == StatusMatched {
			row.Cells = append(row.Cells, TextCell(deltaPct(r.Deltas[i])), TextCell(verdictText(r.Deltas[i])))
		} else {
			row.Cells = append(row.Cells, TextCell(""), TextCell(map[bool]string{true: string(r.Status)}[i == 0]))
		}
	}
	runs := func(s *CompareSide) string {
		if s == nil {
			return "-"
		}
		return fmt.Sprint(s.Runs)
	}
	rs := runs(r.Old) + "→" + runs(r.New)
	if (r.Old != nil && r.Old.Noisy != "") || (r.New != nil && r.New.Noisy != "") {
		rs += " *"
	}
	row.Cells = append(row.Cells, TextCell(rs))
	return row
}

func deltaPct(d *Delta) string {
	if d.Verdict == VerdictNA || !finite(d.Pct) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", d.Pct)
}

func verdictText(d *Delta) string {
	if d.Verdict == VerdictUnknown {
		return "? (1 run)" // the only reason there is
	}
	return string(d.Verdict)
}

// grouped says the rows belong to more than one group (workload).
func (c *Comparison) grouped() bool {
	return slices.ContainsFunc(c.Rows, func(r CompareRow) bool { return r.Group != c.Rows[0].Group })
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return oneLine(s)
}

func compareSource(s CompareSource) string {
	var parts []string
	if s.Machine.IopathVersion != "" {
		parts = append(parts, "iopath "+s.Machine.IopathVersion)
	}
	if !s.Started.IsZero() {
		parts = append(parts, stamp(s.Started.UTC()))
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

func compareMachine(m features.Machine) string {
	var parts []string
	if m.Kernel != "" {
		parts = append(parts, strings.TrimSpace("Linux "+m.Kernel+" "+m.Arch))
	}
	return strings.Join(append(parts, hardwareParts(m)...), ", ")
}
