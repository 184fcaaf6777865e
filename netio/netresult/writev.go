package netresult

import (
	"fmt"
	"slices"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/stats"
)

// WritevKind is the "kind" of the JSON form of WritevReport.
const WritevKind = "writev"

// WritevSchemaVersion is the version of the JSON form of WritevReport
// (docs/schema/writev.schema.json).
//
// Version 2: each result keeps its runs' figures (per_run), and the
// report says when it started and how it was run (config).
// compare reads version 1 too.
const WritevSchemaVersion = 2

// The ways of sending a k-part response (package netio/writev), with
// IOURing (SENDMSG).
const (
	Writes     = "writes"
	Coalesced  = "coalesced"
	NetBuffers = "net.Buffers"
)

var writevWays = []string{Writes, Coalesced, NetBuffers, IOURing}

// WritevWays returns the ways of sending a response, in the order the
// reports show them.
func WritevWays() []string { return slices.Clone(writevWays) }

// WritevReport is the result of one `iopath net bench --writev`: one
// Writev per way and part count, the medians over the runs with every
// run's figures.
type WritevReport struct {
	// SchemaVersion is the version of the format the report was read
	// from or is written in (report.WritevJSON writes it first).
	SchemaVersion int              `json:"-"`
	Command       string           `json:"command"`
	Started       time.Time        `json:"started"`
	Machine       features.Machine `json:"machine"`
	Config        WritevConfig     `json:"config"`
	Results       []Writev         `json:"results"`
}

// WritevConfig is how a WritevReport was run.
type WritevConfig struct {
	Parts        []int    `json:"parts"`
	Ways         []string `json:"ways"`
	MinPartBytes int      `json:"min_part_bytes"`
	MaxPartBytes int      `json:"max_part_bytes"`
	// Responses per run, when DurationNs is 0.
	Responses  int   `json:"responses"`
	DurationNs int64 `json:"duration_ns,omitempty"`
	Rounds     int   `json:"rounds"` // runs of each (way, k), interleaved
}

// Writev is one run of a way at a part count k, or (from WritevMedians)
// the median of several.
type Writev struct {
	Way       string `json:"way"`
	K         int    `json:"parts"`
	RespBytes int    `json:"response_bytes"`
	Runs      int    `json:"runs"`

	Responses int64         `json:"responses"` // summed over runs
	Elapsed   time.Duration `json:"elapsed_ns"`
	NsPerResp float64       `json:"ns_per_response"`

	// Calls is what the sender asked for: Write or WriteTo calls, or
	// SENDMSG requests (summed over runs).
	Calls int64 `json:"calls"`
	// Syscalls is the system calls the sending thread made for them:
	// write(2)/writev(2) counted by the kernel (syscw), or io_uring_enter
	// (summed over runs).
	Syscalls        int64   `json:"syscalls"`
	SyscallsPerResp float64 `json:"syscalls_per_response"`

	CPU          time.Duration `json:"cpu_ns"` // the sending thread's (summed)
	CPUNsPerResp float64       `json:"cpu_ns_per_response"`

	Verified bool `json:"verified"` // the reader got exactly the bytes sent

	// Min and max over the runs (WritevMedians), else the run's own
	// figure.
	CPUNsPerRespMin float64 `json:"cpu_ns_per_response_min"`
	CPUNsPerRespMax float64 `json:"cpu_ns_per_response_max"`

	// PerRun holds the figures of each run that succeeded, in the order
	// they ran (WritevMedians); empty for a single run.
	PerRun []WritevRun `json:"per_run,omitempty"`

	Err string `json:"error,omitempty"`
}

// WritevRun is one run's figures of a Writev.
type WritevRun struct {
	Responses       int64         `json:"responses"`
	Elapsed         time.Duration `json:"elapsed_ns"`
	NsPerResp       float64       `json:"ns_per_response"`
	SyscallsPerResp float64       `json:"syscalls_per_response"`
	CPUNsPerResp    float64       `json:"cpu_ns_per_response"`
}

// WritevMedians reduces rs, single runs, to one Writev per (way, k), in
// the order of first appearance: the median of the per-response figures
// over the runs that succeeded, the min and max of the CPU, each run's
// figures (PerRun), and the totals. A (way, k) whose runs all failed
// keeps the first failure's Err; one where some failed notes how many in
// Err and is not Verified.
func WritevMedians(rs []Writev) []Writev {
	type key struct {
		way string
		k   int
	}
	order, groups := groupBy(rs, func(r Writev) key { return key{r.Way, r.K} })
	out := make([]Writev, 0, len(order))
	for _, kk := range order {
		g := groups[kk]
		var ok []Writev
		for _, r := range g {
			if r.Err == "" {
				ok = append(ok, r)
			}
		}
		if len(ok) == 0 {
			m := g[0]
			m.Runs = len(g)
			out = append(out, m)
			continue
		}
		m := Writev{Way: kk.way, K: kk.k, RespBytes: ok[0].RespBytes, Runs: len(ok), Verified: true,
			PerRun: make([]WritevRun, 0, len(ok))}
		var ns, sc, cpu []float64
		for _, r := range ok {
			m.Responses += r.Responses
			m.Elapsed += r.Elapsed
			m.Calls += r.Calls
			m.Syscalls += r.Syscalls
			m.CPU += r.CPU
			m.Verified = m.Verified && r.Verified
			m.PerRun = append(m.PerRun, WritevRun{Responses: r.Responses, Elapsed: r.Elapsed,
				NsPerResp: r.NsPerResp, SyscallsPerResp: r.SyscallsPerResp, CPUNsPerResp: r.CPUNsPerResp})
			ns = append(ns, r.NsPerResp)
			sc = append(sc, r.SyscallsPerResp)
			cpu = append(cpu, r.CPUNsPerResp)
		}
		m.NsPerResp, m.SyscallsPerResp, m.CPUNsPerResp = stats.Median(ns), stats.Median(sc), stats.Median(cpu)
		m.CPUNsPerRespMin, m.CPUNsPerRespMax = stats.MinMax(cpu)
		if len(ok) < len(g) {
			for _, r := range g {
				if r.Err != "" {
					m.Err = fmt.Sprintf("%d of %d runs failed: %s", len(g)-len(ok), len(g), r.Err)
					m.Verified = false
					break
				}
			}
		}
		out = append(out, m)
	}
	return out
}
