package report

// The one HTML page every report is drawn on (bench, net bench, its
// --serve-file and --writev, compare): a page model, one template and one
// stylesheet. A kind of report only builds a page: its header fields,
// then sections of charts (svg.go), a table, a list or definitions.
//
// The page works offline and fetches nothing: the charts are inline SVG,
// there is no script, no web font and no external image, and a
// Content-Security-Policy meta tag blocks (and makes the browser log) any
// attempt to load something. html/template escapes everything taken from
// a report; the charts' SVG is escaped by svgW.

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/units"
)

// page is one HTML report.
type page struct {
	Title, Subtitle string
	Banner          []string // a verdict shown above everything (integrity, a machine mismatch)
	BannerOK        bool     // green when true, red when not
	Machine, Run    []kv     // the two header cards; Machine says "not recorded" when empty
	Command         string
	Sections        []section
	Generator       string // "iopath v1.2"; every page sets it
}

type kv struct{ K, V string }

// section is one <section> of a page, in the navigation bar; what it
// holds is drawn in field order, and Empty when it holds nothing.
type section struct {
	ID, Title string
	Intro     []string // paragraphs
	Target    string   // a line set in bold: the goal the figures are held to
	Grid      bool     // charts two by two: every chart in it is at most chartHalfW wide
	Charts    []chart
	Table     *table
	List      []string
	Defs      []kv
	Empty     string
}

// Blank says the section holds nothing but its Empty line.
func (s section) Blank() bool {
	return len(s.Charts) == 0 && s.Table == nil && len(s.List) == 0 && len(s.Defs) == 0
}

// chart is a figure: a title, a caption and an inline SVG from svg.go.
type chart struct {
	ID, Title, Caption string
	SVG                template.HTML
}

// table is a results table: header rows, then rows.
type table struct {
	Head [][]cell
	Rows []trow
}

type trow struct {
	Class string // sub (a fio twin under its row), failed, group
	Cells []cell
}

type cell struct {
	Text, Class, Title string
	Swatch             template.CSS // a colour swatch before the text: its background, from svg.go's palette only
	Span               int          // colspan when > 1
	Head               bool         // a <th> (header rows are always <th>)
}

// Attrs is the cell's attributes, escaped here: one string per cell is
// much cheaper to execute than a sub-template of conditions (the
// results table of a sweep has thousands of cells).
func (c cell) Attrs() template.HTMLAttr {
	var b strings.Builder
	if c.Class != "" {
		b.WriteString(` class="` + hEsc(c.Class) + `"`)
	}
	if c.Title != "" {
		b.WriteString(` title="` + hEsc(c.Title) + `"`)
	}
	if c.Span > 1 {
		b.WriteString(` colspan="` + strconv.Itoa(c.Span) + `"`)
	}
	return template.HTMLAttr(b.String())
}

// renderPage writes p as one self-contained HTML page.
func renderPage(w io.Writer, p page) error {
	for i := range p.Sections {
		if p.Sections[i].Blank() && p.Sections[i].Empty == "" {
			p.Sections[i].Empty = "No results."
		}
	}
	return execute(w, "page", p)
}

// renderSections writes ss alone, <section>s for a page that has the
// stylesheet.
func renderSections(w io.Writer, ss []section) error { return execute(w, "sections", ss) }

func execute(w io.Writer, name string, data any) error {
	var b bytes.Buffer
	b.Grow(64 << 10)
	if err := pageTemplate.ExecuteTemplate(&b, name, data); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// addKV appends k: v to list when v is not blank.
func addKV(list *[]kv, k, v string) {
	if v = strings.TrimSpace(v); v != "" {
		*list = append(*list, kv{k, v})
	}
}

// placementString is the machine's buffer placement in one line, or "".
func placementString(mc features.Machine) string {
	if mc.BufferPlacement == nil {
		return ""
	}
	return mc.BufferPlacement.String()
}

// mappedCopyString is the machine's copy routine for mappings in one
// line, or "".
func mappedCopyString(mc features.Machine) string {
	if mc.MappedCopy == nil {
		return ""
	}
	return mc.MappedCopy.String()
}

// machineKV is the Machine card of a page: a line per fact recorded.
func machineKV(mc features.Machine, version string) []kv {
	kernel := mc.Arch
	if mc.Kernel != "" {
		kernel = strings.TrimSuffix("Linux "+mc.Kernel+" ("+mc.Arch+")", " ()")
	}
	cpu := mc.CPUModel
	if mc.Cores > 0 {
		cpu = strings.TrimPrefix(cpu+", "+plural(mc.Cores, "core"), ", ")
	}
	var mem []string
	if mc.MemBytes > 0 {
		mem = append(mem, units.RoughSize(mc.MemBytes))
	}
	if mc.PageSize > 0 {
		mem = append(mem, units.FormatSize(int64(mc.PageSize))+" pages")
	}
	if mc.THP != "" {
		mem = append(mem, "THP "+mc.THP)
	}
	if version == "" {
		version = mc.IopathVersion
	}
	var out []kv
	for _, f := range []kv{{"kernel", kernel}, {"CPU", cpu}, {"memory", strings.Join(mem, ", ")},
		{"filesystem", strings.TrimSuffix(mc.Filesystem+" on "+mc.Device, " on ")}, {"io_uring", mc.IOURing},
		{"latency clock", mc.LatencyClock}, {"buffer placement", placementString(mc)}, {"mapped copy", mappedCopyString(mc)}, {"Go", mc.GoVersion}, {"iopath", version}} {
		addKV(&out, f.K, f.V)
	}
	return out
}

// subtitle is the line under a page's title: when, and on what.
func subtitle(started time.Time, mc features.Machine) string {
	var sub []string
	if !started.IsZero() {
		sub = append(sub, stamp(started))
	}
	if mc.Kernel != "" || mc.CPUModel != "" {
		sub = append(sub, strings.TrimPrefix(strings.TrimSpace(mc.CPUModel+", Linux "+mc.Kernel), ", "))
	}
	return strings.Join(sub, " · ")
}

func stamp(t time.Time) string { return t.Format("2006-01-02 15:04:05 MST") }

// Layout widths, in CSS pixels: what the page lays out on a desktop screen
// (main 1180 px, less padding and the figure card's border and padding),
// so that no chart, drawn at its natural size (svg.go) and never
// stretched to its box, scrolls there. A narrower screen scrolls a chart
// sideways rather than shrink it; print zooms the whole page (85%: a
// full-width chart fits A4 landscape), so every chart keeps one scale.
const (
	chartMaxW  = 1080.0 // a full-width figure's inside
	chartHalfW = 512.0  // a figure's inside in a two-column grid
)

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="{{.Generator}}">
<link rel="icon" href="data:,">
<title>{{.Title}}</title>
<style>
:root{--fg:#1d232a;--muted:#5d6773;--line:#dfe3e8;--bg:#f6f7f9;--card:#fff;--err:#c0392b;--ok:#2e7d32;--accent:#2f5d8a}
*{box-sizing:border-box}
html{color-scheme:light;-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 28px 56px}
header h1{font-size:25px;font-weight:650;margin:0 0 2px;letter-spacing:-.01em;overflow-wrap:anywhere}
header .sub{color:var(--muted);margin:0 0 16px}
h2{font-size:19px;font-weight:650;margin:34px 0 6px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;font-weight:600;margin:0 0 2px}
nav{font-size:13.5px;margin:8px 0 0}
nav a{color:var(--accent);text-decoration:none;margin-right:14px;white-space:nowrap}
nav a:hover{text-decoration:underline}
.banner{border-radius:10px;padding:10px 16px;margin:0 0 14px;font-weight:600;border:1px solid}
.banner p{margin:2px 0;overflow-wrap:anywhere}
.banner.ok{background:#edf7ee;border-color:#a9d3ad;color:var(--ok)}
.banner.bad{background:#fdecea;border-color:#e8aaa2;color:var(--err);font-weight:750}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 18px 12px;margin:14px 0}
.meta{display:grid;grid-template-columns:repeat(auto-fit,minmax(330px,1fr));gap:14px}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:0;font-size:14px}
dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0;overflow-wrap:anywhere}
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace;font-size:13px}
pre.cmd{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:6px 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
.intro{color:var(--muted);font-size:13.5px;margin:4px 0}
p.target{font-weight:600}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(550px,1fr));gap:14px}
.meta .card,.grid .card{margin:0}
figure{margin:0}
figcaption{color:var(--muted);font-size:13px;margin:0 0 6px;max-width:110ch}
.plot{overflow-x:auto}
svg.chart{display:block;max-width:none}
.chart text{font-size:12px;fill:#2b333c}
.chart .axis text{font-size:11px;fill:#5d6773}
.chart .axis .unit{font-size:11.5px;fill:#2b333c;font-weight:600}
.chart .bn{font-size:11px}
.chart .axis .gl{font-size:12px;font-weight:600;fill:#1d232a}
.chart .grid{stroke:#e4e7eb;stroke-width:1}
.chart .grid.minor{stroke:#f1f3f5}
.chart .baseline{stroke:#7d8791;stroke-width:1.2}
.chart .whisker{stroke:#1d232a;stroke-width:1.3}
.chart .val{font-size:10.5px;fill:#1d232a}
.chart .nm{font-size:10.5px;fill:#8a939c}
.chart .reflabel{font-size:10.5px;font-weight:600}
.chart .bracket{stroke:#b7bfc8}
.chart .err{fill:var(--err);font-weight:700;font-size:12px}
.chart .errgap{fill:#fcebea;stroke:#e8aaa2;stroke-dasharray:3 3}
.chart .noisy{fill:#f0b400;stroke:#7a5a00;stroke-width:.7}
.chart .tl{font-size:11px;fill:#39424c;font-weight:600}
.chart .tl.ok{fill:#fff;font-size:13px}
.chart .tl.bad{fill:#fff;font-weight:700}
.chart .band{fill:#000;fill-opacity:.08}
.chart rect.good{fill:#2e9e50}
.chart rect.bad{fill:#d0393e}
.chart rect.noise{fill:#bbb}
.chart rect.unknown{fill:#ddd;stroke:#aaa;stroke-dasharray:2 2}
.chart .flame text{font-size:11px;fill:#1d232a;pointer-events:none}
.chart .flame g g:hover>rect{stroke:#1d232a;stroke-width:1}
.chart .seg:hover rect{opacity:.8}
.chart .bar:hover rect,.chart .bar:hover circle,.chart .pt:hover circle,.chart .tile:hover rect{opacity:.8}
.empty{color:var(--muted);font-style:italic}
.table-wrap{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:10px;margin:14px 0}
table{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums;width:100%}
th,td{padding:4px 8px;text-align:right;white-space:nowrap;border-bottom:1px solid #edf0f3}
th{position:sticky;top:0;background:#f0f2f5;font-weight:600;color:#39424c;border-bottom:1px solid var(--line)}
th.l,td.l{text-align:left}
tr.group th{text-align:left;background:#fafbfc}
tr.sub td{background:#fafbfc;color:#4a535d}
tr.sub td:first-child{padding-left:24px}
tr:hover td{background:#f3f6fa}
td.strong{font-weight:650}
td.muted{color:var(--muted)}
td.ok{color:var(--ok)}
td.bad{color:var(--err);font-weight:700}
td.error{color:var(--err);text-align:left;white-space:pre-wrap;min-width:30ch}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:-1px}
ul.notes{margin:6px 0;padding-left:20px}
ul.notes li{margin:2px 0;overflow-wrap:anywhere}
dl.defs{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;font-size:13.5px;margin:8px 0}
dl.defs dt{font-weight:600}
dl.defs dd{margin:0;color:#39424c}
footer{color:var(--muted);font-size:12.5px;margin-top:36px}
@media (max-width:600px){main{padding:16px 12px 40px}.grid,.meta{grid-template-columns:1fr}}
@media print{
@page{size:A4 landscape;margin:10mm}
body{background:#fff;font-size:10pt}
main{max-width:none;padding:0;zoom:.85}
nav{display:none}
.card{border:none;padding:0;margin:8px 0}
figure,.card,tr{break-inside:avoid}
h2{break-after:avoid}
.plot{overflow:visible}
.table-wrap{overflow:visible;border:none}
table{font-size:6.5pt}
th,td{padding:1px 3px}
th{position:static}
tr.sub td,tr:hover td{background:none}
}
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{with .Subtitle}}<p class="sub">{{.}}</p>{{end}}
</header>
{{if .Banner}}<div class="banner {{if .BannerOK}}ok{{else}}bad{{end}}" role="status">{{range .Banner}}<p>{{.}}</p>{{end}}</div>
{{end}}<div class="meta">
<section class="card"><h3>Machine</h3>
{{if .Machine}}<dl class="kv">{{range .Machine}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>{{else}}<p class="empty">not recorded</p>{{end}}
</section>
<section class="card"><h3>Run</h3>
{{if .Run}}<dl class="kv">{{range .Run}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>{{end}}
{{with .Command}}<pre class="cmd"><code>{{.}}</code></pre>{{end}}
</section>
</div>
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}</nav>
{{template "sections" .Sections}}<footer>Generated by {{.Generator}}. This page is self-contained: it loads nothing from anywhere.</footer>
</main>
</body>
</html>
{{define "sections"}}{{range .}}{{template "section" .}}
{{end}}{{end}}{{define "section"}}<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{range .Intro}}<p class="intro">{{.}}</p>
{{end}}{{with .Target}}<p class="target">{{.}}</p>
{{end}}{{if .Charts}}{{if .Grid}}<div class="grid">
{{end}}{{range .Charts}}<figure class="card" id="{{.ID}}">
<h3>{{.Title}}</h3>
<figcaption>{{.Caption}}</figcaption>
<div class="plot">{{.SVG}}</div>
</figure>
{{end}}{{if .Grid}}</div>
{{end}}{{end}}{{with .Table}}<div class="table-wrap"><table>
<thead>{{range .Head}}<tr>{{range .}}<th{{.Attrs}}>{{.Text}}</th>{{end}}</tr>{{end}}</thead>
<tbody>
{{range .Rows}}<tr{{with .Class}} class="{{.}}"{{end}}>{{range .Cells}}{{if .Head}}<th{{.Attrs}}>{{.Text}}</th>{{else}}<td{{.Attrs}}>{{with .Swatch}}<span class="sw" style="{{.}}"></span>{{end}}{{.Text}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table></div>
{{end}}{{with .List}}<ul class="notes">{{range .}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{with .Defs}}<dl class="defs">{{range .}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}</dl>
{{end}}{{if .Blank}}<p class="empty">{{.Empty}}</p>
{{end}}</section>{{end}}`))

// docSections draws a Doc (model.go) on a page: its table (every column,
// with a min–max beside the figures that have one, as the text table
// shows it with --wide) in a section with id, then its notes and its
// legend. A group's title is a row of its own; a sub-row (a fio twin) is
// indented under its row; a failed row shows its error after its name; a
// noisy row says why in its name's tooltip; the headline figures are
// bold, and a verdict ("ok", "BAD", "MISMATCH") is green or red. When
// series are given, a row's name has the swatch of its series, the one
// whose name it is or starts (docSeries), as in the charts.
//
// d.Header belongs in the page's header cards, d.After in an intro.
func docSections(id, title string, d *Doc, series ...*hSeries) []section {
	res := section{ID: id, Title: title}
	if len(d.Columns) > 0 && len(d.Groups) > 0 {
		res.Table = docTableHTML(d, series)
	}
	out := []section{res}
	if len(d.Notes) > 0 {
		out = append(out, section{ID: id + "-notes", Title: "Notes", List: d.Notes})
	}
	if len(d.Legend) > 0 {
		defs := section{ID: id + "-definitions", Title: "Definitions"}
		for _, f := range d.Legend {
			defs.Defs = append(defs.Defs, kv{f.Key, f.Value})
		}
		out = append(out, defs)
	}
	return out
}

func docTableHTML(d *Doc, series []*hSeries) *table {
	cols := d.shown(DocOptions{Wide: true})
	spread := make([]bool, len(cols))
	t := &table{Head: [][]cell{nil}}
	var class []string // each table column's cells' class
	lefts := 0
	for k, i := range cols {
		c := d.Columns[i]
		h, cl := cell{Text: c.Title}, ""
		switch {
		case c.Left:
			h.Class, cl = "l", "l"
			lefts++
		case c.Headline:
			cl = "strong"
		}
		t.Head[0], class = append(t.Head[0], h), append(class, cl)
		if spread[k] = d.hasSpread(i); spread[k] {
			t.Head[0], class = append(t.Head[0], cell{Text: "min–max", Class: "l"}), append(class, "l muted")
		}
	}
	for _, g := range d.Groups {
		if g.Title != "" {
			t.Rows = append(t.Rows, trow{Class: "group", Cells: []cell{{Text: g.Title, Head: true, Span: len(t.Head[0])}}})
		}
		for _, r := range g.Rows {
			var row trow
			if r.Sub {
				row.Class = "sub"
			}
			for k, s := range d.cellTexts(r, cols, spread, "") {
				c := cell{Text: s, Class: class[k]}
				if k == 0 {
					if s := docSeries(series, s); s != nil {
						c.Swatch = s.swatch()
					}
					if r.Noisy != "" {
						c.Title = "noisy runs (kept in the figures): " + r.Noisy
					}
				} else if !strings.HasPrefix(class[k], "l") {
					c.Class = strings.TrimSpace(c.Class + " " + verdictTextClass(s))
				}
				if r.Err != "" && k == max(lefts, 1) {
					row.Class = strings.TrimSpace(row.Class + " failed")
					row.Cells = append(row.Cells, cell{Text: oneLine(r.Err), Class: "error", Span: len(t.Head[0]) - k})
					break
				}
				row.Cells = append(row.Cells, c)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// docSeries is the series a row named name is drawn in: the one of that
// name, or else the longest whose name and a space start it ("io_uring"
// for "io_uring qd32", "fio io_uring" for "fio io_uring qd32").
func docSeries(series []*hSeries, name string) *hSeries {
	var best *hSeries
	for _, s := range series {
		if s.name == name {
			return s
		}
		if strings.HasPrefix(name, s.name+" ") && (best == nil || len(s.name) > len(best.name)) {
			best = s
		}
	}
	return best
}

// verdictTextClass colours a verdict in a table: "ok" green, and a word
// in capitals (BAD, MISMATCH, CORRUPT, NO) red.
func verdictTextClass(s string) string {
	if s == "ok" {
		return "ok"
	}
	for _, w := range strings.Fields(s) {
		if w = strings.TrimRight(w, ":;,."); len(w) > 1 && strings.Trim(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
			return "bad"
		}
	}
	return ""
}

// docBars makes a bar chart's groups from d's column key: a group per Doc
// group and the row's other Left cells (its cache state, say), a bar per
// row in the series its first cell names (docSeries), with its runs'
// min–max as the whisker. A failed row is a gap saying "error", or "not
// run" for a row an interrupt kept from running; a noisy row carries its
// reason. Rows of no series are left out.
func docBars(d *Doc, key string, series []*hSeries) []hBarGroup {
	col := slices.IndexFunc(d.Columns, func(c Column) bool { return c.Key == key })
	if col < 0 {
		return nil
	}
	c := d.Columns[col]
	var out []hBarGroup
	at := map[string]int{}
	for _, g := range d.Groups {
		for _, r := range g.Rows {
			if len(r.Cells) == 0 {
				continue
			}
			s := docSeries(series, r.Cells[0].Text)
			if s == nil {
				continue
			}
			parts := []string{g.Title}
			for i := 1; i < len(d.Columns) && i < len(r.Cells); i++ {
				if d.Columns[i].Left && !d.Columns[i].Hidden {
					parts = append(parts, r.Cells[i].Text)
				}
			}
			label := strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), " · ")
			gi, ok := at[label]
			if !ok {
				gi, at[label] = len(out), len(out)
				out = append(out, hBarGroup{label: label})
			}
			b := hBar{s: s, noisy: r.Noisy, tip: r.Cells[0].Text}
			if label != "" {
				b.tip += " · " + label
			}
			switch {
			case r.Err != "":
				b.err, b.tip = "error", b.tip+"\n"+r.Err
				if strings.HasPrefix(r.Err, "not run") {
					b.err = "not run"
				}
			case col < len(r.Cells):
				v := r.Cells[col]
				b.v, b.tip = hFiniteOr0(v.Value), b.tip+"\n"+docFigure(c, v)
				if v.hasSpread() {
					b.lo, b.hi = hFiniteOr0(v.Min), hFiniteOr0(v.Max)
				}
				if r.Noisy != "" {
					b.tip += "\nnoisy: " + r.Noisy
				}
			}
			out[gi].bars = append(out[gi].bars, b)
		}
	}
	return out
}

// docFigure is a cell's figure in a tooltip: "GiB/s: 3.00 (2.91–3.06),
// median of 3 runs".
func docFigure(c Column, v Cell) string {
	s := c.Title + ": " + strings.TrimSpace(v.format(c))
	if v.hasSpread() {
		s += " " + v.spread(c)
	}
	if n := len(v.Runs); n > 1 {
		s += fmt.Sprintf(", median of %d runs", n)
	}
	return s
}

// docPoint is row r's figure in column col of d at x, tip heading its
// tooltip: an × when r failed, no value when it has none; a noisy row
// says why.
func docPoint(d *Doc, col int, r Row, x float64, tip string) hPoint {
	pt := hPoint{x: x, tip: tip}
	if r.Err != "" {
		pt.err, pt.tip = r.Err, tip+"\n"+r.Err
	} else if col < len(r.Cells) {
		pt.y, pt.tip = hFiniteOr0(r.Cells[col].Value), tip+"\n"+docFigure(d.Columns[col], r.Cells[col])
		if r.Noisy != "" {
			pt.tip += "\nnoisy: " + r.Noisy
		}
	}
	return pt
}

// docLines makes a line per series of d's column key: a point per Doc
// group (x its index) for each row of the series, a failed row an ×.
func docLines(d *Doc, key string, series []*hSeries) []hLine {
	col := slices.IndexFunc(d.Columns, func(c Column) bool { return c.Key == key })
	if col < 0 {
		return nil
	}
	var lines []hLine
	for _, s := range series {
		l := hLine{s: s}
		for gi, g := range d.Groups {
			for _, r := range g.Rows {
				if len(r.Cells) > 0 && docSeries(series, r.Cells[0].Text) == s {
					l.pts = append(l.pts, docPoint(d, col, r, float64(gi), s.name+" · "+g.Title))
				}
			}
		}
		if len(l.pts) > 0 {
			lines = append(lines, l)
		}
	}
	return lines
}

// barChart is a chart of bars (hBarChart); value labels the bars (nil:
// three significant figures).
func barChart(id, title, caption, unit string, groups []hBarGroup, series []*hSeries, value func(float64) string) chart {
	return chart{ID: id, Title: title, Caption: caption, SVG: template.HTML(hBarChart(hBarSpec{id: id, title: title, unit: unit,
		groups: groups, series: series, value: value, shareLabel: "io_uring kernel threads"}))}
}

// logLineChart is a chart of lines over categories (hLineChart) on a log
// axis.
func logLineChart(id, title, caption, xLabel, unit string, cats []string, lines []hLine) chart {
	return chart{ID: id, Title: title, Caption: caption, SVG: template.HTML(hLineChart(hLineSpec{id: id, title: title,
		x: hAxisSpec{label: xLabel, cats: cats}, y: hAxisSpec{label: unit, log10: true, fmt: hSig3}, lines: lines}))}
}
