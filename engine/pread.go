package engine

import (
	"context"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// preadEngine reads with pread(2): each worker owns a share of the blocks
// and one buffer, and reads its blocks at their offsets.
type preadEngine struct{}

func init() { register(preadEngine{}) }

func (preadEngine) Name() string { return "pread" }
func (preadEngine) Caps() Caps   { return Caps{Direct: true} }

func (preadEngine) Prepare(job Job) (Prepared, error) {
	job, err := prepareJob(job)
	if err != nil {
		return nil, err
	}
	a, err := newArena(job.Workers, job.BlockSize, job.Direct)
	if err != nil {
		return nil, err
	}
	return &preadRun{job: job, bufs: a}, nil
}

type preadRun struct {
	job  Job
	bufs *arena
}

func (r *preadRun) Close() error { r.bufs.free(); return nil }

func (r *preadRun) Run(ctx context.Context, sink Sink) (*Stats, error) {
	return readFile(ctx, &r.job, sink, toEOF(r.bufs.buf(0)), func(ctx context.Context, f *file, p *plan, w int, ws *WorkerStats) error {
		buf := r.bufs.buf(w)
		nw := fileio.Nowait{Off: r.job.Direct}
		var iov [1]sys.Iovec
		c := p.cursor(w)
		for k := 0; ; k++ {
			if k%checkEvery == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			off, n, ok := c.next()
			if !ok {
				return nil
			}
			var t0 int64
			if ws.Lat != nil {
				t0 = metrics.Ticks()
			}
			calls, err := preadFull(f, &nw, iov[:], buf[:directLen(n, r.job.Direct)], n, off, r.job.Direct)
			ws.Syscalls += calls
			if err != nil {
				return err
			}
			if ws.Lat != nil {
				ws.Lat.RecordTicks(metrics.Ticks() - t0)
			}
			if err := sink.Block(w, off, buf[:n]); err != nil {
				return err
			}
			ws.Bytes += int64(n)
			ws.Blocks++
		}
	})
}

// preadFull reads at least need bytes at off into buf (len(buf) >= need,
// rounded up for O_DIRECT), looping over short reads. It returns the number
// of pread calls made. Reaching end of file before need bytes means the file
// shrank since it was opened.
// Each read first tries the cached fast path (fileio.Nowait) through iov.
func preadFull(f *file, nw *fileio.Nowait, iov []sys.Iovec, buf []byte, need int, off int64, direct bool) (int64, error) {
	var calls int64
	got := 0
	for got < need {
		b := buf[got:]
		iov[0].Base = &b[0]
		iov[0].SetLen(len(b))
		m, err := nw.Preadv(f.fd, iov, len(b), off+int64(got), &calls)
		if err != nil {
			return calls, f.readErr(off+int64(got), err)
		}
		if m == 0 {
			return calls, f.shrunk(off + int64(got))
		}
		before := got
		got += m
		if got < need {
			var ok bool
			if got, ok = directResume(got, before, direct); !ok {
				return calls, f.readErr(off+int64(got), errDirectStuck)
			}
		}
	}
	return calls, nil
}
