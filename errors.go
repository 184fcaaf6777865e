package iopath

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/iopath/iopath/engine"
)

// ErrNotSupported is wrapped by errors for a path this kernel, process or
// configuration cannot take: io_uring asked for by WithEngine when it is
// unavailable (the error carries the probe's reason), O_DIRECT with mmap,
// O_DIRECT on a filesystem that refuses it. It is the same value as
// features.ErrNotSupported, engine.ErrNotSupported, batch.ErrNotSupported,
// netio.ErrNotSupported, filesrv.ErrNotSupported and
// writev.ErrNotSupported, so errors.Is matches errors from all of them.
//
// Auto never returns it for io_uring: it falls back to another path and
// says why in its Choice's Reason.
var ErrNotSupported = engine.ErrNotSupported

// ErrNotRegular is wrapped (inside an *fs.PathError) by errors for a FIFO,
// socket or device: ReadFile, Scan and Open read regular files only, so
// that a FIFO can never block them and /dev/zero can never fill memory.
// It is the same value as engine.ErrNotRegular, batch.ErrNotRegular and
// fio.ErrNotRegular.
//
// ReadFiles reports FIFOs, sockets and devices found by its walk with it
// (errors.Is matches batch.ErrNotRegular too), without opening them. One
// named directly in its paths is opened with O_NONBLOCK, so that the open
// never blocks, and what follows depends on the engine: readfile, pool and
// io_uring report it with ErrNotRegular; raw reads it, so that a FIFO with
// no writer reads as empty (no error) and a device that never ends, such
// as /dev/zero, gives ErrNotRegular once it has filled its buffer.
var ErrNotRegular = engine.ErrNotRegular

// ErrChanged is wrapped (inside an *fs.PathError) by Scan's error when the
// file shrank or changed size while it was read (a short read before the
// size seen at the start, or a SIGBUS on a mapping). It is the same value
// as engine.ErrChanged.
var ErrChanged = engine.ErrChanged

// ErrLimit is wrapped (inside an *fs.PathError) by the error of a read of
// a file whose size is not known in advance (a pseudo-file of procfs,
// sysfs and the like, or a regular file that reports size 0) that went on
// past the limit for such files: DefaultPseudoLimit unless the call raised
// it with WithPseudoLimit. It is the same value as engine.ErrLimit,
// batch.ErrLimit and bufpool.ErrLimit.
var ErrLimit = engine.ErrLimit

// DefaultPseudoLimit is the most bytes read from a file whose size is not
// known in advance unless the call sets another limit (see ErrLimit).
const DefaultPseudoLimit = engine.DefaultPseudoLimit

// ErrNilFunc is returned by Scan, ReadFiles and ReadFilesFS when the
// callback is nil. Nothing is opened or read.
var ErrNilFunc = errors.New("iopath: nil callback")

// ErrNilContext is returned by Scan, ReadFiles and ReadFilesFS when ctx
// is nil, where the standard library would panic. Nothing is opened or
// read.
var ErrNilContext = errors.New("iopath: nil context")

// ErrNegativeOffset is wrapped (inside an *fs.PathError with Op "readat")
// by File.ReadAt's error, and by a Request's Err in File.ReadBatch, when
// the offset is negative.
var ErrNegativeOffset = errors.New("negative offset")

// ErrOverlap is wrapped (inside an *fs.PathError with Op "readbatch") by
// File.ReadBatch's error when two requests' buffers share memory: both
// would be written at once, and the result would depend on timing.
// Nothing is read then.
var ErrOverlap = errors.New("overlapping request buffers")

// ErrUnaligned is wrapped (inside an *fs.PathError) by the error of a read
// from a File opened WithDirect whose offset, length or buffer address is
// not a multiple of DirectAlign: O_DIRECT transfers whole aligned blocks
// between the device and memory. bufpool.GetAligned returns buffers that
// qualify.
var ErrUnaligned = errors.New("offset, length or buffer address not aligned to 4096 bytes for O_DIRECT")

// DirectAlign is the alignment WithDirect requires of file offsets,
// lengths and buffer addresses. Devices ask for their logical block size
// (often 512 bytes); 4096 satisfies every common device and is the page
// size, so page-aligned buffers always qualify.
const DirectAlign = 4096

// Every error this package returns says where it comes from: its text
// starts "iopath: ", and the error it wraps stays reachable with
// errors.Is and errors.As (an *fs.PathError naming the file, a sentinel
// above, a system call's errno). Only these pass through as they are:
// io.EOF (io.ReaderAt's contract), ctx.Err() (so that err ==
// context.Canceled holds), and the errors the caller's own callbacks
// return (err == yourErr holds).

// prefixed is an error of this package, said with the "iopath: " prefix.
type prefixed struct{ err error }

func (e *prefixed) Error() string { return "iopath: " + e.err.Error() }
func (e *prefixed) Unwrap() error { return e.err }

// callerErr marks an error a caller's callback returned, so that the
// entry point hands it back unchanged.
type callerErr struct{ err error }

func (e callerErr) Error() string { return e.err.Error() }
func (e callerErr) Unwrap() error { return e.err }

// public is err as an entry point returns it (see prefixed).
func public(err error) error {
	switch e := err.(type) {
	case nil, *prefixed:
		return err
	case callerErr:
		return e.err
	}
	if err == io.EOF || err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	if ce := (callerErr{}); errors.As(err, &ce) {
		return ce.err
	}
	if strings.HasPrefix(err.Error(), "iopath: ") {
		return err // says so already (the options' errors, ErrNilFunc)
	}
	return &prefixed{err: err}
}
