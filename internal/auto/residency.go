package auto

import (
	"io/fs"
	"sync/atomic"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
)

// Bounds of Residency's sample.
const (
	// sampleWindows is the most windows of a file mincore looks at.
	sampleWindows = 64
	// windowPages is each window's length in pages (64 KiB with 4 KiB
	// pages: the kernel's default readahead unit, so a window tends to be
	// wholly in or wholly out).
	windowPages = 16
)

// Residency returns the fraction of path's pages that are in the page
// cache, in [0,1], from a bounded sample: a file of up to 64 × 16 pages
// is looked at whole; a larger one in 64 windows of 16 pages spread
// evenly over it (first and last included). size is the caller's idea of
// the file's size; <= 0 means "use the file's own" (it is always checked
// with fstat, and the smaller of the two is sampled).
//
// The file is opened read-only (O_NONBLOCK, so a FIFO cannot block) and
// asked with cachestat(2) (Linux 6.5), or, where that is missing, mapped
// PROT_READ and asked with mincore(2) without the mapping being touched:
// no page is faulted in, read or written either way; the mapping is
// unmapped and the descriptor closed before Residency returns. An empty file is fully resident (1): there is
// nothing to read from a device. The error is an *fs.PathError: a missing
// or unreadable file, or one that is not a regular file (EISDIR for a
// directory, EINVAL otherwise).
func Residency(path string, size int64) (float64, error) {
	fd, err := sys.Open(path, sys.O_RDONLY|sys.O_NONBLOCK)
	if err != nil {
		return 0, err
	}
	defer sys.Close(fd)
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		return 0, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
	case sys.S_IFDIR:
		return 0, &fs.PathError{Op: "residency", Path: path, Err: syscall.EISDIR}
	default:
		return 0, &fs.PathError{Op: "residency", Path: path, Err: syscall.EINVAL}
	}
	if size <= 0 || size > st.Size {
		size = st.Size
	}
	r, err := residentFD(fd, size)
	if err != nil {
		return 0, &fs.PathError{Op: "residency", Path: path, Err: err}
	}
	return r, nil
}

// noCachestat is set once cachestat(2) answers ENOSYS (a kernel before
// 6.5) or EPERM (a seccomp policy that does not know it): from then on
// residency comes from mincore on a mapping. Tests set it to exercise
// that path.
var noCachestat atomic.Bool

// residentFD is Residency on an open regular file of size bytes:
// cachestat(2) on the sample's windows (no mapping needed), else mincore.
func residentFD(fd int, size int64) (float64, error) {
	if size <= 0 {
		return 1, nil
	}
	if !noCachestat.Load() {
		r, err := residentCachestat(fd, size)
		if err == nil {
			return r, nil
		}
		if err == sys.ENOSYS || err == sys.EPERM {
			noCachestat.Store(true)
		}
		// Anything else (EOPNOTSUPP on hugetlbfs): mincore this time.
	}
	return residentMincore(fd, size)
}

// windows calls fn with the first page and the length in pages of each
// window of the sample of a file of pages pages: the whole file when it
// has at most sampleWindows × windowPages pages, else sampleWindows
// windows of windowPages pages spread evenly, the first at page 0 and the
// last ending at the last page.
func windows(pages int64, fn func(first, n int64) error) error {
	if pages <= sampleWindows*windowPages {
		return fn(0, pages)
	}
	span := pages - windowPages
	for k := range int64(sampleWindows) {
		if err := fn(k*span/(sampleWindows-1), windowPages); err != nil {
			return err
		}
	}
	return nil
}

// wholeCachestat is the most pages residentCachestat asks about in one
// call over the whole file rather than window by window: each call costs
// about 1.5 µs once a read has pushed the kernel's structures out of the
// CPU's caches, so the 64 windows of a sample took 94 µs between Scans of
// an 8 MiB file and one call over its 2,048 pages 6 µs (AMD EPYC VM).
const wholeCachestat = 16384 // 64 MiB of 4 KiB pages

func residentCachestat(fd int, size int64) (float64, error) {
	ps := int64(sys.PageSize())
	if pages := (size + ps - 1) / ps; pages <= wholeCachestat {
		c, err := sys.Cachestat(fd, 0, uint64(pages*ps))
		if err != nil {
			return 0, err
		}
		return float64(min(int64(c), pages)) / float64(pages), nil
	}
	var cached, total int64
	err := windows((size+ps-1)/ps, func(first, n int64) error {
		c, err := sys.Cachestat(fd, uint64(first*ps), uint64(n*ps))
		if err != nil {
			return err
		}
		cached += min(int64(c), n)
		total += n
		return nil
	})
	if err != nil {
		return 0, err
	}
	return float64(cached) / float64(total), nil
}

// residentMincore maps the file PROT_READ, never touches the mapping, and
// asks mincore about the sample's windows.
func residentMincore(fd int, size int64) (float64, error) {
	ps := int64(sys.PageSize())
	if int64(int(size)) != size {
		// Larger than the address space (32-bit): look at a prefix.
		size = int64(^uint(0)>>1) / ps * ps
	}
	m, err := sys.Mmap(fd, 0, int(size), sys.PROT_READ, sys.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer sys.Munmap(m)
	var vec [sampleWindows * windowPages]byte
	var resident, total int64
	err = windows((size+ps-1)/ps, func(first, n int64) error {
		lo := first * ps
		hi := min(lo+n*ps, int64(len(m)))
		v := vec[:(hi-lo+ps-1)/ps]
		if err := sys.Mincore(m[lo:hi], v); err != nil {
			return err
		}
		for _, b := range v {
			resident += int64(b & 1)
		}
		total += int64(len(v))
		return nil
	})
	if err != nil {
		return 0, err
	}
	return float64(resident) / float64(total), nil
}
