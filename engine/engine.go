package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/defaults"
	"github.com/iopath/iopath/metrics"
)

// Pattern is the order in which blocks are read.
type Pattern uint8

const (
	// Sequential reads each worker's contiguous region front to back.
	Sequential Pattern = iota
	// Random visits every block once in a seeded pseudo-random order.
	Random
	// Append writes Job.Size bytes past the end of the file, block after
	// block (writers only; see Writer).
	Append
)

func (p Pattern) String() string {
	switch p {
	case Sequential:
		return "seq"
	case Random:
		return "rand"
	case Append:
		return "append"
	}
	return fmt.Sprintf("Pattern(%d)", uint8(p))
}

// ParsePattern accepts "seq", "sequential", "rand", "random" and
// "append", and fio's words "read", "randread", "write" and "randwrite".
func ParsePattern(s string) (Pattern, error) {
	switch strings.ToLower(s) {
	case "seq", "sequential", "read", "write":
		return Sequential, nil
	case "rand", "random", "randread", "randwrite":
		return Random, nil
	case "append":
		return Append, nil
	}
	return 0, fmt.Errorf("unknown pattern %q (want seq, rand or append)", s)
}

// Defaults used when a Job leaves a field zero.
const (
	DefaultBlockSize  = 128 << 10
	DefaultQueueDepth = defaults.QueueDepth
	DefaultVectors    = 4
	DefaultSeed       = 0x10fa7
)

// Limits that keep a Job sane.
const (
	MinBlockSize  = 512
	MaxBlockSize  = 64 << 20
	MaxWorkers    = 1024
	MaxQueueDepth = 4096
	MaxVectors    = 1024 // IOV_MAX
	directAlign   = 4096
)

// Job says what to read and how.
type Job struct {
	Path       string  // the file to read
	Pattern    Pattern // Sequential or Random
	BlockSize  int     // bytes per block (default 128 KiB)
	Workers    int     // goroutines (each with its own thread for io_uring); default 1
	QueueDepth int     // io_uring: requests in flight per worker (default 32)
	Vectors    int     // readv: buffers per preadv call (default 4); the random pattern uses 1
	Direct     bool    // open with O_DIRECT (bypass the page cache); mmap cannot
	SQPoll     bool    // io_uring: let a kernel thread poll the submission queue
	Seed       uint64  // random pattern seed (default DefaultSeed)
	Latency    bool    // record per-block latency into each worker's histogram
	// CopyMapped makes mmap copy each block into a buffer before handing it
	// to the sink, as fio's mmap engine does, so that a consumer that reads
	// nothing still pays for moving the data (fio's semantics).
	CopyMapped bool
	// KeepMapped makes mmap keep each worker's mapping from one Run to the
	// next while Run opens the same file (device, inode, size), as fio maps
	// once and loops over the mapping, so that a run of many passes does
	// not pay a fresh mapping's first touches on every pass (which cost
	// far more than later ones on some machines: docs/engines.md). The
	// mapped pages then stay in the page cache until Close:
	// POSIX_FADV_DONTNEED does not drop mapped pages, so a caller that
	// empties the cache between Runs must not set it.
	KeepMapped bool
	// Sync is a write job's durability discipline (see Sync); readers
	// take only the zero value.
	Sync Sync
	// Size is the bytes a write job writes per Run: the blocks of
	// [0, Size) for the sequential and random patterns, Size bytes past
	// the file's end at open for Append. 0 means the file's size at open.
	// Readers take only 0.
	Size int64
	// PseudoLimit is the most bytes read from a file whose size is not
	// known in advance (see ErrLimit); past it Run fails with an error
	// wrapping ErrLimit. 0 means DefaultPseudoLimit.
	PseudoLimit int64
}

// WithDefaults returns j with zero fields set to their defaults.
func (j Job) WithDefaults() Job {
	if j.BlockSize == 0 {
		j.BlockSize = DefaultBlockSize
	}
	if j.Workers == 0 {
		j.Workers = 1
	}
	if j.QueueDepth == 0 {
		j.QueueDepth = DefaultQueueDepth
	}
	if j.Vectors == 0 {
		j.Vectors = DefaultVectors
	}
	if j.Seed == 0 {
		j.Seed = DefaultSeed
	}
	if j.PseudoLimit == 0 {
		j.PseudoLimit = DefaultPseudoLimit
	}
	if j.Sync.Mode == SyncDirect {
		j.Direct = true
	}
	return j
}

// Validate reports the first field of j (after defaults) that is out of range.
func (j Job) Validate() error {
	switch {
	case j.Path == "":
		return errors.New("no file given")
	case j.BlockSize < MinBlockSize || j.BlockSize > MaxBlockSize:
		return fmt.Errorf("block size %d out of range [%d, %d]", j.BlockSize, MinBlockSize, MaxBlockSize)
	case j.Direct && j.BlockSize%directAlign != 0:
		return fmt.Errorf("block size %d must be a multiple of %d with O_DIRECT", j.BlockSize, directAlign)
	case j.Workers < 1 || j.Workers > MaxWorkers:
		return fmt.Errorf("workers %d out of range [1, %d]", j.Workers, MaxWorkers)
	case j.QueueDepth < 1 || j.QueueDepth > MaxQueueDepth:
		return fmt.Errorf("queue depth %d out of range [1, %d]", j.QueueDepth, MaxQueueDepth)
	case j.Vectors < 1 || j.Vectors > MaxVectors:
		return fmt.Errorf("vectors %d out of range [1, %d]", j.Vectors, MaxVectors)
	case j.Pattern > Append:
		return fmt.Errorf("unknown pattern %d", j.Pattern)
	case j.Size < 0:
		return fmt.Errorf("size %d is negative", j.Size)
	case j.PseudoLimit < 0:
		return fmt.Errorf("pseudo-file limit %d is negative", j.PseudoLimit)
	}
	return j.Sync.validate()
}

// Sink consumes blocks. Block is called from worker w's goroutine with the
// block at offset off; b is valid only during the call. A non-nil error stops
// the run and is returned by Run.
//
// A panic in Block stops the run as an error does, and Run panics again
// with the same value on its caller's goroutine once every worker has
// stopped, every read in flight is reaped and the file is closed, so that
// the caller can recover it (a panic on a worker's goroutine would
// otherwise end the process).
type Sink interface {
	Block(w int, off int64, b []byte) error
}

// Stopper is implemented by a Sink that may block in Block (waiting for
// another worker's block, say). An engine calls Stop once, from any
// goroutine, as soon as a run is ending early (a worker failed, a Sink
// returned an error or panicked, ctx was cancelled), so that the sink
// stops waiting and returns err from every blocked and later Block.
type Stopper interface{ Stop(err error) }

// SinkFunc adapts a function to a Sink.
type SinkFunc func(w int, off int64, b []byte) error

// Block calls f.
func (f SinkFunc) Block(w int, off int64, b []byte) error { return f(w, off, b) }

// WorkerStats is what one worker counted in a run.
type WorkerStats struct {
	Bytes    int64              // bytes handed to the sink (writers: bytes written)
	Blocks   int64              // blocks handed to the sink (writers: blocks written)
	Syscalls int64              // system calls the engine made (its own call sites, not the Go runtime's)
	Lat      *metrics.Histogram // per-block latency; nil unless Job.Latency
	// Syncs counts the sync operations of a write job (fsync, fdatasync,
	// msync, io_uring FSYNC requests), and SyncLat times each (nil
	// unless Job.Latency).
	Syncs   int64
	SyncLat *metrics.Histogram
}

// Stats is what a run counted.
type Stats struct {
	Workers []WorkerStats
	// Notes says what the engine did differently from what was asked, for
	// example io_uring setup flags the kernel refused and that were dropped.
	Notes []string
}

// Total merges the workers' counts; its Lat is nil when no worker recorded.
func (s *Stats) Total() WorkerStats {
	var t WorkerStats
	for _, w := range s.Workers {
		t.Bytes += w.Bytes
		t.Blocks += w.Blocks
		t.Syscalls += w.Syscalls
		t.Syncs += w.Syncs
		if w.Lat != nil {
			if t.Lat == nil {
				t.Lat = metrics.NewHistogram()
			}
			t.Lat.Merge(w.Lat)
		}
		if w.SyncLat != nil && w.SyncLat.Count() > 0 {
			if t.SyncLat == nil {
				t.SyncLat = metrics.NewHistogram()
			}
			t.SyncLat.Merge(w.SyncLat)
		}
	}
	return t
}

// Caps are an engine's capabilities, checked by the runner.
type Caps struct {
	Direct bool // supports O_DIRECT
	NoData bool // delivers no file data (null): checksums cannot match
	// Queue says the engine keeps Job.QueueDepth requests in flight per
	// worker; engines without it have one request in flight per worker
	// and ignore the queue depth.
	Queue bool
}

// Engine is one I/O path.
type Engine interface {
	// Name is the engine's registered name ("pread", "io_uring", ...).
	Name() string
	// Caps reports what the engine supports.
	Caps() Caps
	// Prepare validates job and does the one-time setup that is not part of
	// the measured phase (rings, buffers, threads). An engine that cannot
	// run here returns an error wrapping ErrNotSupported with the reason.
	Prepare(job Job) (Prepared, error)
}

// Prepared is an engine set up for one Job.
type Prepared interface {
	// Run opens the job's file, delivers every block to sink and closes the
	// file. It may be called again after it returns. Cancelling ctx stops
	// the workers promptly; Run then returns ctx.Err(). When the run ends
	// early and sink is a Stopper, Run calls its Stop (see Stopper), and
	// returns only after Stop has returned. A panic in sink goes on in
	// Run's caller (see Sink).
	//
	// A file whose size is not known in advance (see ErrLimit) is read to
	// its end by the engines that read (read, pread, readv); the others
	// return an error wrapping ErrNotSupported for it. Run returns an error
	// wrapping ErrNotSupported only before it has handed any block to
	// sink, so that a caller may read that file with another engine.
	Run(ctx context.Context, sink Sink) (*Stats, error)
	// Close releases what Prepare set up. It is safe to call more than once.
	Close() error
}

// ErrNotSupported is wrapped by errors from engines that cannot run in this
// kernel, process or configuration. It is features.ErrNotSupported, the
// one sentinel every package wraps.
var ErrNotSupported = features.ErrNotSupported

// NotSupportedError says what is not supported and why.
type NotSupportedError struct {
	What   string // "io_uring", "O_DIRECT with mmap", ...
	Reason string // a sentence a user can act on
}

func (e *NotSupportedError) Error() string {
	if e.Reason == "" {
		return e.What + " is not supported"
	}
	return e.What + " is not supported: " + e.Reason
}

// Is makes errors.Is(err, ErrNotSupported) true.
func (e *NotSupportedError) Is(target error) bool { return target == ErrNotSupported }

var registry = map[string]Engine{}

// order is the canonical order of engines in tables.
var order = []string{"read", "pread", "readv", "mmap", "io_uring", "null"}

// Register adds an engine to the registry, for tests and experiments (a
// fault-injecting decorator, a prototype path). It panics on a duplicate
// name, like http.Handle.
func Register(e Engine) { register(e) }

func register(e Engine) {
	if _, dup := registry[e.Name()]; dup {
		panic("engine: duplicate registration of " + e.Name())
	}
	registry[e.Name()] = e
}

// Lookup returns the engine called name.
func Lookup(name string) (Engine, error) {
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown engine %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return e, nil
}

// Names lists the registered engines in table order.
func Names() []string {
	var names []string
	seen := map[string]bool{}
	for _, n := range order {
		if _, ok := registry[n]; ok {
			names = append(names, n)
			seen[n] = true
		}
	}
	var rest []string
	for n := range registry {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}
