// Package enginetest is a conformance suite for engine.Engine
// implementations, in the manner of testing/fstest.
//
// Run(t, e) reads files of awkward sizes through e with many block sizes,
// worker counts, patterns, queue depths and vector counts, and checks every
// delivered block against a plain pread reference: right offset, right
// length, right bytes, each block exactly once, the whole file covered. It
// also checks O_DIRECT (when the engine's Caps say it supports it), latency
// recording, the errors for missing, directory, non-regular and shrinking
// files, sink errors, panics in the sink (recovered by Run's caller),
// cancellation, Stop on a sink that implements engine.Stopper, files of
// unknown size (pseudo-files of /proc and /sys: read completely, or
// refused with ErrNotSupported before any block) and their limit, that a
// file replaced by rename while it is read is delivered as one complete
// version (see Swap), and that the engine leaks neither file descriptors
// nor goroutines.
//
// An engine whose Prepare returns an error wrapping engine.ErrNotSupported
// is skipped with that error as the reason; any other Prepare error fails.
// Run must not be called from parallel tests: it counts the process's file
// descriptors and goroutines.
package enginetest

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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/testenv"
)

// Sizes are the file sizes the byte checks use.
var Sizes = []int64{0, 1, 4095, 4096, 4097, 1<<20 + 1, 3<<20 + 17}

var (
	blockSizes = []int{4 << 10, 64 << 10, 128 << 10, 1 << 20}
	workers    = []int{1, 2, 3, 4}
	patterns   = []engine.Pattern{engine.Sequential, engine.Random}
	// qdVec are (queue depth, vectors) pairs, cycled through the matrix so
	// that every pair meets every size without multiplying the runs.
	qdVec = [][2]int{{1, 1}, {32, 4}, {1, 4}, {32, 1}}
)

// smallLimit is the largest file size that gets the full matrix.
const smallLimit = 4097

// Run checks that e conforms to the engine contract.
func Run(t *testing.T, e engine.Engine) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	dir := t.TempDir()
	files := make(map[int64]*file)
	for _, size := range Sizes {
		files[size] = makeFile(t, dir, size)
	}
	big := files[1<<20+1]

	// Skip only when the engine says it cannot run here.
	if pr, err := e.Prepare(engine.Job{Path: big.path}); err != nil {
		if errors.Is(err, engine.ErrNotSupported) {
			t.Skipf("%s: %v", e.Name(), err)
		}
		t.Fatalf("%s: Prepare: %v", e.Name(), err)
	} else {
		pr.Close()
	}
	fds := testenv.OpenFDs(t)

	t.Run("bytes", func(t *testing.T) {
		i := 0
		for _, size := range Sizes {
			f := files[size]
			for _, bs := range blockSizes {
				for _, w := range workers {
					if size > smallLimit && w != 1 && w != 3 && !(w == 4 && bs == 4<<10) {
						continue
					}
					for _, pat := range patterns {
						qv := qdVec[i%len(qdVec)]
						i++
						job := engine.Job{Path: f.path, BlockSize: bs, Workers: w, Pattern: pat,
							QueueDepth: qv[0], Vectors: qv[1]}
						t.Run(jobName(f, &job), func(t *testing.T) { checkBytes(t, e, f, job) })
					}
				}
			}
		}
	})

	t.Run("copy-mapped", func(t *testing.T) {
		for _, pat := range patterns {
			job := engine.Job{Path: big.path, BlockSize: 64 << 10, Workers: 2, Pattern: pat, CopyMapped: true}
			t.Run(jobName(big, &job), func(t *testing.T) { checkBytes(t, e, big, job) })
		}
	})

	t.Run("direct", func(t *testing.T) { checkDirect(t, e, files) })

	t.Run("latency", func(t *testing.T) {
		for _, w := range []int{1, 3} {
			for _, pat := range patterns {
				job := engine.Job{Path: big.path, BlockSize: 4 << 10, Workers: w, Pattern: pat, Latency: true}
				t.Run(jobName(big, &job), func(t *testing.T) {
					st := checkBytes(t, e, big, job)
					if st == nil {
						return
					}
					tot := st.Total()
					if tot.Lat == nil {
						t.Fatal("latency asked for, but no histogram")
					}
					if got, want := tot.Lat.Count(), blocks(big.size, job.BlockSize); got != want {
						t.Errorf("latency histogram has %d values, want one per block (%d)", got, want)
					}
				})
			}
		}
		job := engine.Job{Path: big.path, BlockSize: 64 << 10}
		t.Run("off", func(t *testing.T) {
			st := checkBytes(t, e, big, job)
			if st == nil {
				return
			}
			for w, ws := range st.Workers {
				if ws.Lat != nil {
					t.Errorf("worker %d has a latency histogram, but latency was not asked for", w)
				}
			}
		})
	})

	t.Run("errors", func(t *testing.T) { checkErrors(t, e, dir, big) })
	t.Run("shrink", func(t *testing.T) { checkShrink(t, e, dir) })
	t.Run("sink-error", func(t *testing.T) { checkSinkError(t, e, big) })
	t.Run("cancel", func(t *testing.T) { checkCancel(t, e, big) })
	t.Run("panic", func(t *testing.T) { checkPanic(t, e, big) })
	t.Run("stop", func(t *testing.T) { checkStop(t, e, big) })
	t.Run("pseudo", func(t *testing.T) { checkPseudo(t, e) })
	t.Run("replaced", func(t *testing.T) { checkReplaced(t, e) })

	if after := testenv.OpenFDs(t); after != fds {
		t.Errorf("%s leaked file descriptors: %d open before, %d after", e.Name(), fds, after)
	}
	goleak.VerifyNone(t, leaks)
}

// file is a test file and the reference content read back with pread.
type file struct {
	path string
	size int64
	ref  []byte
}

func makeFile(t *testing.T, dir string, size int64) *file {
	t.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(uint64(size), 0x1e57))
	for i := 0; i+8 <= len(data); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	for i := len(data) &^ 7; i < len(data); i++ {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(dir, fmt.Sprintf("f%d", size))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The reference is what a plain pread sees.
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	ref := make([]byte, size)
	if n, err := fh.ReadAt(ref, 0); int64(n) != size {
		t.Fatalf("pread reference of %s: %d bytes, %v", path, n, err)
	}
	return &file{path: path, size: size, ref: ref}
}

func jobName(f *file, j *engine.Job) string {
	s := fmt.Sprintf("size=%d/bs=%d/w=%d/%s", f.size, j.BlockSize, max(j.Workers, 1), j.Pattern)
	if j.QueueDepth != 0 {
		s += fmt.Sprintf("/qd=%d", j.QueueDepth)
	}
	if j.Vectors != 0 {
		s += fmt.Sprintf("/v=%d", j.Vectors)
	}
	if j.Direct {
		s += "/direct"
	}
	if j.CopyMapped {
		s += "/copy"
	}
	return s
}

func blocks(size int64, bs int) int64 { return (size + int64(bs) - 1) / int64(bs) }

// prepare prepares job, skipping the test if the engine cannot run it here.
func prepare(t *testing.T, e engine.Engine, job engine.Job) engine.Prepared {
	t.Helper()
	pr, err := e.Prepare(job)
	if err != nil {
		if errors.Is(err, engine.ErrNotSupported) {
			t.Skipf("%s: %v", e.Name(), err)
		}
		t.Fatalf("%s: Prepare: %v", e.Name(), err)
	}
	t.Cleanup(func() {
		if err := pr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return pr
}

// checker is a Sink that verifies each block as it arrives.
type checker struct {
	f      *file
	bs     int64
	noData bool
	seen   []atomic.Bool
	bytes  atomic.Int64
	nblk   atomic.Int64
}

func newChecker(f *file, bs int, noData bool) *checker {
	return &checker{f: f, bs: int64(bs), noData: noData, seen: make([]atomic.Bool, blocks(f.size, bs))}
}

func (c *checker) Block(w int, off int64, b []byte) error {
	if off < 0 || off >= c.f.size || off%c.bs != 0 {
		return fmt.Errorf("worker %d: block at offset %d: not a block offset of a %d-byte file", w, off, c.f.size)
	}
	if want := min(c.bs, c.f.size-off); int64(len(b)) != want {
		return fmt.Errorf("worker %d: block at offset %d has %d bytes, want %d", w, off, len(b), want)
	}
	if c.seen[off/c.bs].Swap(true) {
		return fmt.Errorf("worker %d: block at offset %d delivered twice", w, off)
	}
	if !c.noData && !bytes.Equal(b, c.f.ref[off:off+int64(len(b))]) {
		i := 0
		for i < len(b) && b[i] == c.f.ref[off+int64(i)] {
			i++
		}
		return fmt.Errorf("worker %d: block at offset %d differs from pread at byte %d", w, off, off+int64(i))
	}
	c.bytes.Add(int64(len(b)))
	c.nblk.Add(1)
	return nil
}

// checkBytes runs job and checks every block and the totals. It returns
// the stats, or nil when the run failed (already reported).
func checkBytes(t *testing.T, e engine.Engine, f *file, job engine.Job) *engine.Stats {
	t.Helper()
	pr := prepare(t, e, job)
	// Run twice: a Prepared may be run again.
	var st *engine.Stats
	for range 2 {
		c := newChecker(f, job.BlockSize, e.Caps().NoData)
		var err error
		st, err = pr.Run(context.Background(), c)
		if err != nil {
			t.Errorf("Run: %v", err)
			return nil
		}
		for i := range c.seen {
			if !c.seen[i].Load() {
				t.Errorf("block %d (offset %d) never delivered", i, int64(i)*c.bs)
				return nil
			}
		}
		if got := c.bytes.Load(); got != f.size {
			t.Errorf("delivered %d bytes, want %d", got, f.size)
		}
		if st == nil {
			t.Error("Run returned nil Stats")
			return nil
		}
		tot := st.Total()
		if tot.Bytes != f.size || tot.Blocks != int64(len(c.seen)) {
			t.Errorf("stats count %d bytes in %d blocks, want %d in %d", tot.Bytes, tot.Blocks, f.size, len(c.seen))
		}
		if len(st.Workers) != max(job.Workers, 1) {
			t.Errorf("stats have %d workers, want %d", len(st.Workers), max(job.Workers, 1))
		}
		if !e.Caps().NoData && f.size > 0 && tot.Syscalls == 0 {
			t.Errorf("read %d bytes with no syscalls counted", f.size)
		}
	}
	return st
}

func checkDirect(t *testing.T, e engine.Engine, files map[int64]*file) {
	f := files[4097]
	if !e.Caps().Direct {
		_, err := e.Prepare(engine.Job{Path: f.path, Direct: true})
		if !errors.Is(err, engine.ErrNotSupported) {
			t.Fatalf("Caps().Direct is false, but Prepare with Direct returned %v, want an error wrapping ErrNotSupported", err)
		}
		return
	}
	// Probe whether this filesystem takes O_DIRECT at all.
	probe := prepare(t, e, engine.Job{Path: f.path, Direct: true, BlockSize: 4096})
	if _, err := probe.Run(context.Background(), newChecker(f, 4096, e.Caps().NoData)); err != nil {
		if errors.Is(err, engine.ErrNotSupported) {
			t.Skipf("O_DIRECT on %s: %v", filepath.Dir(f.path), err)
		}
		t.Fatalf("Run with O_DIRECT: %v", err)
	}
	for _, size := range []int64{0, 4096, 4097, 1<<20 + 1, 3<<20 + 17} {
		f := files[size]
		for _, bs := range []int{4 << 10, 128 << 10} {
			for _, w := range []int{1, 2} {
				for _, pat := range patterns {
					job := engine.Job{Path: f.path, BlockSize: bs, Workers: w, Pattern: pat, Direct: true}
					t.Run(jobName(f, &job), func(t *testing.T) { checkBytes(t, e, f, job) })
				}
			}
		}
	}
}

// runErr prepares job and runs it with sink, failing if it does not return
// within a few seconds.
func runErr(t *testing.T, e engine.Engine, ctx context.Context, job engine.Job, sink engine.Sink) error {
	t.Helper()
	pr := prepare(t, e, job)
	done := make(chan error, 1)
	go func() {
		_, err := pr.Run(ctx, sink)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		// Unblock an engine stuck opening a FIFO before failing.
		if fd, err := syscall.Open(job.Path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
			syscall.Close(fd)
		}
		<-done
		t.Fatalf("Run of %s hung", job.Path)
		return nil
	}
}

var discard = engine.SinkFunc(func(int, int64, []byte) error { return nil })

func checkErrors(t *testing.T, e engine.Engine, dir string, big *file) {
	t.Run("missing", func(t *testing.T) {
		path := filepath.Join(dir, "does-not-exist")
		err := runErr(t, e, context.Background(), engine.Job{Path: path}, discard)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("got %v, want an error wrapping fs.ErrNotExist", err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != path {
			t.Errorf("got %v, want an *fs.PathError for %s", err, path)
		}
	})
	t.Run("directory", func(t *testing.T) {
		err := runErr(t, e, context.Background(), engine.Job{Path: dir}, discard)
		if !errors.Is(err, syscall.EISDIR) {
			t.Errorf("got %v, want EISDIR", err)
		}
		namesPath(t, err, dir)
	})
	t.Run("fifo", func(t *testing.T) {
		path := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		defer os.Remove(path)
		err := runErr(t, e, context.Background(), engine.Job{Path: path}, discard)
		if err == nil {
			t.Fatal("reading a FIFO succeeded")
		}
		namesPath(t, err, path)
	})
	t.Run("devnull", func(t *testing.T) {
		err := runErr(t, e, context.Background(), engine.Job{Path: os.DevNull}, discard)
		if err == nil {
			t.Fatal("reading /dev/null succeeded")
		}
		namesPath(t, err, os.DevNull)
	})
	t.Run("invalid-job", func(t *testing.T) {
		if _, err := e.Prepare(engine.Job{Path: big.path, BlockSize: 1}); err == nil {
			t.Error("Prepare accepted a 1-byte block size")
		}
		if _, err := e.Prepare(engine.Job{}); err == nil {
			t.Error("Prepare accepted a job without a path")
		}
	})
}

func namesPath(t *testing.T, err error, path string) {
	t.Helper()
	if err != nil && !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
}

// checkShrink truncates the file after the first block: the engine must
// return an error wrapping engine.ErrChanged (for mmap, a SIGBUS turned
// into an error), never panic or crash. The second case shrinks the file
// inside its last page, which a mapping reads as zeros without any fault.
func checkShrink(t *testing.T, e engine.Engine, dir string) {
	if e.Caps().NoData {
		t.Skip("the engine reads no data, so it cannot see the file shrink")
	}
	for _, sz := range []struct{ from, to int64 }{{4 << 20, 100}, {12192, 8292}} {
		for _, pat := range patterns {
			for _, cp := range []bool{false, true} {
				checkShrinkOne(t, e, dir, sz.from, sz.to, pat, cp)
			}
		}
	}
}

func checkShrinkOne(t *testing.T, e engine.Engine, dir string, from, to int64, pat engine.Pattern, cp bool) {
	job := engine.Job{BlockSize: 4 << 10, Pattern: pat, QueueDepth: 4, Vectors: 2, CopyMapped: cp}
	f := makeFile(t, dir, from)
	job.Path = f.path
	t.Run(fmt.Sprintf("%s/to%d", jobName(f, &job), to), func(t *testing.T) {
		var once sync.Once
		var sum atomic.Uint64
		sink := engine.SinkFunc(func(w int, off int64, b []byte) error {
			var s byte
			for _, c := range b { // touch every byte: mmap faults here
				s ^= c
			}
			sum.Add(uint64(s))
			var err error
			once.Do(func() { err = os.Truncate(f.path, to) })
			return err
		})
		err := runErr(t, e, context.Background(), job, sink)
		if err == nil {
			t.Fatal("no error after the file shrank under the reader")
		}
		namesPath(t, err, f.path)
		if !errors.Is(err, engine.ErrChanged) {
			t.Errorf("got %v, want an error wrapping engine.ErrChanged", err)
		}
	})
}

var errStop = errors.New("sink says stop")

func checkSinkError(t *testing.T, e engine.Engine, big *file) {
	for _, w := range []int{1, 3} {
		job := engine.Job{Path: big.path, BlockSize: 4 << 10, Workers: w}
		t.Run(jobName(big, &job), func(t *testing.T) {
			var calls atomic.Int64
			sink := engine.SinkFunc(func(int, int64, []byte) error {
				if calls.Add(1) == 3 {
					return errStop
				}
				return nil
			})
			err := runErr(t, e, context.Background(), job, sink)
			if !errors.Is(err, errStop) {
				t.Fatalf("got %v, want the sink's error", err)
			}
			n, all := calls.Load(), blocks(big.size, job.BlockSize)
			if w == 1 && n != 3 {
				t.Errorf("the sink was called %d times, want 3 (it failed on the third)", n)
			}
			if n >= all {
				t.Errorf("the run went on to deliver all %d blocks after the sink failed", n)
			}
		})
	}
}

func checkCancel(t *testing.T, e engine.Engine, big *file) {
	for _, w := range []int{1, 3} {
		job := engine.Job{Path: big.path, BlockSize: 4 << 10, Workers: w}
		t.Run("during/"+jobName(big, &job), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var calls atomic.Int64
			sink := engine.SinkFunc(func(int, int64, []byte) error {
				if calls.Add(1) == 1 {
					cancel()
				}
				return nil
			})
			err := runErr(t, e, ctx, job, sink)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if n := calls.Load(); n >= blocks(big.size, job.BlockSize) {
				t.Errorf("all %d blocks were delivered after the cancel", n)
			}
		})
		t.Run("before/"+jobName(big, &job), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := runErr(t, e, ctx, job, discard)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
		})
	}
}

// checkReplaced reads a path that is renamed over, in a loop, by versions
// of several sizes (see Swap), with one and two workers, warm and cold:
// every run must deliver exactly one version, and no error, since the path
// always holds a complete file. A worker that opened the path again would
// read another version than the first worker's.
func checkReplaced(t *testing.T, e engine.Engine) {
	if e.Caps().NoData {
		t.Skip("the engine reads no data")
	}
	for _, c := range []struct {
		workers int
		cold    bool
	}{{1, false}, {2, false}, {2, true}} {
		name := fmt.Sprintf("w=%d/warm", c.workers)
		if c.cold {
			name = fmt.Sprintf("w=%d/cold", c.workers)
		}
		t.Run(name, func(t *testing.T) {
			s := NewSwap(t)
			s.Cold = c.cold
			const bs = 16 << 10
			pr := prepare(t, e, engine.Job{Path: s.Path, BlockSize: bs, Workers: c.workers, QueueDepth: 8})
			maxSize := 0
			for _, n := range SwapSizes {
				maxSize = max(maxSize, n)
			}
			buf := make([]byte, maxSize+bs)
			s.Hammer(t, func(got func([]byte, error)) error {
				var mu sync.Mutex
				end, total := int64(0), int64(0)
				_, err := pr.Run(context.Background(), engine.SinkFunc(func(_ int, off int64, b []byte) error {
					if off < 0 || off+int64(len(b)) > int64(len(buf)) {
						return fmt.Errorf("block [%d,%d) outside every version", off, off+int64(len(b)))
					}
					copy(buf[off:], b)
					mu.Lock()
					end = max(end, off+int64(len(b)))
					total += int64(len(b))
					mu.Unlock()
					return nil
				}))
				switch {
				case err != nil:
					got(nil, err)
				case total != end:
					got(nil, fmt.Errorf("blocks of %d bytes in all do not cover [0,%d)", total, end))
				default:
					got(buf[:end], nil)
				}
				return nil
			})
		})
	}
}
