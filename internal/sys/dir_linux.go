package sys

import (
	"encoding/binary"
	"strings"
	"sync/atomic"
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
	O_PATH              = unix.O_PATH
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

// resolveCached is RESOLVE_CACHED (Linux 5.12; include/uapi/linux/openat2.h),
// which x/sys/unix does not define.
const resolveCached = 0x20

// cachedOpenOff is set once openat2 with RESOLVE_CACHED proved unusable
// here: a kernel before 5.12 (EINVAL) or 5.6 (ENOSYS), or a seccomp
// profile that refuses the call (ENOSYS, EPERM).
var cachedOpenOff atomic.Bool

// OpenCachedRaw opens name (NUL-terminated, one component or several)
// relative to dirfd with openat2(RESOLVE_CACHED|RESOLVE_NO_XDEV), made as
// a raw system call: without telling the Go scheduler, which saves its
// enter/exit work around the call. ok is false, with nothing opened,
// whenever the fast path does not apply: the lookup needs the disk or
// another mount (EAGAIN, EXDEV), the kernel or a seccomp profile refuses
// openat2 or RESOLVE_CACHED (then it is never tried again in this
// process), or any other error. The caller then opens by the ordinary
// path, which reports the error if there is one.
//
// A raw call holds its P while it runs (a GC stop-the-world waits for
// it), so it is only safe where the call cannot wait long. RESOLVE_CACHED
// makes the lookup fail rather than read the disk, and RESOLVE_NO_XDEV
// keeps the file on dirfd's mount, so the caller need only check that
// dirfd's filesystem opens files without waiting on anything but memory
// (LocalFS): there the rare waits left are bounded disk reads (an
// fscrypt or fs-verity descriptor, an IMA measurement policy), never a
// daemon or a network.
func OpenCachedRaw(dirfd int, nameZ []byte, flags int) (fd int, ok bool) {
	if len(nameZ) == 0 || nameZ[len(nameZ)-1] != 0 || cachedOpenOff.Load() {
		return -1, false
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveCached | unix.RESOLVE_NO_XDEV}
	r, _, e := unix.RawSyscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(&nameZ[0])),
		uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	switch e {
	case 0:
		return int(r), true
	case unix.ENOSYS, unix.EINVAL, unix.EPERM, unix.E2BIG:
		cachedOpenOff.Store(true)
	}
	return -1, false
}

// CachedOpen reports whether OpenCachedRaw may still succeed in this
// process: false once openat2 or RESOLVE_CACHED was refused.
func CachedOpen() bool { return !cachedOpenOff.Load() }

// CloseRaw closes fd with a raw system call. Only for a read-only
// descriptor of a file on a LocalFS filesystem, whose close has nothing
// to flush and no daemon to ask.
func CloseRaw(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}
