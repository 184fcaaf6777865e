package iopath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/testenv"
	"go.uber.org/goleak"
)

// TestMain fails the run if goroutines or descriptors outlive the tests.
func TestMain(m *testing.M) {
	testenv.NoMachineProfile()
	testenv.NoRaceExitSleep()
	// A child process of the io_uring refusal tests: forbid what it says.
	seccomptest.Install()
	// The runtime poller's descriptors (epoll, eventfd) stay open once
	// made: make them before counting.
	if f, err := os.Open(os.DevNull); err == nil {
		f.Close()
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return -1
		}
		return len(ents)
	}
	before := fds()
	code := m.Run()
	if code == 0 {
		if after := fds(); after != before {
			fmt.Fprintf(os.Stderr, "descriptors leaked: %d open before the tests, %d after\n", before, after)
			code = 1
		}
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines leaked: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// tree writes files (relative path → content) under a new directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestReadFiles(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 20000) // 320,000 bytes: more than one buffer
	files := map[string]string{"a": "alpha", "d/b": "beta", "d/e/c": "", "d/e/big": big}
	root := tree(t, files)
	missing := filepath.Join(root, "missing")
	opts := [][]Option{nil, {WithWorkers(1)}, {WithWorkers(8)}}
	for _, name := range batch.Names() {
		if name != "archive" {
			opts = append(opts, []Option{WithEngine(name)}, []Option{WithEngine(name), WithWorkers(3)})
		}
	}
	for _, o := range opts {
		t.Run(fmt.Sprint(len(o)), func(t *testing.T) {
			var mu sync.Mutex
			got := map[string]string{}
			errs := map[string]error{}
			err := ReadFiles(context.Background(), []string{filepath.Join(root, "d"), filepath.Join(root, "a"), missing}, func(path string, data []byte, err error) error {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs[path] = err
					if data != nil {
						t.Errorf("%s: data with an error", path)
					}
					return nil
				}
				got[path] = string(data)
				return nil
			}, o...)
			if errors.Is(err, batch.ErrNotSupported) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			for rel, want := range files {
				if g, ok := got[filepath.Join(root, rel)]; !ok || g != want {
					t.Errorf("%s: got %d bytes (delivered %v), want %d", rel, len(g), ok, len(want))
				}
			}
			var pe *fs.PathError
			if err := errs[missing]; !errors.As(err, &pe) || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing file: %v", err)
			}
			if len(got) != len(files) || len(errs) != 1 {
				t.Errorf("%d files and %d errors, want %d and 1", len(got), len(errs), len(files))
			}
		})
	}
}

func TestReadFilesStops(t *testing.T) {
	files := map[string]string{}
	for i := range 500 {
		files[fmt.Sprintf("f%03d", i)] = "x"
	}
	root := tree(t, files)
	stop := errors.New("stop")
	var n atomic.Int64
	err := ReadFiles(context.Background(), []string{root}, func(string, []byte, error) error {
		if n.Add(1) == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n.Load() >= 500 {
		t.Errorf("fn's error: got %v after %d files", err, n.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	n.Store(0)
	err = ReadFiles(ctx, []string{root}, func(string, []byte, error) error {
		if n.Add(1) == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n.Load() >= 500 {
		t.Errorf("cancel: got %v after %d files", err, n.Load())
	}

	// Returning the file's own error stops at the first unreadable one.
	missing := filepath.Join(root, "missing")
	err = ReadFiles(context.Background(), []string{missing, root}, func(_ string, _ []byte, err error) error { return err })
	if !errors.Is(err, syscall.ENOENT) {
		t.Errorf("returning the file's error: got %v", err)
	}
}

func TestReadFilesBadOptions(t *testing.T) {
	root := tree(t, map[string]string{"a": "a"})
	noop := func(string, []byte, error) error { return nil }
	if err := ReadFiles(context.Background(), []string{root}, noop, WithEngine("no-such")); err == nil {
		t.Error("unknown engine accepted")
	}
	if err := ReadFiles(context.Background(), []string{root}, noop, WithWorkers(-1)); err == nil {
		t.Error("negative workers accepted")
	}
}

// ReadFiles asks Auto (kind ManyFiles, the paths as given) unless
// WithEngine decides, and under Auto replaces an engine that cannot start
// with raw.
func TestReadFilesAuto(t *testing.T) {
	root := tree(t, map[string]string{"a": "alpha", "d/b": "beta"})
	var got []auto.Workload
	var choice auto.Choice
	steer(t, func(w auto.Workload) auto.Choice {
		got = append(got, w)
		return choice
	})
	count := func(opts ...Option) (int, error) {
		var n atomic.Int64
		err := ReadFiles(context.Background(), []string{root}, func(_ string, _ []byte, err error) error {
			n.Add(1)
			return err
		}, opts...)
		return int(n.Load()), err
	}

	choice = auto.Choice{Engine: "readfile", Workers: 1}
	if n, err := count(); err != nil || n != 2 {
		t.Fatalf("auto: %d files, %v", n, err)
	}
	if len(got) != 1 || got[0].Kind != auto.ManyFiles || len(got[0].Paths) != 1 || got[0].Paths[0] != root || got[0].Resident >= 0 {
		t.Fatalf("decide saw %+v", got)
	}

	// An explicit engine does not ask Auto.
	got = nil
	if n, err := count(WithEngine("pool")); err != nil || n != 2 || len(got) != 0 {
		t.Fatalf("WithEngine: %d files, %v, decide called %d times", n, err, len(got))
	}
	// WithAuto cancels WithEngine.
	if n, err := count(WithEngine("pool"), WithAuto()); err != nil || n != 2 || len(got) != 1 {
		t.Fatalf("WithAuto: %d files, %v, decide called %d times", n, err, len(got))
	}

	// Auto's io_uring cannot start: raw reads instead, silently.
	t.Setenv(features.DisableEnv, "1")
	choice = auto.Choice{Engine: "io_uring", Workers: 1, QueueDepth: 8}
	if n, err := count(); err != nil || n != 2 {
		t.Fatalf("auto io_uring without io_uring: %d files, %v", n, err)
	}
	// The same engine asked for by name is an error saying why.
	_, err := count(WithEngine("io_uring"))
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, batch.ErrNotSupported) || !strings.Contains(err.Error(), features.DisableEnv) {
		t.Fatalf("WithEngine(io_uring) without io_uring: %v", err)
	}
}

// The data passed to fn is reused: a caller keeping it must copy.
func TestReadFilesDataReused(t *testing.T) {
	root := tree(t, map[string]string{"a": "aaaa", "b": "bbbb"})
	var kept [][]byte
	var copied []string
	err := ReadFiles(context.Background(), []string{root}, func(_ string, data []byte, err error) error {
		kept = append(kept, data)
		copied = append(copied, string(data))
		return err
	}, WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(copied)
	if strings.Join(copied, ",") != "aaaa,bbbb" {
		t.Fatalf("got %q", copied)
	}
	// Not a promise, a warning: with the raw engine the first slice now
	// holds the second file.
	if !bytes.Equal(kept[0], kept[1]) {
		t.Logf("buffers were not reused this time")
	}
}
