package netresult

import (
	"fmt"
	"slices"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/stats"
)

// FileServeKind is the "kind" of the JSON form of FileServeReport.
const FileServeKind = "file-serve"

// FileServeSchemaVersion is the version of the JSON form of
// FileServeReport (docs/schema/file-serve.schema.json).
//
// Version 2: each result keeps its runs' figures (per_run), the report
// says when it started, how it was run (config) and which methods could
// not run here (skipped). compare reads version 1 too.
const FileServeSchemaVersion = 2

// The four ways of serving a file (package netio/filesrv). IOURing is
// also a way of sending a response (writev).
const (
	ReadWrite = "readwrite"
	Sendfile  = "sendfile"
	Splice    = "splice"
	IOURing   = "io_uring"
)

var fileServeMethods = []string{ReadWrite, Sendfile, Splice, IOURing}

// FileServeMethods returns the ways of serving a file, in the order the
// reports show them.
func FileServeMethods() []string { return slices.Clone(fileServeMethods) }

// FileServeReport is the result of one `iopath net bench --serve-file`:
// one FileServe per method and file size, the medians over the runs with
// every run's figures.
type FileServeReport struct {
	// SchemaVersion is the version of the format the report was read
	// from or is written in (report.FileServeJSON writes it first).
	SchemaVersion int              `json:"-"`
	Command       string           `json:"command"`
	Started       time.Time        `json:"started"`
	Machine       features.Machine `json:"machine"`
	Config        FileServeConfig  `json:"config"`
	Results       []FileServe      `json:"results"`
	// Skipped lists methods that cannot run here, with the reason
	// (io_uring disabled, say). A skip is not a failure.
	Skipped []Skip `json:"skipped,omitempty"`
}

// FileServeConfig is how a FileServeReport was run.
type FileServeConfig struct {
	FileSizes  []int64  `json:"file_sizes_bytes"`
	Methods    []string `json:"methods"`
	Rounds     int      `json:"rounds"`      // runs of each (method, size), interleaved
	DurationNs int64    `json:"duration_ns"` // each run's
	// ServerCPUs and ClientCPUs are the cores each server child and the
	// client were pinned to; empty when pinning was not possible.
	ServerCPUs []int `json:"server_cpus,omitempty"`
	ClientCPUs []int `json:"client_cpus,omitempty"`
}

// FileServe is one measurement of a method on a file, or (from
// FileServeMedians) the median of several. GB and MB are decimal (10⁹
// and 10⁶ bytes); bytes are the files' (headers are not counted).
type FileServe struct {
	Method    string `json:"method"`
	FileSize  int64  `json:"file_size_bytes"`
	Conns     int    `json:"conns"`
	Chunk     int    `json:"chunk_bytes"`
	Depth     int    `json:"depth"`
	InProcess bool   `json:"in_process"` // the server ran in the client's process
	Runs      int    `json:"runs"`       // 1, or how many runs the medians are of

	Responses int64         `json:"responses"` // complete and verified (summed over runs)
	Bytes     int64         `json:"bytes"`     // file bytes received and verified (summed)
	Elapsed   time.Duration `json:"elapsed_ns"`
	GBps      float64       `json:"gb_per_s"`

	// ServerCPU is the CPU time of the threads serving the data
	// connections plus io_uring's kernel threads (summed over runs).
	ServerCPU   time.Duration `json:"server_cpu_ns"`
	IOThreadCPU time.Duration `json:"io_thread_cpu_ns"` // the io_uring threads' part of it
	CPUSecPerGB float64       `json:"server_cpu_s_per_gb"`
	// ProcessCPU is the server process's whole CPU time (RUSAGE_SELF),
	// runtime and control connection included; 0 in process, where it
	// would include the client.
	ProcessCPU      time.Duration `json:"process_cpu_ns,omitempty"`
	ProcCPUSecPerGB float64       `json:"process_cpu_s_per_gb,omitempty"`

	Syscalls        int64   `json:"syscalls"` // the server's, per filesrv's package doc (summed)
	SyscallsPerMB   float64 `json:"syscalls_per_mb"`
	SyscallsPerResp float64 `json:"syscalls_per_response"`
	// SyscallRetries is the part of Syscalls that only repeated or
	// continued calls a signal cut short (filesrv.Stats.Retries; summed).
	SyscallRetries int64 `json:"syscall_retries"`

	Corrupted int64 `json:"corrupted_bytes"` // bytes that differed from the file (summed)
	Verified  bool  `json:"verified"`        // every response complete and byte-exact

	// Min and max over the runs (FileServeMedians), else the run's own
	// figure.
	GBpsMin        float64 `json:"gb_per_s_min"`
	GBpsMax        float64 `json:"gb_per_s_max"`
	CPUSecPerGBMin float64 `json:"server_cpu_s_per_gb_min"`
	CPUSecPerGBMax float64 `json:"server_cpu_s_per_gb_max"`

	// PerRun holds the figures of each run that succeeded, in the order
	// they ran (FileServeMedians); empty for a single measurement.
	PerRun []FileServeRun `json:"per_run,omitempty"`

	// Err is why the run failed; the figures are then zero.
	Err string `json:"error,omitempty"`
}

// FileServeRun is one run's figures of a FileServe.
type FileServeRun struct {
	Responses       int64         `json:"responses"`
	Bytes           int64         `json:"bytes"`
	Elapsed         time.Duration `json:"elapsed_ns"`
	GBps            float64       `json:"gb_per_s"`
	CPUSecPerGB     float64       `json:"server_cpu_s_per_gb"`
	ProcCPUSecPerGB float64       `json:"process_cpu_s_per_gb,omitempty"`
	SyscallsPerMB   float64       `json:"syscalls_per_mb"`
	SyscallsPerResp float64       `json:"syscalls_per_response"`
}

// FileServeMedians reduces rs, single runs, to one FileServe per
// (method, file size, conns, chunk, depth, in process), in the order of
// first appearance: the median of each rate over the runs that
// succeeded, with the min and max of GB/s and CPU-s/GB, each run's
// figures (PerRun), and the totals (responses, bytes, CPU, system calls,
// corrupted bytes). A group whose runs all failed keeps the first
// failure; one where some failed notes how many in Err and is not
// Verified.
func FileServeMedians(rs []FileServe) []FileServe {
	type key struct {
		method              string
		size                int64
		conns, chunk, depth int
		inProcess           bool
	}
	order, groups := groupBy(rs, func(r FileServe) key {
		return key{r.Method, r.FileSize, r.Conns, r.Chunk, r.Depth, r.InProcess}
	})
	out := make([]FileServe, 0, len(order))
	for _, k := range order {
		g := groups[k]
		var ok []FileServe
		var firstErr string
		for _, r := range g {
			if r.Err == "" {
				ok = append(ok, r)
			} else if firstErr == "" {
				firstErr = r.Err
			}
		}
		if len(ok) == 0 {
			m := g[0]
			m.Runs = len(g)
			m.Verified = false
			out = append(out, m)
			continue
		}
		m := ok[0]
		m.Runs = len(ok)
		m.Responses, m.Bytes, m.Elapsed, m.ServerCPU, m.IOThreadCPU, m.ProcessCPU, m.Syscalls, m.SyscallRetries, m.Corrupted = 0, 0, 0, 0, 0, 0, 0, 0, 0
		m.Verified = true
		m.PerRun = make([]FileServeRun, 0, len(ok))
		var gbps, cpu, pcpu, spm, spr []float64
		for _, r := range ok {
			m.Responses += r.Responses
			m.Bytes += r.Bytes
			m.Elapsed += r.Elapsed
			m.ServerCPU += r.ServerCPU
			m.IOThreadCPU += r.IOThreadCPU
			m.ProcessCPU += r.ProcessCPU
			m.Syscalls += r.Syscalls
			m.SyscallRetries += r.SyscallRetries
			m.Corrupted += r.Corrupted
			m.Verified = m.Verified && r.Verified
			m.PerRun = append(m.PerRun, FileServeRun{Responses: r.Responses, Bytes: r.Bytes, Elapsed: r.Elapsed,
				GBps: r.GBps, CPUSecPerGB: r.CPUSecPerGB, ProcCPUSecPerGB: r.ProcCPUSecPerGB,
				SyscallsPerMB: r.SyscallsPerMB, SyscallsPerResp: r.SyscallsPerResp})
			gbps = append(gbps, r.GBps)
			cpu = append(cpu, r.CPUSecPerGB)
			pcpu = append(pcpu, r.ProcCPUSecPerGB)
			spm = append(spm, r.SyscallsPerMB)
			spr = append(spr, r.SyscallsPerResp)
		}
		m.GBps, m.CPUSecPerGB, m.ProcCPUSecPerGB = stats.Median(gbps), stats.Median(cpu), stats.Median(pcpu)
		m.SyscallsPerMB, m.SyscallsPerResp = stats.Median(spm), stats.Median(spr)
		m.GBpsMin, m.GBpsMax = stats.MinMax(gbps)
		m.CPUSecPerGBMin, m.CPUSecPerGBMax = stats.MinMax(cpu)
		if len(ok) < len(g) {
			m.Err = fmt.Sprintf("%d of %d runs failed: %s", len(g)-len(ok), len(g), firstErr)
			m.Verified = false
		}
		out = append(out, m)
	}
	return out
}

// groupBy groups rs by key, and returns the keys in the order of their
// first appearance: the order the runs were made in, which the reports
// keep.
func groupBy[K comparable, T any](rs []T, key func(T) K) ([]K, map[K][]T) {
	var order []K
	groups := map[K][]T{}
	for _, r := range rs {
		k := key(r)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	return order, groups
}
