package bench

import (
	"fmt"
	"runtime"
	"time"

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
	before, err := prepareCache(m.cfg.Path, cache)
	if err != nil {
		return Run{Error: fmt.Sprintf("prepare %s cache: %v", cache, err)}, nil, false
	}
	sys0, errS := metrics.SystemCPU()
	self0, errU := metrics.SelfUsage()
	t0 := time.Now()
	run, hist, childCPU, notSupported := fn()
	wall := time.Since(t0)
	sys1, errS1 := metrics.SystemCPU()
	self1, errU1 := metrics.SelfUsage()
	run.ResidentBefore = before
	if notSupported || m.ctx.Err() != nil {
		return run, hist, notSupported
	}
	if after, err := residency(m.cfg.Path); err == nil {
		run.ResidentAfter = after
	}
	if errS == nil && errS1 == nil && errU == nil && errU1 == nil {
		own := self1.Sub(self0)
		other := sys1 - sys0 - childCPU - own.User - own.System
		run.OtherCPUPct = max(0, 100*other.Seconds()/wall.Seconds())
	}
	run.Noisy = noisy(cache, run, wall)
	return run, hist, false
}

// noisy says why a run is noisy, or "" when it is not. /proc/stat counts in
// ticks, so the other processes' share must exceed the threshold by more
// than the sampling error (a tick per CPU at each end) before it counts.
func noisy(cache Cache, run Run, wall time.Duration) string {
	if run.Error != "" {
		return ""
	}
	slack := 100 * (2 * time.Duration(runtime.NumCPU()) * metrics.TickDuration).Seconds() / max(wall.Seconds(), 1e-3)
	var why []string
	if run.OtherCPUPct-slack > NoisyCPUPct {
		why = append(why, fmt.Sprintf("other processes used %.0f%% of a core", run.OtherCPUPct))
	}
	if cache == Warm && run.ResidentBefore >= warmAtLeast && run.ResidentAfter < warmAtLeast {
		why = append(why, fmt.Sprintf("the file lost cached pages while it ran (%.0f%% → %.0f%% resident)", 100*run.ResidentBefore, 100*run.ResidentAfter))
	}
	if len(why) == 0 {
		return ""
	}
	s := why[0]
	for _, w := range why[1:] {
		s += "; " + w
	}
	return s
}
