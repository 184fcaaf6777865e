package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/fio"
	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/perf"
)

// ErrChecksum is returned (with the full report) when an engine delivered
// bytes that differ from the reference read.
var ErrChecksum = errors.New("checksum mismatch: an engine delivered wrong bytes")

// ErrFailed is returned (with the full report) when a run failed. Engines
// that cannot run here at all (not supported, not applicable) are not
// failures: their rows say why.
var ErrFailed = errors.New("a run failed")

// Measure measures cfg and returns the report. The report is complete and valid
// even when some engines failed: their rows carry the error. The returned
// error is ErrChecksum when bytes differed, a context error when cancelled
// (with the report so far), or an error that prevented measuring at all
// (then the report is nil).
func Measure(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	size, err := checkFile(cfg.Path)
	if err != nil {
		return nil, err
	}
	rep := &Report{
		SchemaVersion: SchemaVersion,
		Tool:          ToolIopath,
		Command:       cfg.Command,
		Started:       time.Now().UTC().Truncate(time.Second),
		Machine:       features.DescribeMachine(cfg.Path, cfg.Version),
		File:          FileInfo{Path: cfg.Path, SizeBytes: size, Temporary: cfg.TempFile},
		Sweep: Sweep{BlockSizes: cfg.BlockSizes, Workers: cfg.Workers, QueueDepths: cfg.QueueDepths,
			Caches: make([]string, len(cfg.Caches))},
		Notes: []string{},
	}
	for i, c := range cfg.Caches {
		rep.Sweep.Caches[i] = string(c)
	}
	rep.Machine.LatencyClock = metrics.ClockSource()
	pl := features.BufferPlacement()
	rep.Machine.BufferPlacement = &pl
	mc := features.MappedCopy()
	rep.Machine.MappedCopy = &mc
	argv := cfg.ChildCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for child runs: %w", err)
		}
		argv = []string{exe}
	}
	notes, err := cfg.outputs().prepare(cfg.runNames())
	if err != nil {
		return nil, err
	}
	rep.Notes = append(rep.Notes, notes...)
	if cfg.Fio != nil {
		rep.Fio = &FioInfo{Path: cfg.Fio.Path, Version: cfg.Fio.Version}
		if rep.Machine.LatencyClock == "tsc" {
			rep.Notes = append(rep.Notes, "fio times each I/O with the TSC (--clocksource=cpu), as iopath does; with its default clock_gettime fio loses about 7% of its 4 KiB random-read IOPS to timekeeping")
		}
	}
	if cfg.Write {
		rep.Notes = append(rep.Notes, writeNotes(&cfg)...)
	}
	if rep.Machine.Filesystem == "tmpfs" {
		rep.Notes = append(rep.Notes, "the file is on tmpfs: its pages live in memory, so cold and direct runs read memory like warm ones")
	}

	m := &measurement{ctx: ctx, cfg: &cfg, argv: argv, size: size, refs: map[int]string{}}
	pts := cfg.points()
	var plans [][]*row
	total := 0
	for _, cache := range cfg.Caches {
		for _, p := range pts {
			rows := m.rows(cache, p)
			plans = append(plans, rows)
			for _, r := range rows {
				if !r.skip {
					total += cfg.Runs
				}
			}
		}
	}
	m.total = total

	// Every planned row is in the report, those an interrupt kept from
	// running too: they say so rather than vanish or show zeros.
	var ctxErr error
	for _, rows := range plans {
		if ctxErr == nil {
			ctxErr = m.point(rows)
		}
		for _, r := range rows {
			r.summarize()
			if ctxErr != nil && !r.skip {
				cutShort(r.res, cfg.Runs)
			}
		}
		pairTwins(rows)
		for _, r := range rows {
			rep.Results = append(rep.Results, *r.res)
		}
	}
	return finish(rep, cfg.Progress, total, ctxErr, m.refErr, m.firstFail)
}

// cutShort marks r, which an interrupt stopped before its planned runs
// were all made: a row with runs keeps their figures and says how many
// there are; a row without any has the error InterruptedError. A row with
// all its runs is left alone.
func cutShort(r *Result, planned int) {
	if len(r.Runs) >= planned {
		return
	}
	r.Interrupted = true
	if len(r.Runs) == 0 {
		if r.Error == "" {
			r.Error = InterruptedError
		}
		return
	}
	r.Notes = append(r.Notes, fmt.Sprintf("interrupted: %d of %d runs made", len(r.Runs), planned))
}

// finish ends a measurement, of a file or of a tree: the progress callback
// is told it is done, the report gets its closing notes, and the error
// says what went wrong, in order of weight: interrupted, no reference, a
// checksum mismatch, nothing measured at all, a failed run. The report is
// returned whole in every case.
func finish(rep *Report, progress func(done, total int, what string), total int, ctxErr, refErr error, firstFail string) (*Report, error) {
	if progress != nil {
		progress(total, total, "done")
	}
	if n := unjudged(rep.Results); n > 0 {
		runs := fmt.Sprintf("%d runs were", n)
		if n == 1 {
			runs = "1 run was"
		}
		rep.Notes = append(rep.Notes, runs+" too short (under about 200 ms) for the noise guard to tell whether other processes competed with them: /proc/stat counts 10 ms ticks")
	}
	if ctxErr != nil {
		rep.Interrupted = true
		rep.Notes = append(rep.Notes, "interrupted: the results are incomplete")
		return rep, ctxErr
	}
	if refErr != nil {
		return rep, refErr
	}
	for _, r := range rep.Results {
		if r.ChecksumOK != nil && !*r.ChecksumOK {
			return rep, ErrChecksum
		}
	}
	if err := nothingMeasured(rep.Results); err != nil {
		return rep, err
	}
	if firstFail != "" {
		return rep, fmt.Errorf("%w: %s", ErrFailed, firstFail)
	}
	return rep, nil
}

// ErrNothingMeasured is returned (with the full report) when no row
// could make a single good run: every engine was unavailable, not
// applicable or failed. Its message gives their reasons.
var ErrNothingMeasured = errors.New("nothing could be measured")

// nothingMeasured returns ErrNothingMeasured with the rows' reasons when
// no row has a run that succeeded, else nil.
func nothingMeasured(results []Result) error {
	var why []string
	for _, r := range results {
		for _, run := range r.Runs {
			if run.Error == "" {
				return nil
			}
		}
		name := r.Engine
		if r.Tool == ToolFio {
			name = "fio " + name
		}
		reason := name + ": " + r.Error
		if r.Error == "" {
			reason = name + ": no run"
		}
		if !slices.Contains(why, reason) {
			why = append(why, reason)
		}
	}
	return fmt.Errorf("%w: %s", ErrNothingMeasured, strings.Join(why, "; "))
}

// unjudged counts the runs the noise guard could not judge.
func unjudged(results []Result) int {
	n := 0
	for _, r := range results {
		for _, run := range r.Runs {
			if run.NoiseUnknown {
				n++
			}
		}
	}
	return n
}

// measurement is the state of one Measure call.
type measurement struct {
	ctx       context.Context
	cfg       *Config
	argv      []string
	size      int64
	refs      map[int]string // reference checksum by block size
	refErr    error
	total     int
	done      int
	firstFail string
}

// row is one line of the report being measured: an iopath engine or a fio
// twin at one point and cache state.
type row struct {
	res   *Result
	flame *perf.Flame        // --perf: every good run's call tree
	hist  *metrics.Histogram // iopath rows: every good run's blocks
	eng   engine.Engine      // nil for fio rows and writers
	caps  engine.Caps        // the engine's (iopath rows)
	job   engine.Job
	fio   *fio.Job // fio rows only
	ours  *row     // fio rows: the iopath row it mirrors
	skip  bool     // not applicable or not supported: no more runs
}

// rows lists the rows of one point: each engine, followed by its fio twin
// when fio runs. Engines without a queue appear only at the first queue
// depth of the sweep.
func (m *measurement) rows(cache Cache, p point) []*row {
	cfg := m.cfg
	job := cfg.job(cache, p)
	var rows []*row
	for _, name := range cfg.Engines {
		caps, _ := cfg.lookup(name)
		var e engine.Engine
		if !cfg.Write {
			e, _ = engine.Lookup(name)
		}
		qd := 0
		if caps.Queue {
			qd = job.QueueDepth
		} else if p.qd != cfg.QueueDepths[0] {
			continue
		}
		r := &row{
			eng:  e,
			caps: caps,
			job:  job,
			hist: metrics.NewHistogram(),
			res: &Result{
				Tool: ToolIopath, Engine: name, Cache: string(cache), Pattern: job.Pattern.String(),
				BS: job.BlockSize, Workers: job.Workers, QD: qd,
				Consume: string(cfg.Consume), Runs: []Run{},
			},
		}
		if cfg.Write {
			r.res.Pattern, r.res.Sync, r.res.Consume = writePattern(job.Pattern), cfg.Sync.String(), ""
			if job.Pattern == engine.Append {
				r.job.Size = m.size // appended to the emptied file
			}
		} else if cache != Cold {
			r.res.MinTimeNs = int64(cfg.MinTime)
		}
		if cache == Direct && !caps.Direct {
			r.res.Error = "not applicable: " + name + " cannot bypass the page cache"
			r.skip = true
		}
		rows = append(rows, r)
		if cfg.Fio != nil {
			if f := m.fioRow(r); f != nil {
				rows = append(rows, f)
			}
		}
	}
	return rows
}

// point runs every row of one point, interleaved: all rows' first runs,
// then all rows' second runs, and so on.
func (m *measurement) point(rows []*row) error {
	for run := 0; run < m.cfg.Runs; run++ {
		for _, r := range rows {
			if err := m.ctx.Err(); err != nil {
				return err
			}
			if r.fio != nil && r.ours.skip && !r.skip {
				// Our engine cannot run here: a fio row alone would
				// compare with nothing.
				r.res.Error = "not applicable: iopath's " + r.ours.res.Engine + " could not run here"
				r.skip = true
			}
			if r.skip {
				continue
			}
			m.done++
			if m.cfg.Progress != nil {
				m.cfg.Progress(m.done-1, m.total, fmt.Sprintf("%s %s run %d/%d", r.label(), r.res.Cache, run+1, m.cfg.Runs))
			}
			if r.fio != nil {
				m.runFio(r, run)
			} else {
				m.runEngine(r, run)
			}
			if err := m.ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// label names a row in progress lines and errors: "pread", "fio psync";
// with the point when the sweep has more than one.
func (r *row) label() string {
	l := r.res.Engine
	if r.res.Tool == ToolFio {
		l = "fio " + l
	}
	if r.res.QD > 0 {
		l += fmt.Sprintf(" qd%d", r.res.QD)
	}
	return fmt.Sprintf("%s bs %s w%d", l, units.FormatSize(int64(r.res.BS)), r.res.Workers)
}

// runEngine makes one run of an iopath engine row.
func (m *measurement) runEngine(r *row, n int) {
	cfg := m.cfg
	cache := Cache(r.res.Cache)
	var ref string
	if cfg.Consume == Checksum && !r.caps.NoData && !cfg.Write {
		var ok bool
		if ref, ok = m.reference(r.job.BlockSize); !ok {
			r.res.Error = "no reference checksum: " + m.refErr.Error()
			r.skip = true
			return
		}
	}
	out := cfg.outputs()
	cr := childRequest{Engine: r.res.Engine, Job: r.job, Consume: cfg.Consume, Write: cfg.Write}
	if cache != Cold && !cfg.Write {
		cr.MinTimeNs = int64(cfg.MinTime)
	}
	run, hist, notSupported, obs := out.observe(m.ctx, runName(r.res, n), &cr, func(wrap func(*exec.Cmd) error) (Run, *metrics.Histogram, bool) {
		return m.guarded(cache, func() (Run, *metrics.Histogram, time.Duration, bool) {
			return runChild(m.ctx, m.argv, &cr, wrap)
		})
	})
	if m.ctx.Err() != nil {
		return
	}
	if notSupported {
		r.res.Error = run.Error
		r.skip = true
		return
	}
	if run.Error == "" {
		addFlame(&r.flame, obs)
	}
	if cfg.Write && run.Verified != "" {
		ok := true
		run.ChecksumOK = &ok
	}
	if ref != "" && run.Error == "" {
		ok := run.Checksum == ref
		run.ChecksumOK = &ok
		if !ok {
			run.Error = fmt.Sprintf("checksum mismatch: got %s, want %s", run.Checksum, ref)
		}
	}
	m.record(r, n, run, hist)
}

// record adds run n to r: to the figures when it succeeded, to the first
// failure otherwise.
func (m *measurement) record(r *row, n int, run Run, hist *metrics.Histogram) {
	if run.Error == "" {
		// Only good runs count towards the row's percentiles.
		if hist != nil {
			r.hist.Merge(hist)
		}
		if note := residencyNote(Cache(r.res.Cache), n, run.ResidentBefore); note != "" {
			r.res.Notes = append(r.res.Notes, note)
		}
	} else if m.firstFail == "" {
		m.firstFail = fmt.Sprintf("%s %s: %s", r.label(), r.res.Cache, run.Error)
	}
	r.res.Runs = append(r.res.Runs, run)
}

// reference returns the pread checksum of the file at block size bs,
// computing it the first time.
func (m *measurement) reference(bs int) (string, bool) {
	if m.refErr != nil {
		return "", false
	}
	if ref, ok := m.refs[bs]; ok {
		return ref, true
	}
	ref, err := referenceChecksum(m.cfg.Path, bs)
	if err != nil {
		m.refErr = err
		return "", false
	}
	m.refs[bs] = ref
	return ref, true
}

// ErrPseudoFile is the cause (inside an *fs.PathError naming the path)
// when a file or tree to measure is on a pseudo-filesystem: /proc, /sys,
// debugfs, cgroup and the like (see PseudoFile).
var ErrPseudoFile = errors.New("a pseudo-file (procfs, sysfs...): the kernel makes its content as it is read, so it has no stable size to benchmark")

// PseudoFile reports whether path (a file or a directory) is on a
// pseudo-filesystem, whose files' content the kernel makes as they are
// read and whose st_size (0, or 4096) says nothing about it: a benchmark
// of such a file would measure the kernel's formatting, a different
// amount each pass.
func PseudoFile(path string) bool {
	typ, err := sys.StatfsType(path)
	return err == nil && sys.PseudoFS(typ)
}

// checkFile returns path's size, or an error naming the path when it is
// not a readable, non-empty regular file with a stable size.
func checkFile(path string) (int64, error) {
	var st sys.Stat_t
	if err := sys.Stat(path, &st); err != nil {
		return 0, err
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
	case sys.S_IFDIR:
		return 0, &fs.PathError{Op: "bench", Path: path, Err: errors.New("is a directory (give a file, or use --tree to read a tree of files)")}
	case sys.S_IFIFO:
		return 0, &fs.PathError{Op: "bench", Path: path, Err: fmt.Errorf("%w: a named pipe (a benchmark reads a file of a fixed size, several times)", engine.ErrNotRegular)}
	case sys.S_IFCHR, sys.S_IFBLK:
		return 0, &fs.PathError{Op: "bench", Path: path, Err: fmt.Errorf("%w: a device (bench reads regular files)", engine.ErrNotRegular)}
	default:
		return 0, &fs.PathError{Op: "bench", Path: path, Err: engine.ErrNotRegular}
	}
	if PseudoFile(path) {
		return 0, &fs.PathError{Op: "bench", Path: path, Err: ErrPseudoFile}
	}
	if st.Size == 0 {
		return 0, &fs.PathError{Op: "bench", Path: path, Err: errors.New("file is empty: nothing to measure")}
	}
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		return 0, err
	}
	sys.Close(fd)
	return st.Size, nil
}

// runChild starts one child with req on its stdin and converts its answer
// into a Run, for one file and for a tree alike.
// wrap, when set, changes the command before it starts (perf.Wrap).
func runChild(ctx context.Context, argv []string, cr *childRequest, wrap func(*exec.Cmd) error) (run Run, hist *metrics.Histogram, childCPU time.Duration, notSupported bool) {
	hist = metrics.NewHistogram()
	req, _ := json.Marshal(cr)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// Every child places its buffers where this process measured to be
	// best, rather than each measuring again (and perhaps differently).
	cmd.Env = append(os.Environ(), ChildEnv+"=1", fmt.Sprintf("%s=%d", fileio.SkewEnv, fileio.BufferSkew()),
		fileio.CopyEnv+"="+fileio.MappedCopy().Routine)
	// A child must not outlive the bench: cancelling ctx kills it, and so
	// does the kernel if this process dies without running its defers
	// (a second Ctrl-C, SIGKILL). Pdeathsig follows the forking thread,
	// which Go ends only when a goroutine exits locked to it; engines,
	// which do, run in the children, not here.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &limitedBuffer{b: &stderr, max: 64 << 10}
	if wrap != nil {
		if err := wrap(cmd); err != nil {
			run.Error = err.Error()
			return run, hist, 0, false
		}
	}
	err := cmd.Run()
	childCPU = processCPU(cmd.ProcessState)
	if err != nil {
		run.Error = fmt.Sprintf("child process failed: %v%s", err, lastLine(stderr.String()))
		return run, hist, childCPU, false
	}
	var resp childResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		run.Error = fmt.Sprintf("child process answered garbage: %v%s", err, lastLine(stderr.String()))
		return run, hist, childCPU, false
	}
	if resp.Error != "" {
		run.Error = resp.Error
		if resp.Mismatch {
			ok := false
			run.ChecksumOK = &ok
		}
		return run, hist, childCPU, resp.NotSupported
	}
	run.Syncs, run.Verified = resp.Syncs, resp.Verified
	if len(resp.SyncLat) > 0 {
		sh := metrics.NewHistogram()
		sh.AddBuckets(resp.SyncLat)
		run.SyncLatP50Ns, run.SyncLatP99Ns = sh.Quantile(50), sh.Quantile(99)
	}
	run.Passes = resp.Passes
	run.Bytes, run.Blocks, run.Errors, run.Syscalls = resp.Bytes, resp.Blocks, resp.Errors, resp.Syscalls
	run.WallNs, run.SetupNs = resp.WallNs, resp.SetupNs
	if resp.WallNs > 0 {
		run.BytesPerS = float64(resp.Bytes) / (float64(resp.WallNs) / 1e9)
	}
	u := resp.Usage
	run.UserNs, run.SysNs = int64(u.User), int64(u.System)
	run.MinFlt, run.MajFlt, run.NVCSw, run.NIVCSw = u.MinFlt, u.MajFlt, u.NVCSw, u.NIVCSw
	run.IOThreadNs = resp.IOThreadNs
	run.Checksum = resp.Checksum
	if len(resp.Lat) > 0 {
		hist.AddBuckets(resp.Lat)
		run.LatP50Ns, run.LatP90Ns, run.LatP99Ns = hist.Quantile(50), hist.Quantile(90), hist.Quantile(99)
		run.LatP999Ns, run.LatP9999Ns, run.LatMaxNs = hist.Quantile(99.9), hist.Quantile(99.99), hist.Max()
	}
	run.Notes = resp.Notes
	run.Runtime = resp.Runtime
	return run, hist, childCPU, false
}

// processCPU is a finished process's user+system CPU time.
func processCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// Residency a run must start with to be what its cache state says.
const (
	warmAtLeast = 0.99
	coldAtMost  = 0.01
)

// residencyNote says when run r (0-based) did not start in the cache state
// it was meant to: the run is kept and shown, with this note beside it.
func residencyNote(c Cache, r int, res float64) string {
	switch {
	case c == Warm && res < warmAtLeast:
		return fmt.Sprintf("warm run %d started with only %.0f%% of the file cached (is it larger than free memory?)", r+1, 100*res)
	case (c == Cold || c == Direct) && res > coldAtMost:
		return fmt.Sprintf("%s run %d started with %.0f%% of the file cached (does another process hold its pages?)", c, r+1, 100*res)
	}
	return ""
}

// summarize fills the row's summary from its runs.
func (r *row) summarize() {
	summarize(r.res, r.hist)
	r.res.Flame = prunedFlame(r.flame)
}

// pairTwins links each iopath row with its fio twin at the same point and
// cache state and sets the iopath row's ratio to it.
func pairTwins(rows []*row) {
	for i, r := range rows {
		if r.res.Tool != ToolFio || i == 0 {
			continue
		}
		ours := rows[i-1].res // a fio row follows its twin
		ours.Twin = r.res.Engine
		if ours.Error == "" && r.res.Error == "" && r.res.BytesPerS > 0 {
			ours.VsFio = ours.BytesPerS / r.res.BytesPerS
		}
	}
}

// summarize fills r's summary from its runs: medians over the runs that
// succeeded, min and max of throughput, percentiles over all their blocks
// (for fio rows, which have no histogram, medians of the runs'
// percentiles).
func summarize(r *Result, hist *metrics.Histogram) {
	var ok []Run
	for _, run := range r.Runs {
		if run.Error != "" {
			if r.Error == "" {
				r.Error = run.Error
			}
			continue
		}
		ok = append(ok, run)
	}
	for _, run := range r.Runs {
		if run.Noisy != "" {
			r.NoisyRuns++
		}
		for _, n := range run.Notes {
			if !slices.Contains(r.Notes, n) {
				r.Notes = append(r.Notes, n)
			}
		}
		if run.ChecksumOK != nil {
			if r.ChecksumOK == nil {
				v := true
				r.ChecksumOK = &v
			}
			if !*run.ChecksumOK {
				v := false
				r.ChecksumOK = &v
			}
		}
	}
	if len(ok) == 0 {
		return
	}
	f := func(get func(Run) float64) float64 { return stats.MedianOf(ok, get) }
	// Counters are per pass over the file.
	i := func(get func(Run) int64) int64 {
		return int64(f(func(r Run) float64 { return float64(get(r)) / float64(max(r.Passes, 1)) }) + 0.5)
	}
	r.BytesPerS = f(func(x Run) float64 { return x.BytesPerS })
	r.BytesPerSMin, r.BytesPerSMax = stats.MinMaxOf(ok, func(x Run) float64 { return x.BytesPerS })
	r.IOPS = f(func(x Run) float64 { return float64(x.Blocks) / secs(x.WallNs) })
	r.CPUSPerGiB = f(func(x Run) float64 {
		if x.Bytes == 0 {
			return 0
		}
		return float64(x.UserNs+x.SysNs) / 1e9 / (float64(x.Bytes) / (1 << 30))
	})
	r.UsrPct = f(func(x Run) float64 { return 100 * float64(x.UserNs) / float64(max(x.WallNs, 1)) })
	r.SysPct = f(func(x Run) float64 { return 100 * float64(x.SysNs) / float64(max(x.WallNs, 1)) })
	r.Syscalls = i(func(x Run) int64 { return x.Syscalls })
	r.SyncsPerPass = i(func(x Run) int64 { return x.Syncs })
	r.SyncLatP50Ns = int64(f(func(x Run) float64 { return float64(x.SyncLatP50Ns) }))
	r.SyncLatP99Ns = int64(f(func(x Run) float64 { return float64(x.SyncLatP99Ns) }))
	if ok[0].Syscalls < 0 {
		r.Syscalls = -1 // not counted (fio rows)
	}
	summarizeObserved(r, ok)
	r.MinFlt = i(func(x Run) int64 { return x.MinFlt })
	r.MajFlt = i(func(x Run) int64 { return x.MajFlt })
	r.NVCSw = i(func(x Run) int64 { return x.NVCSw })
	r.NIVCSw = i(func(x Run) int64 { return x.NIVCSw })
	r.IOThreadCPUSPerGiB = f(func(x Run) float64 {
		if x.Bytes == 0 {
			return 0
		}
		return float64(x.IOThreadNs) / 1e9 / (float64(x.Bytes) / (1 << 30))
	})
	if hist != nil && hist.Count() > 0 {
		r.LatP50Ns, r.LatP90Ns, r.LatP99Ns = hist.Quantile(50), hist.Quantile(90), hist.Quantile(99)
		r.LatP999Ns, r.LatP9999Ns, r.LatMaxNs = hist.Quantile(99.9), hist.Quantile(99.99), hist.Max()
	} else {
		l := func(get func(Run) int64) int64 { return int64(f(func(x Run) float64 { return float64(get(x)) })) }
		r.LatP50Ns, r.LatP90Ns, r.LatP99Ns = l(func(x Run) int64 { return x.LatP50Ns }), l(func(x Run) int64 { return x.LatP90Ns }), l(func(x Run) int64 { return x.LatP99Ns })
		r.LatP999Ns, r.LatP9999Ns = l(func(x Run) int64 { return x.LatP999Ns }), l(func(x Run) int64 { return x.LatP9999Ns })
		for _, x := range ok {
			r.LatMaxNs = max(r.LatMaxNs, x.LatMaxNs)
		}
	}
}

func secs(ns int64) float64 { return float64(max(ns, 1)) / 1e9 }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + s
}

// limitedBuffer keeps at most max bytes of a child's stderr.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
