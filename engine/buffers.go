package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/iopath/iopath/internal/fileio"
	"github.com/iopath/iopath/internal/sys"
)

// arena is memory outside the Go heap, carved into equal buffers. Being off
// the heap, it never moves and costs the GC nothing, so the kernel may hold
// on to it (io_uring) without pinning.
//
// For O_DIRECT every buffer starts on a page boundary, as the kernel
// requires. For buffered I/O every buffer starts fileio.SkewFor(size)
// bytes past a page boundary: the placement measured on this machine
// (fileio.BufferPlacement, docs/engines.md).
type arena struct {
	mem    []byte
	stride int // bytes between buffers (a multiple of the page size)
	size   int // bytes per buffer
	skew   int // offset of each buffer from its page boundary
}

// newArena allocates count buffers of size bytes, page-aligned when aligned
// is set (O_DIRECT), skewed otherwise. It reuses a spare arena of the same
// shape when there is one: a fresh mapping costs a page fault per page on
// its first touch and munmap a TLB flush, which on the VM these figures
// come from made a Scan of a 64 KiB file 20× slower than an os.File.Read
// loop (BenchmarkScanSizes: 340 µs a call, two thirds of it faulting in
// and unmapping the arena). A reused arena holds old bytes, not zeros.
func newArena(count, size int, aligned bool) (*arena, error) {
	ps := sys.PageSize()
	skew := 0
	if !aligned {
		skew = fileio.SkewFor(size)
	}
	stride := (size + skew + ps - 1) / ps * ps
	if a := spares.take(count*stride, stride, skew); a != nil {
		a.size = size
		return a, nil
	}
	mem, err := sys.MmapAnon(count * stride)
	if err != nil {
		return nil, fmt.Errorf("allocate %d buffers of %d bytes: %w", count, size, err)
	}
	return &arena{mem: mem, stride: stride, size: size, skew: skew}, nil
}

// buf returns buffer i: size bytes, with room up to the next page boundary
// in its capacity (so that an O_DIRECT read rounded up to the alignment
// fits).
func (a *arena) buf(i int) []byte {
	lo := i*a.stride + a.skew
	return a.mem[lo : lo+a.size : (i+1)*a.stride]
}

// count is the number of buffers.
func (a *arena) count() int { return len(a.mem) / a.stride }

// free gives the arena back: kept as a spare if there is room, else
// unmapped. Nothing may use its buffers afterwards.
func (a *arena) free() {
	if a != nil && a.mem != nil {
		spares.put(&arena{mem: a.mem, stride: a.stride, skew: a.skew})
		a.mem = nil
	}
}

// spareBytes bounds the memory spare arenas hold (the default 32 buffers
// of 128 KiB of an io_uring run are 4 MiB).
const spareBytes = 8 << 20

// spares are arenas freed and kept for the next newArena of the same
// shape, newest last, at most spareBytes in all.
var spares spareList

type spareList struct {
	mu    sync.Mutex
	list  []*arena
	bytes int
}

func (l *spareList) take(n, stride, skew int) *arena {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.list) - 1; i >= 0; i-- {
		if a := l.list[i]; len(a.mem) == n && a.stride == stride && a.skew == skew {
			l.list = slices.Delete(l.list, i, i+1)
			l.bytes -= n
			return a
		}
	}
	return nil
}

func (l *spareList) put(a *arena) {
	if len(a.mem) > spareBytes {
		sys.Munmap(a.mem)
		return
	}
	l.mu.Lock()
	var evict [][]byte
	for l.bytes+len(a.mem) > spareBytes {
		evict = append(evict, l.list[0].mem)
		l.bytes -= len(l.list[0].mem)
		l.list = slices.Delete(l.list, 0, 1)
	}
	l.list = append(l.list, a)
	l.bytes += len(a.mem)
	l.mu.Unlock()
	for _, m := range evict {
		sys.Munmap(m)
	}
}

// directLen rounds n up to the O_DIRECT alignment when direct is set.
func directLen(n int, direct bool) int {
	if !direct {
		return n
	}
	return (n + directAlign - 1) / directAlign * directAlign
}

// directResume is where the read of a block goes on after a short read that
// left got of its bytes read: got itself, except with O_DIRECT, whose file
// offsets and buffer addresses must stay aligned, so the bytes past the
// last aligned boundary are read again. ok is false when that would make no
// progress over before, the count the short read started from.
func directResume(got, before int, direct bool) (next int, ok bool) {
	if !direct || got%directAlign == 0 {
		return got, true
	}
	next = got &^ (directAlign - 1)
	return next, next > before
}

// errDirectStuck is returned when O_DIRECT reads keep ending short of an
// aligned boundary.
var errDirectStuck = errors.New("O_DIRECT read ended short of an aligned boundary twice")
