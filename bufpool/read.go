package bufpool

import (
	"errors"
	"io"
	"io/fs"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/unsized"
)

const (
	// maxTrustedSize: a stated size above this is ignored (treated as
	// unknown).
	maxTrustedSize = 1 << 40
	// maxPresize caps the first buffer sized from a stated size or a hint;
	// past it the buffer grows only as data arrives.
	maxPresize = 64 << 20
	// maxHintStart caps the first buffer sized from the pool's hint, so that
	// after one large read, concurrent small reads do not each take a large
	// buffer.
	maxHintStart = 1 << 20
	// minUnknownStart is the first buffer when nothing is known.
	minUnknownStart = 512
	// fileUnknownStart is ReadFile's first buffer for a file that states no
	// size (e.g. in /proc); such files must not be read in tiny pieces.
	fileUnknownStart = 4096
	// slackLimit: a stated size below it gets one spare byte of room (often
	// a class twice as big), so that end of file shows as a short read
	// instead of a read into a probe buffer.
	slackLimit = 64 << 10
	// probeSize is the buffer that tests for end of file when the buffer is
	// exactly full at the expected size.
	probeSize = 4096
	// growJump bounds the growth towards an expected size in one step, as a
	// multiple of the current buffer.
	growJump = 64
	// shrinkAbove: a result that fills no more than a quarter of a buffer
	// larger than this is copied to a buffer of its own class.
	shrinkAbove = 4096
	// maxEmptyReads consecutive (0, nil) reads make ReadAll give up with
	// io.ErrNoProgress.
	maxEmptyReads = 100
)

var errInvalidCount = errors.New("bufpool: reader returned an invalid count from Read")

// testHookAfterStat, if set, runs in ReadFile between fstat and the reads.
var testHookAfterStat func()

// ReadAll reads r until EOF into a Buf from the default pool. See
// Pool.ReadAll.
func ReadAll(r io.Reader) (*Buf, error) { return defaultPool.ReadAll(r) }

// ReadFile reads the named file into a Buf from the default pool. See
// Pool.ReadFile.
func ReadFile(path string) (*Buf, error) { return defaultPool.ReadFile(path) }

// ReadFileLimit is ReadFile with another limit for a file of unknown
// size. See Pool.ReadFileLimit.
func ReadFileLimit(path string, limit int64) (*Buf, error) {
	return defaultPool.ReadFileLimit(path, limit)
}

// ErrLimit is wrapped (inside an *fs.PathError) by ReadFile's error for a
// file that states no size and goes on past the limit (DefaultLimit, or
// ReadFileLimit's). It is the same value as engine.ErrLimit and
// iopath.ErrLimit.
var ErrLimit = unsized.ErrLimit

// DefaultLimit is the most bytes ReadFile reads from a file that states
// no size.
const DefaultLimit = unsized.DefaultLimit

// ReadAll reads from r until io.EOF and returns exactly the bytes read, in a
// Buf the caller must Release. A read error other than io.EOF is returned
// with a nil Buf (the buffer is released internally); so is
// io.ErrNoProgress after 100 consecutive reads that return neither data nor
// an error, and an error for a reader that returns an impossible count.
//
// The first buffer is sized from r's stated size when it has one: a Len()
// int method (*bytes.Reader, *strings.Reader, *bytes.Buffer), else a Stat()
// (fs.FileInfo, error) method reporting a regular file of non-zero size
// (*os.File, fs.File). The size is only a hint: more or fewer bytes are
// handled. Stat of an *os.File allocates its FileInfo (ReadFile does not).
// A file's stated size is its whole size, whatever its offset.
//
// When the size is unknown, the first buffer is sized from the previous
// unknown-size ReadAll on this pool (at most 1 MiB), and the buffer grows by
// moving to a larger class: twice the size, or at once up to the previous
// read's size (at most 64 times larger per step); each step copies what was
// read so far. In steady state ReadAll allocates nothing. A read that ends
// exactly at the buffer's end is confirmed by one read into a small probe
// buffer rather than by growing.
func (p *Pool) ReadAll(r io.Reader) (*Buf, error) {
	expected, known := statedSize(r)
	var first int
	if known {
		first = presize(expected)
	} else {
		expected = int(p.hint.Load())
		first = min(max(expected, minUnknownStart), maxHintStart)
	}
	b := p.get(first)
	n := 0
	probing := true // until a probe finds more data than expected
	empty := 0
	for {
		if n == len(b.data) {
			if probing && n >= expected {
				// Full at (or past) the expected size: look for EOF in a
				// probe buffer before growing.
				pb := p.get(probeSize)
				k, err := r.Read(pb.data)
				if k < 0 || k > len(pb.data) {
					pb.Release()
					b.Release()
					return nil, errInvalidCount
				}
				if k > 0 {
					probing = false
					b = p.grow(b, n, n+k, expected)
					copy(b.data[n:], pb.data[:k])
					n += k
					empty = 0
				}
				pb.Release()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Release()
					return nil, err
				}
				if k == 0 {
					if empty++; empty >= maxEmptyReads {
						b.Release()
						return nil, io.ErrNoProgress
					}
				}
				continue
			}
			b = p.grow(b, n, n+1, expected)
		}
		k, err := r.Read(b.data[n:])
		if k < 0 || k > len(b.data)-n {
			b.Release()
			return nil, errInvalidCount
		}
		n += k
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Release()
			return nil, err
		}
		if k > 0 {
			empty = 0
		} else if empty++; empty >= maxEmptyReads {
			b.Release()
			return nil, io.ErrNoProgress
		}
	}
	if !known && int64(n) != p.hint.Load() {
		p.hint.Store(int64(n))
	}
	return p.finish(b, n), nil
}

// statedSize returns the size r says it has, if it says one worth trusting.
func statedSize(r io.Reader) (int, bool) {
	switch v := r.(type) {
	case interface{ Len() int }:
		if n := v.Len(); n >= 0 && n <= maxTrustedSize {
			return n, true
		}
	case interface{ Stat() (fs.FileInfo, error) }:
		fi, err := v.Stat()
		if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && fi.Size() <= maxTrustedSize {
			return int(fi.Size()), true
		}
	}
	return 0, false
}

// presize returns the first buffer's size for a stated size.
func presize(size int) int {
	if size < slackLimit {
		return size + 1
	}
	return min(size, maxPresize)
}

// grow returns a buffer of capacity at least need holding b's first n bytes,
// and releases b. It at least doubles, and jumps towards expected.
func (p *Pool) grow(b *Buf, n, need, expected int) *Buf {
	size := max(2*len(b.data), need)
	if expected > size {
		size = min(expected, max(size, growJump*len(b.data)))
	}
	nb := p.get(size)
	copy(nb.data, b.data[:n])
	b.Release()
	return nb
}

// finish sets b's length to n, first moving the data to a smaller buffer if
// it fills no more than a quarter of b (a size hint that was too large) and
// b is larger than shrinkAbove.
func (p *Pool) finish(b *Buf, n int) *Buf {
	if n <= len(b.data)/4 && len(b.data) > shrinkAbove {
		nb := p.get(n)
		copy(nb.data, b.data[:n])
		b.Release()
		b = nb
	}
	b.n = n
	return b
}

// ReadFile reads the named file and returns its contents in a Buf the
// caller must Release. Errors are *fs.PathError naming path: from open
// (missing file, permission), stat, or read; a directory gives a read error
// wrapping EISDIR, as os.ReadFile does.
//
// ReadFile opens the file directly (open, fstat, read, close: no poller
// registration, no *os.File) and reads into a buffer sized from fstat. A
// regular file is read until a short read at or past the size fstat gave,
// or a read of 0 bytes; a file that changes size during the read yields what
// was read by then (more than the stated size if it grew, less if it shrank).
// A file that states no size (a regular file of size 0, as in /proc, or a
// device or pipe), and a file of a pseudo-filesystem (procfs, sysfs...),
// whose stated size means nothing, is read until a read returns 0 bytes,
// up to DefaultLimit bytes: past it ReadFile fails with an error wrapping
// ErrLimit (so /proc/self/pagemap or /dev/zero cannot fill memory), and
// ReadFileLimit sets another limit. The file is read with blocking reads
// on the calling goroutine's thread, as *os.File does for regular files;
// a pipe with no writer blocks it.
//
// In steady state ReadFile allocates nothing: the NUL-terminated copy of
// path that open needs is made in a pooled buffer too.
func (p *Pool) ReadFile(path string) (*Buf, error) { return p.ReadFileLimit(path, 0) }

// ReadFileLimit is ReadFile reading at most limit bytes (0: DefaultLimit)
// from a file that states no size (see ReadFile). A regular file that
// states its size is read whole, whatever the limit.
func (p *Pool) ReadFileLimit(path string, limit int64) (*Buf, error) {
	if limit < 0 {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errNegativeLimit}
	}
	pz := p.get(len(path) + 1)
	z, err := sys.AppendPathZ(pz.data[:0], path)
	fd := -1
	if err == nil {
		fd, err = sys.OpenZ(sys.AT_FDCWD, z, sys.O_RDONLY)
	}
	pz.Release()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	b, err := p.readFD(fd, path, limit)
	sys.Close(fd)
	return b, err
}

var errNegativeLimit = errors.New("bufpool: negative limit")

func (p *Pool) readFD(fd int, path string, limit int64) (*Buf, error) {
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if testHookAfterStat != nil {
		testHookAfterStat()
	}
	mode := st.Mode & sys.S_IFMT
	if mode == sys.S_IFDIR {
		return nil, &fs.PathError{Op: "read", Path: path, Err: sys.EISDIR}
	}
	// sized: a regular file that states its size. A short read at or past
	// that size is its end (Linux returns short reads of a regular file
	// only at its end), which saves the final read of 0 bytes.
	sized := mode == sys.S_IFREG && st.Size > 0 && st.Size <= maxTrustedSize
	expected, first := 0, fileUnknownStart
	if sized {
		expected = int(st.Size)
		first = presize(expected)
	}
	bound := unsized.NewBound(fd, int64(expected), limit)
	b := p.get(first)
	n := 0
	probing := true
	for {
		if n == len(b.data) {
			if probing && n >= expected {
				pb := p.get(probeSize)
				k, err := sys.Read(fd, pb.data)
				if err != nil {
					pb.Release()
					b.Release()
					return nil, &fs.PathError{Op: "read", Path: path, Err: err}
				}
				if k == 0 {
					pb.Release()
					break
				}
				probing = false
				b = p.grow(b, n, n+k, expected)
				copy(b.data[n:], pb.data[:k])
				n += k
				pb.Release()
				if bound.Over(int64(n)) {
					b.Release()
					return nil, unsized.Error(path, bound.Limit(), "bufpool.ReadFileLimit")
				}
				if sized && k < probeSize {
					break
				}
				continue
			}
			b = p.grow(b, n, n+1, expected)
		}
		want := len(b.data) - n
		k, err := sys.Read(fd, b.data[n:])
		if err != nil {
			b.Release()
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			break
		}
		n += k
		if bound.Over(int64(n)) {
			b.Release()
			return nil, unsized.Error(path, bound.Limit(), "bufpool.ReadFileLimit")
		}
		if sized && k < want && n >= expected {
			break
		}
	}
	return p.finish(b, n), nil
}
