package iopath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

var fileOpts = []named{
	{"auto", nil},
	{"pread", []Option{WithEngine("pread")}},
	{"pread×3", []Option{WithEngine("pread"), WithWorkers(3)}},
	{"io_uring", []Option{WithEngine("io_uring")}},
	{"io_uring×2-qd4", []Option{WithEngine("io_uring"), WithWorkers(2), WithQueueDepth(4)}},
	{"mmap", []Option{WithEngine("mmap")}},
}

// openT opens path with opts, skipping when the backend cannot run here.
func openT(t *testing.T, path string, opts ...Option) *File {
	t.Helper()
	f, err := Open(path, opts...)
	skipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// wantRead is what a read of n bytes at off of data must give.
func wantRead(data []byte, off int64, n int) ([]byte, error) {
	if off >= int64(len(data)) {
		if n == 0 {
			return nil, nil
		}
		return nil, io.EOF
	}
	end := min(int(off)+n, len(data))
	if end-int(off) < n {
		return data[off:end], io.EOF
	}
	return data[off:end], nil
}

func TestFileReadAt(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			for _, size := range []int{0, 1, 4095, 4096, 4097, 1<<20 + 3, 9<<20 + 5} {
				data := content(size, uint64(size))
				path := writeFile(t, dir, data)
				f := openT(t, path, o.opts...)
				if f.Size() != int64(size) || f.Name() != path {
					t.Errorf("Size %d Name %q", f.Size(), f.Name())
				}
				rng := rand.New(rand.NewPCG(uint64(size), 1))
				cases := [][2]int64{{0, 0}, {0, 1}, {0, int64(size)}, {0, int64(size) + 1}, {int64(size), 1}, {int64(size) + 10, 5}, {int64(size) - 1, 2}}
				if size >= 5<<20 {
					cases = append(cases, [2]int64{3, 5 << 20}, [2]int64{1000, int64(size)}) // split into parallel chunks
				}
				for range 30 {
					off := rng.Int64N(int64(size) + 2)
					cases = append(cases, [2]int64{off, rng.Int64N(20000)})
				}
				for _, c := range cases {
					if c[0] < 0 {
						continue
					}
					p := make([]byte, c[1])
					n, err := f.ReadAt(p, c[0])
					want, werr := wantRead(data, c[0], int(c[1]))
					if n != len(want) || err != werr || !bytes.Equal(p[:n], want) {
						t.Fatalf("size %d ReadAt(%d bytes, %d): %d, %v; want %d, %v", size, c[1], c[0], n, err, len(want), werr)
					}
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// ReadBatch sets every request's N and Err as ReadAt would, whatever
// their mix: adjacent (coalesced), repeated, past the end, across it,
// empty, more than the queue depth.
func TestFileReadBatch(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	size := 3<<20 + 11
	data := content(size, 3)
	path := writeFile(t, dir, data)
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			f := openT(t, path, o.opts...)
			defer f.Close()
			rng := rand.New(rand.NewPCG(5, 6))
			for round := range 20 {
				var reqs []Request
				n := 1 + rng.IntN(200)
				for len(reqs) < n {
					var off int64
					ln := rng.IntN(9000)
					switch rng.IntN(6) {
					case 0: // adjacent to the previous one
						if len(reqs) > 0 {
							p := reqs[len(reqs)-1]
							off = p.Off + int64(len(p.Buf))
						}
					case 1: // crossing or past the end
						off = int64(size) - int64(rng.IntN(10000))
					case 2:
						ln = 0
					default:
						off = rng.Int64N(int64(size))
					}
					reqs = append(reqs, Request{Off: off, Buf: make([]byte, ln), N: -1, Err: errors.New("stale")})
				}
				if round%2 == 0 {
					// A long run of adjacent requests: one preadv, IOV_MAX permitting.
					off := rng.Int64N(int64(size) / 2)
					for range 1100 {
						reqs = append(reqs, Request{Off: off, Buf: make([]byte, 100)})
						off += 100
					}
				}
				err := f.ReadBatch(reqs)
				var first error
				for i, r := range reqs {
					want, werr := wantRead(data, r.Off, len(r.Buf))
					if r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
						t.Fatalf("round %d request %d (%d bytes at %d): N %d Err %v; want %d, %v", round, i, len(r.Buf), r.Off, r.N, r.Err, len(want), werr)
					}
					if first == nil {
						first = werr
					}
				}
				if err != first {
					t.Fatalf("round %d: ReadBatch returned %v, want the first request's error %v", round, err, first)
				}
			}
			if err := f.ReadBatch(nil); err != nil {
				t.Errorf("empty batch: %v", err)
			}
		})
	}
}

// A File is safe for concurrent use: many goroutines mixing ReadAt and
// ReadBatch (run with -race), then a Close that waits for them.
func TestFileConcurrent(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(2<<20+99, 8)
	path := writeFile(t, t.TempDir(), data)
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			f := openT(t, path, o.opts...)
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := range 16 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), 9))
					for i := range 100 {
						off := rng.Int64N(int64(len(data)))
						if i%2 == 0 {
							p := make([]byte, 4096)
							n, err := f.ReadAt(p, off)
							want, werr := wantRead(data, off, len(p))
							if n != len(want) || err != werr || !bytes.Equal(p[:n], want) {
								errs <- fmt.Errorf("ReadAt at %d: %d, %v", off, n, err)
								return
							}
							continue
						}
						reqs := make([]Request, 8)
						for k := range reqs {
							reqs[k] = Request{Off: rng.Int64N(int64(len(data))), Buf: make([]byte, 4096)}
						}
						f.ReadBatch(reqs)
						for _, r := range reqs {
							want, werr := wantRead(data, r.Off, len(r.Buf))
							if r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
								errs <- fmt.Errorf("ReadBatch at %d: %d, %v", r.Off, r.N, r.Err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Close while reads run: they finish on the descriptor they started with,
// or fail with fs.ErrClosed; none reads another file.
func TestFileCloseWhileReading(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(1<<20, 10)
	path := writeFile(t, t.TempDir(), data)
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			f := openT(t, path, o.opts...)
			var wg sync.WaitGroup
			start := make(chan struct{})
			bad := make(chan error, 8)
			for range 8 {
				wg.Go(func() {
					<-start
					p := make([]byte, 4096)
					for i := 0; ; i++ {
						off := int64(i%256) * 4096
						n, err := f.ReadAt(p, off)
						if errors.Is(err, fs.ErrClosed) {
							return
						}
						if err != nil || !bytes.Equal(p[:n], data[off:off+4096]) {
							bad <- fmt.Errorf("ReadAt at %d: %d, %v", off, n, err)
							return
						}
					}
				})
			}
			close(start)
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			close(bad)
			for err := range bad {
				t.Error(err)
			}
		})
	}
}

// Close waits for a read in progress: the read ends on the descriptor it
// started with, and Close returns after it.
func TestFileCloseWaits(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(10000, 11)
	path := writeFile(t, t.TempDir(), data)
	f := openT(t, path)
	inside, release := make(chan struct{}), make(chan struct{})
	testHookReading = func() {
		close(inside)
		<-release
	}
	defer func() { testHookReading = nil }()
	readErr := make(chan error, 1)
	go func() {
		p := make([]byte, 100)
		n, err := f.ReadAt(p, 50)
		if err == nil && (n != 100 || !bytes.Equal(p, data[50:150])) {
			err = fmt.Errorf("%d bytes, wrong data", n)
		}
		readErr <- err
	}()
	<-inside
	closeErr := make(chan error, 1)
	go func() { closeErr <- f.Close() }()
	for f.refs.Load()&closedBit == 0 { // Close has begun
		runtime.Gosched()
	}
	// The read is held inside: Close must not return meanwhile. (Not
	// a flag the reader sets after ReadAt returns, which a busy machine
	// may delay past Close's return.)
	select {
	case err := <-closeErr:
		t.Fatalf("Close returned (%v) while a read was in progress", err)
	case <-time.After(50 * time.Millisecond):
	}
	testHookReading = nil
	close(release)
	if err := <-readErr; err != nil {
		t.Errorf("the read in progress: %v", err)
	}
	if err := <-closeErr; err != nil {
		t.Error(err)
	}
}

func TestFileDirect(t *testing.T) {
	testenv.CheckFDs(t)
	dir := directDir(t)
	size := 1<<20 + 100
	data := content(size, 12)
	path := writeFile(t, dir, data)
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			if o.name == "mmap" {
				// A mapping goes through the page cache: refused (see
				// TestFileMmapDirect).
				return
			}
			f := openT(t, path, append(o.opts, WithDirect())...)
			defer f.Close()
			b := bufpool.GetAligned(3 * DirectAlign)
			defer b.Release()
			p := b.Bytes()[:3*DirectAlign]
			for _, off := range []int64{0, 4096, int64(size) &^ 4095, int64(size)&^4095 - 4096, int64(size+4095)&^4095 + 4096} {
				n, err := f.ReadAt(p, off)
				want, werr := wantRead(data, off, len(p))
				if n != len(want) || err != werr || !bytes.Equal(p[:n], want) {
					t.Errorf("ReadAt at %d: %d, %v; want %d, %v", off, n, err, len(want), werr)
				}
			}
			q := bufpool.GetAligned(2 * DirectAlign)
			defer q.Release()
			reqs := []Request{{Off: 8192, Buf: p[:4096]}, {Off: 12288, Buf: p[4096:8192]}, {Off: int64(size) &^ 4095, Buf: q.Bytes()[:8192]}}
			f.ReadBatch(reqs)
			for _, r := range reqs {
				want, werr := wantRead(data, r.Off, len(r.Buf))
				if r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
					t.Errorf("ReadBatch at %d: %d, %v; want %d, %v", r.Off, r.N, r.Err, len(want), werr)
				}
			}
			// Unaligned offset, length or address: a clear error, nothing read.
			for _, c := range []struct {
				p   []byte
				off int64
			}{{p[:4096], 100}, {p[:100], 0}, {p[1 : 1+4096], 0}} {
				_, err := f.ReadAt(c.p, c.off)
				var pe *fs.PathError
				if !errors.Is(err, ErrUnaligned) || !errors.As(err, &pe) || pe.Path != path {
					t.Errorf("unaligned ReadAt (%d bytes at %d): %v", len(c.p), c.off, err)
				}
				reqs := []Request{{Off: 0, Buf: q.Bytes()[:4096]}, {Off: c.off, Buf: c.p}}
				err = f.ReadBatch(reqs)
				if !errors.Is(err, ErrUnaligned) || reqs[0].Err != nil || reqs[0].N != 4096 || !errors.Is(reqs[1].Err, ErrUnaligned) {
					t.Errorf("unaligned in ReadBatch: %v; %+v", err, reqs)
				}
			}
			// An empty buffer transfers nothing, so it needs no
			// alignment: it succeeds wherever it is and at any offset.
			for _, off := range []int64{0, 100} {
				if n, err := f.ReadAt(p[1:1], off); n != 0 || err != nil {
					t.Errorf("empty unaligned ReadAt at %d: %d, %v", off, n, err)
				}
				reqs := []Request{{Off: off, Buf: p[1:1]}, {Off: 0, Buf: q.Bytes()[:4096]}}
				if err := f.ReadBatch(reqs); err != nil || reqs[0].N != 0 || reqs[1].N != 4096 {
					t.Errorf("empty unaligned request in ReadBatch at %d: %v; %+v", off, err, reqs)
				}
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		is   error
	}{
		{filepath.Join(dir, "missing"), fs.ErrNotExist},
		{dir, syscall.EISDIR},
		{fifo, ErrNotRegular},
		{"/dev/null", ErrNotRegular},
	} {
		f, err := Open(tc.path)
		var pe *fs.PathError
		if f != nil || !errors.As(err, &pe) || pe.Op != "open" || pe.Path != tc.path || !errors.Is(err, tc.is) {
			t.Errorf("%s: got %v, %v; want an open error wrapping %v", tc.path, f, err, tc.is)
		}
	}
	path := writeFile(t, dir, []byte("x"))
	if _, err := Open(path, WithBlockSize(4096)); err == nil {
		t.Error("WithBlockSize accepted by Open")
	}
	if _, err := Open(path, WithEngine("readv")); err == nil || !strings.Contains(err.Error(), "pread, io_uring, mmap") {
		t.Errorf("WithEngine(readv): %v", err)
	}
}

// Under Auto an io_uring that cannot run gives a pread File; asked for by
// name it is an error that says why.
func TestOpenUringFallback(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(100000, 13)
	path := writeFile(t, t.TempDir(), data)
	t.Setenv(features.DisableEnv, "1")
	choose(t, auto.Choice{Engine: "io_uring", Workers: 2, QueueDepth: 8, Rule: "test"})
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reqs := []Request{{Off: 5, Buf: make([]byte, 10)}, {Off: 99995, Buf: make([]byte, 10)}}
	if err := f.ReadBatch(reqs); err != io.EOF || !bytes.Equal(reqs[0].Buf, data[5:15]) || reqs[1].N != 5 {
		t.Errorf("fallback File: %v %+v", err, reqs)
	}
	if f.rings != nil {
		t.Error("the fallback File has rings")
	}
	_, err = Open(path, WithEngine("io_uring"))
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), features.DisableEnv) {
		t.Errorf("explicit io_uring: %v", err)
	}
}

// The io_uring backend really is used when chosen.
func TestOpenUsesRings(t *testing.T) {
	path := writeFile(t, t.TempDir(), content(10000, 1))
	f := openT(t, path, WithEngine("io_uring"), WithWorkers(3))
	defer f.Close()
	if f.rings == nil || f.rings.Max() != 3 {
		t.Fatalf("rings %+v", f.rings)
	}
	choose(t, auto.Choice{Engine: "io_uring", Workers: 1, Rule: "test"})
	g := openT(t, path)
	defer g.Close()
	if g.rings == nil {
		t.Fatal("Auto's io_uring not used")
	}
}

// Reads that come back short (a signal, a partly cached file) are
// continued where they stopped, by every synchronous path.
func TestShortReads(t *testing.T) {
	testenv.CheckFDs(t)
	size := 1<<20 + 4321
	data := content(size, 14)
	path := writeFile(t, t.TempDir(), data)
	fileio.TestMaxRead = 777
	defer func() { fileio.TestMaxRead = 0 }()
	for _, o := range []named{
		{"read", []Option{WithEngine("read")}},
		{"pread×3", []Option{WithEngine("pread"), WithWorkers(3), WithBlockSize(8192)}},
	} {
		got, err := ReadFile(path, o.opts...)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("ReadFile %s: %d bytes, %v", o.name, len(got), err)
		}
	}
	for _, w := range []int{1, 3} {
		var s scanned
		if err := Scan(context.Background(), path, s.fn, WithEngine("pread"), WithWorkers(w), WithOrdered(), WithBlockSize(4096)); err != nil {
			t.Fatal(err)
		}
		s.check(t, data, 4096, true)
	}
	for _, workers := range []int{1, 3} {
		f := openT(t, path, WithEngine("pread"), WithWorkers(workers))
		p := make([]byte, 5<<20)
		n, err := f.ReadAt(p, 10)
		if n != size-10 || err != io.EOF || !bytes.Equal(p[:n], data[10:]) {
			t.Errorf("ReadAt with %d workers: %d, %v", workers, n, err)
		}
		// Adjacent requests: one group, continued over many short preadv.
		var reqs []Request
		for off := int64(size - 20000); off < int64(size)+100; off += 1000 {
			reqs = append(reqs, Request{Off: off, Buf: make([]byte, 1000)})
		}
		f.ReadBatch(reqs)
		for _, r := range reqs {
			want, werr := wantRead(data, r.Off, len(r.Buf))
			if r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
				t.Errorf("ReadBatch at %d: %d, %v; want %d, %v", r.Off, r.N, r.Err, len(want), werr)
			}
		}
		f.Close()
	}
}

// A File dropped without Close gives its descriptor back when collected.
func TestFileCollected(t *testing.T) {
	path := writeFile(t, t.TempDir(), []byte("data"))
	before := testenv.OpenFDs(t)
	for _, o := range fileOpts {
		f, err := Open(path, o.opts...)
		if errors.Is(err, ErrNotSupported) && !features.Probe().IOURing.Available {
			// Not t.Skip: the Files already open must be collected here,
			// not during a later test that counts descriptors.
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.ReadAt(make([]byte, 4), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Cleanups run on their own goroutine after a collection: give them
	// a moment (this bounds the wait, it does not time anything).
	for i := 0; i < 200 && testenv.OpenFDs(t) > before; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if after := testenv.OpenFDs(t); after > before {
		t.Errorf("%d descriptors open before, %d after the Files were collected", before, after)
	}
}

// dropDir returns a directory whose files' pages posix_fadvise(DONTNEED)
// can drop from the page cache (not tmpfs, whose pages are the data).
func dropDir(t *testing.T) string {
	t.Helper()
	const tmpfsMagic = 0x01021994
	for _, base := range []string{"", os.Getenv("IOPATH_BENCH_DIR"), "/var/tmp"} {
		if base == "" && len(t.Name()) == 0 {
			continue
		}
		dir := base
		if base == "" {
			dir = t.TempDir()
		} else if typ, _, _, err := sys.Statfs(base); err != nil || typ == tmpfsMagic {
			continue
		} else if dir, err = os.MkdirTemp(base, "iopath-file-test-"); err != nil {
			t.Fatal(err)
		} else {
			t.Cleanup(func() { os.RemoveAll(dir) })
		}
		if typ, _, _, err := sys.Statfs(dir); err == nil && typ != tmpfsMagic {
			return dir
		}
	}
	t.Skip("no directory whose page cache can be dropped (set IOPATH_BENCH_DIR)")
	return ""
}

// dropPages writes path's dirty pages back and drops [off, off+n) of it
// from the page cache.
func dropPages(t testing.TB, path string, off, n int64) {
	t.Helper()
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	if err := sys.Fsync(fd); err != nil {
		t.Fatal(err)
	}
	if err := sys.Fadvise(fd, off, n, sys.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// resident returns, for each 4 KiB page of the first size bytes of path,
// whether it is in the page cache.
func resident(t testing.TB, path string, size int) []bool {
	t.Helper()
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	m, err := sys.Mmap(fd, 0, size, sys.PROT_READ, sys.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(m)
	vec := make([]byte, (size+4095)/4096)
	if err := sys.Mincore(m, vec); err != nil {
		t.Fatal(err)
	}
	r := make([]bool, len(vec))
	for i, v := range vec {
		r[i] = v&1 != 0
	}
	return r
}

// cacheOnly leaves in the page cache only the ranges [r[0], r[0]+r[1])
// of path: it drops the whole file (DONTNEED drops only whole folios, and
// a freshly written file may be one large folio), then reads the ranges
// back through a descriptor without readahead.
func cacheOnly(t testing.TB, path string, ranges ...[2]int64) {
	t.Helper()
	dropPages(t, path, 0, 0)
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	if err := sys.Fadvise(fd, 0, 0, sys.FADV_RANDOM); err != nil {
		t.Fatal(err)
	}
	for _, r := range ranges {
		if _, err := sys.Pread(fd, make([]byte, r[1]), r[0]); err != nil {
			t.Fatal(err)
		}
	}
}

// stripes leaves every other 64 KiB stripe of path (the even ones) in
// the page cache, so that half of it is cached and half is not.
func stripes(t testing.TB, path string, size int64) {
	t.Helper()
	var ranges [][2]int64
	for off := int64(0); off < size; off += 128 << 10 {
		ranges = append(ranges, [2]int64{off, 64 << 10})
	}
	cacheOnly(t, path, ranges...)
}

// ReadBatch on a file half in the page cache: the inline pass serves the
// cached requests, the backend the rest of the others (requests that
// straddle a stripe are partly read inline, then continued), every byte
// as os.ReadFile has it, with concurrent callers (run with -race).
func TestReadBatchPartlyCached(t *testing.T) {
	testenv.CheckFDs(t)
	size := 4<<20 + 555
	path := writeFile(t, dropDir(t), content(size, 41))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var served, passed atomic.Int64
	testHookInline = func(n int, rest []int32) {
		served.Add(int64(n))
		passed.Add(int64(len(rest)))
	}
	defer func() { testHookInline = nil }()
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			served.Store(0)
			passed.Store(0)
			f := openT(t, path, o.opts...)
			defer f.Close()
			// A request partly read inline (the cached [64 KiB, 128 KiB)
			// of 64 KiB+1000 bytes) whose rest follows an uncached one
			// that ends where it starts: the backend continues it from
			// where it stopped, not as if adjacent to the other.
			cacheOnly(t, path, [2]int64{64 << 10, 64 << 10})
			reqs := []Request{{Off: 64 << 10, Buf: make([]byte, 64<<10+1000)}, {Off: 60 << 10, Buf: make([]byte, 4096)}}
			if err := f.ReadBatch(reqs); err != nil {
				t.Fatal(err)
			}
			for k, r := range reqs {
				if r.N != len(r.Buf) || !bytes.Equal(r.Buf, data[r.Off:r.Off+int64(len(r.Buf))]) {
					t.Fatalf("request %d (%d bytes at %d): N %d Err %v", k, len(r.Buf), r.Off, r.N, r.Err)
				}
			}
			for round := range 6 {
				stripes(t, path, int64(size))
				var wg sync.WaitGroup
				errs := make(chan error, 4)
				for g := range 4 {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
						reqs := make([]Request, 48)
						for k := range reqs {
							var off int64
							ln := 1 + rng.IntN(20000)
							switch {
							case k > 0 && rng.IntN(3) == 0: // adjacent: one preadv2
								p := reqs[k-1]
								off = p.Off + int64(len(p.Buf))
							case rng.IntN(8) == 0: // across the end
								off = int64(size) - int64(rng.IntN(8000))
							default:
								off = rng.Int64N(int64(size))
							}
							reqs[k] = Request{Off: off, Buf: make([]byte, ln)}
						}
						err := f.ReadBatch(reqs)
						var first error
						for k, r := range reqs {
							want, werr := wantRead(data, r.Off, len(r.Buf))
							if r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
								errs <- fmt.Errorf("round %d request %d (%d bytes at %d): N %d Err %v; want %d, %v", round, k, len(r.Buf), r.Off, r.N, r.Err, len(want), werr)
								return
							}
							if first == nil {
								first = werr
							}
						}
						if err != first {
							errs <- fmt.Errorf("round %d: ReadBatch returned %v, want %v", round, err, first)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
			}
			// Both paths ran: some requests were cached, some not. (The
			// mmap backend, Auto's on this file when it was wholly cached
			// at Open, copies instead of taking the inline pass.)
			if f.m == nil && (served.Load() == 0 || passed.Load() == 0) {
				t.Errorf("%d requests served inline, %d passed on: want some of each", served.Load(), passed.Load())
			}
		})
	}
}

// The inline pass serves exactly the cached requests and passes the
// others on to the backend (a request that straddles the cached part
// with what it read of it); after a batch that mostly missed, the next
// inlineBackoff batches skip the pass; WithDirect never takes it.
func TestReadBatchInline(t *testing.T) {
	testenv.CheckFDs(t)
	const size = 2 << 20
	const half = size / 2
	path := writeFile(t, dropDir(t), content(size, 42))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var calls []int // served, per inline pass
	var rest []int32
	defer func() { testHookInline = nil }()
	check := func(t *testing.T, reqs []Request) {
		t.Helper()
		for k, r := range reqs {
			want, werr := wantRead(data, r.Off, len(r.Buf))
			if r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
				t.Fatalf("request %d (%d bytes at %d): N %d Err %v; want %d, %v", k, len(r.Buf), r.Off, r.N, r.Err, len(want), werr)
			}
		}
	}
	for _, o := range []named{
		{"pread", []Option{WithEngine("pread")}},
		{"pread×3", []Option{WithEngine("pread"), WithWorkers(3)}},
		{"io_uring", []Option{WithEngine("io_uring")}},
	} {
		t.Run(o.name, func(t *testing.T) {
			f := openT(t, path, o.opts...)
			defer f.Close()
			// No readahead: a miss must not bring its neighbours in.
			if err := sys.Fadvise(f.fd, 0, 0, sys.FADV_RANDOM); err != nil {
				t.Fatal(err)
			}
			// Pages are cached in folios that may be larger than a page:
			// take the requests from what mincore says is cached and
			// what is not.
			cacheOnly(t, path, [2]int64{0, half})
			res := resident(t, path, size)
			var hits, misses []int64
			straddle := int64(-1) // a page cached, the next not
			for p, in := range res {
				if in {
					hits = append(hits, int64(p)*4096)
				} else {
					misses = append(misses, int64(p)*4096)
					if straddle < 0 && p > 0 && res[p-1] {
						straddle = int64(p) * 4096
					}
				}
			}
			if len(hits) < 8 || len(misses) < 8 || straddle < 0 {
				t.Skipf("%d pages cached, %d not after caching half the file: cannot mix hits and misses here", len(hits), len(misses))
			}
			// Even requests cached, odd ones not; the last straddles the
			// two, its first 1000 bytes cached.
			var reqs []Request
			var wantRest []int32
			for k := range 16 {
				off := hits[k/2*len(hits)/8]
				if k%2 == 1 {
					// Away from the straddling request's page: a miss
					// starts the read of its own page.
					off = misses[(k|1)*len(misses)/16]
					wantRest = append(wantRest, int32(k))
				}
				reqs = append(reqs, Request{Off: off, Buf: make([]byte, 4096)})
			}
			reqs = append(reqs, Request{Off: straddle - 1000, Buf: make([]byte, 5000)})
			last := len(reqs) - 1
			wantRest = append(wantRest, int32(last))
			lastN := -1
			testHookInline = func(n int, r []int32) {
				calls = append(calls, n)
				rest = r
				lastN = reqs[last].N
			}
			calls, rest = nil, nil
			if err := f.ReadBatch(reqs); err != nil {
				t.Fatal(err)
			}
			check(t, reqs)
			// A page mincore saw missing can be brought in before the
			// batch (another test's reads, the kernel's own), so a miss
			// may be served: the cached requests must be served, and most
			// of the misses passed on, with the straddling one read to
			// its cached part.
			passedOdd := 0
			for _, k := range rest {
				if k%2 == 0 && k != int32(last) {
					t.Fatalf("inline pass: cached request %d passed on (%v)", k, rest)
				}
				if k%2 == 1 {
					passedOdd++
				}
			}
			if len(calls) != 1 || calls[0]+len(rest) != len(reqs) || passedOdd < 4 ||
				(slices.Contains(rest, int32(last)) && lastN != 1000) {
				t.Fatalf("inline pass: %v served, %v passed on, straddling request at %d bytes; want [8], %v, 1000", calls, rest, lastN, wantRest)
			}

			// All cached now: one pass serves everything.
			calls, rest = nil, nil
			if err := f.ReadBatch(reqs); err != nil {
				t.Fatal(err)
			}
			check(t, reqs)
			if len(calls) != 1 || calls[0] != len(reqs) || len(rest) != 0 {
				t.Fatalf("cached: %v served, %v passed on; want [%d], []", calls, rest, len(reqs))
			}

			// A batch that misses entirely: the next inlineBackoff
			// batches skip the pass, even on cached data. A miss
			// starts the read of its folio, which may hold the page of
			// a later request and complete before the pass gets there
			// (more often on a loaded machine): a few may be served all
			// the same, and past a quarter the batch did not mostly
			// miss, no backoff is due, and the cold batch is tried
			// again.
			for try := 1; ; try++ {
				dropPages(t, path, 0, 0)
				if slices.Contains(resident(t, path, size), true) {
					t.Skip("pages still cached after dropping the whole file")
				}
				calls, rest = nil, nil
				if err := f.ReadBatch(reqs); err != nil {
					t.Fatal(err)
				}
				check(t, reqs)
				if len(calls) != 1 || calls[0]+len(rest) != len(reqs) {
					t.Fatalf("cold: %v served, %d passed on; want one pass", calls, len(rest))
				}
				if calls[0] <= len(reqs)/4 {
					break
				}
				if try == 5 {
					t.Fatalf("cold, %d tries: %v served, %d passed on; want [≤%d], the rest", try, calls, len(rest), len(reqs)/4)
				}
				t.Logf("cold try %d: %d of %d served (brought in during the pass), again", try, calls[0], len(reqs))
			}
			for range fileio.InlineBackoff {
				if err := f.ReadBatch(reqs); err != nil {
					t.Fatal(err)
				}
				check(t, reqs)
			}
			if len(calls) != 1 {
				t.Fatalf("%d inline passes in the %d batches after a cold one, want none", len(calls)-1, fileio.InlineBackoff)
			}
			if err := f.ReadBatch(reqs); err != nil {
				t.Fatal(err)
			}
			check(t, reqs)
			if len(calls) != 2 || calls[1] != len(reqs) {
				t.Fatalf("after the backoff: passes %v, want a second one serving %d", calls, len(reqs))
			}
		})
	}
	t.Run("direct", func(t *testing.T) {
		f, err := Open(path, WithDirect(), WithEngine("pread"))
		skipUnsupported(t, err)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := bufpool.GetAligned(8192)
		defer b.Release()
		reqs := []Request{{Off: 0, Buf: b.Bytes()[:4096]}, {Off: half, Buf: b.Bytes()[4096:8192]}}
		calls = nil
		testHookInline = func(n int, r []int32) { calls = append(calls, n) }
		if err := f.ReadBatch(reqs); err != nil {
			t.Fatal(err)
		}
		check(t, reqs)
		if len(calls) != 0 {
			t.Errorf("WithDirect: %d inline passes, want none", len(calls))
		}
	})
}

// The mmap backend maps the file once, at Open: an empty file has no
// mapping; the others have one of the size at Open.
func TestFileMmapMapping(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	for _, size := range []int{0, 1, 8192} {
		path := writeFile(t, dir, content(size, 20))
		f := openT(t, path, WithEngine("mmap"))
		if f.choice.Engine != "mmap" || len(f.m) != size || (size == 0) != (f.m == nil) {
			t.Errorf("size %d: engine %q, mapping of %d bytes", size, f.choice.Engine, len(f.m))
		}
		p := make([]byte, 10)
		if n, err := f.ReadAt(p, 0); n != min(size, 10) || (size < 10) != (err == io.EOF) {
			t.Errorf("size %d: ReadAt: %d, %v", size, n, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("second Close: %v", err)
		}
	}
}

// Auto maps a file that is wholly in the page cache (rule
// positioned-cached-mmap), and reads it right.
func TestFileAutoMmap(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(2<<20, 21)
	path := writeFile(t, t.TempDir(), data)
	if _, err := os.ReadFile(path); err != nil { // cached, whatever wrote it
		t.Fatal(err)
	}
	t.Setenv(auto.EnvEngine, "")
	f := openT(t, path)
	defer f.Close()
	if r, err := auto.Residency(path, int64(len(data))); err != nil || r < 0.99 {
		t.Skipf("the file is not cached here (%.2f, %v)", r, err)
	}
	if f.choice.Engine != "mmap" || f.choice.Rule != "positioned-cached-mmap" || f.m == nil {
		t.Fatalf("Auto on a cached file: %+v, mapped %v", f.choice, f.m != nil)
	}
	reqs := []Request{{Off: 5, Buf: make([]byte, 4096)}, {Off: 1 << 20, Buf: make([]byte, 100)}}
	if err := f.ReadBatch(reqs); err != nil || !bytes.Equal(reqs[0].Buf, data[5:4101]) || !bytes.Equal(reqs[1].Buf, data[1<<20:1<<20+100]) {
		t.Errorf("ReadBatch: %v", err)
	}
}

// WithDirect and mmap cannot go together: an error wrapping
// ErrNotSupported, nothing opened. Under Auto, WithDirect never maps.
func TestFileMmapDirect(t *testing.T) {
	testenv.CheckFDs(t)
	path := writeFile(t, t.TempDir(), content(8192, 22))
	f, err := Open(path, WithEngine("mmap"), WithDirect())
	if f != nil || !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "O_DIRECT") {
		t.Errorf("mmap WithDirect: %v, %v", f, err)
	}
	old := decide
	defer func() { decide = old }()
	decide = func(w auto.Workload) auto.Choice {
		return auto.Choice{Engine: "mmap", Workers: 1, Rule: "test", Reason: "test"}
	}
	f, err = Open(path, WithDirect())
	if err != nil {
		skipUnsupported(t, err)
		t.Fatal(err)
	}
	defer f.Close()
	if f.choice.Engine == "mmap" || f.m != nil {
		t.Errorf("Auto's mmap WithDirect: %+v, mapped %v", f.choice, f.m != nil)
	}
}

// Bytes past the size mapped at Open are read with pread: a file that
// grew reads right, across the old end and past it, and io.EOF comes at
// the new end.
func TestFileMmapGrown(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(10000, 23)
	path := writeFile(t, t.TempDir(), data)
	f := openT(t, path, WithEngine("mmap"))
	defer f.Close()
	more := content(20000, 24)
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(more); err != nil {
		t.Fatal(err)
	}
	w.Close()
	all := append(slices.Clone(data), more...)
	for _, c := range [][2]int64{{9000, 2000}, {10000, 4096}, {20000, 10000}, {25000, 10000}, {30000, 1}, {0, 30001}} {
		p := make([]byte, c[1])
		n, err := f.ReadAt(p, c[0])
		want, werr := wantRead(all, c[0], int(c[1]))
		if n != len(want) || err != werr || !bytes.Equal(p[:n], want) {
			t.Errorf("ReadAt(%d bytes at %d): %d, %v; want %d, %v", c[1], c[0], n, err, len(want), werr)
		}
		reqs := []Request{{Off: c[0], Buf: p}, {Off: 0, Buf: make([]byte, 100)}}
		f.ReadBatch(reqs)
		if r := reqs[0]; r.N != len(want) || r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) || reqs[1].Err != nil {
			t.Errorf("ReadBatch(%d bytes at %d): %d, %v; want %d, %v", c[1], c[0], r.N, r.Err, len(want), werr)
		}
	}
}

// A file truncated under the mapping: a read of a page past the new end
// faults, and the fault is an *fs.PathError wrapping ErrChanged, not a
// crash; the other requests of the batch are read, and the goroutine's
// SetPanicOnFault setting is as it was.
func TestFileMmapTruncated(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(64<<10, 25)
	path := writeFile(t, t.TempDir(), data)
	f := openT(t, path, WithEngine("mmap"))
	defer f.Close()
	if err := os.Truncate(path, 8192); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4096)
	n, err := f.ReadAt(p, 32<<10)
	var pe *fs.PathError
	if n != 0 || !errors.Is(err, ErrChanged) || !errors.As(err, &pe) || pe.Path != path {
		t.Errorf("ReadAt past the new end: %d, %v", n, err)
	}
	reqs := []Request{{Off: 0, Buf: make([]byte, 100)}, {Off: 40 << 10, Buf: make([]byte, 4096)}, {Off: 4096, Buf: make([]byte, 4096)}}
	err = f.ReadBatch(reqs)
	if !errors.Is(err, ErrChanged) || !errors.Is(reqs[1].Err, ErrChanged) || reqs[1].N != 0 ||
		reqs[0].Err != nil || !bytes.Equal(reqs[0].Buf, data[:100]) || reqs[2].Err != nil || !bytes.Equal(reqs[2].Buf, data[4096:8192]) {
		t.Errorf("ReadBatch across the new end: %v; %+v", err, reqs)
	}
	if debug.SetPanicOnFault(false) {
		t.Error("SetPanicOnFault left on")
	}
}

// Close while mmap reads run waits for them before it unmaps (with
// -race, and the readers would fault on an unmapped page otherwise).
func TestFileMmapCloseWhileReading(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(1<<20, 26)
	path := writeFile(t, t.TempDir(), data)
	for range 20 {
		f := openT(t, path, WithEngine("mmap"))
		var wg sync.WaitGroup
		bad := make(chan error, 4)
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 27))
				p := make([]byte, 4096)
				for {
					reqs := []Request{{Off: rng.Int64N(1 << 20), Buf: p[:2048]}, {Off: rng.Int64N(1 << 20), Buf: p[2048:]}}
					err := f.ReadBatch(reqs)
					if errors.Is(err, fs.ErrClosed) {
						return
					}
					for _, r := range reqs {
						want, werr := wantRead(data, r.Off, len(r.Buf))
						if r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
							bad <- fmt.Errorf("ReadBatch at %d: %d, %v", r.Off, r.N, r.Err)
							return
						}
					}
				}
			})
		}
		runtime.Gosched()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(bad)
		for err := range bad {
			t.Fatal(err)
		}
	}
}

// A batch of 1 MiB or more on an mmap File is copied by its workers; the
// bytes are right, and a request past the end of a truncated file fails
// with ErrChanged in whichever worker copies it, the others read.
func TestFileMmapParallelBatch(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(4<<20, 26)
	path := writeFile(t, t.TempDir(), data)
	f := openT(t, path, WithEngine("mmap"), WithWorkers(3))
	defer f.Close()
	var reqs []Request
	for i := range 64 {
		off := int64((i * 7919 % 120) << 15) // scattered 32 KiB requests, 2 MiB in all
		reqs = append(reqs, Request{Off: off, Buf: make([]byte, 32<<10)})
	}
	if err := f.ReadBatch(reqs); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if r.N != len(r.Buf) || !bytes.Equal(r.Buf, data[r.Off:r.Off+int64(len(r.Buf))]) {
			t.Fatalf("request %d at %d: %d bytes, wrong data", i, r.Off, r.N)
		}
	}
	if err := os.Truncate(path, 2<<20); err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		reqs[i].N, reqs[i].Err = 0, nil
	}
	err := f.ReadBatch(reqs)
	if !errors.Is(err, ErrChanged) {
		t.Errorf("batch across the new end: %v", err)
	}
	for i, r := range reqs {
		switch {
		case r.Off >= 2<<20 && !errors.Is(r.Err, ErrChanged):
			t.Errorf("request %d past the new end: %d, %v", i, r.N, r.Err)
		case r.Off+int64(len(r.Buf)) <= 2<<20 && (r.Err != nil || !bytes.Equal(r.Buf, data[r.Off:r.Off+int64(len(r.Buf))])):
			t.Errorf("request %d before the new end: %d, %v", i, r.N, r.Err)
		}
	}
	if debug.SetPanicOnFault(false) {
		t.Error("SetPanicOnFault left on")
	}
}
