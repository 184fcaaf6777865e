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
saying so on stderr.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCat(cmd.Context(), o, args, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.engine, "engine", "e", o.engine, "engine to read with ("+strings.Join(engine.Names(), ", ")+")")
	f.Var(sizeValue{&o.bs}, "bs", "block size (e.g. 4k, 128KiB, 1MiB)")
	f.IntVar(&o.workers, "workers", o.workers, "workers reading each file in parallel")
	f.IntVar(&o.qd, "qd", o.qd, "io_uring: requests in flight per worker")
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
	if o.workers < 1 || o.qd < 1 {
		return usagef("cat: --workers and --qd must be at least 1")
	}
	if o.bs < engine.MinBlockSize || o.bs > engine.MaxBlockSize {
		return usagef("cat: block size %d out of range [%d, %d]", o.bs, engine.MinBlockSize, engine.MaxBlockSize)
	}
	if err := checkBufferMemory("cat", o.workers, o.qd, 1, o.bs); err != nil {
		return err
	}
	base := engine.Job{Path: "-", Pattern: engine.Sequential, BlockSize: int(o.bs),
		Workers: o.workers, QueueDepth: o.qd, Direct: o.direct}
	if err := base.WithDefaults().Validate(); err != nil {
		return usagef("cat: %v", err)
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
		err = catFile(ctx, pr, job, stdout)
		pr.Close()
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
	defer pr.Close()
	return catFile(ctx, pr, job, out)
}

// catFile runs one prepared engine over job's file into out, in order.
func catFile(ctx context.Context, pr engine.Prepared, job engine.Job, out io.Writer) error {
	r := newReorder(out, int64(job.BlockSize), catWindow(job))
	st, err := pr.Run(ctx, r)
	if r.err != nil {
		if errors.Is(r.err, syscall.EFAULT) {
			// write(2) from a mapping whose pages the file no longer has.
			return &fs.PathError{Op: "read", Path: job.Path, Err: fmt.Errorf("%w (a mapped page vanished while it was written out)", engine.ErrChanged)}
		}
		return r.err
	}
	if err != nil {
		return err
	}
	if n := st.Total().Bytes; r.next != n || len(r.pending) != 0 {
		return fmt.Errorf("%s: %d of %d bytes written in order, %d blocks left over", job.Path, r.next, n, len(r.pending))
	}
	return nil
}

// catWindow is how far ahead of the next byte to write the reorder buffer
// accepts blocks: at least 64 MiB, and twice what one io_uring worker can
// have in flight, so that a worker's own window never waits on itself.
func catWindow(job engine.Job) int64 {
	j := job.WithDefaults()
	return max(64<<20, 2*int64(j.QueueDepth)*int64(j.BlockSize))
}

// reorderStall is how long a block beyond the window waits with no
// progress before it is buffered anyway.
var reorderStall = time.Second

// reorder is a Sink that writes blocks to out in file order.
//
// A block at the next offset to write is written straight from the
// engine's buffer (no copy), followed by any buffered blocks that are now
// contiguous. A block further ahead is copied into a buffer; memory is
// bounded by the window: a block that starts window bytes or more ahead
// waits (blocking its worker) until the write position comes near. So the
// buffer holds at most window+bs bytes, plus, in one case, one block per
// worker per reorderStall: a worker that waits that long with no progress
// anywhere is let through, because the worker that holds the next block
// may have failed, and a Sink cannot see the engine's other workers stop;
// without this the run would deadlock instead of returning that error.
type reorder struct {
	out    io.Writer
	bs     int64
	window int64

	mu       sync.Mutex
	next     int64            // the offset of the next byte to write
	pending  map[int64][]byte // copied blocks waiting for their turn
	free     [][]byte         // recycled copy buffers
	progress chan struct{}    // closed (and replaced) when next advances
	err      error            // the first write error; every later block returns it
}

func newReorder(out io.Writer, bs, window int64) *reorder {
	return &reorder{out: out, bs: bs, window: window, pending: map[int64][]byte{}, progress: make(chan struct{})}
}

func (r *reorder) Block(w int, off int64, b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	stalled := false
	for {
		switch {
		case r.err != nil:
			return r.err
		case off == r.next:
			return r.write(b)
		case off < r.next:
			return fmt.Errorf("block at offset %d delivered after the output passed it", off)
		case off-r.next < r.window || stalled:
			buf := r.buffer()
			r.pending[off] = buf[:copy(buf, b)]
			return nil
		}
		// Too far ahead: wait for the write position to come near.
		ch, at := r.progress, r.next
		r.mu.Unlock()
		t := time.NewTimer(reorderStall)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		r.mu.Lock()
		stalled = r.next == at
	}
}

// write writes b (at r.next) and every buffered block contiguous with it.
func (r *reorder) write(b []byte) error {
	for {
		if _, err := r.out.Write(b); err != nil {
			r.err = fmt.Errorf("write stdout: %w", err)
			close(r.progress) // wake waiters, which then return r.err
			r.progress = make(chan struct{})
			return r.err
		}
		r.next += int64(len(b))
		nb, ok := r.pending[r.next]
		if !ok {
			break
		}
		delete(r.pending, r.next)
		r.free = append(r.free, nb[:cap(nb)])
		b = nb
	}
	close(r.progress)
	r.progress = make(chan struct{})
	return nil
}

func (r *reorder) buffer() []byte {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free = r.free[:n-1]
		return b
	}
	return make([]byte, r.bs)
}
