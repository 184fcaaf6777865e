package uring

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// Options says how to set a ring up.
//
// Required features (SQPoll, IOPoll, CQSize) are never dropped: if the
// kernel refuses them, New fails. Optional performance flags (SubmitAll,
// CoopTaskrun, TaskrunFlag, SingleIssuer, DeferTaskrun, NoSQArray) are
// dropped one at a time, newest first, when io_uring_setup returns EINVAL,
// as fio does; Ring.Dropped lists what was dropped. Set Strict to fail
// instead of dropping anything.
type Options struct {
	SQPoll       bool   // a kernel thread polls the SQ (IORING_SETUP_SQPOLL)
	SQThreadIdle uint32 // ms the SQPOLL thread spins before sleeping (0: kernel default)
	SQThreadCPU  int    // pin the SQPOLL thread to this CPU (with SQAff)
	SQAff        bool   // use SQThreadCPU (IORING_SETUP_SQ_AFF)
	IOPoll       bool   // busy-poll completions (IORING_SETUP_IOPOLL; O_DIRECT on poll-capable devices only)
	CQSize       uint32 // CQ entries (IORING_SETUP_CQSIZE); 0: twice the SQ
	Clamp        bool   // clamp entries to the kernel's maximum instead of failing

	SubmitAll    bool // keep submitting a batch after a failed SQE
	CoopTaskrun  bool // no IPI for task work; run it at the next enter
	TaskrunFlag  bool // kernel sets SQTaskrun when task work is pending (needs CoopTaskrun or DeferTaskrun)
	SingleIssuer bool // only one thread submits (see the package doc)
	DeferTaskrun bool // run task work only when the issuer waits for completions (needs SingleIssuer)
	NoSQArray    bool // no SQ index array: SQEs are consumed in order

	Strict bool // never drop an optional flag: fail instead
}

// optional lists the droppable flags in the order they are dropped.
var optional = []uint32{
	SetupNoSQArray, SetupDeferTaskrun, SetupSingleIssuer, SetupTaskrunFlag,
	SetupCoopTaskrun, SetupSubmitAll,
}

func (o *Options) params() Params {
	var p Params
	set := func(cond bool, f uint32) {
		if cond {
			p.Flags |= f
		}
	}
	set(o.SQPoll, SetupSQPoll)
	set(o.SQPoll && o.SQAff, SetupSQAff)
	set(o.IOPoll, SetupIOPoll)
	set(o.CQSize != 0, SetupCQSize)
	set(o.Clamp, SetupClamp)
	set(o.SubmitAll, SetupSubmitAll)
	set(o.CoopTaskrun, SetupCoopTaskrun)
	set(o.TaskrunFlag, SetupTaskrunFlag)
	set(o.SingleIssuer, SetupSingleIssuer)
	set(o.DeferTaskrun, SetupDeferTaskrun)
	set(o.NoSQArray, SetupNoSQArray)
	p.CQEntries = o.CQSize
	if o.SQPoll {
		p.SQThreadIdle = o.SQThreadIdle
		if o.SQAff {
			p.SQThreadCPU = uint32(o.SQThreadCPU)
		}
	}
	return p
}

// Ring is one io_uring instance: its fd, the mapped SQ and CQ rings and the
// SQE array. A Ring is not safe for concurrent use; see the package doc.
type Ring struct {
	wait    *briefWaitArgs // for waitBriefly; heap-allocated, never moves
	fd      int
	params  Params
	dropped []string

	// SQ, in the mapped ring.
	sqHead  *uint32
	sqTail  *uint32
	sqFlags *uint32
	sqMask  uint32
	sqN     uint32
	sqes    *SQE
	sqeTail uint32 // next SQE to hand out (local, published by flush)

	// CQ, in the mapped ring.
	cqHead *uint32
	cqTail *uint32
	cqMask uint32
	cqN    uint32
	cqes   *CQE

	sqRing, cqRing unsafe.Pointer
	sqRingSz       int
	cqRingSz       int
	sqesPtr        unsafe.Pointer
	sqesSz         int

	files    bool // a file table is registered
	buffers  bool // buffers are registered
	syscalls int64
	closed   bool
}

// setupFunc is io_uring_setup; tests replace it to inject errors.
type setupFunc func(entries uint32, p *Params) (int, error)

func realSetup(entries uint32, p *Params) (int, error) {
	return sys.IoUringSetup(entries, unsafe.Pointer(p))
}

// New sets up a ring with at least entries SQ entries (rounded up to a power
// of two by the kernel) and maps it.
func New(entries uint32, opts Options) (*Ring, error) {
	return newRing(entries, opts, realSetup)
}

func newRing(entries uint32, opts Options, setup setupFunc) (*Ring, error) {
	if opts.DeferTaskrun && !opts.SingleIssuer {
		return nil, errors.New("io_uring setup: DeferTaskrun needs SingleIssuer")
	}
	p, fd, dropped, err := setupStepDown(entries, opts, setup, func(fd int) { sys.Close(fd) })
	if err != nil {
		return nil, err
	}
	r := &Ring{fd: fd, params: p, dropped: dropped}
	if err := r.mmap(); err != nil {
		r.unmap()
		sys.Close(fd)
		return nil, err
	}
	return r, nil
}

// setupStepDown calls setup, dropping optional flags one at a time on EINVAL
// (newest first, as fio does). EINVAL does not say which flag was to blame,
// so once a setup succeeds it tries to put each dropped flag back, and
// reports only the ones the kernel really refused. closeFd closes a ring
// that a better one replaces.
func setupStepDown(entries uint32, opts Options, setup setupFunc, closeFd func(int)) (Params, int, []string, error) {
	base := opts.params()
	var dropped []string
	for {
		p := base
		fd, err := setup(entries, &p)
		if err == nil {
			if len(dropped) > 0 {
				p, fd, dropped = restoreFlags(entries, base, p, fd, dropped, setup, closeFd)
			}
			return p, fd, dropped, nil
		}
		if err != sys.EINVAL || opts.Strict {
			return Params{}, -1, dropped, setupError(base.Flags, err)
		}
		next := uint32(0)
		for _, f := range optional {
			if base.Flags&f != 0 {
				next = f
				break
			}
		}
		if next == 0 {
			return Params{}, -1, dropped, setupError(base.Flags, err)
		}
		base.Flags &^= next
		dropped = append(dropped, SetupFlagName(next))
		// Dependent flags go with what they depend on.
		if next == SetupSingleIssuer && base.Flags&SetupDeferTaskrun != 0 {
			base.Flags &^= SetupDeferTaskrun
			dropped = append(dropped, SetupFlagName(SetupDeferTaskrun))
		}
		if next == SetupCoopTaskrun && base.Flags&SetupTaskrunFlag != 0 && base.Flags&SetupDeferTaskrun == 0 {
			base.Flags &^= SetupTaskrunFlag
			dropped = append(dropped, SetupFlagName(SetupTaskrunFlag))
		}
	}
}

// restoreFlags tries to put back each dropped flag, oldest first, keeping
// those the kernel accepts (with their dependencies present) and the ring
// made with the most of them.
func restoreFlags(entries uint32, base, p Params, fd int, dropped []string, setup setupFunc, closeFd func(int)) (Params, int, []string) {
	flags := base.Flags
	for changed := true; changed; {
		changed = false
		for i := len(optional) - 1; i >= 0; i-- {
			f := optional[i]
			name := SetupFlagName(f)
			if !slices.Contains(dropped, name) {
				continue
			}
			try := flags | f
			if try&SetupDeferTaskrun != 0 && try&SetupSingleIssuer == 0 {
				continue // DEFER_TASKRUN needs SINGLE_ISSUER
			}
			if try&SetupTaskrunFlag != 0 && try&(SetupCoopTaskrun|SetupDeferTaskrun) == 0 {
				continue // TASKRUN_FLAG needs COOP_TASKRUN or DEFER_TASKRUN
			}
			q := base
			q.Flags = try
			nfd, err := setup(entries, &q)
			if err != nil {
				continue
			}
			closeFd(fd)
			p, fd, flags = q, nfd, try
			dropped = slices.DeleteFunc(dropped, func(n string) bool { return n == name })
			changed = true
		}
	}
	return p, fd, dropped
}

// SetupError is io_uring_setup's failure, with the flags that were asked.
type SetupError struct {
	Flags uint32
	Err   error // a syscall.Errno
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("io_uring_setup (flags %s): %v", FlagString(e.Flags), e.Err)
}

func (e *SetupError) Unwrap() error { return e.Err }

func setupError(flags uint32, err error) error { return &SetupError{Flags: flags, Err: err} }

// FlagString names the setup flags in flags, joined with "|" ("none" for 0).
func FlagString(flags uint32) string {
	if flags == 0 {
		return "none"
	}
	var names []string
	for i := range setupFlagNames {
		if flags&(1<<i) != 0 {
			names = append(names, setupFlagNames[i])
		}
	}
	return strings.Join(names, "|")
}

// TrySetup creates a ring with entries and flags and closes it at once,
// without mapping it, and returns io_uring_setup's error: a probe for
// whether the kernel accepts a flag combination.
func TrySetup(entries uint32, flags uint32) error {
	p := Params{Flags: flags}
	if flags&SetupSQPoll != 0 {
		// The SQPOLL thread outlives the close until the ring's exit
		// work runs, spinning for sq_thread_idle (a second by default):
		// a probe's ring then took 8% of the CPU of the benchmark that
		// followed it (found with --perf). Idle after 1 ms, it sleeps.
		p.SQThreadIdle = 1
	}
	if flags&SetupCQSize != 0 {
		p.CQEntries = entries * 2
	}
	fd, err := realSetup(entries, &p)
	if err != nil {
		return err
	}
	sys.Close(fd)
	return nil
}

func (r *Ring) mmap() error {
	p := &r.params
	cqeSize := uintptr(unsafe.Sizeof(CQE{}))
	sqeSize := uintptr(unsafe.Sizeof(SQE{}))
	if p.Flags&SetupCQE32 != 0 {
		cqeSize *= 2
	}
	if p.Flags&SetupSQE128 != 0 {
		sqeSize *= 2
	}
	r.sqRingSz = int(uintptr(p.SQOff.Array) + uintptr(p.SQEntries)*4)
	r.cqRingSz = int(uintptr(p.CQOff.CQEs) + uintptr(p.CQEntries)*cqeSize)
	single := p.Features&FeatSingleMmap != 0
	if single {
		r.sqRingSz = max(r.sqRingSz, r.cqRingSz)
		r.cqRingSz = r.sqRingSz
	}
	const prot = sys.PROT_READ | sys.PROT_WRITE
	const flags = sys.MAP_SHARED | sys.MAP_POPULATE
	var err error
	r.sqRing, err = sys.MmapPtr(r.fd, int64(offSQRing), r.sqRingSz, prot, flags)
	if err != nil {
		r.sqRing = nil
		return fmt.Errorf("mmap sq ring: %w", err)
	}
	if single {
		r.cqRing = r.sqRing
	} else {
		r.cqRing, err = sys.MmapPtr(r.fd, int64(offCQRing), r.cqRingSz, prot, flags)
		if err != nil {
			r.cqRing = nil
			return fmt.Errorf("mmap cq ring: %w", err)
		}
	}
	r.sqesSz = int(uintptr(p.SQEntries) * sqeSize)
	r.sqesPtr, err = sys.MmapPtr(r.fd, int64(offSQEs), r.sqesSz, prot, flags)
	if err != nil {
		r.sqesPtr = nil
		return fmt.Errorf("mmap sqes: %w", err)
	}

	sq := func(off uint32) *uint32 { return (*uint32)(unsafe.Add(r.sqRing, off)) }
	cq := func(off uint32) *uint32 { return (*uint32)(unsafe.Add(r.cqRing, off)) }
	r.sqHead = sq(p.SQOff.Head)
	r.sqTail = sq(p.SQOff.Tail)
	r.sqFlags = sq(p.SQOff.Flags)
	r.sqMask = *sq(p.SQOff.RingMask)
	r.sqN = *sq(p.SQOff.RingEntries)
	r.sqes = (*SQE)(r.sqesPtr)
	r.cqHead = cq(p.CQOff.Head)
	r.cqTail = cq(p.CQOff.Tail)
	r.cqMask = *cq(p.CQOff.RingMask)
	r.cqN = *cq(p.CQOff.RingEntries)
	r.cqes = (*CQE)(unsafe.Add(r.cqRing, p.CQOff.CQEs))
	r.sqeTail = atomic.LoadUint32(r.sqTail)

	// Map SQ slots to SQEs one to one, once: the index array then never
	// needs writing again.
	if p.Flags&SetupNoSQArray == 0 {
		arr := unsafe.Slice((*uint32)(unsafe.Add(r.sqRing, p.SQOff.Array)), r.sqN)
		for i := range arr {
			arr[i] = uint32(i)
		}
	}
	return nil
}

func (r *Ring) unmap() {
	if r.sqesPtr != nil {
		sys.MunmapPtr(r.sqesPtr, r.sqesSz)
		r.sqesPtr = nil
	}
	if r.cqRing != nil && r.cqRing != r.sqRing {
		sys.MunmapPtr(r.cqRing, r.cqRingSz)
	}
	r.cqRing = nil
	if r.sqRing != nil {
		sys.MunmapPtr(r.sqRing, r.sqRingSz)
		r.sqRing = nil
	}
	r.sqes, r.cqes = nil, nil
}

// Close unregisters buffers and files, unmaps the rings and closes the fd.
// The caller must have reaped every request whose memory it is about to
// free. Calling Close again does nothing.
func (r *Ring) Close() error {
	if r == nil || r.closed {
		return nil
	}
	r.closed = true
	if r.buffers {
		r.UnregisterBuffers()
	}
	if r.files {
		r.UnregisterFiles()
	}
	r.unmap()
	err := sys.Close(r.fd)
	r.fd = -1
	if err != nil {
		return fmt.Errorf("close io_uring: %w", err)
	}
	return nil
}

// Fd is the ring's file descriptor.
func (r *Ring) Fd() int { return r.fd }

// Params returns the parameters the kernel filled in at setup.
func (r *Ring) Params() Params { return r.params }

// Flags are the setup flags the ring was created with (after any step-down).
func (r *Ring) Flags() uint32 { return r.params.Flags }

// Features are the kernel's IORING_FEAT_* bits.
func (r *Ring) Features() uint32 { return r.params.Features }

// Dropped lists the optional setup flags the kernel refused and that were
// dropped ("DEFER_TASKRUN"), in the order they were dropped.
func (r *Ring) Dropped() []string { return r.dropped }

// SQEntries and CQEntries are the ring sizes.
func (r *Ring) SQEntries() uint32 { return r.sqN }

// CQEntries is the CQ ring size.
func (r *Ring) CQEntries() uint32 { return r.cqN }

// Syscalls is the number of io_uring_enter and io_uring_register calls the
// ring has made (EINTR retries included).
func (r *Ring) Syscalls() int64 { return r.syscalls }
