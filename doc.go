// Package iopath reads files through the fastest of Linux's I/O paths —
// read, pread, preadv, mmap, io_uring — chosen for each read from the
// file's size, whether it is in the page cache, the access pattern and
// what the kernel supports, behind four small entry points.
//
// The engines behind them live in subpackages (engine for one file, batch
// for many) and are measured side by side by the iopath command
// (cmd/iopath). docs/api.md in the repository is the longer guide.
//
// # Entry points
//
// ReadFile reads one whole file into a new slice (ReadFileBuf into a
// pooled buffer):
//
//	data, err := iopath.ReadFile("index.bin")
//
// Scan hands every block of a file to a callback, read by several workers
// at once:
//
//	err := iopath.Scan(ctx, "big.log", func(off int64, b []byte) error {
//		count.Add(int64(bytes.Count(b, []byte{'\n'}))) // concurrent calls
//		return nil
//	})
//
// Open returns a *File for positioned reads: io.ReaderAt, and ReadBatch
// for many requests in one call (io_uring, or coalesced parallel preads):
//
//	f, err := iopath.Open("table.db")
//	defer f.Close()
//	reqs := []iopath.Request{{Off: 0, Buf: hdr}, {Off: 1 << 20, Buf: page}}
//	err = f.ReadBatch(reqs)
//
// ReadFiles reads many small files (walking directories), each whole,
// and ReadFilesFS the same from an fs.FS (os.DirFS, embed.FS,
// fstest.MapFS):
//
//	err := iopath.ReadFiles(ctx, []string{"src/"}, func(path string, data []byte, err error) error {
//		return err // or use data, valid during this call only
//	})
//
// The calls that take a callback take it in the same place, before the
// options: Scan(ctx, path, fn, opts...), ReadFiles(ctx, paths, fn,
// opts...), ReadFilesFS(ctx, fsys, names, fn, opts...).
//
// # Concurrency
//
// Scan's fn is called from several goroutines at once, one per worker,
// with blocks out of order; WithOrdered makes it one call at a time, in
// offset order. ReadFiles' fn is called from several goroutines at once.
//
// A panic in a callback (Scan's fn, ReadFiles' fn, an engine.Sink) never
// ends the process from a goroutine the caller cannot reach: it stops the
// call as an error would, and is raised again on the caller's goroutine,
// with the value the callback panicked with, once every worker has
// stopped, every read in flight is reaped and every file is closed, so
// that a deferred recover in the caller catches it and nothing leaks.
// A *File is safe for concurrent use by any number of goroutines, and
// its Close waits for the reads in progress. ReadFile, ReadFileBuf, Open
// and the Options are safe to use from any goroutine.
//
// # Buffer lifetimes
//
// The b passed to Scan's fn and the data passed to ReadFiles' fn are
// valid only during the call: the memory is reused (or unmapped) when it
// returns, so copy what you keep. ReadFile's slice belongs to the caller.
// ReadFileBuf's *bufpool.Buf must be Released exactly once, after which
// its bytes must not be used. ReadBatch and ReadAt write only into the
// caller's buffers and keep no reference to them after they return, with
// one exception: after an error saying an io_uring ring failed, the
// kernel may still write the buffers of the requests it had in flight,
// which are then kept pinned for good and must not be reused.
//
// # Errors
//
// Every error the package returns starts "iopath: ", and every error
// about a file wraps an *fs.PathError naming it (errors.As finds it), so
// that errors.Is(err, fs.ErrNotExist), fs.ErrPermission, syscall.EISDIR
// work. Three kinds pass through unchanged, so that == works on them:
// io.EOF (io.ReaderAt's contract), ctx.Err(), and the errors a caller's
// own callback returned.
// ReadFile, Scan and Open refuse a FIFO, socket or device with
// ErrNotRegular (nothing here ever blocks on a FIFO; see ErrNotRegular for
// ReadFiles), and a file that shrinks under Scan gives ErrChanged. A
// file whose size is not known in advance (/proc, /sys, a regular file
// that reports size 0) is read to its end up to a limit
// (DefaultPseudoLimit, WithPseudoLimit), past which the error wraps
// ErrLimit: /proc/self/pagemap never fills memory. A path
// that cannot run here (io_uring disabled, O_DIRECT with mmap or on a
// filesystem that refuses it) gives an error wrapping ErrNotSupported
// with the reason, when it was asked for with WithEngine; Auto never asks
// for one. An io_uring ring that cannot be made for want of a resource
// is not "not supported": the call fails with that error, under Auto too
// (errors.Is(err, syscall.EMFILE), ENFILE, ENOMEM hold).
// Misuse has its own errors: ErrNilFunc (nil callback), ErrNilContext
// (nil ctx, where the standard library would panic), ErrNegativeOffset,
// ErrOverlap (ReadBatch buffers sharing memory), ErrUnaligned (O_DIRECT),
// fs.ErrClosed (a closed File, as os reports it), ctx.Err() for a context
// cancelled before the call (the callback is then never called), and an
// error naming the option for a value out of range or an engine name
// unknown to that call. Nothing here panics on bad input.
//
// # Auto, and how to override it
//
// By default each call asks Auto (internal/auto) which path to take: a
// table of rules, each backed by a measurement, over the kind of access,
// the file's size, its residency in the page cache (mincore on a bounded
// sample), O_DIRECT, GOMAXPROCS and the kernel's io_uring support. A
// ReadFile of a file under 8 MiB skips the question (the answer is one
// read). WithEngine overrides the choice for one call. The environment
// variable IOPATH_ENGINE=name overrides Auto's engine for every call
// where the name is valid and can run (it is ignored otherwise, and Auto's
// reason says so); IOPATH_DISABLE_IO_URING=1 makes io_uring unavailable,
// as on a kernel or container without it, so that Auto falls back and an
// explicit WithEngine("io_uring") fails with ErrNotSupported.
//
// Auto's choice is visible: Plan(path, ForReadFile) (ForScan, ForOpen,
// ForReadFiles) returns the Choice a call would make for a path now —
// engine, workers, block size, queue depth, the rule and the reason —
// without reading the file, and File.Choice says what an open File uses,
// fallbacks included, so that a program can log it and a test can pin it.
//
// Buffered reads place their buffers where the kernel's copy into them is
// fastest on this CPU: a skew past a page boundary measured once per
// process (a few milliseconds, on the first buffer of 64 KiB or more) or
// set by IOPATH_BUFFER_SKEW=N; the best place differs between CPUs
// (docs/engines.md). Copies of 64 KiB and more out of a mapping use the
// routine measured faster on this CPU, memmove or REP MOVSB (about 1 ms,
// once per process), or the one IOPATH_MAPPED_COPY names.
//
// # Kernel
//
// Linux only: a build for another GOOS stops at internal/sys with one
// line, "undefined: iopath_builds_on_Linux_only". The io_uring paths need IORING_OP_READ (Linux 5.6) for one
// file and 5.18 or later for ReadFiles' batched open/statx/read/close
// chains (direct descriptors, sparse file tables); on older kernels, or
// where io_uring is disabled (the kernel.io_uring_disabled sysctl, a
// container's seccomp profile forbidding any of io_uring_setup,
// io_uring_register and io_uring_enter: the probe makes all three), Auto
// does not choose it and uses the synchronous paths, which run on any
// Linux that Go supports. Where io_uring is refused only after the
// process first probed it (the sysctl set meanwhile), the call that
// meets the refusal falls back before it has read anything (ReadFile,
// Scan and Open to pread, ReadFiles to raw) and Auto stops choosing
// io_uring for the rest of the process.
package iopath
