package netio

import (
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"time"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/internal/sys"
)

func init() { register("epoll", listenEpoll) }

// The epoll engine is what a good C echo server does, in Go: Config.Loops
// event loops, each a goroutine locked to its OS thread that owns one
// epoll instance, one SO_REUSEPORT listener (the kernel spreads new
// connections among the loops' listeners, so loops never hand connections
// to each other), one eventfd by which Shutdown wakes it, and its
// connections. No state is shared between loops but the connection count
// that enforces MaxConns.
//
// Why locked threads: a loop spends its life in epoll_wait and in
// non-blocking recv/send on sockets only it touches. Locking keeps it on
// one thread, so its table and buffers stay in one core's cache, per-thread
// CPU accounting (RUSAGE_THREAD, /proc/PID/task) describes one loop, and
// the scheduler never moves it between threads at a wakeup. Blocking in
// epoll_wait on a locked thread costs no parallelism: the runtime hands the
// thread's P to other goroutines for the length of the syscall. That
// hand-off has a price when no P is idle (GOMAXPROCS=1, or every other P
// busy): sysmon takes the P from a wait that outlasts its 20 µs tick and
// wakes another thread to hold it, a few context switches per idle spell,
// which the net engine's netpoller, blocking without a P, does not pay
// (one spare P avoids it: Config.Loops). The recv and send are raw
// syscalls (see sys.SockRead), so that they at least never give the P up:
// a loopback send runs the peer's receive path and is often long enough
// to be caught.
//
// Why edge-triggered: every connection is registered once, at accept, for
// EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLPRI|EPOLLET, and epoll_ctl is never
// called on it again, not even for backpressure (level-triggered would
// need two EPOLL_CTL_MODs per episode: drop EPOLLIN and add EPOLLOUT, then
// back). The steady state is epoll_wait (shared by every ready connection)
// plus one recv and one send per request. The price of ET is that a wakeup
// is reported once, so the loop must never leave readable bytes behind
// without a note of them. It reads until EAGAIN or a short read: a TCP
// recv returns less than asked only after it found the receive queue
// empty, so whatever arrives later raises a new edge (nginx relies on the
// same rule). The exceptions are reported by epoll and remembered on the
// connection, which is then read until EAGAIN or the end: a FIN that
// arrived with the data (EPOLLRDHUP), an error (EPOLLERR, EPOLLHUP), and
// urgent data (EPOLLPRI), at whose mark a recv stops short. When a
// connection's per-wakeup budget (readRounds full buffers) runs out, the
// loop puts it on a ready list that it serves after the batch, and does
// not block in the next epoll_wait while that list is non-empty; so a fast
// sender can neither starve the other connections of its loop nor be
// forgotten.
//
// How backpressure works: each read goes into the loop's shared buffer of
// Config.BufSize bytes and is sent back at once with one send; in the
// common case all of it goes and the connection holds no memory of its
// own, so 10,000 idle connections cost a 24-byte table entry each. When a
// send is partial, the rest (at most BufSize bytes) is copied into a
// buffer from bufpool, sized to what is left, and the connection is not
// read again until that drains: its receive queue fills, TCP's window
// closes and the peer's writes block. The kernel reports EPOLLOUT when
// send space frees (a partial or EAGAIN send sets the socket's NOSPACE
// flag, which makes freed space raise an edge); the loop then sends the
// rest, frees the buffer and resumes reading.
type epollServer struct {
	shell
	loops []*eloop
}

const (
	// epollBatch is the most events one epoll_wait returns.
	epollBatch = 256
	// acceptBatch bounds the connections accepted per listener wakeup; the
	// listener is level-triggered, so the rest are reported again after
	// the loop has served the other events.
	acceptBatch = 64
	// readRounds is how many full buffers a connection may read and echo
	// in one wakeup before it goes to the back of the ready list.
	readRounds = 4
)

// Tags in EpollEvent.Pad: the listener and the eventfd have negative ones;
// a connection's is its generation, which changes whenever the fd is
// reused, so a stale event cannot act on a newer connection.
const (
	tagListener int32 = -1
	tagWake     int32 = -2
)

// Connection states.
const (
	stFree     uint8 = iota // no connection on this fd in this loop
	stOpen                  // echoing
	stDraining              // Shutdown: echo what is pending, then FIN
	stFinWait               // FIN sent: discard input until the peer closes
)

// econn is one connection, in its loop's table at the index of its fd.
type econn struct {
	// pend holds bytes received and not yet sent, from pend.Bytes()[off:];
	// nil when the connection is fully echoed (almost always).
	pend  *bufpool.Buf
	off   int32
	gen   int32
	state uint8
	// greedy: epoll has reported the peer's FIN, an error or urgent data,
	// so a short read does not prove the receive queue empty (the end of
	// stream, or bytes behind an urgent mark, may still be queued): read
	// on until EAGAIN or the end. Once set it stays set.
	greedy bool
	// queued: the connection is on the loop's ready list.
	queued bool
}

// eloop is one event loop; only its own goroutine touches its fields,
// except st (atomic, read by Stats) and the fds that Shutdown closes after
// the goroutine has exited.
type eloop struct {
	_  [64]byte // keep st off the cache lines of other loops
	st counters
	_  [64]byte

	s      *epollServer
	epfd   int
	lfd    int // -1 once closed
	efd    int // owned by the server: closed by Shutdown after the loop exits
	mode   int32
	nconns int
	gen    int32

	events []sys.EpollEvent
	conns  []econn
	rbuf   []byte
	ready  []int32 // fds with more to read, served after each batch
	spare  []int32

	paused   bool // the listener is out of the epoll set until resumeAt
	resumeAt time.Time
}

func listenEpoll(cfg Config, ap netip.AddrPort) (Server, error) {
	s := &epollServer{}
	lfds, err := s.listen("epoll", cfg, ap)
	if err != nil {
		return nil, err
	}
	fail := func(op string, err error) (Server, error) {
		for _, fd := range lfds {
			sys.Close(fd)
		}
		for _, l := range s.loops {
			sys.Close(l.epfd)
		}
		s.closeEventfds()
		return nil, fmt.Errorf("epoll server on %s: %s: %w", s.addr, op, err)
	}
	for _, lfd := range lfds {
		epfd, err := sys.EpollCreate()
		if err != nil {
			return fail("epoll_create1", err)
		}
		efd, err := sys.Eventfd(0, sys.EFD_NONBLOCK|sys.EFD_CLOEXEC)
		if err != nil {
			sys.Close(epfd)
			return fail("eventfd", err)
		}
		l := &eloop{
			s:      s,
			epfd:   epfd,
			lfd:    lfd,
			efd:    efd,
			events: make([]sys.EpollEvent, epollBatch),
			rbuf:   make([]byte, cfg.BufSize),
		}
		s.loops = append(s.loops, l)
		s.addLoop(efd, &l.st)
		// Both level-triggered: the listener so that connections left
		// over by acceptBatch are reported again, the eventfd because it
		// is read (reset) at each wakeup anyway.
		if err := sys.EpollCtl(epfd, sys.EPOLL_CTL_ADD, lfd, sys.EPOLLIN, tagListener); err != nil {
			return fail("epoll_ctl listener", err)
		}
		if err := sys.EpollCtl(epfd, sys.EPOLL_CTL_ADD, efd, sys.EPOLLIN, tagWake); err != nil {
			return fail("epoll_ctl eventfd", err)
		}
	}
	s.wg.Add(len(s.loops))
	for _, l := range s.loops {
		go l.run()
	}
	return s, nil
}

func (l *eloop) run() {
	defer l.s.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer sys.Close(l.epfd)
	for {
		timeout := -1
		if len(l.ready) > 0 {
			timeout = 0
		} else if l.paused {
			timeout = max(1, int((time.Until(l.resumeAt)+time.Millisecond-1)/time.Millisecond))
		}
		n, err := sys.EpollWait(l.epfd, l.events, timeout)
		if err != nil {
			// Only a bug (EBADF, EFAULT, EINVAL) gets here: give up the
			// loop cleanly, and let Shutdown report why.
			l.s.fail(fmt.Errorf("epoll server on %s: epoll_wait: %w", l.s.addr, err))
			l.setMode(modeForce)
			return
		}
		for i := range n {
			ev := &l.events[i]
			switch ev.Pad {
			case tagListener:
				if l.lfd >= 0 {
					l.accept()
				}
			case tagWake:
				var b [8]byte
				sys.Read(l.efd, b[:])
				l.setMode(l.s.mode.Load())
			default:
				fd := int(ev.Fd)
				if fd < len(l.conns) {
					if c := &l.conns[fd]; c.state != stFree && c.gen == ev.Pad {
						if ev.Events&(sys.EPOLLRDHUP|sys.EPOLLHUP|sys.EPOLLERR|sys.EPOLLPRI) != 0 {
							c.greedy = true
						}
						l.service(fd, c, ev.Events)
					}
				}
			}
		}
		l.serveReady()
		if l.paused && !time.Now().Before(l.resumeAt) {
			l.resumeAccept()
		}
		if l.mode != modeRun && l.nconns == 0 {
			l.closeListener()
			return
		}
	}
}

// setMode acts on a mode from Shutdown: drain closes the listener and
// starts draining every connection; force closes everything.
func (l *eloop) setMode(m int32) {
	if m <= l.mode {
		return
	}
	l.mode = m
	l.closeListener()
	for fd := range l.conns {
		c := &l.conns[fd]
		switch {
		case c.state == stFree:
		case m == modeForce:
			l.closeConn(fd, c, false)
		case c.state == stOpen:
			c.state = stDraining
			if c.pend == nil {
				// Echo what has arrived (one buffer at most), so that a
				// peer that has just written gets its answer.
				l.echo(fd, c, 1)
			}
			l.service(fd, c, sys.EPOLLOUT)
		}
	}
}

func (l *eloop) closeListener() {
	if l.lfd < 0 {
		return
	}
	// close(2) also takes the listener out of the epoll set; connections
	// still in its accept queue are reset, so new dials are refused.
	sys.Close(l.lfd)
	l.lfd = -1
	l.paused = false
}

// accept takes up to acceptBatch connections from the listener.
func (l *eloop) accept() {
	for range acceptBatch {
		fd, err := sys.Accept4(l.lfd)
		if err != nil {
			switch err {
			case sys.EAGAIN:
			case sys.ECONNABORTED, sys.EPROTO, sys.EPERM:
				// This connection died in the queue: try the next.
				continue
			default:
				// EMFILE, ENFILE, ENOBUFS, ENOMEM, or anything else
				// that would fail again at once: count it, say so, and
				// stop listening for a moment rather than spin on a
				// readable listener.
				l.st.acceptErrs.Add(1)
				l.s.alog.Failed(err)
				l.pauseAccept()
			}
			return
		}
		if !l.s.count.reserve() {
			// Count before the close, so that a client that sees the
			// close also sees the count.
			l.st.refused.Add(1)
			sys.Close(fd)
			continue
		}
		// Go's net package sets TCP_NODELAY on every connection: do the
		// same, so that the engines compare like for like. A failure
		// (the peer has reset already) shows up at the first recv.
		sys.SetNoDelay(fd)
		if fd >= len(l.conns) {
			grown := make([]econn, max(fd+1, 2*len(l.conns), 256))
			copy(grown, l.conns)
			l.conns = grown
		}
		l.gen = (l.gen + 1) & math.MaxInt32
		c := &l.conns[fd]
		*c = econn{gen: l.gen, state: stOpen}
		l.nconns++
		l.st.accepted.Add(1)
		l.st.active.Add(1)
		// Registering reports the socket's readiness at once (EPOLLOUT at
		// least), so bytes that came before this call are not missed.
		if err := sys.EpollCtl(l.epfd, sys.EPOLL_CTL_ADD, fd, sys.EPOLLIN|sys.EPOLLOUT|sys.EPOLLRDHUP|sys.EPOLLPRI|sys.EPOLLET, c.gen); err != nil {
			l.closeConn(fd, c, true)
		}
	}
}

func (l *eloop) pauseAccept() {
	if err := sys.EpollCtl(l.epfd, sys.EPOLL_CTL_DEL, l.lfd, 0, 0); err != nil {
		return // still in the set: the next wakeup tries again
	}
	l.paused = true
	l.resumeAt = time.Now().Add(AcceptPause)
}

func (l *eloop) resumeAccept() {
	if err := sys.EpollCtl(l.epfd, sys.EPOLL_CTL_ADD, l.lfd, sys.EPOLLIN, tagListener); err != nil {
		// ENOMEM, say: try again after another pause.
		l.resumeAt = time.Now().Add(AcceptPause)
		return
	}
	l.paused = false
}

// service moves a connection on after an event (or, with events 0, from
// the ready list).
func (l *eloop) service(fd int, c *econn, events uint32) {
	// Send what is pending only when the socket may take it: an event
	// with EPOLLOUT clear says it cannot, and the syscall would be wasted.
	if c.pend != nil && (events == 0 || events&(sys.EPOLLOUT|sys.EPOLLERR|sys.EPOLLHUP) != 0) {
		if !l.flush(fd, c) {
			return
		}
	}
	if c.pend != nil {
		return // backpressure: read nothing until the peer takes its echo
	}
	switch c.state {
	case stOpen:
		l.echo(fd, c, readRounds)
	case stDraining:
		// Everything received is echoed: half-close and wait for the
		// peer to close its side.
		if err := sys.Shutdown(fd, sys.SHUT_WR); err != nil {
			l.closeConn(fd, c, true)
			return
		}
		c.state = stFinWait
		l.discard(fd, c)
	case stFinWait:
		l.discard(fd, c)
	}
}

// echo reads and sends back up to rounds full buffers. It returns when
// the receive queue is empty (EAGAIN, or a short read unless c.greedy),
// when a send was partial (backpressure), or at the end of the stream or
// an error (the connection is then closed).
func (l *eloop) echo(fd int, c *econn, rounds int) {
	for range rounds {
		n, e := sys.SockRead(fd, l.rbuf)
		if n == 0 {
			switch e {
			case sys.EAGAIN:
			case 0:
				// The peer half-closed, and everything it sent has been
				// echoed (a connection is read only with nothing
				// pending): close(2) sends our FIN after the queued
				// bytes, and with the peer's FIN in there is nothing left
				// to wait for.
				l.closeConn(fd, c, false)
			default:
				l.closeConn(fd, c, true)
			}
			return
		}
		l.st.bytesIn.Add(int64(n))
		if !l.send(fd, c, l.rbuf[:n]) {
			return
		}
		if n < len(l.rbuf) && !c.greedy {
			return // short read: drained; a later byte raises a new edge
		}
	}
	if c.state == stOpen && !c.queued {
		c.queued = true
		l.ready = append(l.ready, int32(fd))
	}
}

// send sends b, which is in the loop's shared buffer, and keeps what the
// socket did not take. It reports whether all of it went.
func (l *eloop) send(fd int, c *econn, b []byte) bool {
	n, e := sys.SockWrite(fd, b)
	l.st.bytesOut.Add(int64(n))
	if n == len(b) {
		return true
	}
	if e != 0 && e != sys.EAGAIN {
		l.closeConn(fd, c, true)
		return false
	}
	rest := b[n:]
	c.pend = bufpool.Get(len(rest))
	copy(c.pend.Bytes(), rest)
	c.off = 0
	return false
}

// flush sends pending bytes and reports whether none are left (false also
// when the connection was closed).
func (l *eloop) flush(fd int, c *econn) bool {
	p := c.pend.Bytes()[c.off:]
	n, e := sys.SockWrite(fd, p)
	l.st.bytesOut.Add(int64(n))
	if n == len(p) {
		c.pend.Release()
		c.pend = nil
		return true
	}
	if e != 0 && e != sys.EAGAIN {
		l.closeConn(fd, c, true)
		return false
	}
	c.off += int32(n)
	return false
}

// discard reads and drops input after our FIN, until the peer closes (end
// of stream or an error), within the same budget as echo.
func (l *eloop) discard(fd int, c *econn) {
	for range readRounds {
		n, e := sys.SockRead(fd, l.rbuf)
		if n == 0 {
			if e != sys.EAGAIN {
				l.closeConn(fd, c, false)
			}
			return
		}
	}
	if !c.queued {
		c.queued = true
		l.ready = append(l.ready, int32(fd))
	}
}

// serveReady gives every connection on the ready list another turn.
func (l *eloop) serveReady() {
	if len(l.ready) == 0 {
		return
	}
	batch := l.ready
	l.ready = l.spare[:0]
	for _, fd := range batch {
		c := &l.conns[fd]
		if !c.queued {
			continue // closed meanwhile
		}
		c.queued = false
		l.service(int(fd), c, 0)
	}
	l.spare = batch[:0]
}

// closeConn closes a connection; reset says it ended in an error, which
// counts as a reset unless the server is shutting down.
func (l *eloop) closeConn(fd int, c *econn, reset bool) {
	if c.pend != nil {
		c.pend.Release()
		c.pend = nil
	}
	// close(2) also removes fd from the epoll set (the loop never dups it).
	sys.Close(fd)
	c.state = stFree
	c.queued = false
	c.greedy = false
	l.nconns--
	if reset && l.mode == modeRun {
		l.st.resets.Add(1)
	}
	l.st.active.Add(-1)
	l.s.count.release()
}
