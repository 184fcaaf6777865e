package engine

import (
	"context"
	"errors"
	"syscall"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/uring"
	"github.com/iopath/iopath/metrics"
)

// uringWriter writes with io_uring, on the read engine's workers: each
// worker is a goroutine locked to its own OS thread with its own ring,
// QueueDepth registered buffers and a one-slot registered file table,
// and keeps QueueDepth WRITE_FIXED requests in flight over its share of
// the blocks (the append pattern: the next blocks past the end, taken in
// turn), filling each buffer from the Source just before its request is
// queued. A short write asks for the rest of its block.
//
// With O_DIRECT the requests are WRITE_FIXED (the kernel skips pinning
// the pages of each write); buffered ones are plain WRITEs from the same
// memory. Buffered writes to ext4 cannot complete inline and go to an
// io-wq worker, and there WRITE_FIXED cost more: 128 KiB writes of 1 GiB
// with --sync end, alternated on the AMD EPYC VM, went from 0.90–0.91×
// fio's io_uring twin (which writes with WRITE) at 0.31–0.35 CPU-s/GiB
// to 0.98–1.00× at 0.26.
//
// SyncEvery queues an FSYNC request with IORING_FSYNC_DATASYNC once the
// worker's writes up to a whole number of groups of Every blocks have
// all completed (every write is numbered when queued, and the worker
// tracks the longest prefix of the numbers that has completed): an
// FSYNC syncs what has completed when it starts, so it then covers
// those groups. Writes go on being queued meanwhile, and are covered by
// a later FSYNC: the queue never drains. When several groups complete
// at once one FSYNC covers them all, so the sync count may be lower than
// blocks/Every (the syncs column says how many). Neither IOSQE_IO_LINK
// after the N-th write (it waits for that one write only, not for the
// others in flight) nor IOSQE_IO_DRAIN (correct, but it stops the whole
// queue for each FSYNC: 0.12× fio's IOPS for 4 KiB blocks with every:1
// on the AMD EPYC VM) would do. fio's io_uring engine queues its FSYNC
// while writes are in flight without waiting for them, and more of them
// until the first completes (fio/doc.go): its FSYNCs need not cover the
// blocks before them.
// SyncEnd's fsync is one fsync(2) after the workers, as for every
// writer; SyncDSync and SyncDirect are the open flags.
type uringWriter struct{}

func init() { registerWriter(uringWriter{}) }

func (uringWriter) Name() string { return "io_uring" }
func (uringWriter) Caps() Caps   { return Caps{Direct: true, Queue: true} }

func (uringWriter) PrepareWrite(job Job) (PreparedWrite, error) {
	job, err := prepareWriteJob(job)
	if err != nil {
		return nil, err
	}
	if err := features.HaveOps("WRITE_FIXED", "WRITE", "FSYNC"); err != nil {
		return nil, UringError(err)
	}
	u, err := newUringRun(job)
	if err != nil {
		return nil, err
	}
	return &uringWriteRun{u: u}, nil
}

type uringWriteRun struct{ u *uringRun }

func (r *uringWriteRun) Close() error { return r.u.Close() }

func (r *uringWriteRun) Run(ctx context.Context, src Source) (*Stats, error) {
	u := r.u
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, errors.New("io_uring: Run after Close")
	}
	f, err := openWriteFile(&u.job, syscall.O_WRONLY)
	if err != nil {
		return nil, err
	}
	defer f.close()
	for i := range u.bufs.count() {
		b := u.bufs.buf(i)
		src.Prime(b[:cap(b)])
	}
	p := f.plan(&u.job)
	st := newWriteStats(&u.job)
	st.Notes = append(st.Notes, u.notes...)
	c := begin(ctx, nil)
	done := make(chan uringDone, len(u.workers))
	for i, w := range u.workers {
		w.reqs <- uringReq{c: c, f: &f.file, wf: f, src: src, p: &p, ws: &st.Workers[i], done: done}
	}
	errs := make([]error, len(u.workers))
	for range u.workers {
		d := <-done
		if d.err != nil {
			errs[d.w] = d.err
			c.fail(d.err)
		}
	}
	err = firstError(errs)
	if err == nil && u.job.Sync.Mode == SyncEnd {
		err = f.endSync(&st.Workers[0])
	}
	c.end()
	if cerr := f.close(); err == nil {
		err = cerr
	}
	c.pan.Raise()
	return st, err
}

// syncTag marks the user_data of a worker's FSYNC requests (with the
// index of its issue time in the low bits); a write's is its slot.
const syncTag = 1 << 32

// runWrite writes this worker's share of one Run's blocks.
func (w *uringWorker) runWrite(q *uringReq) (err error) {
	if w.broken {
		return errors.New("io_uring: the ring failed in an earlier run")
	}
	r := w.ring
	ws := q.ws
	sys0 := r.Syscalls()
	defer func() { ws.Syscalls += r.Syscalls() - sys0 }()

	fd, release, err := w.useFile(int32(q.wf.fd))
	if err != nil {
		return err
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()

	f, src, id := q.wf, q.src, w.id
	c := q.p.cursor(id)
	done := q.c.ctx.Done()
	lat, syncLat := ws.Lat, ws.SyncLat
	every := 0
	if w.job.Sync.Mode == SyncEvery {
		every = w.job.Sync.Every
	}
	free := w.allFree()
	inflight := 0
	// SyncEvery: writes are numbered when queued (seq); doneAt marks the
	// completed numbers at or past prefix, below which all completed;
	// synced is the number up to which an FSYNC has been queued. At most
	// qd FSYNCs are in flight, each with a slot of syncAt (its issue
	// time); a write is queued only while its number is within the
	// window of doneAt.
	var (
		nextSeq, prefix, synced uint64
		seq                     []uint64
		doneAt                  []bool
		syncAt                  []int64
		syncFree                []uint64
	)
	if every > 0 {
		seq = make([]uint64, w.qd)
		doneAt = make([]bool, 4*w.qd)
		syncAt = make([]int64, w.qd)
		for i := range w.qd {
			syncFree = append(syncFree, uint64(i))
		}
	}
	var firstErr error
	stop := false
	fail := func(e error) {
		if firstErr == nil {
			firstErr = e
		}
		stop = true
	}
	// syncDue queues one FSYNC for every whole group of Every blocks
	// completed since the last, when there is room for it.
	syncDue := func() {
		due := prefix - prefix%uint64(every)
		if due <= synced || len(syncFree) == 0 || r.SQSpace() == 0 {
			return
		}
		k := syncFree[len(syncFree)-1]
		syncFree = syncFree[:len(syncFree)-1]
		sqe := r.GetSQE()
		sqe.PrepFsync(fd, uring.FsyncDatasync, syncTag|k)
		if w.files {
			sqe.Flags = uring.SQEFixedFile
		}
		synced = due
		inflight++
		ws.Syncs++
		if syncLat != nil {
			syncAt[k] = metrics.Ticks()
		}
	}
	// completed marks write number n done and moves the prefix on.
	completed := func(n uint64) {
		doneAt[n%uint64(len(doneAt))] = true
		for prefix < nextSeq && doneAt[prefix%uint64(len(doneAt))] {
			doneAt[prefix%uint64(len(doneAt))] = false
			prefix++
		}
	}
	for {
		if !stop {
			select {
			case <-done:
				fail(q.c.ctx.Err())
			default:
			}
		}
		fresh := w.fresh[:0]
		if every > 0 && !stop {
			syncDue()
		}
		for !stop {
			if len(free) == 0 || r.SQSpace() == 0 {
				break
			}
			if every > 0 && nextSeq-prefix >= uint64(len(doneAt)) {
				break // the oldest write in flight holds the window
			}
			off, n, ok := c.next()
			if !ok {
				break
			}
			slot := free[len(free)-1]
			if err := src.Fill(id, off, w.bufs[slot][:n]); err != nil {
				fail(err)
				break
			}
			w.off[slot], w.need[slot], w.got[slot] = off, int32(n), 0
			w.prepWrite(slot, fd) // cannot fail: there is room
			free = free[:len(free)-1]
			fresh = append(fresh, slot)
			inflight++
			if every > 0 {
				seq[slot] = nextSeq
				nextSeq++
			}
		}
		if inflight == 0 {
			break
		}
		if lat != nil && len(fresh) > 0 {
			t := metrics.Ticks()
			for _, s := range fresh {
				w.issued[s] = t
			}
		}
		if _, err := r.SubmitAndWait(1); err != nil {
			if inflight != int(r.SQReady()) {
				w.broken = true
			}
			fail(UringError(err))
			return firstErr
		}
		var now int64
		if lat != nil || syncLat != nil {
			now = metrics.Ticks()
		}
		k := r.PeekBatch(w.cqes)
		for i := 0; i < k; i++ {
			cqe := &w.cqes[i]
			inflight--
			if cqe.UserData&syncTag != 0 {
				k := cqe.UserData &^ syncTag
				if syncLat != nil {
					syncLat.RecordTicks(now - syncAt[k])
				}
				syncFree = append(syncFree, k)
				if cqe.Res < 0 && !stop {
					fail(f.syncErr("fdatasync", syscall.Errno(-cqe.Res)))
				}
				continue
			}
			slot := uint16(cqe.UserData)
			if stop {
				free = append(free, slot)
				continue
			}
			res := cqe.Res
			at := w.off[slot] + int64(w.got[slot])
			switch {
			case res < 0:
				fail(f.writeErr(at, syscall.Errno(-res)))
				free = append(free, slot)
				continue
			case res == 0:
				fail(f.writeErr(at, errShortWrite))
				free = append(free, slot)
				continue
			}
			need := w.need[slot]
			before := w.got[slot]
			w.got[slot] += res
			if w.got[slot] < need {
				next, ok := directResume(int(w.got[slot]), int(before), w.job.Direct)
				if !ok {
					fail(f.writeErr(w.off[slot]+int64(w.got[slot]), errDirectStuck))
					free = append(free, slot)
					continue
				}
				w.got[slot] = int32(next)
				if !w.prepWrite(slot, fd) {
					fail(errors.New("io_uring: submission queue full"))
					free = append(free, slot)
					continue
				}
				inflight++
				continue
			}
			if lat != nil {
				lat.RecordTicks(now - w.issued[slot])
			}
			ws.Bytes += int64(need)
			ws.Blocks++
			if every > 0 {
				completed(seq[slot])
			}
			free = append(free, slot)
		}
		r.Advance(k)
	}
	w.free = free
	return firstErr
}

// prepWrite prepares slot's write of the rest of its block.
func (w *uringWorker) prepWrite(slot uint16, fd int32) bool {
	sqe := w.ring.GetSQE()
	if sqe == nil {
		return false
	}
	b := w.bufs[slot][w.got[slot]:w.need[slot]]
	off := uint64(w.off[slot] + int64(w.got[slot]))
	// Buffered writes use WRITE, O_DIRECT ones WRITE_FIXED: see
	// uringWriter.
	if w.fixed && w.job.Direct {
		sqe.PrepWriteFixed(fd, b, off, slot, uint64(slot))
	} else {
		sqe.PrepWrite(fd, b, off, uint64(slot))
	}
	if w.files {
		sqe.Flags = uring.SQEFixedFile
	}
	return true
}
