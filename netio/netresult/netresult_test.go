package netresult

import (
	"math"
	"slices"
	"testing"

	"github.com/iopath/iopath/perf"
)

func TestFileServeMedians(t *testing.T) {
	rs := []FileServe{
		{Method: ReadWrite, FileSize: 10, Runs: 1, Bytes: 100, Responses: 10, GBps: 1, CPUSecPerGB: 3, Verified: true},
		{Method: Sendfile, FileSize: 10, Runs: 1, Err: "boom"},
		{Method: ReadWrite, FileSize: 10, Runs: 1, Bytes: 100, Responses: 10, GBps: 5, CPUSecPerGB: 1, Verified: true},
		{Method: ReadWrite, FileSize: 10, Runs: 1, Bytes: 100, Responses: 10, GBps: 2, CPUSecPerGB: 2, Verified: true},
	}
	got := FileServeMedians(rs)
	if len(got) != 2 {
		t.Fatalf("%d groups, want 2", len(got))
	}
	m := got[0]
	if m.Method != ReadWrite || m.Runs != 3 || m.GBps != 2 || m.GBpsMin != 1 || m.GBpsMax != 5 ||
		m.CPUSecPerGB != 2 || m.CPUSecPerGBMin != 1 || m.CPUSecPerGBMax != 3 || m.Bytes != 300 || !m.Verified {
		t.Errorf("median %+v", m)
	}
	// Every run's figures, in the order they ran, for compare's test.
	var gbps, cpu []float64
	for _, r := range m.PerRun {
		gbps, cpu = append(gbps, r.GBps), append(cpu, r.CPUSecPerGB)
	}
	if !slices.Equal(gbps, []float64{1, 5, 2}) || !slices.Equal(cpu, []float64{3, 1, 2}) {
		t.Errorf("per run GB/s %v, CPU-s/GB %v; want [1 5 2], [3 1 2]", gbps, cpu)
	}
	if got[1].Err != "boom" || got[1].Verified || len(got[1].PerRun) != 0 {
		t.Errorf("failed group %+v", got[1])
	}
}

func TestWritevMedians(t *testing.T) {
	rs := []Writev{
		{Way: Writes, K: 2, Responses: 10, CPUNsPerResp: 300, SyscallsPerResp: 2, Verified: true},
		{Way: IOURing, K: 2, Err: "not supported"},
		{Way: Writes, K: 2, Responses: 10, CPUNsPerResp: 100, SyscallsPerResp: 2, Verified: true},
		{Way: Writes, K: 2, Responses: 10, CPUNsPerResp: 200, SyscallsPerResp: 3, Verified: true},
	}
	m := WritevMedians(rs)
	if len(m) != 2 || m[0].CPUNsPerResp != 200 || m[0].CPUNsPerRespMin != 100 || m[0].CPUNsPerRespMax != 300 ||
		m[0].SyscallsPerResp != 2 || m[0].Runs != 3 || m[0].Responses != 30 || !m[0].Verified {
		t.Errorf("median %+v", m)
	}
	var cpu []float64
	for _, r := range m[0].PerRun {
		cpu = append(cpu, r.CPUNsPerResp)
	}
	if !slices.Equal(cpu, []float64{300, 100, 200}) {
		t.Errorf("per run CPU ns %v, want [300 100 200]", cpu)
	}
	if m[1].Err == "" || m[1].Verified || len(m[1].PerRun) != 0 {
		t.Errorf("failed group %+v", m[1])
	}
}

// TestLoadErr: a clean run has no error; one with faults says each.
func TestLoadErr(t *testing.T) {
	if err := (&Load{Mode: "pingpong", Conns: 2}).Err(); err != nil {
		t.Errorf("clean run: %v", err)
	}
	err := (&Load{Mode: "pingpong", Conns: 2, Corrupted: 3, ConnErrors: 1, FirstError: "reset"}).Err()
	if err == nil || err.Error() != "load pingpong: 3 echoed bytes corrupted; 1 of 2 connections failed (first: reset)" {
		t.Errorf("faulty run: %v", err)
	}
}

// TestPointSummarize: the medians over the runs, the integrity counts
// summed.
func TestPointSummarize(t *testing.T) {
	p := &Point{Engine: "epoll", Conns: 10, Size: 64, Mode: "pingpong", Runs: []Run{
		{QPS: 100, ServerCPUPerReqUs: 3, P99Ns: 50, Lost: 1},
		{QPS: 300, ServerCPUPerReqUs: 1, P99Ns: 10, Corrupted: 2},
		{QPS: 200, ServerCPUPerReqUs: 2, P99Ns: 30, ConnErrors: 3, NoEcho: 2},
	}}
	p.Summarize()
	if p.QPS != 200 || p.ServerCPUPerReqUs != 2 || p.P99Ns != 30 || p.Lost != 1 || p.Corrupted != 2 || p.ConnErrors != 3 || p.NoEcho != 2 {
		t.Errorf("summarized: %+v", p)
	}
	p.Summarize() // again: the sums are not counted twice
	if p.Lost != 1 || p.ConnErrors != 3 {
		t.Errorf("summarized twice: %+v", p)
	}
}

// TestSummarizePerf: a point's breakdown is its runs' merged, weighed by
// their CPU; a run not recorded is said at the point, with the first
// error; a point of runs without perf has none.
func TestSummarizePerf(t *testing.T) {
	p := Point{Runs: []Run{
		{QPS: 1, Perf: &perf.Breakdown{Samples: 100, CPUNs: 100, Net: 1}},
		{QPS: 2, PerfError: "not recorded: perf died"},
		{QPS: 3, Perf: &perf.Breakdown{Samples: 300, CPUNs: 300, Net: 0.5, Kernel: 0.5}},
	}}
	p.Summarize()
	if b := p.Perf; b == nil || b.Samples != 400 || b.CPUNs != 400 || math.Abs(b.Net-0.625) > 1e-12 || math.Abs(b.Kernel-0.375) > 1e-12 {
		t.Errorf("merged %+v, want 400 samples, net 0.625, kernel 0.375", b)
	}
	if p.PerfError != "run 2: not recorded: perf died" {
		t.Errorf("perf error %q", p.PerfError)
	}
	p.Runs[0].PerfError = "profile: disk full"
	p.Summarize()
	if p.PerfError != "2 of 3 runs; run 1: profile: disk full" {
		t.Errorf("perf error %q", p.PerfError)
	}
	p = Point{Runs: []Run{{QPS: 1}}}
	p.Summarize()
	if p.Perf != nil || p.PerfError != "" {
		t.Errorf("without perf: %+v, %q", p.Perf, p.PerfError)
	}
}
