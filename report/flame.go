package report

// What a bench page draws from perf's recordings (bench --perf): where
// each row's CPU went, as 100%-stacked bars side by side (the Doc's
// breakdown columns), and each row's call tree as a flame graph, an
// icicle drawn in SVG from Result.Flame: the root on top, each callee
// under its caller, so that Go frames sit above the kernel frames their
// syscalls run. Both are coloured by perf's kinds, with one palette.

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/perf"
)

// perfColors are the kinds' colours in both charts: light enough for
// dark text, io_uring in its engine's purple, readiness polling in a
// pink beside it.
var perfColors = map[perf.Kind]string{
	perf.User:    "#8cb5e0",
	perf.Runtime: "#7fcdc4",
	perf.Syscall: "#f7b267",
	perf.Copy:    "#f08a8c",
	perf.Fault:   "#f2d46b",
	perf.IOUring: "#b89ad6",
	perf.Poll:    "#eea9cf",
	perf.Net:     "#8fd18a",
	perf.Kernel:  "#c3c7cc",
}

// flameRootColor is the root's ("all") box, which is no kind.
const flameRootColor = "#e1e4e8"

// Flame graph layout: boxes of flameRowH per level, at most
// flameMaxDepth levels (the root's included), drawn in a two-column grid.
const (
	flameRowH     = 17.0
	flameMaxDepth = 40
)

// digits writes n with a comma between thousands: 12,345.
func digits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// breakdownSection is a bench page's "Where the CPU goes", from perf's
// recordings (none without them): the Doc's breakdown columns as a
// stacked bar per row.
func breakdownSection(d *Doc, series []*hSeries, ids chartIDs) []section {
	var out []section
	if groups, parts := docStacks(d, series); len(groups) > 0 {
		id, title := ids.id("cpu-breakdown"), "Where the CPU goes"
		out = append(out, section{ID: "breakdown", Title: "Where the CPU goes", Charts: []chart{{ID: id, Title: "CPU by kind of code",
			Caption: "Each row's CPU as perf sampled it (--perf: kernel and Go frames, the runs that succeeded together; net bench: the server process's), " +
				"split by where it went, 100% across; rows without a recording (fio twins, failed rows) are left out. " +
				"Each sample counts once: a kernel copy routine at the leaf is a copy, page-fault handling anywhere in the stack a fault, " +
				"else the first frame from the leaf up that is io_uring's, the network stack's, syscall entry/exit or another kernel path; " +
				"a user-space leaf is the Go runtime, a syscall stub or user code. The table's definitions say what each holds; hover for the figures.",
			SVG: template.HTML(hStackChart(hStackSpec{id: id, title: title, unit: "% of CPU samples", parts: parts, groups: groups}))}}})
	}
	return out
}

// flameSection is a bench page's "Flame graphs" (none without perf's
// recordings): one per row with a call tree, two side by side. res
// parallels d's groups' rows; label names each group in a graph's title
// ("" when the report has one workload).
func flameSection(d *Doc, res [][]*bench.Result, label []string, ids chartIDs) []section {
	var trees []namedFlame
	for gi, g := range res {
		for ri, x := range g {
			what := strings.TrimSpace(d.Groups[gi].Rows[ri].Cells[0].Text + " " + x.Cache)
			if gi < len(label) && label[gi] != "" {
				what += " · " + label[gi]
			}
			trees = append(trees, namedFlame{what, x.Flame})
		}
	}
	return flameGrid(trees, ids, "Each row's call tree from perf's samples (the runs that succeeded together)")
}

// namedFlame is a call tree and what it is of ("pread warm").
type namedFlame struct {
	what  string
	flame *perf.Flame
}

// flameGrid is the "Flame graphs" section: a graph per tree that has
// samples, two side by side; of says in a few words whose trees they are.
func flameGrid(trees []namedFlame, ids chartIDs, of string) []section {
	var flames []chart
	for _, t := range trees {
		if t.flame == nil || t.flame.Value <= 0 {
			continue
		}
		id := ids.id("flame", t.what)
		title := fmt.Sprintf("%s (%s samples)", t.what, digits(t.flame.Value))
		svg, deeper := flameChart(id, title, t.flame)
		caption := "Width: share of the samples in a function and what it called; under it, its callees. Colour: the kind of code."
		if deeper {
			caption += fmt.Sprintf(" Calls deeper than %d levels are not drawn.", flameMaxDepth)
		}
		flames = append(flames, chart{ID: id, Title: title, Caption: caption, SVG: template.HTML(svg)})
	}
	if len(flames) == 0 {
		return nil
	}
	return []section{{ID: "flame", Title: "Flame graphs", Grid: true, Charts: flames, Intro: []string{
		of + ", drawn as an icicle: the root (all samples) on top, " +
			"each function under the one that called it, as wide as the share of the samples spent in it and below it, " +
			"so Go frames sit above the kernel frames their system calls run. Calls under 0.5% of the samples are left out " +
			"(their time stays in their caller's width). Hover over a box for its full name, samples and share; " +
			"the recordings themselves open in go tool pprof (the notes say where)."}}}
}

// docStacks makes a stacked bar per row of d that has a breakdown (its
// columns perfKindOf knows), grouped as docBars groups (the Doc's group
// and the row's other Left cells: its cache state), and the parts: the
// kinds of those columns, in order.
func docStacks(d *Doc, series []*hSeries) ([]hStackGroup, []hStackPart) {
	var cols []int
	var kinds []perf.Kind
	var parts []hStackPart
	for i, c := range d.Columns {
		if k, ok := perfKindOf(c.Key); ok {
			cols, kinds = append(cols, i), append(kinds, k)
			parts = append(parts, hStackPart{name: k.Label(), color: perfColors[k]})
		}
	}
	if len(cols) == 0 {
		return nil, nil
	}
	var out []hStackGroup
	at := map[string]int{}
	for _, g := range d.Groups {
		for _, r := range g.Rows {
			if len(r.Cells) <= slices.Max(cols) || r.Err != "" {
				continue
			}
			b := hStackBar{label: r.Cells[0].Text, s: docSeries(series, r.Cells[0].Text)}
			var all []string
			some := false
			for j, i := range cols {
				c := r.Cells[i]
				v := c.Value
				if !finite(v) {
					v = 0
				} else {
					some = true
				}
				b.shares = append(b.shares, v)
				if v > 0 {
					all = append(all, kinds[j].Label()+" "+pctText(v))
				}
			}
			if !some {
				continue
			}
			parts := []string{g.Title}
			for i := 1; i < len(d.Columns) && i < len(r.Cells); i++ {
				if d.Columns[i].Left && !d.Columns[i].Hidden {
					t := r.Cells[i].Text
					if d.Columns[i].Key == "cache" {
						t = cacheTitle(t)
					}
					parts = append(parts, t)
				}
			}
			label := strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), " · ")
			head := b.label
			if label != "" {
				head += " · " + label
			}
			for j, i := range cols {
				c, tip := r.Cells[i], head+"\n"+kinds[j].Label()+": "+pctText(b.shares[j])
				if c.hasSpread() && finite(c.Min) && finite(c.Max) {
					tip += fmt.Sprintf(" (runs %s–%s)", pctText(c.Min), pctText(c.Max))
				}
				b.tips = append(b.tips, tip+"\n"+strings.Join(all, " · "))
			}
			gi, ok := at[label]
			if !ok {
				gi, at[label] = len(out), len(out)
				out = append(out, hStackGroup{label: label})
			}
			out[gi].bars = append(out[gi].bars, b)
		}
	}
	return out, parts
}

// flameBox is one function's box in a flame graph.
type flameBox struct {
	n        *perf.Flame
	x, w     float64 // in pixels
	depth    int
	kind     perf.Kind
	rootKind bool // the root, or a kind this report does not know
}

// flameChart draws f as an icicle flameMaxDepth levels deep at most:
// a box per function, as wide as its value, its callees under it from
// its left edge in f's order, coloured by its kind; a box shows as much
// of its function's short name as fits, and its tooltip the full name,
// the samples and their share. Each kind is a series. deeper says some
// calls were below the levels drawn.
func flameChart(id, title string, f *perf.Flame) (svg string, deeper bool) {
	const left, right = 2.0, 2.0
	width := chartHalfW
	plotW := width - left - right
	var boxes []flameBox
	depth := 0
	var walk func(n *perf.Flame, x float64, d int)
	walk = func(n *perf.Flame, x float64, d int) {
		if d >= flameMaxDepth {
			deeper = true
			return
		}
		w := plotW * float64(n.Value) / float64(f.Value)
		b := flameBox{n: n, x: x, w: w, depth: d}
		if k, ok := perf.ParseKind(n.Kind); ok && d > 0 {
			b.kind = k
		} else {
			b.rootKind = true
		}
		boxes = append(boxes, b)
		depth = max(depth, d+1)
		for _, c := range n.Children {
			if c.Value <= 0 {
				continue
			}
			walk(c, x, d+1)
			x += plotW * float64(c.Value) / float64(f.Value)
		}
	}
	walk(f, left, 0)

	var items []hLegendItem
	var kinds []perf.Kind
	for _, k := range perf.Kinds() {
		if slices.ContainsFunc(boxes, func(b flameBox) bool { return !b.rootKind && b.kind == k }) {
			kinds = append(kinds, k)
			items = append(items, hLegendItem{name: k.Label(), kind: hLegShare, color: perfColors[k]})
		}
	}
	p := plot{id: id, label: title, x0: left, x1: width - right}
	p.y0 = p.legend(items, left+6, 6, plotW-12) + 8
	p.y1 = p.y0 + float64(depth)*flameRowH
	p.open("g", false, "class", "flame")
	total := float64(f.Value)
	draw := func(b flameBox) {
		p.open("g", false)
		p.title(fmt.Sprintf("%s\n%s samples, %s%% of all", b.n.Name, digits(b.n.Value), flamePct(100*float64(b.n.Value)/total)))
		y := p.y0 + float64(b.depth)*flameRowH
		p.rect(b.x, y, math.Max(b.w-1, 0.5), flameRowH-1)
		if s := flameLabel(b.n.Name, b.w-6); s != "" {
			p.text(b.x+3, y+flameRowH/2+3.5, s)
		}
		p.end("g")
	}
	p.open("g", false, "fill", flameRootColor)
	for _, b := range boxes {
		if b.rootKind {
			draw(b)
		}
	}
	p.end("g")
	for _, k := range kinds {
		p.openSeries(k.Label(), "fill", perfColors[k])
		for _, b := range boxes {
			if !b.rootKind && b.kind == k {
				draw(b)
			}
		}
		p.end("g")
	}
	p.end("g")
	return p.svg(width, p.y1+4), deeper
}

// flamePct is a share in a tooltip: 60, 12.3, 0.5.
func flamePct(v float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
}

// flameLabel is as much of function name's short form (its package path
// left out) as fits in width pixels, cut with an ellipsis; "" when not
// even three characters do.
func flameLabel(name string, width float64) string {
	const px = 11
	s := shortFunc(name)
	if hTextWidth(s, px) <= width {
		return s
	}
	r := []rune(s)
	for n := len(r) - 1; n >= 3; n-- {
		if t := string(r[:n]) + "…"; hTextWidth(t, px) <= width {
			return t
		}
	}
	return ""
}

// shortFunc leaves a Go function's package path out of its name:
// "github.com/iopath/iopath/engine.(*preadRun).Run" is
// "engine.(*preadRun).Run". A kernel function stays as it is.
func shortFunc(name string) string {
	head := name
	if i := strings.IndexAny(name, "(["); i >= 0 {
		head = name[:i]
	}
	if i := strings.LastIndexByte(head, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}
