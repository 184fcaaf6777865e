// Package fileio is the one I/O layer under package engine, package batch
// and the public API (package iopath): the mechanisms that move a file's
// bytes into memory, each in one place.
//
//   - Nowait: the cached fast path, preadv2(RWF_NOWAIT) as a raw system
//     call, and its whole errno policy (nowait.go).
//   - Positioned reads into caller memory: PreadFull, ReadChunks (a
//     destination filled by several goroutines), ReadSeq, ReadNonblock
//     (pread.go).
//   - Batches of Requests: the inline RWF_NOWAIT pass (Inline) and the
//     coalescing preadv backend (ReadSync) (batch.go).
//   - io_uring into caller memory: Ring (prep, reap, pinning, the
//     failure that keeps buffers for good) and RingPool (ring.go). The
//     benchmark engine's ring (registered buffers, SINGLE_ISSUER on a
//     locked thread) is engine/uring.go; the ring itself is
//     internal/uring.
//   - Mappings: MmapCopy, CopyAt and CopyRequests, which turn a fault on a
//     truncated mapping into an error (mmap.go), all copying through
//     CopyMapped with the routine MappedCopy measured (copy.go).
//   - Buffer placement: BufferPlacement, the skew measured on the machine
//     (placement.go); DirectAlign (buffers.go).
//
// It holds mechanism, not policy: which path to take is internal/auto's
// and the callers'; errors are bare errnos (or the values the callers
// pass in), which the callers put in their own vocabulary (*fs.PathError,
// ErrNotSupported). Like everything under internal/, it imports nothing
// above it: internal/sys for system calls, internal/uring for the ring.
package fileio
