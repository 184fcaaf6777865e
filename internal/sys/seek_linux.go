package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Whence values for Seek.
const (
	SEEK_SET = unix.SEEK_SET
	SEEK_CUR = unix.SEEK_CUR
)

// Seek is lseek(2), retrying EINTR. It returns the raw errno on failure.
func Seek(fd int, off int64, whence int) (int64, error) {
	for {
		n, err := unix.Seek(fd, off, whence)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// SeekSet is lseek(fd, off, SEEK_SET) made as a raw system call, without
// the Go scheduler's syscall bookkeeping. SEEK_SET on a regular file only
// sets the position (generic_file_llseek; the f_pos lock is contended
// only by another thread using the same open file): it never waits for
// I/O, so holding the P through it costs nothing. Going through
// syscall.Syscall instead costs entersyscall/exitsyscall per block and,
// for a worker that never blocks, a P retaken by sysmon every 10 ms (its
// preemption of a goroutine found in a syscall) and a hop to another
// thread. The read engine's random pattern makes one per block. EINTR is
// retried; the error is the raw errno.
func SeekSet(fd int, off int64) (int64, error) {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return Seek(fd, off, SEEK_SET) // _llseek: a 64-bit offset in two words
	}
	for {
		n, _, e := unix.RawSyscall(unix.SYS_LSEEK, uintptr(fd), uintptr(off), unix.SEEK_SET)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int64(n), nil
	}
}

// ClearNonblock clears O_NONBLOCK on fd (fcntl F_GETFL/F_SETFL). Files are
// opened non-blocking so that opening a FIFO cannot hang; a regular file
// must not keep the flag, because io_uring then returns EAGAIN instead of
// waiting for the disk.
func ClearNonblock(fd int) error {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if fl&unix.O_NONBLOCK == 0 {
		return nil
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	return err
}
