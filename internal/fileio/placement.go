package fileio

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// Where a buffered read's destination starts within a page changes the
// speed of the kernel's copy from the page cache, and the best place
// differs between CPUs (docs/engines.md): on an Intel Xeon a buffer 16
// bytes past a page boundary copied 15-20% faster than a page-aligned one
// (4K aliasing of the copy's loads and stores); on an AMD EPYC the same
// 16 bytes cost 15% and page-aligned was best. No constant is right on
// both, so the skew is measured on the machine: once per process, by
// copying from a small unnamed file in the page cache into a buffer at
// each candidate, or taken from SkewEnv.

// SkewEnv names the environment variable that sets the skew without
// measuring: bytes past a page boundary, 0 to MaxSkew. iopath bench
// measures once and hands its choice to every child run through it, so
// that all runs of a report place their buffers alike.
const SkewEnv = "IOPATH_BUFFER_SKEW"

// MaxSkew is the largest skew SkewEnv accepts.
const MaxSkew = 2048

// SkewCandidates are the skews the calibration tries: each the best of
// one CPU measured and the worst of the other.
var SkewCandidates = []int{0, 16}

// Calibration parameters. A pass copies calibrateFile bytes in
// calibrateBlock reads (the benchmarks' default block). Each round passes
// once at every candidate, back to back, the order alternating, and
// compares each candidate's pass with the first candidate's of the same
// round: the median of those ratios is what decides, since a loaded
// machine slows both passes of a round alike far more often than it
// slows one. A candidate must beat the first by skewMargin to be chosen:
// the effect, where there is one, is 15-20%.
const (
	calibrateFile   = 1 << 20
	calibrateBlock  = 128 << 10
	calibrateRounds = 11
	skewMargin      = 0.04
	// calibrateMin is the smallest buffer whose allocation measures the
	// skew when it is not known yet; smaller ones take the skew if it is
	// known and start on a page boundary otherwise, so that a program
	// reading only small files never pays for the calibration (a few
	// milliseconds).
	calibrateMin = 64 << 10
)

// SkewTrial is one candidate's figure from the calibration.
type SkewTrial struct {
	Skew  int     `json:"skew_bytes"`
	GiBps float64 `json:"gib_per_s"` // its fastest pass
	// Speedup is the median over rounds of the first candidate's pass
	// time over this one's (1 for the first; above 1 is faster).
	Speedup float64 `json:"speedup"`
}

// Placement is the skew buffered reads use and how it was chosen.
type Placement struct {
	Skew   int         `json:"skew_bytes"`
	Source string      `json:"source"` // "calibrated in the ..." and where, SkewEnv, or "default: " and why the calibration failed
	Trials []SkewTrial `json:"trials,omitempty"`
}

// String is one line for a report: "0 B past a page (calibrated in the
// page cache of /tmp: 0 B 30.8 GiB/s, 16 B 28.4 GiB/s (0.91×))".
func (p Placement) String() string {
	return fmt.Sprintf("%d B past a page (%s", p.Skew, p.Source) + trialsString(len(p.Trials), func(i int) (string, float64, float64) {
		t := p.Trials[i]
		return fmt.Sprintf("%d B", t.Skew), t.GiBps, t.Speedup
	})
}

// trialsString ends a calibration's line: ": first 30.8 GiB/s, second
// 28.4 GiB/s (0.91×))", each of the n trials giving its name, its figure
// and its speedup over the first.
func trialsString(n int, trial func(i int) (name string, gibps, speedup float64)) string {
	var s string
	for i := range n {
		name, gibps, speedup := trial(i)
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		s += fmt.Sprintf("%s%s %.1f GiB/s", sep, name, gibps)
		if i > 0 {
			s += fmt.Sprintf(" (%.2f×)", speedup)
		}
	}
	return s + ")"
}

var (
	placementOnce sync.Once
	placement     atomic.Pointer[Placement] // nil until chosen
)

// BufferPlacement returns the skew buffered reads use, measuring it on
// the first call (a few milliseconds) unless SkewEnv sets it.
func BufferPlacement() Placement {
	placementOnce.Do(func() {
		p := choosePlacement()
		placement.Store(&p)
	})
	return *placement.Load()
}

// BufferSkew is where a buffered-I/O buffer starts past a page boundary:
// BufferPlacement's skew.
func BufferSkew() int { return BufferPlacement().Skew }

// SkewFor is the skew of a buffered-I/O buffer of capacity c: BufferSkew
// for large ones, and for small ones when SkewEnv sets it (nothing to
// measure then); otherwise for small ones the skew if it is already
// known, else 0.
func SkewFor(c int) int {
	if p := placement.Load(); p != nil {
		return p.Skew
	}
	if c >= calibrateMin || skewEnvSet() {
		return BufferSkew()
	}
	return 0
}

// skewEnvSet reports whether SkewEnv is set, looked up once: SkewFor asks
// on every small buffer until the skew is known.
var skewEnvSet = sync.OnceValue(func() bool {
	_, set := os.LookupEnv(SkewEnv)
	return set
})

func choosePlacement() Placement {
	if v, ok := os.LookupEnv(SkewEnv); ok {
		n, err := ParseSkew(v)
		if err == nil {
			return Placement{Skew: n, Source: SkewEnv}
		}
		p := calibrate()
		p.Source += "; " + err.Error() + ", ignored"
		return p
	}
	return calibrate()
}

// ParseSkew parses a SkewEnv value.
func ParseSkew(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > MaxSkew {
		return 0, fmt.Errorf("%s=%q: want bytes from 0 to %d", SkewEnv, v, MaxSkew)
	}
	return n, nil
}

// calibrate measures SkewCandidates and picks one.
func calibrate() Placement {
	trials, where, err := MeasureSkews(SkewCandidates, calibrateFile, calibrateBlock, calibrateRounds)
	if err != nil {
		return Placement{Skew: SkewCandidates[0], Source: "default: calibration failed: " + err.Error()}
	}
	return Placement{Skew: PickSkew(trials), Source: "calibrated in the " + where, Trials: trials}
}

// PickSkew returns the skew of the trial with the largest speedup over
// the first, or the first's when none beats it by more than skewMargin.
func PickSkew(trials []SkewTrial) int {
	best := trials[0]
	for _, t := range trials[1:] {
		if t.Speedup > 1+skewMargin && t.Speedup > best.Speedup {
			best = t
		}
	}
	return best.Skew
}

// MeasureSkews copies a file of fileSize bytes (calibrateFD's) with pread in
// blocks of block bytes into a buffer at each skew: rounds rounds of one
// pass per skew, back to back, the order alternating. Each trial holds
// its fastest pass and its median speedup over the first skew in the same
// round, and says where the file was.
func MeasureSkews(skews []int, fileSize, block, rounds int) (trials []SkewTrial, where string, err error) {
	fd, where, err := calibrateFD()
	if err != nil {
		return nil, "", err
	}
	defer sys.Close(fd)
	ps := sys.PageSize()
	mem, err := sys.MmapAnon(block + slices.Max(skews) + ps)
	if err != nil {
		return nil, "", err
	}
	defer sys.Munmap(mem)
	for i := range mem {
		mem[i] = byte(i*131 + i>>12) // pages that are not all zeros, in the file too
	}
	for off := 0; off < fileSize; off += block {
		if _, err := sys.Pwrite(fd, mem[:block], int64(off)); err != nil {
			return nil, "", fmt.Errorf("fill the calibration file in the %s: %w", where, err)
		}
	}
	pass := func(skew int) (time.Duration, error) {
		buf := mem[skew : skew+block]
		start := time.Now()
		for off := 0; off < fileSize; off += block {
			if n, e := sys.PreadOnce(fd, buf, int64(off)); e != 0 || n != block {
				if e == 0 {
					return 0, fmt.Errorf("pread of the calibration file at %d: %d bytes of %d", off, n, block)
				}
				return 0, fmt.Errorf("pread of the calibration file: %w", e)
			}
		}
		return max(time.Since(start), 1), nil
	}
	best, speedups, err := alternateRounds(len(skews), rounds, func(i int) (time.Duration, error) { return pass(skews[i]) })
	if err != nil {
		return nil, "", err
	}
	trials = make([]SkewTrial, len(skews))
	for i, s := range skews {
		trials[i] = SkewTrial{Skew: s, GiBps: float64(fileSize) / (1 << 30) / best[i].Seconds(), Speedup: speedups[i]}
	}
	return trials, where, nil
}

// calibrateFD returns the file the calibration copies from, and where it
// is: an unnamed file in the page cache of the temporary directory's
// filesystem (O_TMPFILE: nothing is left behind, whatever happens), whose
// read is the copy every buffered read makes; or, where that cannot be
// made (a read-only or full directory), a memory file, whose read copies
// page by page and shows a third of the difference.
func calibrateFD() (fd int, where string, err error) {
	dir := os.TempDir()
	if fd, err = sys.OpenTmpfile(dir); err == nil {
		return fd, "page cache of " + dir, nil
	}
	fd, err2 := sys.MemfdCreate("iopath-calibrate")
	if err2 != nil {
		return -1, "", fmt.Errorf("%w; %w", err, err2)
	}
	return fd, "memfd", nil
}

// alternateRounds times n candidates' passes (pass(i)): a round that
// warms up, then rounds rounds of one pass each, back to back, the order
// alternating. It returns each candidate's fastest pass and the median
// over the rounds of the first candidate's pass time over its own (1 for
// the first; above 1 is faster): a loaded machine slows both passes of a
// round alike far more often than it slows one. The buffer placement and
// the mapped-copy calibrations share it.
func alternateRounds(n, rounds int, pass func(i int) (time.Duration, error)) (best []time.Duration, speedups []float64, err error) {
	best = make([]time.Duration, n)
	ratios := make([][]float64, n)
	round := make([]time.Duration, n)
	for r := -1; r < rounds; r++ { // round -1 warms up
		for j := range n {
			i := j
			if r%2 != 0 {
				i = n - 1 - j
			}
			if round[i], err = pass(i); err != nil {
				return nil, nil, err
			}
		}
		if r < 0 {
			continue
		}
		for i, d := range round {
			if best[i] == 0 || d < best[i] {
				best[i] = d
			}
			ratios[i] = append(ratios[i], float64(round[0])/float64(d))
		}
	}
	speedups = make([]float64, n)
	for i := range ratios {
		slices.Sort(ratios[i])
		speedups[i] = ratios[i][len(ratios[i])/2]
	}
	return best, speedups, nil
}
