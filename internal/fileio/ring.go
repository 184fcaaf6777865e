package fileio

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

// Ring is an io_uring ring for positioned reads into caller memory: the
// public API's File.ReadBatch, ReadFile's io_uring path and Scan's
// ordered window. It is used by one goroutine at a time, locked to its
// thread for the duration of a call, and made without SINGLE_ISSUER and
// DEFER_TASKRUN, so that successive calls may come from different
// threads. The user_data of a read is the index of its Request.
type Ring struct {
	r      *uring.Ring
	depth  int // requests in flight at most
	cqes   []uring.CQE
	done   []int32        // the requests the last reap completed
	pin    runtime.Pinner // the buffers of the requests in flight
	broken bool           // failed with requests in flight: never reuse or free
	// refused puts a submit error the kernel met before taking any read
	// (io_uring_enter refused outright) into the caller's vocabulary.
	refused func(error) error
}

// NewRing makes a ring that keeps up to depth reads in flight (depth >
// 0: the caller's default is engine.DefaultQueueDepth). Its error is internal/uring's, unclassified: the
// caller decides what a refusal means (see engine.UringError), and
// refused (nil: none) does the same for Read's submit errors that leave
// nothing in the kernel's hands.
func NewRing(depth int, refused func(error) error) (*Ring, error) {
	entries := uint32(1)
	for int(entries) < depth {
		entries <<= 1
	}
	r, err := uring.New(entries, uring.Options{CQSize: 2 * entries, SubmitAll: true})
	if err != nil {
		return nil, err
	}
	return &Ring{r: r, depth: min(depth, int(r.SQEntries())), cqes: make([]uring.CQE, r.CQEntries()), refused: refused}, nil
}

// Depth is the most reads the ring keeps in flight.
func (g *Ring) Depth() int { return g.depth }

// Broken reports whether the ring failed with reads in flight (see Fail).
func (g *Ring) Broken() bool { return g.broken }

// Close closes a ring that is not broken; a broken one is kept for good.
func (g *Ring) Close() {
	if !g.broken {
		g.r.Close()
	}
}

// CloseLeaked closes a broken ring's descriptor. Only tests call it, for
// rings whose failure they injected (the kernel finished every read).
func (g *Ring) CloseLeaked() { g.r.Close() }

// A ring that failed with reads in flight may still have the kernel
// write their buffers at any time: the ring (its descriptor and mappings)
// and the Pinner of those buffers are kept here for as long as the
// process lives, so that the memory stays pinned and is never freed or
// reused.
var (
	leakedMu    sync.Mutex
	leakedRings []*Ring
)

// LeakedRings returns the rings kept for good so far, oldest first.
func LeakedRings() []*Ring {
	leakedMu.Lock()
	defer leakedMu.Unlock()
	return append([]*Ring(nil), leakedRings...)
}

// RingError is the failure of a ring with reads in flight (see Fail).
type RingError struct{ Err error }

func (e *RingError) Error() string { return "io_uring ring failed: " + e.Err.Error() }
func (e *RingError) Unwrap() error { return e.Err }

// Failed reports whether err says a ring failed with reads in flight,
// whose buffers the kernel may still write: they must never be reused.
func Failed(err error) bool {
	var re *RingError
	return errors.As(err, &re)
}

// discard closes a ring that failed with nothing in the kernel's hands
// and unpins the buffers; the ring is marked broken so that it is never
// used again (a RingPool drops it). It returns err through g.refused.
func (g *Ring) discard(err error) error {
	g.pin.Unpin()
	g.r.Close()
	g.broken = true
	if g.refused != nil {
		return g.refused(err)
	}
	return err
}

// Fail marks the ring broken after err, keeping the ring and its pinned
// buffers for good, and returns a *RingError wrapping err.
func (g *Ring) Fail(err error) error {
	g.broken = true
	leakedMu.Lock()
	leakedRings = append(leakedRings, g)
	leakedMu.Unlock()
	return &RingError{Err: err}
}

// MaxSQELen is the most bytes one read asks for. An SQE's length is 32
// bits, so a request of 4 GiB or more would wrap (and read a few bytes,
// or none, which looks like the end of the file); reads of at most 1 GiB,
// a multiple of DirectAlign so that O_DIRECT stays aligned, leave the
// rest to Reap's short-read continuation. Tests lower it to reach that
// path with small files.
var MaxSQELen = 1 << 30

// Pin pins b until Unpin: the kernel may write it while a read is in
// flight.
func (g *Ring) Pin(b []byte) { g.pin.Pin(unsafe.SliceData(b)) }

// Unpin unpins every buffer pinned (after every read was reaped).
func (g *Ring) Unpin() { g.pin.Unpin() }

// Prep prepares the read of the rest of reqs[i] (from N on), at most
// MaxSQELen bytes; false when the submission queue is full.
func (g *Ring) Prep(fd int32, reqs []Request, i int32) bool {
	sqe := g.r.GetSQE()
	if sqe == nil {
		return false
	}
	r := &reqs[i]
	b := r.Buf[r.N:]
	if len(b) > MaxSQELen {
		b = b[:MaxSQELen]
	}
	if TestHookPrep != nil {
		TestHookPrep(len(b))
	}
	sqe.PrepRead(fd, b, uint64(r.Off+int64(r.N)), uint64(i))
	return true
}

// Wait submits what is prepared and waits for one completion. An error
// breaks the ring (Fail): it returns a *RingError.
func (g *Ring) Wait() error {
	_, err := g.r.SubmitAndWait(1)
	if err == nil && TestHookSubmit != nil {
		err = TestHookSubmit()
	}
	if err != nil {
		return g.Fail(err)
	}
	return nil
}

// errSQFull is a short read's continuation that found no room.
var errSQFull = errors.New("io_uring: submission queue full")

// Reap handles the ready completions and returns the requests that are
// complete (full, at end of file, or failed: N and Err set, Err nil,
// io.EOF or a bare errno), valid until the next Reap; a short read is
// asked again for the rest.
func (g *Ring) Reap(fd int32, reqs []Request, direct bool) []int32 {
	g.done = g.done[:0]
	k := g.r.PeekBatch(g.cqes)
	for _, c := range g.cqes[:k] {
		i := int32(c.UserData)
		r := &reqs[i]
		switch {
		case c.Res < 0:
			if e := syscall.Errno(-c.Res); (e == sys.EINTR || e == sys.EAGAIN) && g.Prep(fd, reqs, i) {
				continue // asked again
			}
			r.Err = syscall.Errno(-c.Res)
		case c.Res == 0:
			r.Err = io.EOF
		default:
			r.N += int(c.Res)
			if r.N < len(r.Buf) {
				if direct && r.N%DirectAlign != 0 {
					// O_DIRECT ends short of an aligned boundary only at
					// the end of the file.
					r.Err = io.EOF
				} else if g.Prep(fd, reqs, i) {
					continue // a short read: ask for the rest
				} else {
					r.Err = errSQFull
				}
			}
		}
		g.done = append(g.done, i)
	}
	g.r.Advance(k)
	return g.done
}

// Read reads reqs[i] for i in idx (each with a non-empty Buf, from N on),
// keeping up to the ring's depth in flight, and sets their N and Err
// (nil, io.EOF or a bare errno). The buffers are pinned until every
// completion is reaped. The error is the ring's own failure, after which
// the ring is broken: a *RingError when the kernel had reads in flight
// (their buffers are kept for good), else submit's error through the
// refused function given to NewRing (the kernel took none of the reads:
// io_uring_enter refused outright, by a seccomp filter).
func (g *Ring) Read(fd int32, reqs []Request, idx []int32, direct bool) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, i := range idx {
		g.Pin(reqs[i].Buf)
	}
	next, inflight := 0, 0
	for next < len(idx) || inflight > 0 {
		for inflight < g.depth && next < len(idx) && g.Prep(fd, reqs, idx[next]) {
			next++
			inflight++
		}
		_, err := g.r.SubmitAndWait(1)
		if err == nil && TestHookSubmit != nil {
			err = TestHookSubmit()
		}
		if err != nil {
			if inflight == int(g.r.SQReady()) {
				// The kernel took none of the reads: none can write a
				// buffer now, so the ring is closed, not kept forever.
				return g.discard(err)
			}
			return g.Fail(err)
		}
		inflight -= len(g.Reap(fd, reqs, direct))
	}
	g.pin.Unpin()
	return nil
}

// RingPool holds up to max rings, made as concurrent calls need them
// (a File's rings: one per ReadBatch in progress).
type RingPool struct {
	mu      sync.Mutex
	cond    sync.Cond
	free    []*Ring
	made    int
	max     int
	newRing func() (*Ring, error)
}

// NewRingPool makes the pool's first ring with newRing (which the pool
// calls again for more), so that a ring that cannot be made shows now.
func NewRingPool(rings int, newRing func() (*Ring, error)) (*RingPool, error) {
	g, err := newRing()
	if err != nil {
		return nil, err
	}
	p := &RingPool{free: []*Ring{g}, made: 1, max: max(1, rings), newRing: newRing}
	p.cond.L = &p.mu
	return p, nil
}

// Max is the most rings the pool makes now (lowered when one could not
// be made); Made is how many exist.
func (p *RingPool) Max() int { p.mu.Lock(); defer p.mu.Unlock(); return p.max }

// Made is how many of the pool's rings exist (free or in use).
func (p *RingPool) Made() int { p.mu.Lock(); defer p.mu.Unlock(); return p.made }

// get returns a free ring, making one if the pool may, or nil when there
// is none and none can come back (every ring broke and no new one could
// be made). It waits only while a ring is in use by another call, which
// gives it back.
func (p *RingPool) get() *Ring {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if n := len(p.free); n > 0 {
			g := p.free[n-1]
			p.free = p.free[:n-1]
			return g
		}
		if p.made < p.max {
			p.made++
			p.mu.Unlock()
			g, err := p.newRing()
			p.mu.Lock()
			if err == nil {
				return g
			}
			// Out of rings (memlock, fds): make do with those there are,
			// and wake the waiters, who must not wait for a ring that
			// will not be made.
			p.made--
			p.max = p.made
			p.cond.Broadcast()
		}
		if p.made == 0 {
			return nil // no ring in use that could come back
		}
		p.cond.Wait()
	}
}

func (p *RingPool) put(g *Ring) {
	p.mu.Lock()
	if g.broken {
		// Kept for good, or closed (discard); a waiter may make a new
		// one, or find that none is left.
		p.made--
		p.mu.Unlock()
		p.cond.Broadcast()
		return
	}
	p.free = append(p.free, g)
	p.mu.Unlock()
	p.cond.Signal()
}

// ErrNoRing says that no ring could be had: the caller reads another way.
var ErrNoRing = errors.New("io_uring: no ring could be made")

// Read runs one batch (see Ring.Read) on a ring of the pool, or returns
// ErrNoRing.
func (p *RingPool) Read(fd int32, reqs []Request, idx []int32, direct bool) error {
	g := p.get()
	if g == nil {
		return ErrNoRing
	}
	defer p.put(g)
	return g.Read(fd, reqs, idx, direct)
}

// Close closes the rings; every ring must be back in the pool.
func (p *RingPool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.free {
		g.Close()
	}
	p.free = nil
}

// String describes the pool, for tests' failure messages.
func (p *RingPool) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("ring pool: %d made of at most %d, %d free", p.made, p.max, len(p.free))
}

// ReadRings reads dst from the file's start: chunks of bs bytes (bs > 0),
// a contiguous share of them per ring, up to workers rings made by
// newRing, each on its own goroutine and thread. It returns the length of
// the prefix read, as ReadChunks does. A ring's failure comes first among
// the errors: the caller must then neither reuse dst nor fall back to
// reading into it, since the kernel may still write it (see Failed).
func ReadRings(fd int, dst []byte, bs, workers int, direct bool, newRing func() (*Ring, error)) (int, error) {
	nchunks := (len(dst) + bs - 1) / bs
	if nchunks == 0 {
		return 0, nil
	}
	reqs := make([]Request, nchunks)
	idx := make([]int32, nchunks)
	for i := range reqs {
		lo := i * bs
		reqs[i] = Request{Off: int64(lo), Buf: dst[lo:min(lo+bs, len(dst))]}
		idx[i] = int32(i)
	}
	workers = max(1, min(workers, nchunks))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := nchunks*w/workers, nchunks*(w+1)/workers
		wg.Go(func() {
			g, err := newRing()
			if err != nil {
				errs[w] = err
				return
			}
			errs[w] = g.Read(int32(fd), reqs, idx[lo:hi], direct)
			g.Close()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if Failed(err) {
			return 0, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	for i := range reqs {
		r := &reqs[i]
		if r.Err != nil && r.Err != io.EOF {
			return 0, r.Err
		}
		if r.N < len(r.Buf) {
			return int(r.Off) + r.N, nil
		}
	}
	return len(dst), nil
}
