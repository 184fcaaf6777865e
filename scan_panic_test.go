package iopath

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testenv"
	"go.uber.org/goleak"
)

// fnPanic is what the test fns panic with.
type fnPanic struct{ n int }

// scanRecover runs Scan with a fn that panics on its second call (or its
// first, for a one-block file) and returns what Scan's caller recovered.
func scanRecover(path string, opts []Option) (r any, err error) {
	defer func() { r = recover() }()
	var calls atomic.Int64
	err = Scan(context.Background(), path, func(off int64, b []byte) error {
		if c := calls.Add(1); c >= 2 || len(b) < 64<<10 {
			panic(fnPanic{int(c)})
		}
		return nil
	}, opts...)
	return nil, err
}

// collect runs the garbage collector and waits until the finalizers it
// queued have run, so that a finalizer that crashes the process (the
// runtime.Pinner leak check) does so within the test.
func collect(t *testing.T) {
	t.Helper()
	for range 2 {
		runtime.GC()
	}
	done := make(chan struct{})
	x := new([4]int64)
	runtime.SetFinalizer(x, func(*[4]int64) { close(done) })
	x = nil
	runtime.GC()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard, not a measurement
		t.Fatal("finalizers did not run")
	}
}

// A panic in fn reaches Scan's caller, on every path, after every
// goroutine has ended, every descriptor is closed, and every read in
// flight is reaped: no goroutine or descriptor leaks, and no buffer stays
// pinned for the runtime.Pinner leak check to find.
func TestScanPanicInFn(t *testing.T) {
	defer goleak.VerifyNone(t)
	testenv.CheckFDs(t)
	dir := t.TempDir()
	path := writeFile(t, dir, content(4<<20+123, 9))
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers-%d", workers), func(t *testing.T) {
			forEngines(t, append([]string{""}, scanEngines...), func(t *testing.T, e string, ordered bool) {
				opts := []Option{WithWorkers(workers), WithBlockSize(64 << 10)}
				if e != "" {
					opts = append(opts, WithEngine(e))
				}
				if ordered {
					opts = append(opts, WithOrdered())
				}
				r, err := scanRecover(path, opts)
				skipUnsupported(t, err)
				if _, ok := r.(fnPanic); !ok {
					t.Fatalf("workers %d: recovered %v (err %v), want fn's panic", workers, r, err)
				}
				collect(t)
			})
		})
	}
	// A file that reports no size is read on the calling goroutine.
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("proc-ordered-%v", ordered), func(t *testing.T) {
			var opts []Option
			if ordered {
				opts = append(opts, WithOrdered())
			}
			r, err := scanRecover("/proc/self/status", opts)
			if _, ok := r.(fnPanic); !ok {
				t.Fatalf("recovered %v (err %v), want fn's panic", r, err)
			}
		})
	}
	collect(t)
}
