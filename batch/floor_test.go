package batch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/iopath/iopath/internal/stats"
	"golang.org/x/sys/unix"
)

// BenchmarkSyscallFloor measures the raw engine against the floor for
// reading many small cached files: a bare loop of the three system calls
// every file needs (openat, read, close), over a list of NUL-terminated
// paths prepared beforehand, on raw system calls (no scheduler
// bookkeeping, no error wrapping, no walk), as a C program would make
// them. raw reads the same list (Paths, no directory walk) with one and
// two workers; the floor deals it to one and two goroutines. The files
// are warm: each way reads them all once before anything is timed. Each
// iteration is one round of the four ways, interleaved; the ratios are
// the medians of the rounds' (100k files take a few seconds to write,
// once per process):
//
//	go test -run '^$' -bench SyscallFloor -benchtime 15x ./batch
func BenchmarkSyscallFloor(b *testing.B) {
	const n, size = 100_000, 4096
	dir := b.TempDir()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	paths := make([]string, n)
	zs := make([][]byte, n) // NUL-terminated, for the floor
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("d%03d", i/1000), fmt.Sprintf("f%05d", i))
		if i%1000 == 0 {
			if err := os.Mkdir(filepath.Dir(paths[i]), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(paths[i], data, 0o644); err != nil {
			b.Fatal(err)
		}
		zs[i] = append([]byte(paths[i]), 0)
	}
	cwd := unix.AT_FDCWD // a variable: the constant -100 does not convert to uintptr
	atFDCWD := uintptr(cwd)
	floor := func(workers int) func() (int64, error) {
		return func() (int64, error) {
			var total atomic.Int64
			var first atomic.Value
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, size+1)
					var got int64
					for i := w; i < n; i += workers {
						fd, _, e := unix.RawSyscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(&zs[i][0])),
							uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
						if e != 0 {
							first.CompareAndSwap(nil, fmt.Errorf("openat %s: %w", paths[i], e))
							return
						}
						m, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
						unix.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
						if e != 0 {
							first.CompareAndSwap(nil, fmt.Errorf("read %s: %w", paths[i], e))
							return
						}
						got += int64(m)
					}
					total.Add(got)
				}()
			}
			wg.Wait()
			if err, _ := first.Load().(error); err != nil {
				return 0, err
			}
			return total.Load(), nil
		}
	}
	raw := func(workers int) func() (int64, error) {
		e, err := Lookup("raw")
		if err != nil {
			b.Fatal(err)
		}
		return func() (int64, error) {
			var total atomic.Int64
			_, err := Read(context.Background(), e, Job{Paths: paths, Workers: workers}, func(f *File) error {
				if f.Err != nil {
					return f.Err
				}
				total.Add(int64(len(f.Data)))
				return nil
			})
			return total.Load(), err
		}
	}
	ways := []struct {
		name string
		read func() (int64, error)
	}{{"floor×1", floor(1)}, {"raw×1", raw(1)}, {"floor×2", floor(2)}, {"raw×2", raw(2)}}
	for _, w := range ways { // warm, and check
		if got, err := w.read(); err != nil || got != n*size {
			b.Fatalf("%s: %d bytes, %v; want %d", w.name, got, err, n*size)
		}
	}
	// Each iteration is a round: every way once, in turn, timed apart, so
	// that the machine's drift falls on all alike. Reported: each way's
	// median files/s and each raw's median per-round ratio to its floor.
	rates := make([][]float64, len(ways))
	for b.Loop() {
		for i, w := range ways {
			start := time.Now()
			if _, err := w.read(); err != nil {
				b.Fatal(err)
			}
			rates[i] = append(rates[i], n/time.Since(start).Seconds())
		}
	}
	for i, w := range ways {
		b.ReportMetric(stats.Median(rates[i]), w.name+"-files/s")
	}
	for _, k := range []int{1, 3} { // raw×1 ÷ floor×1, raw×2 ÷ floor×2
		ratios := make([]float64, len(rates[k]))
		for r := range ratios {
			ratios[r] = rates[k][r] / rates[k-1][r]
		}
		b.ReportMetric(stats.Median(ratios), ways[k].name+"/floor")
	}
}
