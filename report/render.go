package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/iopath/iopath/internal/units"
)

// docWrap is the column before which a Doc's legend and notes wrap: a
// table fits a terminal of 100 columns.
const docWrap = 100

// DocOptions choose what a Doc's table shows.
type DocOptions struct {
	// Wide shows the columns marked Wide.
	Wide bool
}

// DocFormats are the text formats WriteDoc takes, the default first.
// (JSON is each kind's own result, not a Doc.)
var DocFormats = []string{"table", "csv", "markdown"}

// WriteDoc writes d in one of DocFormats, or as gobench (docGoBench),
// with one Write call.
func WriteDoc(w io.Writer, format string, d *Doc, o DocOptions) error {
	var b bytes.Buffer
	switch format {
	case "table":
		docTable(&b, d, o)
	case "csv":
		if err := docCSV(&b, d); err != nil {
			return err
		}
	case "markdown":
		docMarkdown(&b, d, o)
	case "gobench":
		docGoBench(&b, d)
	default:
		return fmt.Errorf("unknown format %q: valid formats are %s", format, strings.Join(slices.Concat(DocFormats, []string{"gobench"}), ", "))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// shown lists the indexes of the columns a table shows.
func (d *Doc) shown(o DocOptions) []int {
	var idx []int
	for i, c := range d.Columns {
		if !c.Hidden && (!c.Wide || o.Wide) {
			idx = append(idx, i)
		}
	}
	return idx
}

// layout is the columns a table shows (shown), whether each has a
// min–max column beside it (titled spreadTitle), and the table's
// headings with whether each is left-aligned.
func (d *Doc) layout(o DocOptions, spreadTitle string) (cols []int, spread []bool, head []string, left []bool) {
	cols = d.shown(o)
	spread = make([]bool, len(cols))
	for k, i := range cols {
		head, left = append(head, d.Columns[i].Title), append(left, d.Columns[i].Left)
		if spread[k] = d.hasSpread(i); spread[k] {
			head, left = append(head, spreadTitle), append(left, false)
		}
	}
	return cols, spread, head, left
}

// hasSpread reports whether column i shows a min–max for any row.
func (d *Doc) hasSpread(i int) bool {
	if !d.Columns[i].Spread {
		return false
	}
	for _, g := range d.Groups {
		for _, r := range g.Rows {
			if i < len(r.Cells) && r.Cells[i].spread(d.Columns[i]) != "" {
				return true
			}
		}
	}
	return false
}

// cellTexts is a row's cells as the table shows them: a figure, then its
// min–max in a column of its own where the column has one. A sub-row's
// first cell starts with sub.
func (d *Doc) cellTexts(r Row, cols []int, spread []bool, sub string) []string {
	var out []string
	for k, i := range cols {
		var c Cell
		if i < len(r.Cells) {
			c = r.Cells[i]
		}
		raw := c.format(d.Columns[i])
		s := oneLine(raw)
		if pad := len(raw) - len(strings.TrimRight(raw, " ")); pad > 0 && s != "" {
			// A blank mark (alignMarks) keeps the digits of a column
			// aligned with those of its marked figures.
			s += strings.Repeat(" ", pad)
		}
		if k == 0 && r.Sub {
			s = sub + s
		}
		out = append(out, s)
		if spread[k] {
			out = append(out, c.spread(d.Columns[i]))
		}
	}
	return out
}

func docTable(b *bytes.Buffer, d *Doc, o DocOptions) {
	if d.Title != "" {
		b.WriteString(oneLine(d.Title) + "\n")
	}
	writeFields(b, d.Header)
	if len(d.Columns) > 0 && len(d.Groups) > 0 {
		if d.Title != "" || len(d.Header) > 0 {
			b.WriteString("\n")
		}
		cols, spread, head, left := d.layout(o, "(min–max)")
		type line struct {
			cells []string
			title string // a group's title, on a line of its own
			err   string
		}
		lines := []line{{cells: head}}
		for _, g := range d.Groups {
			if g.Title != "" {
				lines = append(lines, line{title: g.Title})
			}
			for _, r := range g.Rows {
				l := line{cells: d.cellTexts(r, cols, spread, "  ")}
				if r.Err != "" {
					// The row's identity (its leading Left cells),
					// then why there are no figures.
					id := l.cells[:leadingLeft(left)]
					for len(id) > 1 && id[len(id)-1] == "" {
						id = id[:len(id)-1] // a blank cache, say: the error follows the name
					}
					l = line{cells: id, err: r.Err}
				}
				lines = append(lines, l)
			}
		}
		widths := make([]int, len(head))
		for _, l := range lines {
			for j, s := range l.cells {
				widths[j] = max(widths[j], width(s))
			}
		}
		for _, l := range lines {
			switch {
			case l.title != "":
				b.WriteString("\n" + oneLine(l.title) + "\n")
			case l.err != "":
				for j, s := range l.cells {
					b.WriteString(pad(s, widths[j], true) + "  ")
				}
				b.WriteString(oneLine(l.err) + "\n")
			default:
				var parts []string
				for j, s := range l.cells {
					parts = append(parts, pad(s, widths[j], left[j]))
				}
				b.WriteString(strings.TrimRight(strings.Join(parts, "  "), " ") + "\n")
			}
		}
	}
	if len(d.Legend) > 0 {
		var parts []string
		for _, f := range d.Legend {
			parts = append(parts, f.Key+": "+f.Value)
		}
		b.WriteString("\n" + wrapText("", strings.Join(parts, "; "), 0, docWrap))
	}
	if len(d.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range d.Notes {
			b.WriteString(wrapText("  - ", units.EscapeControls(n), 4, docWrap))
		}
	}
	for _, p := range d.After {
		b.WriteString("\n" + p)
		if !strings.HasSuffix(p, "\n") {
			b.WriteString("\n")
		}
	}
}

// leadingLeft counts the Left columns a table starts with (at least
// one): a row's identity, shown also when the row has no figures.
func leadingLeft(left []bool) int {
	n := 0
	for n < len(left) && left[n] {
		n++
	}
	return max(n, 1)
}

// writeFields writes key–value lines with the values aligned.
func writeFields(b *bytes.Buffer, fs []Field) {
	w := 0
	for _, f := range fs {
		w = max(w, width(f.Key))
	}
	for _, f := range fs {
		if f.Key == "" {
			b.WriteString(strings.Repeat(" ", w+2) + oneLine(f.Value) + "\n")
			continue
		}
		b.WriteString(pad(f.Key, w, true) + "  " + oneLine(f.Value) + "\n")
	}
}

func pad(s string, w int, left bool) string {
	n := w - width(s)
	if n <= 0 {
		return s
	}
	if left {
		return s + strings.Repeat(" ", n)
	}
	return strings.Repeat(" ", n) + s
}

// docCSV writes one record per row: the group's title (when any group
// has one), then every column by its key, a figure's min, max and runs
// beside it, and the row's error.
func docCSV(b *bytes.Buffer, d *Doc) error {
	cw := csv.NewWriter(b)
	titled := slices.ContainsFunc(d.Groups, func(g Group) bool { return g.Title != "" })
	var head []string
	if titled {
		head = append(head, "group")
	}
	for i, c := range d.Columns {
		head = append(head, c.Key)
		if c.Spread && d.hasRuns(i) {
			head = append(head, c.Key+"_min", c.Key+"_max")
		}
	}
	head = append(head, "error")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, g := range d.Groups {
		for _, r := range g.Rows {
			var rec []string
			if titled {
				rec = append(rec, g.Title)
			}
			for i, c := range d.Columns {
				var cell Cell
				if i < len(r.Cells) {
					cell = r.Cells[i]
				}
				rec = append(rec, csvValue(cell, c, cell.Value))
				if c.Spread && d.hasRuns(i) {
					rec = append(rec, csvValue(cell, c, cell.Min), csvValue(cell, c, cell.Max))
				}
			}
			rec = append(rec, r.Err)
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func (d *Doc) hasRuns(i int) bool {
	for _, g := range d.Groups {
		for _, r := range g.Rows {
			if i < len(r.Cells) && r.Cells[i].Num && r.Cells[i].hasSpread() {
				return true
			}
		}
	}
	return false
}

// csvValue is a figure at full precision (a spreadsheet rounds), empty
// when there is none, or a text cell as it is.
func csvValue(c Cell, col Column, v float64) string {
	if !c.Num {
		return c.Text
	}
	if !finite(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64) // 1048576, not 1.048576e+06
}

// docMarkdown writes a Doc for a pull request: the header as a list, one
// table per group (GitHub renders no spanning rows), the notes as a list.
func docMarkdown(b *bytes.Buffer, d *Doc, o DocOptions) {
	if d.Title != "" {
		b.WriteString("**" + mdEscape(oneLine(d.Title)) + "**\n\n")
	}
	for _, f := range d.Header {
		if f.Key == "" {
			b.WriteString("  " + mdEscape(oneLine(f.Value)) + "\n")
			continue
		}
		b.WriteString("- " + mdEscape(f.Key) + ": " + mdEscape(oneLine(f.Value)) + "\n")
	}
	if len(d.Header) > 0 {
		b.WriteString("\n")
	}
	cols, spread, head, left := d.layout(o, "min–max")
	seps := make([]string, len(head))
	for j, l := range left {
		seps[j] = "---:"
		if l {
			seps[j] = "---"
		}
	}
	for _, g := range d.Groups {
		if g.Title != "" {
			b.WriteString("**" + mdEscape(oneLine(g.Title)) + "**\n\n")
		}
		mdRow(b, head, true)
		mdRow(b, seps, false)
		for _, r := range g.Rows {
			cells := d.cellTexts(r, cols, spread, "↳ ")
			if r.Err != "" {
				n := leadingLeft(left)
				cells = append(cells[:n], make([]string, len(head)-n)...)
				cells[len(cells)-1] = r.Err
			}
			mdRow(b, cells, true)
		}
		b.WriteString("\n")
	}
	if len(d.Legend) > 0 {
		var parts []string
		for _, f := range d.Legend {
			parts = append(parts, mdEscape(f.Key)+": "+mdEscape(f.Value))
		}
		b.WriteString(strings.Join(parts, "; ") + "\n\n")
	}
	for _, n := range d.Notes {
		b.WriteString("- " + mdEscape(oneLine(n)) + "\n")
	}
	if len(d.Notes) > 0 {
		b.WriteString("\n")
	}
	for _, p := range d.After {
		b.WriteString("```\n" + strings.TrimRight(p, "\n") + "\n```\n\n")
	}
}

// docGoBench writes d in the format `go test -bench` prints, so that
// benchstat can summarise and compare results:
//
//	benchstat old.txt new.txt
//	benchstat -col /engine new.txt
//
// d.Config comes first as "key: value" lines (what benchstat keys
// tables by), then the header and the notes as comments, then one line
// per run of each row: its name is Benchmark<Kind> and a /key=value
// sub-name per Left column (the row's identity), its iteration count 1,
// then each figure column whose cell holds the row's runs, as "value
// unit". A figure without per-run values (a ratio of medians) is left
// out, and so is a row without figures (a comment says why). Units are
// the columns' own (GiB/s) or, where columns share one or have none,
// their keys (lat-p99-ns); a "Unit u better=higher|lower" line says
// which way each improves.
//
// A parameter that differs between the rows being compared (io_uring's
// queue depth against pread's none) must not be a Left column of the
// Doc, or `benchstat -col /engine` would not line the engines up: an
// adapter makes it a figure column instead.
func docGoBench(b *bytes.Buffer, d *Doc) {
	for _, f := range d.Config {
		if v := oneLine(f.Value); v != "" {
			fmt.Fprintf(b, "%s: %s\n", f.Key, v)
		}
	}
	for i := 0; i < len(d.Header); i++ {
		f := d.Header[i]
		v := oneLine(f.Value)
		for i+1 < len(d.Header) && d.Header[i+1].Key == "" {
			i++
			v += " " + oneLine(d.Header[i].Value)
		}
		if f.Key != "" && v != "" {
			fmt.Fprintf(b, "# %s: %s\n", f.Key, v)
		}
	}
	for _, n := range d.Notes {
		b.WriteString("# note: " + oneLine(n) + "\n")
	}
	unit := goBenchUnits(d)
	for i, c := range d.Columns {
		if unit[i] != "" && c.Better != Neutral {
			better := "higher"
			if c.Better == Lower {
				better = "lower"
			}
			fmt.Fprintf(b, "Unit %s better=%s\n", unit[i], better)
		}
	}
	kind := "Benchmark"
	for _, p := range strings.FieldsFunc(d.Kind, func(r rune) bool { return r == '-' || r == '_' || r == ' ' }) {
		kind += strings.ToUpper(p[:1]) + p[1:]
	}
	for _, g := range d.Groups {
		for _, r := range g.Rows {
			name := kind
			n := 0
			for i, c := range d.Columns {
				if i >= len(r.Cells) {
					break
				}
				if c.Left {
					if s := r.Cells[i].Text; s != "" {
						name += "/" + goBenchValue(c.Key) + "=" + goBenchValue(s)
					}
				} else if unit[i] != "" {
					n = max(n, len(r.Cells[i].Runs))
				}
			}
			if r.Err != "" || n == 0 {
				why := r.Err
				if why == "" {
					why = "no runs"
				}
				fmt.Fprintf(b, "# %s: %s\n", name, oneLine(why))
				continue
			}
			for run := range n {
				b.WriteString(name + " \t1")
				for i, c := range r.Cells {
					if i < len(unit) && unit[i] != "" && len(c.Runs) == n && finite(c.Runs[run]) {
						fmt.Fprintf(b, " \t%s %s", strconv.FormatFloat(c.Runs[run], 'f', -1, 64), unit[i])
					}
				}
				b.WriteString("\n")
			}
		}
	}
}

// goBenchUnits is the gobench unit of each of d's figure columns ("" for
// Left columns): the column's Unit when no other figure column has it,
// else its key with dashes.
func goBenchUnits(d *Doc) []string {
	seen := map[string]int{}
	for _, c := range d.Columns {
		if !c.Left && c.Unit != "" {
			seen[c.Unit]++
		}
	}
	units := make([]string, len(d.Columns))
	for i, c := range d.Columns {
		switch {
		case c.Left:
		case c.Unit != "" && seen[c.Unit] == 1:
			units[i] = strings.ReplaceAll(c.Unit, " ", "-")
		default:
			units[i] = strings.ReplaceAll(c.Key, "_", "-")
		}
	}
	return units
}

// goBenchValue makes s safe as a sub-name key or value: no space (which
// ends the name), no / or = (which separate sub-names and keys), × as x,
// and no trailing -N (which would read as GOMAXPROCS).
func goBenchValue(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '×':
			return 'x'
		case unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' || r == '=':
			return '_'
		}
		return r
	}, s)
	if i := strings.LastIndexByte(s, '-'); i >= 0 && i < len(s)-1 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			s = s[:i] + "_" + s[i+1:]
		}
	}
	return s
}
