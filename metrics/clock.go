package metrics

import (
	"os"
	"strings"
	"sync"
	_ "unsafe" // for go:linkname
)

// Nanotime is the runtime's monotonic clock in nanoseconds: one vDSO call
// (about 23 ns here), no wall-clock reading.
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64

// Ticks is the cheapest monotonic clock this machine has, for per-block
// latency where a clock read is paid twice per block: the CPU's time-stamp
// counter (RDTSC, about 8 ns) on amd64 when the kernel says it is invariant
// (constant_tsc and nonstop_tsc) and uses it as its own clocksource;
// Nanotime otherwise. Differences of Ticks become nanoseconds with
// TicksToNs. fio takes the same clock for the same reason.
func Ticks() int64 {
	if useTSC {
		return rdtsc()
	}
	return Nanotime()
}

// TicksToNs converts a difference of Ticks to nanoseconds.
func TicksToNs(d int64) int64 {
	if !useTSC {
		return d
	}
	return int64(float64(d) * nsPerTick)
}

// ClockSource says which clock Ticks reads: "tsc" or "nanotime".
func ClockSource() string {
	InitClock()
	if useTSC {
		return "tsc"
	}
	return "nanotime"
}

var (
	useTSC    bool
	nsPerTick float64
	clockOnce sync.Once
)

// InitClock chooses and calibrates the clock Ticks reads (about 2 ms, once
// per process). Call it during setup; NewHistogram calls it too, so the
// clock is settled before any latency is measured. Until then Ticks is
// Nanotime.
func InitClock() {
	clockOnce.Do(func() {
		if !haveRDTSC || os.Getenv("IOPATH_CLOCK") == "nanotime" || !tscInvariant() {
			return
		}
		if r := calibrate(); r > 0 {
			nsPerTick, useTSC = r, true
		}
	})
}

// tscInvariant reports whether the kernel trusts the TSC: it is constant
// and non-stop, and it is the current clocksource (so it is synchronised
// across CPUs, even in a VM).
func tscInvariant() bool {
	cs, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	if err != nil || strings.TrimSpace(string(cs)) != "tsc" {
		return false
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	s := string(info)
	if i := strings.Index(s, "\nflags"); i >= 0 {
		s = s[i:]
		if j := strings.IndexByte(s[1:], '\n'); j >= 0 {
			s = s[:j+1]
		}
	}
	flags := strings.Fields(s)
	has := func(f string) bool {
		for _, x := range flags {
			if x == f {
				return true
			}
		}
		return false
	}
	return has("constant_tsc") && has("nonstop_tsc")
}

// calibrate measures nanoseconds per TSC tick against Nanotime over about
// 2 ms, taking the middle of three tries; 0 when the TSC looks wrong.
func calibrate() float64 {
	var r [3]float64
	for i := range r {
		t0, c0 := Nanotime(), rdtsc()
		for Nanotime()-t0 < 700_000 {
		}
		t1, c1 := Nanotime(), rdtsc()
		if c1 <= c0 {
			return 0
		}
		r[i] = float64(t1-t0) / float64(c1-c0)
	}
	// median of three
	a, b, c := r[0], r[1], r[2]
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	if a > b {
		b = a
	}
	if b <= 0 || b > 10 { // under 100 MHz: not a TSC we trust
		return 0
	}
	return b
}
