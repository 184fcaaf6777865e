package iopath

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/sys"
)

// ReadFiles reads every file in paths, each whole, and calls fn once for
// each with its bytes or its own error. A path that is a directory is
// walked: files in lexical order, subdirectories recursively. Symlinks to
// files are followed, and so is a symlink to a directory given in paths;
// symlinks to directories found by the walk are reported as errors, not
// walked; FIFOs, sockets and devices found by the walk are reported with
// ErrNotRegular, not opened. One named directly in paths is opened
// without blocking and reported with ErrNotRegular, except by the raw
// engine, which reads it (see ErrNotRegular).
//
// The engine is Auto's choice (kind ManyFiles: the files' median size and
// how much of them is in the page cache, from a bounded sample) unless
// WithEngine names a batch engine: readfile, pool, raw or io_uring.
// WithWorkers is the number of files read at once, WithQueueDepth
// io_uring's files in flight per ring, WithBlockSize the first read's
// buffer per file. Under Auto, an engine that cannot start (io_uring
// refused at setup) is replaced by raw before any file is read.
//
// data is valid only during the call: the buffer is reused afterwards, so
// copy what you keep. fn may be called from several goroutines at once.
// A panic in fn stops the batch and goes on in ReadFiles' caller, on the
// caller's goroutine, with fn's value, once every reader has stopped and
// every file is closed (see the package documentation). A file whose
// size is not known in advance (/proc, /sys) is read up to
// WithPseudoLimit's limit, DefaultPseudoLimit by default; past it its
// err wraps ErrLimit.
//
// err, when not nil, is that file's own error, wrapping an *fs.PathError naming
// path (errors.Is(err, fs.ErrNotExist), fs.ErrPermission, syscall.ELOOP,
// ErrNotRegular ... work); data is nil then. One unreadable file does not
// stop the others: ReadFiles goes on unless fn returns an error — return
// err to stop at the first unreadable file. ReadFiles returns fn's first
// error, ctx's error if ctx is cancelled (it then stops promptly; a ctx
// cancelled before the call reads nothing and calls fn never),
// ErrNilFunc for a nil fn, or an error that stopped the whole batch (a
// bad option, an engine that cannot run here, wrapping ErrNotSupported).
func ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte, err error) error, opts ...Option) error {
	return public(readFiles(ctx, paths, fn, opts))
}

func readFiles(ctx context.Context, paths []string, fn func(path string, data []byte, err error) error, opts []Option) error {
	o, err := begin(ctx, callReadFiles, fn == nil, opts)
	if err != nil {
		return err
	}
	c, err := plan(callReadFiles, &o, auto.Workload{Kind: auto.ManyFiles, Paths: paths, Resident: -1})
	if err != nil {
		return err
	}
	var called atomic.Bool
	each := func(f *batch.File) error {
		called.Store(true)
		err := f.Err
		if sys.Unopenable(f.Path, err) {
			// A socket named in paths cannot be opened at all (the walk
			// knows a socket it finds from its listing).
			err = &fs.PathError{Op: "open", Path: f.Path, Err: batch.ErrNotRegular}
		}
		if err != nil && errors.Is(err, batch.ErrNotRegular) {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = &fs.PathError{Op: pe.Op, Path: pe.Path, Err: notRegular{}}
			}
		}
		if err := fn(f.Path, f.Data, public(err)); err != nil {
			return callerErr{err} // the caller's: it comes back as it is
		}
		return nil
	}
	err = readBatch(ctx, c, &o, paths, each)
	if err != nil && c.Rule != ruleWithEngine && c.Engine != "raw" && !called.Load() && errors.Is(err, ErrNotSupported) {
		c.Engine, c.QueueDepth = "raw", 0
		err = readBatch(ctx, c, &o, paths, each)
	}
	return err
}

func readBatch(ctx context.Context, c auto.Choice, o *options, paths []string, fn batch.Func) error {
	e, err := batch.Lookup(c.Engine)
	if err != nil {
		return err
	}
	job := batch.Job{Paths: paths, Workers: c.Workers, Depth: c.QueueDepth, BufferSize: c.BlockSize, PseudoLimit: o.pseudoLimit}
	_, err = batch.Read(ctx, e, job, fn)
	return err
}

// notRegular is batch's "not a regular file" made to match both
// ErrNotRegular and batch.ErrNotRegular, so that errors.Is answers the
// same for every entry point of this package.
type notRegular struct{}

func (notRegular) Error() string { return batch.ErrNotRegular.Error() }

func (notRegular) Is(target error) bool {
	return target == engine.ErrNotRegular || target == batch.ErrNotRegular
}
