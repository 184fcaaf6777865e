package iopath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/unsized"
)

// errNilContext is returned for a nil ctx, rather than a panic.
var errNilContext = errors.New("iopath: nil context")

// begin is where the calls that take a ctx and a callback (Scan,
// ReadFiles) start: a nil fn or ctx is an error, a ctx already done ends
// the call before anything is read, then the options are parsed.
func begin(ctx context.Context, c call, nilFn bool, opts []Option) (options, error) {
	switch {
	case nilFn:
		return options{}, ErrNilFunc
	case ctx == nil:
		return options{}, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return options{}, err
	}
	return parseOptions(c, opts)
}

// Scan reads every block of the file at path exactly once and calls fn
// with each: off is the block's offset, b its bytes. Blocks are
// BlockSize bytes (WithBlockSize; Auto's choice or 128 KiB by default),
// the last one short; an empty file calls fn never and returns nil.
//
// Concurrency: by default the blocks arrive out of order and fn is called
// from several goroutines at once (one per worker, each reading its own
// contiguous share of the file), so fn must be safe for concurrent use.
// WithOrdered delivers the blocks in offset order, one call at a time
// (fn is never called concurrently then, though not always from the same
// goroutine), while the file is still read ahead in parallel:
// Choice.Workers goroutines pread the next blocks into a window of pooled
// buffers (WithQueueDepth blocks in all, 4 per worker by default) and fn
// gets each as soon as every block before it has been delivered; with
// io_uring one ring keeps the window in flight; with mmap one goroutine
// walks the mapping in order, zero-copy (read-ahead is the kernel's,
// asked for with MADV_WILLNEED).
//
// b is valid only during the call: the buffer is reused (or the mapping
// unmapped) afterwards. Copy what you keep.
//
// Stopping: an error returned by fn stops every worker and is returned
// as it is (errors.Is(err, yourErr) holds; so does err == yourErr). A
// panic in fn stops every worker too, and goes on in the caller's
// goroutine once Scan has stopped its workers, reaped its reads and
// closed the file, so that the caller can recover it on every path (when
// fn ran on a worker's goroutine, it is raised again there with the
// value fn panicked with; the stack shows Scan, not fn).
// Cancelling ctx stops the workers within about one block each and Scan
// returns ctx.Err(); a ctx already cancelled when Scan is called returns
// ctx.Err() before the file is opened, and fn is never called.
//
// The engine is Auto's choice (kind Blocks) unless WithEngine names one:
// read, pread, readv, mmap or io_uring, run through package engine. A
// regular file that reports size 0, and any file of a pseudo-filesystem
// (procfs, sysfs, debugfs, tracefs, configfs, securityfs, cgroup), whose
// size means nothing (4096 for a sysfs attribute), is read by the read
// engine with read(2) to its end, in order, on the calling goroutine,
// whatever the engine (an explicit io_uring that cannot run here is still
// an error), up to WithPseudoLimit's limit (DefaultPseudoLimit by
// default; ErrLimit past it). Errors are *fs.PathError naming path
// (EISDIR for a directory, ErrNotRegular for a FIFO, socket or device,
// ErrChanged when the file shrank or changed size while it was read — a
// shrinking mapped file is an error, never a crash — and ErrLimit),
// ErrNilFunc for a nil fn, and errors wrapping ErrNotSupported for an
// explicit engine that cannot run here.
func Scan(ctx context.Context, path string, opts []Option, fn func(off int64, b []byte) error) error {
	o, err := begin(ctx, callScan, fn == nil, opts)
	if err != nil {
		return err
	}
	var st sys.Stat_t
	if err := sys.Stat(path, &st); err != nil {
		return err
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
	case sys.S_IFDIR:
		return &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	default:
		return &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	var c auto.Choice
	if !o.direct && (st.Size == 0 || unsized.PseudoPath(path)) {
		// Without O_DIRECT (which these files refuse anyway) a file that
		// states no size, or whose size means nothing, is read to its end
		// by the read engine, in order, on the calling goroutine.
		if err := o.checkEngine(callScan); err != nil {
			return err
		}
		c = auto.Choice{Engine: "read", Workers: 1, BlockSize: o.blockSize, Rule: ruleUnsized}
		_, err = scanEngine(ctx, path, &c, &o, fn)
		return scanErr(ctx, err)
	}
	c, err = plan(callScan, &o, auto.Workload{Kind: auto.Blocks, Path: path, Size: st.Size, Direct: o.direct, Resident: -1})
	if err != nil {
		return err
	}
	if c.BlockSize == 0 {
		c.BlockSize = engine.DefaultBlockSize
	}
	var ran bool
	if o.ordered {
		ran, err = scanOrdered(ctx, path, &c, &o, fn)
	} else {
		ran, err = scanEngine(ctx, path, &c, &o, fn)
	}
	if !ran && c.Rule != ruleWithEngine && c.Engine != "pread" && errors.Is(err, ErrNotSupported) {
		// Auto's engine could not start here after all (a ring refused
		// at setup): pread can.
		c.Engine = "pread"
		if o.ordered {
			_, err = scanOrdered(ctx, path, &c, &o, fn)
		} else {
			_, err = scanEngine(ctx, path, &c, &o, fn)
		}
	}
	return scanErr(ctx, err)
}

// ruleUnsized is the Choice's Rule for a file of unknown size.
const ruleUnsized = "unsized"

// scanErr is Scan's error: ctx.Err() itself when the error is ctx's.
func scanErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return ctx.Err()
	}
	return err
}

// scanEngine runs c's engine over the file; ran says whether it got past
// Prepare (a fallback is only taken before that).
//
// A panic in fn is caught by the engine where fn ran (an engine's
// goroutine, where nothing could recover it), stops the engine like an
// error, and is raised again by Run on this goroutine once the engine
// has stopped its workers, reaped its reads and closed the file; p.Close
// then runs as the panic goes on.
func scanEngine(ctx context.Context, path string, c *auto.Choice, o *options, fn func(int64, []byte) error) (ran bool, err error) {
	e, err := engine.Lookup(c.Engine)
	if err != nil {
		return false, err
	}
	p, err := e.Prepare(engine.Job{Path: path, BlockSize: c.BlockSize, Workers: c.Workers, QueueDepth: c.QueueDepth, Direct: o.direct, PseudoLimit: o.pseudoLimit})
	if err != nil {
		return false, fmt.Errorf("iopath: Scan %s: %w", path, err)
	}
	defer p.Close()
	done := ctx.Done()
	var fnLimit atomic.Bool // fn returned an ErrLimit of its own
	_, err = p.Run(ctx, engine.SinkFunc(func(_ int, off int64, b []byte) error {
		// The engines look at ctx every 64 blocks; a slow fn must not
		// make a cancel wait for 64 of its calls.
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		err := fn(off, b)
		if err != nil && errors.Is(err, ErrLimit) {
			fnLimit.Store(true)
		}
		return err
	}))
	if err != nil && !fnLimit.Load() && errors.Is(err, ErrLimit) {
		// The engine's limit error names its Job field; Scan's caller
		// raises the limit with an option.
		err = o.limitErr(path)
	}
	return true, err
}

// scanOrdered delivers the blocks in offset order (see Scan).
func scanOrdered(ctx context.Context, path string, c *auto.Choice, o *options, fn func(int64, []byte) error) (bool, error) {
	switch {
	case c.Engine == "io_uring":
		return scanOrderedUring(ctx, path, c, o, fn)
	case c.Workers == 1 || c.Engine == "mmap" || c.Engine == "read":
		// One worker of a synchronous engine delivers its blocks in order,
		// on the calling goroutine; mmap needs no read-ahead buffers, and
		// read(2) reads from one file position.
		one := *c
		one.Workers = 1
		return scanEngine(ctx, path, &one, o, fn)
	}
	return true, scanOrderedPread(ctx, path, c, o, fn)
}

// orderedDepth is WithOrdered's read-ahead window per worker.
func orderedDepth(c *auto.Choice, workers int) int {
	if c.QueueDepth > 0 {
		return max(1, c.QueueDepth/workers)
	}
	return 4
}

// blockBufs returns n pooled buffers of bs bytes, page-aligned for
// O_DIRECT, else bufferSkew bytes past a page boundary.
func blockBufs(n, bs int, direct bool) ([]*bufpool.Buf, [][]byte) {
	owners := make([]*bufpool.Buf, n)
	bufs := make([][]byte, n)
	for i := range owners {
		if direct {
			owners[i] = bufpool.GetAligned(bs)
			bufs[i] = owners[i].Bytes()[:bs]
		} else {
			owners[i] = bufpool.Get(bs + bufferSkew)
			bufs[i] = owners[i].Bytes()[bufferSkew : bufferSkew+bs : bufferSkew+bs]
		}
	}
	return owners, bufs
}

func releaseAll(owners []*bufpool.Buf) {
	for _, b := range owners {
		b.Release()
	}
}

// scanFile is the open file of an ordered scan.
type scanFile struct {
	fd   int
	path string
	size int64
}

func openScan(path string, direct bool) (*scanFile, error) {
	fd, st, err := openRegular(path, direct, "read")
	if err != nil {
		return nil, err
	}
	// io_uring honours O_NONBLOCK (EAGAIN instead of waiting for the disk).
	if err := sys.ClearNonblock(fd); err != nil {
		sys.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return &scanFile{fd: fd, path: path, size: st.Size}, nil
}

// shrunk is the error for a block that ended before the size seen at open.
func (f *scanFile) shrunk(off int64) error {
	return &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("%w: end of file at offset %d, expected %d bytes", ErrChanged, off, f.size)}
}

// finish checks, as the engines do, that the file still has the size it
// had at open (a read that raced a truncation may have returned blocks
// that are no longer the file's), and closes it.
func (f *scanFile) finish(err error) error {
	if err == nil {
		var st sys.Stat_t
		if serr := sys.Fstat(f.fd, &st); serr != nil {
			err = &fs.PathError{Op: "stat", Path: f.path, Err: serr}
		} else if st.Size != f.size {
			err = &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("%w: %d bytes at open, %d now", ErrChanged, f.size, st.Size)}
		}
	}
	sys.Close(f.fd)
	return err
}

// block is one block read ahead for an ordered scan.
type block struct {
	buf []byte
	n   int
	err error
}

// scanOrderedPread is WithOrdered with several workers: worker w preads
// blocks w, w+W, w+2W, ... into its own depth buffers and queues them;
// the calling goroutine takes block k from worker k%W's queue, calls fn,
// and hands the buffer back. A worker is never more than depth blocks
// ahead of delivery, so memory is W×depth blocks whatever the file's
// size, and the workers keep reading while fn runs.
func scanOrderedPread(ctx context.Context, path string, c *auto.Choice, o *options, fn func(int64, []byte) error) (err error) {
	f, err := openScan(path, o.direct)
	if err != nil {
		return err
	}
	// Deferred, so that a panic in fn (on this goroutine) still stops the
	// workers, then gives back the buffers and closes the file, in that
	// order (defers run last first).
	defer func() { err = f.finish(err) }()
	bs := int64(c.BlockSize)
	nblocks := (f.size + bs - 1) / bs
	workers := int(min(int64(c.Workers), max(nblocks, 1)))
	depth := orderedDepth(c, workers)
	owners, bufs := blockBufs(workers*depth, int(bs), o.direct)
	defer releaseAll(owners)
	ready := make([]chan block, workers)
	free := make([]chan []byte, workers)
	for w := range workers {
		ready[w] = make(chan block, depth)
		free[w] = make(chan []byte, depth)
		for _, b := range bufs[w*depth : (w+1)*depth] {
			free[w] <- b
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := wctx.Done()
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for w := range workers {
		wg.Go(func() {
			nw := nowait{off: o.direct}
			for k := int64(w); k < nblocks; k += int64(workers) {
				var b []byte
				select {
				case b = <-free[w]:
				case <-stop:
					return
				}
				off := k * bs
				need := int(min(bs, f.size-off))
				n := need
				if o.direct {
					n = alignUp(need)
				}
				m, err := preadFull(f.fd, b[:n], off, &nw, o.direct)
				if err != nil {
					err = &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("at offset %d: %w", off+int64(m), err)}
				} else if m < need {
					err = f.shrunk(off + int64(m))
				}
				// Never blocks: the worker owns depth buffers and its
				// queue has room for depth blocks.
				ready[w] <- block{buf: b, n: min(m, need), err: err}
				if err != nil {
					return
				}
			}
		})
	}
	done := ctx.Done()
	for k := int64(0); k < nblocks && err == nil; k++ {
		w := k % int64(workers)
		var blk block
		select {
		case blk = <-ready[w]:
		case <-done:
			err = ctx.Err()
			continue
		}
		select {
		case <-done:
			err = ctx.Err()
			continue
		default:
		}
		if blk.err != nil {
			err = blk.err
			continue
		}
		err = fn(k*bs, blk.buf[:blk.n])
		free[w] <- blk.buf
	}
	return err
}

// scanOrderedUring is WithOrdered through one io_uring ring on the
// calling goroutine, locked to its thread: block k is read into slot
// k%depth, the window's reads are in flight together, and each slot is
// asked for the block depth ahead as soon as fn is done with its block.
// ran is false when the ring could not be made (nothing was read).
func scanOrderedUring(ctx context.Context, path string, c *auto.Choice, o *options, fn func(int64, []byte) error) (ran bool, err error) {
	g, err := newRing(c.QueueDepth)
	if err != nil {
		return false, fmt.Errorf("iopath: Scan %s: %w", path, err)
	}
	depth := g.depth
	f, err := openScan(path, o.direct)
	if err != nil {
		g.close()
		return true, err
	}
	bs := int64(c.BlockSize)
	nblocks := (f.size + bs - 1) / bs
	owners, bufs := blockBufs(depth, int(bs), o.direct)
	reqs := make([]Request, depth) // slot s: the block k with k%depth == s
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, b := range bufs {
		g.pin.Pin(unsafe.SliceData(b))
	}
	fd := int32(f.fd)
	pending := make([]bool, depth) // the slot's read is in flight
	inflight := 0
	reap := func() {
		g.reap(fd, reqs, o.direct)
		for _, s := range g.done {
			pending[s] = false
		}
		inflight -= len(g.done)
	}
	// Deferred, so that a panic in fn (on this goroutine) still reaps
	// every read in flight before the buffers go back and the file is
	// closed; the panic goes on afterwards.
	defer func() {
		for inflight > 0 && !g.broken {
			if _, serr := g.r.SubmitAndWait(1); serr != nil {
				if e := g.fail(serr); err == nil {
					err = &fs.PathError{Op: "read", Path: f.path, Err: e}
				}
				break
			}
			reap()
		}
		if !g.broken {
			// A broken ring may still write the buffers: they stay pinned
			// (g.fail keeps the Pinner reachable for good) and are never
			// given back to the pool.
			g.pin.Unpin()
			releaseAll(owners)
		}
		g.close()
		err = f.finish(err)
	}()
	need := func(k int64) int { return int(min(bs, f.size-k*bs)) }
	issue := func(k int64) bool {
		s := int32(k % int64(depth))
		n := need(k)
		if o.direct {
			n = alignUp(n)
		}
		reqs[s] = Request{Off: k * bs, Buf: bufs[s][:n]}
		if !g.prep(fd, reqs, s) {
			return false
		}
		pending[s] = true
		inflight++
		return true
	}
	issued := int64(0)
	for ; issued < min(nblocks, int64(depth)) && issue(issued); issued++ {
	}
	done := ctx.Done()
	for k := int64(0); k < nblocks && err == nil; k++ {
		s := int32(k % int64(depth))
		for pending[s] {
			if _, serr := g.r.SubmitAndWait(1); serr != nil {
				err = &fs.PathError{Op: "read", Path: f.path, Err: g.fail(serr)}
				break
			}
			reap()
		}
		if err != nil {
			break
		}
		select {
		case <-done:
			err = ctx.Err()
			continue
		default:
		}
		r := &reqs[s]
		n := need(k)
		switch {
		case r.Err != nil && r.Err != io.EOF:
			err = &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("at offset %d: %w", r.Off+int64(r.N), r.Err)}
		case r.N < n:
			err = f.shrunk(r.Off + int64(r.N))
		default:
			err = fn(r.Off, r.Buf[:n])
		}
		if err == nil && issued < nblocks {
			if !issue(issued) {
				err = &fs.PathError{Op: "read", Path: f.path, Err: errors.New("io_uring: submission queue full")}
			}
			issued++
		}
	}
	return true, err
}
