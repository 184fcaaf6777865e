package report

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/iopath/iopath/advise"
	"github.com/iopath/iopath/perf"
)

// AdviseDoc maps an advise result into a Doc: what was found and how it
// was measured in the header; a row per candidate and cache state (warm
// rows, then cold), with the rate candidates are ranked by, its ratio to
// the baseline and the CPU it cost, each over the rounds; the candidates
// that were not measured and why; the notes; then the recommendation and
// its Go code.
func AdviseDoc(r *advise.Result) *Doc {
	d := &Doc{Kind: "advise"}
	for _, f := range r.Facts() {
		d.Header = append(d.Header, Field{f.Key, f.Value})
	}
	many := r.Inventory.Kind == advise.ManyFiles
	base := "× " + advise.BaselineName(r.Inventory.Kind)
	d.Columns = []Column{
		{Key: "engine", Title: "engine", Left: true},
		{Key: "cache", Title: "cache", Left: true},
	}
	// One file's rate in the largest binary unit the fastest reaches, so
	// that a small file's figures do not all read 0.00.
	scale := 1.0
	if many {
		d.Columns = append(d.Columns,
			Column{Key: "files_per_s", Title: "files/s", Unit: "1/s", Better: Higher, Spread: true},
			Column{Key: "gib_per_s", Title: "GiB/s", Unit: "GiB/s", Better: Higher, Prec: 2, Wide: true},
			Column{Key: "ratio", Title: base, Unit: "×", Better: Higher, Prec: 2},
			Column{Key: "cpu_s_per_1k_files", Title: "CPU-s/1k files", Unit: "s", Better: Lower, Prec: 4},
			Column{Key: "errors", Title: "errors", Better: Lower})
	} else {
		key, unit := "gib_per_s", "GiB/s"
		scale = 1 << 30
		var top float64
		for _, m := range r.Measurements {
			top = max(top, m.RateMax)
		}
		switch {
		case top < 1<<20:
			key, unit, scale = "kib_per_s", "KiB/s", 1<<10
		case top < 1<<30:
			key, unit, scale = "mib_per_s", "MiB/s", 1<<20
		}
		d.Columns = append(d.Columns,
			Column{Key: key, Title: unit, Unit: unit, Better: Higher, Prec: 2, Spread: true},
			Column{Key: "ratio", Title: base, Unit: "×", Better: Higher, Prec: 2},
			Column{Key: "cpu_s_per_gib", Title: "CPU-s/GiB", Unit: "s/GiB", Better: Lower, Prec: 3})
	}
	d.Columns = append(d.Columns, Column{Key: "rounds", Title: "rounds", Wide: true})
	// With a perf recording, its breakdown goes in CSV's records too;
	// the table and Markdown show it in a table of its own
	// (AdvisePerfDoc).
	kinds := advisePerfKinds(r)
	if kinds != nil {
		d.Columns = append(d.Columns, Column{Key: "perf_samples", Title: "samples", Hidden: true})
		for _, k := range kinds {
			d.Columns = append(d.Columns, Column{Key: "perf_" + k.String() + "_pct", Title: k.String(), Unit: "%", Prec: 1, Hidden: true})
		}
	}
	invalid := map[advise.Cache]bool{}
	for _, ph := range r.Phases {
		invalid[ph.Cache] = ph.Skipped == "" && !ph.Valid
	}
	// The candidates not measured come after the measured ones, once
	// each for one reason, with the cache state when only one.
	var rows []Row
	type skip struct{ label, why string }
	var skips []skip
	skipped := map[skip][]advise.Cache{}
	for _, c := range []advise.Cache{advise.Warm, advise.Cold} {
		for i := range r.Measurements {
			m := &r.Measurements[i]
			if m.Cache != c {
				continue
			}
			label, cache := m.Label, string(c)
			if m.Baseline {
				label += " (baseline)"
			}
			if !m.Measured() {
				if k := (skip{label, m.Skipped}); m.Skipped != "" {
					if skipped[k] == nil {
						skips = append(skips, k)
					}
					skipped[k] = append(skipped[k], c)
				}
				continue
			}
			if invalid[c] {
				cache += "*" // see the notes
			}
			f := m.PerRound(r.Inventory.Kind)
			ratio := Figure(m.Ratio)
			if m.Ratio == 0 {
				ratio = Figure(math.NaN())
			}
			row := Row{Cells: []Cell{TextCell(label), TextCell(cache)}}
			if many {
				gib := make([]float64, len(f.BytesPerS))
				for i, b := range f.BytesPerS {
					gib[i] = b / (1 << 30)
				}
				row.Cells = append(row.Cells, Runs(f.Rates), Runs(gib), ratio, Runs(f.CPU), Figure(float64(m.Errors)))
			} else {
				rates := make([]float64, len(f.Rates))
				for i, x := range f.Rates {
					rates[i] = x / scale
				}
				row.Cells = append(row.Cells, Runs(rates), ratio, Runs(f.CPU))
			}
			row.Cells = append(row.Cells, Figure(float64(len(m.Rounds))))
			if kinds != nil {
				row.Cells = append(row.Cells, advisePerfCells(m.Perf, kinds)...)
			}
			rows = append(rows, row)
		}
	}
	for _, k := range skips {
		row := Row{Cells: []Cell{TextCell(k.label)}, Err: "not measured: " + k.why}
		if cs := skipped[k]; len(cs) == 1 {
			row.Cells = append(row.Cells, TextCell(string(cs[0])))
			row.Err = "not measured " + string(cs[0]) + ": " + k.why
		}
		rows = append(rows, row)
	}
	d.Groups = []Group{{Rows: rows}}
	for _, c := range []advise.Cache{advise.Warm, advise.Cold} {
		if invalid[c] {
			d.Notes = append(d.Notes, fmt.Sprintf("%s*: not used for the advice: the data was not %s (see the notes)", c, c))
		}
	}
	d.Notes = append(d.Notes, r.Notes...)
	d.Legend = []Field{{base, "the rate divided by the baseline's in the same cache state"}}
	if len(r.Measurements) > 0 {
		d.Legend = append(d.Legend, Field{"(min–max)", "over the rounds; the figures are medians"})
	}
	d.After = []string{r.Advice()}
	return d
}

// advisePerfKinds lists the kinds of CPU (perf.Kinds, in order) that
// some measurement's breakdown has a share of; nil when none has a
// breakdown.
func advisePerfKinds(r *advise.Result) []perf.Kind {
	var kinds []perf.Kind
	recorded := false
	for _, k := range perf.Kinds() {
		for i := range r.Measurements {
			if b := r.Measurements[i].Perf; b != nil {
				recorded = true
				if b.Share(k) > 0 {
					kinds = append(kinds, k)
					break
				}
			}
		}
	}
	if recorded && kinds == nil {
		kinds = []perf.Kind{} // recorded, without a sample
	}
	return kinds
}

// advisePerfCells are a breakdown's sample count and its shares of kinds,
// in %; empty figures without a breakdown.
func advisePerfCells(b *perf.Breakdown, kinds []perf.Kind) []Cell {
	if b == nil {
		cells := make([]Cell, 1+len(kinds))
		for i := range cells {
			cells[i] = Figure(math.NaN())
		}
		return cells
	}
	cells := []Cell{Figure(float64(b.Samples))}
	for _, k := range kinds {
		cells = append(cells, Figure(100*b.Share(k)))
	}
	return cells
}

// advisePerfTerms say what each kind of CPU holds, for the legend.
var advisePerfTerms = map[perf.Kind]string{
	perf.User:    "the program's own code (the hashing of every byte, copies it makes itself)",
	perf.Runtime: "the Go runtime (scheduler, GC, allocation, entering and leaving syscalls)",
	perf.Syscall: "the kernel's syscall entry and exit",
	perf.Copy:    "the kernel copying data to the program's memory",
	perf.Fault:   "page faults (a mapping's pages touched)",
	perf.IOUring: "io_uring's submission, completion and workers",
	perf.Poll:    "readiness polling (epoll, poll, select)",
	perf.Net:     "the network stack",
	perf.Kernel:  "the rest of the kernel (page cache, file system, block layer, scheduler)",
}

// AdvisePerfDoc is the breakdown of a recorded advise trial (advise
// --perf) as a small table of its own: a row per measured candidate and
// cache state, as AdviseDoc orders them, with perf's sample count and
// the share of the samples each kind of CPU took, in %; a kind no row
// has is left out. It is nil when the result holds no recording.
func AdvisePerfDoc(r *advise.Result) *Doc {
	kinds := advisePerfKinds(r)
	if kinds == nil {
		return nil
	}
	d := &Doc{Kind: "advise", Title: "Where the CPU went (perf): % of the samples taken while each candidate read"}
	d.Columns = []Column{
		{Key: "engine", Title: "engine", Left: true},
		{Key: "cache", Title: "cache", Left: true},
		{Key: "perf_samples", Title: "samples"},
	}
	d.Legend = []Field{{"samples", "perf's cpu-clock samples (about 4,000 per CPU-second) over all the rounds"}}
	for _, k := range kinds {
		d.Columns = append(d.Columns, Column{Key: "perf_" + k.String() + "_pct", Title: k.String(), Unit: "%", Prec: 1})
		d.Legend = append(d.Legend, Field{k.String(), advisePerfTerms[k]})
	}
	invalid := map[advise.Cache]bool{}
	for _, ph := range r.Phases {
		invalid[ph.Cache] = ph.Skipped == "" && !ph.Valid
	}
	var rows []Row
	for _, c := range []advise.Cache{advise.Warm, advise.Cold} {
		for i := range r.Measurements {
			m := &r.Measurements[i]
			if m.Cache != c || m.Perf == nil {
				continue
			}
			label, cache := m.Label, string(c)
			if m.Baseline {
				label += " (baseline)"
			}
			if invalid[c] {
				cache += "*"
			}
			rows = append(rows, Row{Cells: append([]Cell{TextCell(label), TextCell(cache)}, advisePerfCells(m.Perf, kinds)...)})
		}
	}
	d.Groups = []Group{{Rows: rows}}
	return d
}

// WriteAdvise writes an advise result in one of KindFormats: JSON is
// the result itself (advise.WriteJSON), the others its Doc. A recorded
// trial (advise --perf) has its breakdown in CSV's records, and as a
// second table (AdvisePerfDoc) after the first one's legend in the table
// and Markdown, before the notes and the advice.
func WriteAdvise(w io.Writer, format string, r *advise.Result, o DocOptions) error {
	if format == "json" {
		return advise.WriteJSON(w, r)
	}
	d, p := AdviseDoc(r), AdvisePerfDoc(r)
	if p == nil || (format != "table" && format != "markdown") {
		return WriteDoc(w, format, d, o)
	}
	rest := &Doc{Kind: d.Kind, Notes: d.Notes, After: d.After}
	d.Notes, d.After = nil, nil
	var b bytes.Buffer
	if err := WriteDoc(&b, format, d, o); err != nil {
		return err
	}
	if format == "table" {
		b.WriteString("\n")
	}
	for _, x := range []*Doc{p, rest} {
		if err := WriteDoc(&b, format, x, o); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
