package engine

import (
	"context"
	"fmt"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// mmapEngine maps the file and hands the sink sub-slices of the mapping,
// without a copy. Each worker maps its own region with MAP_SHARED and
// PROT_READ: for the sequential pattern its share, from the page floor of
// its first block to the end of its last; for the random pattern, whose
// blocks are spread over the whole file, the whole file (as each of fio's
// jobs maps its own). It advises SEQUENTIAL+WILLNEED or RANDOM.
//
// With Job.KeepMapped a worker populates its mapping when it makes it
// (MADV_POPULATE_READ, see populate) and keeps it from one Run to the next
// while Run opens the same file (device and inode) at the same size, as
// fio maps once and loops over the mapping: the first touches of a fresh
// mapping's pages cost far more than later ones on some machines
// (docs/engines.md), and a pass that remapped would measure that instead
// of reading. A mapping shows the page cache of its inode, so a kept one
// reads what a new one would; a file replaced or resized is mapped again,
// and one that fails (SIGBUS) is dropped. Close unmaps what is kept.
// Without it each Run maps and unmaps.
//
// With Job.CopyMapped each block is first copied into a per-worker buffer
// (fio's mmap semantics), so a sink that reads nothing still pays for the
// data; blocks of 64 KiB and more are copied with the routine measured
// fastest on the machine (fileio.MappedCopy: REP MOVSB or memmove). Latency is the time to deliver a block: the page faults happen when
// the block is first touched, which is in the sink (or in the copy).
//
// A file truncated under the mapping raises SIGBUS when a page past its new
// end is touched; each worker turns that fault into an error wrapping
// ErrChanged. O_DIRECT does not apply: a mapping always goes through the
// page cache. A file of unknown size (a pseudo-file) cannot be mapped:
// Run returns an error wrapping ErrNotSupported for it (see Prepared.Run).
type mmapEngine struct{}

func init() { register(mmapEngine{}) }

func (mmapEngine) Name() string { return "mmap" }
func (mmapEngine) Caps() Caps   { return Caps{} }

func (mmapEngine) Prepare(job Job) (Prepared, error) {
	job, err := prepareJob(job)
	if err != nil {
		return nil, err
	}
	if job.Direct {
		return nil, &NotSupportedError{What: "O_DIRECT with mmap", Reason: "a mapping always goes through the page cache"}
	}
	r := &mmapRun{job: job, maps: make([]mapping, job.Workers)}
	if job.CopyMapped {
		a, err := newArena(job.Workers, job.BlockSize, true)
		if err != nil {
			return nil, err
		}
		r.bufs = a
	}
	return r, nil
}

type mmapRun struct {
	job  Job
	bufs *arena    // per-worker copy buffers; nil unless CopyMapped
	maps []mapping // per worker, kept between Runs (each worker its own)
}

// mapping is a worker's mapping of [start, start+len(m)) of the file
// with device dev, inode ino and size size.
type mapping struct {
	m        []byte
	start    int64
	dev, ino uint64
	size     int64
}

// unmap releases m, if any.
func (m *mapping) unmap() error {
	if m.m == nil {
		return nil
	}
	err := sys.Munmap(m.m)
	*m = mapping{}
	return err
}

func (r *mmapRun) Close() error {
	var err error
	for i := range r.maps {
		if uerr := r.maps[i].unmap(); err == nil {
			err = uerr
		}
	}
	r.bufs.free()
	return err
}

func (r *mmapRun) Run(ctx context.Context, sink Sink) (*Stats, error) {
	return readFile(ctx, &r.job, sink, sizeOnly("mmap", "to map"), func(ctx context.Context, f *file, p *plan, w int, ws *WorkerStats) error {
		return r.worker(ctx, f, p, w, ws, sink)
	})
}

// worker maps worker w's region, or keeps the mapping of the last Run
// (see mmapEngine), and delivers its blocks. A SIGBUS while touching the
// mapping (here or in the sink) becomes an error, and the mapping is
// dropped.
func (r *mmapRun) worker(ctx context.Context, f *file, p *plan, w int, ws *WorkerStats, sink Sink) (err error) {
	c := p.cursor(w)
	if c.remaining() == 0 {
		return nil
	}
	// The region: the whole file for the random pattern, else the share.
	start, end := int64(0), p.size
	if !p.random {
		lo, hi := p.share(w)
		start, end = lo*p.bs, min(hi*p.bs, p.size)
	}
	ps := int64(sys.PageSize())
	start = start / ps * ps
	kept := &r.maps[w]
	if kept.m == nil || kept.dev != f.dev || kept.ino != f.ino || kept.size != f.size ||
		kept.start != start || int64(len(kept.m)) != end-start {
		if uerr := kept.unmap(); uerr != nil {
			return f.readErr(start, fmt.Errorf("munmap: %w", uerr))
		}
		ws.Syscalls++
		m, err := sys.Mmap(f.fd, start, int(end-start), sys.PROT_READ, sys.MAP_SHARED)
		if err != nil {
			return f.readErr(start, fmt.Errorf("mmap: %w", err))
		}
		*kept = mapping{m: m, start: start, dev: f.dev, ino: f.ino, size: f.size}
		if p.random {
			ws.Syscalls++
			sys.Madvise(m, sys.MADV_RANDOM)
		} else {
			ws.Syscalls += 2
			sys.Madvise(m, sys.MADV_SEQUENTIAL)
			sys.Madvise(m, sys.MADV_WILLNEED)
		}
		if r.job.KeepMapped {
			ws.Syscalls += populate(ctx, m)
		}
	}
	m := kept.m
	restore := faultsAsErrors()
	defer restore()
	defer func() {
		if err == nil && r.job.KeepMapped {
			return
		}
		// Not kept, or a fault (the file shrank), a sink's error or a
		// cancel: the next Run maps afresh.
		ws.Syscalls++
		if uerr := kept.unmap(); uerr != nil && err == nil {
			err = f.readErr(start, fmt.Errorf("munmap: %w", uerr))
		}
	}()
	defer catchFault(&err, f.path)
	var buf []byte
	if r.bufs != nil {
		buf = r.bufs.buf(w)
	}
	for k := 0; ; k++ {
		if k%checkEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		off, n, ok := c.next()
		if !ok {
			return nil
		}
		b := m[off-start : off-start+int64(n) : off-start+int64(n)]
		var t0 int64
		if ws.Lat != nil {
			t0 = metrics.Ticks()
		}
		if buf != nil {
			b = buf[:fileio.CopyMapped(buf, b)]
			if ws.Lat != nil {
				ws.Lat.RecordTicks(metrics.Ticks() - t0)
			}
			if err := sink.Block(w, off, b); err != nil {
				return err
			}
		} else {
			if err := sink.Block(w, off, b); err != nil {
				return err
			}
			if ws.Lat != nil {
				ws.Lat.RecordTicks(metrics.Ticks() - t0)
			}
		}
		ws.Bytes += int64(n)
		ws.Blocks++
	}
}

// populateChunk is how much of a mapping one MADV_POPULATE_READ call
// maps: the call cannot be interrupted but by a fatal signal, so a large
// mapping is populated in pieces with a look at ctx between them (256
// MiB of a warm file took 14–23 ms on the AMD EPYC VM).
const populateChunk = 256 << 20

// populate maps every page of m that is in the page cache with
// MADV_POPULATE_READ (Linux 5.14), a chunk at a time, and returns the
// calls made. A kept mapping (warm runs) is then read without a page
// fault: on the AMD EPYC VM, where the first touches of a new mapping's
// pages are slow, random 4 KiB reads over a warm 1 GiB file went from
// 0.68–0.71× to 1.06–1.07× fio's mmap twin (2 s runs), and sequential 128
// KiB ones gained 3–9%. An older kernel (EINVAL) or a file cut short
// under the mapping (EFAULT) stops it: the reads then fault pages in, or
// turn the fault into an error, as without it.
func populate(ctx context.Context, m []byte) (calls int64) {
	for off := 0; off < len(m) && ctx.Err() == nil; off += populateChunk {
		calls++
		if sys.Madvise(m[off:min(off+populateChunk, len(m))], sys.MADV_POPULATE_READ) != nil {
			break
		}
	}
	return calls
}
