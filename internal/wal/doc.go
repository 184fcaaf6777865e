// Package wal is the mechanism behind iopath.OpenLog: a write-ahead log
// file of framed records (frame.go), the reader that checks them and finds
// where a torn tail begins (reader.go), opening, locking and recovering a
// log file (open.go), and the group committer (commit.go) that gathers
// concurrent appends into one write and one fdatasync, driven by one of
// two engines: pwrite(2) + fdatasync(2) (pwrite.go), or a WRITE linked to
// an FSYNC on an io_uring ring owned by one locked thread (uring.go).
//
// The on-disk format and the rules that tell a torn tail from corruption
// are described in frame.go and in docs/log.md.
//
// Concurrency: a Log's Append, Replay and Stats are safe for concurrent
// use; Close waits for the Appends already queued. Records handed to a
// Replay or Scan callback are valid only during the call.
//
// Errors are plain: they name the file and the offset and wrap the errno,
// ErrCorrupt or fs.ErrClosed; the caller (package iopath) puts them in its
// vocabulary (the "iopath: " prefix, ErrNotSupported for a refused ring).
// Like everything under internal/, it imports nothing above it:
// internal/sys for system calls, internal/uring for the ring. Linux only
// (io_uring's WRITE and FSYNC: 5.6; the ring flags are stepped down on
// older kernels).
package wal
