package iopath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/testenv"
)

// Files of a pseudo-filesystem state a size that means nothing (4096 for
// a sysfs attribute, 0 in /proc) and cannot be mapped: every engine,
// ordered or not, reads them to their end with read(2).
func TestPseudoFiles(t *testing.T) {
	testenv.CheckFDs(t)
	paths := []string{"/sys/kernel/mm/transparent_hugepage/enabled", "/proc/self/status"}
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			t.Logf("skipping %s: %v", path, err)
			continue
		}
		// /proc/self/status changes from read to read; its first line
		// does not.
		check := func(t *testing.T, what string, got []byte) {
			t.Helper()
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(path, "/proc") {
				first := want[:bytes.IndexByte(want, '\n')+1]
				if !bytes.HasPrefix(got, first) || !bytes.HasSuffix(got, []byte("\n")) {
					t.Errorf("%s %s: %q", what, path, got)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: %q, want %q", what, path, got, want)
			}
		}
		for _, e := range []string{"", "read", "pread", "mmap", "io_uring"} {
			var opts []Option
			if e != "" {
				opts = append(opts, WithEngine(e))
			}
			t.Run(filepath.Base(path)+"-"+e, func(t *testing.T) {
				b, err := ReadFile(path, opts...)
				skipUnsupported(t, err)
				if err != nil {
					t.Fatalf("ReadFile: %v", err)
				}
				check(t, "ReadFile", b)
				pb, err := ReadFileBuf(path, opts...)
				if err != nil {
					t.Fatalf("ReadFileBuf: %v", err)
				}
				check(t, "ReadFileBuf", pb.Bytes())
				pb.Release()
				for _, ordered := range []bool{false, true} {
					o := append(opts[:len(opts):len(opts)], WithWorkers(2))
					if ordered {
						o = append(o, WithOrdered())
					}
					var got []byte
					err := Scan(context.Background(), path, func(off int64, b []byte) error {
						if off != int64(len(got)) {
							t.Errorf("block at %d after %d bytes", off, len(got))
						}
						got = append(got, b...)
						return nil
					}, o...)
					if err != nil {
						t.Fatalf("Scan ordered %v: %v", ordered, err)
					}
					check(t, "Scan", got)
				}
			})
		}
	}
}

// An explicit engine that cannot run here fails the same way for every
// file, also for those read without it (empty, pseudo-files).
func TestExplicitEngineUnavailableShortcuts(t *testing.T) {
	testenv.CheckFDs(t)
	t.Setenv(features.DisableEnv, "1")
	empty := writeFile(t, t.TempDir(), nil)
	for _, path := range []string{empty, "/proc/self/status"} {
		opts := []Option{WithEngine("io_uring")}
		if _, err := ReadFile(path, opts...); !errors.Is(err, ErrNotSupported) {
			t.Errorf("ReadFile %s: %v, want ErrNotSupported", path, err)
		}
		if _, err := ReadFileBuf(path, opts...); !errors.Is(err, ErrNotSupported) {
			t.Errorf("ReadFileBuf %s: %v, want ErrNotSupported", path, err)
		}
		for _, o := range [][]Option{opts, append(opts, WithOrdered())} {
			err := Scan(context.Background(), path, func(int64, []byte) error { return nil }, o...)
			if !errors.Is(err, ErrNotSupported) {
				t.Errorf("Scan %s: %v, want ErrNotSupported", path, err)
			}
		}
	}
}

// memoryGuard ends the test process if the heap grows past max bytes
// while the test runs: a read that does not stop would otherwise take the
// machine's memory. It returns the function that stops it.
func memoryGuard(t *testing.T, max uint64) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if h := sample[0].Value.Uint64(); h > max {
				panic(fmt.Sprintf("%s: the heap holds %d MiB, over the %d MiB this test allows: a read is not bounded", t.Name(), h>>20, max>>20))
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// keep appends b to got up to 1 MiB, all the checks need: collecting
// 64 MiB of pagemap would cost more than reading it.
func keep(got, b []byte) []byte {
	return append(got, b[:min(len(b), max(0, 1<<20-len(got)))]...)
}

// No read of a file of unknown size grows without bound: /proc/self/pagemap
// (as long as the address space) fails with ErrLimit through ReadFile,
// ReadFileBuf and Scan, at the default limit or one set with
// WithPseudoLimit, whatever the engine, with an error that names the path,
// the limit and the option that raises it.
func TestPseudoLimit(t *testing.T) {
	testenv.CheckFDs(t)
	const pagemap = "/proc/self/pagemap"
	if _, err := os.Stat(pagemap); err != nil {
		t.Skipf("%s: %v", pagemap, err)
	}
	defer memoryGuard(t, 1<<30)()
	ctx := context.Background()
	calls := []struct {
		name string
		call func(path string, opts ...Option) ([]byte, error)
	}{
		{"ReadFile", func(path string, opts ...Option) ([]byte, error) { return ReadFile(path, opts...) }},
		{"ReadFileBuf", func(path string, opts ...Option) ([]byte, error) {
			b, err := ReadFileBuf(path, opts...)
			if err != nil {
				return nil, err
			}
			defer b.Release()
			return bytes.Clone(b.Bytes()), nil
		}},
		{"Scan", func(path string, opts ...Option) ([]byte, error) {
			var mu sync.Mutex
			var got []byte
			err := Scan(ctx, path, func(off int64, b []byte) error {
				mu.Lock()
				defer mu.Unlock()
				got = keep(got, b)
				return nil
			}, opts...)
			return got, err
		}},
		{"ReadFiles", func(path string, opts ...Option) ([]byte, error) {
			var got []byte
			err := ReadFiles(ctx, []string{path}, func(_ string, data []byte, err error) error {
				got = bytes.Clone(data)
				return err
			}, opts...)
			return got, err
		}},
		{"Scan-ordered", func(path string, opts ...Option) ([]byte, error) {
			var got []byte
			err := Scan(ctx, path, func(off int64, b []byte) error {
				got = keep(got, b)
				return nil
			}, append(opts, WithOrdered())...)
			return got, err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range []struct {
				limit string
				opts  []Option
			}{
				{"64MiB", nil},
				{"1MiB", []Option{WithPseudoLimit(1 << 20)}},
				{"1MiB", []Option{WithPseudoLimit(1 << 20), WithEngine("mmap"), WithWorkers(2)}},
			} {
				if c.name == "ReadFiles" && len(tc.opts) > 1 {
					tc.opts = []Option{WithPseudoLimit(1 << 20), WithEngine("raw"), WithWorkers(2)}
				}
				if tc.opts == nil && (c.name == "Scan-ordered" || c.name == "ReadFiles") {
					continue // the same path as Scan's: spare the time
				}
				_, err := c.call(pagemap, tc.opts...)
				var pe *fs.PathError
				if !errors.Is(err, ErrLimit) || !errors.As(err, &pe) || pe.Path != pagemap {
					t.Fatalf("%s: %v, want an *fs.PathError for %s wrapping ErrLimit", tc.limit, err, pagemap)
				}
				for _, want := range []string{tc.limit, "WithPseudoLimit"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%q does not say %q", err, want)
					}
				}
			}
			// The limit is inclusive: a file of unknown size of exactly
			// n bytes is read whole, one byte more is too much.
			const version = "/proc/version"
			want, err := os.ReadFile(version)
			if err != nil {
				t.Skip(err)
			}
			n := int64(len(want))
			got, err := c.call(version, WithPseudoLimit(n), WithBlockSize(512))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s with limit %d (its size): %v, %q", version, n, err, got)
			}
			if _, err := c.call(version, WithPseudoLimit(n-1)); !errors.Is(err, ErrLimit) {
				t.Errorf("%s with limit %d: %v, want ErrLimit", version, n-1, err)
			}
			// A sysfs attribute states 4096 bytes, which means nothing: it
			// is limited too.
			const thp = "/sys/kernel/mm/transparent_hugepage/enabled"
			if _, err := os.Stat(thp); err == nil {
				if _, err := c.call(thp, WithPseudoLimit(10)); !errors.Is(err, ErrLimit) {
					t.Errorf("%s with limit 10: %v, want ErrLimit", thp, err)
				}
			}
			// A regular file that states its size is not limited.
			data := content(3000, 5)
			path := writeFile(t, t.TempDir(), data)
			if got, err := c.call(path, WithPseudoLimit(1000)); err != nil || !bytes.Equal(got, data) {
				t.Errorf("a regular file of 3000 bytes with limit 1000: %v, %d bytes", err, len(got))
			}
		})
	}
}

func TestPseudoLimitOption(t *testing.T) {
	if _, err := ReadFile("/proc/version", WithPseudoLimit(-1)); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("WithPseudoLimit(-1): %v", err)
	}
	if f, err := Open("/proc/version", WithPseudoLimit(1)); err == nil {
		f.Close()
		t.Error("Open took WithPseudoLimit")
	}
	err := ReadFiles(context.Background(), []string{"/proc/version"}, func(string, []byte, error) error { return nil }, WithPseudoLimit(1<<20))
	if err != nil {
		t.Errorf("ReadFiles refused WithPseudoLimit: %v", err)
	}
}
