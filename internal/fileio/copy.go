package fileio

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// Copies out of a mapping of the page cache (the mmap engine's copying
// consumer, ReadAt and ReadFile through a mapping) are user-space copies,
// and which instruction sequence copies fastest differs between CPUs: on
// the AMD EPYC here REP MOVSB (with ERMS/FSRM) copies 128 KiB blocks 1.2–
// 1.5× faster than Go's memmove (an AVX loop), and 0.78–0.86× as fast at
// 4–16 KiB (docs/engines.md); on other CPUs REP MOVSB is known to lose at
// every size. So the routine for large copies is measured on the machine,
// once per process, as the buffer skew is (placement.go), or taken from
// CopyEnv. Copies under copyLarge always use Go's copy.

// CopyEnv names the environment variable that sets the routine without
// measuring: "memmove" or "rep-movsb". iopath bench measures once and
// hands its choice to every child run through it.
const CopyEnv = "IOPATH_MAPPED_COPY"

// The copy routines.
const (
	CopyMemmove  = "memmove"   // Go's copy: runtime.memmove
	CopyRepMovsb = "rep-movsb" // REP MOVSB (x86 with ERMS)
)

// copyLarge is the smallest copy that uses the chosen routine, and the
// smallest that makes the choice when it is not made yet: REP MOVSB lost
// at 4–16 KiB where it won at 64 KiB and up (AMD EPYC), so smaller copies
// keep Go's copy whatever was chosen.
const copyLarge = 64 << 10

// copyMargin is how much faster than memmove REP MOVSB must be (median
// per-round ratio) to be chosen.
const copyMargin = 0.04

// CopyTrial is one routine's figure from the calibration.
type CopyTrial struct {
	Routine string  `json:"routine"`
	GiBps   float64 `json:"gib_per_s"` // its fastest pass
	// Speedup is the median over rounds of memmove's pass time over
	// this routine's (1 for memmove; above 1 is faster).
	Speedup float64 `json:"speedup"`
}

// CopyChoice is the routine large copies out of a mapping use, and how
// it was chosen.
type CopyChoice struct {
	Routine string      `json:"routine"`
	Source  string      `json:"source"` // "calibrated on ...", CopyEnv, or why there was nothing to measure
	Trials  []CopyTrial `json:"trials,omitempty"`
}

// String is one line for a report: "rep-movsb for copies of 64 KiB and
// more (calibrated on a mapping of the page cache of /tmp: memmove 21.0
// GiB/s, rep-movsb 27.5 GiB/s (1.31×))".
func (c CopyChoice) String() string {
	return fmt.Sprintf("%s for copies of 64 KiB and more (%s", c.Routine, c.Source) + trialsString(len(c.Trials), func(i int) (string, float64, float64) {
		t := c.Trials[i]
		return t.Routine, t.GiBps, t.Speedup
	})
}

var (
	copyOnce   sync.Once
	copyChoice atomic.Pointer[CopyChoice] // nil until chosen
	// useRepMovsb is the choice, read on every large copy.
	useRepMovsb atomic.Bool
)

// MappedCopy returns the routine large copies out of a mapping use,
// measuring it on the first call (about 2 ms) unless CopyEnv sets it.
func MappedCopy() CopyChoice {
	copyOnce.Do(func() {
		c := chooseCopy()
		useRepMovsb.Store(c.Routine == CopyRepMovsb)
		copyChoice.Store(&c)
	})
	return *copyChoice.Load()
}

// CopyMapped copies src, part of a mapping, into dst, as copy does, with
// the routine MappedCopy chose for copies of copyLarge bytes or more.
// A fault on the mapping (a file that shrank) panics as copy would, for
// the caller's SetPanicOnFault guard.
func CopyMapped(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < copyLarge {
		return copy(dst, src)
	}
	if copyChoice.Load() == nil {
		MappedCopy()
	}
	if useRepMovsb.Load() {
		repMovsb(&dst[0], &src[0], n)
		return n
	}
	return copy(dst, src)
}

func chooseCopy() CopyChoice {
	if v, ok := os.LookupEnv(CopyEnv); ok {
		r, err := ParseCopy(v)
		if err == nil {
			return CopyChoice{Routine: r, Source: CopyEnv}
		}
		c := calibrateCopy()
		c.Source += "; " + err.Error() + ", ignored"
		return c
	}
	return calibrateCopy()
}

// ParseCopy parses a CopyEnv value. rep-movsb is refused where the CPU
// lacks it.
func ParseCopy(v string) (string, error) {
	switch r := strings.TrimSpace(v); {
	case r == CopyMemmove:
		return r, nil
	case r == CopyRepMovsb && repMovsb != nil:
		return r, nil
	case r == CopyRepMovsb:
		return "", fmt.Errorf("%s=%q: this CPU has no fast REP MOVSB (ERMS)", CopyEnv, v)
	}
	return "", fmt.Errorf("%s=%q: want %s or %s", CopyEnv, v, CopyMemmove, CopyRepMovsb)
}

// calibrateCopy measures the candidates and picks one.
func calibrateCopy() CopyChoice {
	if repMovsb == nil {
		return CopyChoice{Routine: CopyMemmove, Source: "the only candidate on this CPU (no ERMS)"}
	}
	trials, where, err := MeasureCopies(calibrateFile, calibrateBlock, calibrateRounds)
	if err != nil {
		return CopyChoice{Routine: CopyMemmove, Source: "default: calibration failed: " + err.Error()}
	}
	r := CopyMemmove
	if trials[1].Speedup > 1+copyMargin {
		r = CopyRepMovsb
	}
	return CopyChoice{Routine: r, Source: "calibrated on a mapping of the " + where, Trials: trials}
}

// MeasureCopies copies a mapped file of fileSize bytes (calibrateFD's) in
// blocks of block bytes into a buffer with memmove and with REP MOVSB, in
// alternated rounds after one that faults the mapping in
// (alternateRounds). Each trial holds its fastest pass and its median
// speedup over memmove in the same round.
func MeasureCopies(fileSize, block, rounds int) (trials []CopyTrial, where string, err error) {
	if repMovsb == nil {
		return nil, "", fmt.Errorf("no REP MOVSB to measure on this CPU")
	}
	fd, where, err := calibrateFD()
	if err != nil {
		return nil, "", err
	}
	defer sys.Close(fd)
	buf, err := sys.MmapAnon(block)
	if err != nil {
		return nil, "", err
	}
	defer sys.Munmap(buf)
	for i := range buf {
		buf[i] = byte(i*131 + i>>12)
	}
	for off := 0; off < fileSize; off += block {
		if _, err := sys.Pwrite(fd, buf, int64(off)); err != nil {
			return nil, "", fmt.Errorf("fill the calibration file in the %s: %w", where, err)
		}
	}
	m, err := sys.Mmap(fd, 0, fileSize, sys.PROT_READ, sys.MAP_SHARED)
	if err != nil {
		return nil, "", fmt.Errorf("map the calibration file: %w", err)
	}
	defer sys.Munmap(m)
	routines := []string{CopyMemmove, CopyRepMovsb}
	pass := func(r string) time.Duration {
		start := time.Now()
		for off := 0; off < fileSize; off += block {
			if r == CopyRepMovsb {
				repMovsb(&buf[0], &m[off], block)
			} else {
				copy(buf, m[off:off+block])
			}
		}
		return max(time.Since(start), 1)
	}
	best, speedups, _ := alternateRounds(len(routines), rounds, func(i int) (time.Duration, error) { return pass(routines[i]), nil })
	trials = make([]CopyTrial, len(routines))
	for i, r := range routines {
		trials[i] = CopyTrial{Routine: r, GiBps: float64(fileSize) / (1 << 30) / best[i].Seconds(), Speedup: speedups[i]}
	}
	return trials, where, nil
}
