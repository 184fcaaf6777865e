package bufpool

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

// pattern returns n bytes that differ with seed.
func pattern(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func equal(a, b []byte) bool { return bytes.Equal(a, b) }

func writeFile(t testing.TB, dir string, data []byte) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "bufpool")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// hidden hides its reader's size: it has only Read.
type hidden struct{ r io.Reader }

func (h hidden) Read(p []byte) (int, error) { return h.r.Read(p) }

// chunky returns short reads of random length.
type chunky struct {
	data []byte
	rng  *rand.Rand
}

func newChunky(data []byte, seed uint64) *chunky {
	return &chunky{data: data, rng: rand.New(rand.NewPCG(seed, 2))}
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(10000))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// statReader claims a size through Stat.
type statReader struct {
	r    io.Reader
	size int64
	mode fs.FileMode
}

func (s statReader) Read(p []byte) (int, error) { return s.r.Read(p) }
func (s statReader) Stat() (fs.FileInfo, error) { return fakeInfo{s.size, s.mode}, nil }

type fakeInfo struct {
	size int64
	mode fs.FileMode
}

func (f fakeInfo) Name() string       { return "fake" }
func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return nil }

// lenReader claims a size through Len.
type lenReader struct {
	r io.Reader
	n int
}

func (l lenReader) Read(p []byte) (int, error) { return l.r.Read(p) }
func (l lenReader) Len() int                   { return l.n }

// eofWithData returns all its data together with io.EOF.
type eofWithData struct{ data []byte }

func (e *eofWithData) Read(p []byte) (int, error) {
	n := copy(p, e.data)
	e.data = e.data[n:]
	if len(e.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}

var sizes = []int{0, 1, 63, 64, 65, 511, 512, 513, 4095, 4096, 4097, 65535, 65536, 65537, 1 << 20, 1<<20 + 1, 3<<20 + 5}

func TestReadAll(t *testing.T) {
	var p Pool
	patterns := map[int][]byte{}
	for _, n := range sizes {
		patterns[n] = pattern(n, n)
	}
	readers := map[string]func(d []byte) io.Reader{
		"bytes.Reader":     func(d []byte) io.Reader { return bytes.NewReader(d) },
		"strings.Reader":   func(d []byte) io.Reader { return strings.NewReader(string(d)) },
		"bytes.Buffer":     func(d []byte) io.Reader { return bytes.NewBuffer(d) },
		"hidden":           func(d []byte) io.Reader { return hidden{bytes.NewReader(d)} },
		"OneByteReader":    func(d []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(d)) },
		"HalfReader":       func(d []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(d)) },
		"DataErrReader":    func(d []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(d)) },
		"eofWithData":      func(d []byte) io.Reader { return &eofWithData{d} },
		"chunky":           func(d []byte) io.Reader { return hidden{newChunky(d, 7)} },
		"stat exact":       func(d []byte) io.Reader { return statReader{bytes.NewReader(d), int64(len(d)), 0} },
		"stat says 10":     func(d []byte) io.Reader { return statReader{hidden{bytes.NewReader(d)}, 10, 0} },
		"stat says 1MiB":   func(d []byte) io.Reader { return statReader{hidden{bytes.NewReader(d)}, 1 << 20, 0} },
		"stat says 2^50":   func(d []byte) io.Reader { return statReader{hidden{bytes.NewReader(d)}, 1 << 50, 0} },
		"stat says -1":     func(d []byte) io.Reader { return statReader{hidden{bytes.NewReader(d)}, -1, 0} },
		"stat not regular": func(d []byte) io.Reader { return statReader{hidden{bytes.NewReader(d)}, 5, fs.ModeNamedPipe} },
		"len says 0":       func(d []byte) io.Reader { return lenReader{hidden{bytes.NewReader(d)}, 0} },
		"len says 100":     func(d []byte) io.Reader { return lenReader{hidden{bytes.NewReader(d)}, 100} },
		"len says 5MiB":    func(d []byte) io.Reader { return lenReader{hidden{bytes.NewReader(d)}, 5 << 20} },
		"len says -5":      func(d []byte) io.Reader { return lenReader{hidden{bytes.NewReader(d)}, -5} },
	}
	for name, mk := range readers {
		t.Run(name, func(t *testing.T) {
			for _, n := range sizes {
				if n > 70000 && (name == "OneByteReader" || name == "DataErrReader") {
					continue // slow, and says nothing new
				}
				want := patterns[n]
				b, err := p.ReadAll(mk(want))
				if err != nil {
					t.Fatalf("size %d: %v", n, err)
				}
				if got := b.Bytes(); !equal(got, want) {
					t.Fatalf("size %d: got %d bytes, want %d (or different bytes)", n, len(got), n)
				}
				if b.Cap() > 4*max(n, MinClass) && b.Cap() > shrinkAbove {
					t.Errorf("size %d: capacity %d is more than 4x the data", n, b.Cap())
				}
				b.Release()
			}
		})
	}
	checkNoLeak(t, &p)
}

// TestReadAllHint: after a read of unknown size, the next such read starts
// at that size and needs no growth.
func TestReadAllHint(t *testing.T) {
	var p Pool
	data := pattern(1, 300000)
	b, err := p.ReadAll(hidden{bytes.NewReader(data)})
	if err != nil || !equal(b.Bytes(), data) {
		t.Fatal(err)
	}
	b.Release()
	if h := p.hint.Load(); h != int64(len(data)) {
		t.Fatalf("hint %d, want %d", h, len(data))
	}
	// A small read after a large one gets a small buffer back.
	small := pattern(2, 10)
	b, err = p.ReadAll(hidden{bytes.NewReader(small)})
	if err != nil || !equal(b.Bytes(), small) {
		t.Fatal(err)
	}
	if b.Cap() != MinClass {
		t.Errorf("10 bytes read after a 300000-byte read: Cap %d, want %d", b.Cap(), MinClass)
	}
	b.Release()
	checkNoLeak(t, &p)
}

type dataThenErr struct {
	data []byte
	err  error
}

func (d *dataThenErr) Read(p []byte) (int, error) {
	if len(d.data) == 0 {
		return 0, d.err
	}
	n := copy(p, d.data)
	d.data = d.data[n:]
	if len(d.data) == 0 {
		return n, d.err
	}
	return n, nil
}

type countReader struct{ n int }

func (c countReader) Read(p []byte) (int, error) { return c.n, nil }

type zeroReader struct{ calls *int }

func (z zeroReader) Read(p []byte) (int, error) { *z.calls++; return 0, nil }

func TestReadAllErrors(t *testing.T) {
	var p Pool
	boom := errors.New("boom")
	for _, n := range []int{0, 10, 4096, 100000} {
		for name, r := range map[string]io.Reader{
			"with data": &dataThenErr{pattern(n, n), boom},
			"after":     io.MultiReader(bytes.NewReader(pattern(n, n)), iotest.ErrReader(boom)),
			"timeout":   iotest.TimeoutReader(bytes.NewReader(pattern(n, n+1))),
			"stat lies": statReader{&dataThenErr{pattern(n, n), boom}, int64(n), 0},
		} {
			b, err := p.ReadAll(r)
			if b != nil {
				t.Errorf("%s, %d bytes: got a Buf with an error", name, n)
			}
			want := boom
			if name == "timeout" {
				want = iotest.ErrTimeout
			}
			if !errors.Is(err, want) {
				t.Errorf("%s, %d bytes: err %v, want %v", name, n, err, want)
			}
		}
	}
	for _, c := range []int{-1, 1 << 30} {
		if b, err := p.ReadAll(countReader{c}); b != nil || !errors.Is(err, errInvalidCount) {
			t.Errorf("reader returning count %d: %v, %v", c, b, err)
		}
	}
	calls := 0
	if b, err := p.ReadAll(zeroReader{&calls}); b != nil || !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("reader returning (0, nil): %v, %v", b, err)
	}
	if calls != maxEmptyReads {
		t.Errorf("reader returning (0, nil) called %d times, want %d", calls, maxEmptyReads)
	}
	checkNoLeak(t, &p)
}

func TestReadAllOSFile(t *testing.T) {
	var p Pool
	for _, n := range []int{0, 1, 4096, 100000} {
		want := pattern(n, n)
		f, err := os.Open(writeFile(t, t.TempDir(), want))
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.ReadAll(f)
		f.Close()
		if err != nil || !equal(b.Bytes(), want) {
			t.Fatalf("%d bytes: %v", n, err)
		}
		b.Release()
	}
	checkNoLeak(t, &p)
}

func TestReadAllAllocs(t *testing.T) {
	skipAllocs(t)
	var p Pool
	for _, n := range []int{0, 100, 4096, 65536, 1 << 20, 3 << 20} {
		data := pattern(n, n)
		br := bytes.NewReader(data)
		var r io.Reader = &hidden{br}
		for name, r := range map[string]io.Reader{"hidden": r, "bytes.Reader": br} {
			f := func() {
				br.Reset(data)
				b, err := p.ReadAll(r)
				if err != nil || b.Len() != n {
					t.Fatal(err)
				}
				b.Release()
			}
			f()
			if a := testing.AllocsPerRun(50, f); a != 0 {
				t.Errorf("ReadAll(%s) of %d bytes: %v allocs, want 0", name, n, a)
			}
		}
	}
}

func TestReadFile(t *testing.T) {
	var p Pool
	dir := t.TempDir()
	for _, n := range sizes {
		want := pattern(n, n)
		path := writeFile(t, dir, want)
		b, err := p.ReadFile(path)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !equal(b.Bytes(), want) {
			t.Fatalf("%d bytes: got %d bytes or different bytes", n, b.Len())
		}
		b.Release()
	}
	checkNoLeak(t, &p)
}

func TestReadFileErrors(t *testing.T) {
	var p Pool
	dir := t.TempDir()
	check := func(path, op string, target error) {
		t.Helper()
		b, err := p.ReadFile(path)
		if b != nil {
			t.Errorf("%s: got a Buf with error %v", path, err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != path || pe.Op != op || !errors.Is(err, target) {
			t.Errorf("%s: err %#v (%v), want *fs.PathError{Op: %q, Path: %q} wrapping %v", path, err, err, op, path, target)
		}
	}
	check(filepath.Join(dir, "missing"), "open", fs.ErrNotExist)
	check(dir, "read", syscall.EISDIR)
	check("", "open", fs.ErrNotExist)

	locked := writeFile(t, dir, []byte("secret"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: the permission case is not tested")
	} else {
		check(locked, "open", fs.ErrPermission)
	}
	checkNoLeak(t, &p)
}

// TestReadFileProc: files that state size 0 are read until EOF.
func TestReadFileProc(t *testing.T) {
	var p Pool
	for _, path := range []string{"/proc/version", "/proc/self/mountinfo", "/proc/filesystems"} {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		b, err := p.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(want) == 0 || !equal(b.Bytes(), want) {
			t.Errorf("%s: read %d bytes, os.ReadFile read %d", path, b.Len(), len(want))
		}
		b.Release()
	}
	checkNoLeak(t, &p)
}

// TestReadFileSizeChanges: a file that grows or shrinks between fstat and
// the reads yields what is there when it is read.
func TestReadFileSizeChanges(t *testing.T) {
	var p Pool
	dir := t.TempDir()
	for _, tc := range []struct{ before, after int }{
		{4096, 0}, {4096, 100}, {4096, 8191}, {4096, 8192}, {4096, 8193}, {4096, 20000},
		{100, 1 << 20}, {1 << 20, 10}, {1 << 20, 1<<20 + 4096}, {1 << 20, 3 << 20},
	} {
		path := writeFile(t, dir, pattern(1, tc.before))
		want := pattern(2, tc.after)
		testHookAfterStat = func() {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := p.ReadFile(path)
		testHookAfterStat = nil
		if err != nil {
			t.Fatal(err)
		}
		if !equal(b.Bytes(), want) {
			t.Errorf("%d bytes at fstat, %d at read: read %d bytes", tc.before, tc.after, b.Len())
		}
		b.Release()
	}
	checkNoLeak(t, &p)
}

// ReadFile allocates nothing: even the NUL-terminated path is pooled.
const readFileAllocs = 0

func TestReadFileAllocs(t *testing.T) {
	skipAllocs(t)
	var p Pool
	dir := t.TempDir()
	for _, n := range []int{0, 100, 4096, 65536, 1 << 20} {
		path := writeFile(t, dir, pattern(n, n))
		f := func() {
			b, err := p.ReadFile(path)
			if err != nil || b.Len() != n {
				t.Fatal(err)
			}
			b.Release()
		}
		f()
		if a := testing.AllocsPerRun(50, f); a > readFileAllocs {
			t.Errorf("ReadFile of %d bytes: %v allocs, want %d", n, a, readFileAllocs)
		}
	}
}

func TestReadFileNUL(t *testing.T) {
	path := writeFile(t, t.TempDir(), []byte("the wrong file"))
	b, err := ReadFile(path + "\x00x")
	if err == nil {
		b.Release()
		t.Fatal("read a file through a path with a NUL")
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("error %v, want open: EINVAL", err)
	}
}
