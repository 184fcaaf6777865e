package enginetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/testenv"
)

// sinkPanic is what checkPanic's sink panics with.
type sinkPanic struct{ call int64 }

// runRecover runs pr with sink on a goroutine of its own and returns what
// Run returned, or what its caller recovered, failing if it does not
// return within a few seconds; then unblock, if not nil, is called so that
// a hung Run can end before the test cleans up.
func runRecover(t *testing.T, pr engine.Prepared, ctx context.Context, sink engine.Sink, unblock func()) (recovered any, err error) {
	t.Helper()
	type result struct {
		r   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			res.r = recover()
			done <- res
		}()
		_, res.err = pr.Run(ctx, sink)
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-time.After(10 * time.Second): // a hang guard, not a measurement
		if unblock != nil {
			unblock()
			<-done
		}
		t.Fatal("Run hung")
		return nil, nil
	}
}

// checkPanic: a panic in the sink, on a worker's goroutine or the
// caller's, reaches Run's caller with its value, once every worker has
// stopped and the file is closed (Run's fd and goroutine checks at the end
// of the suite see the rest), and the Prepared is still usable.
func checkPanic(t *testing.T, e engine.Engine, big *file) {
	for _, w := range []int{1, 3} {
		for _, pat := range patterns {
			job := engine.Job{Path: big.path, BlockSize: 4 << 10, Workers: w, Pattern: pat, QueueDepth: 8}
			t.Run(jobName(big, &job), func(t *testing.T) {
				pr := prepare(t, e, job)
				fds := testenv.OpenFDs(t)
				var calls atomic.Int64
				r, err := runRecover(t, pr, context.Background(), engine.SinkFunc(func(int, int64, []byte) error {
					if c := calls.Add(1); c >= 3 {
						panic(sinkPanic{c})
					}
					return nil
				}), nil)
				if _, ok := r.(sinkPanic); !ok {
					t.Fatalf("Run's caller recovered %v (Run returned %v), want the sink's panic", r, err)
				}
				if n := testenv.OpenFDs(t); n != fds {
					t.Errorf("%d file descriptors open after the panic, %d before", n, fds)
				}
				// The engine is still usable.
				checkRun(t, pr, big, job)
			})
		}
	}
}

// checkRun runs pr once more and checks the bytes.
func checkRun(t *testing.T, pr engine.Prepared, f *file, job engine.Job) {
	t.Helper()
	c := newChecker(f, job.BlockSize, false)
	c.noData = true // the bytes were checked elsewhere; this checks the run
	if _, err := pr.Run(context.Background(), c); err != nil {
		t.Fatalf("Run after a panic: %v", err)
	}
	if got := c.bytes.Load(); got != f.size {
		t.Errorf("Run after a panic delivered %d bytes, want %d", got, f.size)
	}
}

// blockUntilStop is a Sink whose Block waits until Stop, as a reorder
// buffer waits for a block another worker holds, and then returns Stop's
// error. It counts its Stop calls.
type blockUntilStop struct {
	once    sync.Once
	stopped chan struct{}
	err     error
	stops   atomic.Int64
	blocked atomic.Int64
	pass    bool // deliver without waiting (a run that should never Stop)
}

func newBlockUntilStop() *blockUntilStop {
	return &blockUntilStop{stopped: make(chan struct{})}
}

func (s *blockUntilStop) Block(int, int64, []byte) error {
	if s.pass {
		return nil
	}
	s.blocked.Add(1)
	<-s.stopped
	return s.err
}

func (s *blockUntilStop) Stop(err error) {
	s.stops.Add(1)
	s.once.Do(func() {
		s.err = err
		close(s.stopped)
	})
}

var (
	errWorker = errors.New("worker failed (injected)")
	errHung   = errors.New("Run hung: stopped by the test")
)

// stopBound is how soon after a failure a run must end: the issue's
// bound for an error in one worker ending the whole operation.
const stopBound = time.Second

// checkStop: a sink that blocks until Stop (engine.Stopper) is stopped
// when another worker fails or ctx is cancelled, so that Run returns the
// failure within stopBound, and it is never stopped in a run that
// succeeds.
func checkStop(t *testing.T, e engine.Engine, big *file) {
	for _, w := range []int{2, 3} {
		job := engine.Job{Path: big.path, BlockSize: 4 << 10, Workers: w, QueueDepth: 4}
		t.Run("worker-fails/"+jobName(big, &job), func(t *testing.T) {
			// FailAfter lets one block through to the blocking sink, whose
			// worker then waits; the next block, from another worker,
			// fails that worker.
			pr := prepare(t, FailAfter(e, e.Name()+"-failing", int64(job.BlockSize), errWorker), job)
			s := newBlockUntilStop()
			start := time.Now()
			r, err := runRecover(t, pr, context.Background(), s, func() { s.Stop(errHung) })
			took := time.Since(start)
			if r != nil {
				t.Fatalf("Run panicked: %v", r)
			}
			if !errors.Is(err, errWorker) {
				t.Fatalf("Run returned %v, want the failed worker's error", err)
			}
			if took > stopBound {
				t.Errorf("Run returned %v after the failure, want within %v", took, stopBound)
			}
			if n := s.stops.Load(); n != 1 {
				t.Errorf("Stop called %d times, want once", n)
			}
			if s.blocked.Load() == 0 {
				t.Error("no block reached the sink: the test tested nothing")
			}
		})
	}
	for _, w := range []int{1, 3} {
		job := engine.Job{Path: big.path, BlockSize: 4 << 10, Workers: w, QueueDepth: 4}
		t.Run("cancel/"+jobName(big, &job), func(t *testing.T) {
			pr := prepare(t, e, job)
			s := newBlockUntilStop()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for s.blocked.Load() == 0 {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
			r, err := runRecover(t, pr, ctx, s, func() { s.Stop(errHung) })
			if r != nil {
				t.Fatalf("Run panicked: %v", r)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run returned %v, want context.Canceled", err)
			}
			if n := s.stops.Load(); n != 1 {
				t.Errorf("Stop called %d times, want once", n)
			}
		})
		t.Run("success/"+jobName(big, &job), func(t *testing.T) {
			pr := prepare(t, e, job)
			s := newBlockUntilStop()
			s.pass = true
			if _, err := pr.Run(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if n := s.stops.Load(); n != 0 {
				t.Errorf("Stop called %d times in a run that succeeded", n)
			}
		})
	}
}
