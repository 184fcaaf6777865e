package batch

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/iopath/iopath/internal/defaults"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// The pool engine: Job.Workers goroutines (DefaultPoolWorkers when 0),
// each calling os.ReadFile on the paths the feed hands it. It measures
// what plain Go concurrency buys over the sequential baseline, with every
// cost os.ReadFile pays (see readfile.go).
func init() { Register(poolEngine{}) }

// DefaultPoolWorkers is the pool engine's goroutines when Job.Workers is 0.
const DefaultPoolWorkers = defaults.PoolWorkers

type poolEngine struct{}

func (poolEngine) Name() string { return "pool" }

func (poolEngine) Run(ctx context.Context, job Job, fn Func) (*Stats, error) {
	workers := job.Workers
	if workers == 0 {
		workers = DefaultPoolWorkers
	}
	st, err := runReaders(ctx, "pool", &job, workers, func() pathReader { return &osReader{limit: job.pseudoLimit()} }, fn)
	st.Notes = append(st.Notes, osReadFileNote)
	return st, err
}

// pathReader reads one whole file. The returned data may alias a buffer of
// the reader's that the next call reuses. Errors are *fs.PathError naming
// path. Each worker has its own pathReader.
type pathReader interface {
	// unsized: the feed found the file on a pseudo-filesystem; it is
	// read until a read returns 0, up to Job.PseudoLimit.
	read(path string, unsized bool) ([]byte, error)
	// syscalls is how many system calls this reader has made so far at
	// its own call sites (0 for readers that do not count).
	syscalls() int64
	// release gives back the reader's buffers when its worker ends.
	release()
}

// dirReader is a pathReader that can open the files of a directory
// relative to it. Before a file whose directory differs from the last
// file's, and before the first file of each chunk, the worker calls
// enterDir with that directory and how many files in a row the feed knows
// to be in it (item.run); the following reads are of paths in dir until
// the next enterDir.
type dirReader interface {
	enterDir(dir string, run int)
}

// dirOf is the directory part of path as the worker hands it to
// enterDir: "." for a bare name, "/" for a file in the root.
func dirOf(path string) string {
	switch i := strings.LastIndexByte(path, '/'); {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	default:
		return path[:i]
	}
}

// runReaders is the loop the readfile, pool and raw engines share: it
// feeds the job's paths to workers goroutines (cut to the open-file budget,
// see nofileBudget), each reading with its own pathReader, and delivers
// each file to fn. One worker runs in the caller's goroutine.
//
// It returns fn's first error, else ctx's error if ctx was cancelled (the
// feed may then have been cut short), else nil; a panic in fn stops the
// workers as an error does and is raised again on the caller's goroutine
// once they have all ended. After an error or a
// cancellation no new file is started; a worker already inside a read
// finishes it but, unless it was past its last check, does not deliver it.
// Every goroutine it starts has ended when it returns, and every fd it
// opened is closed.
func runReaders(ctx context.Context, name string, job *Job, workers int, newReader func() pathReader, fn Func) (*Stats, error) {
	fn, panicked := guard(fn)
	// Deferred first, so that it runs last: after the workers have ended
	// and the feed has stopped.
	defer panicked.Raise()
	st := &Stats{}
	if budget, note := nofileBudget(name, workers); budget < workers {
		workers = budget
		st.Notes = append(st.Notes, note)
	}
	var lat *latencyRecorder
	if job.Latency {
		metrics.InitClock()
		st.Lat = metrics.NewHistogram()
		lat = &latencyRecorder{h: st.Lat}
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A list of paths is claimed by the workers themselves (listFeed); a
	// walk needs the feed's producer goroutine.
	var (
		feed *feed
		list *listFeed
	)
	if job.walk {
		feed = newFeed(ctx, job)
		defer feed.stop()
	} else {
		list = &listFeed{paths: job.Paths}
	}

	var (
		errOnce sync.Once
		fnErr   error
		mu      sync.Mutex
	)
	fail := func(err error) {
		errOnce.Do(func() { fnErr = err })
		cancel()
	}
	done := ctx.Done()

	work := func() {
		r := newReader()
		var ws Stats
		var lb latencyBatch
		var f File // handed to fn, which may not keep it
		dr, _ := r.(dirReader)
		lastDir, inDir := "", false
		next := func() ([]item, bool) { return feed.next() }
		if list != nil {
			var pfs pseudoDirs // this worker's statfs cache
			var buf []item     // this worker's chunk, reused
			next = func() (chunk []item, ok bool) {
				chunk, ok = list.next(buf, &pfs)
				buf = chunk
				return chunk, ok
			}
		}
		defer func() {
			r.release() // may make calls (closing a directory)
			ws.Syscalls = r.syscalls()
			if lat != nil {
				lat.flush(&lb)
			}
			mu.Lock()
			st.Files += ws.Files
			st.Errors += ws.Errors
			st.Bytes += ws.Bytes
			st.Syscalls += ws.Syscalls
			mu.Unlock()
		}()
		for {
			chunk, ok := next()
			if !ok {
				return
			}
			// Yield between chunks (a chunk is at most chunkSize files,
			// well under 10 ms when cached). A worker that never blocks
			// keeps one scheduling tick; after 10 ms of it sysmon
			// preempts it, and since a worker is nearly always inside a
			// system call, preemption means taking its P away: the
			// worker then moves to another thread on its next return,
			// and sysmon, having retaken a P, polls every 20 µs. A yield
			// starts a new tick at the cost of one trip through the
			// scheduler.
			runtime.Gosched()
			// A new chunk tells the reader its run again: the last
			// chunk may have ended a few files into this directory.
			inDir = false
			for _, it := range chunk {
				select {
				case <-done:
					return
				default:
				}
				f = File{Path: it.path, Err: it.err}
				if dr != nil && it.err == nil {
					if dir := dirOf(it.path); !inDir || dir != lastDir {
						dr.enterDir(dir, int(it.run))
						lastDir, inDir = dir, true
					}
				}
				if it.err == nil {
					var t0 int64
					if lat != nil {
						t0 = metrics.Ticks()
					}
					f.Data, f.Err = r.read(it.path, it.unsized)
					if lat != nil && f.Err == nil {
						lb.add(lat, metrics.Ticks()-t0)
					}
				}
				// A file read while another worker failed or ctx
				// was cancelled is not delivered.
				select {
				case <-done:
					return
				default:
				}
				if f.Err != nil {
					f.Data = nil
					ws.Errors++
				}
				ws.Files++
				ws.Bytes += int64(len(f.Data))
				if err := fn(&f); err != nil {
					fail(err)
					return
				}
			}
		}
	}

	if workers <= 1 {
		work()
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work()
			}()
		}
		wg.Wait()
	}
	if fnErr != nil {
		return st, fnErr
	}
	if err := parent.Err(); err != nil {
		return st, err
	}
	return st, nil
}

// latencyRecorder is one histogram shared by a run's workers. A histogram
// costs about 230 KB, too much for one per worker at 128 workers, so each
// worker batches its samples and adds them under the lock.
type latencyRecorder struct {
	mu sync.Mutex
	h  *metrics.Histogram
}

type latencyBatch struct {
	n     int
	ticks [64]int64
}

func (b *latencyBatch) add(r *latencyRecorder, d int64) {
	b.ticks[b.n] = d
	b.n++
	if b.n == len(b.ticks) {
		r.flush(b)
	}
}

func (r *latencyRecorder) flush(b *latencyBatch) {
	if b.n == 0 {
		return
	}
	r.mu.Lock()
	for _, d := range b.ticks[:b.n] {
		r.h.RecordTicks(d)
	}
	r.mu.Unlock()
	b.n = 0
}

// nofileReserve is how many descriptors nofileBudget leaves for everything
// that is not an engine's file: the walk (one directory at a time), the
// caller's Func, the runtime, the test harness.
const nofileReserve = 16

// nofileBudget is how many files an engine may hold open at once without
// running into EMFILE: the soft RLIMIT_NOFILE less the descriptors already
// open (counted in /proc/self/fd) less nofileReserve, at least 1. When it
// is below want, note says so for Stats.Notes. Go raises the soft limit to
// the hard one at start-up, so this only bites under a low hard limit or a
// program that lowered its own.
func nofileBudget(engine string, want int) (budget int, note string) {
	if want <= 1 {
		return want, "" // the budget is at least 1
	}
	var rl sys.Rlimit
	if err := sys.Getrlimit(sys.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == sys.RLIM_INFINITY || rl.Cur > 1<<30 {
		return want, ""
	}
	open := openFDs()
	budget = int(rl.Cur) - open - nofileReserve
	if budget < 1 {
		budget = 1
	}
	if budget >= want {
		return want, ""
	}
	return budget, fmt.Sprintf("%s: %d files in flight cut to %d (RLIMIT_NOFILE soft limit %d, %d fds open, %d kept in reserve)",
		engine, want, budget, rl.Cur, open, nofileReserve)
}

// openFDs counts this process's open descriptors, not counting the one
// used to list them; when /proc is not there it guesses 3 + a few for the
// runtime.
func openFDs() int {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 8
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(1024)
		n += len(names)
		if err != nil || len(names) == 0 {
			break
		}
	}
	return n - 1
}
