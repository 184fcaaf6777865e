package iopath

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/sys"
)

// Benchmarks of the entry points against what a Go program would write
// without iopath, on warm files (each is read once before timing). Run
// them side by side:
//
//	go test -run '^$' -bench . -count 3 .

// benchFile returns a warm file of size bytes, removed when b ends.
func benchFile(b *testing.B, size int) string {
	b.Helper()
	f, err := os.CreateTemp("", "iopath-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.Write(content(size, uint64(size))); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if _, err := os.ReadFile(f.Name()); err != nil { // warm
		b.Fatal(err)
	}
	return f.Name()
}

var benchSizes = []struct {
	name string
	size int
}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}, {"64MiB", 64 << 20}}

func BenchmarkReadFile(b *testing.B) {
	for _, s := range benchSizes {
		path := benchFile(b, s.size)
		b.Run(s.name+"/iopath", func(b *testing.B) {
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/iopath-buf", func(b *testing.B) {
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				buf, err := ReadFileBuf(path)
				if err != nil {
					b.Fatal(err)
				}
				buf.Release()
			}
		})
		if s.size > smallFile {
			// Each large-file path, whatever Auto would choose.
			for _, e := range []string{"pread", "mmap", "io_uring"} {
				b.Run(s.name+"/iopath-"+e+"×2", func(b *testing.B) {
					b.SetBytes(int64(s.size))
					b.ReportAllocs()
					for b.Loop() {
						if _, err := ReadFile(path, WithEngine(e), WithWorkers(2)); err != nil {
							b.Skip(err)
						}
					}
				})
			}
		}
		b.Run(s.name+"/os", func(b *testing.B) {
			b.SetBytes(int64(s.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := os.ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// touch reads one byte per cache line of p, so that a path that hands out
// memory without copying it (mmap) still pays for bringing it in, as a
// real consumer would.
func touch(p []byte) uint64 {
	var s uint64
	for i := 0; i < len(p); i += 64 {
		s += uint64(p[i])
	}
	return s
}

// BenchmarkScan compares Scan with the loop a program writes without
// iopath: os.File.Read into a 128 KiB buffer. Both touch every cache line
// of every block.
func BenchmarkScan(b *testing.B) {
	const size = 64 << 20
	path := benchFile(b, size)
	var sink atomic.Uint64
	scan := func(opts ...Option) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				err := Scan(context.Background(), path, func(off int64, p []byte) error {
					sink.Add(touch(p))
					return nil
				}, opts...)
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("iopath", scan())
	b.Run("iopath-ordered", scan(WithOrdered()))
	// WithOrdered through pread: the window read ahead by 2 workers
	// against one worker reading in order.
	b.Run("iopath-ordered-pread×2", scan(WithOrdered(), WithEngine("pread"), WithWorkers(2)))
	b.Run("iopath-ordered-pread×1", scan(WithOrdered(), WithEngine("pread"), WithWorkers(1)))
	b.Run("os-read-loop", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		buf := make([]byte, 128<<10)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			for {
				n, err := f.Read(buf)
				sink.Add(touch(buf[:n]))
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			f.Close()
		}
	})
}

// BenchmarkReadBatch reads 64 random 4 KiB blocks of a 64 MiB file: one
// ReadBatch against 64 ReadAt calls, warm (the file read once before) and
// cold (the file dropped from the page cache before each iteration, out
// of the timing). The -noinline variants turn the inline RWF_NOWAIT pass
// off, to measure what it costs when every request misses; -mmap is the
// mmap backend (copies from a mapping made at Open). Run the
// variants side by side, interleaved by -count:
//
//	go test -run '^$' -bench ReadBatch -count 5 .
func BenchmarkReadBatch(b *testing.B) {
	const size = 64 << 20
	path := benchFile(b, size)
	rng := rand.New(rand.NewPCG(1, 2))
	bufs := make([][]byte, 64)
	offs := make([]int64, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 4096)
		offs[i] = rng.Int64N(size/4096) * 4096
	}
	// drop empties the page cache of the file, or skips when it cannot.
	dropFD, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Close(dropFD)
	if err := sys.Fsync(dropFD); err != nil { // dirty pages cannot be dropped
		b.Fatal(err)
	}
	drop := func(b *testing.B) {
		b.StopTimer()
		if err := sys.Fadvise(dropFD, 0, 0, sys.FADV_DONTNEED); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	if err := sys.Fadvise(dropFD, 0, 0, sys.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
	if r, err := auto.Residency(path, size); err != nil || r > 0.01 {
		b.Skipf("the file stays in the page cache after DONTNEED (%.2f resident, %v): cannot read it cold here", r, err)
	}
	for _, temp := range []string{"warm", "cold"} {
		cold := temp == "cold"
		warm := func(b *testing.B) {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
		batch := func(noInline bool, opts ...Option) func(b *testing.B) {
			return func(b *testing.B) {
				if !cold {
					// Before Open: Auto decides there, by the residency.
					warm(b)
				}
				f, err := Open(path, opts...)
				if err != nil {
					b.Skip(err)
				}
				defer f.Close()
				if noInline {
					f.inline.Off.Store(true)
				}
				reqs := make([]Request, 64)
				b.SetBytes(64 * 4096)
				b.ReportAllocs()
				for b.Loop() {
					if cold {
						drop(b)
					}
					for i := range reqs {
						reqs[i] = Request{Off: offs[i], Buf: bufs[i]}
					}
					if err := f.ReadBatch(reqs); err != nil {
						b.Fatal(err)
					}
				}
				// Which backend Open took (Auto's choice: 1 = mmap); after
				// the loop, which resets the metrics.
				b.ReportMetric(boolMetric(f.m != nil), "mapped")
			}
		}
		b.Run("iopath-batch/"+temp, batch(false))
		b.Run("iopath-batch-pread/"+temp, batch(false, WithEngine("pread")))
		b.Run("iopath-batch-io_uring/"+temp, batch(false, WithEngine("io_uring")))
		b.Run("iopath-batch-mmap/"+temp, batch(false, WithEngine("mmap")))
		if cold {
			b.Run("iopath-batch-io_uring-noinline/"+temp, batch(true, WithEngine("io_uring")))
			b.Run("iopath-batch-pread-noinline/"+temp, batch(true, WithEngine("pread")))
			b.Run("iopath-batch-pread×8-noinline/"+temp, batch(true, WithEngine("pread"), WithWorkers(8)))
			b.Run("iopath-batch-pread×8/"+temp, batch(false, WithEngine("pread"), WithWorkers(8)))
		}
		b.Run("iopath-readat/"+temp, func(b *testing.B) {
			f, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if !cold {
				warm(b)
			}
			b.SetBytes(64 * 4096)
			b.ReportAllocs()
			for b.Loop() {
				if cold {
					drop(b)
				}
				for i := range bufs {
					if _, err := f.ReadAt(bufs[i], offs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("os-readat/"+temp, func(b *testing.B) {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if !cold {
				warm(b)
			}
			b.SetBytes(64 * 4096)
			b.ReportAllocs()
			for b.Loop() {
				if cold {
					drop(b)
				}
				for i := range bufs {
					if _, err := f.ReadAt(bufs[i], offs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// boolMetric is 1 for true, for b.ReportMetric.
func boolMetric(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// sweepSizes are the sizes the issue-15 targets name: ReadFile and Scan
// must be at least as fast as the standard library at each (and between).
var sweepSizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"4KiB", 4 << 10}, {"64KiB", 64 << 10}, {"256KiB", 256 << 10}, {"1MiB", 1 << 20},
	{"1.5MiB", 3 << 19}, {"2MiB", 2 << 20}, {"4MiB", 4 << 20}, {"8MiB", 8 << 20}, {"16MiB", 16 << 20},
	{"64MiB", 64 << 20}, {"256MiB", 256 << 20}}

// BenchmarkReadFileSizes is ReadFile (Auto) against os.ReadFile at every
// size of the sweep, warm, with each path Auto could take forced beside
// them. Compare the ways per size, rounds interleaved:
//
//	go test -c -o /tmp/iopath.test .
//	for i in $(seq 6); do /tmp/iopath.test -test.run '^$' -test.bench ReadFileSizes -test.benchtime 200ms; done > s.txt
//	go run golang.org/x/perf/cmd/benchstat -col /way s.txt
func BenchmarkReadFileSizes(b *testing.B) {
	ways := []struct {
		name string
		read func(path string) ([]byte, error)
	}{
		{"os", os.ReadFile},
		{"iopath", func(p string) ([]byte, error) { return ReadFile(p) }},
		{"read×1", func(p string) ([]byte, error) { return ReadFile(p, WithEngine("read")) }},
		{"pread×1", func(p string) ([]byte, error) { return ReadFile(p, WithEngine("pread")) }},
		{"pread×2", func(p string) ([]byte, error) { return ReadFile(p, WithEngine("pread"), WithWorkers(2)) }},
		{"mmap×2", func(p string) ([]byte, error) { return ReadFile(p, WithEngine("mmap"), WithWorkers(2)) }},
	}
	for _, s := range sweepSizes {
		b.Run("size="+s.name, func(b *testing.B) { // only the sizes -bench selects make a file
			path := benchFile(b, s.size)
			for _, w := range ways {
				b.Run("way="+w.name, func(b *testing.B) {
					// Every way starts from the same heap: the results are
					// new memory, whose page faults are much of the cost.
					runtime.GC()
					b.SetBytes(int64(s.size))
					for b.Loop() {
						if _, err := w.read(path); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkScanSizes is Scan (Auto, unordered) against an os.File.Read
// loop with a 128 KiB buffer at every size of the sweep, warm, each path
// Auto could take forced beside them; all touch every cache line. Run as
// BenchmarkReadFileSizes, with -test.bench ScanSizes.
func BenchmarkScanSizes(b *testing.B) {
	var sink atomic.Uint64
	scan := func(opts ...Option) func(string) error {
		return func(path string) error {
			return Scan(context.Background(), path, func(off int64, p []byte) error {
				sink.Add(touch(p))
				return nil
			}, opts...)
		}
	}
	buf := make([]byte, 128<<10)
	ways := []struct {
		name string
		read func(path string) error
	}{
		{"os", osReadLoop(buf, &sink)},
		{"iopath", scan()},
		{"pread×1", scan(WithEngine("pread"))},
		{"pread×2", scan(WithEngine("pread"), WithWorkers(2))},
		{"mmap×2", scan(WithEngine("mmap"), WithWorkers(2))},
	}
	for _, s := range sweepSizes {
		b.Run("size="+s.name, func(b *testing.B) {
			path := benchFile(b, s.size)
			for _, w := range ways {
				b.Run("way="+w.name, func(b *testing.B) {
					b.SetBytes(int64(s.size))
					for b.Loop() {
						if err := w.read(path); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// osReadLoop is the loop a program writes without iopath: os.File.Read
// into buf to the end, every cache line touched (into sink).
func osReadLoop(buf []byte, sink *atomic.Uint64) func(path string) error {
	return func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			n, err := f.Read(buf)
			sink.Add(touch(buf[:n]))
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// BenchmarkVsStd is iopath against the standard library at every size of
// the sweep: ReadFile against os.ReadFile, Scan against an os.File.Read
// loop with a 128 KiB buffer (both touching every cache line), warm, and
// cold (the file dropped from the page cache, off the clock, before every
// call). Each iteration calls both, in turn, in a random order, and
// times each call: the ratio reported (x-std, the standard library's time
// ÷ iopath's: above 1 iopath is faster) is the median of the
// iterations', so that the state of the heap and of the machine, which
// moves a ReadFile of a few MiB 2× from one call to the next in a VM
// (page faults on memory the collector returned), falls on both alike;
// call=ReadFile-AA, os.ReadFile against itself, shows what noise is left.
// The cold files must be on a disk (TMPDIR or IOPATH_BENCH_DIR, not
// tmpfs). IOPATH_TEST_PROFILE=FILE runs it with a machine profile.
//
//	go test -run '^$' -bench 'VsStd/cache=warm' -benchtime 40x .
//	go test -run '^$' -bench 'VsStd/cache=cold' -benchtime 10x .
func BenchmarkVsStd(b *testing.B) {
	var sink atomic.Uint64
	osLoop := osReadLoop(make([]byte, 128<<10), &sink)
	calls := []struct {
		name      string
		std, ours func(path string) error
	}{
		{"ReadFile",
			func(p string) error { _, err := os.ReadFile(p); return err },
			func(p string) error { _, err := ReadFile(p); return err }},
		// The control: os.ReadFile against itself. Its x-std is the
		// noise of the ReadFile rows (on the AMD EPYC VM 0.74–1.16 at 4
		// MiB, in two runs of 60 pairs: page faults on fresh memory).
		{"ReadFile-AA",
			func(p string) error { _, err := os.ReadFile(p); return err },
			func(p string) error { _, err := os.ReadFile(p); return err }},
		{"Scan", osLoop, func(p string) error {
			return Scan(context.Background(), p, func(_ int64, b []byte) error { sink.Add(touch(b)); return nil })
		}},
	}
	for _, cache := range []string{"warm", "cold"} {
		b.Run("cache="+cache, func(b *testing.B) {
			dir := os.TempDir()
			if cache == "cold" {
				if d := os.Getenv("IOPATH_BENCH_DIR"); d != "" {
					dir = d
				}
				if typ, err := sys.StatfsType(dir); err != nil || machine.FSName(typ) == "tmpfs" || machine.FSName(typ) == "ramfs" {
					b.Skipf("%s is not on a disk (a file there cannot be dropped from memory): set IOPATH_BENCH_DIR", dir)
				}
			}
			for _, s := range sweepSizes {
				b.Run("size="+s.name, func(b *testing.B) {
					path := syncedFile(b, dir, s.size)
					for _, c := range calls {
						b.Run("call="+c.name, func(b *testing.B) {
							runtime.GC()
							var took [2][]float64 // std, ours
							// A random order per iteration: a fixed
							// alternation fell into step with the
							// collector's cycles (os.ReadFile against
							// itself read 1.14× at 1 MiB).
							rng := rand.New(rand.NewPCG(uint64(s.size), 1))
							for b.Loop() {
								first := rng.IntN(2)
								for k := range 2 {
									w := (first + k) % 2
									if cache == "cold" {
										b.StopTimer()
										if err := dropCache(path); err != nil {
											b.Fatal(err)
										}
										b.StartTimer()
									}
									read := c.std
									if w == 1 {
										read = c.ours
									}
									t0 := time.Now()
									if err := read(path); err != nil {
										b.Fatal(err)
									}
									took[w] = append(took[w], time.Since(t0).Seconds())
								}
							}
							ratios := make([]float64, len(took[0]))
							for j := range ratios {
								ratios[j] = took[0][j] / took[1][j]
							}
							b.ReportMetric(stats.Median(took[0])*1e6, "std-µs")
							b.ReportMetric(stats.Median(took[1])*1e6, "iopath-µs")
							b.ReportMetric(stats.Median(ratios), "x-std")
						})
					}
				})
			}
		})
	}
}

// syncedFile writes a file of size bytes in dir, synced (only clean pages
// can be dropped) and read once (cached).
func syncedFile(b *testing.B, dir string, size int) string {
	b.Helper()
	f, err := os.CreateTemp(dir, "iopath-sweep-")
	if err != nil {
		b.Fatal(err)
	}
	path := f.Name()
	b.Cleanup(func() { os.Remove(path) })
	_, err = f.Write(content(size, uint64(size)))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_, err = os.ReadFile(path)
	}
	if err != nil {
		b.Fatal(err)
	}
	return path
}

// dropCache drops path's pages from the page cache.
func dropCache(path string) error {
	fd, err := sys.Open(path, sys.O_RDONLY)
	if err != nil {
		return err
	}
	defer sys.Close(fd)
	return sys.Fadvise(fd, 0, 0, sys.FADV_DONTNEED)
}
