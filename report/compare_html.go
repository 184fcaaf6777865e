package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"strings"
)

// CompareHTML writes c on the one HTML page (page.go): a warning when the
// machines differ, the two reports and their differences in the header
// cards, one chart per headline figure with each matched row's change as
// a bar left or right of zero (coloured by its verdict, with the noise
// band of a min–max verdict behind it), then CompareDoc's table, notes
// and definitions.
//
// Each chart is <svg class="chart" data-chart="compare-KEY">, KEY being
// the metric's key (gib_per_s, qps...).
func CompareHTML(w io.Writer, c *Comparison) error {
	p := page{Title: "iopath compare: two " + cmp.Or(c.Kind, "report") + " reports", Generator: "iopath compare"}
	if c.New.Machine.IopathVersion != "" {
		p.Generator += " (iopath " + c.New.Machine.IopathVersion + ")"
	}
	d := CompareDoc(c)
	if c.MachineDiffers() {
		p.Banner = []string{"The reports come from different machines: comparisons across machines are suspect."}
	} else {
		p.Machine = machineKV(c.New.Machine, "")
	}
	for _, f := range d.Header {
		if f.Key != "machine" { // the Machine card says it
			addKV(&p.Run, f.Key, f.Value)
		}
	}
	addKV(&p.Run, "summary", c.Summary.String())

	charts := section{ID: "changes", Title: "Changes", Intro: []string{
		"Each bar is a row's change from the old report to the new, in percent of the old median; " +
			"green is better, red worse, grey within the noise, white with a dashed edge not judged (a single run). " +
			"A shaded band is the noise of a min–max verdict (fewer than 5 runs a side)."}}
	grouped := c.grouped()
	for i, m := range c.Metrics {
		var rows []hSigned
		for _, r := range c.Rows {
			if r.Status != StatusMatched || len(r.Deltas) <= i || r.Deltas[i].Verdict == VerdictNA {
				continue
			}
			d := r.Deltas[i]
			band := -1.0
			if d.Test == TestMinMax && d.Old > 0 {
				band = d.Spread / d.Old * 100
			}
			rows = append(rows, hSigned{label: rowLabel(&r, grouped, " · %s"), value: deltaPct(d),
				class: verdictClass(d.Verdict), pct: d.Pct, band: band, tip: compareTip(m, d)})
		}
		charts.Charts = append(charts.Charts, chart{ID: "compare-" + m.Key, Title: m.Title + " change",
			Caption: fmt.Sprintf("Change of the median %s, new against old (%s is better).", m.Title, m.Better),
			SVG:     template.HTML(hSignedChart("compare-"+m.Key, m.Title+" change, %", rows))})
	}
	p.Sections = append([]section{charts}, docSections("results", "Rows", d)...)
	p.Sections[1].Intro = d.After // the summary
	return renderPage(w, p)
}

func verdictClass(v Verdict) string {
	switch v {
	case VerdictFaster, VerdictBetter:
		return "good"
	case VerdictSlower, VerdictWorse:
		return "bad"
	case VerdictNoise:
		return "noise"
	}
	return "unknown"
}

// compareTip is a bar's tooltip: the medians, the verdict and its test.
func compareTip(m CompareMetric, d *Delta) string {
	col := m.col
	f := func(v float64) string { return strings.TrimSpace(Cell{Num: true, Value: v}.format(col)) }
	s := fmt.Sprintf("%s: %s → %s (%s), %s", m.Title, f(d.Old), f(d.New), deltaPct(d), verdictText(d))
	switch d.Test {
	case TestMannWhitney:
		s += fmt.Sprintf("; Mann–Whitney p = %.3f", d.P)
	case TestMinMax:
		s += "; min–max noise ±" + f(d.Spread)
	}
	if d.Why != "" {
		s += "; " + d.Why
	}
	return s
}
