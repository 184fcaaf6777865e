package engine

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/iopath/iopath/internal/sys"
)

// ErrNotRegular is returned (inside an *fs.PathError) for directories,
// devices, FIFOs and sockets: engines read regular files only.
var ErrNotRegular = errors.New("not a regular file")

// ErrChanged is returned (inside an *fs.PathError) when a file shrinks or
// changes under a reader: a short read before the size seen at open, or a
// SIGBUS on a mapping.
var ErrChanged = errors.New("file changed size while being read")

// file is an open file being read by an engine.
type file struct {
	fd   int
	path string
	size int64
}

// openFile opens job.Path read-only (O_DIRECT when asked), and checks that
// it is a regular file. Every error is an *fs.PathError naming the path.
func openFile(job *Job) (*file, error) {
	flags := sys.O_RDONLY
	if job.Direct {
		flags |= sys.O_DIRECT
	}
	fd, err := sys.Open(job.Path, flags)
	if err != nil {
		var pe *fs.PathError
		if job.Direct && errors.As(err, &pe) && pe.Err == sys.EINVAL {
			return nil, &fs.PathError{Op: "open", Path: job.Path,
				Err: &NotSupportedError{What: "O_DIRECT", Reason: "the filesystem refuses it (tmpfs does; use a file on a disk)"}}
		}
		return nil, err
	}
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		sys.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: job.Path, Err: err}
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
	case sys.S_IFDIR:
		sys.Close(fd)
		return nil, &fs.PathError{Op: "read", Path: job.Path, Err: sys.EISDIR}
	default:
		sys.Close(fd)
		return nil, &fs.PathError{Op: "read", Path: job.Path, Err: ErrNotRegular}
	}
	return &file{fd: fd, path: job.Path, size: st.Size}, nil
}

func (f *file) close() error {
	if f.fd < 0 {
		return nil
	}
	err := sys.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

// readErr wraps a read error with the path.
func (f *file) readErr(off int64, err error) error {
	return &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("at offset %d: %w", off, err)}
}

// shrunk is the error for a read that ended before the size seen at open.
func (f *file) shrunk(off int64) error {
	return &fs.PathError{Op: "read", Path: f.path, Err: fmt.Errorf("%w: end of file at offset %d, expected %d bytes", ErrChanged, off, f.size)}
}
