package iopath

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

// File is an open regular file for positioned reads: ReadAt, one request
// at a time, and ReadBatch, many at once through io_uring, coalesced and
// parallel preads, or copies from a mapping of the file. Open it with
// Open.
//
// A File is safe for concurrent use by any number of goroutines. Close
// waits for the reads in progress to end before it releases the
// descriptor, so a read never lands on a descriptor number the process
// has reused for another file; reads that start after Close fail with an
// *fs.PathError wrapping fs.ErrClosed.
type File struct {
	name   string
	fd     int
	size   int64
	direct bool
	choice auto.Choice

	// refs counts the reads in progress; closedBit is set by Close.
	refs    atomic.Int64
	drained chan struct{} // closed by the last read to end after Close

	rings *ringPool // nil: the pread backend (or mmap)
	// m is the mmap backend's mapping of the file's first size bytes:
	// nil for the other backends, and for an empty file.
	m       []byte
	cleanup runtime.Cleanup

	// The inline pass of ReadBatch (see readInline): nowaitOff once the
	// kernel refused RWF_NOWAIT for this file, for good; nowaitSkip is
	// the number of batches left to skip the pass after one that mostly
	// missed the page cache.
	nowaitOff  atomic.Bool
	nowaitSkip atomic.Int32
}

// Request is one read of a File.ReadBatch: Buf is filled from the file at
// Off. ReadBatch sets N and Err.
type Request struct {
	Off int64  // where to read in the file
	Buf []byte // where to put it; len(Buf) is the number of bytes wanted
	N   int    // out: bytes read into Buf[:N]
	// Err is out: this request's error. nil when N == len(Buf); io.EOF
	// when the file ended first (N < len(Buf)); otherwise an
	// *fs.PathError naming the file (ErrNegativeOffset, ErrUnaligned, an
	// I/O error).
	Err error
}

const closedBit = 1 << 62

// testHookReading, if set, runs inside ReadAt while the read holds the
// File open, so that tests can close it then.
var testHookReading func()

// Open opens path for positioned reads. The path must name a regular
// file: a directory gives an *fs.PathError wrapping syscall.EISDIR, a
// FIFO, socket or device one wrapping ErrNotRegular (the open never waits
// for a FIFO's writer). Other errors are *fs.PathError from open or fstat.
//
// Open decides the backend once, with Auto (kind Positioned: whether the
// file is in the page cache, O_DIRECT, what the kernel supports) unless
// WithEngine says "pread", "io_uring" or "mmap". With io_uring, Open
// creates the first ring, so an explicit WithEngine("io_uring") that
// cannot run here fails now with an error wrapping ErrNotSupported and
// the reason (io_uring_setup, io_uring_register or io_uring_enter refused
// by a seccomp profile or the kernel.io_uring_disabled sysctl); under
// Auto the File falls back to pread then. A ring that cannot be made for
// want of a resource fails Open either way with that error:
// errors.Is(err, syscall.EMFILE) (or ENFILE, ENOMEM) holds, and it does
// not wrap ErrNotSupported. With mmap, Open maps the file's size
// at Open read-only and shared (an empty file is not mapped); a mapping
// that fails is an *fs.PathError with Op "mmap" for WithEngine("mmap"),
// and pread under Auto. mmap cannot be had WithDirect (an error wrapping
// ErrNotSupported). WithWorkers bounds the goroutines (pread) or rings
// (io_uring) that serve ReadBatch calls; WithQueueDepth is each ring's
// requests in flight. WithDirect opens with O_DIRECT: see DirectAlign.
func Open(path string, opts ...Option) (*File, error) {
	o, err := parseOptions(callOpen, opts)
	if err != nil {
		return nil, err
	}
	fd, st, err := openRegular(path, o.direct, "open")
	if err != nil {
		return nil, err
	}
	// Regular files keep no O_NONBLOCK: io_uring honours it (EAGAIN on a
	// page-cache miss instead of waiting for the disk).
	if err := sys.ClearNonblock(fd); err != nil {
		sys.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	c, err := plan(callOpen, &o, auto.Workload{Kind: auto.Positioned, Path: path, Size: st.Size, Direct: o.direct, Resident: -1})
	if err != nil {
		sys.Close(fd)
		return nil, err
	}
	f := &File{name: path, fd: fd, size: st.Size, direct: o.direct, choice: c, drained: make(chan struct{})}
	if c.Engine == "io_uring" {
		rp, err := newRingPool(c.Workers, c.QueueDepth)
		if err != nil {
			// Auto falls back only from a refusal; a resource error
			// (EMFILE, ENOMEM) is the caller's to hear.
			if o.engine != "" || !errors.Is(err, ErrNotSupported) {
				sys.Close(fd)
				return nil, fmt.Errorf("iopath: Open %s: %w", path, err)
			}
			f.choice.Engine = "pread"
			f.choice.Reason = fmt.Sprintf("io_uring chosen by rule %s could not start (%v): pread instead", c.Rule, err)
		} else {
			f.rings = rp
		}
	}
	if c.Engine == "mmap" && st.Size > 0 {
		m, err := sys.Mmap(fd, 0, int(st.Size), sys.PROT_READ, sys.MAP_SHARED)
		if err != nil {
			if o.engine != "" {
				sys.Close(fd)
				return nil, &fs.PathError{Op: "mmap", Path: path, Err: err}
			}
			f.choice.Engine = "pread"
			f.choice.Reason = fmt.Sprintf("mmap chosen by rule %s failed (%v): pread instead", c.Rule, err)
		} else {
			// Random requests: fault in the pages asked for, without the
			// readahead around them that a sequential reader would use.
			sys.Madvise(m, sys.MADV_RANDOM)
			f.m = m
		}
	}
	// A File dropped without Close gives its descriptor, rings and
	// mapping back when it is collected, as an os.File does.
	f.cleanup = runtime.AddCleanup(f, func(r fileRes) {
		if r.rings != nil {
			r.rings.close()
		}
		if r.m != nil {
			sys.Munmap(r.m)
		}
		sys.Close(r.fd)
	}, fileRes{fd: fd, rings: f.rings, m: f.m})
	return f, nil
}

// fileRes is what a File's cleanup releases.
type fileRes struct {
	fd    int
	rings *ringPool
	m     []byte
}

// Name returns the path as given to Open.
func (f *File) Name() string { return f.name }

// Size returns the file's size when it was opened. The file may have
// changed since; reads are not limited to this size.
func (f *File) Size() int64 { return f.size }

// acquire registers a read in progress, or reports a closed File.
func (f *File) acquire(op string) error {
	for {
		v := f.refs.Load()
		if v&closedBit != 0 {
			return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
		}
		if f.refs.CompareAndSwap(v, v+1) {
			return nil
		}
	}
}

func (f *File) release() {
	if f.refs.Add(-1) == closedBit {
		close(f.drained)
	}
}

// Close waits for the reads in progress, then releases the rings, the
// mapping and the descriptor. Closing a File twice returns an *fs.PathError wrapping
// fs.ErrClosed, as os.File does; the first Close's work is not undone.
func (f *File) Close() error {
	old := f.refs.Or(closedBit)
	if old&closedBit != 0 {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	if old != 0 {
		<-f.drained
	}
	f.cleanup.Stop()
	if f.rings != nil {
		f.rings.close()
	}
	if f.m != nil {
		// No read is in progress and none can start: nothing touches the
		// mapping any more.
		if err := sys.Munmap(f.m); err != nil {
			sys.Close(f.fd)
			return &fs.PathError{Op: "munmap", Path: f.name, Err: err}
		}
	}
	if err := sys.Close(f.fd); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt says: n < len(p) comes
// with a non-nil error, io.EOF when the file ended first; it does not
// return before p is full, the file ends or an error occurs. A negative
// off gives an *fs.PathError wrapping ErrNegativeOffset; with WithDirect,
// an unaligned request one wrapping ErrUnaligned (an empty p needs no
// alignment: it reads nothing and succeeds). Other errors are
// *fs.PathError naming the file.
//
// ReadAt is one pread (a request of at least 4 MiB is split into chunks
// read by the File's workers in parallel): a single request gains nothing
// from a ring, so even an io_uring File reads it with pread. Use ReadBatch
// for many requests at once. An mmap File copies from its mapping on the
// calling goroutine instead, and reads what lies past the size mapped at
// Open (the file grew) with pread. A file truncated under the mapping
// makes a read of a page past its new end fail with an *fs.PathError
// wrapping ErrChanged (the fault is caught, never a crash); the part of
// its new last page past the new end reads as zeros, as the kernel maps
// it.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if err := f.acquire("read"); err != nil {
		return 0, err
	}
	defer f.release()
	if testHookReading != nil {
		testHookReading()
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: ErrNegativeOffset}
	}
	if len(p) == 0 {
		// Nothing to transfer, so nothing to align, even WithDirect.
		return 0, nil
	}
	if f.direct && !directAligned(p, off) {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: ErrUnaligned}
	}
	var n int
	var err error
	if f.m != nil {
		n, err = f.copyAt(p, off)
		if err != nil {
			return 0, err
		}
		if n == len(p) {
			return n, nil
		}
		// Past the mapping: the file grew since Open, or ends here.
		nw := nowait{off: f.nowaitOff.Load()}
		var m int
		m, err = preadFull(f.fd, p[n:], off+int64(n), &nw, false)
		n += m
	} else if len(p) >= splitReadAt && f.choice.Workers > 1 {
		n, err = readChunks(f.fd, p, off, max(f.choice.BlockSize, splitChunk), f.choice.Workers, f.direct, false)
	} else {
		nw := nowait{off: f.direct || f.nowaitOff.Load()}
		n, err = preadFull(f.fd, p, off, &nw, f.direct)
		if nw.off && !f.direct {
			f.nowaitOff.Store(true) // the kernel refused RWF_NOWAIT
		}
	}
	if err != nil {
		return n, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Thresholds of ReadAt's split into parallel chunks.
const (
	splitReadAt = 4 << 20
	splitChunk  = 1 << 20
)

// ReadBatch reads every request and sets each one's N and Err. It returns
// the first request's error in slice order (io.EOF included), or an error
// that stopped the whole batch, which every request's Err then holds too:
// a closed File (an *fs.PathError wrapping fs.ErrClosed), or two requests
// whose buffers overlap (wrapping ErrOverlap; nothing is read). A request
// with an empty Buf reads nothing and succeeds (WithDirect too: it needs
// no alignment); one with a negative Off (ErrNegativeOffset) or,
// WithDirect, an unaligned one (ErrUnaligned) fails on its own while the
// others are read.
//
// Unless the File is WithDirect, ReadBatch first reads the requests whose
// data is in the page cache on the calling goroutine, with
// preadv2(RWF_NOWAIT) (one call per run of requests adjacent in the slice
// and in the file): on cached data that costs no goroutine, ring or pin.
// Only the requests that were not cached, or only partly, go on to the
// backend, for what is left of them.
//
// Backends: with io_uring the requests go to one of the File's rings,
// up to the queue depth in flight, with one io_uring_enter per round; the
// buffers are pinned until their completions arrive. With pread, requests
// whose file ranges are adjacent are read together with one preadv, and
// the reads are spread over the File's workers. The requests' buffers are
// written by the kernel only; ReadBatch keeps no reference to them after
// it returns, with one exception: if the ring itself fails (the error
// says "io_uring ring failed", and every request it did not finish holds
// it), the kernel may still write the buffers of the reads it had in
// flight at any time. Those buffers are then kept pinned and referenced
// for as long as the process lives, and the caller must not reuse them;
// the File goes on with a new ring, or with pread. An io_uring read asks
// for at most 1 GiB at a time, so a request may be of any size.
func (f *File) ReadBatch(reqs []Request) error {
	if err := f.acquire("read"); err != nil {
		for i := range reqs {
			reqs[i].N, reqs[i].Err = 0, err
		}
		return err
	}
	defer f.release()
	if err := f.checkOverlap(reqs); err != nil {
		for i := range reqs {
			reqs[i].N, reqs[i].Err = 0, err
		}
		return err
	}
	// Requests that need I/O, by index.
	var small [64]int32
	idx := small[:0]
	for i := range reqs {
		r := &reqs[i]
		r.N, r.Err = 0, nil
		switch {
		case r.Off < 0:
			r.Err = &fs.PathError{Op: "readat", Path: f.name, Err: ErrNegativeOffset}
		case len(r.Buf) == 0:
			// Reads nothing and succeeds, even WithDirect: nothing to align.
		case f.direct && !directAligned(r.Buf, r.Off):
			r.Err = &fs.PathError{Op: "readat", Path: f.name, Err: ErrUnaligned}
		default:
			idx = append(idx, int32(i))
		}
	}
	if len(idx) > 0 && f.m != nil {
		// The mmap backend copies on the calling goroutine; what lies past
		// the mapping goes on to pread.
		idx = f.readMapped(reqs, idx)
	} else if len(idx) > 0 && !f.direct && !f.nowaitOff.Load() && !testNoInline {
		if s := f.nowaitSkip.Load(); s > 0 {
			// A recent batch mostly missed the cache: skip the pass. Under
			// concurrent calls a lost race only skips one more.
			f.nowaitSkip.CompareAndSwap(s, s-1)
		} else {
			idx = f.readInline(reqs, idx)
		}
	}
	if len(idx) > 0 {
		var err error
		if f.rings != nil {
			err = f.rings.read(int32(f.fd), reqs, idx, f.direct)
		}
		if f.rings == nil || err == errNoRing {
			err = nil
			f.readSync(reqs, idx)
		}
		if err != nil {
			// The ring failed: requests it did not finish carry its error.
			for _, i := range idx {
				if r := &reqs[i]; r.Err == nil && r.N < len(r.Buf) {
					r.Err = err
				}
			}
		}
		for _, i := range idx {
			r := &reqs[i]
			if r.Err != nil && r.Err != io.EOF {
				if _, ok := r.Err.(*fs.PathError); !ok {
					r.Err = &fs.PathError{Op: "read", Path: f.name, Err: r.Err}
				}
			}
		}
	}
	for i := range reqs {
		if reqs[i].Err != nil {
			return reqs[i].Err
		}
	}
	return nil
}

// copyAt copies p from the mapping at off, as far as the mapping goes (0
// at or past its end). A fault (the file was truncated under the mapping)
// is an *fs.PathError wrapping ErrChanged.
func (f *File) copyAt(p []byte, off int64) (n int, err error) {
	if off >= int64(len(f.m)) {
		return 0, nil
	}
	// SIGBUS on a page past the file's end becomes a panic on this
	// goroutine, recovered below (as the mmap engine does, see
	// engine/mmap.go); the previous setting comes back on return.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
			n, err = 0, &fs.PathError{Op: "read", Path: f.name, Err: ErrChanged}
		}
	}()
	return copy(p, f.m[off:]), nil
}

// readMapped is ReadBatch's mmap backend: it copies the requests idx from
// the mapping on the calling goroutine and returns the requests (idx
// compacted in place, in order) not filled, whose rest lies past the
// mapping, for pread. A request whose copy faults fails with ErrChanged.
func (f *File) readMapped(reqs []Request, idx []int32) []int32 {
	if w := f.mappedWorkers(reqs, idx); w > 1 {
		// A batch this large is copied by w goroutines (the caller's
		// included), each taking a contiguous share of the requests.
		var wg sync.WaitGroup
		share := (len(idx) + w - 1) / w
		for lo := share; lo < len(idx); lo += share {
			part := idx[lo:min(lo+share, len(idx))]
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.copyAll(reqs, part)
			}()
		}
		f.copyAll(reqs, idx[:share])
		wg.Wait()
	} else {
		f.copyAll(reqs, idx)
	}
	rest := idx[:0] // writes never pass the reads
	for _, i := range idx {
		if r := &reqs[i]; r.Err == nil && r.N < len(r.Buf) {
			rest = append(rest, i)
		}
	}
	return rest
}

// mappedParallelMin is the batch size from which an mmap File copies with
// its workers: below it, starting goroutines (about 1 µs each here) costs
// more than the copy they share (64 × 4 KiB copied in 7 µs on one).
const mappedParallelMin = 1 << 20

// mappedWorkers is how many goroutines copy the requests idx.
func (f *File) mappedWorkers(reqs []Request, idx []int32) int {
	w := min(f.choice.Workers, len(idx))
	if w <= 1 {
		return 1
	}
	total := 0
	for _, i := range idx {
		if total += len(reqs[i].Buf); total >= mappedParallelMin {
			return w
		}
	}
	return 1
}

// copyAll copies the requests idx from the mapping; a request whose copy
// faults fails with ErrChanged and the others go on.
func (f *File) copyAll(reqs []Request, idx []int32) {
	for k := 0; k < len(idx); k++ {
		// One fault-catching frame for the whole run of requests: a fault
		// stops copyMapped at request k, which fails; the others go on.
		if k = f.copyMapped(reqs, idx, k); k < len(idx) {
			r := &reqs[idx[k]]
			r.N, r.Err = 0, &fs.PathError{Op: "read", Path: f.name, Err: ErrChanged}
		}
	}
}

// copyMapped copies reqs[idx[k]], reqs[idx[k+1]], ... from the mapping,
// each as far as the mapping goes. It returns len(idx), or the position
// in idx of the request whose copy faulted, where it stopped.
func (f *File) copyMapped(reqs []Request, idx []int32, k int) (at int) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
		}
	}()
	size := int64(len(f.m))
	for at = k; at < len(idx); at++ {
		r := &reqs[idx[at]]
		if r.Off < size {
			r.N = copy(r.Buf, f.m[r.Off:])
		}
	}
	return at
}

// checkOverlap returns ErrOverlap (in an *fs.PathError) when two
// requests' buffers share memory.
func (f *File) checkOverlap(reqs []Request) error {
	if len(reqs) < 2 {
		return nil
	}
	// The buffers' address ranges, copied out so that sorting them
	// compares plain integers (with indexes through reqs, the sort was
	// ~5% of a batch of 64 cached 4 KiB reads).
	type span struct {
		lo, hi uintptr
		i      int32
	}
	var small [64]span
	spans := small[:0]
	for i := range reqs {
		if b := reqs[i].Buf; len(b) > 0 {
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			spans = append(spans, span{lo, lo + uintptr(len(b)), int32(i)})
		}
	}
	// Buffers are most often in increasing address order already.
	sorted := true
	for k := 1; k < len(spans) && sorted; k++ {
		sorted = spans[k-1].lo < spans[k].lo
	}
	if !sorted {
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	}
	for k := 1; k < len(spans); k++ {
		if spans[k-1].hi > spans[k].lo {
			a, b := min(spans[k-1].i, spans[k].i), max(spans[k-1].i, spans[k].i)
			return &fs.PathError{Op: "readbatch", Path: f.name, Err: fmt.Errorf("%w: requests %d and %d", ErrOverlap, a, b)}
		}
	}
	return nil
}

// The inline pass: ReadBatch's requests are tried with preadv2(RWF_NOWAIT)
// made as a raw system call (sys.PreadvNowait) on the calling goroutine
// before any goroutine, ring or pin. On warm data that is the whole batch
// (64 random 4 KiB reads: see BenchmarkReadBatch and docs/api.md). A
// request that misses costs one failed preadv2 (EAGAIN) before its real
// read, a system call against the ~100 µs of a disk read: not worth
// guessing per request. After a batch in which at least 3/4 of the
// requests tried missed, the next inlineBackoff batches skip the pass (as
// engine/nowait.go skips the next 8 blocks), so that a cold file pays for
// the probe in at most one batch of inlineBackoff+1. Measured on a cold
// 64 MiB file, 64 random 4 KiB requests through io_uring
// (BenchmarkReadBatch iopath-batch-io_uring/cold against
// iopath-batch-io_uring-noinline/cold, -benchtime 60x -count 4): 1.06 ms
// a batch with the pass, 1.00 ms without it, within this VM's noise.
const (
	inlineBackoff = 8
	inlineIovecs  = 16 // requests per preadv2 of the inline pass
)

// testHookInline, if set, sees each inline pass: how many requests it
// served, and the requests (indexes into reqs) left for the backend.
var testHookInline func(served int, rest []int32)

// readInline reads the requests idx whose data is cached, and returns the
// others (idx compacted in place, in order) for the backend: not cached,
// partly read (N > 0: the rest is still to read), at the end of the file
// (the backend tells the end from a failed read), or over nowaitMax bytes
// (a raw call holds its P for the copy).
func (f *File) readInline(reqs []Request, idx []int32) []int32 {
	var iov [inlineIovecs]sys.Iovec
	rest := idx[:0] // len(rest) <= k below: writes never pass the reads
	tried, missed := 0, 0
	refused := false
	for k := 0; k < len(idx); {
		// A run idx[k:e] of requests adjacent in the file, read together.
		e, total := k, 0
		for e < len(idx) && e-k < len(iov) {
			r := &reqs[idx[e]]
			if e > k {
				p := &reqs[idx[e-1]]
				if p.Off+int64(len(p.Buf)) != r.Off || total+len(r.Buf) > nowaitMax {
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
		if refused || total > nowaitMax {
			rest = append(rest, run...)
			continue
		}
		tried += len(run)
		n, err := sys.PreadvNowait(f.fd, iov[:len(run)], reqs[run[0]].Off)
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
			f.nowaitOff.Store(true)
			refused = true
			rest = append(rest, run...)
		default:
			// EINTR, or an I/O error: the backend's blocking read
			// retries, or reports it.
			rest = append(rest, run...)
		}
	}
	clear(iov[:]) // hold no buffer alive
	if tried > 0 && missed*4 >= tried*3 {
		f.nowaitSkip.Store(inlineBackoff)
	}
	if testHookInline != nil {
		testHookInline(len(idx)-len(rest), slices.Clone(rest))
	}
	return rest
}

// readSync is ReadBatch's pread backend: idx sorted by offset, adjacent
// requests grouped for preadv, the groups spread over the workers. A
// request with N > 0 (partly read by the inline pass) is read from N on,
// and starts a group.
func (f *File) readSync(reqs []Request, idx []int32) {
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
	workers := min(f.choice.Workers, groups)
	if workers <= 1 {
		var g groupReader
		for i := range groups {
			g.read(f, reqs, idx[starts[i]:starts[i+1]])
		}
		return
	}
	f.readGroups(reqs, slices.Clone(idx), slices.Clone(starts), workers)
}

// readGroups reads the groups on workers goroutines, the caller's
// included. idx and starts are copies on the heap, so that readSync's
// stack arrays do not escape for the serial case.
func (f *File) readGroups(reqs []Request, idx, starts []int32, workers int) {
	groups := len(starts) - 1
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		var g groupReader
		for {
			i := int(next.Add(1) - 1)
			if i >= groups {
				return
			}
			g.read(f, reqs, idx[starts[i]:starts[i+1]])
		}
	}
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// maxIovecs is IOV_MAX, the most buffers one preadv takes.
const maxIovecs = 1024

// groupReader reads groups of adjacent requests; one per goroutine.
type groupReader struct {
	nw  nowait
	iov []sys.Iovec
}

// read reads the requests g (indexes into reqs, adjacent in the file, in
// offset order; only the first may be partly read already) with one
// preadv, more after a short read. It makes only blocking calls: the
// inline pass of ReadBatch has tried RWF_NOWAIT already (or skips it).
func (gr *groupReader) read(f *File, reqs []Request, g []int32) {
	gr.nw.off = true
	if len(g) == 1 {
		r := &reqs[g[0]]
		m, err := preadFull(f.fd, r.Buf[r.N:], r.Off+int64(r.N), &gr.nw, f.direct)
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
		n, err := gr.nw.preadv(f.fd, iov[k:], total-done, off+int64(done))
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
		if f.direct && k < len(g) && reqs[g[k]].N%DirectAlign != 0 {
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

func directAligned(b []byte, off int64) bool {
	return off%DirectAlign == 0 && len(b)%DirectAlign == 0 &&
		uintptr(unsafe.Pointer(unsafe.SliceData(b)))%DirectAlign == 0
}

// openRegular opens path read-only and non-blocking (so that a FIFO
// cannot block the open), O_DIRECT when asked, and checks that it is a
// regular file. Errors are *fs.PathError; op names the operation for a
// file of the wrong type ("open" for Open, "read" for ReadFile, as
// os.ReadFile reports a directory).
func openRegular(path string, direct bool, op string) (int, sys.Stat_t, error) {
	var st sys.Stat_t
	flags := sys.O_RDONLY | sys.O_NONBLOCK
	if direct {
		flags |= sys.O_DIRECT
	}
	pz := bufpool.Get(len(path) + 1)
	defer pz.Release()
	z, err := sys.AppendPathZ(pz.Bytes()[:0], path)
	if err != nil {
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	fd, err := sys.OpenZ(sys.AT_FDCWD, z, flags)
	noDirect := false
	if err == sys.EINVAL && direct {
		// A filesystem without O_DIRECT, or not a file at all (devices,
		// FIFOs and directories refuse the flag too): look without it.
		noDirect = true
		fd, err = sys.OpenZ(sys.AT_FDCWD, z, flags&^sys.O_DIRECT)
	}
	if err != nil {
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := sys.Fstat(fd, &st); err != nil {
		sys.Close(fd)
		return -1, st, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
		if noDirect {
			sys.Close(fd)
			return -1, st, &fs.PathError{Op: "open", Path: path,
				Err: &engine.NotSupportedError{What: "O_DIRECT", Reason: "the filesystem refuses it (use a file on a disk)"}}
		}
		return fd, st, nil
	case sys.S_IFDIR:
		sys.Close(fd)
		return -1, st, &fs.PathError{Op: op, Path: path, Err: syscall.EISDIR}
	}
	sys.Close(fd)
	return -1, st, &fs.PathError{Op: op, Path: path, Err: ErrNotRegular}
}

// The synchronous reads first try preadv2(RWF_NOWAIT) as a raw system
// call, which copies from the page cache without the Go scheduler's
// syscall bookkeeping, and make the ordinary blocking call only when the
// data is not cached (see engine/nowait.go and docs/engines.md: ~20% less
// CPU per GiB on warm data). After an EAGAIN the fast path is skipped for
// nowaitBackoff calls; it is off for O_DIRECT, for calls over nowaitMax
// bytes (a raw call holds its P), and for good once the kernel refuses it.
const (
	nowaitMax     = 1 << 20
	nowaitBackoff = 8
)

// nowait is one goroutine's fast-path state.
type nowait struct {
	off  bool
	skip int
}

// testMaxRead, if > 0, makes every synchronous read return at most that
// many bytes (from its first buffer only), as a partly cached file can
// with RWF_NOWAIT: tests set it to reach the code that goes on after a
// short read.
var testMaxRead int

// preadv reads iov (size bytes in all) at off: the fast path, else
// pread/preadv. Errors are bare errnos.
func (nw *nowait) preadv(fd int, iov []sys.Iovec, size int, off int64) (int, error) {
	if testMaxRead > 0 && size > testMaxRead {
		return sys.Pread(fd, unsafe.Slice(iov[0].Base, min(int(iov[0].Len), testMaxRead)), off)
	}
	if !nw.off && size <= nowaitMax {
		if nw.skip > 0 {
			nw.skip--
		} else {
			n, err := sys.PreadvNowait(fd, iov, off)
			switch {
			case err == nil && n > 0:
				return n, nil
			case err == nil:
				// 0: end of file, or nothing cached on a kernel that says
				// so with 0: let the blocking call decide.
			case err == sys.EAGAIN:
				nw.skip = nowaitBackoff
			case err == sys.EINTR:
			case err == sys.EOPNOTSUPP || err == sys.EINVAL || err == sys.ENOSYS:
				nw.off = true
			default:
				return 0, err
			}
		}
	}
	if len(iov) == 1 {
		return sys.Pread(fd, unsafe.Slice(iov[0].Base, iov[0].Len), off)
	}
	return sys.Preadv(fd, iov, off)
}

// preadFull reads b at off until b is full or the file ends; n < len(b)
// means end of file. With O_DIRECT a read that ends short of an aligned
// boundary is the end of the file. Errors are bare errnos.
func preadFull(fd int, b []byte, off int64, nw *nowait, direct bool) (int, error) {
	got := 0
	var iov [1]sys.Iovec
	for got < len(b) {
		rest := b[got:]
		iov[0].Base = &rest[0]
		iov[0].SetLen(len(rest))
		n, err := nw.preadv(fd, iov[:], len(rest), off+int64(got))
		if err != nil {
			return got, err
		}
		if n == 0 {
			break
		}
		got += n
		if direct && got%DirectAlign != 0 {
			break
		}
	}
	return got, nil
}

// readChunks fills dst from the file at off in chunks of bs bytes, taken
// in turn by up to workers goroutines (the caller's included), each chunk
// read straight into its place in dst. It returns the length of the
// prefix of dst that was read: less than len(dst) when the file ended
// first (the lowest end any chunk saw). With sequential, one goroutine
// reads with read(2) from the file position instead. Errors are bare
// errnos.
func readChunks(fd int, dst []byte, off int64, bs, workers int, direct, sequential bool) (int, error) {
	if bs <= 0 {
		bs = engine.DefaultBlockSize
	}
	nchunks := (len(dst) + bs - 1) / bs
	workers = max(1, min(workers, nchunks))
	if sequential || workers == 1 {
		if sequential {
			return readSeq(fd, dst, direct)
		}
		nw := nowait{off: direct}
		n := 0
		for n < len(dst) {
			want := min(bs, len(dst)-n)
			m, err := preadFull(fd, dst[n:n+want], off+int64(n), &nw, direct)
			n += m
			if err != nil {
				return n, err
			}
			if m < want {
				break
			}
		}
		return n, nil
	}
	var (
		next  atomic.Int64
		end   atomic.Int64 // lowest end of file seen
		errMu sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	end.Store(int64(len(dst)))
	work := func() {
		nw := nowait{off: direct}
		for {
			i := int(next.Add(1) - 1)
			lo := i * bs
			if i >= nchunks || int64(lo) >= end.Load() {
				return
			}
			hi := min(lo+bs, len(dst))
			m, err := preadFull(fd, dst[lo:hi], off+int64(lo), &nw, direct)
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
				end.Store(0) // stops the others
				return
			}
			if m < hi-lo {
				for e := end.Load(); int64(lo+m) < e && !end.CompareAndSwap(e, int64(lo+m)); e = end.Load() {
				}
			}
		}
	}
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return int(end.Load()), nil
}

// readSeq reads dst with read(2) from the file position.
func readSeq(fd int, dst []byte, direct bool) (int, error) {
	n := 0
	for n < len(dst) {
		b := dst[n:]
		if testMaxRead > 0 {
			b = b[:min(len(b), testMaxRead)]
		}
		m, err := sys.Read(fd, b)
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
		if direct && n%DirectAlign != 0 {
			break
		}
	}
	return n, nil
}

// ring is an io_uring ring for positioned reads into caller memory. It is
// used by one goroutine at a time, locked to its thread for the duration
// of a call, and made without SINGLE_ISSUER and DEFER_TASKRUN, so that
// successive calls may come from different threads. Every call reaps all
// it submitted before it returns. The user_data of a read is the index of
// its Request.
type ring struct {
	r      *uring.Ring
	depth  int // requests in flight at most
	cqes   []uring.CQE
	done   []int32        // the requests the last reap completed
	pin    runtime.Pinner // the buffers of the requests in flight
	broken bool           // failed with requests in flight: never reuse or free
}

// Fault injection for tests: testHookNewRing, if set, can make newRing
// fail; testHookSubmit, if set, runs after each SubmitAndWait of
// ring.read and can make it fail as if the ring had.
var (
	testHookNewRing func() error
	testHookSubmit  func() error
)

func newRing(depth int) (*ring, error) {
	// Honour the probe, IOPATH_DISABLE_IO_URING included, as the engines do.
	if err := uringUsable(callOpen); err != nil {
		return nil, err
	}
	if testHookNewRing != nil {
		if err := testHookNewRing(); err != nil {
			return nil, &engine.NotSupportedError{What: "io_uring", Reason: err.Error()}
		}
	}
	if depth <= 0 {
		depth = engine.DefaultQueueDepth
	}
	entries := uint32(1)
	for int(entries) < depth {
		entries <<= 1
	}
	r, err := uring.New(entries, uring.Options{CQSize: 2 * entries, SubmitAll: true})
	if err != nil {
		// A refusal (seccomp, the sysctl set since the probe) wraps
		// ErrNotSupported, and Auto falls back; running out of
		// descriptors or memory is reported as itself (EMFILE, ENOMEM).
		if err := engine.UringError(err); errors.Is(err, ErrNotSupported) {
			return nil, err
		}
		return nil, fmt.Errorf("io_uring: %w", err)
	}
	return &ring{r: r, depth: min(depth, int(r.SQEntries())), cqes: make([]uring.CQE, r.CQEntries())}, nil
}

func (g *ring) close() {
	if !g.broken {
		g.r.Close()
	}
}

// A ring that failed with reads in flight may still have the kernel
// write their buffers at any time: the ring (its descriptor and mappings)
// and the Pinner of those buffers are kept here for as long as the
// process lives, so that the memory stays pinned and is never freed or
// reused; leakedBufs does the same for pooled buffers such a ring was
// reading into (ReadFileBuf), which must never go back to the pool.
var (
	leakedMu    sync.Mutex
	leakedRings []*ring
	leakedBufs  []*bufpool.Buf
)

// ringError is the failure of a ring with reads in flight (see ring.fail).
type ringError struct{ err error }

func (e *ringError) Error() string { return "io_uring ring failed: " + e.err.Error() }
func (e *ringError) Unwrap() error { return e.err }

// ringFailed reports whether err says a ring failed with reads in flight,
// whose buffers the kernel may still write.
func ringFailed(err error) bool {
	var re *ringError
	return errors.As(err, &re)
}

// keepForever keeps b out of the pool for good: a failed ring may still
// write it.
func keepForever(b *bufpool.Buf) {
	leakedMu.Lock()
	leakedBufs = append(leakedBufs, b)
	leakedMu.Unlock()
}

// discard closes a ring that failed with nothing in the kernel's hands
// and unpins the buffers; the ring is marked broken so that it is never
// used again (a ring pool drops it). It returns err, put in the engine
// vocabulary (engine.UringError).
func (g *ring) discard(err error) error {
	g.pin.Unpin()
	g.r.Close()
	g.broken = true
	if err := engine.UringError(err); errors.Is(err, ErrNotSupported) {
		return err
	}
	return fmt.Errorf("io_uring: %w", err)
}

// fail marks the ring broken after err, keeping the ring and its pinned
// buffers for good, and returns a *ringError wrapping err.
func (g *ring) fail(err error) error {
	g.broken = true
	leakedMu.Lock()
	leakedRings = append(leakedRings, g)
	leakedMu.Unlock()
	return &ringError{err: err}
}

// maxSQELen is the most bytes one io_uring read asks for. An SQE's
// length is 32 bits, so a request of 4 GiB or more would wrap (and read
// a few bytes, or none, which looks like the end of the file); reads of
// at most 1 GiB, a multiple of DirectAlign so that O_DIRECT stays
// aligned, leave the rest to reap's short-read continuation. Tests lower
// it to reach that path with small files.
var maxSQELen = 1 << 30

// testNoInline, set by tests of the rings (fault injection, split reads),
// sends every request to the backend, cached or not.
var testNoInline bool

// testHookPrep, if set, sees the length of every io_uring read prepared.
var testHookPrep func(n int)

// prep prepares the read of the rest of reqs[i], at most maxSQELen bytes.
func (g *ring) prep(fd int32, reqs []Request, i int32) bool {
	sqe := g.r.GetSQE()
	if sqe == nil {
		return false
	}
	r := &reqs[i]
	b := r.Buf[r.N:]
	if len(b) > maxSQELen {
		b = b[:maxSQELen]
	}
	if testHookPrep != nil {
		testHookPrep(len(b))
	}
	sqe.PrepRead(fd, b, uint64(r.Off+int64(r.N)), uint64(i))
	return true
}

// reap handles the ready completions. The requests that are complete
// (full, at end of file, or failed: N and Err set, Err nil, io.EOF or a
// bare errno) are listed in g.done; a short read is asked again for the
// rest.
func (g *ring) reap(fd int32, reqs []Request, direct bool) {
	g.done = g.done[:0]
	k := g.r.PeekBatch(g.cqes)
	for _, c := range g.cqes[:k] {
		i := int32(c.UserData)
		r := &reqs[i]
		switch {
		case c.Res < 0:
			if e := syscall.Errno(-c.Res); (e == sys.EINTR || e == sys.EAGAIN) && g.prep(fd, reqs, i) {
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
				} else if g.prep(fd, reqs, i) {
					continue // a short read: ask for the rest
				} else {
					r.Err = errors.New("io_uring: submission queue full")
				}
			}
		}
		g.done = append(g.done, i)
	}
	g.r.Advance(k)
}

// read reads reqs[i] for i in idx (each with a non-empty Buf, from N on),
// keeping up to depth requests in flight, and sets their N and Err (nil,
// io.EOF or a bare errno). The buffers are pinned until every completion
// is reaped. The error is the ring's own failure, after which the ring is
// broken.
func (g *ring) read(fd int32, reqs []Request, idx []int32, direct bool) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, i := range idx {
		g.pin.Pin(unsafe.SliceData(reqs[i].Buf))
	}
	next, inflight := 0, 0
	for next < len(idx) || inflight > 0 {
		for inflight < g.depth && next < len(idx) && g.prep(fd, reqs, idx[next]) {
			next++
			inflight++
		}
		_, err := g.r.SubmitAndWait(1)
		if err == nil && testHookSubmit != nil {
			err = testHookSubmit()
		}
		if err != nil {
			if inflight == int(g.r.SQReady()) {
				// The kernel took none of the reads (io_uring_enter was
				// refused outright: a seccomp filter): none can write a
				// buffer now, so the ring is closed, not kept forever,
				// and a refusal says so (ErrNotSupported).
				return g.discard(err)
			}
			return g.fail(err)
		}
		g.reap(fd, reqs, direct)
		inflight -= len(g.done)
	}
	g.pin.Unpin()
	return nil
}

// ringPool holds up to max rings of a File, made as concurrent ReadBatch
// calls need them.
type ringPool struct {
	mu    sync.Mutex
	cond  sync.Cond
	free  []*ring
	made  int
	max   int
	depth int
}

// newRingPool makes the first ring, so that a ring that cannot be made
// shows at Open.
func newRingPool(rings, depth int) (*ringPool, error) {
	g, err := newRing(depth)
	if err != nil {
		return nil, err
	}
	p := &ringPool{free: []*ring{g}, made: 1, max: max(1, rings), depth: depth}
	p.cond.L = &p.mu
	return p, nil
}

// get returns a free ring, making one if the pool may, or nil when there
// is none and none can come back (every ring broke and no new one could
// be made): the caller reads with pread then. It waits only while a ring
// is in use by another call, which gives it back.
func (p *ringPool) get() *ring {
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
			g, err := newRing(p.depth)
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

func (p *ringPool) put(g *ring) {
	p.mu.Lock()
	if g.broken {
		// Leaked (ring.fail); a waiter may make a new one, or find that
		// none is left.
		p.made--
		p.mu.Unlock()
		p.cond.Broadcast()
		return
	}
	p.free = append(p.free, g)
	p.mu.Unlock()
	p.cond.Signal()
}

// errNoRing says that no ring could be had: the caller reads with pread.
var errNoRing = errors.New("io_uring: no ring could be made")

// read runs one batch on a ring of the pool.
func (p *ringPool) read(fd int32, reqs []Request, idx []int32, direct bool) error {
	g := p.get()
	if g == nil {
		return errNoRing
	}
	defer p.put(g)
	return g.read(fd, reqs, idx, direct)
}

// close closes the rings; every ring is back in the pool (File.Close
// waits for the reads in progress).
func (p *ringPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.free {
		g.close()
	}
	p.free = nil
}
