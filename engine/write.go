package engine

import (
	"context"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// writeEngine writes with write(2) at the file position, as fio's sync
// engine does. Worker 0 uses the descriptor Run opened; every other
// worker opens its own of the same file (through /proc/self/fd, see
// reopen), so that file positions never collide, and writes its share
// front to back. The random pattern seeks before each block that does
// not follow the last; those lseek calls are counted and timed with the
// block. The append pattern opens the file O_APPEND, so that every write
// lands at the end wherever it is, with one worker only: with several,
// the order of the blocks in the file would be the order in which the
// kernel took their writes (use pwrite, which owns the offsets).
type writeEngine struct{}

func init() { registerWriter(writeEngine{}) }

func (writeEngine) Name() string { return "write" }
func (writeEngine) Caps() Caps   { return Caps{Direct: true} }

func (writeEngine) PrepareWrite(job Job) (PreparedWrite, error) {
	job, err := prepareWriteJob(job)
	if err != nil {
		return nil, err
	}
	if job.Pattern == Append && job.Workers > 1 {
		return nil, &NotSupportedError{What: "the append pattern with several write(2) workers",
			Reason: "O_APPEND puts each block wherever the end is when the kernel takes it, so the workers' blocks would interleave in no set order; use pwrite, whose workers take the next offset in turn"}
	}
	a, err := newArena(job.Workers, job.BlockSize, job.Direct)
	if err != nil {
		return nil, err
	}
	return &writeRun{job: job, bufs: a}, nil
}

type writeRun struct {
	job  Job
	bufs *arena
}

func (r *writeRun) Close() error { r.bufs.free(); return nil }

func (r *writeRun) Run(ctx context.Context, src Source) (*Stats, error) {
	flags := sys.O_WRONLY
	if r.job.Pattern == Append {
		flags |= sys.O_APPEND
	}
	return writeFile(ctx, &r.job, flags, src, r.bufs, nil, func(ctx context.Context, f *wfile, p *plan, w int, ws *WorkerStats) error {
		c := p.cursor(w)
		if c.remaining() == 0 {
			return nil
		}
		fd := f.fd
		if w > 0 {
			rfd, calls, err := f.reopen(&r.job, f.flags)
			ws.Syscalls += calls
			if err != nil {
				return err
			}
			fd = rfd
			defer func() { sys.Close(fd); ws.Syscalls++ }()
		}
		wf := *f
		wf.fd = fd
		buf := r.bufs.buf(w)
		sy := newSyncer(&r.job)
		appending := r.job.Pattern == Append
		pos := int64(0) // the descriptor's file position
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
			if !appending && off != pos {
				ws.Syscalls++
				if _, err := sys.SeekSet(fd, off); err != nil {
					return f.writeErr(off, err)
				}
				pos = off
			}
			calls, err := pwriteFull(&wf, b, -1)
			ws.Syscalls += calls
			if err != nil {
				return err
			}
			pos += int64(n)
			if ws.Lat != nil {
				ws.Lat.RecordTicks(metrics.Ticks() - t0)
			}
			ws.Bytes += int64(n)
			ws.Blocks++
			if err := sy.wrote(&wf, 1, ws); err != nil {
				return err
			}
		}
	})
}
