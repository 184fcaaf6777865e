// Package batch reads many files — each whole, each delivered with its own
// bytes or its own error — through one of several engines: plain
// os.ReadFile in sequence (the baseline), a pool of goroutines, raw
// openat/read/close syscalls, io_uring chains of open, statx and read, or
// a packed archive of the same files.
//
// Every engine reads a file through the one descriptor it opened, so that
// a file renamed over while it is read comes back as one complete version
// of it. A file whose size is not known in advance — on a pseudo-filesystem
// such as /proc or /sys, or one that reports size 0 — is read until a read
// returns 0 bytes, up to Job.PseudoLimit. A panic in the Func goes on in
// the goroutine that called Read once the run has stopped (see Func).
//
// Reading 100,000 small files is dominated by per-file costs (path lookup,
// open, the syscalls around each read, and in Go the extra work os.Open
// does for its poller), not by bytes. The engines differ in how many of
// those costs they pay and how many files they keep in flight.
package batch

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/defaults"
	"github.com/iopath/iopath/internal/panics"
	"github.com/iopath/iopath/internal/unsized"
	"github.com/iopath/iopath/metrics"
)

// File is one file handed to a Func: its path as the walk produced it, its
// exact bytes, or its own error. The *File and its Data are valid only
// during the call: engines reuse both. Copy what you keep.
type File struct {
	Path string
	// Data is the file's whole content. It is valid only during the call:
	// the engine reuses its buffer afterwards. Copy what you keep.
	Data []byte
	// Err is this file's own error (a *fs.PathError naming Path): the file
	// vanished, is not readable, is a directory reached through a symlink,
	// is a symlink loop, changed size while read... Data is nil then.
	Err error
}

// Func is called once per file. With several workers it is called from
// several goroutines at once. Returning a non-nil error stops the batch:
// Run returns that error (files already in flight are finished, not
// delivered). An unreadable file does not stop the batch unless Func
// returns its Err. A panic in Func stops the batch too, and goes on in
// the goroutine that called Run (or Read) once every worker has ended,
// every request has been reaped and every descriptor closed, so that a
// deferred recover there catches it, with the value Func panicked with.
type Func func(f *File) error

// guard wraps fn for the engines that call it from their own goroutines:
// a panic in fn is caught where it ran, stops the run like an error, and
// is raised again by the returned Carrier's Raise, which Run calls on its
// caller's goroutine once everything has stopped.
func guard(fn Func) (Func, *panics.Carrier) {
	g := new(panics.Carrier)
	return func(f *File) (err error) {
		defer g.Catch(&err)
		return fn(f)
	}, g
}

// Job is what to read and how.
type Job struct {
	// Paths are files and directories; a directory is walked (files in
	// lexical order, subdirectories recursively). Symlinks to files are
	// followed; symlinks to directories found by the walk are not walked
	// (that could loop) and are delivered as errors; one given in Paths is
	// walked.
	Paths []string
	// Workers is the number of goroutines (raw, pool, io_uring: one ring
	// and locked thread each). 0 means the engine's default.
	Workers int
	// Depth is the io_uring engine's files in flight per worker; 0 means
	// DefaultDepth. Other engines ignore it.
	Depth int
	// BufferSize is the first read's buffer per file; a larger file gets
	// follow-up reads. 0 means DefaultBufferSize.
	BufferSize int
	// Latency records each file's latency (first syscall for it to its
	// bytes being available) in Stats.Lat.
	Latency bool
	// Archive is the packed archive (tar or tar.zst, see Pack) the archive
	// engine reads; Paths then selects nothing and may be empty.
	Archive string
	// PseudoLimit is the most bytes read of a file whose size is not known
	// in advance: a file of a pseudo-filesystem (procfs, sysfs...: see
	// Read) or one that reports size 0 (for raw: when its first read
	// filled the buffer; raw makes no fstat for a smaller one). Such a file is read until a read
	// returns 0 bytes; past the limit it is that file's error, wrapping
	// ErrLimit (/proc/self/pagemap would otherwise be read until memory
	// runs out). 0 means engine.DefaultPseudoLimit (64 MiB).
	PseudoLimit int64

	// walk makes the engines walk Paths as directories (Read's second
	// pass) instead of reading them as files.
	walk bool
}

// Defaults.
const (
	DefaultDepth      = defaults.ManyDepth
	DefaultBufferSize = 64 << 10
	MaxWorkers        = 1024
	MaxDepth          = 4096
)

// Stats is what one Run did.
type Stats struct {
	Files    int64 // files delivered to Func, with data or with an error
	Errors   int64 // of which with an error
	Bytes    int64 // bytes delivered
	Syscalls int64 // counted at the engine's own call sites (io_uring: io_uring_enter)
	Lat      *metrics.Histogram
	Notes    []string // what the engine changed and why (depth cut to the fd limit, ...)
}

// Engine is one way of reading many files.
// Callers use Read, which walks directories; Run is the engine's part.
type Engine interface {
	Name() string
	// Run reads every path the job's feed (newFeed) yields and calls fn
	// for each, with the file's bytes or its error (a directory is an
	// EISDIR error: Read walks it). It returns fn's error, ctx's error, or
	// an error that stopped the whole batch (an engine that cannot run
	// here wraps ErrNotSupported). job has been validated: Depth and
	// BufferSize are set.
	Run(ctx context.Context, job Job, fn Func) (*Stats, error)
}

// ErrNotSupported is wrapped by engines that cannot run here (io_uring
// unavailable, no archive given, ...). It is engine.ErrNotSupported, so
// that one errors.Is check matches both packages' errors.
var ErrNotSupported = engine.ErrNotSupported

// ErrLimit is wrapped (inside a file's *fs.PathError) when a file whose
// size is not known in advance (a pseudo-file, or a regular file that
// reports size 0) went on past Job.PseudoLimit. It is engine.ErrLimit.
var ErrLimit = engine.ErrLimit

// pseudoLimit is the job's PseudoLimit, with its default.
func (j *Job) pseudoLimit() int {
	return int(min(unsized.Limit(j.PseudoLimit), 1<<40))
}

// limitErr is the error of a file of unknown size that went on past limit
// bytes.
func limitErr(path string, limit int) error {
	return unsized.Error(path, int64(limit), "iopath.WithPseudoLimit (batch.Job.PseudoLimit)")
}

var (
	regMu    sync.RWMutex
	registry = map[string]Engine{}
	order    []string
)

// Register adds an engine; the name must be new.
func Register(e Engine) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[e.Name()]; dup {
		panic("batch: engine " + e.Name() + " registered twice")
	}
	registry[e.Name()] = e
	order = append(order, e.Name())
}

// Lookup returns the named engine.
func Lookup(name string) (Engine, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	if e, ok := registry[name]; ok {
		return e, nil
	}
	names := append([]string(nil), order...)
	sort.Strings(names)
	return nil, fmt.Errorf("unknown batch engine %q (have %s)", name, strings.Join(names, ", "))
}

// Names lists the engines in registration order.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return append([]string(nil), order...)
}
