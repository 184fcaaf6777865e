package fileio

import (
	"cmp"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// Request is one positioned read into caller memory: Buf is filled from
// the file at Off; the readers set N (bytes read into Buf[:N]) and Err
// (nil when N == len(Buf), io.EOF when the file ended first, else a bare
// errno or an error the caller passed in). iopath.Request has the same
// fields, so that a batch of the public API's requests is read here in
// place.
type Request struct {
	Off int64
	Buf []byte
	N   int
	Err error
}

// Inline is a descriptor's state for the inline RWF_NOWAIT pass over
// batches of requests, shared by every goroutine reading it: Off once the
// kernel refused RWF_NOWAIT for the file, for good; skip, the number of
// batches left to skip the pass after one that mostly missed the page
// cache.
//
// The pass reads the requests whose data is cached with
// preadv2(RWF_NOWAIT) made as a raw system call on the calling goroutine,
// before any goroutine, ring or pin: on warm data that is the whole batch
// (64 random 4 KiB reads: see the root package's BenchmarkReadBatch and
// docs/api.md). A request that misses costs one failed preadv2 (EAGAIN)
// before its real read, a system call against the ~100 µs of a disk
// read: not worth guessing per request. After a batch in which at least
// 3/4 of the requests tried missed, the next inlineBackoff batches skip
// the pass (as Nowait skips the next 8 reads), so that a cold file pays
// for the probe in at most one batch of inlineBackoff+1. Measured on a
// cold 64 MiB file, 64 random 4 KiB requests through io_uring
// (BenchmarkReadBatch iopath-batch-io_uring/cold against
// iopath-batch-io_uring-noinline/cold, -benchtime 60x -count 4): 1.06 ms
// a batch with the pass, 1.00 ms without it, within the VM's noise.
type Inline struct {
	Off  atomic.Bool
	skip atomic.Int32
}

const (
	// InlineBackoff is the number of batches that skip the inline pass
	// after one that mostly missed the page cache.
	InlineBackoff = 8
	inlineIovecs  = 16 // requests per preadv2 of the inline pass
)

// Read reads the requests idx (indexes into reqs, each with a non-empty
// Buf and N == 0) whose data is cached, and returns the others (idx
// compacted in place, in order) for the backend: not cached, partly read
// (N > 0: the rest is still to read), at the end of the file (the backend
// tells the end from a failed read), or over NowaitMax bytes (a raw call
// holds its P for the copy). tried is false when the pass was skipped (a
// recent batch mostly missed, or the kernel refused RWF_NOWAIT): idx is
// then returned as it is.
func (s *Inline) Read(fd int, reqs []Request, idx []int32) (rest []int32, tried bool) {
	if s.Off.Load() {
		return idx, false
	}
	if k := s.skip.Load(); k > 0 {
		// A recent batch mostly missed the cache: skip the pass. Under
		// concurrent calls a lost race only skips one more.
		s.skip.CompareAndSwap(k, k-1)
		return idx, false
	}
	var iov [inlineIovecs]sys.Iovec
	rest = idx[:0] // len(rest) <= k below: writes never pass the reads
	ntried, missed := 0, 0
	refused := false
	for k := 0; k < len(idx); {
		// A run idx[k:e] of requests adjacent in the file, read together.
		e, total := k, 0
		for e < len(idx) && e-k < len(iov) {
			r := &reqs[idx[e]]
			if e > k {
				p := &reqs[idx[e-1]]
				if p.Off+int64(len(p.Buf)) != r.Off || total+len(r.Buf) > NowaitMax {
					break
				}
			}
			iov[e-k] = sys.Iovec{Base: unsafe.SliceData(r.Buf)}
			iov[e-k].SetLen(len(r.Buf))
			total += len(r.Buf)
			e++
		}
		run := idx[k:e]
		k = e
		if refused || total > NowaitMax {
			rest = append(rest, run...)
			continue
		}
		ntried += len(run)
		n, err := sys.PreadvNowait(fd, iov[:len(run)], reqs[run[0]].Off)
		switch {
		case err == nil:
			// n bytes from the start of the run; 0 is the end of the
			// file (or nothing cached, on a kernel that says so with 0).
			for _, i := range run {
				r := &reqs[i]
				r.N = min(n, len(r.Buf))
				n -= r.N
				if r.N < len(r.Buf) {
					rest = append(rest, i)
				}
			}
		case err == sys.EAGAIN:
			missed += len(run)
			rest = append(rest, run...)
		case err == sys.EOPNOTSUPP || err == sys.EINVAL || err == sys.ENOSYS:
			// Old kernel or filesystem: off for good, as Go's own
			// fallbacks stay on once triggered.
			s.Off.Store(true)
			refused = true
			rest = append(rest, run...)
		default:
			// EINTR, or an I/O error: the backend's blocking read
			// retries, or reports it.
			rest = append(rest, run...)
		}
	}
	clear(iov[:]) // hold no buffer alive
	if ntried > 0 && missed*4 >= ntried*3 {
		s.skip.Store(InlineBackoff)
	}
	return rest, true
}

// maxIovecs is IOV_MAX, the most buffers one preadv takes.
const maxIovecs = 1024

// ReadSync reads the requests idx (indexes into reqs, each with a
// non-empty Buf) with blocking preads and sets their N and Err: idx is
// sorted by offset, adjacent requests are grouped for one preadv, and the
// groups are spread over up to workers goroutines (the caller's
// included). A request with N > 0 (partly read by the inline pass) is
// read from N on, and starts a group. Only blocking calls are made: the
// inline pass has tried RWF_NOWAIT already (or skips it).
func ReadSync(fd int, reqs []Request, idx []int32, workers int, direct bool) {
	slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(reqs[a].Off, reqs[b].Off) })
	// Groups are runs of idx: group g is idx[starts[g]:starts[g+1]].
	var smallStarts [65]int32
	starts := smallStarts[:0]
	for k := range idx {
		if k > 0 && len(starts) > 0 && int(int32(k)-starts[len(starts)-1]) < maxIovecs {
			p, r := &reqs[idx[k-1]], &reqs[idx[k]]
			if p.Off+int64(len(p.Buf)) == r.Off && r.N == 0 {
				continue
			}
		}
		starts = append(starts, int32(k))
	}
	starts = append(starts, int32(len(idx)))
	groups := len(starts) - 1
	workers = min(workers, groups)
	if workers <= 1 {
		g := groupReader{fd: fd, direct: direct}
		for i := range groups {
			g.read(reqs, idx[starts[i]:starts[i+1]])
		}
		return
	}
	readGroups(fd, reqs, slices.Clone(idx), slices.Clone(starts), workers, direct)
}

// readGroups reads the groups on workers goroutines, the caller's
// included. idx and starts are copies on the heap, so that ReadSync's
// stack arrays do not escape for the serial case.
func readGroups(fd int, reqs []Request, idx, starts []int32, workers int, direct bool) {
	groups := len(starts) - 1
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		g := groupReader{fd: fd, direct: direct}
		for {
			i := int(next.Add(1) - 1)
			if i >= groups {
				return
			}
			g.read(reqs, idx[starts[i]:starts[i+1]])
		}
	}
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// groupReader reads groups of adjacent requests; one per goroutine.
type groupReader struct {
	fd     int
	direct bool
	nw     Nowait
	iov    []sys.Iovec
}

// read reads the requests g (indexes into reqs, adjacent in the file, in
// offset order; only the first may be partly read already) with one
// preadv, more after a short read.
func (gr *groupReader) read(reqs []Request, g []int32) {
	gr.nw.Off = true
	if len(g) == 1 {
		r := &reqs[g[0]]
		m, err := PreadFull(gr.fd, r.Buf[r.N:], r.Off+int64(r.N), &gr.nw, gr.direct)
		r.N += m
		r.Err = err
		if r.Err == nil && r.N < len(r.Buf) {
			r.Err = io.EOF
		}
		return
	}
	iov := gr.iov[:0]
	total := 0
	for _, i := range g {
		r := &reqs[i]
		b := r.Buf[r.N:]
		iov = append(iov, sys.Iovec{Base: unsafe.SliceData(b)})
		iov[len(iov)-1].SetLen(len(b))
		total += len(b)
	}
	gr.iov = iov
	off := reqs[g[0]].Off + int64(reqs[g[0]].N)
	k := 0 // first request not yet full
	done := 0
	for k < len(g) {
		n, err := gr.nw.Preadv(gr.fd, iov[k:], total-done, off+int64(done), nil)
		if err != nil {
			reqs[g[k]].Err = err
			for _, i := range g[k+1:] {
				reqs[i].Err = err
			}
			break
		}
		if n == 0 {
			for _, i := range g[k:] {
				reqs[i].Err = io.EOF
			}
			break
		}
		done += n
		// Hand the n bytes to the requests, in order.
		for n > 0 && k < len(g) {
			r := &reqs[g[k]]
			take := min(n, len(r.Buf)-r.N)
			r.N += take
			n -= take
			if r.N == len(r.Buf) {
				k++
			} else {
				iov[k].Base = &r.Buf[r.N]
				iov[k].SetLen(len(r.Buf) - r.N)
			}
		}
		if gr.direct && k < len(g) && reqs[g[k]].N%DirectAlign != 0 {
			// O_DIRECT reads end short of an aligned boundary only at
			// the end of the file.
			for _, i := range g[k:] {
				reqs[i].Err = io.EOF
			}
			break
		}
	}
	// Point the kept iovecs at nothing, so that they hold no buffer alive.
	clear(gr.iov)
}
