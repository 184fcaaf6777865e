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
		{"too many workers", []string{"cat", "-e", "pread", "--workers", "5000", good}, 2, "cat: --workers 5000 out of range [1, 1024]"},
		{"queue too deep", []string{"cat", "-e", "io_uring", "--qd", "5000", good}, 2, "cat: --qd 5000 out of range [1, 4096]"},
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

// TestCatQueueDepthOnlyForQueues: pread has one read in flight per
// worker, so a queue depth it does not use does not count against memory.
func TestCatQueueDepthOnlyForQueues(t *testing.T) {
	path, data := catTestFile(t, t.TempDir(), 4097)
	out, errOut, code := runCLI("cat", "-e", "pread", "--qd", "4096", "--bs", "64MiB", path)
	if code != 0 || out != string(data) {
		t.Errorf("exit %d, %d bytes: %s", code, len(out), errOut)
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
	r := newReorder(context.Background(), &out, bs, 8*bs, 4*bs) // a worker's own swaps stay within the window
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
	if !bytes.Equal(out.Bytes(), data) || len(r.pending) != 0 || r.held != 0 {
		t.Errorf("output out of order (%d bytes, %d pending, %d held)", out.Len(), len(r.pending), r.held)
	}
}

// setReorderStall sets reorderStall for one test.
func setReorderStall(t *testing.T, d time.Duration) {
	old := reorderStall
	reorderStall = d
	t.Cleanup(func() { reorderStall = old })
}

// blockAsync calls r.Block in a goroutine and returns where its error
// will arrive.
func blockAsync(r *reorder, off int64, b []byte) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- r.Block(1, off, b) }()
	return ch
}

// waitErr waits for a Block's error, failing after a generous while (a
// Block that does not return at all is the bug).
func waitErr(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Block still waiting after 10s", what)
		return nil
	}
}

// TestReorderStop: a Block waiting for its turn returns Stop's error at
// once, and so does every later Block.
func TestReorderStop(t *testing.T) {
	setReorderStall(t, time.Hour) // only Stop may end the wait
	var out bytes.Buffer
	r := newReorder(context.Background(), &out, 4, 8, 0)
	ch := blockAsync(r, 400, []byte("late"))
	stopErr := errors.New("worker 0 failed")
	time.Sleep(10 * time.Millisecond) // let it wait (it returns the error either way)
	r.Stop(stopErr)
	if err := waitErr(t, ch, "after Stop"); err != stopErr {
		t.Errorf("waiting Block returned %v, want %v", err, stopErr)
	}
	if err := r.Block(0, 0, []byte("next")); err != stopErr || out.Len() != 0 {
		t.Errorf("later Block returned %v and wrote %d bytes, want %v and nothing", err, out.Len(), stopErr)
	}
}

// TestReorderContext: a Block waiting for its turn returns when ctx is
// cancelled (an interrupt), without waiting for a stall.
func TestReorderContext(t *testing.T) {
	setReorderStall(t, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	r := newReorder(ctx, &out, 4, 8, 0)
	ch := blockAsync(r, 400, []byte("late"))
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := waitErr(t, ch, "after cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("Block returned %v, want context.Canceled", err)
	}
}

// blockingWriter blocks every Write until release is closed.
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
}

func (w *blockingWriter) Write(b []byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.release
	return len(b), nil
}

// TestReorderSlowWriter: while a write is under way (a slow reader of
// stdout), blocks far ahead keep waiting however long it takes, so that
// memory stays bounded, and Stop is not held up by the write.
func TestReorderSlowWriter(t *testing.T) {
	setReorderStall(t, 5*time.Millisecond)
	w := &blockingWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	r := newReorder(context.Background(), w, 4, 8, 8)
	writer := blockAsync(r, 0, []byte("0000"))
	<-w.entered
	var far []<-chan error
	for i := range 8 {
		far = append(far, blockAsync(r, int64(400+4*i), []byte("late")))
	}
	time.Sleep(100 * time.Millisecond) // twenty stalls' worth
	r.mu.Lock()
	held, stalled := r.held, r.stalled
	r.mu.Unlock()
	if held != 0 || stalled {
		t.Errorf("a slow write made the buffer stall: %d bytes held, stalled %v", held, stalled)
	}
	stopped := make(chan struct{})
	go func() { r.Stop(errors.New("stop")); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waited for the write")
	}
	for _, ch := range far {
		if err := waitErr(t, ch, "after Stop"); err == nil {
			t.Error("a far Block returned nil after Stop")
		}
	}
	close(w.release)
	if err := waitErr(t, writer, "the writer"); err == nil {
		t.Error("the writer returned nil after Stop")
	}
}

// TestReorderStall: when the block at the write position never comes
// (its worker failed) and the engine does not call Stop, the buffer
// stalls once, then takes up to farCap beyond the window at once, so that
// the other workers can hand over their blocks and stop: the waits do not
// add up block after block. Beyond farCap, blocks wait again.
func TestReorderStall(t *testing.T) {
	const stall = 50 * time.Millisecond
	setReorderStall(t, stall)
	var out bytes.Buffer
	// n far blocks of 4 bytes fill window+farCap; n stalls of 50ms
	// would take 2s.
	const n = 40
	r := newReorder(context.Background(), &out, 4, 8, 4*n-8)
	t0 := time.Now()
	for i := range n {
		if err := waitErr(t, blockAsync(r, int64(400+4*i), []byte("late")), "far block"); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(t0); took > n*stall/4 {
		t.Errorf("%d far blocks took %v: the stalls add up", n, took)
	}
	if len(r.pending) != n || out.Len() != 0 {
		t.Errorf("want the far blocks buffered after a stall")
	}
	// The cap is full: the next far block waits again, stall or not.
	ch := blockAsync(r, 4000, []byte("more"))
	select {
	case err := <-ch:
		t.Fatalf("a block beyond the cap was taken (%v)", err)
	case <-time.After(4 * stall):
	}
	r.Stop(errors.New("stop"))
	waitErr(t, ch, "after Stop")
}

// TestCatFileShrinks: a file truncated while cat reads it with several
// workers gives the error at once, not after a wait per block in flight.
// (The engines tell the reorder buffer that the run stopped through
// engine.Stopper; until they all do, the buffer's single stall bounds it.)
func TestCatFileShrinks(t *testing.T) {
	e, err := engine.Lookup("io_uring")
	if err != nil {
		t.Skip("no io_uring engine registered")
	}
	path, _ := catTestFile(t, t.TempDir(), 8<<20)
	job := engine.Job{Path: path, Pattern: engine.Sequential, BlockSize: 4096, Workers: 2, QueueDepth: 128}
	pr, err := e.Prepare(job)
	if errors.Is(err, engine.ErrNotSupported) {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// Worker 0 (the first half) blocks in its first write; once worker 1
	// (the second half) waits far ahead with blocks in flight, the file
	// is truncated to one block and the write let go: worker 0 then hits
	// the end of the file.
	out := &blockingWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	// A window of 1 MiB (cat's is 64 MiB, for files of gigabytes).
	r := newReorder(context.Background(), out, 4096, 1<<20, catFarCap(job, 128))
	done := make(chan error, 1)
	go func() { done <- r.run(pr, path) }()
	<-out.entered
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.mu.Lock()
		waiting := r.waiting
		r.mu.Unlock()
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			close(out.release)
			t.Fatalf("worker 1 never waited: %v", waitErr(t, done, "the run"))
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	close(out.release)
	err = waitErr(t, done, "the run")
	t.Logf("the error came %v after the truncation", time.Since(t0))
	if took := time.Since(t0); took > time.Second {
		t.Errorf("the error came %v after the truncation, want within 1s", took)
	}
	if !errors.Is(err, engine.ErrChanged) {
		t.Errorf("err %v, want ErrChanged", err)
	}
}

// notifyRun tells when Run has returned.
type notifyRun struct {
	engine.Prepared
	ran chan struct{}
}

func (n notifyRun) Run(ctx context.Context, sink engine.Sink) (*engine.Stats, error) {
	defer close(n.ran)
	return n.Prepared.Run(ctx, sink)
}

// TestCatStuckWrite: interrupted while a write to stdout cannot finish (its
// reader does not read), cat returns at once, saying so, instead of
// waiting for the reader; the engine, still writing from its buffer, is
// left open.
func TestCatStuckWrite(t *testing.T) {
	e, _ := engine.Lookup("pread")
	path, _ := catTestFile(t, t.TempDir(), 1<<20)
	job := engine.Job{Path: path, Pattern: engine.Sequential, BlockSize: 4096, Workers: 2}
	pr, err := e.Prepare(job)
	if err != nil {
		t.Fatal(err)
	}
	run := notifyRun{pr, make(chan struct{})}
	out := &blockingWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- catFile(ctx, run, job, 1, out) }()
	<-out.entered
	cancel()
	err = waitErr(t, done, "cat")
	if !errors.Is(err, errStuckWrite) || !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want errStuckWrite (a cancellation)", err)
	}
	close(out.release)
	<-run.ran
	pr.Close()
}
