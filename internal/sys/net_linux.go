package sys

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket-related constants for the server engines.
const (
	SHUT_RD   = unix.SHUT_RD
	SHUT_WR   = unix.SHUT_WR
	SHUT_RDWR = unix.SHUT_RDWR

	MSG_NOSIGNAL = unix.MSG_NOSIGNAL
	MSG_DONTWAIT = unix.MSG_DONTWAIT
	MSG_WAITALL  = unix.MSG_WAITALL

	SOCK_NONBLOCK = unix.SOCK_NONBLOCK
	SOCK_CLOEXEC  = unix.SOCK_CLOEXEC

	EFD_NONBLOCK = unix.EFD_NONBLOCK
	EFD_CLOEXEC  = unix.EFD_CLOEXEC
)

// Errnos a socket loop tells apart.
const (
	ECONNRESET   = unix.ECONNRESET
	EPIPE        = unix.EPIPE
	ENOTCONN     = unix.ENOTCONN
	EMFILE       = unix.EMFILE
	ENFILE       = unix.ENFILE
	ECONNABORTED = unix.ECONNABORTED
	EADDRINUSE   = unix.EADDRINUSE
	ETIMEDOUT    = unix.ETIMEDOUT
)

// ListenTCP opens a non-blocking, close-on-exec TCP listening socket bound
// to ap, with SO_REUSEADDR, and with SO_REUSEPORT when reusePort is set so
// that several loops can each own a listener on the same port and let the
// kernel spread connections among them. Port 0 picks a free port; the
// address actually bound is returned. Errors name the address.
func ListenTCP(ap netip.AddrPort, reusePort bool, backlog int) (int, netip.AddrPort, error) {
	fail := func(op string, err error) (int, netip.AddrPort, error) {
		return -1, netip.AddrPort{}, fmt.Errorf("listen tcp %s: %s: %w", ap, op, err)
	}
	domain := unix.AF_INET
	if ap.Addr().Is6() && !ap.Addr().Is4In6() {
		domain = unix.AF_INET6
	}
	fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("socket", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("SO_REUSEADDR", err)
	}
	if reusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail("SO_REUSEPORT", err)
		}
	}
	if err := unix.Bind(fd, sockaddr(ap)); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		return fail("listen", err)
	}
	bound, err := SockName(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	ok = true
	return fd, bound, nil
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.Unmap().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
}

// SockName is getsockname(2) of a TCP socket.
func SockName(fd int) (netip.AddrPort, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)), nil
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port)), nil
	}
	return netip.AddrPort{}, fmt.Errorf("getsockname: not an inet socket")
}

// Accept4 accepts one connection from the listening socket fd, non-blocking
// and close-on-exec, retrying EINTR. The peer address is not returned (no
// allocation). EAGAIN means no connection is pending.
func Accept4(fd int) (int, error) {
	for {
		nfd, _, err := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(fd), 0, 0, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		if err == 0 {
			return int(nfd), nil
		}
		if err != unix.EINTR {
			return -1, err
		}
	}
}

// Shutdown is shutdown(2); how is SHUT_RD, SHUT_WR or SHUT_RDWR.
func Shutdown(fd, how int) error { return unix.Shutdown(fd, how) }

// SetNoDelay sets TCP_NODELAY, as Go's net package does for every TCP
// connection, so that the engines compare like for like.
func SetNoDelay(fd int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
}

// EnterNetns moves the calling thread into the network namespace fd
// names (an open /run/netns/NAME). The caller must have locked the
// thread (runtime.LockOSThread) and must never unlock it: the thread is
// then ended with its goroutine, and no other goroutine runs in the
// namespace.
func EnterNetns(fd int) error { return unix.Setns(fd, unix.CLONE_NEWNET) }

// SetBindNoPort sets IP_BIND_ADDRESS_NO_PORT on a socket to be bound to
// an address before it connects: the port is then chosen at connect, for
// the 4-tuple, not at bind for the address alone, so that one source
// address holds as many connections as the ephemeral range allows per
// destination, and TIME_WAIT sockets of earlier connections (reusable on
// loopback, net.ipv4.tcp_tw_reuse) do not take ports from it.
func SetBindNoPort(fd int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
}

// SockControl makes set a net.Dialer's or net.ListenConfig's Control:
// set is called with the new socket's descriptor before it is bound, and
// its error fails the dial or listen.
func SockControl(set func(fd int) error) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = set(int(fd)) }); err != nil {
			return err
		}
		return serr
	}
}

// SetReusePort sets SO_REUSEPORT on a socket not yet bound.
func SetReusePort(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
}

// SetLingerZero makes close(2) reset the connection (SO_LINGER 0).
func SetLingerZero(fd int) error {
	return unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
}

// Recv is recv(2) with flags, retrying EINTR; it returns the raw errno.
func Recv(fd int, b []byte, flags int) (int, error) {
	for {
		n, _, err := unix.Recvfrom(fd, b, flags)
		if err == unix.EINTR {
			continue
		}
		return n, err
	}
}

// Send is send(2) with flags (MSG_NOSIGNAL is always added, so a reset
// peer is EPIPE, never SIGPIPE), retrying EINTR; it returns the raw errno.
func Send(fd int, b []byte, flags int) (int, error) {
	for {
		n, err := unix.SendmsgN(fd, b, nil, nil, flags|unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		return n, err
	}
}

// Writev is writev(2), retrying EINTR; it returns the raw errno. The
// iovecs must point at memory that stays put during the call.
func Writev(fd int, iov []Iovec) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	for {
		n, _, err := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		if err == unix.EINTR {
			continue
		}
		if err != 0 {
			return 0, err
		}
		return int(n), nil
	}
}

// Eventfd is eventfd2(2): a counter fd a loop can wait on, to be woken by
// another goroutine writing 8 bytes to it.
func Eventfd(initval uint, flags int) (int, error) { return unix.Eventfd(initval, flags) }

// RaiseNofile raises the soft RLIMIT_NOFILE to want, and the hard limit too
// when the process may (root). It returns the soft limit now in force,
// which may be below want.
func RaiseNofile(want uint64) (uint64, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if rl.Cur >= want {
		return rl.Cur, nil
	}
	nl := rl
	nl.Cur = want
	if nl.Max < want {
		nl.Max = want
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &nl); err == nil {
		return want, nil
	}
	nl = rl
	nl.Cur = rl.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &nl); err != nil {
		return rl.Cur, err
	}
	return nl.Cur, nil
}

// Nofile returns the soft and hard RLIMIT_NOFILE.
func Nofile() (soft, hard uint64, err error) {
	var rl unix.Rlimit
	err = unix.Getrlimit(unix.RLIMIT_NOFILE, &rl)
	return rl.Cur, rl.Max, err
}

// SetAffinity pins the calling OS thread to cpus (sched_setaffinity on
// thread 0). Threads and processes it creates afterwards inherit the mask.
func SetAffinity(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return unix.SchedSetaffinity(0, &set)
}

// Affinity returns the CPUs the calling thread may run on.
func Affinity() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// SetProcessAffinity pins every thread of process pid (0: this process)
// to cpus, by walking /proc/PID/task. Threads the process creates later
// inherit the mask of the thread that creates them.
func SetProcessAffinity(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	dir := "/proc/self/task"
	if pid != 0 {
		dir = filepath.Join("/proc", strconv.Itoa(pid), "task")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("sched_setaffinity %d: %w", tid, err)
		}
	}
	return nil
}

// ListenTCPGroup opens n listening sockets on one address with
// SO_REUSEPORT, one per event loop, so that the kernel spreads incoming
// connections among them. SO_REUSEPORT alone would also let an unrelated
// server of the same user join the group and steal connections, so a
// port already in use is refused first by a probe bind without it. With
// port 0 the first socket picks the port and the others join it. With
// share, the probe is skipped: the sockets join a group other processes
// (of the same user) made or will make on the port, on purpose.
func ListenTCPGroup(ap netip.AddrPort, n, backlog int, share bool) ([]int, netip.AddrPort, error) {
	if ap.Port() != 0 && !share {
		fd, _, err := ListenTCP(ap, false, 1)
		if err != nil {
			return nil, netip.AddrPort{}, err
		}
		unix.Close(fd)
	}
	var fds []int
	bound := ap
	for i := 0; i < n; i++ {
		fd, b, err := ListenTCP(bound, true, backlog)
		if err != nil {
			for _, f := range fds {
				unix.Close(f)
			}
			return nil, netip.AddrPort{}, err
		}
		bound = b
		fds = append(fds, fd)
	}
	return fds, bound, nil
}

// Msghdr is struct msghdr, for sendmsg(2) and io_uring SENDMSG.
type Msghdr = unix.Msghdr
