package advise

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
)

// manyTrial reads a sample of many files through the batch engines.
type manyTrial struct {
	files []sampled
	paths []string
	procs int
	probe *features.Report
	extra []Candidate // measured too (Auto's pick, when it is not a candidate)

	mu sync.Mutex
	// touched is how long a prefix of paths the passes since the last
	// drop may have opened: the feed hands paths out in order, so a pass
	// that delivered n files opened at most n plus those in flight.
	touched int
}

func newManyTrial(inv *Inventory, procs int, probe *features.Report) *manyTrial {
	t := &manyTrial{files: inv.sample, procs: procs, probe: probe}
	t.paths = make([]string, len(t.files))
	for i, f := range t.files {
		t.paths[i] = f.path
	}
	t.touched = len(t.paths)
	return t
}

func (t *manyTrial) kind() Kind { return ManyFiles }

// candidates: readfile (os.ReadFile in sequence, the baseline), pool
// (os.ReadFile on 128 goroutines), raw and io_uring with one worker and
// with GOMAXPROCS.
func (t *manyTrial) candidates() []Candidate {
	c := []Candidate{{"readfile", 1}, {"pool", batch.DefaultPoolWorkers}, {"raw", 1}}
	if t.procs > 1 {
		c = append(c, Candidate{"raw", t.procs})
	}
	c = append(c, Candidate{"io_uring", 1})
	if t.procs > 1 {
		c = append(c, Candidate{"io_uring", t.procs})
	}
	return withExtra(c, t.extra)
}

func (t *manyTrial) open(c Candidate) (passer, error) {
	if c.Engine == "io_uring" && !t.probe.IOURing.Available {
		return nil, &engine.NotSupportedError{What: "io_uring", Reason: t.probe.IOURing.Reason}
	}
	e, err := batch.Lookup(c.Engine)
	if err != nil {
		return nil, err
	}
	return &batchPasser{t: t, e: e, job: batch.Job{Paths: t.paths, Workers: c.Workers}}, nil
}

// warm reads the sample once with the raw engine (one worker, so that the
// files read are exactly a prefix of the sample). If the time runs out
// first, the sample is cut to the files read.
func (t *manyTrial) warm(ctx context.Context, until time.Time) (string, error) {
	e, err := batch.Lookup("raw")
	if err != nil {
		return "", err
	}
	var n, failed atomic.Int64
	var firstErr error
	_, err = batch.Read(ctx, e, batch.Job{Paths: t.paths, Workers: 1}, func(f *batch.File) error {
		if f.Err != nil && failed.Add(1) == 1 {
			firstErr = f.Err // one worker: calls do not overlap
		}
		if n.Add(1)%64 == 0 && time.Now().After(until) {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", err
	}
	if got := n.Load(); got > 0 && failed.Load() == got {
		// A recommendation measured on failed opens would be worthless.
		return "", fmt.Errorf("none of the %d files could be read, for example: %w", got, firstErr)
	}
	if got := int(n.Load()); got < len(t.paths) {
		note := fmt.Sprintf("the sample was cut from %d to the %d files read once in the time the budget gave warming", len(t.paths), got)
		t.files, t.paths = t.files[:got], t.paths[:got]
		t.mu.Lock()
		t.touched = min(t.touched, got)
		t.mu.Unlock()
		if got == 0 {
			return note, errors.New("no file could be read within the budget")
		}
		return note, nil
	}
	return "", nil
}

// drop drops the cached data of the prefix of the sample touched since the
// last drop, or of the whole sample.
func (t *manyTrial) drop(all bool) error {
	t.mu.Lock()
	n := t.touched
	t.touched = 0
	t.mu.Unlock()
	if all {
		n = len(t.paths)
	}
	for _, p := range t.paths[:n] {
		if err := dropSpans(p, nil); err != nil {
			return err
		}
	}
	return nil
}

func (t *manyTrial) residency() (float64, bool) {
	return filesResidency(t.files, 200)
}

// sampleBytes is the total size of the sample.
func (t *manyTrial) sampleBytes() int64 {
	var n int64
	for _, f := range t.files {
		n += f.size
	}
	return n
}

type batchPasser struct {
	t   *manyTrial
	e   batch.Engine
	job batch.Job
}

func (p *batchPasser) close() {}

func (p *batchPasser) pass(ctx context.Context, deadline time.Time) (passResult, error) {
	var (
		files, bytes, errs atomic.Int64
		sum                atomic.Uint64
		stopped            atomic.Bool
		firstErr           atomic.Pointer[error]
	)
	_, err := batch.Read(ctx, p.e, p.job, func(f *batch.File) error {
		if f.Err != nil {
			errs.Add(1)
			e := f.Err
			firstErr.CompareAndSwap(nil, &e)
		} else {
			// Hash every byte, as a program that uses the data would
			// read it; the sum over files does not depend on their order.
			sum.Add(xxh3.Hash(f.Data))
			bytes.Add(int64(len(f.Data)))
		}
		files.Add(1)
		if time.Now().After(deadline) {
			stopped.Store(true)
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	pr := passResult{files: files.Load(), bytes: bytes.Load(), errors: errs.Load(), sum: sum.Load()}
	pr.whole = err == nil && !stopped.Load() && pr.files == int64(len(p.job.Paths))
	if e := firstErr.Load(); e != nil {
		pr.firstErr = *e
	}
	// Files in flight when the pass stopped may have been opened but not
	// delivered: the feed hands each worker chunks of up to 256 paths
	// (and buffers 4), and an io_uring ring has its depth in flight.
	w := max(1, p.job.Workers)
	opened := min(len(p.job.Paths), int(pr.files)+(w+4)*256+batch.DefaultDepth*w)
	p.t.mu.Lock()
	p.t.touched = max(p.t.touched, opened)
	p.t.mu.Unlock()
	return pr, err
}
