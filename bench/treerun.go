package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/perf"
)

// MeasureTree measures cfg: every engine reads the whole tree, in each
// cache state, cfg.Runs times, interleaved, each run a child process. As
// Measure, it returns a complete report even when engines failed.
func MeasureTree(ctx context.Context, cfg TreeConfig) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Dir = filepath.Clean(cfg.Dir)
	if err := CheckTreeDir(cfg.Dir); err != nil {
		return nil, err
	}
	if cfg.Archive != "" {
		st, err := os.Stat(cfg.Archive)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, &fs.PathError{Op: "bench --tree", Path: cfg.Archive, Err: fmt.Errorf("the archive is %w", engine.ErrNotRegular)}
		}
	}
	files, size, err := treeFiles(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, &fs.PathError{Op: "bench --tree", Path: cfg.Dir, Err: errors.New("no regular files under it: nothing to measure")}
	}
	rep := &Report{
		SchemaVersion: SchemaVersion,
		Tool:          ToolIopath,
		Command:       cfg.Command,
		Started:       time.Now().UTC().Truncate(time.Second),
		Machine:       features.DescribeMachine(cfg.Dir, cfg.Version),
		Tree: &TreeInfo{Dir: cfg.Dir, Files: int64(len(files)), Bytes: size, Temporary: cfg.TempDir,
			Archive: cfg.Archive},
		Sweep: Sweep{Workers: cfg.Workers},
		Notes: []string{},
	}
	for _, c := range cfg.Caches {
		rep.Sweep.Caches = append(rep.Sweep.Caches, string(c))
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
	paths, err := treePaths(cfg.Dir)
	if err != nil {
		return nil, err
	}
	ref, err := treeReference(ctx, cfg.Dir, paths)
	if err != nil {
		return nil, err
	}

	type trow struct {
		res   *Result
		flame *perf.Flame
		hist  *metrics.Histogram
		req   treeRequest
		skip  bool
	}
	var plan [][]*trow
	total := 0
	for _, cache := range cfg.Caches {
		var rows []*trow
		for _, name := range cfg.Engines {
			workers := cfg.Workers
			switch name {
			case "readfile", "archive":
				workers = []int{1}
			case "pool":
				workers = []int{cfg.PoolWorkers}
			}
			for _, w := range workers {
				job := batch.Job{Paths: paths, Workers: w, Depth: cfg.Depth, Latency: !cfg.NoLatency}
				qd := 0
				if name == "io_uring" {
					if qd = cfg.Depth; qd == 0 {
						qd = batch.DefaultDepth
					}
				}
				r := &trow{
					hist: metrics.NewHistogram(),
					req:  treeRequest{Engine: name, Job: job, Root: cfg.Dir},
					res: &Result{Tool: ToolIopath, Engine: name, Cache: string(cache), Pattern: "tree",
						Workers: w, QD: qd, Consume: string(Checksum), Runs: []Run{}},
				}
				if name == "archive" {
					if cfg.Archive == "" {
						r.res.Error = "not applicable: no archive of the tree (iopath pack DIR -o FILE)"
						r.skip = true
					}
					r.req.Job = batch.Job{Archive: cfg.Archive, Latency: !cfg.NoLatency}
					r.req.Root = ""
				}
				if cache != Cold {
					r.req.MinTimeNs = int64(cfg.MinTime)
					r.res.MinTimeNs = int64(cfg.MinTime)
				}
				rows = append(rows, r)
				if !r.skip {
					total += cfg.Runs
				}
			}
		}
		plan = append(plan, rows)
	}

	out := cfg.outputs()
	var names []string
	for n := range cfg.Runs {
		for _, rows := range plan {
			for _, r := range rows {
				if !r.skip {
					names = append(names, runName(r.res, n))
				}
			}
		}
	}
	notes, err := out.prepare(names)
	if err != nil {
		return nil, err
	}
	rep.Notes = append(rep.Notes, notes...)
	done := 0
	var ctxErr error
	var firstFail string
	for ci, rows := range plan {
		cache := cfg.Caches[ci]
	runs:
		for n := 0; n < cfg.Runs && ctxErr == nil; n++ {
			for _, r := range rows {
				if ctx.Err() != nil {
					ctxErr = ctx.Err()
					break runs
				}
				if r.skip {
					continue
				}
				done++
				if cfg.Progress != nil {
					cfg.Progress(done-1, total, fmt.Sprintf("%s w%d %s run %d/%d", r.res.Engine, r.res.Workers, cache, n+1, cfg.Runs))
				}
				// The archive engine's data is the archive; the others'
				// are the files.
				resident := func() (float64, error) { return treeResidency(files), nil }
				if r.res.Engine == "archive" {
					resident = func() (float64, error) { return residency(cfg.Archive) }
				}
				data, archive := files, ""
				if r.res.Engine == "archive" {
					data, archive = nil, cfg.Archive
				}
				prepare := func() (float64, error) {
					if cache == Cold {
						if err := dropTree(data, archive); err != nil {
							return 0, err
						}
					} else if res, err := resident(); err != nil || res < 1 {
						if err := warmTree(data, archive); err != nil {
							return 0, err
						}
					}
					return resident()
				}
				req := r.req
				cr := childRequest{Tree: &req}
				run, hist, notSupported, obs := out.observe(ctx, runName(r.res, n), &cr, func(wrap func(*exec.Cmd) error) (Run, *metrics.Histogram, bool) {
					return guard(ctx, cache, prepare, resident, func() (Run, *metrics.Histogram, time.Duration, bool) {
						return runChild(ctx, argv, &cr, wrap)
					})
				})
				if ctx.Err() != nil {
					ctxErr = ctx.Err()
					break runs
				}
				if notSupported {
					r.res.Error = run.Error
					r.skip = true
					continue
				}
				if run.Error == "" {
					ok := run.Checksum == ref
					run.ChecksumOK = &ok
					if !ok && r.res.Engine == "archive" {
						run.Error = staleArchive(cfg.Archive, cfg.Dir).Error()
					} else if !ok {
						run.Error = fmt.Sprintf("checksum mismatch: got %s, want %s (the tree's bytes as os.ReadFile reads them)", run.Checksum, ref)
					}
				}
				if run.Error == "" {
					addFlame(&r.flame, obs)
					if hist != nil {
						r.hist.Merge(hist)
					}
					if note := residencyNote(cache, n, run.ResidentBefore); note != "" {
						r.res.Notes = append(r.res.Notes, note)
					}
				} else if firstFail == "" {
					firstFail = fmt.Sprintf("%s %s: %s", r.res.Engine, cache, run.Error)
				}
				r.res.Runs = append(r.res.Runs, run)
			}
		}
		// Every planned row is in the report, those an interrupt kept
		// from running too.
		for _, r := range rows {
			summarize(r.res, r.hist)
			summarizeTree(r.res)
			r.res.Flame = prunedFlame(r.flame)
			if ctxErr != nil && !r.skip {
				cutShort(r.res, cfg.Runs)
			}
			rep.Results = append(rep.Results, *r.res)
		}
	}
	rep, err = finish(rep, cfg.Progress, total, ctxErr, nil, firstFail)
	if errors.Is(err, ErrChecksum) && !slices.ContainsFunc(rep.Results, func(r Result) bool {
		return r.Engine != "archive" && r.ChecksumOK != nil && !*r.ChecksumOK
	}) {
		// Only the archive disagreed with the tree: it is the pack that
		// is out of date, not an engine that is wrong.
		err = staleArchive(cfg.Archive, cfg.Dir)
	}
	return rep, err
}

// staleArchiveError is a checksum mismatch of the archive engine alone:
// the archive does not hold the tree's files as they are now.
// errors.Is(err, ErrChecksum) holds for it.
type staleArchiveError struct{ archive, dir string }

func staleArchive(archive, dir string) error { return &staleArchiveError{archive, dir} }

func (e *staleArchiveError) Error() string {
	return fmt.Sprintf("checksum mismatch: %s does not hold the files of %s as they are now (another tree's pack, or an old one): pack it again with iopath pack %s -o %s --force",
		units.QuotePath(e.archive), units.QuotePath(e.dir), units.QuotePath(e.dir), units.QuotePath(e.archive))
}

func (e *staleArchiveError) Unwrap() error { return ErrChecksum }

// CheckTreeDir says why dir cannot be measured as a tree: it is missing,
// not a directory, on a pseudo-filesystem (ErrPseudoFile), or holds no
// regular file (gen's marker is not one).
func CheckTreeDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return &fs.PathError{Op: "bench --tree", Path: dir, Err: errors.New("not a directory")}
	}
	if PseudoFile(dir) {
		return &fs.PathError{Op: "bench --tree", Path: dir, Err: ErrPseudoFile}
	}
	found := errors.New("found")
	marker := genMarker(dir)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && p != marker {
			return found
		}
		return nil
	})
	if err != found {
		return &fs.PathError{Op: "bench --tree", Path: dir, Err: errors.New("no regular files under it: nothing to measure")}
	}
	return nil
}

// summarizeTree fills the many-files figures from the runs that succeeded.
func summarizeTree(r *Result) {
	var ok []Run
	for _, run := range r.Runs {
		if run.Error == "" && run.Blocks > 0 {
			ok = append(ok, run)
		}
	}
	if len(ok) == 0 {
		return
	}
	per := func(get func(Run) float64) float64 { return stats.MedianOf(ok, get) }
	fps := func(x Run) float64 { return float64(x.Blocks) / secs(x.WallNs) }
	r.Files = int64(per(func(x Run) float64 { return float64(x.Blocks) / float64(max(x.Passes, 1)) }) + 0.5)
	r.FileErrors = int64(per(func(x Run) float64 { return float64(x.Errors) / float64(max(x.Passes, 1)) }) + 0.5)
	r.FilesPerS = per(fps)
	r.FilesPerSMin, r.FilesPerSMax = stats.MinMaxOf(ok, fps)
	r.SyscallsPerFile = per(func(x Run) float64 { return float64(x.Syscalls) / float64(x.Blocks) })
	r.CPUSPer1kFiles = per(func(x Run) float64 { return float64(x.UserNs+x.SysNs) / 1e9 / float64(x.Blocks) * 1000 })
	r.CSwPerFile = per(func(x Run) float64 { return float64(x.NVCSw+x.NIVCSw) / float64(x.Blocks) })
}
