package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The write family: what the write engines, WriteFile and Log call.

// Open flags of the write paths.
const (
	O_RDWR   = unix.O_RDWR
	O_TRUNC  = unix.O_TRUNC
	O_APPEND = unix.O_APPEND
	O_DSYNC  = unix.O_DSYNC
)

// Pwritev is pwritev(2) of iov at off, retrying EINTR. It returns the
// bytes written, which may be fewer than asked (a full disk, a signal).
func Pwritev(fd int, iov []Iovec, off int64) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	for {
		n, _, e := unix.Syscall6(unix.SYS_PWRITEV, uintptr(fd),
			uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)),
			uintptr(off), uintptr(uint64(off)>>32>>32), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return int(n), e
		}
		return int(n), nil
	}
}

// Fdatasync flushes fd's dirty data (and the metadata needed to read it
// back, such as its size) to the device, retrying EINTR.
func Fdatasync(fd int) error {
	for {
		err := unix.Fdatasync(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// Fallocate reserves [off, off+n) of fd on its device (mode 0: the file
// grows to cover it), retrying EINTR. Filesystems without it answer
// EOPNOTSUPP.
func Fallocate(fd int, off, n int64) error {
	for {
		err := unix.Fallocate(fd, 0, off, n)
		if err != unix.EINTR {
			return err
		}
	}
}

// Msync flushes b, a range of a shared file mapping, to the file's device
// and waits (MS_SYNC).
func Msync(b []byte) error { return unix.Msync(b, unix.MS_SYNC) }

// Fchmod sets an open file's mode.
func Fchmod(fd int, mode uint32) error { return unix.Fchmod(fd, mode) }

// Fchown sets an open file's owner and group (-1 leaves one unchanged).
func Fchown(fd, uid, gid int) error { return unix.Fchown(fd, uid, gid) }
