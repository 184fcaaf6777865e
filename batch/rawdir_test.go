package batch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/sys"
)

// rawDirSizes are the sizes rawDirFiles cycles through: under the 4 KiB
// buffer rawRead uses, empty, and over it.
var rawDirSizes = []int{100, 0, 5000}

// rawDirFiles writes n files named f000... into dir, of rawDirSizes in
// turn, adds their contents to want and returns their paths.
func rawDirFiles(t *testing.T, dir string, n int, want map[string][]byte) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("f%03d", i))
		want[paths[i]] = content(paths[i], rawDirSizes[i%len(rawDirSizes)])
		if err := os.WriteFile(paths[i], want[paths[i]], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// wantRawCalls is the raw engine's system calls for n files of
// rawDirFiles: 3 for a file under the buffer, 5 for one over it.
func wantRawCalls(n int) int64 {
	var c int64
	for i := range n {
		c += []int64{3, 3, 5}[i%3]
	}
	return c
}

// rawRead reads paths with the raw engine (4 KiB buffer, one worker) and
// returns what each path delivered (its bytes, or its error) and the stats.
func rawRead(t *testing.T, paths []string) (map[string][]byte, map[string]error, *Stats) {
	t.Helper()
	e, err := Lookup("raw")
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Paths: paths, BufferSize: 4096, Workers: 1}
	if len(paths) == 1 {
		job.walk = true // a directory to walk
	}
	if err := job.validate(); err != nil {
		t.Fatal(err)
	}
	got, errs := map[string][]byte{}, map[string]error{}
	st, err := e.Run(context.Background(), job, func(f *File) error {
		if f.Err != nil {
			errs[f.Path] = f.Err
		} else {
			got[f.Path] = append([]byte{}, f.Data...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, errs, st
}

// checkRawRead fails t unless every path of want delivered exactly its
// bytes.
func checkRawRead(t *testing.T, want map[string][]byte, got map[string][]byte, errs map[string]error) {
	t.Helper()
	for p, w := range want {
		if errs[p] != nil || string(got[p]) != string(w) {
			t.Errorf("%s: %d bytes (want %d exact), error %v", p, len(got[p]), len(w), errs[p])
		}
	}
}

// A run of files in one directory is opened relative to it with the raw
// cached openat2 and delivers the same bytes, with exactly the calls of
// the files plus three for the directory (open, fstatfs, close). A run
// shorter than minDirRun does not open its directory; one longer than a
// chunk keeps it across chunks.
func TestRawDirRun(t *testing.T) {
	warm(t)
	noLeaks(t)
	root := t.TempDir()
	want := map[string][]byte{}
	long := rawDirFiles(t, filepath.Join(root, "long"), chunkSize+44, want) // two chunks
	short := rawDirFiles(t, filepath.Join(root, "short"), minDirRun-1, want)
	mid := rawDirFiles(t, filepath.Join(root, "mid"), minDirRun, want)
	paths := append(append(append([]string{}, long...), short...), mid...)
	got, errs, st := rawRead(t, paths)
	checkRawRead(t, want, got, errs)
	if !sys.CachedOpen() {
		t.Skip("openat2 with RESOLVE_CACHED is refused here (a kernel before 5.12, or a seccomp profile): TestRawDirOpenat2Refused tests that fallback")
	}
	calls := wantRawCalls(len(long)) + 3 + wantRawCalls(len(short)) + wantRawCalls(len(mid)) + 3
	if st.Syscalls != calls {
		t.Errorf("list: %d system calls, want %d (each cached open relative to its directory, each long run's directory opened once)", st.Syscalls, calls)
	}

	// The walk knows each directory's runs from its listing: the same.
	got, errs, st = rawRead(t, []string{root})
	checkRawRead(t, want, got, errs)
	if len(got) != len(want) || st.Syscalls != calls {
		t.Errorf("walk: %d files, %d system calls; want %d and %d", len(got), st.Syscalls, len(want), calls)
	}
}

// Where the relative raw open does not apply, the file is opened by its
// path and delivers what that finds: a symlink to another mount
// (RESOLVE_NO_XDEV refuses it), a missing file and a subdirectory in the
// middle of a run answer as they would alone.
func TestRawDirFallback(t *testing.T) {
	warm(t)
	noLeaks(t)
	root := t.TempDir()
	want := map[string][]byte{}
	dir := filepath.Join(root, "d")
	paths := rawDirFiles(t, dir, 2*minDirRun, want)

	// /proc is another mount wherever this runs.
	other := "/proc/sys/kernel/ostype"
	ostype, err := os.ReadFile(other)
	if err != nil {
		t.Skipf("no %s to link to: %v", other, err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	want[link] = ostype
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	paths = append(paths[:minDirRun:minDirRun], append([]string{link, missing, sub}, paths[minDirRun:]...)...)

	got, errs, st := rawRead(t, paths)
	checkRawRead(t, want, got, errs)
	var pe *fs.PathError
	if err := errs[missing]; !errors.As(err, &pe) || pe.Op != "open" || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v; want open %s: ENOENT", err, missing)
	}
	if err := errs[sub]; !errors.As(err, &pe) || pe.Path != sub || !errors.Is(err, syscall.EISDIR) {
		t.Errorf("directory: %v; want EISDIR naming %s", err, sub)
	}
	if !sys.CachedOpen() {
		t.Skip("openat2 with RESOLVE_CACHED is refused here: the counts below assume it")
	}
	// The link and the missing file each try the raw open, then the
	// path; the directory opens relative to d and fails to read.
	calls := wantRawCalls(2*minDirRun) + 3 + (1 + 3) + (1 + 1) + 3
	if st.Syscalls != calls {
		t.Errorf("%d system calls, want %d", st.Syscalls, calls)
	}
}

// With openat2 refused by a seccomp profile (as some containers' are),
// the raw engine reads every file by its path, with no directory opened:
// the refusal is learnt once.
func TestRawDirOpenat2Refused(t *testing.T) {
	t.Parallel()
	seccomptest.Run(t, "TestRawDirOpenat2RefusedChild", []string{"openat2"})
}

func TestRawDirOpenat2RefusedChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestRawDirOpenat2Refused: runs only under its seccomp filter")
	}
	warm(t)
	noLeaks(t)
	root := t.TempDir()
	want := map[string][]byte{}
	a := rawDirFiles(t, filepath.Join(root, "a"), 2*minDirRun, want)
	b := rawDirFiles(t, filepath.Join(root, "b"), 2*minDirRun, want)
	got, errs, st := rawRead(t, append(a, b...))
	checkRawRead(t, want, got, errs)
	if sys.CachedOpen() {
		t.Fatal("openat2 is refused, yet CachedOpen still says it may work")
	}
	// The first directory is opened and closed (3 calls) and its first
	// file tries openat2 once (1 call); after that, paths only.
	if calls := wantRawCalls(len(a)) + wantRawCalls(len(b)) + 3 + 1; st.Syscalls != calls {
		t.Errorf("%d system calls, want %d", st.Syscalls, calls)
	}
}
