package fileio

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// BenchmarkPlacement reads a warm file with pread into one buffer that
// starts skew bytes past a page boundary: the kernel's copy from the page
// cache into user memory is where a buffer's placement shows (4K
// aliasing of its loads and stores on some CPUs, the copy routine's
// alignment on others). BufferSkew rests on this figure, and the best
// skew differs between CPUs (docs/engines.md). Compare the skews on a
// quiet machine, rounds interleaved:
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
