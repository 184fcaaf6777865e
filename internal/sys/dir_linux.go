package sys

import (
	"encoding/binary"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Directory entry types of getdents64 (d_type). DT_UNKNOWN means the
// filesystem did not say: the caller must stat the entry.
const (
	DT_UNKNOWN = unix.DT_UNKNOWN
	DT_FIFO    = unix.DT_FIFO
	DT_CHR     = unix.DT_CHR
	DT_DIR     = unix.DT_DIR
	DT_BLK     = unix.DT_BLK
	DT_REG     = unix.DT_REG
	DT_LNK     = unix.DT_LNK
	DT_SOCK    = unix.DT_SOCK

	O_DIRECTORY         = unix.O_DIRECTORY
	AT_SYMLINK_NOFOLLOW = unix.AT_SYMLINK_NOFOLLOW
)

// OpenZ is openat(2) of a path already terminated by a NUL byte, which
// the caller keeps in a buffer it reuses: unlike Open it allocates
// nothing. O_CLOEXEC is always added and EINTR retried. The error is the
// bare errno (the caller names the path). A pathZ without its final NUL
// is EINVAL.
func OpenZ(dirfd int, pathZ []byte, flags int) (int, error) {
	if len(pathZ) == 0 || pathZ[len(pathZ)-1] != 0 {
		return -1, unix.EINVAL
	}
	for {
		fd, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd),
			uintptr(unsafe.Pointer(&pathZ[0])), uintptr(flags|unix.O_CLOEXEC), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(fd), nil
	}
}

// AppendPathZ appends path and a NUL byte to dst, for OpenZ. A path that
// holds a NUL byte itself is EINVAL (it would name another file), as
// Open and the os package report it.
func AppendPathZ(dst []byte, path string) ([]byte, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return dst, unix.EINVAL
	}
	return append(append(dst, path...), 0), nil
}

// Getdents is getdents64(2): it fills buf with directory entries of fd
// (parse them with Dirents) and returns the bytes used, 0 at the end.
// EINTR is retried; the error is the bare errno.
func Getdents(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// Fstatat is fstatat(2) of name relative to dirfd; flags may hold
// AT_SYMLINK_NOFOLLOW. The error is the bare errno.
func Fstatat(dirfd int, name string, st *Stat_t, flags int) error {
	for {
		err := unix.Fstatat(dirfd, name, st, flags)
		if err != unix.EINTR {
			return err
		}
	}
}

// Dirents calls fn for each entry getdents64 put in buf (its first n
// bytes), with the entry's name (aliasing buf: copy it to keep it) and
// type (DT_*), skipping "." and "..". A malformed record ends the walk
// through buf and returns false.
//
// The record layout is struct linux_dirent64: d_ino u64, d_off s64,
// d_reclen u16, d_type u8, then the NUL-terminated name, padded to 8.
func Dirents(buf []byte, fn func(name []byte, typ uint8)) bool {
	const nameOff = 19
	for len(buf) > 0 {
		if len(buf) < nameOff {
			return false
		}
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < nameOff || reclen > len(buf) {
			return false
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		name := rec[nameOff:]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
			continue
		}
		fn(name, rec[18])
	}
	return true
}
