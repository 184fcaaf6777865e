package gen

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func genBytes(t *testing.T, size int64, seed uint64) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := File(context.Background(), path, size, Options{Seed: seed}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSizes(t *testing.T) {
	for _, size := range []int64{0, 1, 7, 8, 9, 4097, ChunkSize - 1, ChunkSize, 5<<20 + 3, 2*ChunkSize + 5} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			if got := int64(len(genBytes(t, size, 1))); got != size {
				t.Fatalf("wrote %d bytes, want %d", got, size)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	const size = 2*ChunkSize + 4097
	a := genBytes(t, size, 42)
	b := genBytes(t, size, 42)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed gave different content")
	}
	c := genBytes(t, size, 43)
	if bytes.Equal(a[:4096], c[:4096]) || bytes.Equal(a[size-4096:], c[size-4096:]) {
		t.Fatal("seeds 42 and 43 gave the same content")
	}
	// Content depends on the offset only, so a shorter file is a prefix.
	if d := genBytes(t, 4097, 42); !bytes.Equal(d, a[:4097]) {
		t.Fatal("a 4097-byte file is not a prefix of a longer one with the same seed")
	}
}

func TestNotRepetitive(t *testing.T) {
	b := genBytes(t, 3*ChunkSize, 7)
	for i := 0; i < 3; i++ {
		for j := i + 1; j < 3; j++ {
			if bytes.Equal(b[i*ChunkSize:i*ChunkSize+4096], b[j*ChunkSize:j*ChunkSize+4096]) {
				t.Fatalf("chunks %d and %d start alike", i, j)
			}
		}
	}
	// Within a chunk no 8-byte word should repeat in the first 64 KiB.
	seen := map[string]bool{}
	for i := 0; i < 64<<10; i += 8 {
		w := string(b[i : i+8])
		if seen[w] {
			t.Fatalf("word at %d repeats", i)
		}
		seen[w] = true
	}
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestSpeed)
	fw.Write(b[:1<<20])
	fw.Close()
	if z.Len() < 1<<20 {
		t.Fatalf("1 MiB compressed to %d bytes: not incompressible", z.Len())
	}
}

func TestRefusesExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("precious data, longer than what gen writes"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := File(context.Background(), path, 10, Options{})
	if err == nil {
		t.Fatal("overwrote an existing file without Force")
	}
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("errors.Is(%v, fs.ErrExist) = false", err)
	}
	if want := path + ": already exists (use --force to overwrite)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious data, longer than what gen writes" {
		t.Fatalf("existing file changed: %q", b)
	}

	if err := File(context.Background(), path, 10, Options{Force: true, Seed: 3}); err != nil {
		t.Fatalf("with Force: %v", err)
	}
	b, _ := os.ReadFile(path)
	if len(b) != 10 || !bytes.Equal(b, genBytes(t, 10, 3)) {
		t.Fatalf("after overwrite: %d bytes %x", len(b), b)
	}
}

func TestRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{dir, "is a directory"},
		{fifo, "not a regular file"},
	} {
		for _, force := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/force=%v", filepath.Base(tc.path), force), func(t *testing.T) {
				err := File(context.Background(), tc.path, 10, Options{Force: force})
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
					t.Fatalf("err = %v, want it to name %s and say %q", err, tc.path, tc.want)
				}
				if st, err := os.Stat(tc.path); err != nil || st.Mode().IsRegular() {
					t.Fatalf("%s changed: %v %v", tc.path, st, err)
				}
			})
		}
	}
}

func TestNegativeSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := File(context.Background(), path, -1, Options{}); err == nil {
		t.Fatal("negative size accepted")
	}
	assertGone(t, path)
}

func TestInsufficientSpaceEarly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	err := File(context.Background(), path, 1<<61, Options{})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want ENOSPC naming %s", err, path)
	}
	assertGone(t, path)
}

// failWriter passes limit bytes through, then fails like *os.File does on a
// full filesystem.
type failWriter struct {
	w     io.Writer
	limit int64
	err   error
}

func (f *failWriter) Write(b []byte) (int, error) {
	if int64(len(b)) <= f.limit {
		f.limit -= int64(len(b))
		return f.w.Write(b)
	}
	n, _ := f.w.Write(b[:f.limit])
	f.limit = 0
	return n, f.err
}

func TestWriteErrorRemovesPartialFile(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO} {
		t.Run(errno.Error(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			opts := Options{wrap: func(w io.Writer) io.Writer {
				return &failWriter{w: w, limit: ChunkSize + 12345,
					err: &fs.PathError{Op: "write", Path: path, Err: errno}}
			}}
			err := File(context.Background(), path, 3*ChunkSize, opts)
			if !errors.Is(err, errno) {
				t.Fatalf("errors.Is(%v, %v) = false", err, errno)
			}
			want := fmt.Sprintf("gen %s: %s (wrote 1.01MiB of 3MiB; partial file removed)", path, errno)
			if err.Error() != want {
				t.Errorf("error\n%q, want\n%q", err, want)
			}
			assertGone(t, path)
		})
	}
}

func TestCancelRemovesPartialFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writes := 0
	opts := Options{wrap: func(w io.Writer) io.Writer {
		return writerFunc(func(b []byte) (int, error) {
			if writes++; writes == 2 {
				cancel()
			}
			return w.Write(b)
		})
	}}
	err := File(ctx, path, 10*ChunkSize, opts)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "partial file removed") {
		t.Fatalf("err = %v", err)
	}
	assertGone(t, path)

	// Cancelled before starting: nothing is left either.
	if err := File(ctx, path, 1, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	assertGone(t, path)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestProgress(t *testing.T) {
	const size = 5*ChunkSize + 1
	var calls [][2]int64
	path := filepath.Join(t.TempDir(), "f")
	err := File(context.Background(), path, size, Options{Progress: func(w, total int64) {
		calls = append(calls, [2]int64{w, total})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 2 || calls[0] != [2]int64{0, size} || calls[len(calls)-1] != [2]int64{size, size} {
		t.Fatalf("progress calls %v", calls)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] || calls[i][1] != size {
			t.Fatalf("progress calls %v", calls)
		}
	}
}

func TestSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := File(context.Background(), path, 4097, Options{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 4097 {
		t.Fatal(st, err)
	}
}

func TestTempFile(t *testing.T) {
	dir := t.TempDir()
	path, err := TempFile(context.Background(), dir, 5<<20+3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "iopath-bench-") ||
		!strings.HasSuffix(path, ".dat") {
		t.Errorf("path %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, genBytes(t, 5<<20+3, 0)) {
		t.Error("temp file content differs from File with seed 0")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := TempFile(ctx, dir, 1<<20, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("cancelled TempFile left files: %v", ents)
	}
}

// onlyEntries fails unless dir holds exactly names: no temporary file is
// left beside them.
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range ents {
		have = append(have, e.Name())
	}
	if strings.Join(have, ",") != strings.Join(names, ",") {
		t.Fatalf("%s holds %q, want %q", dir, have, names)
	}
}

// With Force, a write that fails or is cancelled half-way leaves the
// existing file as it was, and no temporary file.
func TestForceKeepsTheOldFileOnFailure(t *testing.T) {
	const old = "the user's file, which must survive"
	for _, how := range []string{"ENOSPC", "cancel"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			writes := 0
			opts := Options{Force: true, wrap: func(w io.Writer) io.Writer {
				if how == "ENOSPC" {
					return &failWriter{w: w, limit: ChunkSize + 1, err: syscall.ENOSPC}
				}
				return writerFunc(func(b []byte) (int, error) {
					if writes++; writes == 2 {
						cancel()
					}
					return w.Write(b)
				})
			}}
			err := File(ctx, path, 4*ChunkSize, opts)
			if err == nil || !strings.Contains(err.Error(), "the existing file is untouched") {
				t.Fatalf("err = %v; want a failure saying the old file is untouched", err)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != old {
				t.Fatalf("the old file holds %q (%v)", b, err)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
				t.Errorf("the old file's mode changed to %v", st.Mode().Perm())
			}
			onlyEntries(t, dir, "f")
		})
	}
}

// Until the rename both files exist: the space check counts the whole new
// file, not the growth over the old one.
func TestForceSpaceCountsBothFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := File(context.Background(), path, 4*ChunkSize, Options{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	defer func(f func(string) (uint64, error)) { freeSpace = f }(freeSpace)
	freeSpace = func(string) (uint64, error) { return 3 * ChunkSize, nil }
	err := File(context.Background(), path, 4*ChunkSize, Options{Force: true, Seed: 9})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "need 4MiB") {
		t.Fatalf("err = %v; want ENOSPC needing the whole 4MiB", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the refused write changed the file")
	}
	onlyEntries(t, dir, "f")
}

// Options.Temp is told the file being written, beside the target, and
// told to forget it once it is in place or gone.
func TestTempTracked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	live := map[string]bool{}
	var seen []string
	track := func(p string) func() {
		live[p] = true
		seen = append(seen, p)
		return func() { delete(live, p) }
	}
	if err := File(context.Background(), path, 3*ChunkSize, Options{Temp: track}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || filepath.Dir(seen[0]) != dir || seen[0] == path || len(live) != 0 {
		t.Fatalf("tracked %q, still tracked %v", seen, live)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tp, err := TempFile(context.Background(), dir, 1<<20, Options{Temp: track})
	if err != nil || !live[tp] {
		t.Fatalf("TempFile: %v; tracked %v (the file is the caller's now)", err, live)
	}
	delete(live, tp)
	if _, err := TempFile(ctx, dir, 1<<20, Options{Temp: track}); err == nil || len(live) != 0 {
		t.Fatalf("cancelled TempFile: %v; still tracked %v", err, live)
	}
}

func assertGone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s still exists (%v)", path, err)
	}
}

func BenchmarkGen(b *testing.B) {
	const size = 64 << 20
	dir := b.TempDir()
	b.SetBytes(size)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := File(context.Background(), path, size, Options{Seed: uint64(i)}); err != nil {
			b.Fatal(err)
		}
		os.Remove(path)
	}
}

func BenchmarkFill(b *testing.B) {
	buf := make([]byte, ChunkSize)
	b.SetBytes(ChunkSize)
	for i := 0; b.Loop(); i++ {
		fill(buf, 1, uint64(i))
	}
}
