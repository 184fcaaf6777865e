package report

import (
	"fmt"
	"io"
	"math"

	"github.com/iopath/iopath/advise"
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

// WriteAdvise writes an advise result in one of KindFormats: JSON is
// the result itself (advise.WriteJSON), the others its Doc.
func WriteAdvise(w io.Writer, format string, r *advise.Result, o DocOptions) error {
	if format == "json" {
		return advise.WriteJSON(w, r)
	}
	return WriteDoc(w, format, AdviseDoc(r), o)
}
