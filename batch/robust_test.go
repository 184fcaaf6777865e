package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

// The robustness suite: files that change or misbehave between the listing
// and the read, and limits (a million paths, a low fd limit), for every
// engine but archive.

// sequential reports whether an engine with these workers reads one file
// after the other, in order, each after the previous was delivered — so a
// change made inside Func is certain to be seen by every later file.
func sequential(e Engine, workers int) bool {
	switch e.Name() {
	case "readfile":
		return true
	case "pool", "raw":
		return workers == 1
	}
	return false
}

func TestVanished(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, workers := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", e.Name(), workers), func(t *testing.T) {
				warm(t)
				noLeaks(t)
				dir, paths := manyFiles(t, 600, 300)
				missing := filepath.Join(dir, "never-there")
				job := Job{Paths: append([]string{paths[0], missing}, paths[1:]...), Workers: workers}
				deleted := map[string]bool{}
				for _, p := range paths[500:] {
					deleted[p] = true
				}
				// The first delivery deletes; the others wait for it,
				// so that workers do not read on meanwhile.
				var once atomic.Bool
				ready := make(chan struct{})
				r := newResult()
				_, err := Read(context.Background(), e, job, func(f *File) error {
					if once.CompareAndSwap(false, true) {
						defer close(ready)
						for p := range deleted {
							if err := os.Remove(p); err != nil {
								return err
							}
						}
					} else {
						<-ready
					}
					return r.fn(f)
				})
				skipUnsupported(t, e, err)
				if err != nil {
					t.Fatal(err)
				}
				checkNotExist := func(p string) {
					t.Helper()
					var pe *fs.PathError
					if err := r.errs[p]; !errors.As(err, &pe) || pe.Path != p || !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%s: got error %v, want its own ENOENT *fs.PathError", p, err)
					}
				}
				checkNotExist(missing)
				gone := 0
				for _, p := range paths {
					got, ok := r.data[p]
					switch {
					case ok && string(got) == string(content(p, 300)):
						if deleted[p] && sequential(e, workers) {
							t.Errorf("%s: delivered after it was deleted", p)
						}
					case ok:
						t.Errorf("%s: wrong content", p)
					case deleted[p]:
						checkNotExist(p)
						gone++
					default:
						t.Errorf("%s: error %v", p, r.errs[p])
					}
				}
				// Not even an engine with a deep queue (4 workers × 64)
				// has the last hundred of 600 files in flight at the
				// first.
				if gone == 0 {
					t.Errorf("none of the %d files deleted at the first delivery was missed", len(deleted))
				}
				if len(r.dups) > 0 {
					t.Errorf("delivered twice: %v", r.dups)
				}
			})
		}
	}
}

func TestReplaced(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, workers := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", e.Name(), workers), func(t *testing.T) {
				warm(t)
				noLeaks(t)
				dir, paths := manyFiles(t, 600, 5000)
				// The new content is longer and of other bytes, so
				// that a mix of old and new shows.
				newContent := func(p string) []byte { return content(p+"new", 7000) }
				replaced := paths[500:]
				// The first delivery replaces; the others wait for it.
				var once atomic.Bool
				ready := make(chan struct{})
				r := newResult()
				_, err := Read(context.Background(), e, Job{Paths: []string{dir}, Workers: workers}, func(f *File) error {
					if once.CompareAndSwap(false, true) {
						defer close(ready)
						for _, p := range replaced {
							tmp := p + ".tmp"
							if err := os.WriteFile(tmp, newContent(p), 0o644); err != nil {
								return err
							}
							// The walk has listed the directory; a
							// .tmp it saw would be an extra file.
							if err := os.Rename(tmp, p); err != nil {
								return err
							}
						}
					} else {
						<-ready
					}
					return r.fn(f)
				})
				skipUnsupported(t, e, err)
				if err != nil {
					t.Fatal(err)
				}
				fresh := 0
				for i, p := range paths {
					got, ok := r.data[p]
					if !ok {
						// The walk may have seen a .tmp name that
						// was gone when read; p itself must be there.
						t.Errorf("%s: not delivered: %v", p, r.errs[p])
						continue
					}
					old := string(got) == string(content(p, 5000))
					isNew := string(got) == string(newContent(p))
					switch {
					case i < 500 && !old:
						t.Errorf("%s: changed content", p)
					case i >= 500 && !old && !isNew:
						t.Errorf("%s: %d bytes, neither the old file nor the new one", p, len(got))
					case i >= 500 && old && sequential(e, workers):
						t.Errorf("%s: old content after it was replaced", p)
					case isNew:
						fresh++
					}
				}
				if fresh == 0 {
					t.Errorf("none of the %d replaced files was read new", len(replaced))
				}
				for p, err := range r.errs {
					if !strings.HasSuffix(p, ".tmp") || !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%s: %v", p, err)
					}
				}
			})
		}
	}
}

// TestPermissionDenied needs a user the permission bits apply to. Root has
// CAP_DAC_OVERRIDE, so as root the test re-runs itself as nobody (uid
// 65534) in a child process, on a file root made unreadable.
func TestPermissionDenied(t *testing.T) {
	dir := os.Getenv("BATCH_TEST_PERM_DIR")
	if dir == "" {
		dir = t.TempDir()
		if os.Geteuid() == 0 {
			// The child must reach the directory and the binary.
			var err error
			dir, err = os.MkdirTemp("", "batch-perm-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeTree(t, dir, map[string]int{"ok": 100, "secret": 100})
		if err := os.Chmod(filepath.Join(dir, "secret"), 0); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			runAsNobody(t, dir)
			return
		}
	}
	if os.Geteuid() == 0 {
		t.Fatal("child still root")
	}
	ok, secret := filepath.Join(dir, "ok"), filepath.Join(dir, "secret")
	for _, e := range testEngines(t) {
		for _, paths := range [][]string{{ok, secret}, {dir}} {
			t.Run(e.Name(), func(t *testing.T) {
				r := newResult()
				_, err := Read(context.Background(), e, Job{Paths: paths, Workers: 2}, r.fn)
				skipUnsupported(t, e, err)
				if err != nil {
					t.Fatal(err)
				}
				var pe *fs.PathError
				if err := r.errs[secret]; !errors.As(err, &pe) || pe.Path != secret || !errors.Is(err, fs.ErrPermission) {
					t.Errorf("%s: got %v, want its own EACCES *fs.PathError", secret, err)
				}
				if string(r.data[ok]) != string(content("ok", 100)) {
					t.Errorf("%s: not delivered (%v)", ok, r.errs[ok])
				}
			})
		}
	}
}

// runAsNobody runs TestPermissionDenied in a child process as uid and gid
// 65534, from a copy of the test binary it can execute.
func runAsNobody(t *testing.T, dir string) {
	self, err := os.Executable()
	if err != nil {
		t.Skipf("cannot find the test binary: %v", err)
	}
	bin := filepath.Join(dir, "batch.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestPermissionDenied$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BATCH_TEST_PERM_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Skipf("cannot run a child as nobody: %v", err)
		}
		t.Fatalf("child as nobody failed: %v\n%s", err, out)
	}
	// Subtests of engines that cannot run here (io_uring disabled) skip;
	// the test as a whole must pass.
	if !bytes.Contains(out, []byte("--- PASS: TestPermissionDenied")) || bytes.Contains(out, []byte("--- SKIP: TestPermissionDenied (")) {
		t.Fatalf("child as nobody did not pass:\n%s", out)
	}
	t.Logf("as nobody:\n%s", out)
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func TestSymlinks(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]int{"real": 1000, "sub/x": 10})
	p := func(rel string) string { return filepath.Join(root, rel) }
	for link, target := range map[string]string{
		"to-file": "real",
		"loop-a":  "loop-b",
		"loop-b":  "loop-a",
		"to-dir":  "sub",
	} {
		if err := os.Symlink(target, p(link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range testEngines(t) {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", e.Name(), workers), func(t *testing.T) {
				warm(t)
				noLeaks(t)
				r := newResult()
				_, err := Read(context.Background(), e, Job{Paths: []string{root}, Workers: workers}, r.fn)
				skipUnsupported(t, e, err)
				if err != nil {
					t.Fatal(err)
				}
				if string(r.data[p("to-file")]) != string(content("real", 1000)) {
					t.Errorf("symlink to a file: not its target's content (%v)", r.errs[p("to-file")])
				}
				if string(r.data[p("real")]) != string(content("real", 1000)) || string(r.data[p("sub/x")]) != string(content("sub/x", 10)) {
					t.Errorf("regular files not delivered")
				}
				for _, l := range []string{"loop-a", "loop-b"} {
					if err := r.errs[p(l)]; !errors.Is(err, syscall.ELOOP) || !isPathErr(err, p(l)) {
						t.Errorf("%s: got %v, want ELOOP", l, err)
					}
				}
				if err := r.errs[p("to-dir")]; !errors.Is(err, syscall.EISDIR) || !isPathErr(err, p("to-dir")) {
					t.Errorf("symlink to a directory: got %v, want EISDIR", err)
				}
				for path := range r.data {
					if strings.HasPrefix(path, p("to-dir")+"/") {
						t.Errorf("%s: symlinked directory walked", path)
					}
				}
				if len(r.data)+len(r.errs) != 6 || len(r.dups) > 0 {
					t.Errorf("delivered %d files and %d errors (%v), want 3 and 3", len(r.data), len(r.errs), r.dups)
				}
				// Given explicitly: the link to a file is followed, the
				// loop fails.
				r = newResult()
				_, err = Read(context.Background(), e, Job{Paths: []string{p("to-file"), p("loop-a")}, Workers: workers}, r.fn)
				if err != nil {
					t.Fatal(err)
				}
				if string(r.data[p("to-file")]) != string(content("real", 1000)) || !errors.Is(r.errs[p("loop-a")], syscall.ELOOP) {
					t.Errorf("explicit symlinks: %v", r.errs)
				}
			})
		}
	}
}

func isPathErr(err error, path string) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Path == path
}

// within runs f and fails the test if it takes longer than d, calling
// unblock first so that the goroutine can end.
func within(t *testing.T, d time.Duration, unblock func(), f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		unblock()
		<-done
		t.Fatalf("still blocked after %v", d)
	}
}

// unblockFIFO opens the FIFO read-write and closes it: a reader blocked in
// open(O_RDONLY) then gets through, and its read sees end of file.
func unblockFIFO(path string) func() {
	return func() {
		for range 100 {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err == nil {
				time.Sleep(10 * time.Millisecond)
				f.Close()
			}
		}
	}
}

func TestFIFO(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]int{"regular": 10})
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("fifo", filepath.Join(root, "to-fifo")); err != nil {
		t.Fatal(err)
	}
	for _, e := range testEngines(t) {
		t.Run(e.Name()+"/walked", func(t *testing.T) {
			warm(t)
			noLeaks(t)
			r := newResult()
			var err error
			within(t, 10*time.Second, unblockFIFO(fifo), func() {
				_, err = Read(context.Background(), e, Job{Paths: []string{root}, Workers: 2}, r.fn)
			})
			// Skip on the test's own goroutine, not within's.
			skipUnsupported(t, e, err)
			if err != nil {
				t.Error(err)
			}
			for _, name := range []string{"fifo", "to-fifo"} {
				p := filepath.Join(root, name)
				if err := r.errs[p]; !errors.Is(err, ErrNotRegular) || !isPathErr(err, p) {
					t.Errorf("%s: got %v, want ErrNotRegular", name, err)
				}
			}
			if string(r.data[filepath.Join(root, "regular")]) != string(content("regular", 10)) {
				t.Error("regular file not delivered")
			}
		})
	}

	// Given as a path, a FIFO or device is opened without blocking
	// (O_NONBLOCK) by every engine: readfile and pool check the type with
	// their fstat and report ErrNotRegular.
	for _, name := range []string{"readfile", "pool"} {
		e, _ := Lookup(name)
		t.Run(name+"/explicit", func(t *testing.T) {
			noLeaks(t)
			for _, p := range []string{fifo, "/dev/zero"} {
				r := newResult()
				within(t, 10*time.Second, unblockFIFO(fifo), func() {
					if _, err := Read(context.Background(), e, Job{Paths: []string{p}}, r.fn); err != nil {
						t.Error(err)
					}
				})
				if err := r.errs[p]; !errors.Is(err, ErrNotRegular) || !isPathErr(err, p) {
					t.Errorf("%s: got %v, want ErrNotRegular", p, err)
				}
			}
		})
	}

	// The raw engine opens it (O_NONBLOCK) and reads what is there.
	e, _ := Lookup("raw")
	read := func(t *testing.T, p string) *File {
		var got *File
		within(t, 10*time.Second, unblockFIFO(fifo), func() {
			_, err := Read(context.Background(), e, Job{Paths: []string{p}}, func(f *File) error {
				got = &File{Path: f.Path, Data: append([]byte(nil), f.Data...), Err: f.Err}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
		if got == nil {
			t.Fatal("not delivered")
		}
		return got
	}
	t.Run("raw/explicit/no-writer", func(t *testing.T) {
		noLeaks(t)
		if f := read(t, fifo); f.Err != nil || len(f.Data) != 0 {
			t.Errorf("got %q, %v; want an empty file (no writer: end of file)", f.Data, f.Err)
		}
	})
	t.Run("raw/explicit/writer-no-data", func(t *testing.T) {
		w, err := os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if f := read(t, fifo); !errors.Is(f.Err, syscall.EAGAIN) || !isPathErr(f.Err, fifo) {
			t.Errorf("got %q, %v; want EAGAIN", f.Data, f.Err)
		}
	})
	t.Run("raw/explicit/writer-with-data", func(t *testing.T) {
		w, err := os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if f := read(t, fifo); f.Err != nil || string(f.Data) != "hello" {
			t.Errorf("got %q, %v; want hello", f.Data, f.Err)
		}
	})
	t.Run("raw/explicit/dev-zero", func(t *testing.T) {
		// Endless: it fills the buffer, fstat says it is no regular
		// file, and it is not read on.
		if f := read(t, "/dev/zero"); !errors.Is(f.Err, ErrNotRegular) || !isPathErr(f.Err, "/dev/zero") {
			t.Errorf("got %d bytes, %v; want ErrNotRegular", len(f.Data), f.Err)
		}
	})
}

// TestRawCold reads a file whose pages were dropped from the page cache:
// O_NONBLOCK must not make read(2) return EAGAIN or a short count.
func TestRawCold(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cold")
	want := content(p, 3<<20+5)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Sync()
	syscall.Sync()
	err = fadviseDontneed(f)
	f.Close()
	if err != nil {
		t.Skipf("fadvise: %v", err)
	}
	if n := residentPages(t, p); n > 0 {
		t.Skipf("%d pages still cached after POSIX_FADV_DONTNEED: cannot read cold here", n)
	}
	e, _ := Lookup("raw")
	for _, buf := range []int{0, 8 << 20} {
		var got []byte
		_, err = Read(context.Background(), e, Job{Paths: []string{p}, BufferSize: buf}, func(f *File) error {
			got = append([]byte(nil), f.Data...)
			return f.Err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("buffer %d: %d bytes, want %d exact", buf, len(got), len(want))
		}
		f, _ := os.Open(p)
		fadviseDontneed(f)
		f.Close()
	}
}

// residentPages counts path's pages in the page cache (mincore).
func residentPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := sys.Mmap(int(f.Fd()), 0, int(fi.Size()), sys.PROT_READ, sys.MAP_SHARED)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer sys.Munmap(m)
	vec := make([]byte, (len(m)+sys.PageSize()-1)/sys.PageSize())
	if err := sys.Mincore(m, vec); err != nil {
		t.Skipf("mincore: %v", err)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// dropCache drops path's pages from the page cache.
func dropCache(t testing.TB, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fadviseDontneed(f); err != nil {
		t.Fatal(err)
	}
}

func fadviseDontneed(f *os.File) error {
	_, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, 4 /* POSIX_FADV_DONTNEED */, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// TestMillionPaths: a million paths (a thousand files, each named a
// thousand times) through the raw engine: no fd exhaustion, memory bounded
// by the job's own slice, not by the number of paths.
func TestMillionPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const files, repeats = 1000, 1000
	_, real := manyFiles(t, files, 64)
	paths := make([]string, 0, files*repeats)
	for range repeats {
		paths = append(paths, real...)
	}
	e, _ := Lookup("raw")
	noLeaks(t)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	var n, bad atomic.Int64
	start := time.Now()
	st, err := Read(context.Background(), e, Job{Paths: paths, Workers: 2}, func(f *File) error {
		if f.Err != nil || len(f.Data) != 64 {
			bad.Add(1)
		}
		if n.Add(1)%100_000 == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base {
				peak = max(peak, ms.HeapInuse-base)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	if st.Files != files*repeats || bad.Load() != 0 {
		t.Errorf("%d files, %d bad, want %d and 0", st.Files, bad.Load(), files*repeats)
	}
	if peak > 200<<20 {
		t.Errorf("heap grew by %d MiB", peak>>20)
	}
	t.Logf("%d paths in %v (%.0f files/s), heap growth ≤ %d MiB, %.1f syscalls/file",
		st.Files, d.Round(time.Millisecond), float64(st.Files)/d.Seconds(), peak>>20, float64(st.Syscalls)/float64(st.Files))
}

// TestLowFDLimit: in a child process whose soft RLIMIT_NOFILE is 64, every
// engine over 1,000 files with more files in flight than that (pool's 128
// workers, raw with 128 workers, a queue depth of 256): every file
// delivered, no EMFILE.
func TestLowFDLimit(t *testing.T) {
	if os.Getenv("BATCH_TEST_NOFILE") == "" {
		self, err := os.Executable()
		if err != nil {
			t.Skipf("cannot find the test binary: %v", err)
		}
		cmd := exec.Command(self, "-test.run=^TestLowFDLimit$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "BATCH_TEST_NOFILE=64")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestLowFDLimit")) {
			t.Fatalf("child with RLIMIT_NOFILE 64: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	rl.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	dir, paths := manyFiles(t, 1000, 100)
	t.Logf("%d fds open, soft limit 64", testenv.OpenFDs(t))
	for _, e := range testEngines(t) {
		for _, in := range []struct {
			name  string
			paths []string
		}{{"files", paths}, {"dir", []string{dir}}} {
			job := Job{Paths: in.paths, Workers: 128, Depth: 256}
			if e.Name() != "pool" && e.Name() != "raw" {
				job.Workers = 2 // a queue of 256 per worker
			}
			t.Run(e.Name()+"/"+in.name, func(t *testing.T) {
				// Cold files keep their workers waiting for the disk
				// with the file open: without a budget, a pool of 128
				// then holds more than 64 descriptors at once.
				for _, p := range paths {
					dropCache(t, p)
				}
				var n atomic.Int64
				st, err := Read(context.Background(), e, job, func(f *File) error {
					if f.Err != nil {
						return f.Err
					}
					n.Add(1)
					return nil
				})
				skipUnsupported(t, e, err)
				if err != nil {
					t.Fatal(err)
				}
				if n.Load() != 1000 {
					t.Errorf("%d files delivered, want 1000", n.Load())
				}
				if e.Name() == "raw" && !strings.Contains(strings.Join(st.Notes, "\n"), "a file and its directory") {
					t.Errorf("raw's notes %q do not say its workers were cut for two descriptors each", st.Notes)
				}
				t.Logf("notes: %q", st.Notes)
			})
		}
	}
}
