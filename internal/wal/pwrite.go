package wal

import (
	"fmt"
	"io"
	"io/fs"

	"github.com/iopath/iopath/internal/sys"
)

// pwriteEngine commits with pwrite(2) of the whole batch at its offset,
// then fdatasync(2): two system calls per commit, made on the goroutine
// that commits (an Append that found no commit running, or the
// committer goroutine).
type pwriteEngine struct {
	fd   int
	path string
}

func newPwrite(fd int, path string, _ [][]byte) (engine, []string, error) {
	return &pwriteEngine{fd: fd, path: path}, nil, nil
}

func (e *pwriteEngine) commit(b []byte, _ int, off int64) (writes, syncs int, err error) {
	for len(b) > 0 {
		n, err := sys.Pwrite(e.fd, b, off)
		writes++
		if err != nil {
			return writes, syncs, &fs.PathError{Op: "write", Path: e.path, Err: fmt.Errorf("%d bytes at offset %d: %w", len(b), off, err)}
		}
		if n == 0 {
			return writes, syncs, &fs.PathError{Op: "write", Path: e.path, Err: fmt.Errorf("%d bytes at offset %d: %w", len(b), off, io.ErrShortWrite)}
		}
		b, off = b[n:], off+int64(n)
	}
	syncs++
	if err := sys.Fdatasync(e.fd); err != nil {
		return writes, syncs, &fs.PathError{Op: "fdatasync", Path: e.path, Err: err}
	}
	return writes, syncs, nil
}

func (e *pwriteEngine) broken() bool { return false }
func (e *pwriteEngine) close()       {}
