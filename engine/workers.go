package engine

import (
	"context"
	"io/fs"
	"runtime/debug"
	"sync"

	"github.com/iopath/iopath/metrics"
)

// runWorkers runs fn for workers 0..n-1 in their own goroutines and waits.
// The first error cancels the others' context and is returned; a context
// error is returned only when nothing else failed.
func runWorkers(ctx context.Context, n int, fn func(ctx context.Context, w int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, w); err != nil {
				errs[w] = err
				cancel()
			}
		}()
	}
	wg.Wait()
	var ctxErr error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if err == context.Canceled || err == context.DeadlineExceeded {
			if ctxErr == nil {
				ctxErr = err
			}
			continue
		}
		return err
	}
	return ctxErr
}

// newStats returns Stats for job's workers, with histograms when latency is
// recorded.
func newStats(job *Job) *Stats {
	s := &Stats{Workers: make([]WorkerStats, job.Workers)}
	if job.Latency {
		for i := range s.Workers {
			s.Workers[i].Lat = metrics.NewHistogram()
		}
	}
	return s
}

// checkEvery is how many blocks a worker reads between looks at its context.
const checkEvery = 64

// catchFault turns a memory fault in a mapped file (SIGBUS after the file
// shrank, delivered as a panic under debug.SetPanicOnFault) into an error.
// It must be deferred directly, after SetPanicOnFault(true) in the same
// goroutine. Other panics are re-raised.
func catchFault(errp *error, path string) {
	r := recover()
	if r == nil {
		return
	}
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		*errp = &fs.PathError{Op: "read", Path: path, Err: ErrChanged}
		return
	}
	panic(r)
}

// faultsAsErrors sets this goroutine to turn faults into panics and returns
// the function that restores the old setting.
func faultsAsErrors() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}
