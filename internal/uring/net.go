package uring

import (
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// Socket requests. The memory contract of sqe.go holds: buffers and
// msghdrs (and the iovecs they point at) stay valid until the CQE.

// Flags in SQE.IOPrio for ACCEPT, RECV and SEND.
const (
	// AcceptMultishot: one ACCEPT posts a CQE (with CQEFMore) per
	// connection until it fails or is cancelled (Linux 5.19).
	AcceptMultishot uint16 = 1 << 0
	// RecvsendPollFirst: arm poll before trying the I/O, for a socket
	// known to be empty (Linux 5.19).
	RecvsendPollFirst uint16 = 1 << 0
	// RecvMultishot: one RECV with a buffer group posts a CQE per
	// arriving chunk, each in a buffer of its own, until it fails, the
	// peer closes (Res 0) or the group runs dry (-ENOBUFS) (Linux 6.0).
	RecvMultishot uint16 = 1 << 1
)

// CQE flags (CQE.Flags).
const (
	CQEFBuffer       uint32 = 1 << 0 // a provided buffer was used; its id is Flags>>CQEBufferShift
	CQEFMore         uint32 = 1 << 1 // a multishot request stays armed: more CQEs will come
	CQEFSockNonempty uint32 = 1 << 2 // the socket had more data after this receive
	CQEFNotif        uint32 = 1 << 3 // a zero-copy send's notification: its buffer is free
	CQEBufferShift          = 16
)

// FileIndexAlloc asks ACCEPT (and OPENAT) with a direct descriptor to
// pick a free slot of the registered file table itself; Res is the slot.
const FileIndexAlloc uint32 = ^uint32(0)

// BufferID returns the provided-buffer id of a CQE with CQEFBuffer.
func (c *CQE) BufferID() uint16 { return uint16(c.Flags >> CQEBufferShift) }

// More reports whether a multishot request stays armed after this CQE.
func (c *CQE) More() bool { return c.Flags&CQEFMore != 0 }

// PrepAccept prepares accept4(fd, NULL, NULL, flags) (ACCEPT, Linux 5.5);
// Res is the new fd. The peer address is not asked for. With multishot
// (Linux 5.19) it stays armed and posts a CQE per connection.
func (s *SQE) PrepAccept(fd int32, flags uint32, multishot bool, userData uint64) {
	s.prep(OpAccept, fd, 0, 0, 0, userData)
	s.OpFlags = flags
	if multishot {
		s.IOPrio |= AcceptMultishot
	}
}

// PrepAcceptDirect is PrepAccept into the registered file table: Res is
// the slot the kernel picked (FileIndexAlloc, Linux 5.19), to be used with
// SQEFixedFile and closed with PrepCloseDirect.
func (s *SQE) PrepAcceptDirect(fd int32, flags uint32, multishot bool, userData uint64) {
	s.PrepAccept(fd, flags, multishot, userData)
	s.FileIndex = FileIndexAlloc
}

// PrepRecv prepares recv(fd, b, flags) (RECV, Linux 5.6).
func (s *SQE) PrepRecv(fd int32, b []byte, flags uint32, userData uint64) {
	s.prep(OpRecv, fd, addrOf(b), uint32(len(b)), 0, userData)
	s.OpFlags = flags
}

// PrepRecvMultishot prepares a multishot recv on fd into buffers of
// group (a BufRing), Linux 6.0. Each CQE carries CQEFBuffer and the
// buffer's id; CQEFMore says it stays armed. Without CQEFMore it has
// ended: Res 0 is the peer's FIN, -ENOBUFS means the group ran dry, and
// the caller re-arms (after returning buffers) if it wants more.
func (s *SQE) PrepRecvMultishot(fd int32, group uint16, flags uint32, userData uint64) {
	s.prep(OpRecv, fd, 0, 0, 0, userData)
	s.OpFlags = flags
	s.IOPrio = RecvMultishot
	s.Flags = SQEBufferSelect
	s.BufIndex = group
}

// PrepSend prepares send(fd, b, flags) (SEND, Linux 5.6). Add
// sys.MSG_NOSIGNAL to flags, or a reset peer raises SIGPIPE. Res may be
// short of len(b) on a non-blocking socket: send the rest.
func (s *SQE) PrepSend(fd int32, b []byte, flags uint32, userData uint64) {
	s.prep(OpSend, fd, addrOf(b), uint32(len(b)), 0, userData)
	s.OpFlags = flags
}

// PrepSendmsg prepares sendmsg(fd, msg, flags) (SENDMSG, Linux 5.3): one
// request for a response made of several buffers (msg's iovecs).
func (s *SQE) PrepSendmsg(fd int32, msg *sys.Msghdr, flags uint32, userData uint64) {
	s.prep(OpSendmsg, fd, uint64(uintptr(unsafe.Pointer(msg))), 1, 0, userData)
	s.OpFlags = flags
}

// PrepWrite prepares write(fd, b) at off (WRITE, Linux 5.6); off
// ^uint64(0) means the file position (and is what a socket or pipe wants).
func (s *SQE) PrepWrite(fd int32, b []byte, off uint64, userData uint64) {
	s.prep(OpWrite, fd, addrOf(b), uint32(len(b)), off, userData)
}

// NoOffset is the offset that means "none" for SPLICE and "the file
// position" for READ and WRITE.
const NoOffset = ^uint64(0)

// PrepSplice prepares splice(fdIn, offIn, fdOut, offOut, n, flags)
// (SPLICE, Linux 5.7). One side must be a pipe; NoOffset for a side
// without an offset (a pipe or socket).
func (s *SQE) PrepSplice(fdIn int32, offIn uint64, fdOut int32, offOut uint64, n uint32, flags uint32, userData uint64) {
	s.prep(OpSplice, fdOut, offIn, n, offOut, userData)
	s.OpFlags = flags
	s.FileIndex = uint32(fdIn) // splice_fd_in
}

// PrepShutdown prepares shutdown(fd, how) (SHUTDOWN, Linux 5.11).
func (s *SQE) PrepShutdown(fd int32, how int, userData uint64) {
	s.prep(OpShutdown, fd, 0, uint32(how), 0, userData)
}

// PrepCancelFd prepares the cancellation of every request on fd
// (ASYNC_CANCEL with CancelFd|CancelAll, Linux 5.19); fixed says fd is a
// registered file slot.
func (s *SQE) PrepCancelFd(fd int32, fixed bool, userData uint64) {
	flags := CancelFd | CancelAll
	if fixed {
		flags |= CancelFdFixed
	}
	s.prep(OpAsyncCancel, fd, 0, 0, 0, userData)
	s.OpFlags = flags
}

// PrepRecvSelect prepares one recv(fd) of at most n bytes into a buffer
// the kernel picks from group, a BufRing (RECV with IOSQE_BUFFER_SELECT,
// Linux 5.19 for buffer rings); n 0 means a whole buffer. The CQE carries
// CQEFBuffer and the buffer's id, and CQEFSockNonempty when more data was
// waiting. Unlike a multishot recv it takes one buffer at most, so a
// caller that must bound what it holds knows what one request can bring.
// RecvsendPollFirst in IOPrio skips the first attempt, for a socket known
// to be empty.
func (s *SQE) PrepRecvSelect(fd int32, group uint16, n uint32, flags uint32, userData uint64) {
	s.prep(OpRecv, fd, 0, n, 0, userData)
	s.OpFlags = flags
	s.Flags = SQEBufferSelect
	s.BufIndex = group
}

// SetRecvLen caps each receive of a multishot recv (PrepRecvMultishot) at
// n bytes (sqe->len; 0: a whole buffer, or with RecvsendBundle as many
// buffers as are ready).
//
// SetRecvLimit ends a multishot recv once it has received limit bytes
// over its life (sqe->optlen; 0: no limit); its last CQE comes without
// CQEFMore and the caller re-arms when it wants more. With RecvsendBundle
// each receive is cut to the limit left, so the request takes limit bytes
// at most. Without, the receive that reaches the limit is not cut short:
// the request takes at most limit+n-1 bytes, n being the receive size.
//
// Both are recent (the multishot receive caps of Linux 6.16); older
// kernels fail such a request with -EINVAL, so probe before relying on
// them.
func (s *SQE) SetRecvLen(n uint32) { s.Len = n }

// SetRecvLimit: see SetRecvLen.
func (s *SQE) SetRecvLimit(limit uint32) { s.FileIndex = limit }

// RecvsendBundle (IORING_RECVSEND_BUNDLE, Linux 6.10) in SQE.IOPrio lets
// one receive from a buffer group fill several buffers: the CQE names
// the first, and the data runs on through the buffers that follow it in
// the ring, each filled whole but the last. A caller follows the run by
// noting each buffer's Position when it hands it over: the kernel takes
// buffers in position order.
const RecvsendBundle uint16 = 1 << 4
