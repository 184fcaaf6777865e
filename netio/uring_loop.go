package netio

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

// Op tags, in the top byte of a request's user_data.
const (
	uopAccept uint8 = 1 + iota
	uopWake
	uopTimer
	uopClose
	uopCancel
	uopRecv
	uopSend
	uopShut
)

// genMask bounds a connection slot's generation (24 bits of user_data).
const genMask = 1<<24 - 1

// udata packs an op tag, a slot of the loop's connection table and the
// slot's generation into a request's user_data.
func udata(op uint8, slot int32, gen uint32) uint64 {
	return uint64(op)<<56 | uint64(gen&genMask)<<32 | uint64(uint32(slot))
}

const (
	// uringSQEntries is the SQ size: what one pass over a batch of CQEs
	// prepares (at most a few SQEs per CQE) fits, and the loop submits
	// early when it does not.
	uringSQEntries = 2048
	// uringCQEntries is the CQ size. Every connection has a RECV armed, so
	// a burst may complete many at once; the kernel keeps what overflows
	// (IORING_FEAT_NODROP) and ends multishot requests then, which the
	// loop re-arms, so this is a size for speed, not for correctness.
	uringCQEntries = 32768
	// uringBatch is how many CQEs one pass handles.
	uringBatch = 1024
	// uringMaxIov is the most queued buffers one SENDMSG sends (256 KiB
	// of 4 KiB buffers), and bounds a bundle receive (see setup).
	uringMaxIov = 64
	// uringIovBlocks is how many SENDMSGs with several buffers a loop
	// keeps in flight at once; a connection that finds none free sends
	// its first buffer alone.
	uringIovBlocks = 512
	// uringIovBlock is the room for one SENDMSG's msghdr and iovecs in
	// the loop's arena.
	uringIovBlock = 64 + uringMaxIov*16
	// uringMinDepth is the fewest buffers the loop keeps in the provided
	// buffer ring (see uloop.depth).
	uringMinDepth = 256
)

// Connection states.
const (
	ucFree    uint8 = iota // no connection in this slot
	ucOpen                 // echoing
	ucDrain                // Shutdown: receive no more, echo what is held, then SHUT_WR
	ucFinSent              // our FIN is out: drop input until the peer closes
	ucClosing              // requests cancelled: close when the last CQE is in
)

// uconn is one connection, in its loop's table. The bytes it holds are a
// queue of provided buffers, linked through the loop's per-buffer arrays.
type uconn struct {
	fd         int32  // descriptor, or fixed-file slot
	gen        uint32 // changes whenever the slot is freed
	head, tail int32  // queued buffer ids, -1 when none
	held       int32  // bytes queued: received, not yet sent
	bufs       int32  // buffers queued
	state      uint8
	inflight   uint8 // requests whose last CQE is due: RECV, SEND, SHUTDOWN
	recv       bool  // a RECV is armed (its last CQE is due)
	recvCancel bool  // and its cancellation has been asked for
	sending    bool  // a SEND or SENDMSG is in flight
	shut       bool  // a SHUTDOWN is in flight
	eof        bool  // the peer's FIN has arrived
	queued     bool  // on the loop's queue of RECVs to arm
	nonempty   bool  // the socket had more data after the last RECV ended
	turn       bool  // the RECV was armed for a share of scarce buffers and has had no data yet
	dirty      bool  // on the loop's list of connections to send for at the end of the pass
	iov        int16 // the arena block of the SENDMSG in flight, -1 when none
	stallSend  bool  // the send in flight is from stall
	sendLen    int32 // bytes the send in flight was asked to send
	// stall holds bytes the socket would not take, copied out of the
	// provided buffers (see stallConn); nil almost always.
	stall *ustall
}

// ustall is a connection's own buffer for the bytes a full socket would
// not take: from bufpool, pinned while a send reads it. Bytes [off, end)
// are still to send.
type ustall struct {
	buf      *bufpool.Buf
	off, end int32
	pin      runtime.Pinner
}

// uloop is one completion loop. Only its goroutine touches its fields,
// except st and the test counters (atomic), ringFlags (set before the
// loop reports ready) and efd (closed by Shutdown after the goroutine has
// exited).
type uloop struct {
	_  [64]byte
	st counters
	_  [64]byte

	// For tests: RECVs ended for want of buffers (ENOBUFS), CQEs dropped
	// for a stale generation, RECVs armed for a share of scarce buffers,
	// and those of them that got nothing before ENOBUFS (a turn lost to
	// another connection).
	enobufs, stale, turns, lostTurns atomic.Int64
	// ringFlags are the ring's setup flags, set before the loop reports
	// ready.
	ringFlags uint32

	s         *uringServer
	id        int
	p         uringParams
	lfd       int // -1 once closed
	efd       int
	recvLimit bool   // multishot RECVs with the byte limits (Linux 6.16), else single RECVs
	recvLen   uint32 // most bytes per receive (see setup)
	maxBufs   int32  // most buffers a connection may hold
	fixed     bool

	ring    *uring.Ring
	br      *uring.BufRing
	arena   []byte         // off-heap: iovecs and msghdrs for SENDMSG, the eventfd word, the timer
	iovBase unsafe.Pointer // uringIovBlocks blocks of a msghdr and uringMaxIov iovecs
	iovFree []int16        // free blocks
	wakeBuf []byte         // the eventfd READ's 8 bytes
	ts      *uring.Timespec

	mode   int32
	broken bool // the ring failed: give up
	conns  []uconn
	free   []int32
	nconns int

	// Per provided buffer: the next in its connection's queue, and the
	// unsent part [off, end) of its data. A buffer is in at most one
	// queue, so its id indexes these as well as the SENDMSG arena.
	segNext     []int32
	segOff      []uint32
	segEnd      []uint32
	outstanding int // buffers the kernel handed us that hold bytes to send
	// The ring is kept shallow: depth buffers at most, the rest on
	// freeBufs, a stack, so that the buffers given back last, still in
	// the CPU's cache, are the next the kernel fills. A ring holding all
	// of them would cycle through every buffer's memory (16 MiB) and miss
	// the cache on each receive; epoll's single buffer never does. depth
	// doubles when a pass sees a RECV run out of buffers (ENOBUFS) and
	// shrinks back slowly.
	freeBufs  []uint16
	inRing    int
	depth     int
	minDepth  int
	quiet     int  // passes since the last ENOBUFS
	sawNoBufs bool // a RECV ran out of buffers in this pass
	// ringBid[p] is the buffer put at ring position p (positions wrap at
	// 2^16, many times the ring's size), and ringPos[id] the position of
	// buffer id: a bundle's CQE names its first buffer, and the others
	// are those that followed it in the ring.
	ringBid []uint16
	ringPos []uint16

	// recvQ queues the connections whose RECV is to be armed, oldest
	// first: new ones, those whose RECV ended (its limit, ENOBUFS), those
	// that have room again. endPass arms them. While the free buffers
	// could run out under them all, it arms only as many as the free
	// buffers hold full receives for (at least one), each for an equal
	// share, and the rest wait for buffers to come back: so connections
	// take turns at a dry ring, rather than the first armed taking every
	// buffer each time it refills, and a turn is a full receive, not a
	// sliver of one (many small receives cost the peer's TCP more).
	recvQ []int32
	share int32   // while endPass arms the queue: the bytes each may take (0: no cap)
	dirty []int32 // connections with bytes to send, see wantSend
	// stalls are ustalls to reuse, and stalled counts the connections
	// holding one (for tests).
	stalls  []*ustall
	stalled atomic.Int64

	acceptArmed, acceptCancel bool
	timerArmed, timerCancel   bool
	wakeArmed, wakeCancel     bool
	pending                   int // loop requests in flight: ACCEPT, the wake READ, the timer, CLOSEs
	slotsUsed                 int // fixed-file slots holding a connection or waiting for its CLOSE

	cqes            []uring.CQE
	passIn, passOut int64
	dummy           uring.SQE // handed out once the ring has failed
}

func newUloop(s *uringServer, id, lfd, efd int, p uringParams, recvLimit bool) *uloop {
	return &uloop{
		s: s, id: id, p: p, lfd: lfd, efd: efd,
		recvLimit: recvLimit,
		fixed:     s.cfg.FixedFiles,
	}
}

// run sets the loop up on this goroutine's locked thread, reports to
// ready, and serves until Shutdown lets it go.
func (l *uloop) run(ready chan<- error) {
	defer l.s.wg.Done()
	// SINGLE_ISSUER and DEFER_TASKRUN tie the ring to the thread that
	// created it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := l.setup(); err != nil {
		l.teardown()
		l.closeListener()
		ready <- err
		return
	}
	l.armWake()
	l.armAccept()
	ready <- nil
	l.serve()
	if l.broken {
		l.abandon()
	} else {
		l.teardown()
	}
}

func (l *uloop) setup() error {
	cfg := l.s.cfg
	fail := func(what string, err error) error {
		// A refusal of io_uring (seccomp, sysctl) wraps ErrNotSupported;
		// a resource error (EMFILE, ENOMEM) stays itself.
		return fmt.Errorf("io_uring server on %s: %s: %w", l.s.addr, what, features.Classify(err))
	}
	sqpoll := cfg.SQPoll
	r, err := uring.New(uringSQEntries, uring.Options{
		SQPoll:       sqpoll,
		SQThreadIdle: 10, // ms the poller spins before it sleeps
		CQSize:       uringCQEntries,
		SubmitAll:    true,
		// The SQPOLL thread runs the completion work itself, and the
		// kernel refuses DEFER_TASKRUN with SQPOLL.
		CoopTaskrun:  !sqpoll,
		TaskrunFlag:  !sqpoll,
		SingleIssuer: true,
		DeferTaskrun: !sqpoll,
		NoSQArray:    true,
	})
	if err != nil {
		if sqpoll {
			return fmt.Errorf("io_uring server on %s: %w: SQPOLL: %v", l.s.addr, ErrNotSupported, err)
		}
		return fail("setup", err)
	}
	l.ring = r
	l.ringFlags = r.Flags()
	br, err := r.RegisterBufRingEmpty(0, l.p.bufEntries, l.p.bufSize)
	if err != nil {
		return fail("provided buffers", err)
	}
	l.br = br
	if l.fixed {
		if err := r.RegisterFilesSparse(uint32(l.p.fileSlots)); err != nil {
			return fail(fmt.Sprintf("fixed files (%d slots)", l.p.fileSlots), err)
		}
	}
	n := l.p.bufEntries
	iovSize := uringIovBlocks * uringIovBlock
	arena, err := sys.MmapAnon(iovSize + 64)
	if err != nil {
		return fail("mmap", err)
	}
	l.arena = arena
	l.iovBase = unsafe.Pointer(&arena[0])
	for b := range int16(uringIovBlocks) {
		l.iovFree = append(l.iovFree, b)
	}
	misc := arena[iovSize:]
	l.wakeBuf = misc[0:8:8]
	l.ts = (*uring.Timespec)(unsafe.Pointer(&misc[16]))
	*l.ts = uring.Timespec{Nsec: int64(AcceptPause)}
	l.ringBid = make([]uint16, 1<<16)
	l.ringPos = make([]uint16, n)
	l.freeBufs = make([]uint16, n)
	for i := range n {
		l.freeBufs[i] = uint16(n - 1 - i) // buffer 0 on top
	}
	l.minDepth = min(n, uringMinDepth)
	l.depth = l.minDepth
	l.segNext = make([]int32, n)
	l.segOff = make([]uint32, n)
	l.segEnd = make([]uint32, n)
	l.cqes = make([]uring.CQE, uringBatch)
	l.conns = make([]uconn, 0, 256)
	// A single RECV takes one buffer. A bundle RECV (with the limits) may
	// fill several with one receive, up to all the budget: as epoll's
	// read of up to BufSize, one large receive per burst. Receives of a
	// quarter of BufSize cost twice the CPU on pipelined 16 KiB messages:
	// each receive opens the TCP window a little, and the peer's pending
	// data then comes in small pieces.
	l.recvLen = uint32(min(l.p.bufSize, cfg.BufSize))
	if l.recvLimit {
		l.recvLen = uint32(min(cfg.BufSize, uringMaxIov*l.p.bufSize))
	}
	l.maxBufs = int32(max(4, 2*((cfg.BufSize+l.p.bufSize-1)/l.p.bufSize)))
	return nil
}

// teardown frees the ring and its memory. Every request must have been
// reaped.
func (l *uloop) teardown() {
	if l.br != nil {
		l.br.Close()
		l.br = nil
	}
	if l.ring != nil {
		l.ring.Close()
		l.ring = nil
	}
	if l.arena != nil {
		sys.Munmap(l.arena)
		l.arena = nil
	}
}

// abandon gives up after the ring failed, when requests can no longer be
// reaped: it closes the sockets and the ring (the kernel cancels what is
// in flight), and leaves the buffers and the arena mapped, since the
// kernel may still be finishing requests on them. It never happens
// unless the kernel misbehaves; the cost is the mappings.
func (l *uloop) abandon() {
	l.closeListener()
	for i := range l.conns {
		c := &l.conns[i]
		if c.state == ucFree {
			continue
		}
		if !l.fixed {
			sys.Close(int(c.fd))
		}
		if st := c.stall; st != nil {
			// Like the mappings, kept for good rather than reused.
			st.pin.Unpin()
			abandonedMu.Lock()
			abandonedStalls = append(abandonedStalls, st.buf)
			abandonedMu.Unlock()
			c.stall = nil
		}
		c.state = ucFree
		l.st.active.Add(-1)
		l.s.count.release()
	}
	l.flushCounters()
	l.ring.Close()
	l.ring, l.br, l.arena = nil, nil, nil
}

// abandonedStalls keeps the stall buffers of loops whose ring failed,
// which a send may still have been reading.
var (
	abandonedMu     sync.Mutex
	abandonedStalls []*bufpool.Buf
)

// serve is the loop: handle every CQE ready, then submit what that
// prepared and run the kernel's completion work, and wait only when that
// brought nothing.
func (l *uloop) serve() {
	for {
		n := l.ring.PeekBatch(l.cqes)
		for i := range n {
			l.handle(&l.cqes[i])
		}
		l.ring.Advance(n)
		l.endPass()
		if l.broken || l.exitReady() {
			return
		}
		if n == len(l.cqes) {
			continue // more are ready: take them first
		}
		// Submit what the pass prepared and run the completion work the
		// kernel holds, without waiting; wait only when that brought
		// nothing (see uring.Ring.SubmitNoWait).
		_, err := l.ring.SubmitNoWait()
		if err == nil && l.ring.CQReady() == 0 {
			_, err = l.ring.SubmitAndWait(1)
		}
		if err != nil {
			l.s.fail(fmt.Errorf("io_uring server on %s: %w", l.s.addr, err))
			l.broken = true
			return
		}
	}
}

// sqe returns a free SQE, submitting what is prepared when the SQ is full.
func (l *uloop) sqe() *uring.SQE {
	for tries := 0; ; tries++ {
		if s := l.ring.GetSQE(); s != nil {
			return s
		}
		if l.broken {
			return &l.dummy
		}
		if _, err := l.ring.Submit(); err != nil {
			l.s.fail(fmt.Errorf("io_uring server on %s: %w", l.s.addr, err))
			l.broken = true
			return &l.dummy
		}
		if tries > 0 {
			// SQPOLL: the poller has not taken the SQEs yet.
			runtime.Gosched()
		}
	}
}

func (l *uloop) handle(cqe *uring.CQE) {
	ud := cqe.UserData
	op := uint8(ud >> 56)
	switch op {
	case uopAccept:
		l.onAccept(cqe)
		return
	case uopWake:
		l.onWake(cqe)
		return
	case uopTimer:
		l.timerArmed, l.timerCancel = false, false
		l.pending--
		if l.mode == uringRun && !l.acceptArmed {
			l.armAccept()
		}
		return
	case uopClose:
		l.pending--
		if l.fixed {
			l.slotsUsed--
		}
		return
	case uopCancel:
		// Cancels carry CQE_SKIP_SUCCESS: only misses come here, -ENOENT
		// (the request had ended) or -EALREADY (it is ending). Its own
		// last CQE does the rest either way.
		return
	}
	slot := int32(uint32(ud))
	gen := uint32(ud>>32) & genMask
	if slot < 0 || int(slot) >= len(l.conns) || l.conns[slot].state == ucFree || l.conns[slot].gen != gen {
		l.dropStale(cqe)
		return
	}
	c := &l.conns[slot]
	switch op {
	case uopRecv:
		l.onRecv(slot, c, cqe)
	case uopSend:
		l.onSend(slot, c, cqe)
	case uopShut:
		c.shut = false
		c.inflight--
		if c.state == ucDrain {
			if cqe.Res < 0 {
				l.closeConn(slot, c, false) // the peer is gone already
			} else {
				c.state = ucFinSent
			}
		}
	default:
		l.dropStale(cqe)
		return
	}
	l.advance(slot, c)
}

// dropStale drops a CQE for a slot that has been freed (or an unknown
// tag), giving back the buffer it carries.
func (l *uloop) dropStale(cqe *uring.CQE) {
	l.stale.Add(1)
	if cqe.Flags&uring.CQEFBuffer != 0 {
		l.takeBuffers(nil, cqe.BufferID(), cqe.Res)
	}
}

func (l *uloop) onRecv(i int32, c *uconn, cqe *uring.CQE) {
	res := cqe.Res
	more := cqe.More()
	if !more {
		c.recv, c.recvCancel = false, false
		c.inflight--
		c.nonempty = cqe.Flags&uring.CQEFSockNonempty != 0
	}
	if cqe.Flags&uring.CQEFBuffer != 0 {
		c.turn = false
		l.takeBuffers(c, cqe.BufferID(), res)
	}
	if more {
		return
	}
	switch {
	case res > 0 || res == -int32(sys.ECANCELED):
		// Ended by its limit, by a full CQ, or by our cancel.
	case res == 0:
		c.eof = true
	case res == -int32(sys.ENOBUFS):
		l.enobufs.Add(1)
		l.sawNoBufs = true
		if c.turn {
			l.lostTurns.Add(1)
		}
		if c.state == ucOpen || c.state == ucFinSent {
			l.queueRecv(i, c) // armed again when buffers come back
		}
	default:
		l.closeConn(i, c, true) // ECONNRESET and friends
	}
	c.turn = false
}

func (l *uloop) onSend(i int32, c *uconn, cqe *uring.CQE) {
	c.sending = false
	c.inflight--
	if c.iov >= 0 {
		l.iovFree = append(l.iovFree, c.iov)
		c.iov = -1
	}
	res := cqe.Res
	if c.stallSend {
		c.stallSend = false
		if res > 0 {
			l.passOut += int64(res)
			c.held -= res
			if st := c.stall; st.off+res < st.end {
				st.off += res
			} else {
				l.releaseStall(c)
			}
			return
		}
		// -EPIPE, -ECONNRESET; -ECANCELED only comes while closing.
		if res != -int32(sys.ECANCELED) {
			l.closeConn(i, c, true)
		}
		return
	}
	if res > 0 {
		l.passOut += int64(res)
		l.consume(c, uint32(res))
		if res == c.sendLen {
			return
		}
	}
	switch {
	case res >= 0 || res == -int32(sys.EAGAIN):
		// The socket is full (the send tried once, MSG_DONTWAIT): copy
		// the rest out of the provided buffers and send it from there.
		l.stallConn(i, c)
	case res != -int32(sys.ECANCELED):
		// -EPIPE, -ECONNRESET; -ECANCELED only comes while closing.
		l.closeConn(i, c, true)
	}
}

// stallConn copies what a connection holds in provided buffers into a
// buffer of its own and gives the provided buffers back, when its socket
// would not take them: a peer that reads slowly must not keep buffers the
// loop's other connections receive into (epoll's loop does the same with
// what a partial send leaves). The connection receives no more until the
// copy is sent; its RECV, if armed, is cancelled.
func (l *uloop) stallConn(i int32, c *uconn) {
	n := c.held
	if c.stall != nil {
		n -= c.stall.end - c.stall.off // cannot happen: sends from the queue wait for the stall to drain
	}
	if n <= 0 || c.head < 0 {
		return
	}
	var st *ustall
	if k := len(l.stalls); k > 0 {
		st = l.stalls[k-1]
		l.stalls = l.stalls[:k-1]
	} else {
		st = new(ustall)
	}
	st.buf = bufpool.Get(int(n))
	b := st.buf.Bytes()
	st.off, st.end = 0, 0
	for x := c.head; x >= 0; {
		next := l.segNext[x]
		st.end += int32(copy(b[st.end:], l.br.Buf(uint16(x))[l.segOff[x]:l.segEnd[x]]))
		l.recycle(uint16(x))
		x = next
	}
	c.head, c.tail, c.bufs = -1, -1, 0
	st.pin.Pin(&b[0])
	c.stall = st
	l.stalled.Add(1)
	if c.recv && !c.recvCancel {
		l.cancelRecv(i, c)
	}
}

// releaseStall frees a connection's stall buffer once sent, or at its
// close (when no send is in flight).
func (l *uloop) releaseStall(c *uconn) {
	st := c.stall
	if st == nil {
		return
	}
	st.pin.Unpin()
	st.buf.Release()
	st.buf = nil
	l.stalls = append(l.stalls, st)
	c.stall = nil
	l.stalled.Add(-1)
}

// advance moves a connection on after an event.
func (l *uloop) advance(i int32, c *uconn) {
	switch c.state {
	case ucOpen:
		l.wantSend(i, c)
		if c.eof {
			// The peer half-closed: when all it sent is echoed, close,
			// which sends our FIN after the data.
			if c.head < 0 && c.stall == nil && !c.sending {
				l.closeConn(i, c, false)
			}
			return
		}
		if c.recv {
			if !c.recvCancel && l.overBudget(c) {
				l.cancelRecv(i, c)
			}
			return
		}
		l.armRecv(i, c)
	case ucDrain:
		l.wantSend(i, c)
		if c.head >= 0 || c.stall != nil || c.sending || c.recv || c.shut {
			return
		}
		if c.eof {
			l.closeConn(i, c, false)
			return
		}
		sqe := l.sqe()
		sqe.PrepShutdown(c.fd, sys.SHUT_WR, udata(uopShut, i, c.gen))
		l.fixFile(sqe)
		c.shut = true
		c.inflight++
	case ucFinSent:
		if c.eof {
			l.closeConn(i, c, false)
			return
		}
		if !c.recv && !c.queued {
			// Read and drop until the peer closes.
			sqe := l.sqe()
			sqe.PrepRecvMultishot(c.fd, l.br.Group(), 0, udata(uopRecv, i, c.gen))
			l.fixFile(sqe)
			c.recv = true
			c.inflight++
		}
	case ucClosing:
		if c.inflight == 0 {
			l.finishClose(i, c)
		}
	}
}

func (l *uloop) fixFile(sqe *uring.SQE) {
	if l.fixed {
		sqe.Flags |= uring.SQEFixedFile
	}
}

// overBudget reports whether a connection's multishot RECV must be
// cancelled because the connection holds as many buffers as it may (a
// peer that trickles bytes one at a time would otherwise take a buffer
// per byte). The byte budget needs no cancel: the RECV's limit enforces
// it.
func (l *uloop) overBudget(c *uconn) bool { return c.bufs >= l.maxBufs }

// armRecv queues an echoing connection's RECV to be armed at the end of
// the pass, if it has room. With the RECV limits it is a multishot bundle
// RECV, armed when at least a quarter of BufSize is free. Without them it
// is a single RECV of one buffer, armed whenever a buffer's worth is
// free: a multishot RECV could not be stopped in time, since the kernel
// fills buffers for as long as data is waiting during an io_uring_enter
// (hundreds of KiB), before any cancel is seen. Either way, at most half
// the buffers it may hold.
func (l *uloop) armRecv(i int32, c *uconn) {
	if l.recvRoom(c) {
		l.queueRecv(i, c)
	}
}

func (l *uloop) recvRoom(c *uconn) bool {
	if c.recv || c.queued || c.eof || c.stall != nil || c.bufs > l.maxBufs/2 {
		return false
	}
	bufSize := int32(l.s.cfg.BufSize)
	budget := bufSize - c.held
	if l.recvLimit {
		return budget >= max(1, bufSize/4)
	}
	return budget >= int32(l.recvLen)
}

func (l *uloop) queueRecv(i int32, c *uconn) {
	c.queued = true
	l.recvQ = append(l.recvQ, i)
}

// startRecv arms a connection's RECV (from endPass), for at most
// l.share bytes when that is set.
func (l *uloop) startRecv(i int32, c *uconn) {
	if c.state != ucOpen || !l.recvRoom(c) {
		return
	}
	budget := int32(l.s.cfg.BufSize) - c.held
	n := int32(l.recvLen)
	ud := udata(uopRecv, i, c.gen)
	sqe := l.sqe()
	if l.recvLimit {
		sqe.PrepRecvMultishot(c.fd, l.br.Group(), 0, ud)
		sqe.IOPrio |= uring.RecvsendBundle
		// A bundle RECV cuts each receive to the limit left: never
		// more than budget in all, and from the queue no more than its
		// share of the free buffers either.
		limit := budget
		if l.share > 0 {
			n = min(n, l.share)
			limit = min(limit, l.share)
			c.turn = true
			l.turns.Add(1)
		}
		sqe.SetRecvLen(uint32(n))
		sqe.SetRecvLimit(uint32(limit))
	} else {
		if l.share > 0 {
			c.turn = true
			l.turns.Add(1)
		}
		sqe.PrepRecvSelect(c.fd, l.br.Group(), uint32(n), 0, ud)
		if !c.nonempty {
			// The last receive emptied the socket: wait for data
			// rather than try first.
			sqe.IOPrio |= uring.RecvsendPollFirst
		}
	}
	l.fixFile(sqe)
	c.recv = true
	c.inflight++
}

func (l *uloop) cancelRecv(i int32, c *uconn) {
	sqe := l.sqe()
	sqe.PrepCancel(udata(uopRecv, i, c.gen), 0, udata(uopCancel, i, c.gen))
	sqe.Flags |= uring.SQECQESkipSuccess
	c.recvCancel = true
}

// takeBuffers takes the buffers of a RECV's CQE: the first is bid, and a
// bundle of res bytes runs on through the buffers after it in the ring.
// Their bytes are counted and queued to send, or counted and dropped
// after our FIN or while closing. A stale CQE's buffers (c nil) are
// dropped uncounted.
func (l *uloop) takeBuffers(c *uconn, bid uint16, res int32) {
	keep := false
	if c != nil && res > 0 {
		l.passIn += int64(res)
		keep = c.state == ucOpen || c.state == ucDrain
	}
	size := int32(l.p.bufSize)
	p := l.ringPos[bid]
	// A CQE with a buffer and no data cannot happen; its buffer goes back.
	for rest := max(res, 1); rest > 0; rest -= size {
		id := l.ringBid[p]
		p++
		l.inRing--
		l.outstanding++
		if keep {
			l.enqueue(c, id, uint32(min(rest, size)))
		} else {
			l.recycle(id)
		}
	}
}

// enqueue queues n bytes received into buffer bid for sending.
func (l *uloop) enqueue(c *uconn, bid uint16, n uint32) {
	b := int32(bid)
	l.segOff[b], l.segEnd[b], l.segNext[b] = 0, n, -1
	if c.tail >= 0 {
		l.segNext[c.tail] = b
	} else {
		c.head = b
	}
	c.tail = b
	c.held += int32(n)
	c.bufs++
}

// consume drops n sent bytes from the head of the queue, giving fully
// sent buffers back.
func (l *uloop) consume(c *uconn, n uint32) {
	for n > 0 && c.head >= 0 {
		b := c.head
		rest := l.segEnd[b] - l.segOff[b]
		if n < rest {
			l.segOff[b] += n
			c.held -= int32(n)
			return
		}
		n -= rest
		c.held -= int32(rest)
		c.bufs--
		c.head = l.segNext[b]
		if c.head < 0 {
			c.tail = -1
		}
		l.recycle(uint16(b))
	}
}

// recycle takes a buffer back from a connection; endPass gives it to the
// kernel.
func (l *uloop) recycle(bid uint16) {
	l.freeBufs = append(l.freeBufs, bid)
	l.outstanding--
}

// refill tops the ring up to its depth from freeBufs, the buffers given
// back last first, and adapts the depth.
func (l *uloop) refill() {
	switch {
	case l.sawNoBufs:
		l.depth = min(l.p.bufEntries, 2*l.depth)
		l.sawNoBufs, l.quiet = false, 0
	case l.depth > l.minDepth:
		if l.quiet++; l.quiet >= 64 {
			l.depth = max(l.minDepth, l.depth-l.depth/8)
			l.quiet = 0
		}
	}
	if l.inRing >= l.depth || len(l.freeBufs) == 0 {
		return
	}
	for l.inRing < l.depth && len(l.freeBufs) > 0 {
		bid := l.freeBufs[len(l.freeBufs)-1]
		l.freeBufs = l.freeBufs[:len(l.freeBufs)-1]
		p := l.br.Position()
		l.ringBid[p], l.ringPos[bid] = bid, p
		l.br.Recycle(bid)
		l.inRing++
	}
	l.br.Publish()
}

// wantSend notes that a connection has bytes to send and no SEND in
// flight; endPass sends them. Waiting for the end of the pass costs no
// latency (nothing reaches the kernel before the pass's io_uring_enter)
// and lets every chunk that arrived in one batch go in one SENDMSG: a
// 16 KiB message arrives as four 4 KiB receives in a row, and sending
// each as it came would make four TCP segments of one.
func (l *uloop) wantSend(i int32, c *uconn) {
	if c.sending || c.dirty || c.head < 0 && c.stall == nil {
		return
	}
	c.dirty = true
	l.dirty = append(l.dirty, i)
}

// startSend sends what the connection holds: its stall buffer if it has
// one, else the head of its queue, from the provided buffers themselves
// (one buffer with SEND, several with SENDMSG). A send from the provided
// buffers tries once (MSG_DONTWAIT) rather than wait for room while it
// holds them: what the socket does not take goes to a stall buffer
// (onSend). A send from the stall buffer waits, and with MSG_WAITALL the
// kernel finishes it rather than return it short.
func (l *uloop) startSend(i int32, c *uconn) {
	c.dirty = false
	if c.sending {
		return
	}
	ud := udata(uopSend, i, c.gen)
	if st := c.stall; st != nil {
		sqe := l.sqe()
		sqe.PrepSend(c.fd, st.buf.Bytes()[st.off:st.end], sys.MSG_NOSIGNAL|sys.MSG_WAITALL, ud)
		l.fixFile(sqe)
		c.sending, c.stallSend = true, true
		c.inflight++
		return
	}
	if c.head < 0 {
		return
	}
	const flags = sys.MSG_NOSIGNAL | sys.MSG_DONTWAIT
	b := c.head
	sqe := l.sqe()
	if l.segNext[b] < 0 || len(l.iovFree) == 0 {
		sqe.PrepSend(c.fd, l.br.Buf(uint16(b))[l.segOff[b]:l.segEnd[b]], flags, ud)
		c.sendLen = int32(l.segEnd[b] - l.segOff[b])
	} else {
		// The msghdr and iovecs live in an arena block that the
		// connection keeps until this send's CQE.
		blk := l.iovFree[len(l.iovFree)-1]
		l.iovFree = l.iovFree[:len(l.iovFree)-1]
		c.iov = blk
		base := unsafe.Add(l.iovBase, uintptr(blk)*uringIovBlock)
		msg := (*sys.Msghdr)(base)
		iov := unsafe.Slice((*sys.Iovec)(unsafe.Add(base, 64)), uringMaxIov)
		n := 0
		c.sendLen = 0
		for x := b; x >= 0 && n < uringMaxIov; x = l.segNext[x] {
			seg := l.br.Buf(uint16(x))[l.segOff[x]:l.segEnd[x]]
			iov[n].Base = &seg[0]
			iov[n].SetLen(len(seg))
			c.sendLen += int32(len(seg))
			n++
		}
		*msg = sys.Msghdr{Iov: &iov[0]}
		msg.SetIovlen(n)
		sqe.PrepSendmsg(c.fd, msg, flags, ud)
	}
	l.fixFile(sqe)
	c.sending = true
	c.inflight++
}

// closeConn starts closing a connection: it cancels the requests in
// flight, and the last of their CQEs finishes the close. reset says the
// connection ended in an error, counted unless the server is shutting
// down or the connection was.
func (l *uloop) closeConn(i int32, c *uconn, reset bool) {
	if c.state == ucClosing || c.state == ucFree {
		return
	}
	if reset && l.mode == uringRun && c.state == ucOpen {
		l.st.resets.Add(1)
	}
	c.state = ucClosing
	c.queued = false
	if c.inflight == 0 {
		l.finishClose(i, c)
		return
	}
	sqe := l.sqe()
	sqe.PrepCancelFd(c.fd, l.fixed, udata(uopCancel, i, c.gen))
	sqe.Flags |= uring.SQECQESkipSuccess
}

// finishClose gives a closed connection's buffers back, closes its
// socket with a CLOSE request and frees the slot. Nothing of it is in
// flight any more.
func (l *uloop) finishClose(i int32, c *uconn) {
	l.releaseStall(c)
	for b := c.head; b >= 0; {
		next := l.segNext[b]
		l.recycle(uint16(b))
		b = next
	}
	l.closeFd(c.fd)
	*c = uconn{gen: (c.gen + 1) & genMask, head: -1, tail: -1, iov: -1}
	l.free = append(l.free, i)
	l.nconns--
	// Bytes first: a reader that sees the connection gone sees its bytes.
	l.flushCounters()
	l.st.active.Add(-1)
	l.s.count.release()
}

// closeFd closes an accepted socket (or fixed-file slot) with a CLOSE
// request.
func (l *uloop) closeFd(fd int32) {
	sqe := l.sqe()
	if l.fixed {
		sqe.PrepCloseDirect(uint32(fd), udata(uopClose, 0, 0))
	} else {
		sqe.PrepClose(fd, udata(uopClose, 0, 0))
	}
	l.pending++
}

func (l *uloop) onAccept(cqe *uring.CQE) {
	more := cqe.More()
	if !more {
		l.acceptArmed, l.acceptCancel = false, false
		l.pending--
	}
	res := cqe.Res
	if res >= 0 && l.fixed {
		l.slotsUsed++
	}
	backoff := false
	switch {
	case res >= 0 && l.mode != uringRun:
		l.closeFd(res) // accepted as Shutdown began
	case res >= 0 && !l.s.count.reserve():
		// Count before the close, so that a client that sees the close
		// also sees the count.
		l.st.refused.Add(1)
		l.closeFd(res)
	case res >= 0:
		l.newConn(res)
	case res == -int32(sys.EMFILE) || res == -int32(sys.ENFILE) || res == -int32(sys.ENOBUFS) || res == -int32(sys.ENOMEM):
		// Out of descriptors (or of fixed-file slots: ENFILE) or
		// memory: count it, say so, and stop accepting for a moment
		// rather than fail again at once. Open connections are served
		// meanwhile, and may free some.
		l.st.acceptErrs.Add(1)
		backoff = true
		why := error(syscall.Errno(-res))
		if l.fixed && res == -int32(sys.ENFILE) && l.slotsUsed >= l.p.fileSlots {
			// The file table is full: the kernel took the connection
			// from the queue, found no slot and closed it.
			l.st.refused.Add(1)
			why = fmt.Errorf("the fixed-file table is full (ENFILE: %d slots, MaxConns+64 or RLIMIT_NOFILE, whichever is lower): the kernel closed the connection", l.p.fileSlots)
		}
		l.s.alog.Failed(why)
		if more && !l.acceptCancel {
			l.cancelAccept()
		}
	}
	if more || l.acceptArmed {
		return
	}
	switch {
	case l.mode != uringRun:
		l.closeListener()
	case backoff:
		if !l.timerArmed {
			sqe := l.sqe()
			sqe.PrepTimeout(l.ts, 0, 0, udata(uopTimer, 0, 0))
			l.timerArmed = true
			l.pending++
		}
	case !l.timerArmed:
		// ECANCELED, ECONNABORTED, a full CQ: accept again.
		l.armAccept()
	}
}

func (l *uloop) armAccept() {
	sqe := l.sqe()
	if l.fixed {
		// A direct descriptor cannot be close-on-exec: it is in no fd
		// table.
		sqe.PrepAcceptDirect(int32(l.lfd), sys.SOCK_NONBLOCK, true, udata(uopAccept, 0, 0))
	} else {
		sqe.PrepAccept(int32(l.lfd), sys.SOCK_NONBLOCK|sys.SOCK_CLOEXEC, true, udata(uopAccept, 0, 0))
	}
	l.acceptArmed = true
	l.pending++
}

func (l *uloop) cancelAccept() {
	sqe := l.sqe()
	sqe.PrepCancel(udata(uopAccept, 0, 0), 0, udata(uopCancel, 0, 0))
	sqe.Flags |= uring.SQECQESkipSuccess
	l.acceptCancel = true
}

func (l *uloop) closeListener() {
	if l.lfd >= 0 {
		sys.Close(l.lfd)
		l.lfd = -1
	}
}

func (l *uloop) newConn(fd int32) {
	var i int32
	if n := len(l.free); n > 0 {
		i = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		i = int32(len(l.conns))
		l.conns = append(l.conns, uconn{head: -1, tail: -1, iov: -1})
	}
	c := &l.conns[i]
	c.fd = fd
	c.state = ucOpen
	l.nconns++
	l.st.accepted.Add(1)
	l.st.active.Add(1)
	l.armRecv(i, c)
}

func (l *uloop) armWake() {
	sqe := l.sqe()
	sqe.PrepRead(int32(l.efd), l.wakeBuf, uring.NoOffset, udata(uopWake, 0, 0))
	l.wakeArmed = true
	l.pending++
}

func (l *uloop) onWake(cqe *uring.CQE) {
	l.wakeArmed = false
	l.pending--
	if cqe.Res == -int32(sys.ECANCELED) || l.wakeCancel {
		return // the loop is exiting
	}
	l.setMode(l.s.mode.Load())
	l.armWake()
}

// setMode acts on a mode from Shutdown: drain stops accepting and starts
// draining every connection; force closes everything.
func (l *uloop) setMode(m int32) {
	if m <= l.mode {
		return
	}
	l.mode = m
	if l.acceptArmed {
		if !l.acceptCancel {
			l.cancelAccept() // its last CQE closes the listener
		}
	} else {
		l.closeListener()
	}
	if l.timerArmed && !l.timerCancel {
		sqe := l.sqe()
		sqe.PrepCancel(udata(uopTimer, 0, 0), 0, udata(uopCancel, 0, 0))
		sqe.Flags |= uring.SQECQESkipSuccess
		l.timerCancel = true
	}
	for i := range l.conns {
		c := &l.conns[i]
		switch {
		case c.state == ucFree || c.state == ucClosing:
		case m == uringForce:
			l.closeConn(int32(i), c, false)
		case c.state == ucOpen:
			c.state = ucDrain
			if c.recv && !c.recvCancel {
				l.cancelRecv(int32(i), c)
			}
			l.advance(int32(i), c)
		}
	}
}

// endPass ends a pass over a batch of CQEs: it arms the queued RECVs
// (see recvQ), sends what the pass received (see wantSend), hands the
// buffers given back to the kernel, and publishes the byte counts.
func (l *uloop) endPass() {
	l.refill()
	if free := int32(l.p.bufEntries - l.outstanding); len(l.recvQ) > 0 && free > 0 {
		size := int32(l.p.bufSize)
		k := int32(len(l.recvQ))
		if perRecv := (int32(l.recvLen) + size - 1) / size; k*perRecv > free {
			k = min(k, max(1, free/perRecv))
			l.share = max(1, free/k) * size
		}
		taken := 0
		for armed := int32(0); taken < len(l.recvQ) && armed < k; {
			i := l.recvQ[taken]
			taken++
			c := &l.conns[i]
			if !c.queued {
				continue // closed meanwhile
			}
			c.queued = false
			armed++
			if c.state == ucFinSent {
				l.advance(i, c) // the RECV that drops input
			} else {
				l.startRecv(i, c)
			}
		}
		l.share = 0
		l.recvQ = l.recvQ[:copy(l.recvQ, l.recvQ[taken:])]
	}
	for _, i := range l.dirty {
		c := &l.conns[i]
		if !c.dirty {
			continue // closed meanwhile
		}
		c.dirty = false
		if c.state == ucOpen || c.state == ucDrain {
			l.startSend(i, c)
		}
	}
	l.dirty = l.dirty[:0]
	l.flushCounters()
}

func (l *uloop) flushCounters() {
	if l.passIn != 0 {
		l.st.bytesIn.Add(l.passIn)
		l.passIn = 0
	}
	if l.passOut != 0 {
		l.st.bytesOut.Add(l.passOut)
		l.passOut = 0
	}
}

// exitReady reports whether the loop may exit: Shutdown has begun, every
// connection and the listener are closed, and every request has been
// reaped. On the way there it cancels the eventfd READ.
func (l *uloop) exitReady() bool {
	if l.mode == uringRun || l.nconns > 0 || l.lfd >= 0 {
		return false
	}
	if l.wakeArmed && !l.wakeCancel {
		sqe := l.sqe()
		sqe.PrepCancel(udata(uopWake, 0, 0), 0, udata(uopCancel, 0, 0))
		sqe.Flags |= uring.SQECQESkipSuccess
		l.wakeCancel = true
	}
	return l.pending == 0
}
