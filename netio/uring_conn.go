package netio

import (
	"runtime"
	"unsafe"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
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
	large      bool  // its receives fill buffers: RECVs are armed for the full length (see noteRecv)
	recvSmall  bool  // the RECV armed asks for one buffer
	smallRun   uint8 // receives in a row since, each less than a buffer
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
		c.noteRecv(res, int32(l.p.bufSize))
		l.takeBuffers(c, cqe.BufferID(), res)
	}
	if more {
		if c.large && c.recvSmall && !c.recvCancel {
			// It asks for one buffer and filled it: end it now, to be
			// armed again for the full length. Left to run, it would
			// take the whole budget in single buffers first (1.25 GiB
			// for 10,000 streams, at 3–4 times epoll's CPU per byte on
			// AMD EPYC).
			l.cancelRecv(i, c)
		}
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
			c.recv, c.recvSmall = true, false
			c.inflight++
		}
	case ucClosing:
		if c.inflight == 0 {
			l.finishClose(i, c)
		}
	}
}

// uringSmallRun is how many receives in a row of less than a buffer
// make a connection that had large ones small again.
const uringSmallRun = 255

// noteRecv sizes a connection's next RECV from what it receives. A bundle
// RECV has the kernel gather as many buffers as its length may fill
// before each receive (io_ring_buffers_peek), 32 for a 128 KiB budget,
// however few bytes are waiting: 2% of the server's CPU at 1000 × 64 B
// ping-pong (AMD EPYC, docs/net.md). So a connection's RECV asks for one
// buffer until a receive fills one, and for the full length from then on
// (the next RECV armed: a multishot RECV keeps its length, so onRecv
// cancels one that asks for a buffer and filled it); after uringSmallRun
// receives of less than a buffer in a row it asks for one again.
func (c *uconn) noteRecv(res, bufSize int32) {
	switch {
	case res >= bufSize:
		c.large, c.smallRun = true, 0
	case res > 0 && c.large:
		if c.smallRun++; c.smallRun == uringSmallRun {
			c.large, c.smallRun = false, 0
		}
	}
}

// recvSize is the most one receive of a connection's RECV takes: one
// buffer until its receives fill one (see noteRecv), then recvLen.
func (l *uloop) recvSize(c *uconn) int32 {
	if l.recvLimit && !c.large {
		return min(int32(l.recvLen), int32(l.p.bufSize))
	}
	return int32(l.recvLen)
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
	budget := l.budget - c.held
	if l.recvLimit {
		return budget >= max(1, l.budget/4)
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
	budget := l.budget - c.held
	n := l.recvSize(c)
	c.recvSmall = n < int32(l.recvLen)
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
	if reset && l.mode == modeRun && c.state == ucOpen {
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
