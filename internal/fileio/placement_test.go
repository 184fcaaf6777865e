package fileio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// BenchmarkPlacement reads a warm file with pread into one buffer that
// starts skew bytes past a page boundary: the kernel's copy from the page
// cache into user memory is where a buffer's placement shows (4K
// aliasing of its loads and stores on some CPUs, the copy routine's
// alignment on others). The best skew differs between CPUs
// (docs/engines.md), which is why BufferPlacement measures the same copy
// at run time. Compare the skews on a quiet machine, rounds interleaved:
//
//	go test -c -o /tmp/fileio.test ./internal/fileio/
//	for i in $(seq 8); do /tmp/fileio.test -test.run '^$' -test.bench Placement -test.benchtime 300ms; done > p.txt
//	go run golang.org/x/perf/cmd/benchstat -col /skew p.txt
func BenchmarkPlacement(b *testing.B) {
	const size = 64 << 20
	path := filepath.Join(b.TempDir(), "warm")
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Close(fd)
	ps := sys.PageSize()
	raw := make([]byte, 128<<10+3*ps)
	base := (ps - int(uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%uintptr(ps))) % ps
	for _, bs := range []int{4 << 10, 128 << 10} {
		for _, skew := range []int{0, 8, 16, 32, 64, 256, 2048} {
			b.Run(fmt.Sprintf("bs=%dKiB/skew=%d", bs>>10, skew), func(b *testing.B) {
				buf := raw[base+skew : base+skew+bs]
				b.SetBytes(int64(bs))
				var off int64
				for b.Loop() {
					n, errno := sys.PreadOnce(fd, buf, off)
					if errno != 0 || n != bs {
						b.Fatalf("pread at %d: %d bytes, %v", off, n, errno)
					}
					if off += int64(bs); off == size {
						off = 0
					}
				}
			})
		}
	}
}

func TestParseSkew(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{{"0", 0, true}, {"16", 16, true}, {" 64 ", 64, true}, {"2048", 2048, true},
		{"2049", 0, false}, {"-1", 0, false}, {"", 0, false}, {"16B", 0, false}} {
		got, err := ParseSkew(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseSkew(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), SkewEnv) {
			t.Errorf("ParseSkew(%q): %v does not name %s", c.in, err, SkewEnv)
		}
	}
}

func TestPickSkew(t *testing.T) {
	for _, c := range []struct {
		speedups []float64 // of skews 0, 16, 64
		want     int
	}{
		{[]float64{1, 1.15, 0.9}, 16},  // Intel: 16 beats page-aligned
		{[]float64{1, 0.86, 1.0}, 0},   // AMD: page-aligned best
		{[]float64{1, 1.03, 1.02}, 0},  // within the margin: the first
		{[]float64{1, 1.10, 1.20}, 64}, // the largest speedup
	} {
		var trials []SkewTrial
		for i, s := range []int{0, 16, 64} {
			trials = append(trials, SkewTrial{Skew: s, GiBps: 10 * c.speedups[i], Speedup: c.speedups[i]})
		}
		if got := PickSkew(trials); got != c.want {
			t.Errorf("PickSkew(%v) = %d, want %d", c.speedups, got, c.want)
		}
	}
}

// TestMeasureSkews runs the calibration for real: a figure and a ratio
// per candidate, the first's ratio 1.
func TestMeasureSkews(t *testing.T) {
	trials, where, err := MeasureSkews([]int{0, 16, 64}, 1<<20, 128<<10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if where != "page cache of "+os.TempDir() {
		t.Errorf("calibrated in the %s", where)
	}
	if len(trials) != 3 || trials[0].Speedup != 1 {
		t.Fatalf("trials %+v", trials)
	}
	for _, tr := range trials {
		if tr.GiBps <= 0 || tr.Speedup <= 0 {
			t.Errorf("trial %+v", tr)
		}
	}
}

// TestChoosePlacement: SkewEnv wins over measuring; a bad value is
// ignored, and said so.
func TestChoosePlacement(t *testing.T) {
	t.Setenv(SkewEnv, "48")
	if p := choosePlacement(); p.Skew != 48 || p.Source != SkewEnv || p.Trials != nil {
		t.Errorf("%s=48: %+v", SkewEnv, p)
	}
	t.Setenv(SkewEnv, "4097")
	p := choosePlacement()
	if !strings.HasPrefix(p.Source, "calibrated in the ") || !strings.Contains(p.Source, "ignored") || len(p.Trials) != len(SkewCandidates) {
		t.Errorf("%s=4097: %+v", SkewEnv, p)
	}
	if !strings.Contains(p.String(), "past a page") {
		t.Errorf("String: %s", p)
	}
}

// TestAllocBytesPlacement: a buffered buffer starts SkewFor bytes past a
// page, an O_DIRECT one on a page boundary.
func TestAllocBytesPlacement(t *testing.T) {
	ps := uintptr(sys.PageSize())
	for _, c := range []int{100, 4 << 10, 256 << 10} {
		b := AllocBytes(10, c, false)
		if got, want := int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%ps), SkewFor(c); got != want || len(b) != 10 || cap(b) != c {
			t.Errorf("cap %d: %d past a page (want %d), len %d cap %d", c, got, want, len(b), cap(b))
		}
		d := AllocBytes(10, c, true)
		if uintptr(unsafe.Pointer(unsafe.SliceData(d)))%ps != 0 {
			t.Errorf("cap %d, direct: not page-aligned", c)
		}
	}
	if SkewFor(256<<10) != BufferSkew() {
		t.Error("SkewFor of a large buffer is not BufferSkew")
	}
}

// BenchmarkCalibrate is what the calibration costs the first large read
// of a process.
func BenchmarkCalibrate(b *testing.B) {
	for b.Loop() {
		calibrate()
	}
}
