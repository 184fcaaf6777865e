package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/engine"
)

func catTestFile(t *testing.T, dir string, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(uint64(size), 7))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(dir, fmt.Sprintf("cat%d", size))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// runCLI runs iopath with args and returns stdout, stderr and the exit code.
func runCLI(args ...string) (string, string, int) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	code := exitCode(err, &stderr)
	return stdout.String(), stderr.String(), code
}

func TestCatEveryEngine(t *testing.T) {
	dir := t.TempDir()
	for _, name := range engine.Names() {
		e, _ := engine.Lookup(name)
		if e.Caps().NoData {
			continue
		}
		for _, size := range []int{0, 4097, 1<<20 + 1} {
			path, data := catTestFile(t, dir, size)
			for _, flags := range [][]string{
				{"--bs", "4k"},
				{"--bs", "64KiB", "--workers", "3", "--qd", "8"},
			} {
				t.Run(fmt.Sprintf("%s/%d/%s", name, size, strings.Join(flags, "")), func(t *testing.T) {
					args := append([]string{"cat", "-e", name}, flags...)
					out, errOut, code := runCLI(append(args, path)...)
					if code != 0 {
						t.Fatalf("exit %d: %s", code, errOut)
					}
					if out != string(data) {
						t.Fatalf("output differs from the file (%d bytes, want %d)", len(out), len(data))
					}
					if errOut != "" && !strings.Contains(errOut, "falling back to pread") {
						t.Errorf("unexpected stderr: %q", errOut)
					}
				})
			}
		}
	}
}

func TestCatConcatenates(t *testing.T) {
	dir := t.TempDir()
	a, da := catTestFile(t, dir, 4097)
	b, db := catTestFile(t, dir, 0)
	c, dc := catTestFile(t, dir, 1<<20+1)
	want := string(da) + string(db) + string(dc) + string(da)
	for _, name := range []string{"pread", "mmap", "readv"} {
		out, errOut, code := runCLI("cat", "-e", name, "--workers", "2", "--bs", "4k", a, b, c, a)
		if code != 0 || out != want {
			t.Errorf("%s: exit %d, %d bytes (want %d): %s", name, code, len(out), len(want), errOut)
		}
	}
}

func TestCatErrors(t *testing.T) {
	dir := t.TempDir()
	good, _ := catTestFile(t, dir, 10)
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing file", []string{"cat", good, missing}, 1, missing},
		{"directory", []string{"cat", dir}, 1, dir},
		{"unknown engine", []string{"cat", "-e", "nope", good}, 2, `unknown engine "nope"`},
		{"null engine", []string{"cat", "-e", "null", good}, 2, "null engine delivers no data"},
		{"no file", []string{"cat"}, 2, "no file given"},
		{"stdin", []string{"cat", "-"}, 2, "stdin"},
		{"bad size", []string{"cat", "--bs", "4q", good}, 2, "4q"},
		{"bad workers", []string{"cat", "--workers", "0", good}, 2, "workers"},
		{"bad block size", []string{"cat", "--bs", "100", good}, 2, "block size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "iopath: ") || !strings.Contains(errOut, tt.msg) {
				t.Errorf("stderr %q: want one line naming %q", errOut, tt.msg)
			}
		})
	}
}

func TestCatFallsBack(t *testing.T) {
	e, err := engine.Lookup("io_uring")
	if err != nil {
		t.Skip("no io_uring engine registered")
	}
	t.Setenv("IOPATH_DISABLE_IO_URING", "1")
	dir := t.TempDir()
	path, data := catTestFile(t, dir, 4097)
	if pr, err := e.Prepare(engine.Job{Path: path}); err == nil {
		pr.Close()
		t.Fatal("the io_uring engine does not honour IOPATH_DISABLE_IO_URING at Prepare")
	} else if !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("Prepare: %v", err)
	}
	out, errOut, code := runCLI("cat", "-e", "io_uring", path, path)
	if code != 0 || out != string(data)+string(data) {
		t.Fatalf("exit %d, %d bytes: %s", code, len(out), errOut)
	}
	if !strings.HasPrefix(errOut, "iopath: cat: io_uring not supported (") ||
		!strings.HasSuffix(errOut, "); falling back to pread\n") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q: want one fallback line", errOut)
	}
}

type epipeWriter struct{ n int }

func (w *epipeWriter) Write(b []byte) (int, error) {
	if w.n == 0 {
		return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	}
	w.n--
	return len(b), nil
}

func TestCatClosedPipeIsQuiet(t *testing.T) {
	dir := t.TempDir()
	path, _ := catTestFile(t, dir, 1<<20)
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"cat", "--bs", "4k", "--workers", "2", path}, strings.NewReader(""), &epipeWriter{n: 3}, &stderr)
	if err != nil || stderr.Len() != 0 {
		t.Errorf("got %v, stderr %q; want a quiet end", err, stderr.String())
	}
}

// TestReorder delivers blocks out of order from several goroutines with a
// small window, so that some of them wait for their turn.
func TestReorder(t *testing.T) {
	const bs, nblk = 16, 200
	data := make([]byte, bs*nblk)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var out bytes.Buffer
	r := newReorder(&out, bs, 8*bs) // a worker's own swaps stay within the window
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() { // worker w delivers every 4th block, in reverse pairs
			defer wg.Done()
			var mine []int
			for i := w; i < nblk; i += 4 {
				mine = append(mine, i)
			}
			for j := 0; j+1 < len(mine); j += 2 {
				mine[j], mine[j+1] = mine[j+1], mine[j]
			}
			for _, i := range mine {
				if err := r.Block(w, int64(i*bs), data[i*bs:(i+1)*bs]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if !bytes.Equal(out.Bytes(), data) || len(r.pending) != 0 {
		t.Errorf("output out of order (%d bytes, %d pending)", out.Len(), len(r.pending))
	}
}

// TestReorderStall checks that a block beyond the window is let through
// when nothing else makes progress (the worker holding the next block has
// failed), instead of deadlocking.
func TestReorderStall(t *testing.T) {
	old := reorderStall
	reorderStall = 10 * time.Millisecond
	defer func() { reorderStall = old }()
	var out bytes.Buffer
	r := newReorder(&out, 4, 8)
	if err := r.Block(1, 400, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if len(r.pending) != 1 || out.Len() != 0 {
		t.Errorf("want the far block buffered after a stall")
	}
}
