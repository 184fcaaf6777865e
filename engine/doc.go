// Package engine reads a file through one of Linux's I/O paths and hands its
// blocks to a consumer.
//
// Every path is an Engine behind one small contract, one file per engine:
// read (read(2) loop), pread (positioned reads, one region per worker), readv
// (preadv with k buffers per call), mmap (page-aligned shards of a mapping),
// io_uring (our own ring from internal/uring, one per worker) and null (no
// I/O, for measuring the runner itself).
//
// An engine never prints and never parses flags. Prepare does the one-time
// setup that a long-lived program pays once (rings, buffers, worker threads);
// Run is the measured phase: it opens the file, reads every block the Job
// asks for, hands each to the Sink, and closes the file.
//
// Blocks: a file of size S read with block size B is cut into ceil(S/B)
// blocks at offsets k*B; the last one may be short. The sequential pattern
// gives each worker a contiguous run of blocks; the random pattern visits
// every block exactly once in a seeded pseudo-random order (as fio does with
// its random map), so every pattern delivers the same set of blocks and the
// same checksum.
//
// Concurrency: Sink.Block is called from each worker's goroutine, so blocks
// of different workers arrive concurrently and, in the random pattern and
// across workers, out of order. The slice passed to Block is valid only for
// the duration of the call.
//
// Ending early: the first error (a failed read, a Sink's error, ctx
// cancelled) stops every worker. A Sink whose Block may wait for another
// worker (a reorder buffer) implements Stopper, and the engine calls its
// Stop as soon as the run is ending early, so that nothing waits for a
// block that will never come. A panic in Block stops the run as an error
// does and is raised again on Run's caller's goroutine, with the same
// value, once every worker has stopped, every read in flight is reaped
// and the file is closed (internal/panics carries it there).
//
// Files of unknown size: a file on a pseudo-filesystem (procfs, sysfs,
// debugfs...), whose st_size means nothing, or a regular file that
// reports size 0, is read by read, pread and readv with read(2) to its
// end, in order, by one worker, in blocks of BlockSize, up to
// Job.PseudoLimit bytes (ErrLimit past it). mmap, io_uring and null need
// a size: they return an error wrapping ErrNotSupported before
// delivering anything, so that the caller can read it with another
// engine (an empty regular file, found so with one read, is read as
// empty by all).
//
// Minimum kernel: 5.1 for io_uring (5.6 for OPENAT/STATX/CLOSE, 5.19 for
// single mmap); the other engines run on any Linux that Go supports.
package engine
