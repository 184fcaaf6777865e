package iopath

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/iopath/iopath/bufpool"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/testenv"
)

// awkward are file sizes around the boundaries the readers care about:
// empty, one byte, a page ±1, the default block size ±1, the small-file
// threshold ±1, and several MiB with a tail that is not a whole page.
var awkward = []int{0, 1, 4095, 4096, 4097, 128<<10 - 1, 128 << 10, 128<<10 + 1, smallFile - 1, smallFile, smallFile + 1, 5<<20 + 1234}

// content returns size bytes that differ from block to block, so that a
// block delivered at the wrong offset shows.
func content(size int, seed uint64) []byte {
	b := make([]byte, size)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 1}).Read(b)
	return b
}

// writeFile writes data to a new file in dir and returns its path.
func writeFile(t testing.TB, dir string, data []byte) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "f")
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

// named is a set of options under a name, for subtests.
type named struct {
	name string
	opts []Option
}

// skipUnsupported skips when err says the path cannot run here and the
// probe agrees (io_uring unavailable, a filesystem without O_DIRECT); any
// other error is left to the caller.
func skipUnsupported(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrNotSupported) {
		return
	}
	if strings.Contains(err.Error(), "io_uring") && !features.Probe().IOURing.Available {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	if strings.Contains(err.Error(), "O_DIRECT is not supported") {
		t.Skipf("no O_DIRECT here: %v", err)
	}
}

// directDir returns a directory on a filesystem that takes O_DIRECT, or
// skips saying why there is none.
func directDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p := writeFile(t, dir, make([]byte, 4096))
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Skipf("the filesystem of %s refuses O_DIRECT: %v", dir, err)
	}
	syscall.Close(fd)
	return dir
}

var readFileOpts = []named{
	{"auto", nil},
	{"read", []Option{WithEngine("read")}},
	{"read-bs4k", []Option{WithEngine("read"), WithBlockSize(4096)}},
	{"pread", []Option{WithEngine("pread")}},
	{"pread×3-bs4k", []Option{WithEngine("pread"), WithWorkers(3), WithBlockSize(4096)}},
	{"mmap", []Option{WithEngine("mmap")}},
	{"mmap×3-bs4k", []Option{WithEngine("mmap"), WithWorkers(3), WithBlockSize(4096)}},
	{"io_uring", []Option{WithEngine("io_uring")}},
	{"io_uring×2-bs4k-qd4", []Option{WithEngine("io_uring"), WithWorkers(2), WithBlockSize(4096), WithQueueDepth(4)}},
}

// Every path gives os.ReadFile's bytes, for ReadFile and ReadFileBuf, on
// every awkward size.
func TestReadFile(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	files := map[int]string{}
	for _, size := range awkward {
		files[size] = writeFile(t, dir, content(size, uint64(size)))
	}
	run := func(t *testing.T, opts []Option) {
		for _, size := range awkward {
			path := files[size]
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(path, opts...)
			skipUnsupported(t, err)
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if !bytes.Equal(got, want) || got == nil {
				t.Errorf("ReadFile, size %d: %d bytes, differ (nil: %v)", size, len(got), got == nil)
			}
			b, err := ReadFileBuf(path, opts...)
			if err != nil {
				t.Fatalf("ReadFileBuf, size %d: %v", size, err)
			}
			if !bytes.Equal(b.Bytes(), want) || b.Len() != size {
				t.Errorf("ReadFileBuf, size %d: %d bytes, differ", size, b.Len())
			}
			b.Release()
		}
	}
	for _, o := range readFileOpts {
		t.Run(o.name, func(t *testing.T) { run(t, o.opts) })
	}
	// Auto's choice for large files, whatever this machine's Auto says:
	// each engine with several workers and small blocks.
	for _, e := range []string{"read", "pread", "readv", "mmap", "io_uring"} {
		t.Run("auto-"+e, func(t *testing.T) {
			choose(t, auto.Choice{Engine: e, Workers: 3, BlockSize: 8192, QueueDepth: 3, Rule: "test"})
			run(t, nil)
		})
	}
	t.Run("direct", func(t *testing.T) {
		ddir := directDir(t)
		for _, size := range awkward {
			path := writeFile(t, ddir, content(size, uint64(size)))
			want, _ := os.ReadFile(path)
			for _, o := range []named{
				{"auto", []Option{WithDirect()}},
				{"pread×3-bs8k", []Option{WithDirect(), WithEngine("pread"), WithWorkers(3), WithBlockSize(8192)}},
				{"read", []Option{WithDirect(), WithEngine("read")}},
				{"io_uring-bs4k", []Option{WithDirect(), WithEngine("io_uring"), WithBlockSize(4096), WithQueueDepth(4)}},
			} {
				t.Run(fmt.Sprintf("%s-%d", o.name, size), func(t *testing.T) {
					got, err := ReadFile(path, o.opts...)
					skipUnsupported(t, err)
					if err != nil || !bytes.Equal(got, want) {
						t.Errorf("%s, size %d: %d bytes, %v", o.name, size, len(got), err)
					}
					b, err := ReadFileBuf(path, o.opts...)
					if err != nil || !bytes.Equal(b.Bytes(), want) {
						t.Errorf("%s, ReadFileBuf size %d: %v", o.name, size, err)
					}
					b.Release()
				})
			}
		}
	})
}

// A file that shrinks or grows between the fstat that sizes the buffer
// and the reads comes back exactly as the reads found it: cut at its new
// end (never bytes from beyond it), or read on to its new end.
func TestReadFileChangingSize(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name         string
		size, change int // change < 0 truncates by -change, > 0 appends
	}{
		{"small-shrinks", 10000, -5000},
		{"small-grows", 100, 10000},
		{"small-emptied", 5000, -5000},
		{"large-shrinks", 2<<20 + 5, -(1<<20 + 2)},
		{"large-shrinks-to-page", 2 << 20, -(2<<20 - 4096)},
		{"large-shrinks-in-its-last-page", 2<<20 + 4000, -3900}, // a mapping reads zeros there, without a fault
		{"large-grows", 2<<20 + 5, 300001},
		{"pow2-grows", 1 << 20, 5000},
		{"pow2-grows-page", 1 << 20, 4096},
	} {
		for _, o := range append(readFileOpts, named{"direct", []Option{WithDirect()}}) {
			t.Run(tc.name+"/"+o.name, func(t *testing.T) {
				d := dir
				if o.name == "direct" {
					d = directDir(t)
				}
				orig := content(tc.size, 7)
				extra := content(max(tc.change, 0), 8)
				want := append(orig[:tc.size+min(tc.change, 0):tc.size+min(tc.change, 0)], extra...)
				for _, buf := range []bool{false, true} {
					path := writeFile(t, d, orig)
					testHookAfterStat = func(p string) {
						f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
						if err != nil {
							t.Fatal(err)
						}
						defer f.Close()
						if tc.change < 0 {
							err = f.Truncate(int64(tc.size + tc.change))
						} else {
							_, err = f.Write(extra)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					var got []byte
					var err error
					if buf {
						var b *bufpool.Buf
						if b, err = ReadFileBuf(path, o.opts...); err == nil {
							got = bytes.Clone(b.Bytes())
							b.Release()
						}
					} else {
						got, err = ReadFile(path, o.opts...)
					}
					testHookAfterStat = nil
					skipUnsupported(t, err)
					if err != nil {
						t.Fatalf("pooled %v: %v", buf, err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("pooled %v: got %d bytes, want %d (equal prefix: %v)", buf, len(got), len(want), bytes.HasPrefix(want, got[:min(len(got), len(want))]))
					}
				}
			})
		}
	}
}

// ReadFileBuf of a small file allocates nothing in steady state.
func TestReadFileBufAllocs(t *testing.T) {
	if poolDropsItems() {
		t.Skip("the race detector makes sync.Pool drop items at random: allocations cannot be counted")
	}
	dir := t.TempDir()
	for _, size := range []int{0, 1, 4095, 4096, 60000, 64 << 10, 100000, smallFile - 1} {
		path := writeFile(t, dir, content(size, 1))
		read := func() {
			b, err := ReadFileBuf(path)
			if err != nil || b.Len() != size {
				t.Fatalf("size %d: %v", size, err)
			}
			b.Release()
		}
		read()
		if n := testing.AllocsPerRun(50, read); n != 0 {
			t.Errorf("size %d: %.1f allocations per ReadFileBuf", size, n)
		}
	}
}

// poolDropsItems reports whether sync.Pool drops items at random, as it
// does under the race detector.
func poolDropsItems() bool {
	var p sync.Pool
	x := new(int)
	for range 200 {
		p.Put(x)
		if p.Get() == nil {
			return true
		}
	}
	return false
}

// Pseudo-files state size 0 and are read until read returns 0, however
// many reads that takes.
func TestReadFileProc(t *testing.T) {
	for _, path := range []string{"/proc/self/mountinfo", "/proc/self/cmdline", "/proc/self/limits"} {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Skipf("%s: %v", path, err)
		}
		got, err := ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes (%v), os.ReadFile %d", path, len(got), err, len(want))
		}
		b, err := ReadFileBuf(path)
		if err != nil || !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s: ReadFileBuf: %v", path, err)
		}
		b.Release()
		// An explicit engine cannot size a pseudo-file: it is read like
		// any file that states no size.
		got, err = ReadFile(path, WithEngine("pread"), WithWorkers(2))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s with pread: %d bytes (%v)", path, len(got), err)
		}
	}
}

func TestReadFileErrors(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		op   string
		is   error
	}{
		{missing, "open", fs.ErrNotExist},
		{dir, "read", syscall.EISDIR},
		{fifo, "read", ErrNotRegular}, // no writer: must not block
		{"/dev/null", "read", ErrNotRegular},
		{"/dev/zero", "read", ErrNotRegular},
		{"a\x00b", "open", syscall.EINVAL},
	} {
		for _, o := range []named{{"auto", nil}, {"pread", []Option{WithEngine("pread")}}, {"direct", []Option{WithDirect()}}} {
			_, err := ReadFile(tc.path, o.opts...)
			b, berr := ReadFileBuf(tc.path, o.opts...)
			for _, err := range []error{err, berr} {
				var pe *fs.PathError
				if !errors.As(err, &pe) || pe.Path != tc.path || pe.Op != tc.op || !errors.Is(err, tc.is) {
					t.Errorf("%q %s: got %v, want %s error wrapping %v", tc.path, o.name, err, tc.op, tc.is)
				}
			}
			if b != nil {
				t.Errorf("%q: a Buf with an error", tc.path)
			}
		}
	}
	// A file too large to hold in memory is an error, not a crash.
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, maxWholeFile+1); err == nil {
		for _, o := range []named{{"auto", nil}, {"mmap", []Option{WithEngine("mmap")}}} {
			_, err := ReadFile(huge, o.opts...)
			b, berr := ReadFileBuf(huge, o.opts...)
			if !errors.Is(err, syscall.EFBIG) || !errors.Is(berr, syscall.EFBIG) || b != nil {
				t.Errorf("a file over 1 TiB, %s: %v, %v", o.name, err, berr)
			}
		}
	}
	// A bad option is an error before anything is opened.
	if _, err := ReadFile(missing, WithBlockSize(3)); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("bad option: %v", err)
	}
	t.Setenv(features.DisableEnv, "1")
	p := writeFile(t, dir, []byte("x"))
	_, err := ReadFile(p, WithEngine("io_uring"))
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), features.DisableEnv) {
		t.Errorf("io_uring disabled: %v", err)
	}
}

// Under Auto, an io_uring that cannot run is replaced by pread, silently;
// asked for by name it is an error saying why.
func TestReadFileUringFallback(t *testing.T) {
	dir := t.TempDir()
	want := content(3<<20+7, 3)
	path := writeFile(t, dir, want)
	t.Setenv(features.DisableEnv, "1")
	choose(t, auto.Choice{Engine: "io_uring", Workers: 2, QueueDepth: 8, Rule: "test"})
	got, err := ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("auto: %d bytes, %v", len(got), err)
	}
	if _, err := ReadFile(path, WithEngine("io_uring")); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("explicit: %v", err)
	}
}

// IOPATH_ENGINE sends even small files to Auto.
func TestReadFileEnvEngine(t *testing.T) {
	path := writeFile(t, t.TempDir(), []byte("small"))
	asked := 0
	steer(t, func(w auto.Workload) auto.Choice {
		asked++
		return auto.Choice{Engine: "pread", Workers: 1}
	})
	if _, err := ReadFile(path); err != nil || asked != 0 {
		t.Fatalf("without IOPATH_ENGINE: %v, Auto asked %d times", err, asked)
	}
	t.Setenv(auto.EnvEngine, "pread")
	got, err := ReadFile(path)
	if err != nil || string(got) != "small" || asked != 1 {
		t.Fatalf("with IOPATH_ENGINE: %q, %v, Auto asked %d times", got, err, asked)
	}
}
