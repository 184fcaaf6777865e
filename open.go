package iopath

import (
	"io/fs"
	"syscall"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/sys"
)

// openRegular opens path read-only and non-blocking (so that a FIFO
// cannot block the open), O_DIRECT when asked, and checks that it is a
// regular file. Errors are *fs.PathError; op names the operation for a
// file of the wrong type ("open" for Open, "read" for ReadFile, as
// os.ReadFile reports a directory).
func openRegular(path string, direct bool, op string) (int, sys.Stat_t, error) {
	var st sys.Stat_t
	flags := sys.O_RDONLY | sys.O_NONBLOCK
	if direct {
		flags |= sys.O_DIRECT
	}
	pz := bufpool.Get(len(path) + 1)
	defer pz.Release()
	z, err := sys.AppendPathZ(pz.Bytes()[:0], path)
	if err != nil {
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	fd, err := sys.OpenZ(sys.AT_FDCWD, z, flags)
	noDirect := false
	if err == sys.EINVAL && direct {
		// A filesystem without O_DIRECT, or not a file at all (devices,
		// FIFOs and directories refuse the flag too): look without it.
		noDirect = true
		fd, err = sys.OpenZ(sys.AT_FDCWD, z, flags&^sys.O_DIRECT)
	}
	if sys.Unopenable(path, err) {
		// A socket (or a device without its driver) cannot be opened
		// at all: say what it is, as for a FIFO.
		return -1, st, &fs.PathError{Op: op, Path: path, Err: ErrNotRegular}
	}
	if err != nil {
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := sys.Fstat(fd, &st); err != nil {
		sys.Close(fd)
		return -1, st, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
		if noDirect {
			sys.Close(fd)
			return -1, st, &fs.PathError{Op: "open", Path: path,
				Err: &engine.NotSupportedError{What: "O_DIRECT", Reason: "the filesystem refuses it (use a file on a disk)"}}
		}
		return fd, st, nil
	case sys.S_IFDIR:
		sys.Close(fd)
		return -1, st, &fs.PathError{Op: op, Path: path, Err: syscall.EISDIR}
	}
	sys.Close(fd)
	return -1, st, &fs.PathError{Op: op, Path: path, Err: ErrNotRegular}
}
