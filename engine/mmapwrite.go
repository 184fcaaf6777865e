package engine

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// mmapWriter writes through a shared mapping, as fio's mmap engine does:
// the file is opened O_RDWR and, when shorter than the job's size, grown
// to it with ftruncate (a mapping cannot write past the end); each
// worker maps its region with MAP_SHARED (its share for the sequential
// pattern, the whole file for the random one), fills a buffer with the
// block and copies it into the mapping. The copy is the write, and its
// time the block's latency; the pages reach the disk at writeback, or
// when a sync asks: SyncEnd's fsync covers dirty mapped pages as it
// covers written ones, SyncEvery msyncs the range of the last Every
// blocks, and SyncDSync msyncs every block (a mapping has no O_DSYNC).
//
// A page that cannot be backed when first written (the disk is full, or
// the file was cut short by another process) raises SIGBUS, which the
// worker turns into an error. O_DIRECT does not apply, nor does the
// append pattern: a mapping does not grow with the file.
type mmapWriter struct{}

func init() { registerWriter(mmapWriter{}) }

func (mmapWriter) Name() string { return "mmap" }
func (mmapWriter) Caps() Caps   { return Caps{} }

func (mmapWriter) PrepareWrite(job Job) (PreparedWrite, error) {
	job, err := prepareWriteJob(job)
	if err != nil {
		return nil, err
	}
	if job.Direct {
		return nil, &NotSupportedError{What: "O_DIRECT with mmap", Reason: "a mapping always goes through the page cache"}
	}
	if job.Pattern == Append {
		return nil, &NotSupportedError{What: "the append pattern with mmap", Reason: "a mapping does not grow with the file; use write, pwrite, pwritev or io_uring"}
	}
	a, err := newArena(job.Workers, job.BlockSize, false)
	if err != nil {
		return nil, err
	}
	return &mmapWriteRun{job: job, bufs: a}, nil
}

type mmapWriteRun struct {
	job  Job
	bufs *arena
}

func (r *mmapWriteRun) Close() error { r.bufs.free(); return nil }

func (r *mmapWriteRun) Run(ctx context.Context, src Source) (*Stats, error) {
	grow := func(f *wfile, ws *WorkerStats) error {
		if f.size >= f.total {
			return nil
		}
		ws.Syscalls++
		if err := sys.Ftruncate(f.fd, f.total); err != nil {
			return f.writeErr(f.size, fmt.Errorf("grow the file to %d bytes for the mapping: %w", f.total, err))
		}
		return nil
	}
	return writeFile(ctx, &r.job, sys.O_RDWR, src, r.bufs, grow, func(ctx context.Context, f *wfile, p *plan, w int, ws *WorkerStats) error {
		return r.worker(ctx, f, p, w, ws, src)
	})
}

// worker maps worker w's region, writes its blocks into it, makes the
// msyncs its Sync mode asks for and unmaps it. A SIGBUS while writing
// the mapping becomes an error.
func (r *mmapWriteRun) worker(ctx context.Context, f *wfile, p *plan, w int, ws *WorkerStats, src Source) (err error) {
	c := p.cursor(w)
	if c.remaining() == 0 {
		return nil
	}
	start, end := int64(0), p.size
	if !p.random {
		lo, hi := p.share(w)
		start, end = lo*p.bs, min(hi*p.bs, p.size)
	}
	ps := int64(sys.PageSize())
	start = start / ps * ps
	ws.Syscalls++
	m, err := sys.Mmap(f.fd, start, int(end-start), sys.PROT_READ|sys.PROT_WRITE, sys.MAP_SHARED)
	if err != nil {
		return f.writeErr(start, fmt.Errorf("mmap: %w", err))
	}
	defer func() {
		ws.Syscalls++
		if uerr := sys.Munmap(m); uerr != nil && err == nil {
			err = f.writeErr(start, fmt.Errorf("munmap: %w", uerr))
		}
	}()
	restore := faultsAsErrors()
	defer restore()
	defer func() {
		if x := recover(); x != nil {
			if !fileio.IsFault(x) {
				panic(x)
			}
			err = &fs.PathError{Op: "write", Path: f.path, Err: errMapFault}
		}
	}()
	buf := r.bufs.buf(w)
	// The range written since the last msync (SyncEvery).
	dirtyLo, dirtyHi := int64(-1), int64(0)
	since := 0
	msync := func(lo, hi int64) error {
		lo = lo / ps * ps
		var t0 int64
		if ws.SyncLat != nil {
			t0 = metrics.Ticks()
		}
		ws.Syscalls++
		ws.Syncs++
		if err := sys.Msync(m[lo-start : hi-start]); err != nil {
			return f.syncErr("msync", err)
		}
		if ws.SyncLat != nil {
			ws.SyncLat.RecordTicks(metrics.Ticks() - t0)
		}
		return nil
	}
	for k := 0; ; k++ {
		if k%checkEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		off, n, ok := c.next()
		if !ok {
			return nil
		}
		b := buf[:n]
		if err := src.Fill(w, off, b); err != nil {
			return err
		}
		var t0 int64
		if ws.Lat != nil {
			t0 = metrics.Ticks()
		}
		fileio.CopyMapped(m[off-start:off-start+int64(n)], b)
		if ws.Lat != nil {
			ws.Lat.RecordTicks(metrics.Ticks() - t0)
		}
		ws.Bytes += int64(n)
		ws.Blocks++
		switch r.job.Sync.Mode {
		case SyncDSync:
			if err := msync(off, off+int64(n)); err != nil {
				return err
			}
		case SyncEvery:
			if dirtyLo < 0 || off < dirtyLo {
				dirtyLo = off
			}
			dirtyHi = max(dirtyHi, off+int64(n))
			if since++; since == r.job.Sync.Every {
				if err := msync(dirtyLo, dirtyHi); err != nil {
					return err
				}
				dirtyLo, dirtyHi, since = -1, 0, 0
			}
		}
	}
}

// errMapFault is the cause of a SIGBUS while writing a mapping.
var errMapFault = fmt.Errorf("SIGBUS while writing the mapping: the disk is full, or the file was cut short by another process")
