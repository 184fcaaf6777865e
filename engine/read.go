package engine

import (
	"context"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// readEngine reads with read(2) from the file position, as fio's sync
// engine does. Worker 0 uses the descriptor Run opened; every other worker
// opens its own of the same file (through /proc/self/fd, see reopen: never
// the path again, which may name another file by then), so that file
// positions never collide, seeks once to the start of its share and then
// reads it front to back. read(2) takes no
// offset, so the random pattern seeks before each read whose offset is not
// where the previous read ended; those lseek calls are counted as syscalls
// and timed as part of the block's latency.
type readEngine struct{}

func init() { register(readEngine{}) }

func (readEngine) Name() string { return "read" }
func (readEngine) Caps() Caps   { return Caps{Direct: true} }

func (readEngine) Prepare(job Job) (Prepared, error) {
	job, err := prepareJob(job)
	if err != nil {
		return nil, err
	}
	a, err := newArena(job.Workers, job.BlockSize, job.Direct)
	if err != nil {
		return nil, err
	}
	return &readRun{job: job, bufs: a}, nil
}

type readRun struct {
	job  Job
	bufs *arena
}

func (r *readRun) Close() error { r.bufs.free(); return nil }

func (r *readRun) Run(ctx context.Context, sink Sink) (*Stats, error) {
	return readFile(ctx, &r.job, sink, toEOF(r.bufs.buf(0)), func(ctx context.Context, f *file, p *plan, w int, ws *WorkerStats) error {
		c := p.cursor(w)
		if c.remaining() == 0 {
			return nil
		}
		fd := f.fd
		if w > 0 {
			rfd, calls, err := f.reopen(&r.job, readFlags(&r.job))
			ws.Syscalls += calls
			if err != nil {
				return err
			}
			fd = rfd
			defer func() { sys.Close(fd); ws.Syscalls++ }()
		}
		buf := r.bufs.buf(w)
		nw := fileio.Nowait{Off: r.job.Direct}
		var iov [1]sys.Iovec
		pos := int64(0) // the descriptor's file position
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
			if off != pos {
				ws.Syscalls++
				if _, err := sys.SeekSet(fd, off); err != nil {
					return f.readErr(off, err)
				}
				pos = off
			}
			calls, err := readFull(f, fd, &nw, iov[:], buf[:directLen(n, r.job.Direct)], n, off, r.job.Direct)
			ws.Syscalls += calls
			if err != nil {
				return err
			}
			pos += int64(n)
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

// readFull reads at least need bytes from fd's position (which is off) into
// buf, looping over short reads. It returns the number of read calls made.
// End of file before need bytes means the file shrank since it was opened.
// When buf is longer than need (O_DIRECT rounding), the position may end
// past off+need only at end of file, so it stays in step with the plan.
//
// Each read first tries the cached fast path (fileio.Nowait) at the file
// position (offset -1), which advances it as read(2) does.
func readFull(f *file, fd int, nw *fileio.Nowait, iov []sys.Iovec, buf []byte, need int, off int64, direct bool) (int64, error) {
	var calls int64
	got := 0
	for got < need {
		b := buf[got:]
		iov[0].Base = &b[0]
		iov[0].SetLen(len(b))
		m, handled, err := nw.Try(fd, iov, len(b), -1, &calls)
		if !handled {
			calls++
			m, err = sys.Read(fd, b)
		}
		if err != nil {
			return calls, f.readErr(off+int64(got), err)
		}
		if m == 0 {
			return calls, f.shrunk(off + int64(got))
		}
		before := got
		got += m
		if got < need {
			next, ok := directResume(got, before, direct)
			if !ok {
				return calls, f.readErr(off+int64(got), errDirectStuck)
			}
			if next != got {
				// Back to the aligned boundary, for the next read.
				calls++
				if _, err := sys.SeekSet(fd, off+int64(next)); err != nil {
					return calls, f.readErr(off+int64(next), err)
				}
				got = next
			}
		}
	}
	return calls, nil
}
