package sys

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// The calls of an atomic replace (iopath.WriteFile): a temporary file
// made in the target's directory, linked there and renamed over the
// target, every name relative to one descriptor of that directory.

// ELOOP is the error of a chain of symbolic links too long to follow.
const ELOOP = unix.ELOOP

// O_TMPFILE makes an unnamed regular file in the directory opened (with
// O_WRONLY or O_RDWR). A filesystem without it answers EOPNOTSUPP; a
// kernel older than 3.11, which ignores the flag's own bit, EISDIR.
const O_TMPFILE = unix.O_TMPFILE

// Openat is openat(2) of name relative to dirfd with flags (O_CLOEXEC is
// always added) and mode for a file it creates, retrying EINTR. The
// error is the bare errno: the caller names the path.
func Openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_CLOEXEC, mode)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		return fd, nil
	}
}

// LinkTmpfile gives fd, an O_TMPFILE file, the name name in the
// directory dirfd. linkat(2) with AT_EMPTY_PATH links the descriptor
// itself, which needs CAP_DAC_READ_SEARCH before Linux 6.10 (later
// kernels allow it for a file the caller opened); without it the file
// is linked through /proc/self/fd with AT_SYMLINK_FOLLOW, as open(2)'s
// manual describes. The error is the bare errno (EEXIST when name is
// taken).
func LinkTmpfile(fd, dirfd int, name string) error {
	err := noEINTR(func() error { return unix.Linkat(fd, "", dirfd, name, unix.AT_EMPTY_PATH) })
	if err != unix.EPERM && err != unix.ENOENT {
		return err
	}
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	return noEINTR(func() error { return unix.Linkat(unix.AT_FDCWD, proc, dirfd, name, unix.AT_SYMLINK_FOLLOW) })
}

// Renameat renames oldname to newname, both relative to dirfd, replacing
// newname if it exists. The error is the bare errno.
func Renameat(dirfd int, oldname, newname string) error {
	return noEINTR(func() error { return unix.Renameat(dirfd, oldname, dirfd, newname) })
}

// Unlinkat removes the file name in the directory dirfd. The error is the
// bare errno.
func Unlinkat(dirfd int, name string) error {
	return noEINTR(func() error { return unix.Unlinkat(dirfd, name, 0) })
}
