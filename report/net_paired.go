package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/netio/netresult"
)

// An engine against a reference (epoll) at one point, run by run: net
// bench runs a point's engines in turn, run after run, so the two runs of
// a pair saw the machine in the same state, and the ratio of a pair
// cancels the drift from run to run that each engine's own median keeps.
// The "vs epoll" column is the median of these ratios, and the header
// says, from a sign test over them, at how many points an engine used
// more or less CPU than epoll beyond the noise.

// netMaxListed is the most points a note lists by name where an engine
// used more CPU than the reference; past it the header's count says it.
const netMaxListed = 8

// netRefsOf is the reference engines (netRefs) that have a row in r.
func netRefsOf(r *netresult.Report) []string {
	var refs []string
	for _, e := range netRefs {
		if slices.ContainsFunc(r.Points, func(p netresult.Point) bool { return p.Engine == e }) {
			refs = append(refs, e)
		}
	}
	return refs
}

// netPaired divides each of p's runs' server CPU per request by ref's in
// the run of the same number. It is nil when the two do not pair up:
// either point failed (a run lost), or their runs differ in number.
func netPaired(p, ref *netresult.Point) []float64 {
	if p.Err != "" || ref.Err != "" || len(p.Runs) != len(ref.Runs) {
		return nil
	}
	var out []float64
	for i := range p.Runs {
		a, b := p.Runs[i].ServerCPUPerReqUs, ref.Runs[i].ServerCPUPerReqUs
		if a > 0 && b > 0 && finite(a) && finite(b) {
			out = append(out, a/b)
		}
	}
	return out
}

// netVsCell is the cell of p's CPU per request over ref's: the median
// of the paired runs' ratios with their min–max, or with no pairs the
// ratio of the two medians.
func netVsCell(p, ref *netresult.Point) Cell {
	if pr := netPaired(p, ref); len(pr) > 0 {
		return Runs(pr)
	}
	base := ref.ServerCPUPerReqUs
	if ref.Err != "" {
		base = 0
	}
	return ratioCell(p.ServerCPUPerReqUs, base)
}

// netVersus sums up each engine against ref over the points, as header
// fields (a value split at "; " into lines): per engine, the median of
// its points' ratios and their range, and the points where a sign test
// over the paired runs (stats.SignTest, p < stats.Alpha) finds it used
// more or less CPU than ref; then, once, the test's terms, or that the
// runs were too few for it. A note names the points where an engine used
// more, when they are few enough to read.
func netVersus(engines []string, groups [][]*netresult.Point, ref string) (fields []Field, notes []string) {
	type versus struct {
		engine string
		meds   []float64 // each point's median ratio
		more   []string  // the points where it used more, labelled
		less   int       // how many where it used less
	}
	var vs []versus
	fewest, most := 0, 0 // pairs at a point, over every engine
	for _, e := range engines {
		if e == ref {
			continue
		}
		v := versus{engine: e}
		for _, g := range groups {
			i := slices.IndexFunc(g, func(p *netresult.Point) bool { return p.Engine == e })
			j := slices.IndexFunc(g, func(p *netresult.Point) bool { return p.Engine == ref })
			if i < 0 || j < 0 {
				continue
			}
			pr := netPaired(g[i], g[j])
			if len(pr) == 0 {
				continue
			}
			med := stats.Median(pr)
			if fewest == 0 || len(pr) < fewest {
				fewest = len(pr)
			}
			most = max(most, len(pr))
			v.meds = append(v.meds, med)
			d := make([]float64, len(pr))
			for k, r := range pr {
				d[k] = r - 1
			}
			up, down, p := stats.SignTest(d)
			switch {
			case p >= stats.Alpha:
			case up > down:
				v.more = append(v.more, fmt.Sprintf("%s (%.2f×)", keyOf(g[i]).label(), med))
			default:
				v.less++
			}
		}
		if len(v.meds) > 0 {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return nil, nil
	}
	judged := most >= stats.MinSignRuns // some point had the pairs for a verdict
	var parts []string
	for _, v := range vs {
		text := fmt.Sprintf("%s: %.2f× %s's CPU µs/req", v.engine, stats.Median(v.meds), ref)
		if len(v.meds) > 1 {
			lo, hi := stats.MinMax(v.meds)
			text += fmt.Sprintf(" at the median of %d points (%.2f× to %.2f×)", len(v.meds), lo, hi)
		}
		switch {
		case !judged:
		case len(v.meds) > 1:
			text += fmt.Sprintf("; beyond the noise: more CPU at %s, less at %d, neither at %d",
				plural(len(v.more), "point"), v.less, len(v.meds)-len(v.more)-v.less)
		case len(v.more) > 0:
			text += ": more, beyond the noise"
		case v.less > 0:
			text += ": less, beyond the noise"
		default:
			text += ": within the noise"
		}
		parts = append(parts, text)
		if len(v.more) > 0 && len(v.more) <= netMaxListed {
			notes = append(notes, fmt.Sprintf("%s used more server CPU per request than %s beyond the noise at: %s",
				v.engine, ref, strings.Join(v.more, ", ")))
		}
	}
	switch {
	case !judged:
		parts = append(parts, fmt.Sprintf("(%s per point: a sign test needs %d to tell a point from the noise)", plural(most, "run"), stats.MinSignRuns))
	case fewest < stats.MinSignRuns:
		parts = append(parts, fmt.Sprintf("(a sign test over each point's runs, p < %v; points with fewer than %d runs count as neither)", stats.Alpha, stats.MinSignRuns))
	default:
		parts = append(parts, fmt.Sprintf("(a sign test over each point's runs, p < %v)", stats.Alpha))
	}
	return []Field{{"vs " + ref, strings.Join(parts, "; ")}}, notes
}
