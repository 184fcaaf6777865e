package batch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
	"github.com/iopath/iopath/metrics"
)

// The io_uring engine: Job.Workers goroutines (1 when 0), each locked to
// its OS thread with its own ring, a sparse registered file table of
// Job.Depth slots and Job.Depth registered buffers of Job.BufferSize bytes,
// one per slot. Each file starts as one linked chain of three requests in
// one submission, in its slot:
//
//	OPENAT     path → direct slot      IOSQE_IO_LINK
//	STATX      path                    IOSQE_IO_HARDLINK
//	READ_FIXED slot's buffer, offset 0 IOSQE_FIXED_FILE
//
// A failed open breaks the plain link: statx and read complete with
// -ECANCELED. Once the open has succeeded the link is hard, so that a
// statx that fails (the path was renamed away or deleted after the open)
// does not cancel the read. Every request posts its own CQE; when a
// chain's CQEs are all in, the kernel is done with its path, statx and
// buffer memory.
//
// # One descriptor per file
//
// Every read of a file goes through the descriptor its OPENAT put in the
// slot, so that a path renamed over while it is read (an editor's save, a
// deploy) gives one complete version of the file, never a prefix of one
// or one version's head with another's tail, and never a spurious error:
// the slot holds the file that was opened, whatever became of the path.
// The file is not closed when its reads are done: the next OPENAT into
// the slot replaces it, which closes it (io_install_fixed_file drops an
// occupied slot's file; TestUringOpenReplacesSlot checks it), and closing
// the ring at the end of the run closes the rest. That saves a CLOSE and
// its CQE per file.
//
// STATX goes by path, because io_uring's STATX cannot take a fixed file:
// it may describe another file than the open one if the path was renamed
// over in between. So it only says what cannot be learnt from the
// descriptor in the chain: whether the file is regular (a read of a FIFO
// or a terminal may wait forever, see below) and a size that sizes the
// follow-up buffer. Neither decides where a file ends.
//
// # When is a file complete?
//
// As in the raw engine (see raw.go): a read of a regular file that returns
// fewer bytes than asked is at end of file. The first read asks for
// BufferSize bytes; fewer, and the file is those bytes. A full buffer is
// followed by plain READs on the same slot from where the last one
// stopped, into a buffer of the statx size + 1 (or twice what was read,
// when the file outgrew that) until one comes back short. A file of
// exactly BufferSize bytes thus costs one more read, which returns 0.
//
// A file whose size is not known in advance — statx says 0 (procfs), the
// walk found it on a pseudo-filesystem (sys.PseudoFS: a seq_file hands out
// about a page per read, so a short read is not its end), or statx failed
// — is read until a read returns 0, and past Job.PseudoLimit bytes it is
// an error wrapping ErrLimit.
//
// # Non-regular files and O_NONBLOCK
//
// statx decides: a directory is an EISDIR error (Read walks it), any
// other non-regular file is ErrNotRegular. The open has O_NONBLOCK so that
// opening a FIFO cannot block. The chain's read still runs (a chain cannot
// branch on statx): with no writer a FIFO reads nothing at once, but a
// read that waits (a FIFO whose writer writes nothing, a terminal) is
// cancelled with ASYNC_CANCEL as soon as the statx CQE shows a non-regular
// file. io_uring keeps retrying reads of O_NONBLOCK regular files on
// filesystems that support non-blocking reads (ext4, xfs, btrfs,
// tmpfs...); a filesystem that does not answers EAGAIN, and the file is
// then read again from its start on a descriptor opened into the same
// slot without O_NONBLOCK (nothing read through the first is kept).
//
// A worker that stops (ctx cancelled, fn returned an error, another worker
// failed) queues no more reads, cancels every request in flight with one
// ASYNC_CANCEL (IORING_ASYNC_CANCEL_ANY), so that no read waiting on a
// FIFO holds it, reaps every CQE and closes its ring.
//
// # Costs and limitations
//
// io_uring_enter calls (Stats.Syscalls, with the io_uring_setup and the
// io_uring_register calls that set up and tear down each ring) are about
// 0.04 per file at depth 64. The kernel runs every STATX on an io-wq
// thread (it is always punted), which on a warm cache costs about a
// quarter of the engine's throughput; without it a FIFO or device could
// not be told from a regular file. Registering the buffers faults in
// Depth × BufferSize bytes; arenas are kept for the next run (see
// uringArena), but the first run at a large depth pays for it. Latency
// (Job.Latency) is recorded for files delivered with their data, from the
// chain's queueing to its last read's CQE.
func init() { Register(uringEngine{}) }

type uringEngine struct{}

func (uringEngine) Name() string { return "io_uring" }

// Request kinds, in the low bits of user_data (the slot above them).
const (
	uringOpen = iota
	uringStatx
	uringRead
	uringSteps // requests in a file's first chain

	uringStepBits = 2
	// uringCancelled marks the user_data of a slot's ASYNC_CANCEL.
	uringCancelled = 1 << 63
	// uringCancelAll is the user_data of the ASYNC_CANCEL of every
	// request, queued by a worker that stops.
	uringCancelAll = 1 << 62
)

const (
	uringPathMax  = 4096 // PATH_MAX, NUL included
	uringStatxLen = 256  // sizeof(struct statx), rounded up
	// uringOpenFlags are the open flags of every chain (no O_CLOEXEC: the
	// kernel refuses it for direct descriptors, which are never in the fd
	// table anyway).
	uringOpenFlags = syscall.O_RDONLY | syscall.O_NOCTTY
)

// The statx struct must fit its slot in the off-heap area.
var _ [uringStatxLen - unsafe.Sizeof(sys.Statx_t{})]byte

// uringFollowUpHook, when set (by tests), is called before each follow-up
// read is queued.
var uringFollowUpHook func(path string)

// uringOps are the opcodes the engine uses.
var uringOps = []string{"OPENAT", "STATX", "READ_FIXED", "READ", "ASYNC_CANCEL"}

// uringSetupError is the error of a worker whose ring could not be set
// up: one wrapping ErrNotSupported with the reason when io_uring is
// refused by policy or absent (engine.UringError), so that ReadFiles
// under Auto falls back before any file is read; the error itself
// (EMFILE, ENOMEM, ...) otherwise.
func uringSetupError(err error) error {
	if err := engine.UringError(err); errors.Is(err, ErrNotSupported) {
		return err
	}
	return fmt.Errorf("io_uring: %w", err)
}

// uringSupported returns nil when this process can run the engine, or an
// error wrapping ErrNotSupported with the reason; or the probe's own
// error when it ran short of a resource (EMFILE, ENOMEM), which is not a
// reason to fall back.
func uringSupported() error {
	return features.HaveOps(uringOps...) // "io_uring is not supported: <why>"
}

func (uringEngine) Run(ctx context.Context, job Job, fn Func) (*Stats, error) {
	if err := uringSupported(); err != nil {
		return nil, err
	}
	workers := job.Workers
	if workers <= 0 {
		workers = 1
	}
	depth := job.Depth
	if depth <= 0 {
		depth = DefaultDepth
	}
	bufSize := job.BufferSize
	if bufSize <= 0 {
		bufSize = DefaultBufferSize
	}
	st := &Stats{}
	// Each ring's sparse file table counts against RLIMIT_NOFILE; so does
	// each ring's own fd.
	if budget, _ := nofileBudget("io_uring", workers*(depth+1)); budget < workers*(depth+1) {
		d := max(1, budget/workers-1)
		if d < depth {
			st.Notes = append(st.Notes, fmt.Sprintf("io_uring: depth cut from %d to %d: %d workers × (%d file slots + the ring) must fit the RLIMIT_NOFILE budget of %d",
				depth, d, workers, depth, budget))
			depth = d
		}
	}
	var lat *uringLatency
	if job.Latency {
		metrics.InitClock()
		st.Lat = metrics.NewHistogram()
		lat = &uringLatency{h: st.Lat}
	}

	// A panic in fn is caught on the worker's goroutine and raised again
	// here once every worker has reaped its requests and closed its ring
	// (deferred first, it runs after the feed has stopped too).
	fn, panicked := guard(fn)
	defer panicked.Raise()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feed := newFeed(ctx, &job)
	defer feed.stop()

	results := make(chan *uringWorker, workers)
	for i := range workers {
		w := &uringWorker{id: i, depth: depth, bufSize: bufSize, limit: job.pseudoLimit(), fn: fn, lat: lat, feed: feed, stopAll: cancel}
		go func() {
			w.main(ctx)
			results <- w
		}()
	}
	var first error
	for range workers {
		w := <-results
		st.Files += w.st.Files
		st.Errors += w.st.Errors
		st.Bytes += w.st.Bytes
		st.Syscalls += w.st.Syscalls
		for _, n := range w.st.Notes {
			st.Notes = appendNew(st.Notes, n)
		}
		// The first error stopped the others (see main); theirs are
		// ctx's and follow from it, whatever order they come in.
		if w.err != nil && (first == nil || isCtxErr(first) && !isCtxErr(w.err)) {
			first = w.err
		}
	}
	if first == nil || isCtxErr(first) {
		if err := parent.Err(); err != nil {
			first = err
		}
	}
	return st, first
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// uringLatency is one histogram the workers share, fed in batches.
type uringLatency struct {
	mu sync.Mutex
	h  *metrics.Histogram
}

func (l *uringLatency) add(ticks []int64) {
	l.mu.Lock()
	for _, d := range ticks {
		l.h.RecordTicks(d)
	}
	l.mu.Unlock()
}

// uringSlot is one file in flight: its descriptor in the slot's file
// table entry, the slot's buffer, statx area and path buffer.
type uringSlot struct {
	path     string
	left     int8 // CQEs of the slot's requests in flight not yet reaped
	opening  bool // the requests in flight start with an OPENAT
	typed    bool // the statx result has been judged
	nonblock bool // the file is open with O_NONBLOCK
	reopen   bool // the next requests open the file again (see judge)
	unsized  bool // the size is not known: read until a read returns 0
	res      [uringSteps]int32
	asked    int          // bytes the read in flight asks for
	got      int          // bytes read before it
	sizeHint int64        // statx size (maybe another file's): sizes big
	bigBuf   *bufpool.Buf // follow-up buffer, pinned while read into
	big      []byte       // all of bigBuf
	pin      runtime.Pinner
	start    int64 // ticks when the first chain was queued
	readDone bool  // the read in flight has completed
	// cancelling: an ASYNC_CANCEL of the read is in flight.
	cancelling bool
}

// uringWorker owns one ring, used only from its goroutine, which is locked
// to its OS thread (the ring is SINGLE_ISSUER|DEFER_TASKRUN).
type uringWorker struct {
	id      int
	depth   int
	bufSize int
	limit   int // Job.PseudoLimit: the most read of a file of unknown size
	fn      Func
	lat     *uringLatency
	feed    *feed
	// stopAll cancels the run's context: the other workers stop.
	stopAll context.CancelFunc

	ring  *uring.Ring
	fixed bool // the buffers are registered: READ_FIXED
	arena *uringArena
	bufs  [][]byte
	stx   []*sys.Statx_t
	paths [][]byte
	slots []uringSlot
	free  []int32
	cqes  []uring.CQE
	// cancels are slots whose non-regular file's read is to be cancelled.
	cancels []int32

	pending   int // CQEs outstanding
	busy      int // slots in use
	stopping  bool
	cancelled bool // the ASYNC_CANCEL of everything has been queued
	broken    bool // the ring failed with requests in flight

	chunk    []item
	pos      int
	feedDone bool

	lats []int64
	st   Stats
	err  error
}

// main sets the ring up on this goroutine's thread, reads, and tears down.
func (w *uringWorker) main(ctx context.Context) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := w.setup()
	if err == nil {
		err = w.loop(ctx)
	}
	w.err = err
	if err != nil {
		// Stop the others now, not once this ring is torn down.
		w.stopAll()
	}
	w.teardown()
}

// uringLeaked keeps the memory of workers whose ring failed with requests
// in flight: the kernel may still write into it.
var (
	uringLeakMu sync.Mutex
	uringLeaked []*uringWorker
)

func (w *uringWorker) teardown() {
	if w.ring != nil {
		w.ring.Close()
		w.st.Syscalls += w.ring.Syscalls() + 1 // + io_uring_setup
	}
	if w.broken {
		uringLeakMu.Lock()
		uringLeaked = append(uringLeaked, w)
		uringLeakMu.Unlock()
		return
	}
	for i := range w.slots {
		w.slots[i].pin.Unpin()
	}
	if w.arena != nil {
		putUringArena(w.arena)
		w.arena = nil
	}
	if w.lat != nil && len(w.lats) > 0 {
		w.lat.add(w.lats)
		w.lats = w.lats[:0]
	}
}

func (w *uringWorker) setup() error {
	entries := uint32(1) << bits.Len32(uint32(uringSteps*w.depth-1))
	r, err := uring.New(entries, uring.Options{
		CQSize:       2 * entries,
		SubmitAll:    true,
		CoopTaskrun:  true,
		TaskrunFlag:  true,
		SingleIssuer: true,
		DeferTaskrun: true,
		NoSQArray:    true,
	})
	if err != nil {
		return uringSetupError(err)
	}
	w.ring = r
	if d := r.Dropped(); len(d) > 0 {
		w.st.Notes = append(w.st.Notes, fmt.Sprintf("io_uring: the kernel refused setup flags %v; they were dropped", d))
	}
	if r.Features()&uring.FeatLinkedFile == 0 {
		return fmt.Errorf("io_uring: %w: the kernel lacks IORING_FEAT_LINKED_FILE (Linux 5.18), needed to read a file opened earlier in the same chain",
			ErrNotSupported)
	}
	if err := r.RegisterFilesSparse(uint32(w.depth)); err != nil {
		return uringSetupError(err)
	}

	a, err := getUringArena(w.depth, w.bufSize)
	if err != nil {
		return err
	}
	w.arena = a
	w.bufs = make([][]byte, w.depth)
	w.stx = make([]*sys.Statx_t, w.depth)
	w.paths = make([][]byte, w.depth)
	for i := range w.depth {
		w.bufs[i] = a.buf(i)
		w.stx[i] = a.statx(i)
		w.paths[i] = a.path(i)
	}
	if err := r.RegisterBuffers(w.bufs); err != nil {
		// Short of memlock, the chains read with READ; a refusal of
		// io_uring_register itself means io_uring is not usable here.
		if err := engine.UringError(err); errors.Is(err, ErrNotSupported) {
			return err
		}
		w.st.Notes = append(w.st.Notes, fmt.Sprintf("io_uring: %v; reading with READ instead of READ_FIXED (raise `ulimit -l`)", err))
	} else {
		w.fixed = true
	}
	w.slots = make([]uringSlot, w.depth)
	w.free = make([]int32, 0, w.depth)
	for i := w.depth - 1; i >= 0; i-- {
		w.free = append(w.free, int32(i))
	}
	w.cqes = make([]uring.CQE, r.CQEntries())
	return nil
}

// uringArena is one worker's off-heap memory: depth buffers of bufSize
// bytes (each starting on a page), depth statx structs and depth path
// buffers. Registering the buffers faults in and zeroes every page of
// them, which costs more than reading a few thousand small files (1–3 ms
// for 64 × 64 KiB, tens of ms for 1024 × 64 KiB); so arenas are kept
// between runs, in a sync.Pool per shape, and unmapped only when the
// garbage collector drops them from the pool.
type uringArena struct {
	mem            []byte
	depth, bufSize int
	stride         int // bytes from one buffer to the next
}

type uringArenaKey struct{ depth, bufSize int }

var uringArenas sync.Map // uringArenaKey → *sync.Pool of *uringArena

func getUringArena(depth, bufSize int) (*uringArena, error) {
	key := uringArenaKey{depth, bufSize}
	if p, ok := uringArenas.Load(key); ok {
		if a, ok := p.(*sync.Pool).Get().(*uringArena); ok {
			return a, nil
		}
	}
	page := sys.PageSize()
	stride := (bufSize + page - 1) &^ (page - 1)
	bufBytes := depth * stride
	mem, err := sys.MmapAnon(bufBytes + depth*uringStatxLen + depth*uringPathMax)
	if err != nil {
		return nil, fmt.Errorf("io_uring: mapping %d buffers of %d bytes: %w", depth, bufSize, err)
	}
	// Huge pages make the registration's faults and pins fewer. Advice
	// only: nothing changes where the kernel does not take it.
	if bufBytes >= 2<<20 {
		sys.Madvise(mem[:bufBytes], syscall.MADV_HUGEPAGE)
	}
	a := &uringArena{mem: mem, depth: depth, bufSize: bufSize, stride: stride}
	runtime.AddCleanup(a, func(mem []byte) { sys.Munmap(mem) }, mem)
	return a, nil
}

// putUringArena keeps a for the next run of the same shape. Only an arena
// the kernel is done with (every request reaped, the ring closed) may be
// put back.
func putUringArena(a *uringArena) {
	key := uringArenaKey{a.depth, a.bufSize}
	p, ok := uringArenas.Load(key)
	if !ok {
		p, _ = uringArenas.LoadOrStore(key, new(sync.Pool))
	}
	p.(*sync.Pool).Put(a)
}

func (a *uringArena) buf(i int) []byte {
	off := i * a.stride
	return a.mem[off : off+a.bufSize : off+a.bufSize]
}

func (a *uringArena) statx(i int) *sys.Statx_t {
	return (*sys.Statx_t)(unsafe.Pointer(&a.mem[a.depth*a.stride+i*uringStatxLen]))
}

func (a *uringArena) path(i int) []byte {
	off := a.depth*a.stride + a.depth*uringStatxLen + i*uringPathMax
	return a.mem[off : off+uringPathMax : off+uringPathMax]
}

// next returns the next path to read. It blocks for the feed only when
// block is set (nothing in flight); ok is false when there is none now.
func (w *uringWorker) next(block bool) (it item, ok bool) {
	for w.pos >= len(w.chunk) {
		if w.feedDone {
			return item{}, false
		}
		var chunk []item
		if block {
			chunk, ok = w.feed.next()
		} else {
			select {
			case chunk, ok = <-w.feed.ch:
			default:
				return item{}, false
			}
		}
		if !ok {
			w.feedDone = true
			return item{}, false
		}
		w.chunk, w.pos = chunk, 0
	}
	it = w.chunk[w.pos]
	w.chunk[w.pos] = item{}
	w.pos++
	return it, true
}

// loop reads until the feed is drained, ctx is done or fn fails, and
// returns with no request in flight (unless the ring itself failed).
func (w *uringWorker) loop(ctx context.Context) error {
	r := w.ring
	done := ctx.Done()
	var ferr error
	stop := func(err error) {
		if ferr == nil {
			ferr = err
		}
		w.stopping = true
	}
	for {
		if !w.stopping {
			select {
			case <-done:
				stop(ctx.Err())
			default:
			}
		}
		if w.stopping {
			w.cancelAll()
		} else {
			w.cancelReads()
		}
		// Fill every free slot.
		var now int64
		stamped := false
		for !w.stopping && len(w.free) > 0 && r.SQSpace() >= uringSteps {
			it, ok := w.next(w.busy == 0)
			if !ok {
				break
			}
			if err := w.begin(it, &now, &stamped); err != nil {
				stop(err)
			}
		}
		if w.pending == 0 {
			if w.stopping || w.feedDone {
				break
			}
			continue
		}
		// Wait for half of what is outstanding: enough to amortise the
		// enter over many files, few enough that the refill comes while
		// the other half is still in flight. Never more: a chain whose
		// read waits (a non-regular file) has posted two of its CQEs
		// (open, statx), and must be reaped to have its read cancelled.
		want := max(1, w.pending/2)
		if _, err := r.SubmitAndWait(uint32(want)); err != nil {
			// The ring is unusable. With requests in the kernel's hands,
			// never reuse or free their memory; when it took none of them
			// (io_uring_enter refused outright: a policy that changed
			// after the probe) nothing can write it, and the ring is
			// closed as usual.
			if w.pending != int(r.SQReady()) {
				w.broken = true
			}
			stop(fmt.Errorf("io_uring: %w", engine.UringError(err)))
			return ferr
		}
		if w.lat != nil {
			now = metrics.Ticks()
		}
		k := r.PeekBatch(w.cqes)
		r.Advance(k)
		for i := range k {
			if err := w.complete(&w.cqes[i], now); err != nil {
				stop(err)
			}
		}
		if w.lat != nil && len(w.lats) >= 256 {
			w.lat.add(w.lats)
			w.lats = w.lats[:0]
		}
	}
	return ferr
}

// cancelAll, once the worker stops, asks the kernel to cancel every
// request in flight (IORING_ASYNC_CANCEL_ANY, Linux 5.19; an older kernel
// answers EINVAL and the requests run to their end), so that stopping
// never waits for a read that may never complete (a FIFO that statx, by
// path, took for a regular file) nor for more reads from a cold disk than
// have started.
func (w *uringWorker) cancelAll() {
	if w.cancelled || w.pending == 0 {
		return
	}
	sqe := w.ring.GetSQE()
	if sqe == nil {
		return // the SQ is full: at the next round
	}
	sqe.PrepCancel(0, uring.CancelAny, uringCancelAll)
	w.cancelled = true
	w.pending++
}

// cancelReads asks the kernel to cancel the pending reads of non-regular
// files. A cancel that comes before the read is issued matches nothing:
// it is made again at the next round until the read has completed. The
// slot counts the cancel's CQE, so that it is not reused before the cancel
// has run.
func (w *uringWorker) cancelReads() {
	keep := w.cancels[:0]
	for _, s := range w.cancels {
		sl := &w.slots[s]
		if sl.readDone {
			continue
		}
		keep = append(keep, s)
		if sl.cancelling {
			continue
		}
		sqe := w.ring.GetSQE()
		if sqe == nil {
			continue
		}
		ud := uint64(s) << uringStepBits
		sqe.PrepCancel(ud|uringRead, 0, ud|uringCancelled)
		sl.cancelling = true
		sl.left++
		w.pending++
	}
	w.cancels = keep
}

// begin queues it's first chain, or delivers its error at once.
func (w *uringWorker) begin(it item, now *int64, stamped *bool) error {
	if it.err != nil {
		return w.deliver(it.path, nil, it.err)
	}
	p := it.path
	var perr error
	switch {
	case len(p) >= uringPathMax:
		perr = syscall.ENAMETOOLONG
	case containsNUL(p):
		perr = syscall.EINVAL
	}
	if perr != nil {
		return w.deliver(p, nil, &fs.PathError{Op: "open", Path: p, Err: perr})
	}
	s := w.free[len(w.free)-1]
	w.free = w.free[:len(w.free)-1]
	w.busy++
	sl := &w.slots[s]
	buf := w.paths[s]
	copy(buf, p)
	buf[len(p)] = 0
	sl.path, sl.got, sl.sizeHint = p, 0, 0
	sl.typed, sl.reopen, sl.cancelling = false, false, false
	sl.nonblock, sl.unsized = true, it.unsized
	if w.lat != nil {
		if !*stamped {
			*now, *stamped = metrics.Ticks(), true
		}
		sl.start = *now
	}
	if err := w.queueOpen(s, true); err != nil {
		w.release(s)
		w.broken = true
		return err
	}
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// sqRoom makes room for n SQEs: requests linked into a chain
// must go to the kernel together. The SQ holds a chain per slot, so it is
// never short; if it ever were, what is there is submitted first.
func (w *uringWorker) sqRoom(n uint32) error {
	for w.ring.SQSpace() < n {
		if _, err := w.ring.Submit(); err != nil {
			return err
		}
	}
	return nil
}

// queueOpen queues slot s's chain: OPENAT of the path into the slot (which
// closes the file a previous chain left there), with statx the STATX of
// the path, and the first read, into the slot's registered buffer from
// offset 0.
func (w *uringWorker) queueOpen(s int32, statx bool) error {
	n := uint32(2)
	if statx {
		n = uringSteps
	}
	if err := w.sqRoom(n); err != nil {
		return err
	}
	r := w.ring
	sl := &w.slots[s]
	path := &w.paths[s][0]
	ud := uint64(s) << uringStepBits
	flags := uint32(uringOpenFlags)
	if sl.nonblock {
		flags |= syscall.O_NONBLOCK
	}
	sqe := r.GetSQE()
	sqe.PrepOpenatDirect(sys.AT_FDCWD, path, flags, 0, uint32(s), ud|uringOpen)
	sqe.SetFlags(uring.SQEIOLink)

	if statx {
		sqe = r.GetSQE()
		sqe.PrepStatx(sys.AT_FDCWD, path, sys.AT_STATX_SYNC_AS_STAT, sys.STATX_BASIC_STATS, w.stx[s], ud|uringStatx)
		sqe.SetFlags(uring.SQEIOHardlink)
	}

	sl.asked = w.bufSize
	sqe = r.GetSQE()
	if w.fixed {
		sqe.PrepReadFixed(int32(s), w.bufs[s], 0, uint16(s), ud|uringRead)
	} else {
		sqe.PrepRead(int32(s), w.bufs[s], 0, ud|uringRead)
	}
	sqe.SetFlags(uring.SQEFixedFile)

	sl.opening = true
	sl.left = int8(n)
	sl.readDone = false
	w.pending += int(n)
	return nil
}

// queueRead queues slot s's next read: on the file in the slot, into big
// from offset got.
func (w *uringWorker) queueRead(s int32) error {
	if err := w.sqRoom(1); err != nil {
		return err
	}
	sl := &w.slots[s]
	b := sl.big[sl.got : sl.got+sl.asked]
	sl.pin.Pin(&b[0])
	sqe := w.ring.GetSQE()
	sqe.PrepRead(int32(s), b, uint64(sl.got), uint64(s)<<uringStepBits|uringRead)
	sqe.SetFlags(uring.SQEFixedFile)
	sl.opening = false
	sl.left = 1
	sl.readDone = false
	w.pending++
	return nil
}

// complete records one CQE; when it is the last of the slot's requests in
// flight, the file is delivered, or read on.
func (w *uringWorker) complete(c *uring.CQE, now int64) error {
	if c.UserData == uringCancelAll {
		w.pending--
		return nil
	}
	s := int32(c.UserData &^ uringCancelled >> uringStepBits)
	sl := &w.slots[s]
	switch step := c.UserData & (1<<uringStepBits - 1); {
	case c.UserData&uringCancelled != 0:
		sl.cancelling = false
	case step == uringStatx:
		sl.res[step] = c.Res
		// A read of a non-regular file may wait forever (a FIFO whose
		// writer writes nothing, a terminal): cancel it.
		if c.Res == 0 && !sl.readDone && w.stx[s].Mode&sys.S_IFMT != sys.S_IFREG {
			w.cancels = append(w.cancels, s)
		}
	case step == uringRead:
		sl.res[step] = c.Res
		sl.readDone = true
	default:
		sl.res[step] = c.Res
	}
	sl.left--
	w.pending--
	if sl.left > 0 {
		return nil
	}
	sl.pin.Unpin()
	if w.stopping {
		w.release(s)
		return nil
	}
	data, err, more := w.judge(s)
	if more && err == nil {
		if uringFollowUpHook != nil {
			uringFollowUpHook(sl.path)
		}
		if sl.reopen {
			sl.reopen = false
			err = w.queueOpen(s, false)
		} else {
			err = w.queueRead(s)
		}
		if err != nil {
			w.release(s)
			w.broken = true
			return err
		}
		return nil
	}
	if w.lat != nil && err == nil {
		w.lats = append(w.lats, now-sl.start)
	}
	ferr := w.deliver(sl.path, data, err)
	w.release(s)
	return ferr
}

// judge decides what slot s's completed requests mean: the file's data,
// its error, or more to read (the slot is set up for it).
func (w *uringWorker) judge(s int32) (data []byte, err error, more bool) {
	sl := &w.slots[s]
	res := &sl.res
	pathErr := func(op string, res int32) error {
		return &fs.PathError{Op: op, Path: sl.path, Err: syscall.Errno(-res)}
	}
	if sl.opening && res[uringOpen] < 0 {
		return nil, pathErr("open", res[uringOpen]), false
	}
	if !sl.typed {
		sl.typed = true
		if res[uringStatx] < 0 {
			// The path went away after the open (statx goes by path):
			// the file in the slot is read all the same, to its end,
			// since nothing says how long it is.
			sl.unsized = true
		} else {
			stx := w.stx[s]
			switch stx.Mode & sys.S_IFMT {
			case sys.S_IFREG:
			case sys.S_IFDIR:
				return nil, &fs.PathError{Op: "read", Path: sl.path, Err: syscall.EISDIR}, false
			default:
				return nil, &fs.PathError{Op: "read", Path: sl.path, Err: ErrNotRegular}, false
			}
			sl.sizeHint = int64(stx.Size)
			if stx.Size == 0 {
				sl.unsized = true // procfs: the size means nothing
			}
		}
	}
	n := int(res[uringRead])
	switch {
	case n == -int(syscall.EAGAIN) && sl.nonblock:
		// A filesystem that honours O_NONBLOCK for regular files: the
		// file is read again from its start, opened without it (into
		// the same slot, which closes the first descriptor).
		sl.nonblock, sl.reopen, sl.got = false, true, 0
		sl.bigBuf.Release()
		sl.bigBuf, sl.big = nil, nil
		return nil, nil, true
	case n < 0:
		return nil, pathErr("read", res[uringRead]), false
	}
	sl.got += n
	switch {
	case sl.unsized && sl.got > w.limit:
		return nil, limitErr(sl.path, w.limit), false
	case n == 0 || n < sl.asked && !sl.unsized:
		return w.data(s), nil, false
	}
	return nil, w.followUp(s), true
}

// data is what slot s's file has read.
func (w *uringWorker) data(s int32) []byte {
	sl := &w.slots[s]
	if sl.bigBuf != nil {
		return sl.big[:sl.got]
	}
	return w.bufs[s][:sl.got]
}

// uringMaxRead is the most one read asks for (the kernel caps a read at
// 2 GiB - 4 KiB; the SQE's length is 32 bits).
const uringMaxRead = 1 << 30

// followUp sets slot s up for its next read, from got into big: room for
// the size statx gave and one byte more, or for twice what was read when
// the file outgrew that (the size may be another file's, if the path was
// renamed over: it only sizes the buffer). Reads of a file of unknown
// size are not cut at the limit (pagemap takes only multiples of 8 bytes):
// judge stops once it is passed, so big stays below twice the limit. It
// fails (with the file's error) only for a file too large to hold in
// memory.
func (w *uringWorker) followUp(s int32) error {
	sl := &w.slots[s]
	if sl.got >= 1<<40 {
		return &fs.PathError{Op: "read", Path: sl.path, Err: syscall.EFBIG}
	}
	want := max(w.bufSize, sl.got)
	if !sl.unsized && sl.sizeHint < 1<<40 {
		want = max(int(sl.sizeHint)+1-sl.got, want)
	}
	need := sl.got + want
	if sl.bigBuf == nil || len(sl.big) < need {
		nb := bufpool.Get(need)
		b := nb.Bytes()[:nb.Cap()]
		copy(b, w.data(s))
		sl.bigBuf.Release()
		sl.bigBuf, sl.big = nb, b
	}
	sl.asked = min(len(sl.big)-sl.got, uringMaxRead)
	return nil
}

// release frees slot s for the next file. The file stays open in the slot
// until the next OPENAT into it or the end of the run.
func (w *uringWorker) release(s int32) {
	sl := &w.slots[s]
	sl.path = ""
	sl.bigBuf.Release()
	sl.bigBuf, sl.big = nil, nil
	w.free = append(w.free, s)
	w.busy--
}

// deliver hands one file to fn and counts it.
func (w *uringWorker) deliver(path string, data []byte, err error) error {
	f := &File{Path: path, Data: data, Err: err}
	if err != nil {
		f.Data = nil
		w.st.Errors++
	}
	w.st.Files++
	w.st.Bytes += int64(len(f.Data))
	return w.fn(f)
}
