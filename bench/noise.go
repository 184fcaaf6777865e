package bench

import (
	"context"
	"fmt"
	"github.com/iopath/iopath/engine"
	"strings"
	"time"

	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/metrics"
)

// The noise guard. A run's figures are the engine's own only when nothing
// else competed for the machine while it ran, and, for a warm run, when the
// file stayed in the page cache. Around every run the runner samples the
// machine's busy CPU time (/proc/stat), its own CPU time, and the file's
// residency; the run's child reports its own CPU. What the machine spent
// beyond the child and the runner is other processes' work (or a
// hypervisor's steal). Noisy runs are marked and kept, not hidden.

// NoisyCPUPct is the share of one core that other processes may use during
// a run before the run is marked noisy.
const NoisyCPUPct = 10

// guarded puts the file in state cache, runs fn (which runs one child and
// returns its run and the child's whole CPU time), and fills in the run's
// residency after, the CPU everything else used meanwhile, and whether that
// makes the run noisy.
func (m *measurement) guarded(cache Cache, fn func() (Run, *metrics.Histogram, time.Duration, bool)) (Run, *metrics.Histogram, bool) {
	path := m.cfg.Path
	return guardWith(m.ctx, cache, m.cfg.Write,
		func() (float64, error) {
			if m.cfg.Write {
				if err := prepareWrite(path, m.cfg.Pattern == engine.Append); err != nil {
					return 0, err
				}
			}
			return prepareCache(path, cache)
		},
		func() (float64, error) { return residency(path) }, fn)
}

// guard is guarded for any data set: prepare puts it in the cache state and
// returns its residency, resident measures it again after the run.
func guard(ctx context.Context, cache Cache, prepare, resident func() (float64, error), fn func() (Run, *metrics.Histogram, time.Duration, bool)) (Run, *metrics.Histogram, bool) {
	return guardWith(ctx, cache, false, prepare, resident, fn)
}

// guardWith is guard; for a write run (writes), the CPU the kernel's
// worker threads used during the run (writing back its dirty pages) is
// not counted as other processes', but recorded in the run
// (Run.KworkerNs).
func guardWith(ctx context.Context, cache Cache, writes bool, prepare, resident func() (float64, error), fn func() (Run, *metrics.Histogram, time.Duration, bool)) (Run, *metrics.Histogram, bool) {
	before, err := prepare()
	if err != nil {
		return Run{Error: fmt.Sprintf("prepare %s cache: %v", cache, err)}, nil, false
	}
	var kw0 time.Duration
	errK := error(nil)
	if writes {
		kw0, errK = metrics.KworkerCPU()
	}
	sys0, errS := metrics.SystemCPU()
	self0, errU := metrics.SelfUsage()
	t0 := time.Now()
	run, hist, childCPU, notSupported := fn()
	wall := time.Since(t0)
	sys1, errS1 := metrics.SystemCPU()
	self1, errU1 := metrics.SelfUsage()
	if writes && errK == nil {
		if kw1, err := metrics.KworkerCPU(); err == nil && kw1 > kw0 {
			run.KworkerNs = int64(kw1 - kw0)
		}
	}
	run.ResidentBefore = before
	if notSupported || ctx.Err() != nil {
		return run, hist, notSupported
	}
	if after, err := resident(); err == nil {
		run.ResidentAfter = after
	}
	slack := 100.0 // unknown
	if errS == nil && errS1 == nil && errU == nil && errU1 == nil {
		own := self1.Sub(self0)
		run.OtherCPUPct = otherCPUPct(sys1.Busy-sys0.Busy, childCPU+own.User+own.System+time.Duration(run.KworkerNs), wall)
		slack = tickSlackPct(sys1.Moved(sys0), wall)
	}
	run.Noisy, run.NoiseUnknown = noisy(cache, run, slack)
	return run, hist, false
}

// otherCPUPct is the CPU the rest of the machine used while a run took
// wall, in % of one core: the machine's busy time less what the run's child
// and the runner used.
func otherCPUPct(busy, ours, wall time.Duration) float64 {
	return max(0, 100*(busy-ours).Seconds()/max(wall.Seconds(), 1e-9))
}

// tickSlackPct is the rounding error of a /proc/stat difference over wall,
// in % of one core: each CPU's count is in whole ticks, so the difference
// of two samples of a CPU that was busy may be off by up to a tick. Idle
// CPUs add nothing, so the slack does not grow with the number of cores.
func tickSlackPct(moved int, wall time.Duration) float64 {
	return 100 * (time.Duration(moved) * metrics.TickDuration).Seconds() / max(wall.Seconds(), 1e-9)
}

// noisy says why a run is noisy ("" when it is not), and whether it was too
// short to judge the CPU of other processes: their share must exceed
// NoisyCPUPct by more than slackPct, the sampling error (stats.Exceeds,
// the generic rule; the cache check below is this package's own policy).
func noisy(cache Cache, run Run, slackPct float64) (why string, unknown bool) {
	if run.Error != "" {
		return "", false
	}
	var reasons []string
	over, unknown := stats.Exceeds(run.OtherCPUPct, NoisyCPUPct, slackPct)
	if over {
		reasons = append(reasons, fmt.Sprintf("other processes used %.0f%% of a core", run.OtherCPUPct))
	}
	if cache == Warm && run.ResidentBefore >= warmAtLeast && run.ResidentAfter < warmAtLeast {
		reasons = append(reasons, fmt.Sprintf("the file lost cached pages while it ran (%.0f%% → %.0f%% resident)", 100*run.ResidentBefore, 100*run.ResidentAfter))
	}
	return strings.Join(reasons, "; "), unknown
}
