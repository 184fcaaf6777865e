package engine

import (
	"context"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// readvEngine reads with preadv(2), k = Job.Vectors buffers of one block
// each per call: consecutive blocks of a worker's share are read together,
// so the k blocks of one call are contiguous in the file (a call covers
// fewer at the end of the share). The random pattern uses k = 1, because
// its consecutive blocks are not contiguous (preadv has one file offset).
//
// Each worker owns k buffers and an iovec array that points at them, both
// made in Prepare. A short preadv (a signal, or the end of a shrunk file)
// delivers the blocks it completed and continues with the rest. Every block
// is delivered to the sink on its own; its latency is the time from the
// start of the call that began it to the completion of the call that
// finished it.
type readvEngine struct{}

func init() { register(readvEngine{}) }

func (readvEngine) Name() string { return "readv" }
func (readvEngine) Caps() Caps   { return Caps{Direct: true} }

func (readvEngine) Prepare(job Job) (Prepared, error) {
	job, err := prepareJob(job)
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
	r := &readvRun{job: job, k: k, bufs: a, ws: make([]readvWorker, job.Workers)}
	for w := range r.ws {
		v := &r.ws[w]
		v.bufs = make([][]byte, k)
		v.iov = make([]sys.Iovec, k)
		v.lens = make([]int, k)
		for i := range k {
			v.bufs[i] = a.buf(w*k + i)
			v.iov[i].Base = &v.bufs[i][0]
			v.iov[i].SetLen(len(v.bufs[i]))
		}
	}
	return r, nil
}

type readvRun struct {
	job  Job
	k    int // blocks per call
	bufs *arena
	ws   []readvWorker
}

// readvWorker is one worker's pooled buffers and iovec array.
type readvWorker struct {
	bufs [][]byte
	iov  []sys.Iovec
	lens []int // the length of each block of the current call
}

func (r *readvRun) Close() error { r.bufs.free(); return nil }

func (r *readvRun) Run(ctx context.Context, sink Sink) (*Stats, error) {
	direct := r.job.Direct
	return readFile(ctx, &r.job, sink, toEOF(r.ws[0].bufs[0]), func(ctx context.Context, f *file, p *plan, w int, ws *WorkerStats) error {
		v := &r.ws[w]
		nw := fileio.Nowait{Off: r.job.Direct}
		c := p.cursor(w)
		// A call reads r.k blocks: look at ctx every checkEvery blocks,
		// not every checkEvery calls.
		every := max(1, checkEvery/r.k)
		for k := 0; ; k++ {
			if k%every == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			m := int(min(int64(r.k), c.remaining()))
			if m == 0 {
				return nil
			}
			var off0 int64
			for i := range m {
				off, n, _ := c.next()
				if i == 0 {
					off0 = off
				}
				v.lens[i] = n
				v.iov[i].Base = &v.bufs[i][0]
				v.iov[i].SetLen(directLen(n, direct))
			}
			var t0, t1 int64
			if ws.Lat != nil {
				t0 = metrics.Ticks()
			}
			done := 0     // bytes read by this call so far
			first := 0    // the first block not yet delivered
			blkStart := 0 // its offset from off0
			for first < m {
				if part := done - blkStart; part > 0 {
					// A short read stopped inside block first: read its rest.
					v.iov[first].Base = &v.bufs[first][part]
					v.iov[first].SetLen(directLen(v.lens[first], direct) - part)
				}
				got, err := nw.Preadv(f.fd, v.iov[first:m], (m-first)*r.job.BlockSize, off0+int64(done), &ws.Syscalls)
				if err != nil {
					return f.readErr(off0+int64(done), err)
				}
				if got == 0 {
					return f.shrunk(off0 + int64(done))
				}
				before := done
				done += got
				if ws.Lat != nil {
					t1 = metrics.Ticks()
				}
				for first < m && blkStart+v.lens[first] <= done {
					n := v.lens[first]
					if ws.Lat != nil {
						ws.Lat.RecordTicks(t1 - t0)
					}
					if err := sink.Block(w, off0+int64(blkStart), v.bufs[first][:n]); err != nil {
						return err
					}
					ws.Bytes += int64(n)
					ws.Blocks++
					blkStart += n
					first++
				}
				if first < m {
					next, ok := directResume(done, before, direct)
					if !ok {
						return f.readErr(off0+int64(done), errDirectStuck)
					}
					done = next
				}
			}
		}
	})
}
