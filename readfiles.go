package iopath

import (
	"context"
	"runtime"

	"github.com/iopath/iopath/batch"
)

// Option changes how ReadFiles reads.
type Option func(*readOptions)

type readOptions struct {
	engine     string
	workers    int
	workersSet bool
}

// WithEngine makes ReadFiles use the named batch engine (see batch.Names:
// "readfile", "pool", "raw", "io_uring", ...) instead of its own choice,
// with that engine's default workers unless WithWorkers says otherwise.
func WithEngine(name string) Option {
	return func(o *readOptions) { o.engine = name }
}

// WithWorkers sets how many files are read at once (goroutines, or rings
// for io_uring); 0 means the engine's default. At most batch.MaxWorkers.
func WithWorkers(n int) Option {
	return func(o *readOptions) { o.workers, o.workersSet = n, true }
}

// defaultPlan is ReadFiles' choice of engine and workers when no option
// says otherwise. For now: the raw engine (openat, one read into a reused
// buffer, close — 3 system calls for a file smaller than 64 KiB, against
// os.ReadFile's 10), with 2 workers when the program may run 2 threads at
// once, else 1. To be revisited with measurements (io_uring, more workers
// for cold files).
func defaultPlan() (engine string, workers int) {
	if runtime.GOMAXPROCS(0) >= 2 {
		return "raw", 2
	}
	return "raw", 1
}

// ReadFiles reads every file in paths, each whole, and calls fn once for
// each with its bytes or its own error. A path that is a directory is
// walked: files in lexical order, subdirectories recursively. Symlinks to
// files are followed, and so is a symlink to a directory given in paths;
// symlinks to directories found by the walk are reported as errors, not
// walked; FIFOs, sockets and devices found by the walk are reported with
// batch.ErrNotRegular, not opened.
//
// data is valid only during the call: the buffer is reused afterwards, so
// copy what you keep. fn may be called from several goroutines at once.
//
// err, when not nil, is that file's own error, an *fs.PathError naming
// path (errors.Is(err, fs.ErrNotExist), fs.ErrPermission, syscall.ELOOP,
// ... work); data is nil then. One unreadable file does not stop the
// others: ReadFiles goes on unless fn returns an error — return err to
// stop at the first unreadable file. ReadFiles returns fn's first error,
// ctx's error if ctx is cancelled (it then stops promptly), or an error
// that stopped the whole batch (an unknown engine, an engine that cannot
// run here, a bad option).
func ReadFiles(ctx context.Context, paths []string, fn func(path string, data []byte, err error) error, opts ...Option) error {
	var o readOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.engine == "" {
		var workers int
		o.engine, workers = defaultPlan()
		if !o.workersSet {
			o.workers = workers
		}
	}
	e, err := batch.Lookup(o.engine)
	if err != nil {
		return err
	}
	job := batch.Job{Paths: paths, Workers: o.workers}
	_, err = batch.Read(ctx, e, job, func(f *batch.File) error {
		return fn(f.Path, f.Data, f.Err)
	})
	return err
}
