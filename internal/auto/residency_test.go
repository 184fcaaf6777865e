package auto

import (
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

const tmpfsMagic = 0x01021994

// dropDir returns a directory on a filesystem whose page cache
// posix_fadvise(DONTNEED) can drop (not tmpfs, whose pages are the data),
// removed when the test ends.
func dropDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if typ, _, _, err := sys.Statfs(dir); err == nil && typ != tmpfsMagic {
		return dir
	}
	base := os.Getenv("IOPATH_BENCH_DIR")
	if base == "" {
		base = "/var/tmp"
	}
	if typ, _, _, err := sys.Statfs(base); err != nil || typ == tmpfsMagic {
		t.Skipf("no directory whose page cache can be dropped: %s and %s are tmpfs (set IOPATH_BENCH_DIR)", dir, base)
	}
	dir, err := os.MkdirTemp(base, "iopath-auto-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// writeFile writes size random bytes to dir/name and returns its path.
func writeFile(t testing.TB, dir, name string, size int) string {
	t.Helper()
	b := make([]byte, size)
	rand.Read(b)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// drop writes path's dirty pages back and drops [off, off+n) of it from
// the page cache (n 0: to the end).
func drop(t testing.TB, path string, off, n int64) {
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

// exactResidency is the fraction of path's pages resident, from mincore
// over the whole file: the reference the sample is checked against.
func exactResidency(t testing.TB, path string) float64 {
	t.Helper()
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	m, err := sys.Mmap(fd, 0, int(st.Size), sys.PROT_READ, sys.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(m)
	ps := int64(sys.PageSize())
	v := make([]byte, (st.Size+ps-1)/ps)
	if err := sys.Mincore(m, v); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range v {
		n += int(b & 1)
	}
	return float64(n) / float64(len(v))
}

// methods runs f once with cachestat(2) and once with mincore(2), the
// fallback for kernels before 6.5.
func methods(t *testing.T, f func(t *testing.T)) {
	t.Run("cachestat", func(t *testing.T) {
		fd, err := sys.Open(".", sys.O_RDONLY)
		if err != nil {
			t.Fatal(err)
		}
		_, err = sys.Cachestat(fd, 0, 0)
		sys.Close(fd)
		if err == sys.ENOSYS || err == sys.EPERM {
			t.Skipf("cachestat(2) is not supported here (%v: a kernel before 6.5, or a seccomp policy without it)", err)
		}
		f(t)
		if noCachestat.Load() {
			t.Error("Residency gave up cachestat(2) although the kernel has it")
		}
	})
	t.Run("mincore", func(t *testing.T) {
		was := noCachestat.Swap(true)
		defer noCachestat.Store(was)
		f(t)
	})
}

func TestResidency(t *testing.T) { methods(t, testResidency) }

func testResidency(t *testing.T) {
	dir := dropDir(t)
	fds := testenv.OpenFDs(t)
	for _, tc := range []struct {
		name string
		size int
	}{
		{"one-page", 4096},
		{"odd", 3*4096 + 17},
		{"whole-map", sampleWindows * windowPages * 4096}, // the largest file looked at whole
		{"sampled", 16 << 20},                             // 64 windows
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, tc.name, tc.size)
			r, err := Residency(path, int64(tc.size))
			if err != nil {
				t.Fatal(err)
			}
			if r < 0.9 {
				t.Errorf("just written: residency %.3f, want ~1", r)
			}
			drop(t, path, 0, 0)
			for range 2 { // the second call shows the first faulted nothing in
				r, err = Residency(path, 0)
				if err != nil {
					t.Fatal(err)
				}
				if r > 0.1 {
					t.Errorf("after DONTNEED: residency %.3f, want ~0", r)
				}
			}
			if e := exactResidency(t, path); e > 0.1 {
				t.Errorf("after Residency: %.3f of the file resident by mincore on all of it: Residency faulted pages in", e)
			}
		})
	}
	t.Run("half", func(t *testing.T) {
		// The first half dropped: 32 of the 64 windows fall in it.
		const size = 16 << 20
		path := writeFile(t, dir, "half", size)
		drop(t, path, 0, size/2)
		r, err := Residency(path, size)
		if err != nil {
			t.Fatal(err)
		}
		want := exactResidency(t, path)
		if r < want-0.1 || r > want+0.1 || r < 0.4 || r > 0.6 {
			t.Errorf("residency %.3f, want ~%.3f (whole-file mincore) and ~0.5", r, want)
		}
	})
	t.Run("size-smaller-than-file", func(t *testing.T) {
		// Only the first MiB is looked at when the caller says so.
		path := writeFile(t, dir, "prefix", 8<<20)
		drop(t, path, 1<<20, 0)
		r, err := Residency(path, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if r < 0.9 {
			t.Errorf("residency of the cached first MiB %.3f, want ~1", r)
		}
	})
	if got := testenv.OpenFDs(t); got != fds {
		t.Errorf("open descriptors: %d before, %d after", fds, got)
	}
}

func TestResidencyErrors(t *testing.T) { methods(t, testResidencyErrors) }

func testResidencyErrors(t *testing.T) {
	dir := t.TempDir()
	fds := testenv.OpenFDs(t)
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Residency(empty, 0)
	if err != nil || r != 1 {
		t.Errorf("empty file: %v, %v; want 1 (nothing to read from a device), nil", r, err)
	}

	missing := filepath.Join(dir, "missing")
	_, err = Residency(missing, 4096)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v; want an *fs.PathError naming it, fs.ErrNotExist", err)
	}

	_, err = Residency(dir, 0)
	if !errors.As(err, &pe) || pe.Path != dir || !errors.Is(err, syscall.EISDIR) {
		t.Errorf("directory: %v; want an *fs.PathError naming it, EISDIR", err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Residency(fifo, 0) // must not block: no writer
	if !errors.As(err, &pe) || pe.Path != fifo || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("fifo: %v; want an *fs.PathError naming it, EINVAL", err)
	}

	if os.Geteuid() != 0 {
		locked := filepath.Join(dir, "locked")
		if err := os.WriteFile(locked, []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		_, err = Residency(locked, 0)
		if !errors.Is(err, fs.ErrPermission) {
			t.Errorf("unreadable file: %v; want fs.ErrPermission", err)
		}
	}
	if got := testenv.OpenFDs(t); got != fds {
		t.Errorf("open descriptors: %d before, %d after", fds, got)
	}
}
