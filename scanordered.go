package iopath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
)

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
// O_DIRECT, else fileio.SkewFor(bs) bytes past a page boundary.
func blockBufs(n, bs int, direct bool) ([]*bufpool.Buf, [][]byte) {
	owners := make([]*bufpool.Buf, n)
	bufs := make([][]byte, n)
	skew := fileio.SkewFor(bs)
	for i := range owners {
		if direct {
			owners[i] = bufpool.GetAligned(bs)
			bufs[i] = owners[i].Bytes()[:bs]
		} else {
			owners[i] = bufpool.Get(bs + skew)
			bufs[i] = owners[i].Bytes()[skew : skew+bs : skew+bs]
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
			nw := fileio.Nowait{Off: o.direct}
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
				m, err := fileio.PreadFull(f.fd, b[:n], off, &nw, o.direct)
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
		err = callFn(fn, k*bs, blk.buf[:blk.n])
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
	depth := g.Depth()
	f, err := openScan(path, o.direct)
	if err != nil {
		g.Close()
		return true, err
	}
	bs := int64(c.BlockSize)
	nblocks := (f.size + bs - 1) / bs
	owners, bufs := blockBufs(depth, int(bs), o.direct)
	reqs := make([]fileio.Request, depth) // slot s: the block k with k%depth == s
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, b := range bufs {
		g.Pin(b)
	}
	fd := int32(f.fd)
	pending := make([]bool, depth) // the slot's read is in flight
	inflight := 0
	reap := func() {
		done := g.Reap(fd, reqs, o.direct)
		for _, s := range done {
			pending[s] = false
		}
		inflight -= len(done)
	}
	// Deferred, so that a panic in fn (on this goroutine) still reaps
	// every read in flight before the buffers go back and the file is
	// closed; the panic goes on afterwards.
	defer func() {
		for inflight > 0 && !g.Broken() {
			if e := g.Wait(); e != nil {
				if err == nil {
					err = &fs.PathError{Op: "read", Path: f.path, Err: e}
				}
				break
			}
			reap()
		}
		if !g.Broken() {
			// A broken ring may still write the buffers: they stay pinned
			// (Wait's failure keeps the Pinner reachable for good) and
			// are never given back to the pool.
			g.Unpin()
			releaseAll(owners)
		}
		g.Close()
		err = f.finish(err)
	}()
	need := func(k int64) int { return int(min(bs, f.size-k*bs)) }
	issue := func(k int64) bool {
		s := int32(k % int64(depth))
		n := need(k)
		if o.direct {
			n = alignUp(n)
		}
		reqs[s] = fileio.Request{Off: k * bs, Buf: bufs[s][:n]}
		if !g.Prep(fd, reqs, s) {
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
			if e := g.Wait(); e != nil {
				err = &fs.PathError{Op: "read", Path: f.path, Err: e}
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
			err = callFn(fn, r.Off, r.Buf[:n])
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
