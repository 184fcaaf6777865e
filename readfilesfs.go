package iopath

import (
	"context"
	"errors"
	"io/fs"
	"sync"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/internal/panics"
)

// ReadFilesFS is ReadFiles over an fs.FS (os.DirFS, embed.FS,
// fstest.MapFS, a zip.Reader...): it reads every file named in names,
// each whole, walking directories, and calls fn once for each file with
// its bytes or its own error. Names are slash-separated and unrooted, as
// fs.ValidPath says; one that is not valid gets an *fs.PathError wrapping
// fs.ErrInvalid.
//
// It is a function of its own, with fsys first, because that is the shape
// Go gives file-system variants (os.ReadFile and fs.ReadFile,
// template.ParseFiles and ParseFS): an Option would make the same
// []string mean host paths or names in an fs.FS depending on a flag
// further along the call, and would let the options that need
// descriptors be combined with a file system that has none.
//
// A plain fs.FS has no file descriptors, so only ReadFiles' generic
// engines apply: each file is read with fs.ReadFile (which uses the
// file system's ReadFile method when it has one), by one goroutine
// (WithEngine("readfile")) or by WithWorkers goroutines at once
// (WithEngine("pool"), and Auto, which cannot sample the files'
// residency and takes pool with batch.DefaultPoolWorkers). raw and
// io_uring, which open and read by descriptor, give an error wrapping
// ErrNotSupported; WithBlockSize, WithQueueDepth, WithDirect and
// WithPseudoLimit do not apply. For files on the host, ReadFiles with
// paths takes every path.
//
// The walk is fs.WalkDir's: files in lexical order, symbolic links not
// followed into directories, FIFOs, sockets and devices reported with
// ErrNotRegular without being opened. Everything else is as for
// ReadFiles: data is valid only during the call (copy what you keep); fn
// may be called from several goroutines at once; a file's error (an
// *fs.PathError naming it: errors.Is(err, fs.ErrNotExist) works) goes to
// fn and does not stop the others unless fn returns an error, which
// ReadFilesFS returns as it is; a panic in fn goes on in the caller's
// goroutine once every reader has stopped; a cancelled ctx stops it
// promptly with ctx.Err().
func ReadFilesFS(ctx context.Context, fsys fs.FS, names []string, fn func(name string, data []byte, err error) error, opts ...Option) error {
	return public(readFilesFS(ctx, fsys, names, fn, opts))
}

// errNilFS is ReadFilesFS's error for a nil fs.FS.
var errNilFS = errors.New("iopath: ReadFilesFS: nil fs.FS")

func readFilesFS(ctx context.Context, fsys fs.FS, names []string, fn func(string, []byte, error) error, opts []Option) error {
	o, err := begin(ctx, callReadFilesFS, fn == nil, opts)
	if err != nil {
		return err
	}
	if fsys == nil {
		return errNilFS
	}
	workers := o.workers
	if workers == 0 {
		workers = batch.DefaultPoolWorkers
		if o.engine == "readfile" {
			workers = 1
		}
	}
	type item struct {
		name string
		err  error // the walk's error for it: not read
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		items = make(chan item)
		pan   panics.Carrier
		mu    sync.Mutex
		first error // fn's first error
		wg    sync.WaitGroup
	)
	read := func() (err error) {
		defer pan.Catch(&err)
		for it := range items {
			if wctx.Err() != nil {
				continue // drain: the feeder stops at once
			}
			var data []byte
			ferr := it.err
			if ferr == nil {
				data, ferr = fs.ReadFile(fsys, it.name)
			}
			if ferr != nil {
				data = nil
				ferr = public(ferr)
			}
			if err := fn(it.name, data, ferr); err != nil {
				return callerErr{err}
			}
		}
		return nil
	}
	for range workers {
		wg.Go(func() {
			if err := read(); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel() // the feeder stops; the other readers drain
			}
		})
	}
	send := func(it item) error {
		select {
		case items <- it:
			return nil
		case <-wctx.Done():
			return wctx.Err()
		}
	}
	for _, name := range names {
		if !fs.ValidPath(name) {
			if send(item{name: name, err: &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}}) != nil {
				break
			}
			continue
		}
		err := fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				// The root that cannot be stat'ed, or a directory that
				// cannot be listed (walked no further).
				return send(item{name: p, err: err})
			case d.IsDir():
				return nil
			case !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0:
				return send(item{name: p, err: &fs.PathError{Op: "open", Path: p, Err: notRegular{}}})
			}
			return send(item{name: p})
		})
		if err != nil {
			break // stopped: fn's error, a panic, or ctx
		}
	}
	close(items)
	wg.Wait()
	pan.Raise()
	if first != nil {
		return first
	}
	return ctx.Err()
}
