package bench

import (
	"time"

	"github.com/iopath/iopath/features"
)

// SchemaVersion is the version of the JSON result format. It changes when a
// field changes meaning or is removed; new fields do not change it.
const SchemaVersion = 1

// Report is everything one `iopath bench` invocation measured. It is the one
// result model that every renderer (table, JSON) is fed from. Units are in
// the JSON key names.
type Report struct {
	SchemaVersion int              `json:"schema_version"`
	Tool          string           `json:"tool"` // "iopath"
	Command       string           `json:"command"`
	Started       time.Time        `json:"started"`
	Machine       features.Machine `json:"machine"`
	File          FileInfo         `json:"file"`
	Results       []Result         `json:"results"`
	Notes         []string         `json:"notes"`
}

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
	Engine  string `json:"engine"`
	Cache   string `json:"cache"` // warm, cold or direct
	Pattern string `json:"pattern"`
	BS      int    `json:"bs"`
	Workers int    `json:"workers"`
	QD      int    `json:"qd"`
	Consume string `json:"consume"` // checksum, none or touch

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
	LatP50Ns     int64   `json:"lat_p50_ns"` // over all runs' blocks together
	LatP99Ns     int64   `json:"lat_p99_ns"`
	LatP999Ns    int64   `json:"lat_p999_ns"`
	LatMaxNs     int64   `json:"lat_max_ns"`
	Syscalls     int64   `json:"syscalls"` // per pass over the file, median
	MinFlt       int64   `json:"minflt"`   // per pass over the file, median
	MajFlt       int64   `json:"majflt"`
	NVCSw        int64   `json:"nvcsw"`
	NIVCSw       int64   `json:"nivcsw"`
	// ChecksumOK is true when every run's checksum equalled the reference,
	// false when one did not, and null when not checked (--consume none or
	// touch, or the null engine, which delivers no file data).
	ChecksumOK *bool    `json:"checksum_ok"`
	Error      string   `json:"error"` // empty when every run succeeded
	Notes      []string `json:"notes,omitempty"`
}

// Run is one child process's measurement.
type Run struct {
	Passes         int      `json:"passes"` // reads of the whole file in this run
	Bytes          int64    `json:"bytes"`
	Blocks         int64    `json:"blocks"`
	WallNs         int64    `json:"wall_ns"`  // measured phase: open, read, consume, close
	SetupNs        int64    `json:"setup_ns"` // one-time setup, not in wall_ns
	BytesPerS      float64  `json:"bytes_per_s"`
	UserNs         int64    `json:"user_ns"`
	SysNs          int64    `json:"sys_ns"`
	MinFlt         int64    `json:"minflt"`
	MajFlt         int64    `json:"majflt"`
	NVCSw          int64    `json:"nvcsw"`
	NIVCSw         int64    `json:"nivcsw"`
	Syscalls       int64    `json:"syscalls"`
	LatP50Ns       int64    `json:"lat_p50_ns"`
	LatP99Ns       int64    `json:"lat_p99_ns"`
	LatP999Ns      int64    `json:"lat_p999_ns"`
	LatMaxNs       int64    `json:"lat_max_ns"`
	ResidentBefore float64  `json:"resident_before"` // fraction of the file in page cache before the run
	Checksum       string   `json:"checksum,omitempty"`
	ChecksumOK     *bool    `json:"checksum_ok"`
	Error          string   `json:"error"`
	Notes          []string `json:"notes,omitempty"`
}
