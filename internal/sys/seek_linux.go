package sys

import "golang.org/x/sys/unix"

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
