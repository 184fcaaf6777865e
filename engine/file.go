package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/unsized"
)

// ErrNotRegular is returned (inside an *fs.PathError) for directories,
// devices, FIFOs and sockets: engines read regular files only. It is the
// one such value of every package (iopath.ErrNotRegular,
// batch.ErrNotRegular, ...: see internal/sys).
var ErrNotRegular = sys.ErrNotRegular

// ErrChanged is returned (inside an *fs.PathError) when a file shrinks or
// changes under a reader: a short read before the size seen at open, or a
// SIGBUS on a mapping.
var ErrChanged = errors.New("file changed size while being read")

// file is an open file being read by an engine.
type file struct {
	fd   int
	path string
	size int64
	dev  uint64 // device and inode from the fstat at open: which file fd is
	ino  uint64
	// unsized: the size is not known in advance (see ErrLimit): the file
	// is on a pseudo-filesystem (pseudo), or it reported size 0. Never
	// set with O_DIRECT, which pseudo-filesystems refuse at open and
	// with which a file of size 0 is read as empty.
	unsized bool
	pseudo  bool
}

// openFile opens job.Path read-only (O_DIRECT when asked), and checks that
// it is a regular file. Every error is an *fs.PathError naming the path.
//
// The file is opened with O_NONBLOCK, so that opening a FIFO with no writer
// fails fast instead of hanging; the flag is cleared again on regular files
// (io_uring would otherwise return EAGAIN rather than wait for the disk).
func openFile(job *Job) (*file, error) {
	fd, err := openFd(job)
	if err != nil {
		return nil, err
	}
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		sys.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: job.Path, Err: err}
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
		if err := sys.ClearNonblock(fd); err != nil {
			sys.Close(fd)
			return nil, &fs.PathError{Op: "fcntl", Path: job.Path, Err: err}
		}
	case sys.S_IFDIR:
		sys.Close(fd)
		return nil, &fs.PathError{Op: "read", Path: job.Path, Err: sys.EISDIR}
	default:
		sys.Close(fd)
		return nil, &fs.PathError{Op: "read", Path: job.Path, Err: ErrNotRegular}
	}
	f := &file{fd: fd, path: job.Path, size: st.Size, dev: st.Dev, ino: st.Ino}
	if !job.Direct {
		f.pseudo = unsized.PseudoStat(fd, st.Dev)
		f.unsized = f.pseudo || st.Size == 0
	}
	return f, nil
}

// needSize is where an engine that reads only files of known size (it
// maps them, or queues reads of their blocks) starts: nil when f's size
// is known, else an error wrapping ErrNotSupported that says so, for
// which the caller may read the file with another engine. A regular file
// that reports size 0 is empty unless a read of one byte finds data; a
// file of a pseudo-filesystem never has a size. what is the engine's
// name, to what it would do with a size ("to map").
func (f *file) needSize(what, to string) error {
	if !f.unsized {
		return nil
	}
	reason := "a pseudo-file has no size " + to
	if !f.pseudo {
		var b [1]byte
		n, err := sys.Pread(f.fd, b[:], 0)
		if err != nil {
			return f.readErr(0, err)
		}
		if n == 0 {
			f.unsized = false // empty: zero blocks
			return nil
		}
		reason = "the file reports size 0 but has data, so there is no size " + to
	}
	return &fs.PathError{Op: "read", Path: f.path, Err: &NotSupportedError{What: what, Reason: reason}}
}

// openFd opens job.Path read-only and non-blocking (O_DIRECT when asked).
func openFd(job *Job) (int, error) {
	flags := sys.O_RDONLY | sys.O_NONBLOCK
	if job.Direct {
		flags |= sys.O_DIRECT
	}
	fd, err := sys.Open(job.Path, flags)
	if sys.Unopenable(job.Path, err) {
		// A socket cannot be opened at all: say what it is, as for a FIFO.
		return -1, &fs.PathError{Op: "read", Path: job.Path, Err: ErrNotRegular}
	}
	if err != nil {
		var pe *fs.PathError
		if job.Direct && errors.As(err, &pe) && pe.Err == sys.EINVAL {
			return -1, &fs.PathError{Op: "open", Path: job.Path,
				Err: &NotSupportedError{What: "O_DIRECT", Reason: "the filesystem refuses it (use a file on a disk)"}}
		}
		return -1, err
	}
	return fd, nil
}

// procSelfFD is where reopen finds f's descriptor as a path; tests point it
// elsewhere to take the fallback. testHookReopen, when set (by tests), runs
// at the start of each reopen.
var (
	procSelfFD     = "/proc/self/fd/"
	testHookReopen func(path string)
)

// reopen opens another descriptor of the file f.fd is open on, with its own
// file offset, for engines whose workers read(2) from a file position. It
// returns the descriptor and the number of syscalls it made.
//
// Opening f.path again would not do: the path may have been renamed over
// since f was opened (an editor's save, a deploy), and a worker reading
// another file than the others would hand out one version's head with
// another's tail. /proc/self/fd/N names the inode fd is open on, whatever
// became of the path, so it is opened instead (1 syscall: the inode is a
// regular file, so neither O_NONBLOCK nor a check is needed). Only without
// /proc (not mounted in a container or chroot) is the path opened, and its
// fstat then must give f's device and inode; another file is an error
// wrapping ErrChanged — there is no way to reach the first file then.
func (f *file) reopen(job *Job, flags int) (int, int64, error) {
	if testHookReopen != nil {
		testHookReopen(f.path)
	}
	fd, err := sys.Open(procSelfFD+strconv.Itoa(f.fd), flags)
	if err == nil {
		return fd, 1, nil
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Err != sys.ENOENT {
		return -1, 1, &fs.PathError{Op: "open", Path: f.path, Err: fmt.Errorf("reopen through %s: %w", pe.Path, pe.Err)}
	}
	// No /proc: the path, checked.
	calls := int64(2)
	fd, err = sys.Open(f.path, flags|sys.O_NONBLOCK)
	if err != nil {
		return -1, calls, err
	}
	var st sys.Stat_t
	calls++
	if err := sys.Fstat(fd, &st); err != nil {
		sys.Close(fd)
		return -1, calls, &fs.PathError{Op: "stat", Path: f.path, Err: err}
	}
	if st.Dev != f.dev || st.Ino != f.ino {
		sys.Close(fd)
		return -1, calls, &fs.PathError{Op: "open", Path: f.path,
			Err: fmt.Errorf("%w: the path was replaced by another file while it was in use (without /proc, a second descriptor can only be opened by path)", ErrChanged)}
	}
	calls += 2
	if err := sys.ClearNonblock(fd); err != nil {
		sys.Close(fd)
		return -1, calls, &fs.PathError{Op: "fcntl", Path: f.path, Err: err}
	}
	return fd, calls, nil
}

// readFlags are the flags a reader's reopen uses.
func readFlags(job *Job) int {
	if job.Direct {
		return sys.O_RDONLY | sys.O_DIRECT
	}
	return sys.O_RDONLY
}

func (f *file) close() error {
	if f.fd < 0 {
		return nil
	}
	err := sys.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

// readErr wraps a read error with the path.
func (f *file) readErr(off int64, err error) error {
	return &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("at offset %d: %w", off, err)}
}

// checkSize returns ErrChanged (in an *fs.PathError) when the file's size is
// no longer the one seen at open. Every engine checks at the end of a run:
// a mapping reads a file that shrank inside a page as zeros, without a
// fault, and a read that raced a truncation may have returned full blocks
// that are no longer the file's.
func (f *file) checkSize() error {
	var st sys.Stat_t
	if err := sys.Fstat(f.fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: f.path, Err: err}
	}
	if st.Size != f.size {
		return &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("%w: %d bytes at open, %d now", ErrChanged, f.size, st.Size)}
	}
	return nil
}

// shrunk is the error for a read that ended before the size seen at open.
func (f *file) shrunk(off int64) error {
	return &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("%w: end of file at offset %d, expected %d bytes", ErrChanged, off, f.size)}
}

// ErrLimit is wrapped (inside an *fs.PathError) by the error of a read of
// a file whose size is not known in advance — a pseudo-file of procfs,
// sysfs and the like, or a regular file that reports size 0 — that went
// on past the limit for such files (Job.PseudoLimit, DefaultPseudoLimit
// unless the caller raised it): /proc/self/pagemap would otherwise be
// read until memory runs out. It is the same value as iopath.ErrLimit,
// batch.ErrLimit and bufpool.ErrLimit.
var ErrLimit = unsized.ErrLimit

// DefaultPseudoLimit is the most bytes read from a file whose size is not
// known in advance (see ErrLimit) unless the caller sets another limit.
// Real pseudo-files are a few KiB (/proc/self/status) to a few MiB
// (/proc/self/smaps of a large process).
const DefaultPseudoLimit = unsized.DefaultLimit
