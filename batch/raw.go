package batch

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
)

// The raw engine: openat, read into a buffer the worker reuses, close —
// with none of os.Open's work (no *os.File, no fcntl pair, no epoll_ctl,
// no fstat for the size, no read to see EOF). Job.Workers goroutines (1
// when 0), each with its own buffer of Job.BufferSize bytes.
//
// System calls per file, counted in Stats.Syscalls:
//
//	smaller than the buffer:       3  openat, read (short), close
//	buffer size or larger:         5  openat, read (full), fstat, read, close
//	a file that grows while read:  one more read per growth
//	a pseudo-file (size unknown):  openat, reads until one returns 0, close
//	a path that does not open:     1  openat
//	a directory:                   3  openat, read (EISDIR), close
//
// plus, for a run of at least minDirRun files in one directory on a local
// filesystem, three for the directory (open O_PATH, fstatfs, close), and
// one more open for each file of such a run that the fast open below
// refuses.
//
// # Opening relative to the directory
//
// Each of those calls costs the Go scheduler's bookkeeping besides the
// kernel's work (entersyscall/exitsyscall: about 0.15 µs a call on the
// AMD EPYC VM here, where a system call costs 1.2 µs), and an openat of a
// full path walks every component again. When the feed says a run of at
// least minDirRun files in one directory follows (item.run), the worker
// opens the directory (O_PATH) and, if it is on a local filesystem
// (sys.LocalFS: ext4, XFS, Btrfs, F2FS, tmpfs, overlayfs), opens each file
// by its name relative to it with openat2(RESOLVE_CACHED|RESOLVE_NO_XDEV)
// and closes it, both as raw system calls (sys.OpenCachedRaw,
// sys.CloseRaw). RESOLVE_CACHED fails rather than read the disk for the
// lookup and RESOLVE_NO_XDEV keeps the file on the directory's
// filesystem, so neither raw call can wait on a network or a daemon; the
// read stays a scheduler-visible call, since its data may not be cached.
// Any refusal (a cold lookup, a symlink to another mount, a missing file)
// opens by the full path as before, which also reports the error; a
// kernel or seccomp profile that refuses openat2 turns the fast path off
// for the process. On 100,000 cached 4 KiB files this took one worker
// from 0.89–0.92× to 0.96–0.98× a bare loop of raw openat/read/close
// (BenchmarkSyscallFloor, docs/batch.md).
//
// # When is a file complete?
//
// The first read asks for the whole buffer. If it returns fewer bytes, the
// file ends there: no second read, no fstat. That is exact because on
// Linux a read(2) of a regular file returns fewer bytes than asked only at
// end of file. The page-cache read path (filemap_read, used by ext4, xfs,
// btrfs, tmpfs, overlayfs, NFS and FUSE without direct_io) copies until
// the request or the file is exhausted, and waits for I/O only in killable
// sleeps: an ordinary signal (the Go runtime's SIGURG preemption included)
// never cuts it short, and a fatal one kills the process anyway. EINTR with
// nothing read is retried (sys.Read). Known exceptions, where a short read
// is not the end:
//
//   - pseudo-files (procfs, sysfs, debugfs...: see sys.PseudoFS) are
//     S_IFREG but generated, and a seq_file hands out about a page per
//     read. The feed marks the files of such filesystems, known by the
//     filesystem of their directory (one fstatfs per directory walked,
//     one statfs per directory of the paths named, where a run of paths
//     in one directory costs one), and those are read until a read
//     returns 0: past Job.PseudoLimit bytes they are an error wrapping
//     ErrLimit. So is a file whose fstat, after a full first read, says
//     size 0. A symlink named directly to a pseudo-file elsewhere is
//     judged by its own directory, and comes back truncated.
//   - an I/O error after part of a read was copied returns the part; the
//     error would only show on the next read, which is not made. The file
//     is delivered short instead of with EIO.
//   - a file truncated or appended to while it is read is delivered as
//     whatever one pass saw, as with any reader that does not lock.
//
// Only when the first read fills the buffer may more follow: fstat then
// gives the size, the rest is read into a buffer of size+1 bytes, and the
// same rule ends it (the extra byte makes a file that is still size bytes
// long come back short). A file that grew in between fills that buffer
// too, and reading goes on into a doubled one.
//
// # Non-regular files
//
// Files are opened with O_NONBLOCK, which read(2) ignores for regular
// files (only RWF_NOWAIT and io_uring make a page-cache miss return
// EAGAIN), so that opening a FIFO cannot block: a FIFO with no writer
// reads as empty, one with a writer but no data fails with EAGAIN. If a
// regular file ever answers EAGAIN (a filesystem that honours O_NONBLOCK),
// fstat says so, O_NONBLOCK is cleared and the read is made again. A
// non-regular file that fills the buffer (a character device such as
// /dev/zero never ends) is an ErrNotRegular error. The walk does not hand
// over non-regular files at all.
func init() { Register(rawEngine{}) }

type rawEngine struct{}

func (rawEngine) Name() string { return "raw" }

func (rawEngine) Run(ctx context.Context, job Job, fn Func) (*Stats, error) {
	workers := job.Workers
	if workers == 0 {
		workers = 1
	}
	size, limit := job.BufferSize, job.pseudoLimit()
	// A worker holds up to two descriptors: a file and its directory.
	var note string
	if budget, _ := nofileBudget("raw", 2*workers); budget < 2*workers {
		note = fmt.Sprintf("raw: %d workers cut to %d: each may hold a file and its directory open, and RLIMIT_NOFILE leaves %d descriptors", workers, max(1, budget/2), budget)
		workers = max(1, budget/2)
	}
	st, err := runReaders(ctx, "raw", &job, workers, func() pathReader {
		b := bufpool.Get(size)
		return &rawReader{bufB: b, buf: b.Bytes()[:size], limit: limit, dirfd: -1}
	}, fn)
	if note != "" && st != nil {
		st.Notes = append(st.Notes, note)
	}
	return st, err
}

// minDirRun is the fewest files in a row in one directory for which a
// worker opens the directory (open, fstatfs, close: three calls) to open
// them relative to it without the scheduler's bookkeeping. Each such file
// saves about a third of a system call's cost (the bookkeeping around two
// calls and the walk of the leading path), so the three calls pay for
// themselves after about 8 files on a VM whose system calls cost 1.2 µs
// (the AMD EPYC here) and after about 3 on bare metal.
const minDirRun = 16

// rawKeepBig is the largest follow-up buffer a worker keeps for the next
// large file; larger ones are left to the garbage collector.
const rawKeepBig = 8 << 20

// rawReader is one worker's reader.
type rawReader struct {
	buf  []byte       // the first read's buffer, Job.BufferSize bytes
	bufB *bufpool.Buf // buf's owner
	big  []byte       // the last follow-up buffer, reused when large enough
	bigB *bufpool.Buf // big's owner
	pz   []byte       // the path being opened, NUL-terminated for openat
	// dropBig: big is larger than rawKeepBig and goes back to the pool
	// once fn is done with the file in it.
	dropBig bool
	limit   int   // Job.PseudoLimit
	n       int64 // system calls made
	// dirfd is an O_PATH descriptor of dir, the directory of the files
	// being read, when it is on a LocalFS filesystem and a run of at
	// least minDirRun files is in it; else -1. Its files are opened
	// relative to it with sys.OpenCachedRaw and closed with CloseRaw.
	dirfd int
	dir   string
}

func (r *rawReader) syscalls() int64 { return r.n }

func (r *rawReader) release() {
	r.leaveDir()
	r.bufB.Release()
	r.bigB.Release()
	r.bufB, r.bigB, r.buf, r.big = nil, nil, nil, nil
}

// enterDir implements dirReader.
func (r *rawReader) enterDir(dir string, run int) {
	if r.dirfd >= 0 && dir == r.dir {
		return
	}
	r.leaveDir()
	if run < minDirRun || !sys.CachedOpen() {
		return
	}
	var err error
	if r.pz, err = sys.AppendPathZ(r.pz[:0], dir); err != nil {
		return
	}
	r.n++
	fd, err := sys.OpenZ(sys.AT_FDCWD, r.pz, sys.O_PATH|sys.O_DIRECTORY)
	if err != nil {
		return // the files' own opens will say what is wrong
	}
	r.n++
	if typ, err := sys.FstatfsType(fd); err != nil || !sys.LocalFS(typ) {
		r.n++
		sys.Close(fd)
		return
	}
	r.dirfd, r.dir = fd, dir
}

// leaveDir closes the directory descriptor, if any.
func (r *rawReader) leaveDir() {
	if r.dirfd >= 0 {
		r.n++
		sys.Close(r.dirfd)
		r.dirfd, r.dir = -1, ""
	}
}

// openFast opens path relative to the directory descriptor with a raw
// openat2 when path is in it and the lookup is cached (see
// sys.OpenCachedRaw); ok false means it did not, and nothing is open.
func (r *rawReader) openFast(path string) (fd int, ok bool) {
	if r.dirfd < 0 || dirOf(path) != r.dir {
		return -1, false
	}
	if !sys.CachedOpen() { // refused since the directory was opened
		r.leaveDir()
		return -1, false
	}
	var err error
	if r.pz, err = sys.AppendPathZ(r.pz[:0], path[strings.LastIndexByte(path, '/')+1:]); err != nil {
		return -1, false
	}
	r.n++
	return sys.OpenCachedRaw(r.dirfd, r.pz, sys.O_RDONLY|sys.O_NONBLOCK)
}

func (r *rawReader) read(path string, unsized bool) ([]byte, error) {
	if r.dropBig {
		// The last file's follow-up buffer was too large to keep.
		r.bigB.Release()
		r.bigB, r.big, r.dropBig = nil, nil, false
	}
	fd, fast := r.openFast(path)
	if !fast {
		r.n++
		var err error
		if r.pz, err = sys.AppendPathZ(r.pz[:0], path); err == nil {
			fd, err = sys.OpenZ(sys.AT_FDCWD, r.pz, sys.O_RDONLY|sys.O_NONBLOCK) // openat(AT_FDCWD, path, O_RDONLY|O_NONBLOCK|O_CLOEXEC)
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
	}
	data, err := r.readFD(fd, unsized)
	r.n++
	// A read-only fd has nothing to flush: close cannot lose data.
	if fast {
		sys.CloseRaw(fd)
	} else {
		sys.Close(fd)
	}
	if err == ErrLimit {
		return nil, limitErr(path, r.limit)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return data, nil
}

// readFD reads fd to its end (see the engine's comment for what "end" is;
// unsized: a file whose size is not known, read until a read returns 0,
// and ErrLimit past r.limit bytes). Errors are bare errnos, ErrNotRegular
// or ErrLimit.
func (r *rawReader) readFD(fd int, unsized bool) ([]byte, error) {
	buf := r.buf
	n, err := r.readRetry(fd, buf)
	switch {
	case err != nil:
		return nil, err
	case n == 0 || n < len(buf) && !unsized:
		return buf[:n], nil
	case unsized && n > r.limit:
		return nil, ErrLimit
	}
	need := 2 * len(buf)
	if !unsized {
		// The buffer is full: there may be more.
		var st sys.Stat_t
		r.n++
		if err := sys.Fstat(fd, &st); err != nil {
			return nil, err
		}
		if st.Mode&sys.S_IFMT != sys.S_IFREG {
			return nil, ErrNotRegular
		}
		switch {
		case st.Size >= 1<<40:
			return nil, syscall.EFBIG // not a file to hold in memory
		case st.Size == 0:
			unsized = true // it says nothing about its length
		default:
			need = max(int(st.Size)+1, need)
		}
	}
	if cap(r.big) < need {
		r.setBig(bufpool.Get(need), 0)
	}
	big := r.big
	total := copy(big, buf[:n])
	for {
		if total == len(big) {
			r.setBig(bufpool.Get(2*len(big)), total)
			big = r.big
		}
		// Reads are not cut at the limit: some pseudo-files take only
		// reads of a multiple of their record (pagemap: 8 bytes). The
		// buffer stays below twice the limit.
		m, err := r.readRetry(fd, big[total:])
		if err != nil {
			return nil, err
		}
		total += m
		if unsized && total > r.limit {
			return nil, ErrLimit
		}
		if m == 0 || !unsized && total < len(big) {
			break
		}
	}
	data := big[:total]
	if cap(big) > rawKeepBig {
		// Handed to fn, then given back at the next file's read.
		r.dropBig = true
	}
	return data, nil
}

// setBig makes b the follow-up buffer, keeping its first keep bytes from
// the previous one, which goes back to the pool.
func (r *rawReader) setBig(b *bufpool.Buf, keep int) {
	nb := b.Bytes()[:b.Cap()]
	copy(nb, r.big[:keep])
	r.bigB.Release()
	r.bigB, r.big = b, nb
}

// readRetry is one read, made again blocking if a regular file answered
// EAGAIN because of O_NONBLOCK (fileio.ReadNonblock).
func (r *rawReader) readRetry(fd int, b []byte) (int, error) {
	return fileio.ReadNonblock(fd, b, &r.n)
}
