package bench

import (
	"fmt"
	"time"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/perf"
)

// SchemaVersion is the version of the JSON result format (the "file",
// "tree" and "append" kinds, docs/schema/file.schema.json,
// tree.schema.json and append.schema.json). It
// changes when a key is renamed or removed or a field changes meaning; new
// fields do not change it.
//
// Version 2: qd is 0 for engines without a queue (version 1 recorded the
// configured depth for every engine); rows have a tool ("iopath" or "fio").
//
// Version 3: every report starts with "kind"; keys carry their units or
// what they count per (bs_bytes, block_sizes_bytes, syscalls_per_pass,
// resident_before_frac, machine.page_size_bytes). report.LoadJSON renames
// the keys of versions 1 and 2 when it reads them.
const SchemaVersion = 3

// Upgrade brings a report read from an older schema version to the current
// one, in place, so that reports of different versions compare row by row.
// It returns an error for a version newer than this package knows.
func Upgrade(r *Report) error {
	if r.SchemaVersion > SchemaVersion {
		return fmt.Errorf("schema_version %d is newer than this iopath reads (%d); upgrade iopath", r.SchemaVersion, SchemaVersion)
	}
	if r.SchemaVersion < 2 {
		for i := range r.Results {
			res := &r.Results[i]
			if res.Tool == "" {
				res.Tool = ToolIopath
			}
			if e, err := engine.Lookup(res.Engine); err == nil && !e.Caps().Queue {
				res.QD = 0
			}
		}
	}
	r.SchemaVersion = SchemaVersion
	return nil
}

// Report is everything one `iopath bench` invocation measured. It is the one
// result model that every renderer (table, JSON) is fed from. Units are in
// the JSON key names.
type Report struct {
	// SchemaVersion is the version of the format the report was read
	// from or is written in. report.JSON writes it, with the kind, as
	// the first keys ("schema_version", "kind"); encoding/json leaves
	// it out, as it does not know the kind.
	SchemaVersion int              `json:"-"`
	Tool          string           `json:"tool"` // "iopath"
	Command       string           `json:"command"`
	Started       time.Time        `json:"started"`
	Machine       features.Machine `json:"machine"`
	File          FileInfo         `json:"file"`
	// Tree describes the tree read by `bench --tree`; nil for one file.
	Tree *TreeInfo `json:"tree,omitempty"`
	// Append describes the durable appends of `bench --append`; nil for
	// reads and for the write engines (--rw).
	Append *AppendInfo `json:"append,omitempty"`
	// Sweep lists the values each swept parameter took, in order. A
	// parameter that was not swept has one value.
	Sweep Sweep `json:"sweep"`
	// Fio describes the fio that ran the twin rows, when --fio was given;
	// nil otherwise.
	Fio     *FioInfo `json:"fio,omitempty"`
	Results []Result `json:"results"`
	Notes   []string `json:"notes"`
	// Interrupted says the benchmark was stopped (Ctrl-C) before every
	// run was made: the rows it did not reach carry the error
	// InterruptedError, and rows it cut short are marked Interrupted.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Kinds of report, the "kind" key of the JSON: one file, a tree of
// files (bench --tree), or durable appends (bench --append).
const (
	KindFile   = "file"
	KindTree   = "tree"
	KindAppend = "append"
)

// Kind is the report's kind: KindTree when it read a tree, KindAppend
// when it measured appends, else KindFile.
func (r *Report) Kind() string {
	switch {
	case r.Tree != nil:
		return KindTree
	case r.Append != nil:
		return KindAppend
	}
	return KindFile
}

// InterruptedError is the Error of a row that an interrupt kept from
// making any run: it was not measured, and its figures are not zeros but
// absent.
const InterruptedError = "interrupted"

// Sweep is the matrix a benchmark covered.
type Sweep struct {
	BlockSizes  []int    `json:"block_sizes_bytes"`
	Workers     []int    `json:"workers"`
	QueueDepths []int    `json:"queue_depths"`
	Caches      []string `json:"caches"`
}

// Points is the number of (block size, workers, queue depth) points.
func (s Sweep) Points() int {
	return max(len(s.BlockSizes), 1) * max(len(s.Workers), 1) * max(len(s.QueueDepths), 1)
}

// FioInfo says which fio ran the twin rows.
type FioInfo struct {
	Path    string `json:"path"`
	Version string `json:"version"` // as fio --version prints it: "fio-3.33"
}

// Tools that produce rows.
const (
	ToolIopath = "iopath"
	ToolFio    = "fio"
)

// FileInfo describes the file that was read.
type FileInfo struct {
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
	Temporary bool   `json:"temporary"` // created for this run and removed after
}

// Result is one (engine, cache state, workload) point: several runs and
// their summary. Summary figures are medians over the runs that succeeded;
// min and max show the spread.
type Result struct {
	// Tool is "iopath" for our engines and "fio" for a fio twin row.
	Tool string `json:"tool"`
	// Engine is our engine's name, or for a fio row fio's ioengine
	// ("psync", "io_uring", ...).
	Engine string `json:"engine"`
	// Twin pairs a row with its counterpart: for a fio row the iopath
	// engine it mirrors ("pread"), for an iopath row fio's ioengine when a
	// fio row was measured beside it; empty otherwise.
	Twin  string `json:"twin,omitempty"`
	Cache string `json:"cache"` // warm, cold or direct
	// Pattern is seq or rand for reads; write, randwrite or append for
	// writes (fio's words).
	Pattern string `json:"pattern"`
	// Sync is a write row's durability discipline (none, end, every:N,
	// dsync, direct: engine.Sync); empty for reads.
	Sync    string `json:"sync,omitempty"`
	BS      int    `json:"bs_bytes"`
	Workers int    `json:"workers"`
	// QD is the queue depth per worker, 0 for engines that have no queue
	// (one request in flight per worker).
	QD      int    `json:"qd"`
	Consume string `json:"consume"` // checksum, none or touch; empty for writes

	Runs []Run `json:"runs"`
	// MinTimeNs is how long each warm or direct run repeated passes over
	// the file for; cold runs make one pass (a second would be warm).
	MinTimeNs int64 `json:"min_time_ns"`

	BytesPerS    float64 `json:"bytes_per_s"` // median
	BytesPerSMin float64 `json:"bytes_per_s_min"`
	BytesPerSMax float64 `json:"bytes_per_s_max"`
	IOPS         float64 `json:"iops"`          // blocks per second, median
	CPUSPerGiB   float64 `json:"cpu_s_per_gib"` // (user+sys) seconds per GiB delivered, median
	UsrPct       float64 `json:"usr_pct"`       // user CPU as % of one core over the wall time, median
	SysPct       float64 `json:"sys_pct"`
	// VsFio is this iopath row's median throughput divided by its fio
	// twin's (1.05: 5% faster than fio); 0 when there is no fio twin.
	VsFio float64 `json:"vs_fio,omitempty"`
	// IOThreadCPUSPerGiB is the part of CPUSPerGiB spent by io_uring's
	// kernel threads (SQPOLL iou-sqp, io-wq iou-wrk) working for the run.
	// It is already included in CPUSPerGiB; fio leaves it out.
	IOThreadCPUSPerGiB float64 `json:"io_thread_cpu_s_per_gib"`
	LatP50Ns           int64   `json:"lat_p50_ns"` // over all runs' blocks together
	LatP90Ns           int64   `json:"lat_p90_ns"`
	LatP99Ns           int64   `json:"lat_p99_ns"`
	LatP999Ns          int64   `json:"lat_p999_ns"`
	LatP9999Ns         int64   `json:"lat_p9999_ns"`
	LatMaxNs           int64   `json:"lat_max_ns"`
	Syscalls           int64   `json:"syscalls_per_pass"` // per pass over the file, median
	MinFlt             int64   `json:"minflt_per_pass"`   // per pass over the file, median
	MajFlt             int64   `json:"majflt_per_pass"`
	NVCSw              int64   `json:"nvcsw_per_pass"`
	NIVCSw             int64   `json:"nivcsw_per_pass"`
	// Write rows: the sync calls per pass (fsync, fdatasync, msync,
	// io_uring FSYNC requests), median, and the latency of one, over all
	// runs' syncs together.
	SyncsPerPass int64 `json:"syncs_per_pass,omitempty"`
	SyncLatP50Ns int64 `json:"sync_lat_p50_ns,omitempty"`
	SyncLatP99Ns int64 `json:"sync_lat_p99_ns,omitempty"`
	// ChecksumOK is true when every run's checksum equalled the reference,
	// false when one did not, and null when not checked (--consume none or
	// touch, or the null engine, which delivers no file data). For a
	// write row it says whether every run's file, read back from the
	// device after the run, held exactly what was written.
	ChecksumOK *bool `json:"checksum_ok"`
	// Many-files figures (bench --tree), per pass over the tree: files
	// delivered (FileErrors of them with an error), files per second
	// (median, min, max), syscalls counted at the engine's call sites per
	// file, CPU seconds per 1,000 files and context switches per file.
	Files           int64   `json:"files_per_pass,omitempty"`
	FileErrors      int64   `json:"file_errors_per_pass,omitempty"`
	FilesPerS       float64 `json:"files_per_s,omitempty"`
	FilesPerSMin    float64 `json:"files_per_s_min,omitempty"`
	FilesPerSMax    float64 `json:"files_per_s_max,omitempty"`
	SyscallsPerFile float64 `json:"syscalls_per_file,omitempty"`
	CPUSPer1kFiles  float64 `json:"cpu_s_per_1k_files,omitempty"`
	CSwPerFile      float64 `json:"csw_per_file,omitempty"`
	// Append figures (bench --append), medians over the runs: sync
	// calls per durable record (fsync or fdatasync for the os.File
	// methods, one a record; a Log's group commits, fewer when Appends
	// share one), and user+system CPU microseconds per durable record.
	// IOPS holds the durable records per second, BS the record size.
	SyncsPerRecord float64 `json:"syncs_per_record,omitempty"`
	CPUUsPerRecord float64 `json:"cpu_us_per_record,omitempty"`
	// Perf is where the CPU of the runs that succeeded went, their perf
	// samples together (--perf); Flame their call tree, pruned of calls
	// under 0.5% of the samples, for the HTML report's flame graph.
	Perf  *perf.Breakdown `json:"perf,omitempty"`
	Flame *perf.Flame     `json:"flame,omitempty"`
	// Runtime is what the Go runtime did, each figure the median over the
	// runs that succeeded (iopath rows).
	Runtime *metrics.Runtime `json:"runtime,omitempty"`
	// NoisyRuns counts the runs marked noisy (see Run.Noisy). They are
	// kept in the figures and shown, not hidden.
	NoisyRuns int    `json:"noisy_runs"`
	Error     string `json:"error"` // empty when every run succeeded
	// Interrupted says an interrupt stopped the benchmark before all of
	// this row's runs were made: its figures are from the runs it has
	// (a note says how many), or, with none, Error is InterruptedError.
	Interrupted bool     `json:"interrupted,omitempty"`
	Notes       []string `json:"notes,omitempty"`
}

// Run is one child process's measurement.
type Run struct {
	Passes    int     `json:"passes"` // reads of the whole file in this run
	Bytes     int64   `json:"bytes"`
	Blocks    int64   `json:"blocks"`           // tree runs: files delivered
	Errors    int64   `json:"errors,omitempty"` // tree runs: files delivered with an error
	WallNs    int64   `json:"wall_ns"`          // measured phase: open, read, consume, close
	SetupNs   int64   `json:"setup_ns"`         // one-time setup, not in wall_ns
	BytesPerS float64 `json:"bytes_per_s"`
	UserNs    int64   `json:"user_ns"`
	SysNs     int64   `json:"sys_ns"`
	MinFlt    int64   `json:"minflt"`
	MajFlt    int64   `json:"majflt"`
	NVCSw     int64   `json:"nvcsw"`
	NIVCSw    int64   `json:"nivcsw"`
	Syscalls  int64   `json:"syscalls"`
	// IOThreadNs is CPU time of io_uring's kernel threads (iou-sqp,
	// iou-wrk) during the run; it is included in UserNs+SysNs.
	IOThreadNs     int64   `json:"io_thread_ns"`
	LatP50Ns       int64   `json:"lat_p50_ns"`
	LatP90Ns       int64   `json:"lat_p90_ns"`
	LatP99Ns       int64   `json:"lat_p99_ns"`
	LatP999Ns      int64   `json:"lat_p999_ns"`
	LatP9999Ns     int64   `json:"lat_p9999_ns"`
	LatMaxNs       int64   `json:"lat_max_ns"`
	ResidentBefore float64 `json:"resident_before_frac"` // fraction of the file in page cache before the run
	ResidentAfter  float64 `json:"resident_after_frac"`  // and after it
	// OtherCPUPct is the CPU that everything else on the machine used
	// during the run, in % of one core (from /proc/stat, less this run's
	// own and the runner's).
	OtherCPUPct float64 `json:"other_cpu_pct"`
	// Noisy, when not empty, says why the run's figures may not be the
	// engine's alone: another process took more than 10% of a core, or
	// a warm run lost cached pages while it ran.
	Noisy string `json:"noisy,omitempty"`
	// NoiseUnknown says the run was too short for /proc/stat's 10 ms
	// ticks to tell whether other processes competed with it.
	NoiseUnknown bool `json:"noise_unknown,omitempty"`
	// Profile is the pprof CPU profile written for this run (--profile),
	// Trace its execution trace (--trace).
	Profile string `json:"profile,omitempty"`
	Trace   string `json:"trace,omitempty"`
	// PerfProfile is the perf recording of this run, as a pprof profile
	// with kernel frames (--perf), and Perf where its CPU went.
	PerfProfile string          `json:"perf_profile,omitempty"`
	Perf        *perf.Breakdown `json:"perf,omitempty"`
	// Runtime is what the Go runtime did during the measured phase.
	Runtime  *metrics.Runtime `json:"runtime,omitempty"`
	Checksum string           `json:"checksum,omitempty"`
	// Write runs: sync calls made, their latency, and how the file was
	// read back to verify it ("direct": O_DIRECT; "dropped": fsync, then
	// its pages dropped from the cache, on a filesystem without O_DIRECT).
	Syncs        int64  `json:"syncs,omitempty"`
	SyncLatP50Ns int64  `json:"sync_lat_p50_ns,omitempty"`
	SyncLatP99Ns int64  `json:"sync_lat_p99_ns,omitempty"`
	Verified     string `json:"verified,omitempty"`
	// KworkerNs is the CPU the kernel's worker threads (kworker: dirty
	// page write-back) used during a write run, measured machine-wide;
	// it is not in UserNs+SysNs (fio leaves it out too), nor counted as
	// other processes' by the noise guard.
	KworkerNs  int64    `json:"kworker_ns,omitempty"`
	ChecksumOK *bool    `json:"checksum_ok"`
	Error      string   `json:"error"`
	Notes      []string `json:"notes,omitempty"`
}
