package iopath

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/unsized"
)

// An Option changes how ReadFile, ReadFileBuf, Scan, Open or ReadFiles
// read. Options are checked when the call is made: a value out of range,
// or an option that does not apply to that call, makes the call return an
// error naming it, before anything is opened. Later options override
// earlier ones.
//
// What each call accepts:
//
//	option           ReadFile(Buf)  Scan  Open  ReadFiles
//	WithEngine       yes            yes   yes   yes (batch engines)
//	WithAuto         yes            yes   yes   yes
//	WithWorkers      yes            yes   yes   yes
//	WithBlockSize    yes            yes   -     yes (first read per file)
//	WithQueueDepth   yes            yes   yes   yes
//	WithDirect       yes            yes   yes   -
//	WithOrdered      -              yes   -     -
//	WithPseudoLimit  yes            yes   -     yes
//
// ReadFilesFS takes WithEngine (readfile or pool), WithAuto and
// WithWorkers only. The write calls take their own:
//
//	option           WriteFile  OpenLog
//	WithEngine       yes        yes
//	WithAuto         yes        yes
//	WithPerm         yes        yes (a new log file)
//	WithKeepOwner    yes        -
//	WithBatchBytes   -          yes
//	WithBatchWait    -          yes
type Option func(*options)

// options is what the Options of one call say. Zero values mean "not
// set": Auto (or the engine's default) decides.
type options struct {
	engine     string // "" = Auto
	workers    int
	blockSize  int
	queueDepth int
	direct     bool
	ordered    bool
	// pseudoLimit is WithPseudoLimit's n; 0: DefaultPseudoLimit.
	pseudoLimit int64
	// The write calls': the mode of a new file (WithPerm), whether
	// WriteFile gives the new file the old one's owner (WithKeepOwner),
	// and a Log's bounds on one group commit (WithBatchBytes,
	// WithBatchWait).
	perm       fs.FileMode
	keepOwner  bool
	batchBytes int
	batchWait  time.Duration

	permSet, batchBytesSet, batchWaitSet bool

	workersSet, blockSizeSet, queueDepthSet, pseudoLimitSet bool
}

// WithEngine makes the call use the named path instead of Auto's choice.
// The names valid for each call are:
//
//	ReadFile, ReadFileBuf  read, pread, mmap, io_uring
//	Scan                   read, pread, readv, mmap, io_uring
//	Open                   pread, io_uring, mmap
//	ReadFiles              readfile, pool, raw, io_uring (see package batch)
//
// An unknown name gives an error that lists the valid ones. An engine that
// cannot run here (io_uring disabled by the kernel, a container's seccomp
// profile or IOPATH_DISABLE_IO_URING=1; mmap WithDirect) gives an error
// wrapping ErrNotSupported that says why: an explicit choice never falls
// back silently. The engine runs with its own defaults (1 worker, 128 KiB
// blocks, queue depth 32; for ReadFiles the batch engine's) unless
// WithWorkers, WithBlockSize or WithQueueDepth say otherwise.
//
// WithEngine in the code takes precedence over the IOPATH_ENGINE
// environment variable, which only steers Auto.
func WithEngine(name string) Option {
	return func(o *options) { o.engine = name }
}

// WithAuto lets Auto choose the path (the default). It cancels an earlier
// WithEngine, so that a caller can append it to options it was given.
func WithAuto() Option {
	return func(o *options) { o.engine = "" }
}

// WithWorkers sets how many goroutines read at once (for io_uring: how
// many rings, each with its own thread); 0 means Auto's choice, or the
// engine's default after WithEngine. For ReadFiles it is the number of
// files read at once. The range is [0, 1024].
func WithWorkers(n int) Option {
	return func(o *options) { o.workers, o.workersSet = n, true }
}

// WithBlockSize sets the bytes per read request: Scan's block size (every
// block but the last has exactly n bytes), ReadFile's chunk size for a
// large file, ReadFiles' first read per file. 0 means Auto's choice, or
// the engine's default (128 KiB) after WithEngine. The range is
// [512, 64 MiB]; WithDirect needs a multiple of 4096.
func WithBlockSize(n int) Option {
	return func(o *options) { o.blockSize, o.blockSizeSet = n, true }
}

// WithQueueDepth sets how many io_uring requests each ring keeps in flight
// (for ReadFiles: files in flight per ring). Other paths ignore it. 0
// means Auto's choice, or 32 after WithEngine. The range is [0, 4096].
func WithQueueDepth(n int) Option {
	return func(o *options) { o.queueDepth, o.queueDepthSet = n, true }
}

// WithDirect opens the file with O_DIRECT: reads bypass the page cache,
// which suits data read once that should not evict what is cached. Block
// sizes must then be multiples of DirectAlign, and so must File requests'
// offsets, lengths and buffer addresses (see ErrUnaligned; an empty
// request needs no alignment). mmap cannot read with O_DIRECT, and some
// filesystems refuse O_DIRECT (EINVAL at open): both give an error
// wrapping ErrNotSupported. ReadFiles does not take it.
func WithDirect() Option {
	return func(o *options) { o.direct = true }
}

// WithOrdered makes Scan deliver the blocks in offset order, one call at a
// time. Scan still reads ahead in parallel, into a bounded window of
// buffers (see Scan). Only Scan takes it.
func WithOrdered() Option {
	return func(o *options) { o.ordered = true }
}

// WithPseudoLimit sets the most bytes read from a file whose size is not
// known in advance: a file of a pseudo-filesystem (procfs, sysfs,
// debugfs, tracefs, configfs, securityfs, cgroup), whose stated size
// means nothing, or a regular file that reports size 0. Such a file is
// read until a read returns 0 bytes, and some never end in practice
// (/proc/self/pagemap is as long as the address space): past n bytes the
// call fails with an *fs.PathError wrapping ErrLimit. 0 means
// DefaultPseudoLimit (64 MiB); n must not be negative. A regular file
// that states its size is not limited, even if it grows while it is
// read. Open does not take it (a File reads what its requests ask for).
// For ReadFiles it applies to each file.
func WithPseudoLimit(n int64) Option {
	return func(o *options) { o.pseudoLimit, o.pseudoLimitSet = n, true }
}

// WithPerm sets the permission bits of a file the call creates: the
// target of WriteFile when it did not exist (an existing target keeps
// its own mode), or a new log file of OpenLog. The default is 0o644 for
// WriteFile and 0o600 for OpenLog; the process's umask applies to
// neither, as the mode is set on the open file. Only the permission
// bits (0o777) may be set.
func WithPerm(mode fs.FileMode) Option {
	return func(o *options) { o.perm, o.permSet = mode, true }
}

// WithKeepOwner makes WriteFile give the new file the owner and group of
// the file it replaces (which needs the privilege to chown, as root
// has; without it WriteFile fails before replacing anything). Without
// it the new file belongs to the calling process, as with os.WriteFile.
func WithKeepOwner() Option {
	return func(o *options) { o.keepOwner = true }
}

// WithBatchBytes bounds how many bytes of records one group commit of a
// Log writes at once (one write and one fdatasync); Appends waiting
// beyond it go in the next commit. A record larger than n is committed
// alone. 0 means the default (1 MiB); the range is [0, 64 MiB].
func WithBatchBytes(n int) Option {
	return func(o *options) { o.batchBytes, o.batchBytesSet = n, true }
}

// WithBatchWait sets how long a Log's committer may wait for more
// Appends to join a commit once one is waiting. 0 (the default) never
// waits: a commit starts as soon as the previous one ended, and takes
// whatever arrived meanwhile, which already batches under load without
// adding latency to a lone writer. The range is [0, 1s].
func WithBatchWait(d time.Duration) Option {
	return func(o *options) { o.batchWait, o.batchWaitSet = d, true }
}

// limitErr is the error of a read of path, a file of unknown size, past
// the limit o sets.
func (o *options) limitErr(path string) error {
	return unsized.Error(path, unsized.Limit(o.pseudoLimit), "iopath.WithPseudoLimit")
}

// call names an entry point, for its options' checks and error messages.
type call uint8

const (
	callReadFile call = iota
	callScan
	callOpen
	callReadFiles
	callReadFilesFS
	callWriteFile
	callOpenLog
)

func (c call) String() string {
	return [...]string{"ReadFile", "Scan", "Open", "ReadFiles", "ReadFilesFS", "WriteFile", "OpenLog"}[c]
}

// Limits of the options.
const (
	minBlockSize  = engine.MinBlockSize
	maxBlockSize  = engine.MaxBlockSize
	maxWorkers    = engine.MaxWorkers
	maxQueueDepth = engine.MaxQueueDepth
)

// engines lists the names WithEngine accepts for c.
func (c call) engines() []string {
	switch c {
	case callReadFile:
		return []string{"read", "pread", "mmap", "io_uring"}
	case callScan:
		return []string{"read", "pread", "readv", "mmap", "io_uring"}
	case callOpen:
		return []string{"pread", "io_uring", "mmap"}
	case callReadFilesFS:
		return []string{"readfile", "pool"}
	case callWriteFile:
		return []string{"write", "io_uring"}
	case callOpenLog:
		return []string{"pwrite", "io_uring"}
	}
	var names []string
	for _, n := range batch.Names() {
		if n != "archive" { // reads a packed file, which ReadFiles has no way to name
			names = append(names, n)
		}
	}
	return names
}

// parseOptions applies opts and checks them for call c. It does not look
// at the kernel: whether an engine can run here is plan's business.
func parseOptions(c call, opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o, o.check(c)
}

// MaxBatchBytes and MaxBatchWait bound WithBatchBytes and WithBatchWait.
const (
	MaxBatchBytes = 64 << 20
	MaxBatchWait  = time.Second
)

func (o *options) check(c call) error {
	writes := c == callWriteFile || c == callOpenLog
	switch {
	case writes && (o.workersSet || o.blockSizeSet || o.queueDepthSet || o.direct || o.ordered || o.pseudoLimitSet):
		return fmt.Errorf("iopath: %s: only WithEngine, WithAuto%s apply", c, map[call]string{
			callWriteFile: ", WithPerm and WithKeepOwner",
			callOpenLog:   ", WithPerm, WithBatchBytes and WithBatchWait"}[c])
	case !writes && (o.permSet || o.keepOwner || o.batchBytesSet || o.batchWaitSet):
		return fmt.Errorf("iopath: %s: WithPerm, WithKeepOwner, WithBatchBytes and WithBatchWait apply only to WriteFile and OpenLog", c)
	case o.permSet && o.perm&^fs.ModePerm != 0:
		return fmt.Errorf("iopath: %s: WithPerm(%v): only the permission bits (0o777) may be set", c, o.perm)
	case c == callOpenLog && o.keepOwner:
		return fmt.Errorf("iopath: %s: WithKeepOwner applies only to WriteFile", c)
	case c == callWriteFile && (o.batchBytesSet || o.batchWaitSet):
		return fmt.Errorf("iopath: %s: WithBatchBytes and WithBatchWait apply only to OpenLog", c)
	case o.batchBytes < 0 || o.batchBytes > MaxBatchBytes:
		return fmt.Errorf("iopath: batch bytes %d out of range [0, %d MiB]", o.batchBytes, MaxBatchBytes>>20)
	case o.batchWait < 0 || o.batchWait > MaxBatchWait:
		return fmt.Errorf("iopath: batch wait %v out of range [0, %v]", o.batchWait, MaxBatchWait)
	}
	switch {
	case o.workers < 0 || o.workers > maxWorkers:
		return fmt.Errorf("iopath: workers %d out of range [0, %d]", o.workers, maxWorkers)
	case o.queueDepth < 0 || o.queueDepth > maxQueueDepth:
		return fmt.Errorf("iopath: queue depth %d out of range [0, %d]", o.queueDepth, maxQueueDepth)
	case o.blockSize != 0 && (o.blockSize < minBlockSize || o.blockSize > maxBlockSize):
		return fmt.Errorf("iopath: block size %d out of range [%d, %d MiB]", o.blockSize, minBlockSize, maxBlockSize>>20)
	case o.direct && o.blockSize%DirectAlign != 0:
		return fmt.Errorf("iopath: block size %d must be a multiple of %d with WithDirect", o.blockSize, DirectAlign)
	case o.ordered && c != callScan:
		return fmt.Errorf("iopath: %s: WithOrdered applies only to Scan", c)
	case o.blockSizeSet && c == callOpen:
		return fmt.Errorf("iopath: %s: WithBlockSize does not apply (each request says its own size)", c)
	case o.direct && c == callReadFiles:
		return fmt.Errorf("iopath: %s: WithDirect does not apply (the batch engines read through the page cache)", c)
	case o.pseudoLimit < 0:
		return fmt.Errorf("iopath: pseudo-file limit %d is negative", o.pseudoLimit)
	case o.pseudoLimitSet && c == callOpen:
		return fmt.Errorf("iopath: %s: WithPseudoLimit does not apply (a File reads what its requests ask for)", c)
	case c == callReadFilesFS && (o.direct || o.blockSizeSet || o.queueDepthSet || o.pseudoLimitSet):
		return fmt.Errorf("iopath: %s: only WithEngine, WithAuto and WithWorkers apply (fs.ReadFile reads each file)", c)
	case c == callReadFilesFS && (o.engine == "raw" || o.engine == "io_uring"):
		return fmt.Errorf("iopath: %s: %w", c, &engine.NotSupportedError{What: fmt.Sprintf("engine %q with an fs.FS", o.engine),
			Reason: "it opens and reads files by descriptor, and an fs.FS has none: use readfile or pool, or ReadFiles with paths"})
	}
	if o.engine != "" && !slices.Contains(c.engines(), o.engine) {
		return fmt.Errorf("iopath: %s: unknown engine %q (have %s)", c, o.engine, strings.Join(c.engines(), ", "))
	}
	if o.engine == "mmap" && o.direct {
		return &engine.NotSupportedError{What: "O_DIRECT with mmap", Reason: "a mapping always goes through the page cache"}
	}
	return nil
}
