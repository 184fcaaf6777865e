// Package uring is iopath's own thin io_uring ring: the kernel ABI, ring
// setup and mapping, SQE preparation, batched submission, CQE reaping,
// registered files and buffers, and the opcode probe. It is mechanism only:
// which flags to ask for, how deep to queue and what to do with a result is
// the caller's policy (engine/uring.go).
//
// Minimum kernel: 5.1 for a ring (NOP, READV, READ_FIXED); 5.4 for the
// single ring mapping; 5.6 for READ, OPENAT, STATX, CLOSE and the probe;
// 5.15 for direct descriptors (OPENAT/CLOSE into a file slot); 5.19 for
// sparse file tables and COOP_TASKRUN; 6.0 for SINGLE_ISSUER; 6.1 for
// DEFER_TASKRUN; 6.6 for NO_SQARRAY. New steps optional flags down when the
// kernel refuses them.
//
// Concurrency: a Ring is not safe for concurrent use. One goroutine owns it.
// A ring set up with SINGLE_ISSUER or DEFER_TASKRUN must, in addition, be
// created and used from one OS thread: the owning goroutine calls
// runtime.LockOSThread before New and keeps it locked until Close;
// otherwise io_uring_enter fails with EEXIST once the goroutine migrates.
//
// Memory: everything a request points at (buffers, iovecs, paths, statx
// structs) is used by the kernel until the request's completion is reaped,
// so it must live off the Go heap (sys.MmapAnon) or be pinned until then,
// also after a cancel or an error. The user_data of every request is an
// index into a table the caller owns, never a Go pointer. Reap every
// in-flight request before freeing its memory or closing the ring.
package uring
