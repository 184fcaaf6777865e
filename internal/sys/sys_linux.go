package sys

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Re-exported constants, so that callers need not import x/sys/unix.
const (
	O_RDONLY     = unix.O_RDONLY
	O_WRONLY     = unix.O_WRONLY
	O_CREAT      = unix.O_CREAT
	O_EXCL       = unix.O_EXCL
	O_DIRECT     = unix.O_DIRECT
	O_CLOEXEC    = unix.O_CLOEXEC
	O_NOATIME    = unix.O_NOATIME
	O_NONBLOCK   = unix.O_NONBLOCK
	O_NOFOLLOW   = unix.O_NOFOLLOW
	AT_FDCWD     = unix.AT_FDCWD
	PROT_READ    = unix.PROT_READ
	PROT_WRITE   = unix.PROT_WRITE
	MAP_SHARED   = unix.MAP_SHARED
	MAP_PRIVATE  = unix.MAP_PRIVATE
	MAP_ANON     = unix.MAP_ANON
	MAP_POPULATE = unix.MAP_POPULATE

	MADV_SEQUENTIAL = unix.MADV_SEQUENTIAL
	MADV_WILLNEED   = unix.MADV_WILLNEED
	MADV_RANDOM     = unix.MADV_RANDOM
	MADV_NORMAL     = unix.MADV_NORMAL
	// MADV_POPULATE_READ (Linux 5.14) maps every page of a range that is
	// in the page cache, reading the rest in, in one call.
	MADV_POPULATE_READ = unix.MADV_POPULATE_READ

	FADV_DONTNEED   = unix.FADV_DONTNEED
	FADV_SEQUENTIAL = unix.FADV_SEQUENTIAL
	FADV_RANDOM     = unix.FADV_RANDOM
	FADV_WILLNEED   = unix.FADV_WILLNEED

	RUSAGE_SELF   = unix.RUSAGE_SELF
	RUSAGE_THREAD = unix.RUSAGE_THREAD

	S_IFMT   = unix.S_IFMT
	S_IFREG  = unix.S_IFREG
	S_IFDIR  = unix.S_IFDIR
	S_IFLNK  = unix.S_IFLNK
	S_IFIFO  = unix.S_IFIFO
	S_IFSOCK = unix.S_IFSOCK
	S_IFCHR  = unix.S_IFCHR
	S_IFBLK  = unix.S_IFBLK
)

// Errnos used by callers to tell failures apart.
const (
	EINTR      = unix.EINTR
	EINVAL     = unix.EINVAL
	EAGAIN     = unix.EAGAIN
	EBUSY      = unix.EBUSY
	ENOSYS     = unix.ENOSYS
	EPERM      = unix.EPERM
	EACCES     = unix.EACCES
	ENOMEM     = unix.ENOMEM
	EFAULT     = unix.EFAULT
	EBADF      = unix.EBADF
	ENOENT     = unix.ENOENT
	ENOTDIR    = unix.ENOTDIR
	ENOSPC     = unix.ENOSPC
	ETIME      = unix.ETIME
	ECANCELED  = unix.ECANCELED
	EOPNOTSUPP = unix.EOPNOTSUPP
	EISDIR     = unix.EISDIR
	ENOBUFS    = unix.ENOBUFS
	EEXIST     = unix.EEXIST
	EIO        = unix.EIO
)

// Types re-exported from x/sys/unix.
type (
	Iovec   = unix.Iovec
	Stat_t  = unix.Stat_t
	Rusage  = unix.Rusage
	Utsname = unix.Utsname
	Rlimit  = unix.Rlimit
	Timeval = unix.Timeval
)

var pageSize = os.Getpagesize()

// PageSize is the system's memory page size in bytes.
func PageSize() int { return pageSize }

func pathErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// Open opens path with flags (O_CLOEXEC is always added), retrying EINTR.
// The error is an *fs.PathError.
func Open(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, pathErr("open", path, err)
		}
		return fd, nil
	}
}

// Create is open(2) of path with flags (O_CLOEXEC is always added) and
// mode for a file it creates, retrying EINTR. Unlike Open, the error is
// the bare errno, for callers that tell EEXIST apart and name the path
// themselves.
func Create(path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, mode)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		return fd, nil
	}
}

// Mkdir is mkdir(2); the error is the bare errno.
func Mkdir(path string, mode uint32) error {
	return noEINTR(func() error { return unix.Mkdir(path, mode) })
}

// Unlink is unlink(2); the error is the bare errno.
func Unlink(path string) error { return noEINTR(func() error { return unix.Unlink(path) }) }

// Lstat is lstat(2); the error is the bare errno.
func Lstat(path string, st *Stat_t) error {
	return noEINTR(func() error { return unix.Lstat(path, st) })
}

// noEINTR makes call again while it fails with EINTR.
func noEINTR(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}

// Close closes fd. EINTR from close is not retried (Linux has released the
// descriptor already).
func Close(fd int) error {
	err := unix.Close(fd)
	if err == unix.EINTR {
		return nil
	}
	return err
}

// Fstat returns fd's stat.
func Fstat(fd int, st *Stat_t) error {
	for {
		err := unix.Fstat(fd, st)
		if err != unix.EINTR {
			return err
		}
	}
}

// Stat returns path's stat, following symlinks.
func Stat(path string, st *Stat_t) error {
	for {
		err := unix.Stat(path, st)
		if err == unix.EINTR {
			continue
		}
		return pathErr("stat", path, err)
	}
}

// Read is read(2), retrying EINTR. It returns the raw errno on failure.
func Read(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Read(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// Pread is pread64(2), retrying EINTR.
func Pread(fd int, b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// Preadv is preadv(2) over a caller-owned iovec array, so that the hot loop
// allocates nothing. The buffers the iovecs point at must stay alive for the
// call; callers keep them in slices they own.
func Preadv(fd int, iov []Iovec, off int64) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	for {
		n, _, e := unix.Syscall6(unix.SYS_PREADV, uintptr(fd),
			uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)),
			uintptr(off), uintptr(uint64(off)>>32>>32), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// Write is write(2), retrying EINTR.
func Write(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		return n, nil
	}
}

// Pwrite is pwrite(2), retrying EINTR.
func Pwrite(fd int, b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		return n, err
	}
}

// MemfdCreate is memfd_create(2) with MFD_CLOEXEC: an anonymous file in
// memory (shmem), gone when its last descriptor closes.
func MemfdCreate(name string) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return -1, os.NewSyscallError("memfd_create", err)
	}
	return fd, nil
}

// Unopenable reports whether err, from opening path, is the ENXIO of a
// file that is not regular and cannot be opened at all (a socket, or a
// device without its driver), so that the caller can call it
// ErrNotRegular as it does a FIFO.
func Unopenable(path string, err error) bool {
	var st Stat_t
	return errors.Is(err, unix.ENXIO) && unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFREG
}

// OpenTmpfile opens an unnamed regular file in dir for reading and
// writing (O_TMPFILE): it has no name, and its space is freed when its
// last descriptor closes, whatever happens to the process.
func OpenTmpfile(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, &fs.PathError{Op: "open O_TMPFILE", Path: dir, Err: err}
	}
	return fd, nil
}

// Fadvise is posix_fadvise(2).
func Fadvise(fd int, off, length int64, advice int) error {
	return unix.Fadvise(fd, off, length, advice)
}

// Mmap maps length bytes of fd at off.
func Mmap(fd int, off int64, length int, prot, flags int) ([]byte, error) {
	return unix.Mmap(fd, off, length, prot, flags)
}

// MmapAnon maps length bytes of anonymous, page-aligned, off-heap memory.
func MmapAnon(length int) ([]byte, error) {
	return unix.Mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

// MmapPtr maps length bytes of fd at off and returns the mapping's base
// address, for rings whose memory the kernel owns (io_uring).
func MmapPtr(fd int, off int64, length int, prot, flags int) (unsafe.Pointer, error) {
	b, err := unix.Mmap(fd, off, length, prot, flags)
	if err != nil {
		return nil, err
	}
	return unsafe.Pointer(unsafe.SliceData(b)), nil
}

// Munmap unmaps b (which must come from Mmap or MmapAnon).
func Munmap(b []byte) error { return unix.Munmap(b) }

// MunmapPtr unmaps length bytes at p (which must come from MmapPtr).
func MunmapPtr(p unsafe.Pointer, length int) error {
	return unix.Munmap(unsafe.Slice((*byte)(p), length))
}

// Madvise is madvise(2).
func Madvise(b []byte, advice int) error { return unix.Madvise(b, advice) }

// Mincore fills vec with one byte per page of b; bit 0 set means resident.
func Mincore(b []byte, vec []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
		uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return e
	}
	return nil
}

// Getrusage returns resource usage for who (RUSAGE_SELF or RUSAGE_THREAD).
func Getrusage(who int, ru *Rusage) error { return unix.Getrusage(who, ru) }

// Uname returns the kernel's uname.
func Uname(u *Utsname) error { return unix.Uname(u) }

// Getrlimit returns a resource limit.
func Getrlimit(resource int, rl *Rlimit) error { return unix.Getrlimit(resource, rl) }

// Setrlimit sets a resource limit.
func Setrlimit(resource int, rl *Rlimit) error { return unix.Setrlimit(resource, rl) }

// RLIMIT constants.
const (
	RLIMIT_MEMLOCK = unix.RLIMIT_MEMLOCK
	RLIMIT_NOFILE  = unix.RLIMIT_NOFILE
)

// Gettid returns the calling thread's id.
func Gettid() int { return unix.Gettid() }

// Ftruncate truncates fd to size.
func Ftruncate(fd int, size int64) error { return unix.Ftruncate(fd, size) }

// Statfs is statfs(2) on path; it returns the filesystem type magic, block
// size, and available and total bytes.
func Statfs(path string) (fsType int64, avail, total uint64, err error) {
	var s unix.Statfs_t
	if err := unix.Statfs(path, &s); err != nil {
		return 0, 0, 0, pathErr("statfs", path, err)
	}
	return int64(s.Type), s.Bavail * uint64(s.Bsize), s.Blocks * uint64(s.Bsize), nil
}

// IoUringSetup is io_uring_setup(2). params points at a struct
// io_uring_params owned by the caller.
func IoUringSetup(entries uint32, params unsafe.Pointer) (int, error) {
	fd, _, e := unix.Syscall(SYS_IO_URING_SETUP, uintptr(entries), uintptr(params), 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// IoUringEnter is io_uring_enter(2). It does not retry EINTR: the caller
// decides, because a retried wait must recompute what it still waits for.
func IoUringEnter(fd int, toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, error) {
	n, _, e := unix.Syscall6(SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), uintptr(minComplete),
		uintptr(flags), uintptr(arg), argSize)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}

// IoUringRegister is io_uring_register(2), retrying EINTR.
func IoUringRegister(fd int, op uint32, arg unsafe.Pointer, nrArgs uint32) (int, error) {
	for {
		n, _, e := unix.Syscall6(SYS_IO_URING_REGISTER, uintptr(fd), uintptr(op), uintptr(arg), uintptr(nrArgs), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return int(n), e
		}
		return int(n), nil
	}
}

// Errno reports the syscall.Errno inside err, if any, however deeply it is
// wrapped.
func Errno(err error) (syscall.Errno, bool) {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e, true
	}
	return 0, false
}

// Fsync flushes fd's dirty pages to its device, retrying EINTR.
func Fsync(fd int) error {
	for {
		err := unix.Fsync(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// Statx_t is struct statx, for io_uring STATX requests.
type Statx_t = unix.Statx_t

// statx(2) masks and flags.
const (
	STATX_SIZE            = unix.STATX_SIZE
	STATX_BASIC_STATS     = unix.STATX_BASIC_STATS
	AT_STATX_SYNC_AS_STAT = unix.AT_STATX_SYNC_AS_STAT
	AT_EMPTY_PATH         = unix.AT_EMPTY_PATH
)

// Major is the major number of a device number.
func Major(dev uint64) uint32 { return unix.Major(dev) }

// Minor is the minor number of a device number.
func Minor(dev uint64) uint32 { return unix.Minor(dev) }

// RLIM_INFINITY is the "unlimited" resource limit.
const RLIM_INFINITY = unix.RLIM_INFINITY

// PreadvNowait is preadv2(fd, iov, off, RWF_NOWAIT) made as a raw system
// call, without telling the Go scheduler. off -1 means the file position.
//
// RWF_NOWAIT makes the kernel return EAGAIN instead of waiting for I/O, so
// the call only ever copies from the page cache: it cannot block for long,
// which is what makes a raw call safe. The raw call saves the scheduler's
// enter/exit work and, more importantly, keeps sysmon from handing the P to
// another thread during 10–20 µs copies (thousands of context switches per
// GiB). Callers keep each call's size small (the P is held for the copy).
// A partial count means only part of the data was cached.
func PreadvNowait(fd int, iov []Iovec, off int64) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall6(unix.SYS_PREADV2, uintptr(fd),
		uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)),
		uintptr(off), uintptr(uint64(off)>>32>>32), unix.RWF_NOWAIT)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Syncfs writes back the dirty data of the filesystem that holds fd, so
// that the pages can then be dropped from the cache.
func Syncfs(fd int) error {
	for {
		err := unix.Syncfs(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// RenameNoReplace renames oldpath to newpath, failing with EEXIST (inside
// an *os.LinkError, as os.Rename's) when newpath exists: renameat2 with
// RENAME_NOREPLACE, so that no check-then-rename race can overwrite a file
// that appeared in between. Filesystems without renameat2 flags answer
// EINVAL; the caller decides what to do then.
func RenameNoReplace(oldpath, newpath string) error {
	for {
		err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
		}
		return nil
	}
}
