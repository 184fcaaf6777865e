package uring

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// GetSQE returns the next free SQE, or nil when the SQ is full (submit and
// reap, then try again). The SQE holds whatever was there before: prepare
// it with one of the Prep methods, which set every field. It is handed to
// the kernel at the next Submit.
func (r *Ring) GetSQE() *SQE {
	head := atomic.LoadUint32(r.sqHead)
	if r.sqeTail-head >= r.sqN {
		return nil
	}
	sqe := (*SQE)(unsafe.Add(unsafe.Pointer(r.sqes), uintptr(r.sqeTail&r.sqMask)*unsafe.Sizeof(SQE{})))
	r.sqeTail++
	return sqe
}

// SQReady is the number of SQEs prepared but not yet consumed by the kernel.
func (r *Ring) SQReady() uint32 { return r.sqeTail - atomic.LoadUint32(r.sqHead) }

// SQSpace is the number of SQEs GetSQE can still hand out.
func (r *Ring) SQSpace() uint32 { return r.sqN - r.SQReady() }

// flush publishes the prepared SQEs to the kernel and returns how many are
// waiting to be consumed.
func (r *Ring) flush() uint32 {
	atomic.StoreUint32(r.sqTail, r.sqeTail)
	return r.sqeTail - atomic.LoadUint32(r.sqHead)
}

// cqNeedsEnter reports whether completions wait in the kernel (overflowed,
// or task work to run) so that reaping needs an io_uring_enter.
func (r *Ring) cqNeedsEnter() bool {
	return r.params.Flags&SetupIOPoll != 0 || atomic.LoadUint32(r.sqFlags)&(SQCQOverflow|SQTaskrun) != 0
}

// Submit hands the prepared SQEs to the kernel without waiting. It returns
// the number of SQEs the kernel consumed.
func (r *Ring) Submit() (int, error) { return r.SubmitAndWait(0) }

// SubmitAndWait hands the prepared SQEs to the kernel and waits until at
// least waitNr completions are in the CQ, in one io_uring_enter. It returns
// the number of SQEs consumed (with SQPOLL: published).
//
// EINTR is retried with what is still needed. EAGAIN and EBUSY (the kernel
// is short of resources or the CQ is backed up) return with no error when
// completions are ready to reap, so that the caller reaps and submits again;
// SQEs not consumed stay in the SQ and go with the next call.
func (r *Ring) SubmitAndWait(waitNr uint32) (int, error) { return r.submit(waitNr, false) }

// WaitCQE blocks until at least one completion is ready, submitting
// nothing new beyond what is prepared.
func (r *Ring) WaitCQE() error {
	_, err := r.SubmitAndWait(1)
	return err
}

// CQReady is the number of completions ready to reap.
func (r *Ring) CQReady() uint32 {
	return atomic.LoadUint32(r.cqTail) - *r.cqHead
}

// PeekBatch copies up to len(dst) ready completions into dst, oldest first,
// and returns how many. They stay in the CQ until Advance.
func (r *Ring) PeekBatch(dst []CQE) int {
	head := *r.cqHead // only we write the head
	tail := atomic.LoadUint32(r.cqTail)
	n := min(int(tail-head), len(dst))
	for i := 0; i < n; i++ {
		dst[i] = *(*CQE)(unsafe.Add(unsafe.Pointer(r.cqes), uintptr((head+uint32(i))&r.cqMask)*unsafe.Sizeof(CQE{})))
	}
	return n
}

// Advance marks n completions as seen, freeing their CQ slots.
func (r *Ring) Advance(n int) {
	if n > 0 {
		atomic.StoreUint32(r.cqHead, *r.cqHead+uint32(n))
	}
}

// ForEachCQE calls fn for every ready completion, oldest first, and
// advances past them; fn must not submit on this ring.
func (r *Ring) ForEachCQE(fn func(c *CQE)) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for i := head; i != tail; i++ {
		fn((*CQE)(unsafe.Add(unsafe.Pointer(r.cqes), uintptr(i&r.cqMask)*unsafe.Sizeof(CQE{}))))
	}
	atomic.StoreUint32(r.cqHead, tail)
	return int(tail - head)
}

// getEventsArg is struct io_uring_getevents_arg (IORING_ENTER_EXT_ARG).
type getEventsArg struct {
	sigmask     uint64
	sigmaskSize uint32
	minWaitUsec uint32
	ts          uint64 // *kernelTimespec
}

type kernelTimespec struct{ sec, nsec int64 }

// briefWait bounds waitBriefly.
const briefWait = 1_000_000 // ns

// waitBriefly waits up to briefWait for one completion (kernels with
// IORING_FEAT_EXT_ARG, 5.11), or just sleeps that long. Errors are
// ignored: the caller reaps what there is and tries again.
func (r *Ring) waitBriefly() {
	if r.params.Features&FeatExtArg == 0 {
		time.Sleep(briefWait)
		return
	}
	// Both live in a heap object (the Ring), which never moves: the
	// kernel finds the timespec through an address inside arg.
	if r.wait == nil {
		r.wait = &briefWaitArgs{ts: kernelTimespec{nsec: briefWait}}
		r.wait.arg.ts = uint64(uintptr(unsafe.Pointer(&r.wait.ts)))
	}
	r.syscalls++
	sys.IoUringEnter(r.fd, 0, 1, EnterGetEvents|EnterExtArg, unsafe.Pointer(&r.wait.arg), unsafe.Sizeof(r.wait.arg))
	runtime.KeepAlive(r.wait)
}

type briefWaitArgs struct {
	arg getEventsArg
	ts  kernelTimespec
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
func (r *Ring) SubmitNoWait() (int, error) { return r.submit(0, true) }

// submit is the one io_uring_enter loop behind SubmitAndWait and
// SubmitNoWait: it publishes the prepared SQEs, decides whether the
// kernel must be entered at all (SQEs to submit, a sleeping SQPOLL thread
// to wake, completions to wait for, or completion work the kernel has
// flagged), and retries what a signal or a shortage cut short, counting
// the SQEs consumed from the SQ head (the kernel may take some before it
// fails). nowait makes the call that never waits (waitNr must be 0): a
// raw system call that also runs the completion work of what it submits,
// and that returns at once on EAGAIN or EBUSY rather than wait briefly.
func (r *Ring) submit(waitNr uint32, nowait bool) (int, error) {
	pending := r.flush()
	sqpoll := r.params.Flags&SetupSQPoll != 0
	toSubmit := pending
	var flags uint32
	if sqpoll {
		toSubmit = 0
		// The tail store above is a full barrier (XCHG), so this load sees
		// the poller's flag as of after it.
		if pending > 0 && atomic.LoadUint32(r.sqFlags)&SQNeedWakeup != 0 {
			flags |= EnterSQWakeup
		}
	} else if nowait && pending > 0 {
		// Run the completion work of what this submits, in the same call.
		flags |= EnterGetEvents
	}
	if waitNr > 0 || r.cqNeedsEnter() {
		flags |= EnterGetEvents
	}
	if toSubmit == 0 && flags == 0 {
		return int(pending), nil // nothing to submit, wake, wait for or run
	}
	// consumed is what the caller is told: the SQEs consumed, or with
	// SQPOLL (whose thread consumes them in its own time) published.
	consumed := 0
	if sqpoll {
		consumed = int(pending)
	}
	for {
		if waitNr > 0 && r.CQReady() >= waitNr && toSubmit == 0 && flags&EnterSQWakeup == 0 && !r.cqNeedsEnter() {
			return consumed, nil
		}
		r.syscalls++
		var n int
		var err error
		if nowait {
			n, err = sys.IoUringEnterNoWait(r.fd, toSubmit, flags)
		} else {
			n, err = sys.IoUringEnter(r.fd, toSubmit, waitNr, flags, nil, 0)
		}
		switch err {
		case nil:
			if !sqpoll {
				consumed += n
				toSubmit -= uint32(min(n, int(toSubmit)))
			}
			flags &^= EnterSQWakeup
			// A wait cut short by a signal after a successful submit
			// returns the submit count: wait again for what is missing.
			if waitNr > 0 && r.CQReady() < waitNr {
				continue
			}
			return consumed, nil
		case sys.EINTR:
			// Some SQEs may have been consumed before the signal.
			if !sqpoll {
				left := r.sqeTail - atomic.LoadUint32(r.sqHead)
				consumed += int(toSubmit - left)
				toSubmit = left
			}
			flags &^= EnterSQWakeup
			continue
		case sys.EAGAIN, sys.EBUSY:
			// Short of resources, or the CQ is backed up: the caller reaps
			// and comes back; what was not consumed stays in the SQ.
			if !sqpoll {
				left := r.sqeTail - atomic.LoadUint32(r.sqHead)
				consumed += int(toSubmit - left)
			}
			if !nowait && r.CQReady() == 0 {
				// Nothing to reap yet: wait a little for a completion.
				// The wait is bounded, since nothing may be in flight at
				// all.
				r.waitBriefly()
			}
			return consumed, nil
		}
		return consumed, enterError(err)
	}
}
