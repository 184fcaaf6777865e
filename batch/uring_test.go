package batch

import (
	"bytes"
	"context"
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
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
	"go.uber.org/goleak"
)

// uringEngineFor returns the io_uring engine, skipping with the probe's
// reason only when io_uring cannot run here.
func uringEngineFor(tb testing.TB) Engine {
	tb.Helper()
	e, err := Lookup("io_uring")
	if err != nil {
		tb.Fatal(err)
	}
	if err := uringSupported(); err != nil {
		if errors.Is(err, ErrNotSupported) {
			tb.Skip(err)
		}
		tb.Fatal(err)
	}
	return e
}

// uringNoLeaks fails the test if it leaks goroutines or descriptors.
func uringNoLeaks(t *testing.T) {
	t.Helper()
	before := testenv.OpenFDs(t)
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, opt)
		if after := testenv.OpenFDs(t); after != before {
			t.Errorf("fd count %d before, %d after: leaked descriptors", before, after)
		}
	})
}

// uringGot is one delivered file, its data copied.
type uringGot struct {
	data []byte
	err  error
	n    int // times delivered
}

// uringCollect runs e over job and returns what was delivered, by path.
func uringCollect(t *testing.T, e Engine, job Job) (map[string]*uringGot, *Stats, error) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]*uringGot{}
	st, err := e.Run(context.Background(), job, func(f *File) error {
		mu.Lock()
		defer mu.Unlock()
		g := got[f.Path]
		if g == nil {
			g = &uringGot{}
			got[f.Path] = g
		}
		g.n++
		g.data = bytes.Clone(f.Data)
		g.err = f.Err
		if f.Err == nil && f.Data == nil {
			g.data = []byte{} // delivered, empty
		}
		return nil
	})
	return got, st, err
}

// uringWriteFiles writes files of the given sizes (cycled) with random
// bytes and returns their paths and contents.
func uringWriteFiles(tb testing.TB, dir string, n int, sizes []int) ([]string, map[string][]byte) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	paths := make([]string, n)
	want := make(map[string][]byte, n)
	for i := range n {
		b := make([]byte, sizes[i%len(sizes)])
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		p := filepath.Join(dir, fmt.Sprintf("f%05d", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			tb.Fatal(err)
		}
		paths[i] = p
		want[p] = b
	}
	return paths, want
}

func TestUringExactBytes(t *testing.T) {
	e := uringEngineFor(t)
	uringNoLeaks(t)
	const B = 4096
	sizes := []int{0, 1, B - 1, B, B + 1, 3*B + 7}
	paths, want := uringWriteFiles(t, t.TempDir(), 120, sizes)
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			got, st, err := uringCollect(t, e, Job{Paths: paths, Workers: workers, Depth: 8, BufferSize: B, Latency: true})
			if err != nil {
				t.Fatal(err)
			}
			var bytesWant int64
			for _, p := range paths {
				g := got[p]
				switch {
				case g == nil:
					t.Errorf("%s: not delivered", p)
				case g.n != 1:
					t.Errorf("%s: delivered %d times", p, g.n)
				case g.err != nil:
					t.Errorf("%s: %v", p, g.err)
				case !bytes.Equal(g.data, want[p]):
					t.Errorf("%s: got %d bytes, want %d (or different bytes)", p, len(g.data), len(want[p]))
				}
				bytesWant += int64(len(want[p]))
			}
			if st.Files != int64(len(paths)) || st.Errors != 0 || st.Bytes != bytesWant {
				t.Errorf("stats: files %d errors %d bytes %d; want %d, 0, %d", st.Files, st.Errors, st.Bytes, len(paths), bytesWant)
			}
			if st.Lat == nil || st.Lat.Count() != int64(len(paths)) {
				t.Errorf("latency: %v samples, want %d", st.Lat, len(paths))
			}
			if st.Syscalls <= 0 {
				t.Errorf("syscalls %d", st.Syscalls)
			}
		})
	}
}

func TestUringLargeFile(t *testing.T) {
	e := uringEngineFor(t)
	// Several follow-up reads' worth at a small buffer, and one far larger
	// than the buffer.
	paths, want := uringWriteFiles(t, t.TempDir(), 3, []int{10*4096 + 3, 1 << 20, 4096})
	got, _, err := uringCollect(t, e, Job{Paths: paths, Depth: 2, BufferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if g := got[p]; g == nil || g.err != nil || !bytes.Equal(g.data, want[p]) {
			t.Errorf("%s: wrong result %+v", p, g)
		}
	}
}

// A file that changes between its first read and a follow-up: one that
// grew is read to its new end; one whose path is renamed over is read to
// its end through the descriptor the first chain opened: the file as it
// was, not the spliced bytes of two files, and not an error.
func TestUringChangesBetweenChains(t *testing.T) {
	e := uringEngineFor(t)
	dir := t.TempDir()
	paths, want := uringWriteFiles(t, dir, 2, []int{3*4096 + 7})
	grow, replace := paths[0], paths[1]
	extra := bytes.Repeat([]byte("more"), 5000)
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, bytes.Repeat([]byte{'o'}, 5*4096), 0o644); err != nil {
		t.Fatal(err)
	}
	var once [2]sync.Once
	uringFollowUpHook = func(p string) {
		switch p {
		case grow:
			once[0].Do(func() {
				f, err := os.OpenFile(grow, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
					return
				}
				f.Write(extra)
				f.Close()
			})
		case replace:
			once[1].Do(func() {
				if err := os.Rename(other, replace); err != nil {
					t.Error(err)
				}
			})
		}
	}
	defer func() { uringFollowUpHook = nil }()
	got, _, err := uringCollect(t, e, Job{Paths: paths, Depth: 2, BufferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if g := got[grow]; g == nil || g.err != nil || !bytes.Equal(g.data, append(want[grow], extra...)) {
		t.Errorf("grown file: %+v", g)
	}
	if g := got[replace]; g == nil || g.err != nil || !bytes.Equal(g.data, want[replace]) {
		t.Errorf("replaced file: %+v, want the file first opened", g)
	}
}

func TestUringErrors(t *testing.T) {
	e := uringEngineFor(t)
	uringNoLeaks(t)
	dir := t.TempDir()
	paths, want := uringWriteFiles(t, dir, 20, []int{10, 5000, 0})
	missing := filepath.Join(dir, "missing")
	sub := filepath.Join(dir, "sub")
	loop := filepath.Join(dir, "loop")
	fifo := filepath.Join(dir, "fifo")
	link := filepath.Join(dir, "link")
	trunc := filepath.Join(dir, "trunc")
	empty := filepath.Join(dir, "emptied")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	// A FIFO with no writer reads nothing at once; one with a writer that
	// writes nothing would wait forever; one with data reads it.
	fifoW := filepath.Join(dir, "fifo-writer")
	fifoD := filepath.Join(dir, "fifo-data")
	for _, p := range []string{fifo, fifoW, fifoD} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{fifoW, fifoD} {
		wr, err := os.OpenFile(p, os.O_RDWR, 0) // a writer (and a reader)
		if err != nil {
			t.Fatal(err)
		}
		defer wr.Close()
		if p == fifoD {
			wr.Write([]byte("data"))
		}
	}
	if err := os.Symlink(filepath.Base(paths[1]), link); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1024)
	for _, p := range []string{trunc, empty} {
		if err := os.WriteFile(p, big, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Listed at 16 KiB, truncated before they are read.
	list := append([]string{}, paths[:10]...)
	list = append(list, missing, sub, loop, fifo, fifoW, fifoD, link, trunc, empty, missing)
	list = append(list, paths[10:]...)
	if err := os.Truncate(trunc, 100); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(empty, 0); err != nil {
		t.Fatal(err)
	}
	want[link] = want[paths[1]]
	want[trunc] = big[:100]
	want[empty] = []byte{}

	type result struct {
		got map[string]*uringGot
		st  *Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, st, err := uringCollect(t, e, Job{Paths: list, Depth: 4, BufferSize: 4096})
		done <- result{got, st, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run hangs (the FIFO?)")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	for p, w := range want {
		if g := r.got[p]; g == nil || g.err != nil || !bytes.Equal(g.data, w) {
			t.Errorf("%s: got %+v, want %d bytes", p, g, len(w))
		}
	}
	checkErr := func(p, op string, target error) {
		t.Helper()
		g := r.got[p]
		if g == nil {
			t.Errorf("%s: not delivered", p)
			return
		}
		var pe *fs.PathError
		if !errors.As(g.err, &pe) || pe.Path != p || pe.Op != op || !errors.Is(g.err, target) || g.data != nil {
			t.Errorf("%s: got (%q, %v), want a PathError %s: %v", p, g.data, g.err, op, target)
		}
	}
	checkErr(missing, "open", syscall.ENOENT)
	if g := r.got[missing]; g != nil && g.n != 2 {
		t.Errorf("missing: delivered %d times, want 2", g.n)
	}
	checkErr(sub, "read", syscall.EISDIR)
	checkErr(loop, "open", syscall.ELOOP)
	checkErr(fifo, "read", ErrNotRegular)
	checkErr(fifoW, "read", ErrNotRegular)
	checkErr(fifoD, "read", ErrNotRegular)
	if r.st.Files != int64(len(list)) || r.st.Errors != 7 {
		t.Errorf("stats: %d files, %d errors; want %d, 7", r.st.Files, r.st.Errors, len(list))
	}
}

func TestUringBadPaths(t *testing.T) {
	e := uringEngineFor(t)
	long := "/" + strings.Repeat("x/", 2100)
	nul := "/tmp/a\x00b"
	got, st, err := uringCollect(t, e, Job{Paths: []string{long, nul, ""}})
	if err != nil {
		t.Fatal(err)
	}
	if g := got[long]; g == nil || !errors.Is(g.err, syscall.ENAMETOOLONG) {
		t.Errorf("long path: %+v", g)
	}
	if g := got[nul]; g == nil || !errors.Is(g.err, syscall.EINVAL) {
		t.Errorf("path with NUL: %+v", g)
	}
	if g := got[""]; g == nil || !errors.Is(g.err, syscall.ENOENT) {
		t.Errorf("empty path: %+v", g)
	}
	if st.Files != 3 || st.Errors != 3 {
		t.Errorf("stats %+v", st)
	}
}

// Read walks directories: the engine's EISDIR for a directory is what
// makes it walk.
func TestUringReadWalks(t *testing.T) {
	e := uringEngineFor(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, want1 := uringWriteFiles(t, filepath.Join(dir, "a"), 30, []int{1, 7000})
	_, want2 := uringWriteFiles(t, filepath.Join(dir, "a", "b"), 5, []int{3})
	var mu sync.Mutex
	n := 0
	st, err := Read(context.Background(), e, Job{Paths: []string{dir}, BufferSize: 4096}, func(f *File) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		w, ok := want1[f.Path]
		if !ok {
			w, ok = want2[f.Path]
		}
		if !ok || f.Err != nil || !bytes.Equal(f.Data, w) {
			t.Errorf("%s: %v (%d bytes)", f.Path, f.Err, len(f.Data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 35 || st.Files != 35 || st.Errors != 0 {
		t.Errorf("%d delivered, stats %d files %d errors; want 35", n, st.Files, st.Errors)
	}
}

func TestUringFewEnters(t *testing.T) {
	e := uringEngineFor(t)
	paths, _ := uringWriteFiles(t, t.TempDir(), 2000, []int{100, 4096, 2000})
	got, st, err := uringCollect(t, e, Job{Paths: paths, Depth: 64, BufferSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(paths) || st.Errors != 0 {
		t.Fatalf("%d delivered, %d errors", len(got), st.Errors)
	}
	per := float64(st.Syscalls) / float64(st.Files)
	t.Logf("%d io_uring syscalls for %d files: %.3f per file", st.Syscalls, st.Files, per)
	if per >= 0.2 {
		t.Errorf("%.3f io_uring syscalls per file, want < 0.2", per)
	}
}

func TestUringDisabled(t *testing.T) {
	t.Setenv(features.DisableEnv, "1")
	e, err := Lookup("io_uring")
	if err != nil {
		t.Fatal(err)
	}
	called := false
	st, err := e.Run(context.Background(), Job{Paths: []string{"/etc/hostname"}}, func(*File) error {
		called = true
		return nil
	})
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), features.DisableEnv) {
		t.Fatalf("got (%v, %v), want ErrNotSupported naming %s", st, err, features.DisableEnv)
	}
	if called {
		t.Error("fn called")
	}
}

func TestUringCancel(t *testing.T) {
	e := uringEngineFor(t)
	paths, _ := uringWriteFiles(t, t.TempDir(), 3000, []int{512, 9000})
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("ctx/workers=%d", workers), func(t *testing.T) {
			uringNoLeaks(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			n := 0
			var at time.Time
			st, err := e.Run(ctx, Job{Paths: paths, Workers: workers, Depth: 32, BufferSize: 4096}, func(f *File) error {
				mu.Lock()
				defer mu.Unlock()
				n++
				if n == 100 {
					at = time.Now()
					cancel()
				}
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
			if d := time.Since(at); d > 2*time.Second {
				t.Errorf("returned %v after the cancel", d)
			}
			// A worker may finish the batch of completions it holds.
			if n > 100+2*workers*32 || st.Files != int64(n) {
				t.Errorf("%d delivered after a cancel at 100 (stats %d)", n, st.Files)
			}
		})
		t.Run(fmt.Sprintf("fn/workers=%d", workers), func(t *testing.T) {
			uringNoLeaks(t)
			stopErr := errors.New("enough")
			var mu sync.Mutex
			n := 0
			_, err := e.Run(context.Background(), Job{Paths: paths, Workers: workers, Depth: 32, BufferSize: 4096}, func(f *File) error {
				mu.Lock()
				defer mu.Unlock()
				n++
				if n == 50 {
					return stopErr
				}
				return nil
			})
			if err != stopErr {
				t.Fatalf("err %v, want fn's", err)
			}
			if n > 50+2*workers*32 {
				t.Errorf("%d delivered after fn failed at 50", n)
			}
		})
	}
}

// A soft RLIMIT_NOFILE that cannot hold Depth registered slots cuts Depth,
// with a note.
func TestUringDepthCut(t *testing.T) {
	e := uringEngineFor(t)
	var old sys.Rlimit
	if err := sys.Getrlimit(sys.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = uint64(testenv.OpenFDs(t) + nofileReserve + 20)
	if lim.Cur >= old.Cur {
		t.Skip("soft RLIMIT_NOFILE already low")
	}
	if err := sys.Setrlimit(sys.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Setrlimit(sys.RLIMIT_NOFILE, &old) })
	paths, want := uringWriteFiles(t, t.TempDir(), 100, []int{10, 5000})
	got, st, err := uringCollect(t, e, Job{Paths: paths, Depth: 256, BufferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if g := got[p]; g == nil || g.err != nil || !bytes.Equal(g.data, want[p]) {
			t.Errorf("%s: %+v", p, g)
		}
	}
	if !strings.Contains(strings.Join(st.Notes, "\n"), "depth cut from 256") {
		t.Errorf("notes %q say nothing of the depth cut", st.Notes)
	}
}

// BenchmarkUring reads 10,000 files of 4 KiB: warm (in the page cache) and
// cold (dropped with POSIX_FADV_DONTNEED before each pass), at depths 64
// and 256.
func BenchmarkUring(b *testing.B) {
	e := uringEngineFor(b)
	const n = 10000
	paths, _ := uringWriteFiles(b, b.TempDir(), n, []int{4096})
	drop := func() {
		for _, p := range paths {
			fd, err := sys.Open(p, sys.O_RDONLY)
			if err != nil {
				b.Fatal(err)
			}
			sys.Fadvise(fd, 0, 0, sys.FADV_DONTNEED)
			sys.Close(fd)
		}
	}
	for _, cold := range []bool{false, true} {
		for _, depth := range []int{64, 256} {
			name := fmt.Sprintf("warm/depth=%d", depth)
			if cold {
				name = fmt.Sprintf("cold/depth=%d", depth)
			}
			b.Run(name, func(b *testing.B) {
				job := Job{Paths: paths, Depth: depth, BufferSize: DefaultBufferSize}
				var files, enters int64
				var elapsed time.Duration
				for b.Loop() {
					if cold {
						b.StopTimer()
						drop()
						b.StartTimer()
					}
					t0 := time.Now()
					st, err := e.Run(context.Background(), job, func(f *File) error { return f.Err })
					elapsed += time.Since(t0)
					if err != nil {
						b.Fatal(err)
					}
					files += st.Files
					enters += st.Syscalls
				}
				b.ReportMetric(float64(files)/elapsed.Seconds(), "files/s")
				b.ReportMetric(float64(enters)/float64(files), "enters/file")
			})
		}
	}
}
