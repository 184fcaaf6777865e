package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/unsized"
)

// catOptions are the flags of "iopath cat".
type catOptions struct {
	engine  string
	bs      int64
	workers int
	qd      int
	direct  bool
}

func init() { subcommands = append(subcommands, newCatCmd) }

func newCatCmd(stdout, stderr io.Writer) *cobra.Command {
	o := catOptions{engine: "pread", bs: engine.DefaultBlockSize, workers: 1, qd: engine.DefaultQueueDepth}
	cmd := &cobra.Command{
		Use:   "cat -e ENGINE [flags] FILE...",
		Short: "Write files to stdout through one engine",
		Long: `cat writes each FILE to stdout, in order and byte for byte, reading it
through the chosen engine. Blocks that an engine delivers out of order
(io_uring, several workers) are held in a bounded reorder buffer until
their turn. An engine this kernel cannot run falls back to pread, saying so
on stderr. Files of /proc and /sys, whose size is not known in advance,
are read to their end (up to 64 MiB each) by read, pread and readv; mmap
and io_uring need a size, so such a file is read with read instead,
saying so on stderr. An error in any worker (the file shrank, say) ends
the whole command at once; so does Ctrl-C, even while stdout's reader is
not reading.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCat(cmd.Context(), o, args, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.engine, "engine", "e", o.engine, "engine to read with ("+strings.Join(engine.Names(), ", ")+")")
	f.Var(sizeValue{&o.bs}, "bs", "block size (e.g. 4k, 128KiB, 1MiB)")
	f.IntVar(&o.workers, "workers", o.workers, fmt.Sprintf("workers reading each file in parallel (1 to %d)", engine.MaxWorkers))
	f.IntVar(&o.qd, "qd", o.qd, fmt.Sprintf("io_uring: requests in flight per worker (1 to %d; other engines have one)", engine.MaxQueueDepth))
	f.BoolVar(&o.direct, "direct", false, "open with O_DIRECT (bypass the page cache)")
	return cmd
}

func runCat(ctx context.Context, o catOptions, paths []string, stdout, stderr io.Writer) error {
	if len(paths) == 0 {
		return usagef("cat: no file given (reading stdin is not supported)")
	}
	for _, p := range paths {
		if p == "-" {
			return usagef("cat: reading stdin (-) is not supported; name a file")
		}
	}
	e, err := engine.Lookup(o.engine)
	if err != nil {
		return usagef("cat: %v", err)
	}
	if e.Caps().NoData {
		return usagef("cat: the %s engine delivers no data; choose another with -e", e.Name())
	}
	// Each flag's range first: memory is the question only for values
	// that are allowed at all.
	if o.workers < 1 || o.workers > engine.MaxWorkers {
		return usagef("cat: --workers %d out of range [1, %d]", o.workers, engine.MaxWorkers)
	}
	if o.qd < 1 || o.qd > engine.MaxQueueDepth {
		return usagef("cat: --qd %d out of range [1, %d]", o.qd, engine.MaxQueueDepth)
	}
	if o.bs < engine.MinBlockSize || o.bs > engine.MaxBlockSize {
		return usagef("cat: block size %d out of range [%d, %d]", o.bs, engine.MinBlockSize, engine.MaxBlockSize)
	}
	base := engine.Job{Path: "-", Pattern: engine.Sequential, BlockSize: int(o.bs),
		Workers: o.workers, QueueDepth: o.qd, Direct: o.direct}
	if err := base.WithDefaults().Validate(); err != nil {
		return usagef("cat: %v", err)
	}
	if err := checkBufferMemory("cat", o.workers, catInflight(e, o.qd), 1, o.bs); err != nil {
		return err
	}
	for _, path := range paths {
		job := base
		job.Path = path
		pr, err := e.Prepare(job)
		if err != nil && errors.Is(err, engine.ErrNotSupported) && e.Name() != "pread" {
			// Fall back, and stay on pread for the remaining files.
			fmt.Fprintf(stderr, "iopath: cat: %s not supported (%s); falling back to pread\n", e.Name(), notSupportedReason(err))
			if e, err = engine.Lookup("pread"); err != nil {
				return fmt.Errorf("cat: %w", err)
			}
			pr, err = e.Prepare(job)
		}
		if err != nil {
			return fmt.Errorf("cat: %w", err)
		}
		err = catFile(ctx, pr, job, catInflight(e, o.qd), stdout)
		if !errors.Is(err, errStuckWrite) {
			pr.Close() // else a write from its buffers is under way (see reorder.run)
		}
		if err != nil && errors.Is(err, engine.ErrNotSupported) && !job.Direct && e.Name() != "read" {
			// The engine cannot read this file (mmap and io_uring need a
			// size, which a file of /proc or /sys does not have). It says
			// so before delivering any block (engine.Prepared.Run), so
			// nothing of the file has been written: read(2) reads it to
			// its end. With O_DIRECT the refusal is the filesystem's, and
			// read would meet it too.
			fmt.Fprintf(stderr, "iopath: cat: %s cannot read %s (%s); reading it with read\n", e.Name(), quotePath(path), notSupportedReason(err))
			err = catWith(ctx, "read", job, stdout)
		}
		if errors.Is(err, engine.ErrLimit) {
			// Without the engine's hint for programmers (Job.PseudoLimit).
			err = unsized.Error(path, engine.DefaultPseudoLimit, "")
		}
		if errors.Is(err, syscall.EPIPE) {
			return nil // the reader went away: stop quietly, like cat
		}
		if err != nil {
			return fmt.Errorf("cat: %w", err)
		}
	}
	return nil
}

// notSupportedReason is the reason an error wrapping ErrNotSupported
// gives, or its whole text.
func notSupportedReason(err error) string {
	var ns *engine.NotSupportedError
	if errors.As(err, &ns) && ns.Reason != "" {
		return ns.Reason
	}
	return err.Error()
}

// catWith reads job's file into out with the engine called name.
func catWith(ctx context.Context, name string, job engine.Job, out io.Writer) error {
	e, err := engine.Lookup(name)
	if err != nil {
		return err
	}
	pr, err := e.Prepare(job)
	if err != nil {
		return err
	}
	err = catFile(ctx, pr, job, catInflight(e, job.QueueDepth), out)
	if !errors.Is(err, errStuckWrite) {
		pr.Close() // else a write from its buffers is under way (see reorder.run)
	}
	return err
}

// catInflight is how many blocks one worker of e can have in flight: the
// queue depth for an engine with a queue, else one.
func catInflight(e engine.Engine, qd int) int {
	if e.Caps().Queue {
		return qd
	}
	return 1
}

// catFile runs one prepared engine over job's file into out, in order.
func catFile(ctx context.Context, pr engine.Prepared, job engine.Job, inflight int, out io.Writer) error {
	r := newReorder(ctx, out, int64(job.BlockSize), catWindow(job), catFarCap(job, inflight))
	return r.run(pr, job.Path)
}

// run runs pr with r as its sink and says whether the whole file (path)
// was written in order.
//
// Interrupted (r.ctx done), the engine stops within milliseconds, except
// for a worker inside a write(2) to a pipe whose reader has stopped
// reading: nothing can cut that short. When a write has been under way
// for stuckWrite after the interrupt, run returns errStuckWrite at once,
// leaving that worker writing from the engine's buffer (the caller must
// not Close the engine under it): the process is about to exit, and
// waiting for the reader would break the promise to stop within a second.
func (r *reorder) run(pr engine.Prepared, path string) error {
	type result struct {
		st  *engine.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := pr.Run(r.ctx, r)
		done <- result{st, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-r.ctx.Done():
		tick := time.NewTicker(stuckWrite / 4)
		defer tick.Stop()
	wait:
		for {
			select {
			case res = <-done:
				break wait
			case <-tick.C:
				r.mu.Lock()
				stuck := r.writing && time.Since(r.writeStart) >= stuckWrite
				r.mu.Unlock()
				if stuck {
					return errStuckWrite
				}
			}
		}
	}
	st, err := res.st, res.err
	if r.werr != nil {
		if errors.Is(r.werr, syscall.EFAULT) {
			// write(2) from a mapping whose pages the file no longer has.
			return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (a mapped page vanished while it was written out)", engine.ErrChanged)}
		}
		return r.werr
	}
	if err != nil {
		return err
	}
	if r.err != nil {
		return r.err // stopped (ctx, Stop) although the engine said nothing
	}
	if n := st.Total().Bytes; r.next != n || len(r.pending) != 0 {
		return fmt.Errorf("%s: %d of %d bytes written in order, %d blocks left over", quotePath(path), r.next, n, len(r.pending))
	}
	return nil
}

// stuckWrite is how long a write to stdout may last after an interrupt
// before cat stops without waiting for it.
var stuckWrite = 100 * time.Millisecond

// errStuckWrite says cat was interrupted while stdout's reader was not
// reading; it is the interrupt's cancellation, so it reads "interrupted".
var errStuckWrite = fmt.Errorf("%w (stdout's reader was not reading)", context.Canceled)

// catWindow is how far ahead of the next byte to write the reorder buffer
// accepts blocks: at least 64 MiB, and twice what one io_uring worker can
// have in flight, so that a worker's own window never waits on itself.
func catWindow(job engine.Job) int64 {
	j := job.WithDefaults()
	return max(64<<20, 2*int64(j.QueueDepth)*int64(j.BlockSize))
}

// catFarCap is what the reorder buffer may hold beyond its window once it
// has stalled: every block the engine's workers can still deliver after
// one of them failed (inflight per worker, and up to catStopLag blocks
// that a synchronous worker reads between looks at its context), so that
// the others can hand over what they hold and stop; but never more than
// the window again, so that memory stays bounded whatever the flags.
func catFarCap(job engine.Job, inflight int) int64 {
	j := job.WithDefaults()
	need := int64(j.Workers) * int64(max(inflight, catStopLag)) * int64(j.BlockSize)
	return min(need, catWindow(job))
}

// catStopLag is how many blocks an engine's worker may still deliver after
// its run was cancelled (the synchronous engines look at their context
// every 64 blocks).
const catStopLag = 64

// reorderStall is how long a block beyond the window waits with no
// progress, and no write under way, before the reorder buffer decides
// that the block it waits for may never come (see reorder).
var reorderStall = 250 * time.Millisecond

// errReorderStopped is what Block returns after Stop(nil).
var errReorderStopped = errors.New("stopped")

// reorder is a Sink that writes blocks to out in file order.
//
// A block at the next offset to write is written straight from the
// engine's buffer (no copy), followed by any buffered blocks that are now
// contiguous; the write happens without the lock, so that other workers,
// Stop and a cancelled ctx are not held up by a slow reader of out. A block
// further ahead is copied into a buffer while it starts less than window
// bytes ahead; one further ahead waits (blocking its worker) until the
// write position comes near.
//
// Nothing waits without also watching ctx and Stop: an engine calls Stop
// (engine.Stopper) as soon as its run ends early, and every waiting and
// later Block returns that error at once. For an engine that does not,
// a worker waiting reorderStall with no progress and no write under way
// means the worker that holds the next block may have failed; the buffer
// then stalls, once and for good: from then on it also takes blocks beyond
// the window while what it holds stays under window+farCap, enough for
// every block the other workers can have in flight, so that they can stop.
// Memory stays bounded: at most about 2×window + farCap + one block.
// reorder stops waiting when the engine's run ends early.
var _ engine.Stopper = (*reorder)(nil)

type reorder struct {
	ctx    context.Context
	out    io.Writer
	bs     int64
	window int64
	farCap int64

	mu         sync.Mutex
	next       int64            // the offset of the next byte to write
	pending    map[int64][]byte // copied blocks waiting for their turn
	held       int64            // bytes in pending
	free       [][]byte         // recycled copy buffers
	writing    bool             // a Block is writing to out (without mu)
	writeStart time.Time        // when the write under way started
	waiting    int              // Blocks waiting for the write position to come near
	stalled    bool             // see reorder; never reset
	progress   chan struct{}    // closed (and replaced) when next advances or err is set
	err        error            // why every Block now fails: werr, Stop's error or ctx's
	werr       error            // the first write error
}

func newReorder(ctx context.Context, out io.Writer, bs, window, farCap int64) *reorder {
	return &reorder{ctx: ctx, out: out, bs: bs, window: window, farCap: farCap,
		pending: map[int64][]byte{}, progress: make(chan struct{})}
}

// Stop makes every waiting and later Block return err (engine.Stopper).
func (r *reorder) Stop(err error) {
	if err == nil {
		err = errReorderStopped
	}
	r.mu.Lock()
	r.fail(err)
	r.mu.Unlock()
}

func (r *reorder) Block(w int, off int64, b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if r.err == nil && r.ctx.Err() != nil {
			r.fail(r.ctx.Err())
		}
		switch {
		case r.err != nil:
			return r.err
		case off == r.next:
			return r.write(b)
		case off < r.next:
			return fmt.Errorf("block at offset %d delivered after the output passed it", off)
		case off-r.next < r.window || (r.stalled && r.held+int64(len(b)) <= r.window+r.farCap):
			buf := r.buffer()
			r.pending[off] = buf[:copy(buf, b)]
			r.held += int64(len(b))
			return nil
		}
		r.wait()
	}
}

// wait waits, with r.mu held on entry and on return, for progress, an
// error, ctx, or reorderStall; after a stall with no write under way it
// sets r.stalled.
func (r *reorder) wait() {
	ch, at := r.progress, r.next
	r.waiting++
	r.mu.Unlock()
	t := time.NewTimer(reorderStall)
	timedOut := false
	select {
	case <-ch:
	case <-r.ctx.Done():
	case <-t.C:
		timedOut = true
	}
	t.Stop()
	r.mu.Lock()
	r.waiting--
	if timedOut && r.next == at && !r.writing {
		r.stalled = true
	}
}

// write writes b (at r.next) and every buffered block contiguous with it,
// each without holding r.mu; r.mu is held on entry and on return.
func (r *reorder) write(b []byte) error {
	r.writing = true
	defer func() { r.writing = false }()
	var copied []byte // b, when it is one of ours
	for {
		r.writeStart = time.Now()
		r.mu.Unlock()
		_, err := r.out.Write(b)
		r.mu.Lock()
		if err != nil {
			r.werr = fmt.Errorf("write stdout: %w", err)
			r.fail(r.werr)
			return r.werr
		}
		r.next += int64(len(b))
		if copied != nil {
			r.free = append(r.free, copied[:cap(copied)])
		}
		r.wake()
		if r.err == nil && r.ctx.Err() != nil {
			r.fail(r.ctx.Err())
		}
		if r.err != nil {
			return r.err
		}
		nb, ok := r.pending[r.next]
		if !ok {
			return nil
		}
		delete(r.pending, r.next)
		r.held -= int64(len(nb))
		b, copied = nb, nb
	}
}

// fail sets r.err, the first time, and wakes every waiter.
func (r *reorder) fail(err error) {
	if r.err == nil {
		r.err = err
		r.wake()
	}
}

func (r *reorder) wake() {
	close(r.progress)
	r.progress = make(chan struct{})
}

func (r *reorder) buffer() []byte {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free = r.free[:n-1]
		return b
	}
	return make([]byte, r.bs)
}
