package fileio

import (
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// The synchronous reads (the read, pread and readv engines, and the public
// API's preads) first try each read as preadv2(RWF_NOWAIT) made as a raw
// system call (sys.PreadvNowait): when the data is in the page cache, it
// is copied without the Go scheduler's syscall bookkeeping and without
// sysmon retaking the P mid-copy. When it is not (EAGAIN), the caller
// makes its blocking call — read(2), pread(2) or preadv(2) — which the
// scheduler knows may block. Measured on a warm 4 GiB file, 128 KiB
// blocks: ~20% less CPU per GiB than pread through syscall.Syscall, and
// some 8,000 fewer context switches per 4 GiB (docs/engines.md).
//
// The fast path is off for O_DIRECT (which bypasses the cache), for calls
// over NowaitMax bytes (a raw call holds its P, and a GC stop-the-world
// waits for it), after the kernel refuses RWF_NOWAIT (EOPNOTSUPP: old
// kernel or filesystem; it stays off, like Go's own fallbacks), and for
// nowaitBackoff calls after each EAGAIN, so that cold reads pay for at
// most one extra system call in nowaitBackoff+1.
const (
	NowaitMax     = 1 << 20
	nowaitBackoff = 8
)

// Nowait is one goroutine's fast-path state. It is not safe for
// concurrent use; its zero value has the fast path on.
type Nowait struct {
	Off  bool // the fast path is off (O_DIRECT, or refused by the kernel)
	skip int  // calls left to make without trying it
}

// Try reads iov (size bytes in all) at off (-1: the file position) if the
// data is cached. handled is false when the caller must make its blocking
// call; then nothing was read. calls, if not nil, counts the system calls
// made.
func (nw *Nowait) Try(fd int, iov []sys.Iovec, size int, off int64, calls *int64) (n int, handled bool, err error) {
	if nw.Off || size > NowaitMax {
		return 0, false, nil
	}
	if nw.skip > 0 {
		nw.skip--
		return 0, false, nil
	}
	if calls != nil {
		*calls++
	}
	n, err = sys.PreadvNowait(fd, iov, off)
	switch {
	case err == nil:
		// 0 is the end of the file: a RWF_NOWAIT read with nothing
		// cached fails with EAGAIN (filemap_read returns 0 only at or
		// past i_size, and a filesystem without FMODE_NOWAIT refuses
		// the flag with EOPNOTSUPP), so no blocking call is needed to
		// be sure. That call cost every Scan and every read to the end
		// one more system call, about 1.2 µs on the AMD EPYC VM here.
		return n, true, nil
	case err == sys.EAGAIN:
		nw.skip = nowaitBackoff
		return 0, false, nil
	case err == sys.EINTR:
		return 0, false, nil // the blocking call retries EINTR itself
	case err == sys.EOPNOTSUPP || err == sys.EINVAL || err == sys.ENOSYS:
		nw.Off = true
		return 0, false, nil
	}
	return 0, true, err
}

// Preadv reads iov (size bytes in all) at off: the fast path, else
// pread(2) for one buffer or preadv(2). calls, if not nil, counts the
// system calls made. Errors are bare errnos.
func (nw *Nowait) Preadv(fd int, iov []sys.Iovec, size int, off int64, calls *int64) (int, error) {
	if TestMaxRead > 0 && size > TestMaxRead {
		return sys.Pread(fd, unsafe.Slice(iov[0].Base, min(int(iov[0].Len), TestMaxRead)), off)
	}
	n, handled, err := nw.Try(fd, iov, size, off, calls)
	if handled {
		return n, err
	}
	if calls != nil {
		*calls++
	}
	if len(iov) == 1 {
		return sys.Pread(fd, unsafe.Slice(iov[0].Base, iov[0].Len), off)
	}
	return sys.Preadv(fd, iov, off)
}
