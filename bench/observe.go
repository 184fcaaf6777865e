package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"

	"github.com/iopath/iopath/internal/outfile"
	"github.com/iopath/iopath/internal/perfctl"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/perf"
)

// What watches a run, beside its figures: a pprof CPU profile
// (--profile), a perf recording with kernel frames (--perf), an execution
// trace (--trace), and always the Go runtime's figures. The child starts
// them all just before its measured phase and stops them just after it
// (instruments); the runner makes the files they write and names them
// after the run (outputs).

// instruments watch a child's measured phase.
type instruments struct {
	prof  *os.File
	trace *os.File
	perf  *perfctl.Ctl
	rt    *metrics.RuntimeSampler
}

// startInstruments starts what req asks for, perf's recording when perf
// started this child, and the runtime sampler.
func startInstruments(req *childRequest) (*instruments, error) {
	in := &instruments{}
	if req.Profile != "" {
		f, err := os.OpenFile(req.Profile, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("profile: %w", err)
		}
		in.prof = f
	}
	if req.Trace != "" {
		f, err := os.OpenFile(req.Trace, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			in.stop()
			return nil, fmt.Errorf("trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			in.stop()
			return nil, fmt.Errorf("trace: %w", err)
		}
		in.trace = f
	}
	ctl, err := perfctl.FromEnv()
	if err != nil {
		in.stop()
		return nil, err
	}
	if ctl != nil {
		in.perf = ctl
		if _, err := ctl.Enable(); err != nil {
			in.stop()
			return nil, err
		}
	}
	in.rt = metrics.StartRuntime()
	return in, nil
}

// finish stops everything, puts the runtime's figures in resp, and says
// whether a file was cut short (a full disk): such a file must not pass
// for a whole one.
func (in *instruments) finish(resp *childResponse) error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	if in.perf != nil {
		if _, err := in.perf.Disable(); err != nil {
			keep(err)
		}
		in.perf.Close()
		in.perf = nil
	}
	if in.rt != nil {
		rt := in.rt.Stop()
		resp.Runtime = &rt
		in.rt = nil
	}
	if in.prof != nil {
		pprof.StopCPUProfile()
		if err := in.prof.Close(); err != nil {
			keep(fmt.Errorf("profile: %w", err))
		}
		in.prof = nil
	}
	if in.trace != nil {
		trace.Stop()
		if err := in.trace.Close(); err != nil {
			keep(fmt.Errorf("trace: %w", err))
		}
		in.trace = nil
	}
	return first
}

// stop is finish for the paths that failed.
func (in *instruments) stop() { in.finish(&childResponse{}) }

// outputs are the per-run files a benchmark writes beside its report, one
// directory per kind, each file named after its run.
type outputs struct {
	profileDir, perfDir, traceDir string
	replace                       bool
	perfFreq                      int
	track                         func(path string) (forget func())
	trackDir                      func(dir string) (forget func())
}

// Per-run file name suffixes.
const (
	profileExt = ".pprof"
	perfExt    = ".pb.gz"
	traceExt   = ".trace"
)

// files lists the files runs named base (runName) will write, in order.
func (o *outputs) files(bases []string) []string {
	var out []string
	for _, b := range bases {
		for _, d := range []struct{ dir, ext string }{{o.profileDir, profileExt}, {o.perfDir, perfExt}, {o.traceDir, traceExt}} {
			if d.dir != "" {
				out = append(out, filepath.Join(d.dir, b+d.ext))
			}
		}
	}
	return out
}

// prepare makes the directories and refuses, unless replacing, when one
// of the files exists. It returns the notes the report carries.
func (o *outputs) prepare(bases []string) ([]string, error) {
	for _, d := range []string{o.profileDir, o.perfDir, o.traceDir} {
		if d != "" {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
	}
	if !o.replace {
		for _, p := range o.files(bases) {
			if _, err := os.Lstat(p); err == nil {
				return nil, &fs.PathError{Op: "bench", Path: p, Err: outfile.ErrExists}
			}
		}
	}
	var notes []string
	if o.profileDir != "" {
		notes = append(notes, "profiled (--profile): each run's figures include pprof's sampling, about 1% of CPU")
	}
	if o.perfDir != "" {
		if info, err := perf.Probe(); err == nil {
			notes = append(notes, fmt.Sprintf("recorded (--perf): %s; each run's profile is in %s (go tool pprof -http :8080 FILE); the figures include perf's sampling, a few %% of CPU", info.Describe(o.perfFreq), o.perfDir))
		}
	}
	if o.traceDir != "" {
		notes = append(notes, "traced (--trace): each run's figures include the execution tracer's cost, which is large for engines that switch goroutines often")
	}
	return notes, nil
}

// observed is what one run's outputs gave.
type observed struct {
	samples *perf.Samples // nil without --perf, or when it failed
}

// observe runs one child through run with the outputs wanted: it makes
// each file's temporary beside its name, tells the child (cr) where to
// write, wraps the child in perf record, and after a good run renames
// the files into place, writes the perf profile and breaks its CPU down.
// A failed output fails the run with what went wrong.
func (o *outputs) observe(ctx context.Context, base string, cr *childRequest,
	run func(wrap func(*exec.Cmd) error) (Run, *metrics.Histogram, bool)) (Run, *metrics.Histogram, bool, observed) {
	var obs observed
	var temps []*outfile.Temp
	defer func() {
		for _, t := range temps {
			t.Abort() // whatever ended the run, no temporary file stays
		}
	}()
	mk := func(dir, ext string) (*outfile.Temp, error) {
		t, err := outfile.Create(filepath.Join(dir, base+ext), o.track)
		if err == nil {
			temps = append(temps, t)
		}
		return t, err
	}
	var prof, tr *outfile.Temp
	var err error
	if o.profileDir != "" {
		if prof, err = mk(o.profileDir, profileExt); err != nil {
			return Run{Error: fmt.Sprintf("profile: %v", err)}, nil, false, obs
		}
		cr.Profile = prof.Name()
	}
	if o.traceDir != "" {
		if tr, err = mk(o.traceDir, traceExt); err != nil {
			return Run{Error: fmt.Sprintf("trace: %v", err)}, nil, false, obs
		}
		cr.Trace = tr.Name()
	}
	var rec *perf.Recording
	var wrap func(*exec.Cmd) error
	if o.perfDir != "" {
		wrap = func(cmd *exec.Cmd) error {
			var err error
			rec, err = perf.Wrap(cmd, perf.Options{Track: o.trackDir, Freq: o.perfFreq})
			return err
		}
		defer func() {
			if rec != nil {
				rec.Close()
			}
		}()
	}
	r, hist, notSupported := run(wrap)
	if r.Error != "" || notSupported || ctx.Err() != nil {
		return r, hist, notSupported, obs
	}
	if rec != nil {
		s, err := rec.Read(ctx)
		if err != nil {
			r.Error = fmt.Sprintf("perf: %v", err)
			return r, hist, false, obs
		}
		err = outfile.Write(filepath.Join(o.perfDir, base+perfExt), o.replace, o.track, s.WriteProfile)
		if err != nil {
			r.Error = fmt.Sprintf("perf: %v", err)
			return r, hist, false, obs
		}
		b := s.Breakdown()
		r.Perf = &b
		r.PerfProfile = filepath.Join(o.perfDir, base+perfExt)
		obs.samples = s
	}
	for _, f := range []struct {
		t    *outfile.Temp
		what string
		set  *string
	}{{prof, "profile", &r.Profile}, {tr, "trace", &r.Trace}} {
		if f.t == nil {
			continue
		}
		if err := f.t.Commit(o.replace, false); err != nil {
			r.Error = fmt.Sprintf("%s: %v", f.what, err)
			return r, hist, false, obs
		}
		*f.set = f.t.Target()
	}
	return r, hist, false, obs
}

// runName is the base name of run n's files: engine, cache, pattern,
// block size, workers, queue depth and the run's number.
func runName(r *Result, n int) string {
	name := fmt.Sprintf("%s-%s-%s", r.Engine, r.Cache, r.Pattern)
	if r.Pattern != "tree" {
		name += "-bs" + units.FormatSize(int64(r.BS))
	}
	name += fmt.Sprintf("-w%d", r.Workers)
	if r.QD > 0 {
		name += fmt.Sprintf("-qd%d", r.QD)
	}
	return fmt.Sprintf("%s-run%d", name, n+1)
}

// flamePrune is the share of a row's samples below which a call is left
// out of the report's flame graph (its time stays in its caller).
const flamePrune = 0.005

// summarizeObserved fills r's breakdown (every good run's samples
// together) and its runtime figures (medians) from the good runs ok.
func summarizeObserved(r *Result, ok []Run) {
	var b *perf.Breakdown
	var rts []metrics.Runtime
	for _, run := range ok {
		if run.Perf != nil {
			if b == nil {
				b = &perf.Breakdown{}
			}
			*b = perf.Merge(*b, *run.Perf)
		}
		if run.Runtime != nil {
			rts = append(rts, *run.Runtime)
		}
	}
	r.Perf = b
	if len(rts) == 0 {
		return
	}
	med := func(get func(metrics.Runtime) int64) int64 {
		return int64(stats.MedianOf(rts, func(x metrics.Runtime) float64 { return float64(get(x)) }) + 0.5)
	}
	r.Runtime = &metrics.Runtime{
		ThreadsMax:     int(med(func(x metrics.Runtime) int64 { return int64(x.ThreadsMax) })),
		ThreadsStarted: int(med(func(x metrics.Runtime) int64 { return int64(x.ThreadsStarted) })),
		GoThreadsMax:   int(med(func(x metrics.Runtime) int64 { return int64(x.GoThreadsMax) })),
		GoroutinesMax:  int(med(func(x metrics.Runtime) int64 { return int64(x.GoroutinesMax) })),
		SchedWaitNs:    med(func(x metrics.Runtime) int64 { return x.SchedWaitNs }),
		SchedWaitP99Ns: med(func(x metrics.Runtime) int64 { return x.SchedWaitP99Ns }),
		GCCycles:       med(func(x metrics.Runtime) int64 { return x.GCCycles }),
		GCCPUNs:        med(func(x metrics.Runtime) int64 { return x.GCCPUNs }),
	}
}

// addFlame adds a run's samples to a row's call tree, made on first use.
func addFlame(f **perf.Flame, obs observed) {
	if obs.samples == nil {
		return
	}
	if *f == nil {
		*f = perf.NewFlame()
	}
	(*f).Add(obs.samples)
}

// prunedFlame is the report's copy of a row's call tree.
func prunedFlame(f *perf.Flame) *perf.Flame {
	if f == nil {
		return nil
	}
	return f.Prune(flamePrune)
}
