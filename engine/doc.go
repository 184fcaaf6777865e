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
// Minimum kernel: 5.1 for io_uring (5.6 for OPENAT/STATX/CLOSE, 5.19 for
// single mmap); the other engines run on any Linux that Go supports.
package engine
