package engine

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"syscall"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/uring"
	"github.com/iopath/iopath/metrics"
)

// uringEngine reads with io_uring: each worker is a goroutine locked to its
// own OS thread with its own ring, QueueDepth registered buffers and a
// one-slot registered file table. It keeps QueueDepth READ_FIXED requests
// in flight over its share of the blocks, submitting and reaping in batches
// with one io_uring_enter per round. It reads files of known size only:
// for a pseudo-file Run returns an error wrapping ErrNotSupported.
type uringEngine struct{}

func init() { register(uringEngine{}) }

func (uringEngine) Name() string { return "io_uring" }
func (uringEngine) Caps() Caps   { return Caps{Direct: true, Queue: true} }

func (uringEngine) Prepare(job Job) (Prepared, error) {
	job, err := prepareJob(job)
	if err != nil {
		return nil, err
	}
	return newUringRun(job)
}

// newUringRun sets up job's workers, each with its ring on its own
// thread, for reads or writes.
func newUringRun(job Job) (*uringRun, error) {
	if err := features.HaveOps(); err != nil {
		return nil, UringError(err)
	}
	a, err := newArena(job.Workers*job.QueueDepth, job.BlockSize, job.Direct)
	if err != nil {
		return nil, err
	}
	u := &uringRun{job: job, bufs: a, workers: make([]*uringWorker, job.Workers)}
	ready := make(chan error, job.Workers)
	for i := range u.workers {
		w := newUringWorker(&u.job, a, i)
		u.workers[i] = w
		go w.loop(ready)
	}
	var first error
	for range u.workers {
		if err := <-ready; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		u.Close()
		return nil, first
	}
	u.notes = workerNotes(u.workers)
	return u, nil
}

// UringError puts an error from setting up or driving an io_uring ring,
// or features.HaveOps's, into this package's vocabulary: a refusal
// by policy or absence (features.Classify: EPERM, EACCES, ENOSYS) becomes
// a *NotSupportedError for "io_uring" with the probe's reason, and makes
// the probe say io_uring is unavailable from then on; any other error,
// resource limits included (EMFILE, ENOMEM), is returned as it is. Every
// ring creator of the packages that speak NotSupportedError (engine,
// batch, iopath) passes its errors through it.
func UringError(err error) error {
	err = features.Classify(err)
	var ue *features.UnavailableError
	if errors.Is(err, ErrNotSupported) && errors.As(err, &ue) {
		return &NotSupportedError{What: "io_uring", Reason: ue.IOURing.Reason}
	}
	return err
}

// workerNotes merges the workers' notes, each once.
func workerNotes(ws []*uringWorker) []string {
	var notes []string
	seen := map[string]bool{}
	for _, w := range ws {
		for _, n := range w.notes {
			if !seen[n] {
				seen[n] = true
				notes = append(notes, n)
			}
		}
	}
	return notes
}

type uringRun struct {
	job     Job
	bufs    *arena
	workers []*uringWorker
	notes   []string
	mu      sync.Mutex // one Run at a time
	closed  bool
}

// uringReq is one Run's work for one worker: a read into sink, or a
// write of wf from src.
type uringReq struct {
	c    *control // c.ctx is the workers' context
	f    *file
	p    *plan
	sink Sink
	ws   *WorkerStats
	done chan<- uringDone

	wf  *wfile
	src Source
}

type uringDone struct {
	w   int
	err error
}

func (u *uringRun) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil
	}
	u.closed = true
	broken := false
	for _, w := range u.workers {
		if w == nil {
			continue
		}
		close(w.reqs)
		<-w.exited
		broken = broken || w.broken
	}
	// A worker whose ring failed mid-run may have requests the kernel has
	// not finished: leak its memory rather than free what may be written.
	if !broken {
		u.bufs.free()
	}
	return nil
}

func (u *uringRun) Run(ctx context.Context, sink Sink) (*Stats, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, errors.New("io_uring: Run after Close")
	}
	f, err := openFile(&u.job)
	if err != nil {
		return nil, err
	}
	defer f.close()
	if err := f.needSize("io_uring", "to queue reads for"); err != nil {
		return nil, err
	}
	p := newPlan(&u.job, f.size)
	st := newStats(&u.job)
	st.Notes = append(st.Notes, u.notes...)
	c := begin(ctx, sink)
	done := make(chan uringDone, len(u.workers))
	for i, w := range u.workers {
		w.reqs <- uringReq{c: c, f: f, p: &p, sink: sink, ws: &st.Workers[i], done: done}
	}
	errs := make([]error, len(u.workers))
	for range u.workers {
		d := <-done
		if d.err != nil {
			errs[d.w] = d.err
			c.fail(d.err)
		}
	}
	c.end()
	err = firstError(errs)
	if err == nil {
		st.Workers[0].Syscalls++
		err = f.checkSize() // see file.checkSize
	}
	if cerr := f.close(); err == nil {
		err = cerr
	}
	c.pan.Raise()
	return st, err
}

// uringWorker owns one ring, used only from its goroutine, which is locked
// to one OS thread (the ring is SINGLE_ISSUER/DEFER_TASKRUN).
type uringWorker struct {
	id     int
	job    *Job
	qd     int
	bufs   [][]byte // this worker's QueueDepth buffers, from the arena
	reqs   chan uringReq
	exited chan struct{}
	notes  []string

	ring   *uring.Ring
	fixed  bool // buffers are registered: READ_FIXED
	files  bool // the file table is registered: IOSQE_FIXED_FILE
	broken bool // the ring failed with requests in flight

	// Per-slot state, indexed by the slot number that is also user_data
	// and the registered buffer index.
	off    []int64
	need   []int32 // bytes the block has
	got    []int32 // bytes read so far
	issued []int64 // submit time, for latency
	free   []uint16
	fresh  []uint16 // slots prepared in this round
	cqes   []uring.CQE
	fdSlot [1]int32
}

func newUringWorker(job *Job, a *arena, id int) *uringWorker {
	qd := job.QueueDepth
	w := &uringWorker{
		id: id, job: job, qd: qd,
		reqs:   make(chan uringReq),
		exited: make(chan struct{}),
		off:    make([]int64, qd),
		need:   make([]int32, qd),
		got:    make([]int32, qd),
		issued: make([]int64, qd),
		free:   make([]uint16, 0, qd),
		fresh:  make([]uint16, 0, qd),
	}
	w.bufs = make([][]byte, qd)
	for i := range w.bufs {
		w.bufs[i] = a.buf(id*qd + i)
	}
	return w
}

// loop sets the ring up on this goroutine's thread, reports to ready, then
// serves Run requests until reqs is closed.
func (w *uringWorker) loop(ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(w.exited)
	if err := w.setup(); err != nil {
		if w.ring != nil {
			w.ring.Close()
		}
		ready <- err
		for range w.reqs {
		}
		return
	}
	ready <- nil
	for q := range w.reqs {
		q.done <- uringDone{w: w.id, err: w.runCaught(&q)}
	}
	if !w.broken {
		w.ring.Close()
	}
}

func (w *uringWorker) setup() error {
	entries := uint32(1) << bits.Len32(uint32(w.qd-1))
	opts := uring.Options{
		SQPoll:       w.job.SQPoll,
		SQThreadIdle: 100,
		CQSize:       2 * entries,
		SubmitAll:    true,
		CoopTaskrun:  !w.job.SQPoll, // not with SQPOLL: the poller runs the task work
		TaskrunFlag:  !w.job.SQPoll,
		SingleIssuer: true,
		DeferTaskrun: !w.job.SQPoll, // the kernel refuses DEFER_TASKRUN with SQPOLL
		NoSQArray:    true,
	}
	r, err := uring.New(entries, opts)
	if err != nil {
		if err := UringError(err); errors.Is(err, ErrNotSupported) {
			return err // refused by policy: the caller may fall back
		}
		if w.job.SQPoll && errors.Is(err, syscall.EINVAL) {
			// The kernel does not take SQPOLL with these flags; a
			// resource error is not that, and stays itself.
			return &NotSupportedError{What: "io_uring with SQPOLL", Reason: err.Error()}
		}
		return fmt.Errorf("io_uring: %w", err)
	}
	w.ring = r
	if d := r.Dropped(); len(d) > 0 {
		w.notes = append(w.notes, fmt.Sprintf("io_uring: the kernel refused setup flags %v; they were dropped", d))
	}
	// Registering buffers or files can fail for want of memory (memlock)
	// or descriptors, and the engine then reads without them; a refusal
	// of io_uring_register itself is io_uring not being usable here.
	if err := r.RegisterBuffers(w.bufs); err != nil {
		if err := UringError(err); errors.Is(err, ErrNotSupported) {
			return err
		}
		w.notes = append(w.notes, fmt.Sprintf("io_uring: %v; reading with READ instead of READ_FIXED (raise `ulimit -l`)", err))
	} else {
		w.fixed = true
	}
	if err := r.RegisterFilesSparse(1); err != nil {
		if err := UringError(err); errors.Is(err, ErrNotSupported) {
			return err
		}
		w.notes = append(w.notes, fmt.Sprintf("io_uring: %v; using the plain fd", err))
	} else {
		w.files = true
	}
	w.cqes = make([]uring.CQE, r.CQEntries())
	return nil
}

// prep prepares slot's read of the rest of its block.
func (w *uringWorker) prep(slot uint16, fd int32) bool {
	sqe := w.ring.GetSQE()
	if sqe == nil {
		return false
	}
	got := int(w.got[slot])
	end := directLen(int(w.need[slot]), w.job.Direct)
	b := w.bufs[slot][got:end]
	off := uint64(w.off[slot] + int64(got))
	if w.fixed {
		sqe.PrepReadFixed(fd, b, off, slot, uint64(slot))
	} else {
		sqe.PrepRead(fd, b, off, uint64(slot))
	}
	if w.files {
		sqe.Flags = uring.SQEFixedFile
	}
	return true
}

// useFile puts fd in the worker's registered file slot, when it has one,
// and returns what requests name it by (the slot, else fd) and the
// function that empties the slot again at the end of the run.
func (w *uringWorker) useFile(fd int32) (int32, func() error, error) {
	if !w.files {
		return fd, func() error { return nil }, nil
	}
	w.fdSlot[0] = fd
	if err := w.ring.UpdateFiles(0, w.fdSlot[:]); err != nil {
		return fd, nil, fmt.Errorf("io_uring: %w", err)
	}
	return 0, func() error {
		w.fdSlot[0] = -1
		if err := w.ring.UpdateFiles(0, w.fdSlot[:]); err != nil {
			return fmt.Errorf("io_uring: %w", err)
		}
		return nil
	}, nil
}

// allFree returns the worker's free-slot stack with every slot in it,
// slot 0 on top.
func (w *uringWorker) allFree() []uint16 {
	w.free = w.free[:0]
	for i := w.qd - 1; i >= 0; i-- {
		w.free = append(w.free, uint16(i))
	}
	return w.free
}

// runCaught is run, carrying a panic in it to Run's caller. A panic in
// the sink is caught where it is called, and the worker goes on to reap
// its reads; one anywhere else in run (a bug) may leave reads in flight
// whose memory the kernel still writes, so the ring counts as broken.
func (w *uringWorker) runCaught(q *uringReq) (err error) {
	defer q.c.pan.Catch(&err)
	defer func() {
		if r := recover(); r != nil {
			w.broken = true
			panic(r)
		}
	}()
	if q.src != nil {
		return w.runWrite(q)
	}
	return w.run(q)
}

// run reads this worker's share of one Run's blocks.
func (w *uringWorker) run(q *uringReq) (err error) {
	if w.broken {
		return errors.New("io_uring: the ring failed in an earlier run")
	}
	r := w.ring
	ws := q.ws
	sys0 := r.Syscalls()
	defer func() { ws.Syscalls += r.Syscalls() - sys0 }()

	fd, release, err := w.useFile(int32(q.f.fd))
	if err != nil {
		return err
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()

	f, sink, id := q.f, q.sink, w.id
	c := q.p.cursor(id)
	done := q.c.ctx.Done()
	lat := ws.Lat
	free := w.allFree()
	inflight := 0
	var firstErr error
	stop := false
	fail := func(e error) {
		if firstErr == nil {
			firstErr = e
		}
		stop = true
	}
	for {
		if !stop {
			select {
			case <-done:
				fail(q.c.ctx.Err())
			default:
			}
		}
		fresh := w.fresh[:0]
		for !stop && len(free) > 0 {
			off, n, ok := c.next()
			if !ok {
				break
			}
			slot := free[len(free)-1]
			w.off[slot], w.need[slot], w.got[slot] = off, int32(n), 0
			if !w.prep(slot, fd) {
				break // cannot happen: the SQ holds QueueDepth entries
			}
			free = free[:len(free)-1]
			fresh = append(fresh, slot)
			inflight++
		}
		if inflight == 0 {
			break
		}
		if lat != nil && len(fresh) > 0 {
			t := metrics.Ticks()
			for _, s := range fresh {
				w.issued[s] = t
			}
		}
		// Wait for one completion and refill at once, as fio does by
		// default (iodepth_batch_complete_min=1), so the device's queue
		// stays full. Waiting for a quarter of the queue halved the
		// enters with O_DIRECT but let the queue drain; the throughput
		// difference was lost in this machine's noise either way.
		if _, err := r.SubmitAndWait(1); err != nil {
			// The ring is unusable. With requests in the kernel's hands,
			// never reuse or free their memory; when it took none of them
			// (io_uring_enter refused outright: a policy that changed
			// after the probe) nothing can write it, and the ring is
			// closed as usual.
			if inflight != int(r.SQReady()) {
				w.broken = true
			}
			fail(UringError(err))
			return firstErr
		}
		var now int64
		if lat != nil {
			now = metrics.Ticks()
		}
		k := r.PeekBatch(w.cqes)
		for i := 0; i < k; i++ {
			cqe := &w.cqes[i]
			slot := uint16(cqe.UserData)
			inflight--
			if stop {
				free = append(free, slot)
				continue
			}
			res := cqe.Res
			need := w.need[slot]
			switch {
			case res < 0:
				fail(f.readErr(w.off[slot]+int64(w.got[slot]), syscall.Errno(-res)))
				free = append(free, slot)
				continue
			case res == 0:
				fail(f.shrunk(w.off[slot] + int64(w.got[slot])))
				free = append(free, slot)
				continue
			}
			before := w.got[slot]
			w.got[slot] += res
			if w.got[slot] < need {
				next, ok := directResume(int(w.got[slot]), int(before), w.job.Direct)
				if !ok {
					fail(f.readErr(w.off[slot]+int64(w.got[slot]), errDirectStuck))
					free = append(free, slot)
					continue
				}
				w.got[slot] = int32(next)
				// Short read: ask for the rest of the block.
				if !w.prep(slot, fd) {
					fail(errors.New("io_uring: submission queue full"))
					free = append(free, slot)
					continue
				}
				inflight++
				continue
			}
			if lat != nil {
				lat.RecordTicks(now - w.issued[slot])
			}
			if err := q.c.block(sink, id, w.off[slot], w.bufs[slot][:need]); err != nil {
				fail(err)
			} else {
				ws.Bytes += int64(need)
				ws.Blocks++
			}
			free = append(free, slot)
		}
		r.Advance(k)
	}
	w.free = free
	return firstErr
}
