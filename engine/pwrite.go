package engine

import (
	"context"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// pwriteEngine writes with pwrite(2): each worker owns a share of the
// blocks (the append pattern: takes the next block past the end in
// turn) and one buffer, and writes each block at its offset, as fio's
// psync engine does.
type pwriteEngine struct{}

func init() { registerWriter(pwriteEngine{}) }

func (pwriteEngine) Name() string { return "pwrite" }
func (pwriteEngine) Caps() Caps   { return Caps{Direct: true} }

func (pwriteEngine) PrepareWrite(job Job) (PreparedWrite, error) {
	job, err := prepareWriteJob(job)
	if err != nil {
		return nil, err
	}
	a, err := newArena(job.Workers, job.BlockSize, job.Direct)
	if err != nil {
		return nil, err
	}
	return &pwriteRun{job: job, bufs: a}, nil
}

type pwriteRun struct {
	job  Job
	bufs *arena
}

func (r *pwriteRun) Close() error { r.bufs.free(); return nil }

func (r *pwriteRun) Run(ctx context.Context, src Source) (*Stats, error) {
	return writeFile(ctx, &r.job, sys.O_WRONLY, src, r.bufs, nil, func(ctx context.Context, f *wfile, p *plan, w int, ws *WorkerStats) error {
		buf := r.bufs.buf(w)
		sy := newSyncer(&r.job)
		c := p.cursor(w)
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
			calls, err := pwriteFull(f, b, off)
			ws.Syscalls += calls
			if err != nil {
				return err
			}
			if ws.Lat != nil {
				ws.Lat.RecordTicks(metrics.Ticks() - t0)
			}
			ws.Bytes += int64(n)
			ws.Blocks++
			if err := sy.wrote(f, 1, ws); err != nil {
				return err
			}
		}
	})
}
