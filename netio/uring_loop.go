package netio

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
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
	// uringRecvRounds × Config.BufSize is a connection's receive budget:
	// the most it holds between receiving bytes and the completion of
	// the send that echoes them. What one pass receives is sent at the
	// next io_uring_enter and counts until the pass after, so the budget
	// is also the most a connection echoes per pass; epoll's loop reads
	// and echoes up to readRounds × BufSize per wakeup (holding BufSize at
	// a time). With a budget of BufSize, stream mode cost 1.2–1.6× epoll's
	// CPU per request (1000 × 1 KiB: 0.66 µs against 0.40; AMD EPYC,
	// docs/net.md): receiving a little per pass keeps each socket's
	// autotuned receive buffer small, its window closes, and every
	// receive then reopens it and runs the peer's queued transmit in the
	// server's own softirq. Twice BufSize: 0.43 µs. Four times did no
	// better within the host's noise, and twice is the bound the
	// conformance suite holds every engine to.
	uringRecvRounds = 2
)

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
	budget    int32  // most bytes a connection holds between receiving and sending
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
	// fill several with one receive, up to all the budget (once the
	// connection's receives fill buffers, see uconn.noteRecv): one large
	// receive per burst, as epoll's reads of up to BufSize in a row.
	// Receives of a quarter of BufSize cost twice the CPU on pipelined
	// 16 KiB messages: each receive opens the TCP window a little, and the
	// peer's pending data then comes in small pieces.
	l.budget = int32(uringRecvRounds * cfg.BufSize)
	l.recvLen = uint32(min(l.p.bufSize, cfg.BufSize))
	if l.recvLimit {
		l.recvLen = uint32(min(int(l.budget), uringMaxIov*l.p.bufSize))
	}
	l.maxBufs = int32(max(4, 2*((int(l.budget)+l.p.bufSize-1)/l.p.bufSize)))
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
		if l.mode == modeRun && !l.acceptArmed {
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

func (l *uloop) fixFile(sqe *uring.SQE) {
	if l.fixed {
		sqe.Flags |= uring.SQEFixedFile
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
