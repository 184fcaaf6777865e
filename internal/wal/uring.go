package wal

import (
	"fmt"
	"io"
	"io/fs"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

// uringEngine commits with one io_uring_enter: a WRITE_FIXED from the
// batch buffer (registered; WRITE when registration was refused, or for
// a record too big for the buffers) linked with IOSQE_IO_LINK to an
// FSYNC with IORING_FSYNC_DATASYNC, which starts only once the write has
// completed in full. A short write breaks the link (the FSYNC completes
// with ECANCELED) and the rest is written by the next pair.
//
// The ring is made with SINGLE_ISSUER and DEFER_TASKRUN (stepped down on
// kernels without them) on the committer goroutine, which is locked to
// its thread and the only one to use it. user_data is 0 for the write
// and 1 for the FSYNC.
type uringEngine struct {
	r     *uring.Ring
	fd    int32 // the registered slot (fixedFile) or the descriptor
	path  string
	fixed bool // the batch buffers are registered
	flags uint8
	cqes  [2]uring.CQE
	// inFlight is set when io_uring_enter failed after the kernel took
	// the requests: they may still read the buffer.
	inFlight bool
}

const (
	udWrite = 0
	udSync  = 1
)

// newUring makes the ring, registers the file and the two buffers, and
// completes a NOP, so that a seccomp profile that forbids any of the
// three io_uring system calls shows now, not at the first commit. A
// refusal (EPERM, EACCES, ENOSYS) of any call is returned; a register
// that runs short (memlock) is a note, and the engine goes on without.
func newUring(fd int, path string, bufs [][]byte) (engine, []string, error) {
	r, err := uring.New(4, uring.Options{
		SubmitAll:    true,
		CoopTaskrun:  true,
		TaskrunFlag:  true,
		SingleIssuer: true,
		DeferTaskrun: true,
		NoSQArray:    true,
	})
	if err != nil {
		return nil, nil, err
	}
	e := &uringEngine{r: r, fd: int32(fd), path: path}
	var notes []string
	if d := r.Dropped(); len(d) > 0 {
		notes = append(notes, fmt.Sprintf("io_uring: the kernel refused setup flags %v; they were dropped", d))
	}
	refused := func(err error) bool {
		_, errno, _, ok := uring.FailedCall(err)
		return ok && (errno == sys.EPERM || errno == sys.EACCES || errno == sys.ENOSYS)
	}
	if err := r.RegisterBuffers(bufs); err != nil {
		if refused(err) {
			r.Close()
			return nil, nil, err
		}
		notes = append(notes, fmt.Sprintf("io_uring: %v; writing with WRITE instead of WRITE_FIXED (raise `ulimit -l`)", err))
	} else {
		e.fixed = true
	}
	if err := r.RegisterFiles([]int32{int32(fd)}); err != nil {
		if refused(err) {
			r.Close()
			return nil, nil, err
		}
		notes = append(notes, fmt.Sprintf("io_uring: %v; using the plain descriptor", err))
	} else {
		e.fd, e.flags = 0, uring.SQEFixedFile
	}
	sqe := r.GetSQE()
	sqe.PrepNop(udWrite)
	if _, err := r.SubmitAndWait(1); err != nil {
		r.Close()
		return nil, nil, err
	}
	if k := r.PeekBatch(e.cqes[:1]); k == 1 {
		r.Advance(1)
	}
	return e, notes, nil
}

func (e *uringEngine) commit(b []byte, buf int, off int64) (writes, syncs int, err error) {
	for len(b) > 0 {
		w, s := e.r.GetSQE(), e.r.GetSQE()
		if w == nil || s == nil {
			// Never: each commit reaps both of its requests.
			return writes, syncs, fmt.Errorf("log %s: io_uring submission queue full", e.path)
		}
		n := min(len(b), 1<<30) // an SQE's length is 32 bits
		if e.fixed && buf >= 0 {
			w.PrepWriteFixed(e.fd, b[:n], uint64(off), uint16(buf), udWrite)
		} else {
			w.PrepWrite(e.fd, b[:n], uint64(off), udWrite)
		}
		w.SetFlags(e.flags | uring.SQEIOLink)
		s.PrepFsync(e.fd, uring.FsyncDatasync, udSync)
		s.SetFlags(e.flags)
		writes++
		syncs++
		wres, sres, err := e.submit()
		if err != nil {
			return writes, syncs, err
		}
		switch {
		case wres < 0:
			if errno := syscall.Errno(-wres); errno == sys.EINTR || errno == sys.EAGAIN {
				continue // the FSYNC was cancelled with it: both again
			}
			return writes, syncs, &fs.PathError{Op: "write", Path: e.path, Err: fmt.Errorf("%d bytes at offset %d: %w", n, off, syscall.Errno(-wres))}
		case wres == 0:
			return writes, syncs, &fs.PathError{Op: "write", Path: e.path, Err: fmt.Errorf("%d bytes at offset %d: %w", n, off, io.ErrShortWrite)}
		case int(wres) < len(b):
			// Short (or the 1 GiB cap): the link broke, and the FSYNC
			// was cancelled; write the rest with another pair.
			b, off = b[wres:], off+int64(wres)
			continue
		}
		if sres < 0 {
			return writes, syncs, &fs.PathError{Op: "fdatasync", Path: e.path, Err: syscall.Errno(-sres)}
		}
		return writes, syncs, nil
	}
	return writes, syncs, nil
}

// submit submits the prepared pair and waits for both completions, in
// one io_uring_enter (more only when a signal or a shortage cuts the
// wait short), and returns their results.
func (e *uringEngine) submit() (wres, sres int32, err error) {
	for e.r.CQReady() < 2 {
		if _, err := e.r.SubmitAndWait(2); err != nil {
			if e.r.SQReady() < 2 {
				e.inFlight = true // the kernel took them: they may still run
			}
			return 0, 0, fmt.Errorf("log %s: %w", e.path, err)
		}
	}
	k := e.r.PeekBatch(e.cqes[:])
	e.r.Advance(k)
	for _, c := range e.cqes[:k] {
		if c.UserData == udWrite {
			wres = c.Res
		} else {
			sres = c.Res
		}
	}
	return wres, sres, nil
}

func (e *uringEngine) broken() bool { return e.inFlight }

// close closes the ring, unless a request may still be in flight: a
// broken ring is kept with its registered buffers for the process's
// life, so that the kernel never reads unmapped memory.
func (e *uringEngine) close() {
	if !e.inFlight {
		e.r.Close()
	}
}
