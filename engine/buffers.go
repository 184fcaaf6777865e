package engine

import (
	"fmt"

	"github.com/iopath/iopath/internal/sys"
)

// arena is page-aligned memory outside the Go heap, carved into equal
// buffers. Page alignment makes every buffer usable for O_DIRECT; being off
// the heap, it never moves and costs the GC nothing.
type arena struct {
	mem  []byte
	size int // bytes per buffer (a multiple of the page size)
}

func newArena(count, size int) (*arena, error) {
	ps := sys.PageSize()
	size = (size + ps - 1) / ps * ps
	mem, err := sys.MmapAnon(count * size)
	if err != nil {
		return nil, fmt.Errorf("allocate %d buffers of %d bytes: %w", count, size, err)
	}
	return &arena{mem: mem, size: size}, nil
}

// buf returns buffer i.
func (a *arena) buf(i int) []byte {
	return a.mem[i*a.size : (i+1)*a.size : (i+1)*a.size]
}

func (a *arena) free() {
	if a != nil && a.mem != nil {
		sys.Munmap(a.mem)
		a.mem = nil
	}
}

// directLen rounds n up to the O_DIRECT alignment when direct is set.
func directLen(n int, direct bool) int {
	if !direct {
		return n
	}
	return (n + directAlign - 1) / directAlign * directAlign
}
