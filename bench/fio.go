package bench

import (
	"fmt"
	"time"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/fio"
	"github.com/iopath/iopath/metrics"
)

// fioRow returns the fio twin row of iopath row r, or nil when r's engine
// has no twin in fio or r cannot run at all.
func (m *measurement) fioRow(r *row) *row {
	twin := fio.Twin
	if m.cfg.Write {
		twin = fio.TwinWrite
	}
	if _, ok := twin(r.res.Engine); !ok || r.skip {
		return nil
	}
	cache := Cache(r.res.Cache)
	job := fio.Job{
		Path:       m.cfg.Path,
		FileSize:   m.size,
		Engine:     r.res.Engine,
		Random:     r.job.Pattern.String() == "rand",
		BlockSize:  r.job.BlockSize,
		Workers:    r.job.Workers,
		QueueDepth: r.res.QD,
		Vectors:    r.job.Vectors,
		Direct:     cache == Direct,
		SQPoll:     r.job.SQPoll,
		Invalidate: cache == Cold,
		Seed:       r.job.Seed,
		TSCClock:   metrics.ClockSource() == "tsc",
	}
	if m.cfg.Write {
		job.Write, job.Append = true, r.job.Pattern == engine.Append
		job.Direct = r.job.Direct
		switch r.job.Sync.Mode {
		case engine.SyncEnd:
			job.Sync = fio.SyncEnd
		case engine.SyncEvery:
			job.Sync, job.SyncEvery = fio.SyncEvery, r.job.Sync.Every
		case engine.SyncDSync:
			job.Sync = fio.SyncDSync
		}
	}
	if cache != Cold && !m.cfg.Write {
		// Write runs make one pass, as ours do.
		job.MinTime = m.cfg.MinTime
	}
	f := &row{
		fio:  &job,
		ours: r,
		res: &Result{
			Tool: ToolFio, Engine: job.IOEngine(), Twin: r.res.Engine, Cache: r.res.Cache, Pattern: r.res.Pattern,
			Sync: r.res.Sync, BS: r.res.BS, Workers: r.res.Workers, QD: r.res.QD, Consume: r.res.Consume,
			Runs: []Run{}, MinTimeNs: r.res.MinTimeNs,
		},
	}
	if _, err := job.Args(); err != nil {
		f.res.Error = "not applicable: " + err.Error()
		f.skip = true
	} else if err := m.cfg.Fio.Check(job); err != nil {
		f.res.Error = "not applicable: " + err.Error()
		f.skip = true
	}
	return f
}

// runFio makes one run of a fio twin row.
func (m *measurement) runFio(r *row, n int) {
	var res *fio.Result
	run, _, _ := m.guarded(Cache(r.res.Cache), func() (Run, *metrics.Histogram, time.Duration, bool) {
		var run Run
		var err error
		res, err = fio.Run(m.ctx, *m.cfg.Fio, *r.fio)
		if err != nil {
			run.Error = err.Error()
			return run, nil, 0, false
		}
		run = fioRun(res)
		if r.fio.Sync == fio.SyncEnd && run.Syncs == 0 {
			// fio's end fsync (one per job) is in its runtime but not in
			// its sync section: count it as ours is counted.
			run.Syncs = int64(r.fio.Workers)
		}
		return run, nil, time.Duration(res.ProcessUserNs + res.ProcessSysNs), false
	})
	if m.ctx.Err() != nil {
		return
	}
	if res != nil && n == 0 {
		for _, w := range res.Warnings {
			r.res.Notes = append(r.res.Notes, "fio said: "+w)
		}
		if r.fio.SQPoll && res.Bytes > 0 {
			gib := float64(res.Bytes) / (1 << 30)
			r.res.Notes = append(r.res.Notes, fmt.Sprintf(
				"fio's CPU figure leaves out its SQPOLL thread (fio reports per-thread usage); the fio process as a whole used %.3f CPU-s/GiB",
				float64(res.ProcessUserNs+res.ProcessSysNs)/1e9/gib))
		}
	}
	m.record(r, n, run, nil)
}

// fioRun converts fio's figures into a Run. fio does not count syscalls
// (-1), and its context-switch count does not tell voluntary from
// involuntary: it is reported as voluntary.
func fioRun(res *fio.Result) Run {
	passes := 1
	if res.PassBytes > 0 {
		passes = max(1, int((res.Bytes+res.PassBytes/2)/res.PassBytes))
	}
	return Run{
		Passes:     passes,
		Bytes:      res.Bytes,
		Blocks:     res.Blocks,
		WallNs:     res.RuntimeNs,
		BytesPerS:  res.BytesPerS,
		UserNs:     res.UserNs,
		SysNs:      res.SysNs,
		MinFlt:     res.MinFlt,
		MajFlt:     res.MajFlt,
		NVCSw:      res.Ctx,
		Syscalls:   -1,
		LatP50Ns:   res.LatP50Ns,
		LatP90Ns:   res.LatP90Ns,
		LatP99Ns:   res.LatP99Ns,
		LatP999Ns:  res.LatP999Ns,
		LatP9999Ns: res.LatP9999Ns,
		LatMaxNs:   res.LatMaxNs,

		Syncs:        res.SyncCount,
		SyncLatP50Ns: res.SyncLatP50Ns,
		SyncLatP99Ns: res.SyncLatP99Ns,
	}
}
