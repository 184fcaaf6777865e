package sys

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Epoll flags and control operations, for the epoll server engine.
const (
	EPOLLIN    = unix.EPOLLIN
	EPOLLOUT   = unix.EPOLLOUT
	EPOLLPRI   = unix.EPOLLPRI
	EPOLLRDHUP = unix.EPOLLRDHUP
	EPOLLERR   = unix.EPOLLERR
	EPOLLHUP   = unix.EPOLLHUP
	EPOLLET    = unix.EPOLLET

	EPOLL_CTL_ADD = unix.EPOLL_CTL_ADD
	EPOLL_CTL_MOD = unix.EPOLL_CTL_MOD
	EPOLL_CTL_DEL = unix.EPOLL_CTL_DEL

	// EPROTO is one of the network errors accept(2) may return for a
	// connection that failed while it waited in the queue.
	EPROTO = unix.EPROTO
)

// EpollEvent is struct epoll_event. Its 8 bytes of user data are the two
// int32 fields Fd and Pad; EpollCtl stores a descriptor in Fd and a
// caller's tag in Pad, so that an event can be checked against the table
// entry it names without a map.
type EpollEvent = unix.EpollEvent

// EpollCreate is epoll_create1(EPOLL_CLOEXEC).
func EpollCreate() (int, error) {
	return unix.EpollCreate1(unix.EPOLL_CLOEXEC)
}

// EpollCtl is epoll_ctl(2) on fd with the event mask events; an event for
// fd comes back with Fd = fd and Pad = tag. For EPOLL_CTL_DEL, events and
// tag are ignored.
func EpollCtl(epfd, op, fd int, events uint32, tag int32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd), Pad: tag}
	return unix.EpollCtl(epfd, op, fd, &ev)
}

// EpollWait is epoll_wait(2): it fills events and returns how many are
// ready, waiting at most msec milliseconds (-1: no limit, 0: do not
// wait). EINTR is retried with the same timeout, so a wait interrupted by
// a signal may last up to msec longer in all.
func EpollWait(epfd int, events []EpollEvent, msec int) (int, error) {
	for {
		n, err := unix.EpollWait(epfd, events, msec)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// SockRead is recv(2) with no flags on a NON-BLOCKING socket, retrying
// EINTR. It returns the bare errno (0 on success; EAGAIN when nothing is
// queued) rather than an error, so that an event loop compares errnos
// without an interface, and it adds no race-detector bookkeeping: the
// caller owns b. (0, 0) is end of stream.
//
// It is a raw syscall: the goroutine keeps its P, without the runtime's
// entersyscall/exitsyscall and without the sysmon hand-off of the P that
// a loopback send, which runs the peer's receive path and wakes it, often
// lasts long enough to trigger; on one pinned core that saves about a
// tenth of an echo server's CPU per request. That is sound only because
// the call cannot block: on a non-blocking socket it copies at most what
// is queued (one socket buffer, which bounds how long it holds the P) and
// returns. Never use it on a blocking descriptor.
func SockRead(fd int, b []byte) (int, syscall.Errno) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(p), uintptr(len(b)), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}

// SockWrite is send(2) with MSG_NOSIGNAL on a NON-BLOCKING socket, so that
// a reset peer is EPIPE, never SIGPIPE, retrying EINTR. It returns the
// bytes sent and the bare errno, as SockRead does; a partial send is
// (n, 0) with n < len(b), a full send buffer (0, EAGAIN). It is a raw
// syscall, for the reasons and under the condition SockRead states: it
// copies at most the socket's free send space and never blocks.
func SockWrite(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_NOSIGNAL, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}
