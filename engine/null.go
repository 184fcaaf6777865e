package engine

import (
	"context"

	"github.com/iopath/iopath/metrics"
)

// nullEngine does no I/O: it opens and stats the file to learn its size,
// then hands the sink a zeroed buffer for every block of the plan. What it
// measures is the runner's own cost per block (plan, sink call, counters,
// latency clock), as fio's null engine does. O_DIRECT does not apply, nor
// does a file of unknown size (a pseudo-file): it has no blocks to hand
// out, and Run returns an error wrapping ErrNotSupported.
type nullEngine struct{}

func init() { register(nullEngine{}) }

func (nullEngine) Name() string { return "null" }
func (nullEngine) Caps() Caps   { return Caps{NoData: true} }

func (nullEngine) Prepare(job Job) (Prepared, error) {
	job, err := prepareJob(job)
	if err != nil {
		return nil, err
	}
	if job.Direct {
		return nil, &NotSupportedError{What: "O_DIRECT with null", Reason: "the null engine does no I/O"}
	}
	a, err := newArena(1, job.BlockSize, false)
	if err != nil {
		return nil, err
	}
	clear(a.buf(0)) // a spare arena holds old bytes
	return &nullRun{job: job, zero: a}, nil
}

type nullRun struct {
	job  Job
	zero *arena // one zeroed buffer, shared read-only by all workers
}

func (r *nullRun) Close() error { r.zero.free(); return nil }

func (r *nullRun) Run(ctx context.Context, sink Sink) (*Stats, error) {
	zero := r.zero.buf(0)
	return readFile(ctx, &r.job, sink, sizeOnly("null", "to make blocks of"), func(ctx context.Context, f *file, p *plan, w int, ws *WorkerStats) error {
		c := p.cursor(w)
		for k := 0; ; k++ {
			if k%checkEvery == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			off, n, ok := c.next()
			if !ok {
				return nil
			}
			if ws.Lat != nil {
				t0 := metrics.Ticks()
				ws.Lat.RecordTicks(metrics.Ticks() - t0)
			}
			if err := sink.Block(w, off, zero[:n:n]); err != nil {
				return err
			}
			ws.Bytes += int64(n)
			ws.Blocks++
		}
	})
}
