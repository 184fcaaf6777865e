package perf

import (
	"fmt"
	"io"
	"strings"

	"github.com/google/pprof/profile"
)

// Profile is the samples as a pprof profile: one location per function,
// kernel frames beneath the Go frames that called them, so that
// go tool pprof -http shows one flame graph of both. Each sample carries
// two labels: thread (its thread's name without the id: iopath,
// iou-wrk, iou-sqp) and kind (where the breakdown counts it), so that
// -tagfocus=kind=copy selects the copies.
func (s *Samples) Profile() *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
	}
	maps := map[string]*profile.Mapping{}
	locs := make([]*profile.Location, len(s.Frames))
	for i, fr := range s.Frames {
		m := maps[fr.DSO]
		if m == nil {
			m = &profile.Mapping{ID: uint64(len(maps) + 1), File: fr.DSO, HasFunctions: true}
			maps[fr.DSO] = m
			p.Mapping = append(p.Mapping, m)
		}
		fn := &profile.Function{ID: uint64(i + 1), Name: fr.Func, SystemName: fr.Func, Filename: fr.DSO}
		p.Function = append(p.Function, fn)
		locs[i] = &profile.Location{ID: uint64(i + 1), Mapping: m, Line: []profile.Line{{Function: fn}}}
		p.Location = append(p.Location, locs[i])
	}
	var period int64
	for i := range s.List {
		smp := &s.List[i]
		if period == 0 {
			period = smp.Period
		}
		ps := &profile.Sample{Value: []int64{1, smp.Period},
			Label: map[string][]string{"thread": {threadName(smp.Comm)}, "kind": {classify(s, smp).String()}}}
		for _, fr := range smp.Stack {
			ps.Location = append(ps.Location, locs[fr])
		}
		p.Sample = append(p.Sample, ps)
	}
	p.Period = period
	// pprof names a profile after its first mapping: make that the
	// program's own binary (the user DSO with the most samples), not the
	// kernel.
	count := map[*profile.Mapping]int{}
	for _, ps := range p.Sample {
		for _, l := range ps.Location {
			count[l.Mapping]++
		}
	}
	best := -1
	for i, m := range p.Mapping {
		if strings.HasPrefix(m.File, "[") {
			continue
		}
		if best < 0 || count[m] > count[p.Mapping[best]] {
			best = i
		}
	}
	if best > 0 {
		p.Mapping[0], p.Mapping[best] = p.Mapping[best], p.Mapping[0]
		for i, m := range p.Mapping {
			m.ID = uint64(i + 1)
		}
	}
	return p
}

// WriteProfile writes the pprof profile, gzipped, to w.
func (s *Samples) WriteProfile(w io.Writer) error {
	p := s.Profile()
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("perf: pprof profile: %w", err)
	}
	return p.Write(w)
}

// threadName is a thread's name without its trailing "-ID" (io_uring's
// kernel workers are named iou-wrk-PID, iou-sqp-PID).
func threadName(comm string) string {
	if i := strings.LastIndexByte(comm, '-'); i > 0 {
		digits := comm[i+1:]
		if digits != "" && strings.Trim(digits, "0123456789") == "" {
			return comm[:i]
		}
	}
	return comm
}
