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
	"time"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
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
		Tool:          "iopath",
		Command:       cfg.Command,
		Started:       time.Now().UTC().Truncate(time.Second),
		Machine:       features.DescribeMachine(cfg.Path, cfg.Version),
		File:          FileInfo{Path: cfg.Path, SizeBytes: size, Temporary: cfg.TempFile},
		Notes:         []string{},
	}
	rep.Machine.LatencyClock = metrics.ClockSource()
	argv := cfg.ChildCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for child runs: %w", err)
		}
		argv = []string{exe}
	}

	var ref string
	if cfg.Consume == Checksum {
		if ref, err = referenceChecksum(cfg.Path, cfg.job(Warm).BlockSize); err != nil {
			return nil, err
		}
	}
	if rep.Machine.Filesystem == "tmpfs" {
		rep.Notes = append(rep.Notes, "the file is on tmpfs: its pages live in memory, so cold and direct runs read memory like warm ones")
	}

	type point struct {
		res  *Result
		hist *metrics.Histogram
		eng  engine.Engine
		skip bool // not applicable or not supported: no more runs
	}
	total := len(cfg.Caches) * len(cfg.Engines) * cfg.Runs
	done := 0
	var ctxErr error
	var firstFail string
	for _, cache := range cfg.Caches {
		job := cfg.job(cache)
		pts := make([]*point, len(cfg.Engines))
		for i, name := range cfg.Engines {
			e, _ := engine.Lookup(name)
			pts[i] = &point{
				eng:  e,
				hist: metrics.NewHistogram(),
				res: &Result{
					Engine: name, Cache: string(cache), Pattern: job.Pattern.String(),
					BS: job.BlockSize, Workers: job.Workers, QD: job.QueueDepth,
					Consume: string(cfg.Consume), Runs: []Run{},
				},
			}
			if cache != Cold {
				pts[i].res.MinTimeNs = int64(cfg.MinTime)
			}
			if cache == Direct && !e.Caps().Direct {
				pts[i].res.Error = "not applicable: " + name + " cannot bypass the page cache"
				pts[i].skip = true
			}
		}
	runs:
		for r := 0; r < cfg.Runs; r++ {
			for _, pt := range pts {
				if ctx.Err() != nil {
					ctxErr = ctx.Err()
					break runs
				}
				done++
				if pt.skip {
					continue
				}
				if cfg.Progress != nil {
					cfg.Progress(done-1, total, fmt.Sprintf("%s %s run %d/%d", pt.res.Engine, cache, r+1, cfg.Runs))
				}
				run, hist, notSupported := runOnce(ctx, argv, cfg, cache, pt.res.Engine, job)
				if ctx.Err() != nil {
					ctxErr = ctx.Err()
					break runs
				}
				if notSupported {
					pt.res.Error = run.Error
					pt.skip = true
					continue
				}
				if cfg.Consume == Checksum && !pt.eng.Caps().NoData && run.Error == "" {
					ok := run.Checksum == ref
					run.ChecksumOK = &ok
					if !ok {
						run.Error = fmt.Sprintf("checksum mismatch: got %s, want %s", run.Checksum, ref)
					}
				}
				if run.Error == "" {
					// Only good runs count towards the row's percentiles.
					pt.hist.Merge(hist)
					if note := residencyNote(cache, r, run.ResidentBefore); note != "" {
						pt.res.Notes = append(pt.res.Notes, note)
					}
				} else if firstFail == "" {
					firstFail = fmt.Sprintf("%s %s: %s", pt.res.Engine, cache, run.Error)
				}
				pt.res.Runs = append(pt.res.Runs, run)
			}
		}
		for _, pt := range pts {
			summarize(pt.res, pt.hist)
			rep.Results = append(rep.Results, *pt.res)
		}
		if ctxErr != nil {
			break
		}
	}
	if cfg.Progress != nil {
		cfg.Progress(total, total, "done")
	}
	if ctxErr != nil {
		rep.Notes = append(rep.Notes, "interrupted: the results are incomplete")
		return rep, ctxErr
	}
	for _, r := range rep.Results {
		if r.ChecksumOK != nil && !*r.ChecksumOK {
			return rep, ErrChecksum
		}
	}
	if firstFail != "" {
		return rep, fmt.Errorf("%w: %s", ErrFailed, firstFail)
	}
	return rep, nil
}

// checkFile returns path's size, or an error naming the path when it is
// not a readable, non-empty regular file.
func checkFile(path string) (int64, error) {
	var st sys.Stat_t
	if err := sys.Stat(path, &st); err != nil {
		return 0, err
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
	case sys.S_IFDIR:
		return 0, &fs.PathError{Op: "bench", Path: path, Err: errors.New("is a directory (give a file)")}
	default:
		return 0, &fs.PathError{Op: "bench", Path: path, Err: engine.ErrNotRegular}
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

// runOnce puts the file in the cache state, runs one child and converts its
// answer. notSupported says the engine cannot run here at all.
func runOnce(ctx context.Context, argv []string, cfg Config, cache Cache, name string, job engine.Job) (Run, *metrics.Histogram, bool) {
	var run Run
	hist := metrics.NewHistogram()
	res, err := prepareCache(cfg.Path, cache)
	if err != nil {
		run.Error = fmt.Sprintf("prepare %s cache: %v", cache, err)
		return run, hist, false
	}
	run.ResidentBefore = res
	cr := childRequest{Engine: name, Job: job, Consume: cfg.Consume}
	if cache != Cold {
		cr.MinTimeNs = int64(cfg.MinTime)
	}
	req, _ := json.Marshal(cr)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &limitedBuffer{b: &stderr, max: 64 << 10}
	if err := cmd.Run(); err != nil {
		run.Error = fmt.Sprintf("child process failed: %v%s", err, lastLine(stderr.String()))
		return run, hist, false
	}
	var resp childResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		run.Error = fmt.Sprintf("child process answered garbage: %v%s", err, lastLine(stderr.String()))
		return run, hist, false
	}
	if resp.Error != "" {
		run.Error = resp.Error
		return run, hist, resp.NotSupported
	}
	run.Passes = resp.Passes
	run.Bytes, run.Blocks, run.Syscalls = resp.Bytes, resp.Blocks, resp.Syscalls
	run.WallNs, run.SetupNs = resp.WallNs, resp.SetupNs
	if resp.WallNs > 0 {
		run.BytesPerS = float64(resp.Bytes) / (float64(resp.WallNs) / 1e9)
	}
	u := resp.Usage
	run.UserNs, run.SysNs = int64(u.User), int64(u.System)
	run.MinFlt, run.MajFlt, run.NVCSw, run.NIVCSw = u.MinFlt, u.MajFlt, u.NVCSw, u.NIVCSw
	run.Checksum = resp.Checksum
	if len(resp.Lat) > 0 {
		hist.AddBuckets(resp.Lat)
		run.LatP50Ns, run.LatP99Ns, run.LatP999Ns, run.LatMaxNs = hist.Quantile(50), hist.Quantile(99), hist.Quantile(99.9), hist.Max()
	}
	run.Notes = resp.Notes
	return run, hist, false
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

// summarize fills r's summary from its runs: medians over the runs that
// succeeded, min and max of throughput, percentiles over all their blocks.
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
	f := func(get func(Run) float64) float64 {
		v := make([]float64, len(ok))
		for i, run := range ok {
			v[i] = get(run)
		}
		return median(v)
	}
	// Counters are per pass over the file.
	i := func(get func(Run) int64) int64 {
		return int64(f(func(r Run) float64 { return float64(get(r)) / float64(max(r.Passes, 1)) }) + 0.5)
	}
	r.BytesPerS = f(func(x Run) float64 { return x.BytesPerS })
	r.BytesPerSMin, r.BytesPerSMax = ok[0].BytesPerS, ok[0].BytesPerS
	for _, run := range ok {
		r.BytesPerSMin = min(r.BytesPerSMin, run.BytesPerS)
		r.BytesPerSMax = max(r.BytesPerSMax, run.BytesPerS)
	}
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
	r.MinFlt = i(func(x Run) int64 { return x.MinFlt })
	r.MajFlt = i(func(x Run) int64 { return x.MajFlt })
	r.NVCSw = i(func(x Run) int64 { return x.NVCSw })
	r.NIVCSw = i(func(x Run) int64 { return x.NIVCSw })
	if hist.Count() > 0 {
		r.LatP50Ns, r.LatP99Ns, r.LatP999Ns, r.LatMaxNs = hist.Quantile(50), hist.Quantile(99), hist.Quantile(99.9), hist.Max()
	}
}

func secs(ns int64) float64 { return float64(max(ns, 1)) / 1e9 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

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
