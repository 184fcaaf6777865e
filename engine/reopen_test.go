package engine_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/enginetest"
)

// readAll runs the read engine with 2 workers over path in 4 KiB blocks
// and returns the bytes, assembled by offset.
func readAll(t *testing.T, path string, size int) ([]byte, error) {
	t.Helper()
	e, err := engine.Lookup("read")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Prepare(engine.Job{Path: path, BlockSize: 4 << 10, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := make([]byte, size)
	_, err = p.Run(context.Background(), engine.SinkFunc(func(_ int, off int64, b []byte) error {
		copy(out[off:], b)
		return nil
	}))
	return out, err
}

// The read engine's second worker opens its own descriptor after the path
// was renamed over: it must still read the file the first worker opened
// (through /proc/self/fd), or, without /proc, fail with ErrChanged — never
// mix the two files.
func TestReadReopenReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const size = 64 << 10
	old := bytes.Repeat([]byte("old!"), size/4)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	replace := func(t *testing.T) {
		var once sync.Once
		*engine.TestHookReopen = func(p string) {
			once.Do(func() {
				if err := os.WriteFile(other, bytes.Repeat([]byte("new!"), size/4), 0o644); err != nil {
					t.Error(err)
				}
				if err := os.Rename(other, path); err != nil {
					t.Error(err)
				}
			})
		}
		t.Cleanup(func() { *engine.TestHookReopen = nil })
	}

	t.Run("proc", func(t *testing.T) {
		if _, err := os.Stat("/proc/self/fd"); err != nil {
			t.Skipf("no /proc here: %v", err)
		}
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Fatal(err)
		}
		replace(t)
		got, err := readAll(t, path, size)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, old) {
			t.Errorf("read %q... , want the file opened first (old!old!...)", got[len(got)-8:])
		}
	})

	t.Run("no-proc", func(t *testing.T) {
		defer func(s string) { *engine.ProcSelfFD = s }(*engine.ProcSelfFD)
		*engine.ProcSelfFD = filepath.Join(dir, "no-proc") + "/"
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Fatal(err)
		}
		// The same file: the fallback opens the path and finds it.
		got, err := readAll(t, path, size)
		if err != nil || !bytes.Equal(got, old) {
			t.Fatalf("unchanged file without /proc: %v", err)
		}
		replace(t)
		_, err = readAll(t, path, size)
		if !errors.Is(err, engine.ErrChanged) {
			t.Fatalf("got %v, want an error wrapping ErrChanged", err)
		}
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Path != path {
			t.Errorf("%v: not an *fs.PathError naming %s", err, path)
		}
	})
}

// Without /proc, under a rename loop: each run is one whole version or an
// ErrChanged error (the fallback cannot reach the first file), never a mix.
func TestReadReopenReplacedNoProc(t *testing.T) {
	defer func(s string) { *engine.ProcSelfFD = s }(*engine.ProcSelfFD)
	*engine.ProcSelfFD = filepath.Join(t.TempDir(), "no-proc") + "/"
	e, err := engine.Lookup("read")
	if err != nil {
		t.Fatal(err)
	}
	s := enginetest.NewSwap(t)
	s.Allow = func(err error) bool { return errors.Is(err, engine.ErrChanged) }
	p, err := e.Prepare(engine.Job{Path: s.Path, BlockSize: 16 << 10, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	buf := make([]byte, 2<<20)
	s.Hammer(t, func(got func([]byte, error)) error {
		var mu sync.Mutex
		end := int64(0)
		_, err := p.Run(context.Background(), engine.SinkFunc(func(_ int, off int64, b []byte) error {
			copy(buf[off:], b)
			mu.Lock()
			end = max(end, off+int64(len(b)))
			mu.Unlock()
			return nil
		}))
		if err != nil {
			got(nil, err)
		} else {
			got(buf[:end], nil)
		}
		return nil
	})
}
