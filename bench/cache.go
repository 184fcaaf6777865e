package bench

import (
	"fmt"
	"io/fs"

	"github.com/iopath/iopath/internal/sys"
)

// residency returns the fraction of path's pages in the page cache (0 for
// an empty file).
func residency(path string) (float64, error) {
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		return 0, err
	}
	defer sys.Close(fd)
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		return 0, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Size == 0 {
		return 1, nil
	}
	const chunk = 1 << 30 // map and probe a GiB at a time
	ps := int64(sys.PageSize())
	var resident, total int64
	vec := make([]byte, chunk/ps)
	for off := int64(0); off < st.Size; off += chunk {
		n := min(chunk, st.Size-off)
		m, err := sys.Mmap(fd, off, int(n), sys.PROT_READ, sys.MAP_SHARED)
		if err != nil {
			return 0, &fs.PathError{Op: "mmap", Path: path, Err: err}
		}
		pages := (n + ps - 1) / ps
		err = sys.Mincore(m, vec[:pages])
		sys.Munmap(m)
		if err != nil {
			return 0, &fs.PathError{Op: "mincore", Path: path, Err: err}
		}
		for _, v := range vec[:pages] {
			resident += int64(v & 1)
		}
		total += pages
	}
	return float64(resident) / float64(total), nil
}

// warm reads path fully into the page cache.
func warm(path string) error {
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		return err
	}
	defer sys.Close(fd)
	buf, err := sys.MmapAnon(1 << 20)
	if err != nil {
		return err
	}
	defer sys.Munmap(buf)
	for off := int64(0); ; {
		n, err := sys.Pread(fd, buf, off)
		if err != nil {
			return &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return nil
		}
		off += int64(n)
	}
}

// drop flushes path's dirty pages and asks the kernel to drop its cached
// pages.
func drop(path string) error {
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		return err
	}
	defer sys.Close(fd)
	if err := sys.Fsync(fd); err != nil {
		return &fs.PathError{Op: "fsync", Path: path, Err: err}
	}
	if err := sys.Fadvise(fd, 0, 0, sys.FADV_DONTNEED); err != nil {
		return &fs.PathError{Op: "fadvise", Path: path, Err: err}
	}
	return nil
}

// prepareCache puts path in state c and returns the residency seen after.
func prepareCache(path string, c Cache) (float64, error) {
	switch c {
	case Warm:
		r, err := residency(path)
		if err != nil {
			return 0, err
		}
		if r >= 1 {
			return r, nil
		}
		if err := warm(path); err != nil {
			return 0, err
		}
	case Cold, Direct:
		if err := drop(path); err != nil {
			return 0, err
		}
	default:
		return 0, fmt.Errorf("unknown cache state %q", c)
	}
	return residency(path)
}
