package advise

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
)

// WriteJSON writes r as indented JSON of kind JSONKind (fields in
// docs/advise.md, schema in docs/schema/advise.schema.json).
func WriteJSON(w io.Writer, r *Result) error { return jsondoc.Write(w, JSONKind, SchemaVersion, r) }

// WriteText writes r for a reader: what was found, the table of figures,
// the recommendation, the code and the notes.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	inv := &r.Inventory
	quoted := make([]string, len(inv.Paths))
	for i, p := range inv.Paths {
		quoted[i] = units.QuotePath(p)
	}
	paths := strings.Join(quoted, " ")
	if inv.Kind == OneFile {
		fmt.Fprintf(&b, "%s: one file of %s\n", paths, humanSize(inv.Bytes))
	} else {
		n := count(inv.Files)
		if inv.AtLeast {
			n = "at least " + n
		}
		fmt.Fprintf(&b, "%s: %s files, %s; median %s, p90 %s, largest %s\n", paths, n, humanSize(inv.Bytes),
			humanSize(inv.Median), humanSize(inv.P90), humanSize(inv.Max))
		for reason, k := range sortedSkips(inv) {
			fmt.Fprintf(&b, "  not read: %s (%s), e.g. %s\n", count(k), reason, units.QuotePath(inv.FirstSkipped[reason]))
		}
	}
	if r.Residency >= 0 {
		fmt.Fprintf(&b, "now: %.0f%% of the data's pages are in the page cache (%s)\n", r.Residency*100, r.CacheNow)
	} else {
		fmt.Fprintf(&b, "now: whether the data is in the page cache cannot be seen (see the notes); taken as %s\n", r.CacheNow)
	}
	var phases []string
	for _, ph := range r.Phases {
		if ph.Skipped != "" {
			phases = append(phases, fmt.Sprintf("%s not measured (%s)", ph.Cache, ph.Skipped))
			continue
		}
		phases = append(phases, fmt.Sprintf("%s %d %s", ph.Cache, ph.Rounds, plural(ph.Rounds, "round")))
	}
	per := fmt.Sprintf("%s files (%s) per pass", count(r.Sample.Files), humanSize(r.Sample.Bytes))
	if inv.Kind == OneFile {
		per = humanSize(r.Sample.Bytes) + " per pass"
	}
	fmt.Fprintf(&b, "trial: %s; %s; %.1f s of a %.0f s budget\n\n", per, strings.Join(phases, ", "), r.Elapsed, r.Budget)

	writeTable(&b, r)

	b.WriteString("\n" + r.Recommendation.Text + "\n")
	if o := r.Recommendation.Other; o != nil {
		b.WriteString(o.Text + "\n")
	}
	if r.Auto != nil {
		b.WriteString(r.Auto.Text + "\n")
	}
	b.WriteString("\nIn Go (package github.com/iopath/iopath):\n\n")
	for _, line := range strings.SplitAfter(strings.TrimRight(r.Snippet, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("\t" + line)
	}
	b.WriteString("\n")
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range r.Notes {
			b.WriteString("  - " + units.EscapeControls(n) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// sortedSkips iterates over inv.Skipped in order of reason.
func sortedSkips(inv *Inventory) func(yield func(string, int64) bool) {
	return func(yield func(string, int64) bool) {
		var keys []string
		for k := range inv.Skipped {
			keys = append(keys, k)
		}
		for i := 1; i < len(keys); i++ {
			for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
				keys[j], keys[j-1] = keys[j-1], keys[j]
			}
		}
		for _, k := range keys {
			if !yield(k, inv.Skipped[k]) {
				return
			}
		}
	}
}

// writeTable writes the measured figures, warm rows then cold rows, then
// the candidates that were left out and why.
func writeTable(b *strings.Builder, r *Result) {
	many := r.Inventory.Kind == ManyFiles
	base := "× " + baselineName(r.Inventory.Kind)
	// One file's rates in the largest binary unit the fastest reaches, so
	// that a small file's figures do not all read 0.00.
	unit, div := "GiB/s", float64(1<<30)
	var top float64
	for _, m := range r.Measurements {
		top = max(top, m.RateMax)
	}
	switch {
	case top < 1<<20:
		unit, div = "KiB/s", 1<<10
	case top < 1<<30:
		unit, div = "MiB/s", 1<<20
	}
	head := []string{"engine", "cache", unit, "(min–max)", base, "CPU-s/GiB"}
	if many {
		head = []string{"engine", "cache", "files/s", "(min–max)", "GiB/s", base, "CPU-s/1k files", "errors"}
	}
	rows := [][]string{head}
	var left [][2]string
	invalid := map[Cache]bool{}
	for _, ph := range r.Phases {
		invalid[ph.Cache] = ph.Skipped == "" && !ph.Valid
	}
	for _, c := range []Cache{Warm, Cold} {
		for _, m := range r.Measurements {
			if m.Cache != c {
				continue
			}
			if !m.measured() {
				if m.Skipped != "" && !containsPair(left, m.Label, m.Skipped) {
					left = append(left, [2]string{m.Label, m.Skipped})
				}
				continue
			}
			label := m.Label
			if m.Baseline {
				label += " (baseline)"
			}
			cache := string(c)
			if invalid[c] {
				cache += "*" // see the footnote
			}
			ratio := fmt.Sprintf("%.2f", m.Ratio)
			if m.Ratio == 0 {
				ratio = "-"
			}
			if many {
				rows = append(rows, []string{label, cache, compact(m.Rate),
					"(" + compact(m.RateMin) + "–" + compact(m.RateMax) + ")",
					fmt.Sprintf("%.2f", m.BytesPerS/(1<<30)), ratio, fmt.Sprintf("%.3f", m.CPUPer1kFiles), count(m.Errors)})
			} else {
				rows = append(rows, []string{label, cache, fmt.Sprintf("%.2f", m.Rate/div),
					fmt.Sprintf("(%.2f–%.2f)", m.RateMin/div, m.RateMax/div), ratio, fmt.Sprintf("%.3f", m.CPUPerGiB)})
			}
		}
	}
	widths := make([]int, len(head))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < 2 {
				line.WriteString(cell + pad) // names left-aligned
			} else {
				line.WriteString(pad + cell) // figures right-aligned
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	for _, c := range []Cache{Warm, Cold} {
		if invalid[c] {
			fmt.Fprintf(b, "* not used for the advice: the data was not %s (see the notes)\n", c)
		}
	}
	for _, l := range left {
		fmt.Fprintf(b, "%s: not measured: %s\n", l[0], l[1])
	}
}

func containsPair(list [][2]string, a, b string) bool {
	for _, p := range list {
		if p[0] == a && p[1] == b {
			return true
		}
	}
	return false
}

// compact formats a rate for a table: 950, 9.5k, 138k, 1.25M.
func compact(x float64) string {
	switch {
	case x < 1000:
		return fmt.Sprintf("%.0f", x)
	case x < 10e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	case x < 1e6:
		return fmt.Sprintf("%.0fk", x/1e3)
	}
	return fmt.Sprintf("%.2fM", x/1e6)
}
