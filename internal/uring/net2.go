package uring

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// What the io_uring echo server (netio) needs beyond net.go: a timer for
// backing off an accept that ran out of descriptors; a single recv with
// buffer select, byte limits on a multishot recv and recv bundles, for
// exact backpressure and few receives per message; a buffer ring the
// caller fills itself; and a submit that never waits, outside the Go
// runtime's syscall bookkeeping.

// Timespec is struct __kernel_timespec, for PrepTimeout.
type Timespec struct {
	Sec  int64
	Nsec int64
}

// PrepTimeout prepares a timer (TIMEOUT, Linux 5.4) that completes with
// -ETIME after ts, or earlier with Res 0 once count other requests have
// completed (count 0: a pure timer). flags are IORING_TIMEOUT_* (0: ts is
// relative). ts is read when the kernel takes the SQE (at io_uring_enter,
// or later with SQPOLL), so it must stay valid until the CQE like any other
// memory an SQE points at. Cancel it with PrepCancel by its user_data: it
// then completes with -ECANCELED.
func (s *SQE) PrepTimeout(ts *Timespec, count uint32, flags uint32, userData uint64) {
	s.prep(OpTimeout, -1, uint64(uintptr(unsafe.Pointer(ts))), 1, uint64(count), userData)
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

// Position returns where the next Recycle puts its buffer in the ring:
// the entry index, counting from the ring's start and wrapping at 2^16.
// A buffer's position is its place in the order the kernel takes buffers.
func (b *BufRing) Position() uint16 { return b.tail }

// RegisterBufRingEmpty is RegisterBufRing without handing any buffer to
// the kernel: the caller gives buffers with Recycle and Publish as it sees
// fit. A caller that keeps the ring shallow, and gives back the buffers it
// used last first, has the kernel fill buffers still in the CPU's cache,
// where a full ring would cycle through all of its buffers' memory.
func (r *Ring) RegisterBufRingEmpty(group uint16, entries int, size int) (*BufRing, error) {
	if entries <= 0 || entries > MaxBufRingEntries || entries&(entries-1) != 0 {
		return nil, fmt.Errorf("io_uring buffer ring: %d entries, want a power of two up to %d", entries, MaxBufRingEntries)
	}
	if size <= 0 || size > 1<<30 {
		return nil, fmt.Errorf("io_uring buffer ring: buffer size %d", size)
	}
	ringMem, err := sys.MmapAnon(entries * int(unsafe.Sizeof(bufEntry{})))
	if err != nil {
		return nil, fmt.Errorf("io_uring buffer ring: %w", err)
	}
	bufMem, err := sys.MmapAnon(entries * size)
	if err != nil {
		sys.Munmap(ringMem)
		return nil, fmt.Errorf("io_uring buffer ring: %w", err)
	}
	b := &BufRing{r: r, group: group, mask: uint16(entries - 1), size: size, ringMem: ringMem, bufMem: bufMem}
	reg := bufReg{RingAddr: uint64(uintptr(unsafe.Pointer(&ringMem[0]))), RingEntries: uint32(entries), Bgid: group}
	var pin runtime.Pinner
	pin.Pin(&reg)
	_, err = r.register(registerPbufRing, unsafe.Pointer(&reg), 1)
	pin.Unpin()
	if err != nil {
		sys.Munmap(ringMem)
		sys.Munmap(bufMem)
		return nil, registerError("buffer ring", err)
	}
	return b, nil
}

// SubmitNoWait hands the prepared SQEs to the kernel and runs pending
// completion work (the task work of a DEFER_TASKRUN ring, which produces
// CQEs), in one io_uring_enter that never waits, made outside the Go
// runtime's syscall bookkeeping (sys.IoUringEnterNoWait). An event loop
// calls it after each batch, and waits with SubmitAndWait only when it
// found nothing to do: so the batches' long but bounded io_uring_enter
// calls do not make the runtime hand the loop's P to another thread. It
// returns the number of SQEs consumed. It makes no system call when
// nothing is prepared and the kernel has flagged no completion work
// (IORING_SQ_TASKRUN, with the TaskrunFlag option). With SQPOLL it only
// wakes the poller if it sleeps.
func (r *Ring) SubmitNoWait() (int, error) {
	pending := r.flush()
	sqpoll := r.params.Flags&SetupSQPoll != 0
	if pending == 0 && !r.cqNeedsEnter() {
		return 0, nil // nothing to submit, no completion work waiting
	}
	flags := EnterGetEvents
	toSubmit := pending
	if sqpoll {
		toSubmit = 0
		flags = 0
		if pending > 0 && atomic.LoadUint32(r.sqFlags)&SQNeedWakeup != 0 {
			flags = EnterSQWakeup
		}
		if flags == 0 && !r.cqNeedsEnter() {
			return int(pending), nil
		}
		if r.cqNeedsEnter() {
			flags |= EnterGetEvents
		}
	}
	consumed := 0
	for {
		r.syscalls++
		n, err := sys.IoUringEnterNoWait(r.fd, toSubmit, flags)
		switch err {
		case nil:
			if sqpoll {
				return int(pending), nil
			}
			return consumed + n, nil
		case sys.EINTR:
			if !sqpoll {
				left := r.sqeTail - atomic.LoadUint32(r.sqHead)
				consumed += int(toSubmit - left)
				toSubmit = left
			}
			flags &^= EnterSQWakeup
			continue
		case sys.EAGAIN, sys.EBUSY:
			// Short of resources, or the CQ is backed up: reap and come
			// back; what was not consumed stays in the SQ.
			if !sqpoll {
				left := r.sqeTail - atomic.LoadUint32(r.sqHead)
				consumed += int(toSubmit - left)
			}
			return consumed, nil
		}
		return consumed, enterError(err)
	}
}
