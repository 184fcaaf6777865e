package engine

import (
	"context"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// pwritevEngine writes with pwritev(2), k = Job.Vectors buffers of one
// block each per call: consecutive blocks of a worker's share (the
// append pattern: k blocks past the end, taken at once) are written
// together, so the k blocks of one call are contiguous in the file. The
// random pattern uses k = 1. A short pwritev goes on with the rest.
// Every block's latency is the time from the start of the call that
// began it to the end of the call that finished it; SyncEvery counts the
// blocks of each call.
type pwritevEngine struct{}

func init() { registerWriter(pwritevEngine{}) }

func (pwritevEngine) Name() string { return "pwritev" }
func (pwritevEngine) Caps() Caps   { return Caps{Direct: true} }

func (pwritevEngine) PrepareWrite(job Job) (PreparedWrite, error) {
	job, err := prepareWriteJob(job)
	if err != nil {
		return nil, err
	}
	k := job.Vectors
	if job.Pattern == Random {
		k = 1
	}
	a, err := newArena(job.Workers*k, job.BlockSize, job.Direct)
	if err != nil {
		return nil, err
	}
	r := &pwritevRun{job: job, k: k, bufs: a, ws: make([]readvWorker, job.Workers)}
	for w := range r.ws {
		v := &r.ws[w]
		v.bufs = make([][]byte, k)
		v.iov = make([]sys.Iovec, k)
		v.lens = make([]int, k)
		for i := range k {
			v.bufs[i] = a.buf(w*k + i)
		}
	}
	return r, nil
}

type pwritevRun struct {
	job  Job
	k    int
	bufs *arena
	ws   []readvWorker // the same per-worker buffers and iovecs as readv's
}

func (r *pwritevRun) Close() error { r.bufs.free(); return nil }

func (r *pwritevRun) Run(ctx context.Context, src Source) (*Stats, error) {
	return writeFile(ctx, &r.job, sys.O_WRONLY, src, r.bufs, nil, func(ctx context.Context, f *wfile, p *plan, w int, ws *WorkerStats) error {
		v := &r.ws[w]
		sy := newSyncer(&r.job)
		c := p.cursor(w)
		every := max(1, checkEvery/r.k)
		for k := 0; ; k++ {
			if k%every == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			idx, m := c.take(r.k)
			if m == 0 {
				return nil
			}
			off0, _, _ := p.block(idx)
			total := 0
			for i := range m {
				off, n, _ := p.block(idx + int64(i))
				if p.random {
					off0 = off
				}
				if err := src.Fill(w, off, v.bufs[i][:n]); err != nil {
					return err
				}
				v.lens[i] = n
				v.iov[i].Base = &v.bufs[i][0]
				v.iov[i].SetLen(n)
				total += n
			}
			var t0 int64
			if ws.Lat != nil {
				t0 = metrics.Ticks()
			}
			done, first := 0, 0
			for done < total {
				ws.Syscalls++
				got, err := sys.Pwritev(f.fd, v.iov[first:m], off0+int64(done))
				if err != nil {
					return f.writeErr(off0+int64(done), err)
				}
				if got == 0 {
					return f.writeErr(off0+int64(done), errShortWrite)
				}
				done += got
				// Drop the iovecs written whole; trim a partly written one.
				for first < m && got >= int(v.iov[first].Len) {
					got -= int(v.iov[first].Len)
					first++
				}
				if got > 0 {
					b := v.bufs[first][v.lens[first]-int(v.iov[first].Len)+got : v.lens[first]]
					v.iov[first].Base = &b[0]
					v.iov[first].SetLen(len(b))
				}
			}
			if ws.Lat != nil {
				ws.Lat.RecordN(metrics.TicksToNs(metrics.Ticks()-t0), int64(m))
			}
			ws.Bytes += int64(total)
			ws.Blocks += int64(m)
			if err := sy.wrote(f, m, ws); err != nil {
				return err
			}
		}
	})
}
