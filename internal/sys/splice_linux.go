package sys

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Zero-copy file serving (netio/filesrv) and write batching (netio/writev).
//
// The calls here that move data make exactly one system call and return
// the bare errno (0 on success), without retrying EINTR: their callers
// count every system call they make, so they retry EINTR themselves and
// count the retry. (Go installs its signal handlers with SA_RESTART, so
// on a blocking socket or pipe an interrupted call is restarted by the
// kernel or returns a partial count; EINTR is rare.)

// Flags of splice(2) and send(2) used by the file server.
const (
	SPLICE_F_MOVE     = unix.SPLICE_F_MOVE
	SPLICE_F_NONBLOCK = unix.SPLICE_F_NONBLOCK
	SPLICE_F_MORE     = unix.SPLICE_F_MORE

	// MSG_MORE tells TCP that more data follows at once, so that a
	// response header is not sent as a segment of its own.
	MSG_MORE = unix.MSG_MORE
)

// MaxRW is the most bytes one read, write, sendfile or splice call
// transfers on Linux (MAX_RW_COUNT: INT_MAX rounded down to a page).
const MaxRW = 0x7ffff000

// Sendfile is sendfile(2): it copies up to count bytes of inFd, starting
// at *off, to outFd inside the kernel and advances *off by the number of
// bytes copied. One system call; n 0 with count > 0 means inFd ended at
// *off.
func Sendfile(outFd, inFd int, off *int64, count int) (int, syscall.Errno) {
	n, _, e := unix.Syscall6(unix.SYS_SENDFILE, uintptr(outFd), uintptr(inFd),
		uintptr(unsafe.Pointer(off)), uintptr(count), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// Splice is splice(2): it moves up to n bytes from rfd to wfd, one of
// which must be a pipe. roff and woff are the offsets of a side that is
// a file (advanced by the kernel), nil for a pipe or a socket. One system
// call; 0 means rfd is at its end (or, for a pipe, empty with no writer).
func Splice(rfd int, roff *int64, wfd int, woff *int64, n int, flags int) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_SPLICE, uintptr(rfd), uintptr(unsafe.Pointer(roff)),
		uintptr(wfd), uintptr(unsafe.Pointer(woff)), uintptr(n), uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// Pipe2 creates a pipe, close-on-exec, with extra flags (O_NONBLOCK or 0).
// It returns the read end and the write end.
func Pipe2(flags int) (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], flags|unix.O_CLOEXEC); err != nil {
		return -1, -1, err
	}
	return p[0], p[1], nil
}

// SetPipeSize asks for a pipe of at least size bytes (fcntl F_SETPIPE_SZ)
// and returns the size the kernel gave: a power of two pages, at least the
// one asked for. Without CAP_SYS_RESOURCE the size is capped by
// /proc/sys/fs/pipe-max-size (EPERM above it).
func SetPipeSize(fd, size int) (int, error) {
	n, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, size)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// PipeSize returns the capacity of the pipe fd (fcntl F_GETPIPE_SZ).
func PipeSize(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0)
}

// DupCloexec duplicates fd onto the lowest free descriptor, close-on-exec
// (fcntl F_DUPFD_CLOEXEC). The copy shares the open file description, and
// so its flags (O_NONBLOCK) and, for a socket, the connection.
func DupCloexec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// PreadOnce is one pread64(2) of fd into b at off, with the bare errno.
func PreadOnce(fd int, b []byte, off int64) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := unix.Syscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])),
		uintptr(len(b)), uintptr(off), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// SendOnce is one send(2) of b on the socket fd with flags|MSG_NOSIGNAL
// (a reset peer is EPIPE, never SIGPIPE), with the bare errno. On a
// blocking socket it returns when all of b is queued, or with a partial
// count when a signal interrupts it after some progress.
func SendOnce(fd int, b []byte, flags int) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])),
		uintptr(len(b)), uintptr(flags|unix.MSG_NOSIGNAL), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// RecvOnce is one recv(2) on the socket fd into b, with the bare errno.
// (0, 0) is the end of the stream.
func RecvOnce(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])),
		uintptr(len(b)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// WritevOnce is one writev(2) of iov to fd, with the bare errno. The
// buffers the iovecs point at must stay put during the call.
func WritevOnce(fd int, iov []Iovec) (int, syscall.Errno) {
	if len(iov) == 0 {
		return 0, 0
	}
	n, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// Socket send buffer size options, for tests that need a connection
// whose writer stalls early.
const (
	SO_SNDBUF = unix.SO_SNDBUF
	SO_RCVBUF = unix.SO_RCVBUF
)

// SetSockBuf sets the socket's send (SO_SNDBUF) or receive (SO_RCVBUF)
// buffer size; the kernel doubles the value and caps it at
// net.core.wmem_max or rmem_max.
func SetSockBuf(fd, opt, size int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, size)
}

// ThreadCPU returns the user+system CPU time, in nanoseconds, that the
// calling OS thread has used (clock_gettime CLOCK_THREAD_CPUTIME_ID). The
// caller must be locked to its thread (runtime.LockOSThread) for the
// figure to mean anything. Unlike getrusage(RUSAGE_THREAD), which reads
// the scheduler's total as of the thread's last tick or switch, this
// clock includes the slice now running, so two readings a few
// microseconds apart differ by the work done between them.
func ThreadCPU() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// ProcessCPU returns the user+system CPU time, in nanoseconds, that the
// calling process has used so far, all its threads included
// (getrusage RUSAGE_SELF).
func ProcessCPU() (int64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), nil
}
