package iopath

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/testenv"
)

// capSQE lowers maxSQELen to n for the test and returns the largest read
// length prepared since.
func capSQE(t *testing.T, n int) *atomic.Int64 {
	t.Helper()
	largest := new(atomic.Int64)
	oldMax, oldHook := fileio.MaxSQELen, fileio.TestHookPrep
	fileio.MaxSQELen, testNoInline = n, true
	fileio.TestHookPrep = func(k int) { // called by several rings at once
		for v := largest.Load(); int64(k) > v && !largest.CompareAndSwap(v, int64(k)); v = largest.Load() {
		}
	}
	t.Cleanup(func() { fileio.MaxSQELen, fileio.TestHookPrep, testNoInline = oldMax, oldHook, false })
	return largest
}

// A request larger than one SQE can ask for (4 GiB in the kernel's u32;
// 8 KiB here, lowered) is read in SQEs of at most maxSQELen bytes, the
// rest by the short-read continuation, and still gives every byte and
// io.EOF only at the end of the file.
func TestUringLargeRequestSplit(t *testing.T) {
	testenv.CheckFDs(t)
	const limit = 8 << 10
	data := content(300<<10+77, 31)
	path := writeFile(t, t.TempDir(), data)
	largest := capSQE(t, limit)

	f := openT(t, path, WithEngine("io_uring"), WithQueueDepth(4))
	defer f.Close()
	if f.rings == nil {
		t.Fatal("an io_uring File has no rings")
	}
	reqs := []Request{
		{Off: 0, Buf: make([]byte, 100<<10)},
		{Off: 100<<10 + 5, Buf: make([]byte, 64<<10+3)},
		{Off: 200 << 10, Buf: make([]byte, 200<<10)}, // past the end
		{Off: 7, Buf: make([]byte, limit)},
	}
	err := f.ReadBatch(reqs)
	if err != nil && err != io.EOF {
		t.Fatalf("ReadBatch: %v", err)
	}
	for i, r := range reqs {
		want, werr := wantRead(data, r.Off, len(r.Buf))
		if r.Err != werr || !bytes.Equal(r.Buf[:r.N], want) {
			t.Errorf("request %d: N %d err %v, want N %d err %v", i, r.N, r.Err, len(want), werr)
		}
	}

	got, err := ReadFile(path, WithEngine("io_uring"), WithBlockSize(64<<10), WithWorkers(2))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadFile: %d bytes, %v; want %d bytes", len(got), err, len(data))
	}
	if l := largest.Load(); l == 0 || l > limit {
		t.Errorf("largest read prepared: %d bytes, want 1..%d", l, limit)
	}
}

// failRings injects ring failures for the test: SubmitAndWait fails while
// *submitFails, newRing while *newFails. At the end it closes the
// descriptors of the rings that failed during the test (the real
// SubmitAndWait succeeded, so the kernel has nothing left to do with
// them), keeping them and their pins referenced as ring.fail does.
func failRings(t *testing.T) (submitFails, newFails *bool, injected error) {
	t.Helper()
	submitFails, newFails = new(bool), new(bool)
	injected = errors.New("injected failure")
	before := len(fileio.LeakedRings())
	testNoInline = true
	fileio.TestHookSubmit = func() error {
		if *submitFails {
			return injected
		}
		return nil
	}
	testHookNewRing = func() error {
		if *newFails {
			return injected
		}
		return nil
	}
	t.Cleanup(func() {
		fileio.TestHookSubmit, testHookNewRing, testNoInline = nil, nil, false
		for _, g := range fileio.LeakedRings()[before:] {
			g.CloseLeaked()
		}
	})
	return submitFails, newFails, injected
}

// readBatchGuarded runs f.ReadBatch(reqs), failing the test instead of
// hanging if it never returns.
func readBatchGuarded(t *testing.T, f *File, reqs []Request) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.ReadBatch(reqs) }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute): // a hang guard, not a measurement
		t.Fatal("ReadBatch never returned")
		return nil
	}
}

// A ring that fails with reads in flight is never reused or freed: its
// buffers stay pinned and referenced for good (ReadFileBuf's pooled
// buffer never goes back to the pool), the error says the ring failed,
// and the File goes on with a new ring, or with pread when none can be
// made, without ever waiting for a ring that cannot come.
func TestRingFailure(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(256<<10, 77)
	path := writeFile(t, t.TempDir(), data)
	f := openT(t, path, WithEngine("io_uring"), WithWorkers(1), WithQueueDepth(4))
	defer f.Close()
	submitFails, newFails, injected := failRings(t)
	batch := func() []Request {
		return []Request{{Off: 0, Buf: make([]byte, 64<<10)}, {Off: 100 << 10, Buf: make([]byte, 64<<10)}}
	}
	checkData := func(what string, reqs []Request) {
		t.Helper()
		for i, r := range reqs {
			if r.Err != nil || !bytes.Equal(r.Buf[:r.N], data[r.Off:r.Off+int64(len(r.Buf))]) {
				t.Errorf("%s: request %d: N %d, %v", what, i, r.N, r.Err)
			}
		}
	}

	*submitFails = true
	reqs := batch()
	err := readBatchGuarded(t, f, reqs)
	*submitFails = false
	if !errors.Is(err, injected) || !ringFailed(err) {
		t.Fatalf("ReadBatch with a failing ring: %v", err)
	}
	leaked := fileio.LeakedRings()
	if g := leaked[len(leaked)-1]; !g.Broken() {
		t.Error("the failed ring is not marked broken")
	}

	// The only ring broke and no new one can be made: pread, every time.
	*newFails = true
	for i := range 3 {
		reqs = batch()
		if err := readBatchGuarded(t, f, reqs); err != nil {
			t.Fatalf("ReadBatch %d without rings: %v", i, err)
		}
		checkData("without rings", reqs)
	}
	*newFails = false

	// ReadFileBuf: the pooled buffer a failed ring was reading into is
	// kept, never released to the pool.
	leakedMu.Lock()
	bufs := len(leakedBufs)
	leakedMu.Unlock()
	*submitFails = true
	b, err := ReadFileBuf(path, WithEngine("io_uring"), WithBlockSize(64<<10))
	*submitFails = false
	if b != nil || !ringFailed(err) {
		t.Fatalf("ReadFileBuf with a failing ring: %v", err)
	}
	leakedMu.Lock()
	kept := len(leakedBufs) - bufs
	leakedMu.Unlock()
	if kept != 1 {
		t.Errorf("ReadFileBuf with a failing ring kept %d buffers, want 1", kept)
	}
}

// A File whose rings broke makes a new one when it can.
func TestRingReplaced(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(128<<10, 78)
	path := writeFile(t, t.TempDir(), data)
	f := openT(t, path, WithEngine("io_uring"), WithWorkers(1))
	defer f.Close()
	submitFails, _, _ := failRings(t)
	*submitFails = true
	reqs := []Request{{Off: 0, Buf: make([]byte, 4096)}}
	if err := readBatchGuarded(t, f, reqs); !ringFailed(err) {
		t.Fatalf("ReadBatch with a failing ring: %v", err)
	}
	*submitFails = false
	reqs = []Request{{Off: 4096, Buf: make([]byte, 64<<10)}}
	if err := readBatchGuarded(t, f, reqs); err != nil || !bytes.Equal(reqs[0].Buf, data[4096:4096+64<<10]) {
		t.Fatalf("ReadBatch after a ring broke: %v", err)
	}
	if made := f.rings.Made(); made != 1 {
		t.Errorf("%d rings made after the broken one, want 1", made)
	}
}
