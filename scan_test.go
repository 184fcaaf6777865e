package iopath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/testenv"
	"go.uber.org/goleak"
)

// scanned is what a Scan delivered.
type scanned struct {
	mu      sync.Mutex
	blocks  map[int64][]byte
	dups    []int64
	order   []int64
	active  atomic.Int32 // fn calls running now
	overlap atomic.Bool  // two fn calls ran at once
}

func (s *scanned) fn(off int64, b []byte) error {
	if s.active.Add(1) > 1 {
		s.overlap.Store(true)
	}
	defer s.active.Add(-1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blocks == nil {
		s.blocks = map[int64][]byte{}
	}
	if _, dup := s.blocks[off]; dup {
		s.dups = append(s.dups, off)
	}
	s.blocks[off] = bytes.Clone(b)
	s.order = append(s.order, off)
	return nil
}

// check compares what was delivered with want, cut into blocks of bs.
func (s *scanned) check(t *testing.T, want []byte, bs int, ordered bool) {
	t.Helper()
	if len(s.dups) > 0 {
		t.Errorf("blocks delivered twice: %v", s.dups[:min(len(s.dups), 5)])
	}
	nblocks := (len(want) + bs - 1) / bs
	if len(s.blocks) != nblocks {
		t.Errorf("%d blocks delivered, want %d", len(s.blocks), nblocks)
	}
	for k := range nblocks {
		off := int64(k * bs)
		w := want[off:min(int(off)+bs, len(want))]
		if g, ok := s.blocks[off]; !ok || !bytes.Equal(g, w) {
			t.Errorf("block at %d: %d bytes (delivered: %v), want %d", off, len(g), ok, len(w))
			return
		}
	}
	if ordered {
		for i := 1; i < len(s.order); i++ {
			if s.order[i] <= s.order[i-1] {
				t.Errorf("WithOrdered: block %d after block %d", s.order[i], s.order[i-1])
				return
			}
		}
		if s.overlap.Load() {
			t.Error("WithOrdered: fn called concurrently")
		}
	}
}

var scanEngines = []string{"read", "pread", "readv", "mmap", "io_uring"}

// forEngines runs fn in a subtest for each engine ("" is Auto), ordered
// and not, so that an engine that cannot run here skips only its own.
func forEngines(t *testing.T, engines []string, fn func(t *testing.T, e string, ordered bool)) {
	t.Helper()
	for _, e := range engines {
		for _, ordered := range []bool{false, true} {
			name := e
			if name == "" {
				name = "auto"
			}
			if ordered {
				name += "-ordered"
			}
			t.Run(name, func(t *testing.T) { fn(t, e, ordered) })
		}
	}
}

// Every block exactly once, with the file's bytes, for every engine,
// ordered or not, on every awkward size.
func TestScan(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	sizes := []int{0, 1, 4095, 4096, 4097, 8191, 8193, 128<<10 - 1, 128<<10 + 1, 5<<20 + 1234}
	files := map[int]string{}
	for _, size := range sizes {
		files[size] = writeFile(t, dir, content(size, uint64(size)))
	}
	type variant struct {
		name string
		opts []Option
		bs   int
	}
	var variants []variant
	variants = append(variants, variant{"auto", nil, 128 << 10}, variant{"auto-bs4k", []Option{WithBlockSize(4096)}, 4096})
	for _, e := range scanEngines {
		variants = append(variants,
			variant{e, []Option{WithEngine(e)}, 128 << 10},
			variant{e + "×3-bs4k-qd3", []Option{WithEngine(e), WithWorkers(3), WithBlockSize(4096), WithQueueDepth(3)}, 4096},
		)
	}
	for _, v := range variants {
		for _, ordered := range []bool{false, true} {
			name := v.name
			opts := v.opts
			if ordered {
				name += "-ordered"
				opts = append(opts[:len(opts):len(opts)], WithOrdered())
			}
			t.Run(name, func(t *testing.T) {
				for _, size := range sizes {
					want, _ := os.ReadFile(files[size])
					var s scanned
					err := Scan(context.Background(), files[size], s.fn, opts...)
					skipUnsupported(t, err)
					if err != nil {
						t.Fatalf("size %d: %v", size, err)
					}
					if size == 0 && len(s.blocks) != 0 {
						t.Fatalf("empty file: fn called %d times", len(s.blocks))
					}
					t.Run(fmt.Sprint(size), func(t *testing.T) { s.check(t, want, v.bs, ordered) })
				}
			})
		}
	}
	// Auto's choice, whatever this machine's Auto says: each engine with
	// several workers.
	for _, e := range scanEngines {
		t.Run("chosen-"+e, func(t *testing.T) {
			choose(t, auto.Choice{Engine: e, Workers: 3, BlockSize: 8192, QueueDepth: 5, Rule: "test"})
			for _, ordered := range []bool{false, true} {
				var opts []Option
				if ordered {
					opts = []Option{WithOrdered()}
				}
				size := 5<<20 + 1234
				var s scanned
				if err := Scan(context.Background(), files[size], s.fn, opts...); err != nil {
					t.Fatal(err)
				}
				want, _ := os.ReadFile(files[size])
				s.check(t, want, 8192, ordered)
			}
		})
	}
	t.Run("direct", func(t *testing.T) {
		ddir := directDir(t)
		for _, size := range []int{1, 4095, 4096, 8193, 1<<20 + 77} {
			data := content(size, 9)
			path := writeFile(t, ddir, data)
			forEngines(t, []string{"", "pread", "readv", "io_uring"}, func(t *testing.T, e string, ordered bool) {
				opts := []Option{WithDirect(), WithBlockSize(8192), WithWorkers(2)}
				if e != "" {
					opts = append(opts, WithEngine(e))
				}
				if ordered {
					opts = append(opts, WithOrdered())
				}
				var s scanned
				err := Scan(context.Background(), path, s.fn, opts...)
				skipUnsupported(t, err)
				if err != nil {
					t.Fatalf("%q size %d: %v", e, size, err)
				}
				s.check(t, data, 8192, ordered)
			})
		}
	})
}

// fn's error stops the scan and comes back as it is.
func TestScanFnError(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(3<<20, 5)
	path := writeFile(t, t.TempDir(), data)
	stop := errors.New("stop here")
	forEngines(t, append([]string{""}, scanEngines...), func(t *testing.T, e string, ordered bool) {
		opts := []Option{WithBlockSize(4096), WithWorkers(2)}
		if e != "" {
			opts = append(opts, WithEngine(e))
		}
		if ordered {
			opts = append(opts, WithOrdered())
		}
		var calls atomic.Int64
		err := Scan(context.Background(), path, func(off int64, b []byte) error {
			if calls.Add(1) == 10 {
				return stop
			}
			return nil
		}, opts...)
		skipUnsupported(t, err)
		if err != stop {
			t.Errorf("%q ordered %v: got %v, want fn's error itself", e, ordered, err)
		}
		// The others stop too: far fewer calls than the 768 blocks.
		if n := calls.Load(); n >= 768 {
			t.Errorf("%q ordered %v: %d calls after the error", e, ordered, n)
		}
	})
}

// Cancelling ctx stops the scan promptly: on a 1 TiB sparse file, whose
// blocks cost nothing to read, and with a fn that blocks until cancelled.
// Neither would end in the test's time if the cancel were missed.
func TestScanCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	testenv.CheckFDs(t)
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		f.Close()
		t.Skipf("no 1 TiB sparse file here: %v", err)
	}
	f.Close()
	forEngines(t, append([]string{""}, scanEngines...), func(t *testing.T, e string, ordered bool) {
		name := fmt.Sprintf("%q-ordered-%v", e, ordered)
		opts := []Option{WithWorkers(2)}
		if e != "" {
			opts = append(opts, WithEngine(e))
		}
		if ordered {
			opts = append(opts, WithOrdered())
		}
		// Cancelled from fn after a few blocks.
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		err := Scan(ctx, huge, func(off int64, b []byte) error {
			if calls.Add(1) == 3 {
				cancel()
			}
			return nil
		}, opts...)
		cancel()
		skipUnsupported(t, err)
		if err != context.Canceled {
			t.Errorf("%s: got %v, want context.Canceled", name, err)
		}
		// Cancelled from outside while fn blocks: each worker's fn
		// returns once ctx is done, and no further call starts.
		ctx, cancel = context.WithCancel(context.Background())
		var started atomic.Int64
		var after atomic.Int64
		go func() {
			for started.Load() == 0 {
				runtime.Gosched()
			}
			cancel()
		}()
		err = Scan(ctx, huge, func(off int64, b []byte) error {
			if ctx.Err() != nil {
				after.Add(1)
			}
			started.Add(1)
			<-ctx.Done()
			return nil
		}, opts...)
		if err != context.Canceled {
			t.Errorf("%s, blocking fn: got %v", name, err)
		}
		// A call may have started between the cancel and the check; a
		// missed cancel would make thousands.
		if after.Load() > 4 {
			t.Errorf("%s: %d calls started after the cancel", name, after.Load())
		}
	})
}

// A file that shrinks while it is scanned is an error wrapping ErrChanged,
// never a crash, also when the bytes come from a mapping (SIGBUS).
func TestScanShrinks(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	forEngines(t, append([]string{""}, scanEngines...), func(t *testing.T, e string, ordered bool) {
		path := writeFile(t, dir, content(4<<20, 2))
		opts := []Option{WithBlockSize(4096), WithWorkers(2)}
		if e != "" {
			opts = append(opts, WithEngine(e))
		}
		if ordered {
			opts = append(opts, WithOrdered())
		}
		var once sync.Once
		var sum atomic.Int64
		err := Scan(context.Background(), path, func(off int64, b []byte) error {
			once.Do(func() {
				if err := os.Truncate(path, 8192); err != nil {
					t.Error(err)
				}
			})
			s := 0
			for _, c := range b { // touch every byte: a mapping faults here
				s += int(c)
			}
			sum.Add(int64(s))
			return nil
		}, opts...)
		skipUnsupported(t, err)
		var pe *fs.PathError
		if !errors.Is(err, ErrChanged) || !errors.As(err, &pe) || pe.Path != path {
			t.Errorf("%q ordered %v: got %v, want a path error wrapping ErrChanged", e, ordered, err)
		}
	})
}

// Pseudo-files (size 0) are read to their end.
func TestScanProc(t *testing.T) {
	for _, path := range []string{"/proc/self/mountinfo", "/proc/self/cmdline"} {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Skipf("%s: %v", path, err)
		}
		var got []byte
		err = Scan(context.Background(), path, func(off int64, b []byte) error {
			if off != int64(len(got)) || (len(b) != 512 && int(off)+len(b) != len(want)) {
				return fmt.Errorf("block at %d of %d bytes", off, len(b))
			}
			got = append(got, b...)
			return nil
		}, WithBlockSize(512))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes (%v), want %d", path, len(got), err, len(want))
		}
	}
}

func TestScanErrors(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	never := func(int64, []byte) error { t.Error("fn called"); return nil }
	for _, tc := range []struct {
		path string
		is   error
	}{
		{missing, fs.ErrNotExist},
		{dir, syscall.EISDIR},
		{fifo, ErrNotRegular},
		{"/dev/zero", ErrNotRegular},
	} {
		err := Scan(context.Background(), tc.path, never)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != tc.path || !errors.Is(err, tc.is) {
			t.Errorf("%s: got %v, want a path error wrapping %v", tc.path, err, tc.is)
		}
	}
	p := writeFile(t, dir, []byte("abc"))
	if err := Scan(context.Background(), p, never, WithBlockSize(7)); err == nil || !strings.Contains(err.Error(), "block size 7") {
		t.Errorf("bad block size: %v", err)
	}
}

// Under Auto, an io_uring that cannot run is replaced by pread silently;
// asked for by name, it is an error that says why.
func TestScanUringFallback(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(1<<20+3, 4)
	path := writeFile(t, t.TempDir(), data)
	t.Setenv(features.DisableEnv, "1")
	choose(t, auto.Choice{Engine: "io_uring", Workers: 2, QueueDepth: 4, BlockSize: 4096, Rule: "test"})
	for _, ordered := range []bool{false, true} {
		var opts []Option
		if ordered {
			opts = []Option{WithOrdered()}
		}
		var s scanned
		if err := Scan(context.Background(), path, s.fn, opts...); err != nil {
			t.Fatalf("ordered %v: %v", ordered, err)
		}
		s.check(t, data, 4096, ordered)
		err := Scan(context.Background(), path, s.fn, append(opts, WithEngine("io_uring"))...)
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), features.DisableEnv) {
			t.Errorf("explicit io_uring, ordered %v: %v", ordered, err)
		}
	}
}

// TestScanSmall: a file under auto.SmallFile is scanned on the calling
// goroutine (Auto's rule small-file): in order, and a file that grows or
// shrinks meanwhile, a panic in fn and a cancelled ctx end it as they do
// through an engine, leaving nothing open.
func TestScanSmall(t *testing.T) {
	testenv.CheckFDs(t)
	const size = 300 << 10
	data := content(size, 31)
	path := writeFile(t, t.TempDir(), data)
	if c, err := Plan(path, ForScan); err != nil || c.Rule != ruleSmallFile || c.Workers != 1 {
		t.Fatalf("Plan: %+v, %v", c, err)
	}
	var got []byte
	var inside atomic.Int32
	err := Scan(context.Background(), path, func(off int64, b []byte) error {
		if inside.Add(1) != 1 || off != int64(len(got)) {
			t.Errorf("block at %d after %d bytes, or two calls at once: want one at a time, in order", off, len(got))
		}
		got = append(got, b...)
		inside.Add(-1)
		return nil
	})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}

	for _, c := range []struct {
		name   string
		change func() error
		says   string
	}{
		{"grows", func() error {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("more"))
			return err
		}, "more now"},
		{"shrinks", func() error { return os.Truncate(path, 1000) }, "end of file at offset 131072"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			first := true
			err := Scan(context.Background(), path, func(off int64, b []byte) error {
				if first {
					first = false
					return c.change()
				}
				return nil
			})
			if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v, want ErrChanged saying %q", err, c.says)
			}
		})
	}

	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err = Scan(ctx, path, func(int64, []byte) error { calls++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("cancelled in fn: %v after %d calls", err, calls)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic of fn", r)
			}
		}()
		Scan(context.Background(), path, func(int64, []byte) error { panic("boom") })
		t.Error("Scan returned after fn panicked")
	}()
}
