package report

import (
	"math"
	"strconv"

	"github.com/iopath/iopath/internal/stats"
)

// Doc is the one presentation model every kind of result maps into: a
// header of named fields (machine, workload), typed columns, groups of
// rows whose cells hold a median with its min–max and runs, then notes,
// a legend and closing paragraphs. A small adapter per kind of result
// builds a Doc; the renderers (WriteDoc: table, CSV, Markdown) know
// nothing about the kinds.
//
// JSON is not rendered from a Doc: each kind writes its own result,
// whose keys carry their units (docs/schema holds the schemas). A Doc
// is what a person reads.
type Doc struct {
	// Kind names the kind of result ("features", "net-load", "advise").
	Kind string
	// Title is the first line, if any.
	Title string
	// Header holds the lines above the table, in order.
	Header []Field
	// Columns are the table's columns; every Row has one Cell per column.
	Columns []Column
	Groups  []Group
	// Notes are numbered or bulleted remarks after the table.
	Notes []string
	// Legend explains the columns' headers.
	Legend []Field
	// After holds paragraphs written after the notes, as they are
	// (a recommendation, a code snippet).
	After []string
	// Config holds what was measured on (goos, goarch, cpu, the file):
	// the "key: value" lines a gobench file starts with. benchstat keeps
	// results whose configuration differs apart, so nothing that changes
	// from run to run (a version, a time) belongs here; the header's
	// fields are written as comments.
	Config []Field
}

// Field is a named value of the header or the legend.
type Field struct {
	Key, Value string
}

// Better says which way a column's figure improves.
type Better int

const (
	// Neutral: neither way (a count, a setting).
	Neutral Better = iota
	// Higher is better (throughput, QPS).
	Higher
	// Lower is better (latency, CPU per request).
	Lower
)

// Column is one column of a Doc.
type Column struct {
	// Key names the column for programs: snake_case with its unit
	// (qps, p99_us, cpu_s_per_gib). CSV uses it as the header.
	Key string
	// Title is the short header a table shows.
	Title string
	// Unit of the figures ("" for text and plain counts).
	Unit   string
	Better Better
	// Prec is the number of decimals a figure shows.
	Prec int
	// Spread adds the runs' min–max beside the median in the table.
	Spread bool
	// Wide columns are shown only when asked (--wide).
	Wide bool
	// Hidden columns are never shown in a table or in Markdown, where
	// their texts are in the groups' titles (a workload's parameters);
	// CSV and gobench write them, and they count in a row's identity.
	Hidden bool
	// Left aligns the column to the left (text); figures align right.
	// Left columns are also a row's identity: compare matches the rows
	// of two Docs of one kind by the texts of their Left cells.
	Left bool
	// Headline marks a kind's headline figures (GiB/s and CPU per GiB
	// for a file; files/s and CPU per 1k files for a tree; QPS, P99 and
	// server CPU per request for echo): the ones compare judges.
	Headline bool
}

// Group is a run of rows under an optional title.
type Group struct {
	Title string
	Rows  []Row
}

// Row is one line of a Doc.
type Row struct {
	Cells []Cell
	// Sub marks a row that belongs to the one above it (a twin), shown
	// indented.
	Sub bool
	// Err is why the row has no figures (it failed, or was not run).
	Err string
	// Noisy is why some of the row's runs were noisy ("" when none was):
	// they are kept in its figures, which carry a Mark.
	Noisy string
}

// Cell is one value: either text or a figure with its spread.
type Cell struct {
	// Text is shown as it is. A figure's cell may set it to show its
	// value in a form of its own (1.2µs, 8.2k, 1.02×); Value stays what
	// programs (CSV, gobench, compare) read.
	Text string
	// Value is the figure (the median over Runs when there are several).
	Value float64
	// Min and Max are the runs' extremes (equal to Value for one run).
	// A result that keeps only its median and extremes (a file-serving
	// or writev report of schema_version 1) sets them without Runs.
	Min, Max float64
	// Runs holds each run's figure, for a comparison's test.
	Runs []float64
	// Num marks a figure: Text is ignored.
	Num bool
	// Mark is a short sign after the figure ("*" noisy, "!" failed).
	Mark string
}

// TextCell is a cell holding text.
func TextCell(s string) Cell { return Cell{Text: s} }

// Figure is a cell holding one measured value.
func Figure(v float64) Cell { return Cell{Value: v, Min: v, Max: v, Num: true} }

// Runs is a cell holding the median of runs, with their min–max.
func Runs(runs []float64) Cell {
	c := Cell{Num: true, Runs: runs}
	if len(runs) == 0 {
		c.Value, c.Min, c.Max = math.NaN(), math.NaN(), math.NaN()
		return c
	}
	c.Value = stats.Median(runs)
	c.Min, c.Max = stats.MinMax(runs)
	return c
}

// format shows a cell's value as its column says.
func (c Cell) format(col Column) string {
	if !c.Num {
		return c.Text
	}
	if !finite(c.Value) {
		return "–"
	}
	if c.Text != "" {
		return c.Text + c.Mark
	}
	return strconv.FormatFloat(c.Value, 'f', col.Prec, 64) + c.Mark
}

// spread shows a figure's min–max, or "" when it has none.
func (c Cell) spread(col Column) string {
	if !c.Num || !finite(c.Min) || !finite(c.Max) || !c.hasSpread() {
		return ""
	}
	return "(" + strconv.FormatFloat(c.Min, 'f', col.Prec, 64) + "–" + strconv.FormatFloat(c.Max, 'f', col.Prec, 64) + ")"
}

// hasSpread reports whether c is over several runs: it holds them, or
// extremes that differ.
func (c Cell) hasSpread() bool {
	return len(c.Runs) > 1 || finite(c.Min) && finite(c.Max) && c.Min != c.Max
}
