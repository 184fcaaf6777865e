package load

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// The epoll client (Config.Client "epoll") drives closed-loop pingpong and
// pipeline:K from event loops on raw epoll instead of a goroutine per
// connection, for the client's CPU per message: the net client pays, per
// message, a write, a read that finds nothing yet (EAGAIN), a netpoller
// wakeup, a goroutine park and unpark and the read again; an event loop
// pays a write, one read, and a share of one epoll_wait. Both pay the
// kernel's send and receive, which on loopback are most of the cost (a
// send also runs the server's receive path and wakes it), so the client
// saves the rest: measured here with the client on one core, its CPU per
// 64 B ping-pong was 0.57× the net client's at 1000 connections against
// netio's epoll engine, and 0.75-0.9× where the net client's scheduling
// costs less (100 connections, or a slower server that leaves fewer
// events per epoll_wait).
//
// Sockets: Go's dialer connects them (the ramp in dial.go, unchanged), and
// takeOver hands each one to the client as a bare non-blocking descriptor
// that the runtime's poller no longer watches.
//
// Loops: min(GOMAXPROCS, Conns, maxLoops) goroutines, each locked to its OS
// thread, each with its own epoll instance and a contiguous slice of the
// connections, whose state lives in one flat slice (epConn, indexed by
// connection id; the epoll event carries the index within the loop). A
// connection is touched by its loop only, so nothing on the hot path is
// locked or atomic but the stamps and the batch of 32 latencies that
// conn.complete moves into a shared histogram under its lock, as for the
// net client. The verification is the net client's own code (conn.got,
// conn.complete): the same pattern, windows and counts.
//
// Edge-triggered: every connection is registered once, for
// EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET, and epoll_ctl is never called on it
// again. Level-triggered would need an EPOLL_CTL_MOD for each episode of a
// full send buffer (add EPOLLOUT, then drop it), and would report, again
// and again, bytes that the client must not read yet (an extra byte from a
// faulty server while nothing is owed, which the net client too reads only
// as the start of the next message). The price of ET is that readiness is
// reported once per arrival, so a loop must never stop reading while bytes
// it wants are queued: it reads until it has what it is owed, EAGAIN, or a
// short read (a TCP recv returns less than asked only when it emptied the
// receive queue, and whatever arrives later raises a new edge; epoll(7)).
// A FIN or an error that came with the data raises no later edge, so once
// epoll has reported EPOLLRDHUP, EPOLLHUP or EPOLLERR the connection reads
// on past short reads until EAGAIN or the end. It writes until it has sent
// what the window allows or EAGAIN, and then waits for EPOLLOUT.
//
// Phases: a loop looks at the run's phase when it handles an event, so
// the warmup/measure switch and the stop need no wakeup: in a closed loop
// every live connection is waiting for an echo or for send-buffer space,
// and the event that ends the wait also shows the new phase. Once the
// run stops, a connection issues no new messages, finishes writing the
// one it is in, reads what it is owed and closes. Connections that never
// get their event (a stalled server) are closed when Run aborts (the drain
// ran out, or ctx ended): it writes an eventfd that every loop's epoll
// watches, level-triggered, and each loop closes what it still holds and
// returns.
//
// The tail: a connection that owes and is owed nothing at the end sends
// its FIN (shutdown SHUT_WR) and reads until the server's, as the net
// client's readTail does, counting every byte on the way as one the
// server sent after the last echo. The FIN's arrival is an edge
// (EPOLLIN|EPOLLRDHUP), so the tail reads until EAGAIN and waits for the
// next; a server that never sends its FIN leaves the connection to Run's
// abort.

const (
	// maxLoops bounds the epoll client's loops: each holds an epoll
	// descriptor, and they must stay well within FdSlack.
	maxLoops = 64
	// epollBatch is the most events one epoll_wait returns.
	epollBatch = 256
	// tagWake marks the abort eventfd's events (connection tags are ≥ 0).
	tagWake = -1
)

// epollClient is one run's epoll driver.
type epollClient struct {
	r     *runner
	conns []epConn // every connection, by id
	loops []*epLoop
	efd   int // eventfd in every loop's epoll set; written to abort
	wg    sync.WaitGroup
}

// epLoop is one event loop and the connections it owns.
type epLoop struct {
	r      *runner
	epfd   int
	conns  []epConn // this loop's part of epollClient.conns
	events []sys.EpollEvent
	buf    []byte // every read goes here, and is checked at once
	flight int64  // the most bytes a connection has in flight
	limit  int64  // messages per connection before it stops (0: none; benchmarks)
	live   int    // connections still open
	tail   []byte // tail reads go here: buf, or tailBuf bytes if buf is smaller
}

// epConn is one connection of the epoll client.
type epConn struct {
	// conn holds the reader's state, verified and timed by conn.got
	// exactly as for the net client; conn.sent is set when the
	// connection ends, for collect.
	conn
	fd       int   // -1 once closed
	issued   int64 // messages stamped (their first byte may go)
	wsent    int64 // bytes written
	wblocked bool  // the send buffer was full: wait for EPOLLOUT
	hup      bool  // a FIN or an error was reported: read until EAGAIN
	tailing  bool  // our FIN is sent: read to the server's (tail)
}

// newEpollClient sets up the loops over fds (taken over by dialAll) and
// registers every connection; it takes ownership of fds, closing them all
// on failure. The warmup starts with start.
func newEpollClient(r *runner, fds []int) (_ *epollClient, err error) {
	n := len(fds)
	depth := int(r.depth)
	ec := &epollClient{r: r, conns: make([]epConn, n), efd: -1}
	stamps := make([]atomic.Int64, n*depth)
	r.conns = make([]*conn, n)
	for i := range ec.conns {
		e := &ec.conns[i]
		e.fd = fds[i]
		c := &e.conn
		c.r = r
		c.id = i
		c.base = connBase(i, r.period)
		c.shard = &r.shards[i%len(r.shards)]
		c.stamps = stamps[i*depth : (i+1)*depth : (i+1)*depth]
		r.conns[i] = c
	}
	defer func() {
		if err != nil {
			for _, l := range ec.loops {
				sys.Close(l.epfd)
			}
			if ec.efd >= 0 {
				sys.Close(ec.efd)
			}
			closeFds(fds)
		}
	}()
	ec.efd, err = sys.Eventfd(0, sys.EFD_NONBLOCK|sys.EFD_CLOEXEC)
	if err != nil {
		ec.efd = -1
		return nil, fmt.Errorf("load: epoll client: eventfd: %w", err)
	}
	nl := min(runtime.GOMAXPROCS(0), n, maxLoops)
	// In flight per connection: all its messages when they fit the
	// window a split net connection keeps, the window otherwise.
	flight := min(r.depth*r.size, r.window)
	for i := range nl {
		lo, hi := i*n/nl, (i+1)*n/nl
		epfd, err := sys.EpollCreate()
		if err != nil {
			return nil, fmt.Errorf("load: epoll client: epoll_create1: %w", err)
		}
		l := &epLoop{
			r:      r,
			epfd:   epfd,
			conns:  ec.conns[lo:hi:hi],
			events: make([]sys.EpollEvent, min(epollBatch, hi-lo+1)),
			buf:    make([]byte, min(flight, maxWindow)),
			flight: flight,
			live:   hi - lo,
		}
		l.tail = l.buf
		if len(l.tail) < tailBuf {
			l.tail = make([]byte, tailBuf)
		}
		ec.loops = append(ec.loops, l)
		if err := sys.EpollCtl(epfd, sys.EPOLL_CTL_ADD, ec.efd, sys.EPOLLIN, tagWake); err != nil {
			return nil, fmt.Errorf("load: epoll client: epoll_ctl eventfd: %w", err)
		}
		for j := range l.conns {
			// Registered writable, so the first epoll_wait reports
			// every connection and its first message goes then.
			if err := sys.EpollCtl(epfd, sys.EPOLL_CTL_ADD, l.conns[j].fd,
				sys.EPOLLIN|sys.EPOLLOUT|sys.EPOLLRDHUP|sys.EPOLLET, int32(j)); err != nil {
				return nil, fmt.Errorf("load: epoll client: epoll_ctl connection %d: %w", lo+j+1, err)
			}
		}
	}
	return ec, nil
}

// start starts the loops; each connection stops after limit messages
// (0: when the run stops).
func (ec *epollClient) start(limit int64) {
	ec.r.left.Store(int64(len(ec.conns)))
	for _, l := range ec.loops {
		l.limit = limit
		ec.wg.Go(l.run)
	}
}

// abort is runner.abort for the epoll client: every loop closes what it
// still holds, as a failure that is not the server's.
func (ec *epollClient) abort() {
	ec.r.aborting.Store(true)
	// The eventfd counter adds a native-endian uint64. The write cannot
	// fail: efd is open until wait, after the loops are gone, and one
	// write of 1 cannot overflow the counter.
	one := [8]byte{1}
	sys.Write(ec.efd, one[:])
}

// wait waits for the loops to return and closes the eventfd.
func (ec *epollClient) wait() {
	ec.wg.Wait()
	sys.Close(ec.efd)
	ec.efd = -1
}

func (l *epLoop) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer sys.Close(l.epfd)
	r := l.r
	for l.live > 0 {
		n, err := sys.EpollWait(l.epfd, l.events, -1)
		if err != nil {
			// Only a bug gets here (EBADF, EFAULT, EINVAL).
			l.closeAll(fmt.Errorf("epoll_wait: %w", err))
			return
		}
		stopping := r.phase.Load() >= phaseStop
		for i := range n {
			ev := &l.events[i]
			if ev.Pad == tagWake {
				l.closeAll(nil)
				return
			}
			e := &l.conns[ev.Pad]
			if e.fd < 0 || int32(e.fd) != ev.Fd {
				continue
			}
			l.service(e, ev.Events, stopping)
		}
	}
}

// service handles one event of e: read what is there and owed, check it,
// send what may go now; once the run is stopping and e owes and is owed
// nothing, read its tail.
func (l *epLoop) service(e *epConn, events uint32, stopping bool) {
	if e.tailing {
		l.readTail(e)
		return
	}
	if events&(sys.EPOLLRDHUP|sys.EPOLLHUP|sys.EPOLLERR) != 0 {
		e.hup = true
	}
	if events&(sys.EPOLLOUT|sys.EPOLLHUP|sys.EPOLLERR) != 0 {
		e.wblocked = false
	}
	if events&(sys.EPOLLIN|sys.EPOLLRDHUP|sys.EPOLLHUP|sys.EPOLLERR) != 0 && !l.read(e) {
		return
	}
	done := stopping || l.limit > 0 && e.issued >= l.limit
	if !e.wblocked && !l.write(e, done) {
		return
	}
	if done && e.wsent == e.issued*l.r.size && e.recv == e.wsent {
		if err := sys.Shutdown(e.fd, sys.SHUT_WR); err != nil {
			l.fail(e, fmt.Errorf("shutdown after the last echo: %w", err))
			return
		}
		e.tailing = true
		l.readTail(e)
	}
}

// maxTailReads bounds the reads of one readTail call, so that a server
// that floods junk cannot keep its loop from the abort eventfd; the
// flood's next arrival raises a new edge.
const maxTailReads = 64

// readTail reads what e's server sends after our FIN: until EAGAIN (the
// FIN's arrival will be an edge), the end (e is done), or an error.
func (l *epLoop) readTail(e *epConn) {
	for range maxTailReads {
		n, errno := sys.SockRead(e.fd, l.tail)
		switch {
		case errno == sys.EAGAIN:
			return
		case errno != 0:
			l.fail(e, fmt.Errorf("read after the last echo: %w", errno))
			return
		case n == 0:
			l.finish(e)
			return
		}
		e.extra += int64(n)
	}
}

// read reads and checks what e is owed, as long as the socket has it;
// false when e failed (and is closed).
func (l *epLoop) read(e *epConn) bool {
	for {
		owed := e.wsent - e.recv
		if owed <= 0 {
			return true
		}
		want := min(owed, int64(len(l.buf)))
		n, errno := sys.SockRead(e.fd, l.buf[:want])
		switch {
		case errno == sys.EAGAIN:
			return true
		case errno != 0:
			l.fail(e, fmt.Errorf("read: %w", errno))
			return false
		case n == 0:
			l.fail(e, io.EOF)
			return false
		}
		e.got(l.buf[:n])
		if int64(n) < want && !e.hup {
			return true // the queue is empty: the next arrival is a new edge
		}
	}
}

// write issues the messages that may go (a free slot of the depth, and
// their first byte within the flight window; none once done), stamping
// them with one clock read, and sends the bytes the window allows, in one
// send for the messages of a pingpong or a pipeline whose bytes fit;
// false when e failed (and is closed).
func (l *epLoop) write(e *epConn, done bool) bool {
	r := l.r
	size, depth := r.size, r.depth
	if !done {
		var now int64
		for e.issued-e.msgs < depth && e.issued*size < e.recv+l.flight && (l.limit == 0 || e.issued < l.limit) {
			if now == 0 {
				now = metrics.Ticks()
			}
			e.stamps[e.issued%depth].Store(now)
			e.issued++
		}
	}
	end := min(e.issued*size, e.recv+l.flight)
	for e.wsent < end {
		n := min(end-e.wsent, maxWindow)
		w, errno := sys.SockWrite(e.fd, e.window(e.wsent, n))
		if errno == sys.EAGAIN {
			e.wblocked = true
			return true
		}
		if errno != 0 {
			l.fail(e, fmt.Errorf("write: %w", errno))
			return false
		}
		e.wsent += int64(w)
	}
	return true
}

// fail records e's failure, unless Run is aborting, and closes e.
func (l *epLoop) fail(e *epConn, err error) {
	if !l.r.aborting.Load() {
		e.err = err
	}
	l.finish(e)
}

// finish closes e (which takes it out of the epoll set: the loop holds
// the only descriptor of its socket) and publishes what collect reads.
func (l *epLoop) finish(e *epConn) {
	sys.Close(e.fd)
	e.fd = -1
	e.flushLat()
	e.sent.Store(e.wsent)
	l.live--
	if l.r.left.Add(-1) == 0 {
		close(l.r.done)
	}
}

// closeAll closes every connection the loop still holds, each failing
// with err (nil: Run aborted, which is no failure of the server).
func (l *epLoop) closeAll(err error) {
	for i := range l.conns {
		if e := &l.conns[i]; e.fd >= 0 {
			if err != nil {
				l.fail(e, err)
			} else {
				l.finish(e)
			}
		}
	}
}
