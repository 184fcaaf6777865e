package advise

import (
	"fmt"
	"io"
	"strings"

	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
)

// WriteJSON writes r as indented JSON of kind JSONKind (fields in
// docs/advise.md, schema in docs/schema/advise.schema.json).
func WriteJSON(w io.Writer, r *Result) error { return jsondoc.Write(w, JSONKind, SchemaVersion, r) }

// Fact is one line of what advise found, as a report's header shows it:
// the data, what was not read, how much of it is cached, the trial.
type Fact struct{ Key, Value string }

// Facts says what was found and how it was measured, for the header of
// the table package report draws (report.AdviseDoc). A Fact with no Key
// continues the one above it.
func (r *Result) Facts() []Fact {
	inv := &r.Inventory
	quoted := make([]string, len(inv.Paths))
	for i, p := range inv.Paths {
		quoted[i] = units.QuotePath(p)
	}
	paths := strings.Join(quoted, " ")
	var out []Fact
	if inv.Kind == OneFile {
		out = append(out, Fact{"data", fmt.Sprintf("%s: one file of %s", paths, humanSize(inv.Bytes))})
	} else {
		n := count(inv.Files)
		if inv.AtLeast {
			n = "at least " + n
		}
		out = append(out, Fact{"data", fmt.Sprintf("%s: %s files, %s", paths, n, humanSize(inv.Bytes))},
			Fact{"", fmt.Sprintf("median %s, p90 %s, largest %s", humanSize(inv.Median), humanSize(inv.P90), humanSize(inv.Max))})
		for reason, k := range sortedSkips(inv) {
			out = append(out, Fact{"", fmt.Sprintf("not read: %s (%s), e.g. %s", count(k), reason, units.QuotePath(inv.FirstSkipped[reason]))})
		}
	}
	if r.Residency >= 0 {
		out = append(out, Fact{"now", fmt.Sprintf("%.0f%% of the data's pages are in the page cache (%s)", r.Residency*100, r.CacheNow)})
	} else {
		out = append(out, Fact{"now", fmt.Sprintf("whether the data is in the page cache cannot be seen (see the notes); taken as %s", r.CacheNow)})
	}
	per := fmt.Sprintf("%s files (%s) per pass", count(r.Sample.Files), humanSize(r.Sample.Bytes))
	if inv.Kind == OneFile {
		per = humanSize(r.Sample.Bytes) + " per pass"
	}
	var phases []string
	for _, ph := range r.Phases {
		if ph.Skipped != "" {
			phases = append(phases, fmt.Sprintf("%s not measured (%s)", ph.Cache, ph.Skipped))
			continue
		}
		phases = append(phases, fmt.Sprintf("%s %d %s", ph.Cache, ph.Rounds, plural(ph.Rounds, "round")))
	}
	out = append(out, Fact{"trial", fmt.Sprintf("%s, %.1f s of a %.0f s budget", per, r.Elapsed, r.Budget)})
	if len(phases) > 0 {
		out = append(out, Fact{"", strings.Join(phases, ", ")})
	}
	return out
}

// Advice is what to do, for a reader: the recommendation, what is faster
// in the other cache state, what Auto would pick, and the Go code.
func (r *Result) Advice() string {
	var b strings.Builder
	b.WriteString(r.Recommendation.Text + "\n")
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
	return b.String()
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
