package sys

import "golang.org/x/sys/unix"

// What internal/wal (iopath.OpenLog) needs besides the write family.

// flock(2) operations, and the errno of a lock held elsewhere.
const (
	LOCK_EX     = unix.LOCK_EX
	LOCK_NB     = unix.LOCK_NB
	LOCK_UN     = unix.LOCK_UN
	EWOULDBLOCK = unix.EWOULDBLOCK
)

// Flock is flock(2) of fd with how, retrying EINTR. The lock belongs to
// the open file description: it lasts until every descriptor of it is
// closed, and another open of the same file, in this process or another,
// does not share it.
func Flock(fd, how int) error {
	return noEINTR(func() error { return unix.Flock(fd, how) })
}
