package batch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// item is one path for an engine to read, or an error the walk met there
// (an unreadable directory), to be delivered as that path's File.
type item struct {
	path string
	err  error
	// unsized: the file is on a pseudo-filesystem (sys.PseudoFS), whose
	// sizes mean nothing and whose reads may end short anywhere: it is
	// read until a read returns 0, up to Job.PseudoLimit.
	unsized bool
	// run is how many paths, from this one on, the feed knows to be in
	// this one's directory in a row (a list is looked at up to
	// minDirRun ahead); 0 when it does not say. See dirReader.
	run int32
}

// chunkSize is how many paths travel to a worker at once: enough that the
// channel costs nothing per file, few enough that workers share the tail.
const chunkSize = 256

// rampChunk is the size of the chunk that starts after sent paths. Chunks
// start at one path and grow by one every 64 paths up to chunkSize, so that
// a short job still reaches every worker: with 256 at once from the start,
// a pool of 128 workers given 1,000 files kept 4 of them busy. A thousand
// paths make about 200 chunks; the ramp ends after 16,000 paths, having
// cost about 350 extra channel sends.
func rampChunk(sent int) int { return min(chunkSize, 1+sent/64) }

// feed streams a job's paths to workers in chunks. Paths given in the job
// are passed on as files; with walk set, each is walked instead (see
// Read). The producer runs in its own goroutine and never holds more than
// a few chunks, so a million paths cost no more memory than the job's own
// slice.
type feed struct {
	ch     chan []item
	cancel context.CancelFunc
	done   chan struct{}
}

func newFeed(ctx context.Context, job *Job) *feed {
	ctx, cancel := context.WithCancel(ctx)
	f := &feed{ch: make(chan []item, 4), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(f.ch)
		sent := 0
		buf := make([]item, 0, rampChunk(sent))
		emit := func(it item) bool {
			buf = append(buf, it)
			if len(buf) < cap(buf) {
				return true
			}
			select {
			case f.ch <- buf:
				sent += len(buf)
				buf = make([]item, 0, rampChunk(sent))
				return true
			case <-ctx.Done():
				return false
			}
		}
		var w walker
		var pfs pseudoDirs
		for _, p := range job.Paths {
			if !job.walk {
				if !emit(item{path: p, unsized: pfs.in(p)}) {
					return
				}
				continue
			}
			if !w.walk(p, emit) {
				return
			}
		}
		if len(buf) > 0 {
			select {
			case f.ch <- buf:
			case <-ctx.Done():
			}
		}
	}()
	return f
}

// listFeed hands the paths named in a job (no walk) to runReaders'
// workers straight from the job's slice: each worker claims the next
// chunk (sized by rampChunk, as the feed sizes them) with a CAS on a
// shared index, and marks pseudo-files with its own pseudoDirs. There is
// no producer goroutine and no channel, so a worker never parks waiting
// for paths and never wakes a parked producer (each such wake-up was a
// futex call to start an M: about 5% of reading 100k cached files with
// one worker).
type listFeed struct {
	paths []string
	_     [56]byte // pos on a cache line of its own: workers CAS it
	pos   atomic.Int64
	_     [56]byte
}

// next fills buf (reused) with the next chunk of paths; ok is false when
// there are none left.
func (l *listFeed) next(buf []item, pfs *pseudoDirs) (chunk []item, ok bool) {
	for {
		start := l.pos.Load()
		if start >= int64(len(l.paths)) {
			return buf[:0], false
		}
		end := min(start+int64(rampChunk(int(start))), int64(len(l.paths)))
		if !l.pos.CompareAndSwap(start, end) {
			continue
		}
		buf = buf[:0]
		var dir string
		var run int32
		for k := int(start); k < int(end); k++ {
			p := l.paths[k]
			if d := dirOf(p); k == int(start) || d != dir {
				dir, run = d, l.run(k, d)
			} else {
				run = max(run-1, 1)
			}
			buf = append(buf, item{path: p, unsized: pfs.inDir(dir), run: run})
		}
		return buf, true
	}
}

// run is how many paths from the k-th on, up to minDirRun, are in dir.
func (l *listFeed) run(k int, dir string) int32 {
	n := 0
	for n < minDirRun && k+n < len(l.paths) && dirOf(l.paths[k+n]) == dir {
		n++
	}
	return int32(n)
}

// pseudoDirs tells whether a path named in a job is on a pseudo-filesystem
// (sys.PseudoFS) by the filesystem of the directory it is in, with one
// statfs per directory: the last answer is kept, and a list of files
// usually names many in a row from one directory. A file that is itself
// a mount point, or a symlink to another filesystem, is judged by its
// directory: a symlink to a pseudo-file outside one is read as a data file
// (the io_uring engine, whose statx follows it, still sees size 0 for a
// procfs file).
type pseudoDirs struct {
	dir    string
	pseudo bool
	known  bool
}

func (d *pseudoDirs) in(path string) bool { return d.inDir(dirOf(path)) }

// inDir is in for a path whose directory (dirOf) is dir.
func (d *pseudoDirs) inDir(dir string) bool {
	if !d.known || dir != d.dir {
		typ, err := sys.StatfsType(dir)
		// An error (no such directory...) answers false: the engine
		// reports what is wrong with the path.
		d.dir, d.pseudo, d.known = dir, err == nil && sys.PseudoFS(typ), true
	}
	return d.pseudo
}

// ErrNotRegular is the error (inside an *fs.PathError) of a FIFO, socket
// or device found by a directory walk, or reached through a symlink found
// by one: such files are not read, because opening or reading them can
// block forever. It is engine.ErrNotRegular (and iopath.ErrNotRegular):
// the one such value of every package (see internal/sys).
var ErrNotRegular = sys.ErrNotRegular

// next returns the next chunk; ok is false when there are no more.
func (f *feed) next() (chunk []item, ok bool) {
	chunk, ok = <-f.ch
	return chunk, ok
}

// stop ends the producer and waits for it. It is safe to call more than
// once and after the feed is drained.
func (f *feed) stop() {
	f.cancel()
	for range f.ch {
	}
	<-f.done
}

// Read runs engine e over job and calls fn for each file. Paths in the job
// that are directories are walked: every engine first treats the given
// paths as files (so a list of files costs no extra stat), and the
// directories among them — which fail to read with EISDIR — are then
// walked in a second pass. Stats of both passes are added up.
//
// A file on a pseudo-filesystem (procfs, sysfs, debugfs, tracefs,
// configfs, securityfs, cgroup: see sys.PseudoFS), known by the
// filesystem of the directory it is in (a symlink found by the walk, by
// its target's), is read until a read returns 0 bytes and up to
// Job.PseudoLimit, whatever its size says.
func Read(ctx context.Context, e Engine, job Job, fn Func) (*Stats, error) {
	if fn == nil {
		return nil, errors.New("batch: nil Func")
	}
	if err := job.validate(); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var dirs []string
	first := func(f *File) error {
		if f.Err != nil && errors.Is(f.Err, syscall.EISDIR) {
			mu.Lock()
			dirs = append(dirs, f.Path)
			mu.Unlock()
			return nil
		}
		return fn(f)
	}
	job.walk = false
	if job.Archive != "" {
		return e.Run(ctx, job, fn)
	}
	st, err := e.Run(ctx, job, first)
	if err != nil || len(dirs) == 0 {
		if st != nil {
			st.Files -= int64(len(dirs))
			st.Errors -= int64(len(dirs))
		}
		return st, err
	}
	st.Files -= int64(len(dirs))
	st.Errors -= int64(len(dirs))
	job.Paths, job.walk = dirs, true
	st2, err := e.Run(ctx, job, fn)
	if st2 != nil {
		st.add(st2)
	}
	return st, err
}

// add adds o's counts to s.
func (s *Stats) add(o *Stats) {
	s.Files += o.Files
	s.Errors += o.Errors
	s.Bytes += o.Bytes
	s.Syscalls += o.Syscalls
	if o.Lat != nil {
		if s.Lat == nil {
			s.Lat = metrics.NewHistogram()
		}
		s.Lat.Merge(o.Lat)
	}
	for _, n := range o.Notes {
		s.Notes = appendNew(s.Notes, n)
	}
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// validate checks the job's numbers and sets defaults.
func (j *Job) validate() error {
	switch {
	case j.Workers < 0 || j.Workers > MaxWorkers:
		return errors.New("batch: workers out of range [0, 1024]")
	case j.Depth < 0 || j.Depth > MaxDepth:
		return errors.New("batch: depth out of range [0, 4096]")
	case j.BufferSize < 0 || j.BufferSize > 1<<30:
		return errors.New("batch: buffer size out of range [0, 1GiB]")
	case j.PseudoLimit < 0:
		return errors.New("batch: pseudo-file limit is negative (0 means the default)")
	}
	if j.Depth == 0 {
		j.Depth = DefaultDepth
	}
	if j.BufferSize == 0 {
		j.BufferSize = DefaultBufferSize
	}
	return nil
}
