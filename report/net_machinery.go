package report

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/netio/netresult"
)

// netMachinery sums up, from --perf's breakdowns, what each engine's own
// machinery cost (perf.Breakdown.Machinery: syscall entry/exit, readiness
// polling, io_uring, the server's code and Go runtime) as a share of its
// server CPU, the median over the points recorded; and the floor under
// ref: 1 − ref's machinery, what an engine doing ref's kernel work with
// no machinery at all would use, as a multiple of ref's CPU per request.
// The floor says how much replacing ref's machinery can save at most: an
// engine below it does the kernel's work for less, not just its own. It
// is a header field (split at "; " into lines) and a note saying what
// counts; nothing without breakdowns.
func netMachinery(engines []string, groups [][]*netresult.Point, ref string) (fields []Field, notes []string) {
	shares := map[string][]float64{}
	var floors []float64
	points := 0 // points where some engine was recorded
	for _, g := range groups {
		recorded := false
		for _, p := range g {
			if p.Err != "" || p.Perf == nil || p.Perf.Samples == 0 {
				continue
			}
			recorded = true
			m := p.Perf.Machinery()
			shares[p.Engine] = append(shares[p.Engine], m)
			if p.Engine == ref {
				floors = append(floors, 1-m)
			}
		}
		if recorded {
			points++
		}
	}
	var parts []string
	for _, e := range engines {
		if s := shares[e]; len(s) > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", e, 100*stats.Median(s)))
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	text := strings.Join(parts, ", ") + " of the server's CPU"
	if points > 1 {
		text += fmt.Sprintf(" at the median of %d points", points)
	}
	if len(floors) > 0 && len(shares) > 1 {
		text += fmt.Sprintf("; an engine with none, doing %s's kernel work: %.2f× %s's CPU µs/req", ref, stats.Median(floors), ref)
		if len(floors) > 1 {
			lo, hi := stats.MinMax(floors)
			text += fmt.Sprintf(" at the median (%.2f× to %.2f×)", lo, hi)
		}
	}
	notes = append(notes, "machinery (--perf): an engine's syscall entry/exit, readiness polling, io_uring, and the server's "+
		"own code and Go runtime, as a share of its samples; the rest (network stack, kernel copies, page faults, the rest of "+
		"the kernel) is the kernel's work for the bytes, which every engine has it do; \"an engine with none\" is 1 − "+ref+"'s "+
		"machinery: what an engine would use doing "+ref+"'s kernel work with no machinery at all, the most that replacing "+
		ref+"'s machinery can save")
	return []Field{{"machinery", text}}, notes
}
