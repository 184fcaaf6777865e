package fileio

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

// withCopy makes CopyMapped use routine r for the rest of the test.
func withCopy(t *testing.T, r string) {
	t.Helper()
	if r == CopyRepMovsb && repMovsb == nil {
		t.Skip("this CPU has no fast REP MOVSB (ERMS): only memmove to test")
	}
	MappedCopy() // settle the once first: then the test's choice stays
	old := useRepMovsb.Load()
	useRepMovsb.Store(r == CopyRepMovsb)
	t.Cleanup(func() { useRepMovsb.Store(old) })
}

// Both routines copy every size exactly, around the threshold and at
// odd lengths and offsets, out of a real mapping.
func TestCopyMapped(t *testing.T) {
	for _, r := range []string{CopyMemmove, CopyRepMovsb} {
		t.Run(r, func(t *testing.T) {
			withCopy(t, r)
			size := 3<<20 + 5
			want, fd := testFile(t, size)
			m, err := sys.Mmap(fd, 0, size, sys.PROT_READ, sys.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			defer sys.Munmap(m)
			for _, n := range []int{0, 1, 4095, copyLarge - 1, copyLarge, copyLarge + 1, 1<<20 + 3, size} {
				for _, off := range []int{0, 1, 4093} {
					if off+n > size {
						continue
					}
					dst := make([]byte, n+8)
					for i := range dst {
						dst[i] = 0xAA
					}
					if got := CopyMapped(dst[3:3+n], m[off:off+n]); got != n {
						t.Fatalf("%d bytes at %d: copied %d", n, off, got)
					}
					if !bytes.Equal(dst[3:3+n], want[off:off+n]) || !bytes.Equal(dst[:3], []byte{0xAA, 0xAA, 0xAA}) || dst[3+n] != 0xAA {
						t.Fatalf("%d bytes at %d: wrong bytes, or written outside the destination", n, off)
					}
				}
			}
			// A destination shorter than the source: copy's rule.
			dst := make([]byte, copyLarge+10)
			if got := CopyMapped(dst, m); got != len(dst) || !bytes.Equal(dst, want[:len(dst)]) {
				t.Fatalf("short destination: copied %d of %d", got, len(dst))
			}
		})
	}
}

// A copy that runs past the end of a file truncated under the mapping is
// a fault CopyAt reports, with either routine, not a crash.
func TestCopyMappedFault(t *testing.T) {
	for _, r := range []string{CopyMemmove, CopyRepMovsb} {
		t.Run(r, func(t *testing.T) {
			withCopy(t, r)
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			fd, err := sys.Open(p, sys.O_RDONLY)
			if err != nil {
				t.Fatal(err)
			}
			defer sys.Close(fd)
			m, err := sys.Mmap(fd, 0, 1<<20, sys.PROT_READ, sys.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			defer sys.Munmap(m)
			if err := os.Truncate(p, 4096); err != nil {
				t.Fatal(err)
			}
			if n, faulted := CopyAt(m, make([]byte, 256<<10), 0); !faulted || n != 0 {
				t.Fatalf("copy past a truncated end: %d bytes, faulted %v; want the fault", n, faulted)
			}
		})
	}
}

func TestParseCopy(t *testing.T) {
	if r, err := ParseCopy(" memmove "); err != nil || r != CopyMemmove {
		t.Errorf("memmove: %q, %v", r, err)
	}
	r, err := ParseCopy(CopyRepMovsb)
	if repMovsb != nil && (err != nil || r != CopyRepMovsb) {
		t.Errorf("rep-movsb on a CPU with ERMS: %q, %v", r, err)
	}
	if repMovsb == nil && (err == nil || !strings.Contains(err.Error(), "ERMS")) {
		t.Errorf("rep-movsb on a CPU without ERMS: %q, %v; want an error naming ERMS", r, err)
	}
	if _, err := ParseCopy("avx"); err == nil || !strings.Contains(err.Error(), CopyEnv) {
		t.Errorf("avx: %v; want an error naming %s", err, CopyEnv)
	}
}

// CopyEnv decides without measuring; a bad value is said and measured.
func TestChooseCopy(t *testing.T) {
	t.Setenv(CopyEnv, CopyMemmove)
	if c := chooseCopy(); c.Routine != CopyMemmove || c.Source != CopyEnv || c.Trials != nil {
		t.Errorf("%s=memmove: %+v", CopyEnv, c)
	}
	t.Setenv(CopyEnv, "fast")
	c := chooseCopy()
	if !strings.Contains(c.Source, `"fast"`) || !strings.Contains(c.Source, "ignored") {
		t.Errorf("%s=fast: source %q does not say it was ignored", CopyEnv, c.Source)
	}
	if repMovsb != nil && (len(c.Trials) != 2 || !strings.HasPrefix(c.Source, "calibrated on a mapping")) {
		t.Errorf("%s=fast: %+v; want the calibration's figures", CopyEnv, c)
	}
	t.Logf("%s", c)
}

// The calibration measures both routines on a mapping and reports
// figures that make sense; the choice follows the margin.
func TestMeasureCopies(t *testing.T) {
	if repMovsb == nil {
		t.Skip("this CPU has no fast REP MOVSB (ERMS): nothing to measure")
	}
	trials, where, err := MeasureCopies(calibrateFile, calibrateBlock, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 2 || trials[0].Routine != CopyMemmove || trials[1].Routine != CopyRepMovsb ||
		trials[0].Speedup != 1 || trials[0].GiBps <= 0 || trials[1].GiBps <= 0 || trials[1].Speedup <= 0 || where == "" {
		t.Fatalf("trials %+v in %q", trials, where)
	}
	t.Logf("in the %s: %+v", where, trials)
}
