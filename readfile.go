package iopath

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/unsized"
)

// smallFile is the size below which ReadFile reads a file with read(2)
// on the calling goroutine, as os.ReadFile does, without asking Auto:
// auto's rule "small-file" gives the same answer (one worker) for files
// under auto.SmallFile, and asking would cost more system calls (a
// residency sample) than it could save. IOPATH_ENGINE, WithEngine and
// WithDirect send small files to the large path too. A variable so that
// tests which steer Auto can reach it with small files.
var smallFile = auto.SmallFile

// maxWholeFile is the largest file ReadFile tries to hold in memory; a
// larger one is an EFBIG error rather than an allocation the runtime
// cannot survive (the same bound as batch's engines).
const maxWholeFile = 1 << 40

// testHookAfterStat, if set, runs in ReadFile and ReadFileBuf between the
// fstat that sizes the buffer and the reads, so that tests can change the
// file's size there.
var testHookAfterStat func(path string)

// ReadFile reads the whole file at path, by the best path for it, and
// returns its bytes in a slice that belongs to the caller.
//
// A file under 8 MiB is read like bufpool.ReadFile: open, fstat, one read
// into a buffer one byte larger than the file, close (4 system calls). A
// larger one is read by the engine Auto chooses (or WithEngine names):
// parallel preads straight into the result by Choice.Workers goroutines
// in chunks of the block size, io_uring with the queue depth in flight,
// mmap and a parallel copy, or read(2) in sequence. With WithDirect the
// result is read with O_DIRECT into page-aligned memory.
//
// ReadFile reads to the end of the file as it finds it: a file that grows
// while it is read is read on to its new end, one that shrinks is cut
// where its end was found, and never holds bytes from beyond it (an mmap
// pass that sees the size change reads again with pread). A regular file
// that reports size 0, and any file of a pseudo-filesystem (procfs,
// sysfs, debugfs, tracefs, configfs, securityfs, cgroup), whose size
// means nothing (4096 for a sysfs attribute), is read with read(2) until
// it returns 0, whatever the engine, up to WithPseudoLimit's limit
// (DefaultPseudoLimit by default): /proc/self/pagemap, as long as the
// address space, gives an error wrapping ErrLimit rather than filling
// memory. An empty file gives an empty, non-nil slice.
//
// Errors wrap an *fs.PathError naming path (see the package
// documentation): from open or fstat, a read error,
// EISDIR for a directory (as os.ReadFile reports it), ErrNotRegular for
// a FIFO, socket or device (ReadFile never blocks on a FIFO and never
// reads /dev/zero forever; use os.ReadFile for those), ErrLimit for a
// file of unknown size past the limit, and errors wrapping
// ErrNotSupported for an explicit engine that cannot run here. A bad
// option gives an error before the file is opened.
func ReadFile(path string, opts ...Option) ([]byte, error) {
	b, err := readFile(path, opts)
	if err != nil {
		return nil, public(err)
	}
	return b, nil
}

func readFile(path string, opts []Option) ([]byte, error) {
	o, fd, st, err := openWhole(path, opts)
	if err != nil {
		return nil, err
	}
	defer sys.Close(fd) // read-only: close cannot lose data
	c, err := wholePlan(fd, path, &st, &o)
	if err != nil {
		return nil, err
	}
	switch {
	case oneRead(c):
		return readSmall(fd, path, int(st.Size), &o)
	case c.Rule == ruleUnsized:
		return readSmall(fd, path, 0, &o)
	}
	w := wholeBuf{direct: o.direct}
	w.alloc(int(st.Size))
	n, err := readWhole(fd, path, &w, &o, c)
	if err != nil {
		return nil, err
	}
	return w.b[:n], nil
}

// openWhole is where ReadFile and ReadFileBuf start: the options, the
// open (a regular file, or a pseudo-file), the size check and the engine
// check. On error nothing is left open.
func openWhole(path string, opts []Option) (o options, fd int, st sys.Stat_t, err error) {
	if len(opts) > 0 {
		if o, err = parseOptions(callReadFile, opts); err != nil {
			return o, -1, st, err
		}
	}
	if fd, st, err = openRegular(path, o.direct, "read"); err != nil {
		return o, -1, st, err
	}
	switch {
	case st.Size > maxWholeFile:
		err = &fs.PathError{Op: "read", Path: path, Err: syscall.EFBIG}
	default:
		if testHookAfterStat != nil {
			testHookAfterStat(path)
		}
		err = o.checkEngine(callReadFile)
	}
	if err != nil {
		sys.Close(fd)
		return o, -1, st, err
	}
	return o, fd, st, nil
}

// ReadFileBuf is ReadFile into a pooled buffer: it returns a *bufpool.Buf
// holding exactly the file's bytes (Bytes, Len), which the caller must
// Release once, when done with them; the memory is reused afterwards. In
// steady state a file under 8 MiB is read with no allocation at all.
// Everything else is as for ReadFile; on error the Buf is nil.
func ReadFileBuf(path string, opts ...Option) (*bufpool.Buf, error) {
	b, err := readFileBuf(path, opts)
	if err != nil {
		return nil, public(err)
	}
	return b, nil
}

func readFileBuf(path string, opts []Option) (*bufpool.Buf, error) {
	o, fd, st, err := openWhole(path, opts)
	if err != nil {
		return nil, err
	}
	defer sys.Close(fd) // read-only: close cannot lose data
	c, err := wholePlan(fd, path, &st, &o)
	if err != nil {
		return nil, err
	}
	switch {
	case oneRead(c):
		return readSmallBuf(fd, path, int(st.Size), &o)
	case c.Rule == ruleUnsized:
		return readSmallBuf(fd, path, 0, &o)
	}
	w := wholeBuf{pooled: true, direct: o.direct}
	w.alloc(int(st.Size))
	n, err := readWhole(fd, path, &w, &o, c)
	if err != nil {
		if ringFailed(err) {
			// The failed ring may still write the buffer: it never goes
			// back to the pool (its pages stay pinned by the ring).
			keepForever(w.buf)
		} else {
			w.buf.Release()
		}
		return nil, err
	}
	if n == w.buf.Len() {
		return w.buf, nil
	}
	// The file changed size: a Buf of the right length.
	b := bufpool.Get(n)
	copy(b.Bytes(), w.b[:n])
	w.buf.Release()
	return b, nil
}

// ruleSmallFile is the Choice's Rule for a file ReadFile reads with one
// read(2) on the calling goroutine, without asking Auto.
const ruleSmallFile = "small-file"

// ruleMidCachedWhole is Auto's rule for a cached file of 8 to 32 MiB,
// which ReadFile reads as a small one: one read(2), on the calling
// goroutine.
const ruleMidCachedWhole = "mid-cached-whole"

// oneRead reports whether ReadFile reads the file as os.ReadFile does, with
// one read(2) on the calling goroutine: a small file, or Auto's
// mid-cached-whole unless an option asked for more workers.
func oneRead(c auto.Choice) bool {
	return c.Rule == ruleSmallFile || (c.Rule == ruleMidCachedWhole && c.Engine == "read" && c.Workers == 1)
}

// wholePlan is how ReadFile and ReadFileBuf read the open file fd, whose
// fstat is st: a small one with read(2) on the calling goroutine
// (ruleSmallFile), one whose size means nothing to its end (ruleUnsized),
// any other by plan's choice. Plan(path, ForReadFile) asks it too.
func wholePlan(fd int, path string, st *sys.Stat_t, o *options) (auto.Choice, error) {
	size := st.Size
	small := auto.Choice{Engine: "read", Workers: 1, Rule: ruleSmallFile,
		Reason: "a file under 8 MiB: one read(2) into a buffer one byte larger, on the calling goroutine, as os.ReadFile does"}
	switch {
	case o.small(size) && size > 0:
		return small, nil
	case o.small(size):
		return auto.Choice{Engine: "read", Workers: 1, Rule: ruleUnsized, Reason: unsizedReason}, nil
	case !o.direct && unsized.PseudoStat(fd, st.Dev):
		return auto.Choice{Engine: "read", Workers: 1, Rule: ruleUnsized, Reason: unsizedReason}, nil
	}
	c, err := plan(callReadFile, o, auto.Workload{Kind: auto.WholeFile, Path: path, Size: size, Direct: o.direct, Resident: -1,
		FS: fsFor(fd, profile.WholeFile, size)})
	if err == nil && c.Rule == ruleSmallFile {
		// Auto's rule for a small file, reached when a machine profile
		// covers the size on another filesystem: ReadFile's own path.
		return small, nil
	}
	return c, err
}

// small reports whether a file of size bytes takes the small-file path:
// read(2) on the calling goroutine. A file that states no size (0) always
// does, unless O_DIRECT needs aligned memory; a size a rule of the machine
// profile covers never does (Auto decides).
func (o *options) small(size int64) bool {
	if o.direct {
		return false
	}
	if size == 0 {
		return true
	}
	return o.engine == "" && size < int64(smallFile) && size < profile.Active().Floor(profile.WholeFile) &&
		os.Getenv(auto.EnvEngine) == ""
}

// readNB is read(2) on a descriptor opened with O_NONBLOCK (see
// fileio.ReadNonblock: a regular file that answers EAGAIN is read again
// without the flag).
func readNB(fd int, b []byte) (int, error) { return fileio.ReadNonblock(fd, b, nil) }

// readSmall reads fd to its end into a new slice. A regular file is read
// into a buffer of size+1 bytes, so that one short read shows the end (on
// Linux a read of a regular file comes up short only at its end); a file
// that states no size grows its buffer from 512 bytes as os.ReadFile does,
// up to o's limit (see unsized.Bound).
func readSmall(fd int, path string, size int, o *options) ([]byte, error) {
	c := size + 1
	if size == 0 {
		c = 512
	}
	lim := unsized.NewBound(fd, int64(size), o.pseudoLimit)
	buf := make([]byte, 0, c)
	for {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(2*cap(buf), lim.MaxCap()))
			copy(nb, buf)
			buf = nb
		}
		want := cap(buf) - len(buf)
		k, err := readNB(fd, buf[len(buf):cap(buf)])
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+k]
		if lim.Over(int64(len(buf))) {
			return nil, o.limitErr(path)
		}
		if size > 0 && k < want && len(buf) >= size {
			return buf, nil
		}
	}
}

// fdReader reads a descriptor for bufpool.ReadAll, which then sizes the
// buffer from the pool's last unknown-size read; sizedReader adds the
// size fstat gave (Len), so that ReadAll reads into size+1 bytes at once.
// Both are pooled, so that reading allocates nothing.
type fdReader struct {
	fd   int
	size int // 0: unknown
	n    int
	lim  unsized.Bound
}

type sizedReader struct{ fdReader }

// Len is the file's size at fstat, for bufpool.ReadAll.
func (r *sizedReader) Len() int { return r.size }

// Read reads once. It reports io.EOF with the short read past the stated
// size that ends a regular file, sparing the read of 0 bytes, and
// unsized.ErrLimit past the limit of a file of unknown size.
func (r *fdReader) Read(p []byte) (int, error) {
	k, err := readNB(r.fd, p)
	if err != nil {
		return 0, err
	}
	if k == 0 {
		return 0, io.EOF
	}
	r.n += k
	if r.lim.Over(int64(r.n)) {
		return 0, unsized.ErrLimit
	}
	if r.size > 0 && k < len(p) && r.n >= r.size {
		return k, io.EOF
	}
	return k, nil
}

var (
	sizedReaders = sync.Pool{New: func() any { return new(sizedReader) }}
	fdReaders    = sync.Pool{New: func() any { return new(fdReader) }}
)

// readSmallBuf is readSmall into a pooled buffer, through bufpool.ReadAll.
func readSmallBuf(fd int, path string, size int, o *options) (*bufpool.Buf, error) {
	var b *bufpool.Buf
	var err error
	lim := unsized.NewBound(fd, int64(size), o.pseudoLimit)
	if size > 0 {
		r := sizedReaders.Get().(*sizedReader)
		r.fdReader = fdReader{fd: fd, size: size, lim: lim}
		b, err = bufpool.ReadAll(r)
		sizedReaders.Put(r)
	} else {
		r := fdReaders.Get().(*fdReader)
		*r = fdReader{fd: fd, lim: lim}
		b, err = bufpool.ReadAll(r)
		fdReaders.Put(r)
	}
	if err == unsized.ErrLimit {
		return nil, o.limitErr(path)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// wholeBuf is the destination of a large ReadFile: a slice of its own, or
// a pooled Buf (ReadFileBuf). b has the length of the file's size at
// fstat; its capacity may hold more.
type wholeBuf struct {
	b      []byte
	buf    *bufpool.Buf // b's owner when pooled
	pooled bool
	direct bool
}

// alloc sets b to a buffer of length size with room for one more byte
// when that comes cheap (a slice of its own always has it, so that a
// short last read shows the end), page-aligned for O_DIRECT.
func (w *wholeBuf) alloc(size int) {
	if w.pooled {
		if w.direct {
			w.buf = bufpool.GetAligned(size)
		} else {
			w.buf = bufpool.Get(size)
		}
		w.b = w.buf.Bytes()[:size:w.buf.Cap()]
		return
	}
	c := size + 1
	if w.direct {
		c = alignUp(c)
	}
	w.b = allocBytes(size, c, w.direct)
}

// grow makes room for at least need bytes, keeping b's first n.
func (w *wholeBuf) grow(n, need int) {
	c := max(need, 2*cap(w.b))
	if w.direct {
		c = alignUp(c)
	}
	if w.pooled {
		var nb *bufpool.Buf
		if w.direct {
			nb = bufpool.GetAligned(c)
		} else {
			nb = bufpool.Get(c)
		}
		copy(nb.Bytes(), w.b[:n])
		w.buf.Release()
		w.buf = nb
		w.b = nb.Bytes()[:n:nb.Cap()]
		return
	}
	nb := allocBytes(n, c, w.direct)
	copy(nb, w.b[:n])
	w.b = nb
}

func alignUp(n int) int { return fileio.AlignUp(n) }

// allocBytes returns a new slice of length n and capacity c that starts
// fileio.SkewFor(c) bytes past a page boundary, or on one for O_DIRECT.
func allocBytes(n, c int, direct bool) []byte { return fileio.AllocBytes(n, c, direct) }

// readWhole reads the open regular file fd from its start to its end into
// w, the way c says, and returns the number of bytes read (w.b may have been replaced by a
// larger buffer). Errors are *fs.PathError naming path.
func readWhole(fd int, path string, w *wholeBuf, o *options, c auto.Choice) (int, error) {
	size := len(w.b)
	var err error
	if c.Engine == "io_uring" {
		// io_uring honours O_NONBLOCK: EAGAIN instead of waiting for the disk.
		if err := sys.ClearNonblock(fd); err != nil {
			return 0, &fs.PathError{Op: "fcntl", Path: path, Err: err}
		}
	}
	// dst is one byte longer than the file when there is room, so that a
	// short last read shows the end without one more read.
	want := size + 1
	if w.direct {
		want = alignUp(want)
	}
	dst := w.b[:size]
	if want <= cap(w.b) && c.Engine != "mmap" {
		dst = w.b[:want]
	}
	bs := c.BlockSize
	if bs <= 0 {
		bs = engine.DefaultBlockSize
	}
	var n int
	switch c.Engine {
	case "read":
		n, err = fileio.ReadChunks(fd, dst, 0, bs, 1, w.direct, true)
	case "mmap":
		var again bool
		n, again, err = fileio.MmapCopy(fd, dst, c.Workers, bs)
		if again {
			// The file changed under the mapping: one more pass, with pread.
			n, err = fileio.ReadChunks(fd, dst, 0, bs, c.Workers, w.direct, false)
		}
	case "io_uring":
		qd := c.QueueDepth
		n, err = fileio.ReadRings(fd, dst, bs, c.Workers, w.direct, func() (*fileio.Ring, error) { return newRing(qd) })
		if err != nil && errors.Is(err, ErrNotSupported) && c.Rule != ruleWithEngine {
			n, err = fileio.ReadChunks(fd, dst, 0, bs, c.Workers, w.direct, false)
		}
	default:
		n, err = fileio.ReadChunks(fd, dst, 0, bs, c.Workers, w.direct, false)
	}
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if n < len(dst) {
		return n, nil
	}
	// All of dst was read: the file may go on.
	n, err = readTail(fd, w, n)
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return n, nil
}

// readTail reads fd on from offset n (all of w.b[:n] read) to its end,
// growing w as needed. When w is full it first reads into a probe buffer,
// so that a file that ends there is not copied into a larger buffer.
func readTail(fd int, w *wholeBuf, n int) (int, error) {
	nw := fileio.Nowait{Off: w.direct}
	for {
		room := cap(w.b) - n
		if w.direct {
			room &^= DirectAlign - 1
		}
		if room == 0 {
			pb := bufpool.GetAligned(DirectAlign)
			p := pb.Bytes()[:DirectAlign]
			m, err := fileio.PreadFull(fd, p, int64(n), &nw, w.direct)
			if err != nil || m == 0 {
				pb.Release()
				return n, err
			}
			w.grow(n, n+m)
			copy(w.b[n:n+m], p[:m])
			pb.Release()
			n += m
			if m < DirectAlign {
				return n, nil
			}
			continue
		}
		m, err := fileio.PreadFull(fd, w.b[n:n+room], int64(n), &nw, w.direct)
		n += m
		if err != nil || m < room {
			return n, err
		}
	}
}
