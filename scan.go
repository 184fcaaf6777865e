package iopath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/unsized"
)

// begin is where the calls that take a ctx and a callback (Scan,
// ReadFiles) start: a nil fn or ctx is an error, a ctx already done ends
// the call before anything is read, then the options are parsed.
func begin(ctx context.Context, c call, nilFn bool, opts []Option) (options, error) {
	switch {
	case nilFn:
		return options{}, ErrNilFunc
	case ctx == nil:
		return options{}, ErrNilContext
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
// asked for with MADV_WILLNEED). A file that Auto reads with one worker
// (under 8 MiB: rule small-file) is read on the calling goroutine, in
// order, with one pooled buffer, as an os.File.Read loop would.
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
// default; ErrLimit past it). Errors wrap an *fs.PathError naming path
// (EISDIR for a directory, ErrNotRegular for a FIFO, socket or device,
// ErrChanged when the file shrank or changed size while it was read — a
// shrinking mapped file is an error, never a crash — and ErrLimit),
// ErrNilFunc for a nil fn, and errors wrapping ErrNotSupported for an
// explicit engine that cannot run here.
func Scan(ctx context.Context, path string, fn func(off int64, b []byte) error, opts ...Option) error {
	return public(scan(ctx, path, fn, opts))
}

// callFn calls Scan's fn, marking its error as the caller's (callerErr), so
// that it comes back as it is.
func callFn(fn func(int64, []byte) error, off int64, b []byte) error {
	if err := fn(off, b); err != nil {
		return callerErr{err}
	}
	return nil
}

func scan(ctx context.Context, path string, fn func(off int64, b []byte) error, opts []Option) error {
	o, err := begin(ctx, callScan, fn == nil, opts)
	if err != nil {
		return err
	}
	// The file is opened first and every look at it after that goes
	// through the descriptor: a small file is read through it, and no
	// path is looked up twice (a stat and a statfs by path cost a small
	// Scan 6–17%: BenchmarkScanSizes).
	fd, st, err := openRegular(path, false, "read")
	if err != nil {
		return err
	}
	defer sys.Close(fd) // read-only: close cannot lose data
	c, err := scanPlan(fd, path, &st, &o, true)
	if err != nil {
		return err
	}
	if c.Rule == ruleSmallFile && c.Engine == "pread" && c.Workers == 1 && !o.direct {
		done, err := scanSmall(ctx, fd, path, st.Size, c.BlockSize, fn)
		if done {
			return scanErr(ctx, err)
		}
		// Its size proved wrong before anything was delivered, and it is
		// a pseudo-file: read it to its end.
		if c, err = unsizedPlan(&o); err != nil {
			return err
		}
	}
	if c.Rule == ruleUnsized {
		_, err = scanEngine(ctx, path, &c, &o, fn)
		return scanErr(ctx, err)
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

const unsizedReason = "a file that states no size, or whose size means nothing (a pseudo-file), is read with read(2) to its end, in order, on the calling goroutine"

// scanPlan is how Scan reads the regular file open at fd (path, whose
// fstat is st). Without O_DIRECT (which they refuse anyway) a file that states
// no size, or whose size means nothing, is read to its end by the read
// engine, in order, on the calling goroutine (ruleUnsized); any other by
// plan's choice. Plan(path, ForScan) asks it too. lazy leaves out the
// filesystem check (fstatfs) for a file that plan reads in one block on
// the calling goroutine (rule small-file): scanSmall makes it only when
// the size proves wrong, so that the common small read pays nothing.
func scanPlan(fd int, path string, st *sys.Stat_t, o *options, lazy bool) (auto.Choice, error) {
	size := st.Size
	if !o.direct && size == 0 {
		return unsizedPlan(o)
	}
	c, err := plan(callScan, o, auto.Workload{Kind: auto.Blocks, Path: path, Size: size, Direct: o.direct, Resident: -1,
		FS: fsFor(fd, profile.Blocks, size)})
	if err != nil {
		return c, err
	}
	if c.BlockSize == 0 {
		c.BlockSize = engine.DefaultBlockSize
	}
	oneBlock := c.Rule == ruleSmallFile && c.Workers == 1 && size <= int64(c.BlockSize)
	if !o.direct && !(lazy && oneBlock) && unsized.PseudoStat(fd, st.Dev) {
		return unsizedPlan(o)
	}
	return c, nil
}

// unsizedPlan is the plan for a file of unknown size (ruleUnsized).
func unsizedPlan(o *options) (auto.Choice, error) {
	if err := o.checkEngine(callScan); err != nil {
		return auto.Choice{}, err
	}
	return auto.Choice{Engine: "read", Workers: 1, BlockSize: o.blockSize, Rule: ruleUnsized, Reason: unsizedReason}, nil
}

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
	_, err = p.Run(ctx, engine.SinkFunc(func(_ int, off int64, b []byte) error {
		// The engines look at ctx every 64 blocks; a slow fn must not
		// make a cancel wait for 64 of its calls.
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		return callFn(fn, off, b)
	}))
	// fn's own ErrLimit (a callerErr, see Scan) stays fn's.
	if _, own := err.(callerErr); err != nil && !own && errors.Is(err, ErrLimit) {
		// The engine's limit error names its Job field; Scan's caller
		// raises the limit with an option.
		err = o.limitErr(path)
	}
	return true, err
}

// scanSmall is Scan of a small file by Auto's rule small-file (one worker
// of pread), on the calling goroutine with one pooled buffer: what an
// os.File.Read loop costs, without an engine's goroutine, buffers and
// its second look at the file (BenchmarkScanSizes: a Scan of 64 KiB took
// 25 µs through the engine, 17 µs for the loop). The blocks are
// delivered in order. The file is read through fd, the descriptor Scan
// opened; the last read asks one byte more than the size, so a file that
// grew shows without an fstat, and one that ended early is ErrChanged,
// as the engines say it. done is false, with nothing delivered, when the
// first read shows that the size is wrong and the file is a pseudo-file
// (whose size means nothing: see scanPlan's lazy): the caller then reads
// it to its end.
func scanSmall(ctx context.Context, fd int, path string, size int64, bs int, fn func(int64, []byte) error) (done bool, err error) {
	bs = int(min(int64(bs), size)) // a small file's buffer is no larger than it
	skew := fileio.SkewFor(bs)
	owner := bufpool.Get(skew + bs + 1)
	defer owner.Release()
	buf := owner.Bytes()[skew : skew+bs+1]
	var nw fileio.Nowait
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		n := int(min(int64(bs), size-off))
		want := n
		if off+int64(n) == size {
			want++ // one more: the end shows, or that the file grew
		}
		got, err := fileio.PreadFull(fd, buf[:want], off, &nw, false)
		if err == nil && got != n && off == 0 && unsized.PseudoFD(fd) {
			return false, nil
		}
		switch {
		case err != nil:
			return true, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("at offset %d: %w", off+int64(got), err)}
		case got < n:
			return true, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: end of file at offset %d, expected %d bytes", ErrChanged, off+int64(got), size)}
		case got > n:
			return true, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes at open, more now", ErrChanged, size)}
		}
		if err := callFn(fn, off, buf[:n]); err != nil {
			return true, err
		}
		off += int64(n)
	}
	return true, nil
}
