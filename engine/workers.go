package engine

import (
	"context"
	"errors"
	"io/fs"
	"runtime/debug"
	"sync"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/panics"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/unsized"
	"github.com/iopath/iopath/metrics"
)

// control is one run's stop machinery, which every engine's Run shares:
// the workers' context, cancelled with the first failure as its cause;
// the sink's Stop, called once when that context ends before the run
// does; and the carrier of a panic on a worker's goroutine, raised again
// on Run's caller's goroutine by finish.
type control struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	pan     panics.Carrier
	unhook  func() bool   // unregisters the Stop hook; nil without one
	stopped chan struct{} // closed when Stop has returned
}

// begin starts a run with sink: the returned control's ctx is the
// workers' context. Every begin must be followed by one end, after the
// last worker has returned.
func begin(ctx context.Context, sink Sink) *control {
	c := &control{}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	if s, ok := sink.(Stopper); ok {
		c.stopped = make(chan struct{})
		wctx := c.ctx
		c.unhook = context.AfterFunc(wctx, func() {
			defer close(c.stopped)
			s.Stop(context.Cause(wctx))
		})
	}
	return c
}

// fail ends the run early: the workers' context is cancelled with err as
// its cause, which a Stopper sink receives. Only the first call counts.
func (c *control) fail(err error) { c.cancel(err) }

// end waits for the sink's Stop to return if it was called (so that it
// never runs after Run has returned) and releases the context. A run
// that ended without failing never calls Stop.
func (c *control) end() {
	if c.unhook != nil && !c.unhook() {
		<-c.stopped
	}
	c.cancel(nil)
}

// block hands one block to sink, catching a panic in it (see Sink). The
// io_uring engine calls the sink through it, so that its worker goes on
// to reap the reads in flight; the other engines catch panics where
// their workers end (runWorkers).
func (c *control) block(sink Sink, w int, off int64, b []byte) (err error) {
	defer c.pan.Catch(&err)
	return sink.Block(w, off, b)
}

// runWorkers runs fn for workers 0..n-1, each in its own goroutine (one
// worker runs on the calling goroutine), and waits. The first error ends
// the run (c.fail) and is returned; a context error is returned only when
// nothing else failed. A panic in fn (a sink's, or the engine's own)
// ends that worker, whose deferred clean-up runs, and the run, as an
// error would; it is kept in c for c's owner to raise again.
func runWorkers(c *control, n int, fn func(ctx context.Context, w int) error) error {
	work := func(w int) (err error) {
		defer c.pan.Catch(&err)
		return fn(c.ctx, w)
	}
	if n == 1 {
		err := work(0)
		if err != nil {
			c.fail(err)
		}
		return err
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(w); err != nil {
				errs[w] = err
				c.fail(err)
			}
		}()
	}
	wg.Wait()
	return firstError(errs)
}

// firstError returns the first error that is not a context error, else the
// first context error: a worker's real failure explains the others'
// cancellation.
func firstError(errs []error) error {
	var ctxErr error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if err == context.Canceled || err == context.DeadlineExceeded {
			if ctxErr == nil {
				ctxErr = err
			}
			continue
		}
		return err
	}
	return ctxErr
}

// eofPolicy is what a synchronous engine does with a file whose size is
// not known in advance (file.unsized): read it to its end into buf, or,
// when buf is nil, refuse it as engine what, which needs a size to.
type eofPolicy struct {
	buf      []byte
	what, to string
}

// toEOF reads files of unknown size to their end into buf, one block of
// the job's block size.
func toEOF(buf []byte) eofPolicy { return eofPolicy{buf: buf} }

// sizeOnly refuses files of unknown size (see file.needSize).
func sizeOnly(what, to string) eofPolicy { return eofPolicy{what: what, to: to} }

// readFile is the measured phase the synchronous engines share: open the
// job's file, plan its blocks, run worker once per worker (each in its own
// goroutine), and close the file. A file of unknown size is read by
// readToEOF instead, or refused, as eof says. The stats are returned also
// on error; a panic in sink is raised again last (see Sink).
func readFile(ctx context.Context, job *Job, sink Sink, eof eofPolicy, worker func(ctx context.Context, f *file, p *plan, w int, ws *WorkerStats) error) (*Stats, error) {
	f, err := openFile(job)
	if err != nil {
		return nil, err
	}
	defer f.close()
	if f.unsized && eof.buf == nil {
		if err := f.needSize(eof.what, eof.to); err != nil {
			return nil, err
		}
	}
	st := newStats(job)
	c := begin(ctx, sink)
	if f.unsized {
		err = runWorkers(c, 1, func(ctx context.Context, _ int) error {
			return readToEOF(ctx, f, job, eof.buf, sink, &st.Workers[0])
		})
	} else {
		p := newPlan(job, f.size)
		err = runWorkers(c, job.Workers, func(ctx context.Context, w int) error {
			return worker(ctx, f, &p, w, &st.Workers[w])
		})
		if err == nil {
			st.Workers[0].Syscalls++
			err = f.checkSize()
		}
	}
	c.end()
	if cerr := f.close(); err == nil {
		err = cerr
	}
	c.pan.Raise()
	return st, err
}

// readToEOF reads f, whose size is not known in advance, with read(2)
// from its start until a read returns 0 bytes, and hands it to sink in
// order from worker 0, in blocks at offsets k*len(buf): a block goes to
// the sink when buf is full, the last one at the end. A pseudo-file's
// reads may end short anywhere, so they are gathered into whole blocks,
// as for a regular file. Past job.PseudoLimit bytes it fails with
// ErrLimit. Latency is the time of the reads that made a block.
func readToEOF(ctx context.Context, f *file, job *Job, buf []byte, sink Sink, ws *WorkerStats) error {
	limit := unsized.Limit(job.PseudoLimit)
	var off int64
	var t0 int64
	n := 0
	deliver := func() error {
		if ws.Lat != nil {
			ws.Lat.RecordTicks(metrics.Ticks() - t0)
		}
		if err := sink.Block(0, off, buf[:n]); err != nil {
			return err
		}
		ws.Bytes += int64(n)
		ws.Blocks++
		off += int64(n)
		n = 0
		return nil
	}
	for {
		// Pseudo-files are read a page or so per call: look at ctx every
		// time, a block may take many calls.
		if err := ctx.Err(); err != nil {
			return err
		}
		if ws.Lat != nil && n == 0 {
			t0 = metrics.Ticks()
		}
		ws.Syscalls++
		m, err := sys.Read(f.fd, buf[n:])
		if err != nil {
			return f.readErr(off+int64(n), err)
		}
		if m == 0 {
			if n > 0 {
				return deliver()
			}
			return nil
		}
		if off+int64(n+m) > limit {
			return unsized.Error(f.path, limit, "engine.Job.PseudoLimit")
		}
		n += m
		if n == len(buf) {
			if err := deliver(); err != nil {
				return err
			}
		}
	}
}

// prepareJob is the start of every engine's Prepare: defaults, validation,
// and the one-time calibration of the latency clock, so that it is paid in
// setup rather than in the first measured run.
func prepareJob(job Job) (Job, error) {
	job = job.WithDefaults()
	if err := job.Validate(); err != nil {
		return job, err
	}
	if job.Pattern == Append || job.Sync != (Sync{}) || job.Size != 0 {
		return job, errors.New("append, sync and size are for write jobs (see Writer)")
	}
	if job.Latency {
		metrics.InitClock()
	}
	return job, nil
}

// newStats returns Stats for job's workers, with histograms when latency is
// recorded.
func newStats(job *Job) *Stats {
	s := &Stats{Workers: make([]WorkerStats, job.Workers)}
	if job.Latency {
		for i := range s.Workers {
			s.Workers[i].Lat = metrics.NewHistogram()
		}
	}
	return s
}

// checkEvery is how many blocks a worker reads between looks at its context.
const checkEvery = 64

// catchFault turns a memory fault in a mapped file (SIGBUS after the file
// shrank, delivered as a panic under debug.SetPanicOnFault) into an error.
// It must be deferred directly, after SetPanicOnFault(true) in the same
// goroutine. Other panics are re-raised.
func catchFault(errp *error, path string) {
	r := recover()
	if r == nil {
		return
	}
	if fileio.IsFault(r) {
		*errp = &fs.PathError{Op: "read", Path: path, Err: ErrChanged}
		return
	}
	panic(r)
}

// faultsAsErrors sets this goroutine to turn faults into panics and returns
// the function that restores the old setting.
func faultsAsErrors() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}
