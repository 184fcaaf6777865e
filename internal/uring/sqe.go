package uring

import (
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// Memory contract of the Prep methods: every buffer, iovec array, path and
// statx struct an SQE points at is read or written by the kernel
// asynchronously, possibly after Submit returns and from another thread.
// It must stay valid and unmoved until the request's CQE has been reaped,
// also when the caller gives up on the request (cancel, error, ctx done).
// Use off-heap memory (sys.MmapAnon) or pin it with runtime.Pinner; never
// pass stack memory. userData comes back in the CQE: make it an index into
// a table the caller owns, never a Go pointer.

func (s *SQE) prep(op Op, fd int32, addr uint64, length uint32, off uint64, userData uint64) {
	*s = SQE{Opcode: op, Fd: fd, Addr: addr, Len: length, Off: off, UserData: userData}
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// PrepNop prepares a request that does nothing and completes with Res 0.
func (s *SQE) PrepNop(userData uint64) {
	s.prep(OpNop, -1, 0, 0, 0, userData)
}

// PrepRead prepares read(fd, b) at off (READ, Linux 5.6). With
// SQEFixedFile in Flags, fd is a slot of the registered file table.
// b must stay valid until the CQE (see the memory contract above).
func (s *SQE) PrepRead(fd int32, b []byte, off uint64, userData uint64) {
	s.prep(OpRead, fd, addrOf(b), uint32(len(b)), off, userData)
}

// PrepReadv prepares preadv(fd, iov) at off (READV). The iovec array and
// the buffers it points at must stay valid until the CQE.
func (s *SQE) PrepReadv(fd int32, iov []sys.Iovec, off uint64, userData uint64) {
	s.prep(OpReadv, fd, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(iov)))), uint32(len(iov)), off, userData)
}

// PrepReadFixed prepares a read into registered buffer bufIndex (READ_FIXED).
// b must lie inside that buffer; it may start anywhere inside it.
func (s *SQE) PrepReadFixed(fd int32, b []byte, off uint64, bufIndex uint16, userData uint64) {
	s.prep(OpReadFixed, fd, addrOf(b), uint32(len(b)), off, userData)
	s.BufIndex = bufIndex
}

// PrepOpenat prepares openat(dfd, path, flags, mode) (OPENAT, Linux 5.6);
// Res is the new fd. path must be NUL-terminated and stay valid until the
// CQE.
func (s *SQE) PrepOpenat(dfd int32, path *byte, flags uint32, mode uint32, userData uint64) {
	s.prep(OpOpenat, dfd, uint64(uintptr(unsafe.Pointer(path))), mode, 0, userData)
	s.OpFlags = flags
}

// PrepOpenatDirect is PrepOpenat into slot of the registered file table
// instead of a new fd (a direct descriptor, Linux 5.15); Res is 0 on
// success. Later requests use the slot with SQEFixedFile.
func (s *SQE) PrepOpenatDirect(dfd int32, path *byte, flags uint32, mode uint32, slot uint32, userData uint64) {
	s.PrepOpenat(dfd, path, flags, mode, userData)
	s.FileIndex = slot + 1
}

// PrepStatx prepares statx(dfd, path, flags, mask, st) (STATX, Linux 5.6).
// path and st must stay valid until the CQE.
func (s *SQE) PrepStatx(dfd int32, path *byte, flags uint32, mask uint32, st *sys.Statx_t, userData uint64) {
	s.prep(OpStatx, dfd, uint64(uintptr(unsafe.Pointer(path))), mask, uint64(uintptr(unsafe.Pointer(st))), userData)
	s.OpFlags = flags
}

// PrepClose prepares close(fd) (CLOSE, Linux 5.6).
func (s *SQE) PrepClose(fd int32, userData uint64) {
	s.prep(OpClose, fd, 0, 0, 0, userData)
}

// PrepCloseDirect prepares the closing of slot of the registered file
// table (Linux 5.15). Wait for its CQE before reusing the slot.
func (s *SQE) PrepCloseDirect(slot uint32, userData uint64) {
	s.prep(OpClose, 0, 0, 0, 0, userData)
	s.FileIndex = slot + 1
}

// SetFlags adds SQE flags (SQEFixedFile, SQEIOLink, SQEIOHardlink, ...).
func (s *SQE) SetFlags(f uint8) { s.Flags |= f }

// Timespec is struct __kernel_timespec, for PrepTimeout.
type Timespec struct {
	Sec  int64
	Nsec int64
}

// PrepTimeout prepares a timer (TIMEOUT, Linux 5.4) that completes with
// -ETIME after ts, or earlier with Res 0 once count other requests have
// completed (count 0: a pure timer). flags are IORING_TIMEOUT_* (0: ts is
// relative). ts is read when the kernel takes the SQE (at io_uring_enter,
// or later with SQPOLL), so it must stay valid until the CQE like any other
// memory an SQE points at. Cancel it with PrepCancel by its user_data: it
// then completes with -ECANCELED.
func (s *SQE) PrepTimeout(ts *Timespec, count uint32, flags uint32, userData uint64) {
	s.prep(OpTimeout, -1, uint64(uintptr(unsafe.Pointer(ts))), 1, uint64(count), userData)
	s.OpFlags = flags
}

// PrepWriteFixed prepares a write from registered buffer bufIndex
// (WRITE_FIXED). b must lie inside that buffer.
func (s *SQE) PrepWriteFixed(fd int32, b []byte, off uint64, bufIndex uint16, userData uint64) {
	s.prep(OpWriteFixed, fd, addrOf(b), uint32(len(b)), off, userData)
	s.BufIndex = bufIndex
}

// PrepWritev prepares pwritev(fd, iov) at off (WRITEV). The iovec array
// and the buffers it points at must stay valid until the CQE.
func (s *SQE) PrepWritev(fd int32, iov []sys.Iovec, off uint64, userData uint64) {
	s.prep(OpWritev, fd, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(iov)))), uint32(len(iov)), off, userData)
}

// FsyncDatasync makes PrepFsync an fdatasync (IORING_FSYNC_DATASYNC).
const FsyncDatasync uint32 = 1 << 0

// PrepFsync prepares fsync(fd), or fdatasync(fd) with flags
// FsyncDatasync (FSYNC, Linux 5.1). It syncs what has completed when it
// starts: to cover writes queued before it, wait for their completions,
// or set SQEIODrain on it (it then starts after every earlier request
// has completed), or link it after a write with SQEIOLink (it then
// starts after that write only).
func (s *SQE) PrepFsync(fd int32, flags uint32, userData uint64) {
	s.prep(OpFsync, fd, 0, 0, 0, userData)
	s.OpFlags = flags
}
