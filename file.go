package iopath

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
)

// File is an open regular file for positioned reads: ReadAt, one request
// at a time, and ReadBatch, many at once through io_uring, coalesced and
// parallel preads, or copies from a mapping of the file. Open it with
// Open.
//
// A File is safe for concurrent use by any number of goroutines. Close
// waits for the reads in progress to end before it releases the
// descriptor, so a read never lands on a descriptor number the process
// has reused for another file; reads that start after Close fail with an
// *fs.PathError wrapping fs.ErrClosed.
type File struct {
	name   string
	fd     int
	size   int64
	direct bool
	choice auto.Choice

	// refs counts the reads in progress; closedBit is set by Close.
	refs    atomic.Int64
	drained chan struct{} // closed by the last read to end after Close

	rings *fileio.RingPool // nil: the pread backend (or mmap)
	// m is the mmap backend's mapping of the file's first size bytes:
	// nil for the other backends, and for an empty file.
	m []byte
	// changed is the error of a request whose copy from m faulted, made
	// once at Open so that a batch allocates nothing for it.
	changed error
	cleanup runtime.Cleanup

	// inline is the RWF_NOWAIT state of the file: ReadBatch's inline pass
	// and ReadAt's fast path (inline.Off once the kernel refused it).
	inline fileio.Inline
}

// Request is one read of a File.ReadBatch: Buf is filled from the file at
// Off. ReadBatch sets N and Err.
type Request struct {
	Off int64  // where to read in the file
	Buf []byte // where to put it; len(Buf) is the number of bytes wanted
	N   int    // out: bytes read into Buf[:N]
	// Err is out: this request's error. nil when N == len(Buf); io.EOF
	// when the file ended first (N < len(Buf)); otherwise an
	// *fs.PathError naming the file (ErrNegativeOffset, ErrUnaligned, an
	// I/O error).
	Err error
}

const closedBit = 1 << 62

// testHookReading, if set, runs inside ReadAt while the read holds the
// File open, so that tests can close it then.
var testHookReading func()

// Open opens path for positioned reads. The path must name a regular
// file: a directory gives an *fs.PathError wrapping syscall.EISDIR, a
// FIFO, socket or device one wrapping ErrNotRegular (the open never waits
// for a FIFO's writer). Other errors wrap an *fs.PathError from open or
// fstat.
//
// Open decides the backend once, with Auto (kind Positioned: whether the
// file is in the page cache, O_DIRECT, what the kernel supports) unless
// WithEngine says "pread", "io_uring" or "mmap". With io_uring, Open
// creates the first ring, so an explicit WithEngine("io_uring") that
// cannot run here fails now with an error wrapping ErrNotSupported and
// the reason (io_uring_setup, io_uring_register or io_uring_enter refused
// by a seccomp profile or the kernel.io_uring_disabled sysctl); under
// Auto the File falls back to pread then. A ring that cannot be made for
// want of a resource fails Open either way with that error:
// errors.Is(err, syscall.EMFILE) (or ENFILE, ENOMEM) holds, and it does
// not wrap ErrNotSupported. With mmap, Open maps the file's size
// at Open read-only and shared (an empty file is not mapped); a mapping
// that fails is an *fs.PathError with Op "mmap" for WithEngine("mmap"),
// and pread under Auto. mmap cannot be had WithDirect (an error wrapping
// ErrNotSupported). WithWorkers bounds the goroutines (pread) or rings
// (io_uring) that serve ReadBatch calls; WithQueueDepth is each ring's
// requests in flight. WithDirect opens with O_DIRECT: see DirectAlign.
func Open(path string, opts ...Option) (*File, error) {
	f, err := open(path, opts)
	if err != nil {
		return nil, public(err)
	}
	return f, nil
}

func open(path string, opts []Option) (*File, error) {
	o, err := parseOptions(callOpen, opts)
	if err != nil {
		return nil, err
	}
	fd, st, err := openRegular(path, o.direct, "open")
	if err != nil {
		return nil, err
	}
	// Regular files keep no O_NONBLOCK: io_uring honours it (EAGAIN on a
	// page-cache miss instead of waiting for the disk).
	if err := sys.ClearNonblock(fd); err != nil {
		sys.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	c, err := plan(callOpen, &o, auto.Workload{Kind: auto.Positioned, Path: path, Size: st.Size, Direct: o.direct, Resident: -1})
	if err != nil {
		sys.Close(fd)
		return nil, err
	}
	f := &File{name: path, fd: fd, size: st.Size, direct: o.direct, choice: c, drained: make(chan struct{})}
	if c.Engine == "io_uring" {
		depth := c.QueueDepth
		rp, err := fileio.NewRingPool(c.Workers, func() (*fileio.Ring, error) { return newRing(depth) })
		if err != nil {
			// Auto falls back only from a refusal; a resource error
			// (EMFILE, ENOMEM) is the caller's to hear.
			if o.engine != "" || !errors.Is(err, ErrNotSupported) {
				sys.Close(fd)
				return nil, fmt.Errorf("iopath: Open %s: %w", path, err)
			}
			f.choice.Engine = "pread"
			f.choice.Reason = fmt.Sprintf("io_uring chosen by rule %s could not start (%v): pread instead", c.Rule, err)
		} else {
			f.rings = rp
		}
	}
	if c.Engine == "mmap" && st.Size > 0 {
		m, err := sys.Mmap(fd, 0, int(st.Size), sys.PROT_READ, sys.MAP_SHARED)
		if err != nil {
			if o.engine != "" {
				sys.Close(fd)
				return nil, &fs.PathError{Op: "mmap", Path: path, Err: err}
			}
			f.choice.Engine = "pread"
			f.choice.Reason = fmt.Sprintf("mmap chosen by rule %s failed (%v): pread instead", c.Rule, err)
		} else {
			// Random requests: fault in the pages asked for, without the
			// readahead around them that a sequential reader would use.
			sys.Madvise(m, sys.MADV_RANDOM)
			f.m = m
			f.changed = &fs.PathError{Op: "read", Path: path, Err: ErrChanged}
		}
	}
	// A File dropped without Close gives its descriptor, rings and
	// mapping back when it is collected, as an os.File does.
	f.cleanup = runtime.AddCleanup(f, func(r fileRes) {
		if r.rings != nil {
			r.rings.Close()
		}
		if r.m != nil {
			sys.Munmap(r.m)
		}
		sys.Close(r.fd)
	}, fileRes{fd: fd, rings: f.rings, m: f.m})
	return f, nil
}

// fileRes is what a File's cleanup releases.
type fileRes struct {
	fd    int
	rings *fileio.RingPool
	m     []byte
}

// Name returns the path as given to Open.
func (f *File) Name() string { return f.name }

// Choice returns how f reads: the engine Auto chose at Open (or
// WithEngine named), its workers and queue depth, the rule and the
// reason, including a fallback Open took (io_uring refused, mmap failed:
// pread instead). It is what Plan(path, ForOpen) foresaw, or what came of
// it.
func (f *File) Choice() Choice { return publicChoice(f.choice) }

// Size returns the file's size when it was opened, as its fstat said
// then. The file may have changed since (Stat says what it is now);
// reads are not limited to this size.
func (f *File) Size() int64 { return f.size }

// Stat returns the file's fs.FileInfo now, from an fstat of the
// descriptor the File holds: the file it has open even if its path has
// since been renamed over or removed (never a stat by name). Name is the
// base of the path given to Open; Sys returns the *unix.Stat_t. After
// Close it fails with an error wrapping fs.ErrClosed.
func (f *File) Stat() (fs.FileInfo, error) {
	if err := f.acquire("stat"); err != nil {
		return nil, public(err)
	}
	defer f.release()
	st := new(sys.Stat_t)
	if err := sys.Fstat(f.fd, st); err != nil {
		return nil, public(&fs.PathError{Op: "stat", Path: f.name, Err: err})
	}
	return &fileStat{name: filepath.Base(f.name), st: st}, nil
}

// fileStat is File.Stat's fs.FileInfo. The descriptor is a regular
// file's, so the mode has no type bits; the permission, setuid, setgid
// and sticky bits convert as package os converts them.
type fileStat struct {
	name string
	st   *sys.Stat_t
}

func (s *fileStat) Name() string       { return s.name }
func (s *fileStat) Size() int64        { return s.st.Size }
func (s *fileStat) IsDir() bool        { return false }
func (s *fileStat) Sys() any           { return s.st }
func (s *fileStat) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }

func (s *fileStat) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	if s.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// acquire registers a read in progress, or reports a closed File.
func (f *File) acquire(op string) error {
	for {
		v := f.refs.Load()
		if v&closedBit != 0 {
			return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
		}
		if f.refs.CompareAndSwap(v, v+1) {
			return nil
		}
	}
}

func (f *File) release() {
	if f.refs.Add(-1) == closedBit {
		close(f.drained)
	}
}

// Close waits for the reads in progress, then releases the rings, the
// mapping and the descriptor. Closing a File twice returns an *fs.PathError wrapping
// fs.ErrClosed, as os.File does; the first Close's work is not undone.
func (f *File) Close() error { return public(f.close()) }

func (f *File) close() error {
	old := f.refs.Or(closedBit)
	if old&closedBit != 0 {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	if old != 0 {
		<-f.drained
	}
	f.cleanup.Stop()
	if f.rings != nil {
		f.rings.Close()
	}
	if f.m != nil {
		// No read is in progress and none can start: nothing touches the
		// mapping any more.
		if err := sys.Munmap(f.m); err != nil {
			sys.Close(f.fd)
			return &fs.PathError{Op: "munmap", Path: f.name, Err: err}
		}
	}
	if err := sys.Close(f.fd); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}
