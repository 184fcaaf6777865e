package batch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/testenv"
)

// TestMain: the tests that run this binary again (TestPermissionDenied,
// TestLowFDLimit) do it without the race detector's exit sleep.
func TestMain(m *testing.M) {
	seccomptest.Install()
	testenv.NoRaceExitSleep()
	os.Exit(m.Run())
}

// The conformance suite: every registered engine but archive (which reads
// Job.Archive, not paths; its author tests it) must pass it. An engine that
// cannot run here (Run's error wraps ErrNotSupported) is skipped with the
// reason.

// testEngines are the engines the suites run.
func testEngines(t *testing.T) []Engine {
	t.Helper()
	var es []Engine
	for _, name := range Names() {
		if name == "archive" {
			continue
		}
		e, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	if len(es) < 3 {
		t.Fatalf("engines %v: readfile, pool and raw should all be registered", Names())
	}
	return es
}

// content is the deterministic content of a test file: distinct for each
// name, so that a mix-up of two files shows.
func content(name string, size int) []byte {
	h := fnv.New64a()
	h.Write([]byte(name))
	x := h.Sum64() | 1
	b := make([]byte, (size+7)&^7)
	for i := 0; i < len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	return b[:size:size]
}

// writeTree creates files (path relative to root → size) under root.
func writeTree(t testing.TB, root string, files map[string]int) {
	t.Helper()
	for rel, size := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content(rel, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// suiteFiles are the sizes every engine must get exactly right, in nested
// directories.
var suiteFiles = map[string]int{
	"top.txt":            100,
	"a/empty":            0,
	"a/one":              1,
	"a/b/p4095":          4095,
	"a/b/p4096":          4096,
	"a/b/p4097":          4097,
	"a/b/c/d/buf-1":      DefaultBufferSize - 1,
	"a/b/c/d/buf":        DefaultBufferSize,
	"a/b/c/d/buf+1":      DefaultBufferSize + 1,
	"big/mib+3":          1<<20 + 3,
	"big/deeper/x/y/z/w": 12345,
}

// result is what one Read delivered.
type result struct {
	mu    sync.Mutex
	data  map[string][]byte
	errs  map[string]error
	dups  []string
	calls atomic.Int64
}

func newResult() *result {
	return &result{data: map[string][]byte{}, errs: map[string]error{}}
}

// fn records each file (copying its data) and flags a path delivered
// twice.
func (r *result) fn(f *File) error {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, seenD := r.data[f.Path]
	_, seenE := r.errs[f.Path]
	if seenD || seenE {
		r.dups = append(r.dups, f.Path)
	}
	if f.Err != nil {
		if f.Data != nil {
			r.dups = append(r.dups, f.Path+" (error with data)")
		}
		r.errs[f.Path] = f.Err
		return nil
	}
	r.data[f.Path] = append([]byte{}, f.Data...)
	return nil
}

// skipUnsupported skips the test when the engine cannot run here.
func skipUnsupported(t testing.TB, e Engine, err error) {
	t.Helper()
	if err != nil && errors.Is(err, ErrNotSupported) {
		t.Skipf("%s cannot run here: %v", e.Name(), err)
	}
}

// noLeaks checks, when the test ends, that no goroutine started during it
// is left and that the number of open descriptors is back where it was.
func noLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	fds := testenv.OpenFDs(t)
	t.Cleanup(func() {
		goleak.VerifyNone(t, ignore)
		// The runtime may close descriptors a moment late (none
		// expected), so allow it a little time.
		deadline := time.Now().Add(2 * time.Second)
		for {
			n := testenv.OpenFDs(t)
			if n == fds {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d fds open after the run, %d before", n, fds)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// warmUp makes the runtime open what it opens once (the poller's epoll
// and event fds) before any test counts descriptors.
var warmUp sync.Once

func warm(t *testing.T) {
	warmUp.Do(func() {
		dir := t.TempDir()
		writeTree(t, dir, map[string]int{"x": 10})
		for _, e := range testEngines(t) {
			job := Job{Paths: []string{dir}, Workers: 2}
			Read(context.Background(), e, job, func(*File) error { return nil })
		}
	})
}

// expected reads every file under root (or the given paths) with
// os.ReadFile.
func expected(t testing.TB, paths ...string) map[string][]byte {
	t.Helper()
	want := map[string][]byte{}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			want[path] = b
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// checkExact compares what was delivered with want: every file once, its
// exact bytes, no errors, and the counts in st.
func checkExact(t *testing.T, r *result, st *Stats, want map[string][]byte, latency bool) {
	t.Helper()
	if len(r.dups) > 0 {
		t.Errorf("delivered twice: %v", r.dups)
	}
	for p, err := range r.errs {
		t.Errorf("%s: unexpected error %v", p, err)
	}
	var bytes int64
	for p, w := range want {
		bytes += int64(len(w))
		got, ok := r.data[p]
		switch {
		case !ok:
			if _, isErr := r.errs[p]; !isErr {
				t.Errorf("%s: not delivered", p)
			}
		case len(got) != len(w):
			t.Errorf("%s: %d bytes, want %d", p, len(got), len(w))
		case string(got) != string(w):
			t.Errorf("%s: content differs from os.ReadFile", p)
		}
	}
	for p := range r.data {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: delivered, not asked for", p)
		}
	}
	if st == nil {
		t.Fatal("nil Stats")
	}
	if st.Files != int64(len(want)) || st.Errors != 0 || st.Bytes != bytes {
		t.Errorf("stats: files %d errors %d bytes %d, want %d, 0, %d", st.Files, st.Errors, st.Bytes, len(want), bytes)
	}
	if n := r.calls.Load(); n != st.Files {
		t.Errorf("Func called %d times, Stats.Files %d", n, st.Files)
	}
	if latency {
		// Each file's latency; an engine may or may not time the
		// files that failed.
		if st.Lat == nil {
			t.Errorf("Latency set, Stats.Lat nil")
		} else if c := st.Lat.Count(); c < st.Files-st.Errors || c > st.Files {
			t.Errorf("latency samples %d for %d files (%d errors)", c, st.Files, st.Errors)
		}
	}
}

func TestConformance(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, suiteFiles)
	all := expected(t, root)
	var files []string
	for p := range all {
		files = append(files, p)
	}
	sort.Strings(files)

	// A mix: a directory, files beside it, a file deep in another one.
	mixPaths := []string{filepath.Join(root, "a", "b"), filepath.Join(root, "top.txt"), filepath.Join(root, "big", "mib+3")}
	mix := expected(t, mixPaths...)

	inputs := []struct {
		name  string
		paths []string
		want  map[string][]byte
	}{
		{"files", files, all},
		{"dir", []string{root}, all},
		{"mix", mixPaths, mix},
	}
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			warm(t)
			for _, in := range inputs {
				for _, workers := range []int{1, 4} {
					for _, bufSize := range []int{0, 4096} {
						name := fmt.Sprintf("%s/workers=%d/buf=%d", in.name, workers, bufSize)
						t.Run(name, func(t *testing.T) {
							noLeaks(t)
							r := newResult()
							latency := workers == 4
							job := Job{Paths: in.paths, Workers: workers, BufferSize: bufSize, Latency: latency}
							st, err := Read(context.Background(), e, job, r.fn)
							skipUnsupported(t, e, err)
							if err != nil {
								t.Fatalf("Read: %v", err)
							}
							checkExact(t, r, st, in.want, latency)
						})
					}
				}
			}
		})
	}
}

// manyFiles makes n small files in one directory and returns their paths.
func manyFiles(t testing.TB, n, size int) (dir string, paths []string) {
	t.Helper()
	dir = t.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("f%05d", i))
		if err := os.WriteFile(p, content(p, size), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return dir, paths
}

func TestStops(t *testing.T) {
	dir, paths := manyFiles(t, 3000, 100)
	errStop := errors.New("stop here")
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			warm(t)
			for _, workers := range []int{1, 4} {
				for _, in := range []struct {
					name  string
					paths []string
				}{{"files", paths}, {"dir", []string{dir}}} {
					t.Run(fmt.Sprintf("fn-error/%s/workers=%d", in.name, workers), func(t *testing.T) {
						noLeaks(t)
						var calls, late atomic.Int64
						var failed atomic.Bool
						const at = 10
						st, err := Read(context.Background(), e, Job{Paths: in.paths, Workers: workers}, func(f *File) error {
							if failed.Load() {
								late.Add(1)
							}
							if calls.Add(1) == at {
								failed.Store(true)
								return fmt.Errorf("wrapped: %w", errStop)
							}
							// A slow Func leaves the CPUs to the
							// worker that failed, so that a preemption
							// between its return and the engine's stop
							// does not let the others run on.
							time.Sleep(200 * time.Microsecond)
							return nil
						})
						skipUnsupported(t, e, err)
						if !errors.Is(err, errStop) {
							t.Fatalf("Read returned %v, want Func's error", err)
						}
						if st == nil {
							t.Fatal("nil Stats with the error")
						}
						// Files in flight may still be delivered: one
						// per other worker for engines that check
						// between read and delivery; a few more may
						// slip through between Func's return and the
						// engine's stop.
						if n := late.Load(); n > inFlight(e, workers)+8 {
							t.Errorf("Func called %d times, %d after it failed", calls.Load(), n)
						}
					})
					t.Run(fmt.Sprintf("cancel/%s/workers=%d", in.name, workers), func(t *testing.T) {
						noLeaks(t)
						ctx, cancel := context.WithCancel(context.Background())
						defer cancel()
						var calls, late atomic.Int64
						var cancelled atomic.Bool
						const at = 10
						start := time.Now()
						_, err := Read(ctx, e, Job{Paths: in.paths, Workers: workers}, func(f *File) error {
							if cancelled.Load() {
								late.Add(1)
							}
							if calls.Add(1) == at {
								cancel()
								cancelled.Store(true)
							}
							return nil
						})
						skipUnsupported(t, e, err)
						if !errors.Is(err, context.Canceled) {
							t.Fatalf("Read returned %v, want context.Canceled", err)
						}
						if d := time.Since(start); d > 5*time.Second {
							t.Errorf("took %v to stop", d)
						}
						// Once ctx is cancelled, a worker that had
						// already checked it may deliver the file in its
						// hands; none starts another.
						if n := late.Load(); n > inFlight(e, workers) {
							t.Errorf("Func called %d times after ctx was cancelled", n)
						}
					})
					t.Run(fmt.Sprintf("cancelled-before/%s/workers=%d", in.name, workers), func(t *testing.T) {
						noLeaks(t)
						ctx, cancel := context.WithCancel(context.Background())
						cancel()
						var calls atomic.Int64
						_, err := Read(ctx, e, Job{Paths: in.paths, Workers: workers}, func(f *File) error {
							calls.Add(1)
							return nil
						})
						skipUnsupported(t, e, err)
						if !errors.Is(err, context.Canceled) {
							t.Fatalf("Read returned %v, want context.Canceled", err)
						}
						if n := calls.Load(); n != 0 {
							t.Errorf("Func called %d times under a cancelled context", n)
						}
					})
				}
			}
		})
	}
}

// TestErrorsArePathErrors: a missing file, a directory read as a file (Run,
// not Read), each the file's own *fs.PathError, the other files fine.
func TestErrorsArePathErrors(t *testing.T) {
	dir, paths := manyFiles(t, 5, 10)
	missing := filepath.Join(dir, "missing")
	job := Job{Paths: append([]string{missing, dir}, paths...)}
	if err := job.validate(); err != nil {
		t.Fatal(err)
	}
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			warm(t)
			noLeaks(t)
			r := newResult()
			st, err := e.Run(context.Background(), job, r.fn)
			skipUnsupported(t, e, err)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]error{missing: fs.ErrNotExist, dir: errIsDir}
			for p, target := range want {
				got := r.errs[p]
				var pe *fs.PathError
				if !errors.As(got, &pe) || pe.Path != p || !errors.Is(got, target) {
					t.Errorf("%s: error %#v, want *fs.PathError naming it, wrapping %v", p, got, target)
				}
			}
			if len(r.data) != len(paths) || len(r.errs) != 2 || st.Files != int64(len(paths)+2) || st.Errors != 2 {
				t.Errorf("delivered %d files and %d errors (stats %d, %d), want %d and 2", len(r.data), len(r.errs), st.Files, st.Errors, len(paths))
			}
		})
	}
}

// errIsDir is EISDIR as an error value for errors.Is.
var errIsDir error = syscall.EISDIR

// inFlight is how many more files than those before a stop an engine may
// still deliver: one per other worker for the engines that read one file
// at a time per worker (they check between read and delivery), a queue's
// depth per worker for the others.
func inFlight(e Engine, workers int) int64 {
	switch e.Name() {
	case "readfile", "pool", "raw":
		return int64(workers - 1)
	}
	return int64(workers * DefaultDepth)
}

func TestValidate(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, job := range []Job{{Workers: -1}, {Workers: MaxWorkers + 1}, {BufferSize: -1}, {PseudoLimit: -1}} {
			if _, err := Read(context.Background(), e, job, func(*File) error { return nil }); err == nil || strings.Contains(err.Error(), "not supported") {
				t.Errorf("%s: job %+v: got %v, want a validation error", e.Name(), job, err)
			}
		}
	}
}

// TestRawExact reads files around the buffer size and a large one, with
// the default buffer and a small one, and checks both the bytes and the
// system calls the raw engine counts: 3 for a file smaller than the
// buffer, 5 for one at least as large.
func TestRawExact(t *testing.T) {
	root := t.TempDir()
	e, err := Lookup("raw")
	if err != nil {
		t.Fatal(err)
	}
	for _, buf := range []int{DefaultBufferSize, 4096, 1} {
		sizes := []int{0, 1, buf - 1, buf, buf + 1, 2*buf - 1, 2 * buf, 2*buf + 1, 10 << 20}
		for _, size := range sizes {
			if size < 0 {
				continue
			}
			t.Run(fmt.Sprintf("buf=%d/size=%d", buf, size), func(t *testing.T) {
				noLeaks(t)
				p := filepath.Join(root, fmt.Sprintf("b%d-s%d", buf, size))
				if err := os.WriteFile(p, content(p, size), 0o644); err != nil {
					t.Fatal(err)
				}
				job := Job{Paths: []string{p}, BufferSize: buf}
				if err := job.validate(); err != nil {
					t.Fatal(err)
				}
				var got []byte
				st, err := e.Run(context.Background(), job, func(f *File) error {
					if f.Err != nil {
						return f.Err
					}
					got = append([]byte{}, f.Data...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(content(p, size)) {
					t.Fatalf("%d bytes delivered, want %d exact", len(got), size)
				}
				want := int64(3)
				if size >= buf {
					want = 5
				}
				if st.Syscalls != want {
					t.Errorf("%d syscalls, want %d", st.Syscalls, want)
				}
			})
		}
	}
	t.Run("missing", func(t *testing.T) {
		job := Job{Paths: []string{filepath.Join(root, "nope")}}
		job.validate()
		st, _ := e.Run(context.Background(), job, func(*File) error { return nil })
		if st.Syscalls != 1 || st.Errors != 1 {
			t.Errorf("missing file: %d syscalls, %d errors, want 1 and 1", st.Syscalls, st.Errors)
		}
	})
	t.Run("dir", func(t *testing.T) {
		job := Job{Paths: []string{root}}
		job.validate()
		st, _ := e.Run(context.Background(), job, func(*File) error { return nil })
		if st.Syscalls != 3 || st.Errors != 1 {
			t.Errorf("directory: %d syscalls, %d errors, want 3 and 1", st.Syscalls, st.Errors)
		}
	})
}

// A path holding a NUL byte is EINVAL in every engine: it must not open
// the file named by the part before the NUL.
func TestNULPath(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("the wrong file"), 0o644); err != nil {
		t.Fatal(err)
	}
	nul := a + "\x00b"
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			r := newResult()
			_, err := Read(context.Background(), e, Job{Paths: []string{nul}}, r.fn)
			skipUnsupported(t, e, err)
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := r.data[nul]; ok {
				t.Fatalf("read %q through a path with a NUL", d)
			}
			if err := r.errs[nul]; !errors.Is(err, syscall.EINVAL) {
				t.Errorf("error %v, want EINVAL", err)
			}
		})
	}
}

// readfile and pool count the system calls os makes for their calls (see
// readfile.go; checked with strace -f): 6 for a regular file, whatever its
// size, since the buffer is sized from fstat; 5 for an empty one, whose
// first read already returns 0.
func TestOSReaderSyscalls(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, size := range []int{0, 4096, 100 << 10} {
		p := filepath.Join(dir, fmt.Sprint(size))
		if err := os.WriteFile(p, content(p, size)[:size], 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for _, name := range []string{"readfile", "pool"} {
		e, _ := Lookup(name)
		st, err := Read(context.Background(), e, Job{Paths: paths, Workers: 2}, func(*File) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(5 + 6 + 6); st.Syscalls != want {
			t.Errorf("%s: %d syscalls for %d files, want %d", name, st.Syscalls, len(paths), want)
		}
	}
}
