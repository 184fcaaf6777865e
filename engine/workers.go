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
	return firstError(errs)
}

// firstError returns the first error that is not a context error, else the
// first context error: a worker's real failure explains the others'
// cancellation.
func firstError(errs []error) error {
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

// readFile is the measured phase the synchronous engines share: open the
// job's file, plan its blocks, run worker once per worker (each in its own
// goroutine), and close the file. The stats are returned also on error.
func readFile(ctx context.Context, job *Job, worker func(ctx context.Context, f *file, p *plan, w int, ws *WorkerStats) error) (*Stats, error) {
	f, err := openFile(job)
	if err != nil {
		return nil, err
	}
	defer f.close()
	p := newPlan(job, f.size)
	st := newStats(job)
	err = runWorkers(ctx, job.Workers, func(ctx context.Context, w int) error {
		return worker(ctx, f, &p, w, &st.Workers[w])
	})
	if err == nil {
		st.Workers[0].Syscalls++
		err = f.checkSize()
	}
	if cerr := f.close(); err == nil {
		err = cerr
	}
	return st, err
}

// prepareJob is the start of every engine's Prepare: defaults, validation,
// and the one-time calibration of the latency clock, so that it is paid in
// setup rather than in the first measured run.
func prepareJob(job Job) (Job, error) {
	job = job.WithDefaults()
	if err := job.Validate(); err != nil {
		return job, err
	}
	if job.Latency {
		metrics.InitClock()
	}
	return job, nil
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
