package bufpool

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

const (
	minShift   = 6
	maxShift   = 30
	numClasses = maxShift - minShift + 1

	// MinClass is the smallest class: Get(1) has capacity MinClass.
	MinClass = 1 << minShift
	// MaxClass is the largest pooled class. Larger buffers are allocated
	// exactly (rounded up to the page size) and not pooled.
	MaxClass = 1 << maxShift
)

// pageSize is the alignment of classes of at least its size.
var pageSize = sys.PageSize()

// A Pool hands out buffers by power-of-two size class and takes them back.
// The zero Pool is ready to use; a Pool must not be copied after first use.
// Its methods are safe for concurrent use.
//
// The package-level functions use a default Pool; a private one is useful in
// tests, or to keep one workload's learnt read size (see ReadAll) and free
// buffers apart from another's.
type Pool struct {
	dbg     poolDebug // zero-size unless built with -tags invariants
	classes [numClasses]sync.Pool
	// hint is the length of the last ReadAll whose size was unknown.
	hint atomic.Int64
}

// A Buf is a buffer from a Pool. See the package documentation for the
// lifetime rule: its memory is valid until Release, and not after.
type Buf struct {
	dbg   bufDebug // zero-size unless built with -tags invariants
	data  []byte   // the whole buffer: len(data) == cap(data) == Cap()
	n     int      // len(Bytes())
	class int      // index into Pool.classes; -1 for a buffer that is not pooled
	pool  *Pool
}

var defaultPool Pool

// Get returns a Buf of length n from the default pool. See Pool.Get.
func Get(n int) *Buf { return defaultPool.Get(n) }

// GetAligned returns a page-aligned Buf of length n from the default pool.
// See Pool.GetAligned.
func GetAligned(n int) *Buf { return defaultPool.GetAligned(n) }

// Get returns a Buf whose Bytes has length n and capacity the class size of
// n (the next power of two, at least MinClass; exactly n rounded up to the
// page size above MaxClass). The contents are not zeroed. Buffers of a class
// of at least the page size are page-aligned. Get panics if n is negative.
func (p *Pool) Get(n int) *Buf {
	if n < 0 {
		panic("bufpool: Get with negative size")
	}
	b := p.get(n)
	b.n = n
	return b
}

// GetAligned is Get, except that the buffer is page-aligned and its capacity
// is a multiple of the page size even for small n (whose class is then the
// page size): it suits O_DIRECT reads, which need an aligned address and an
// aligned length. Read into Bytes()[:Cap()] to use the whole buffer.
func (p *Pool) GetAligned(n int) *Buf {
	if n < 0 {
		panic("bufpool: GetAligned with negative size")
	}
	b := p.get(max(n, pageSize))
	b.n = n
	return b
}

// classOf returns the class index for n bytes, or -1 if n > MaxClass.
func classOf(n int) int {
	if n <= MinClass {
		return 0
	}
	c := bits.Len(uint(n-1)) - minShift
	if c >= numClasses {
		return -1
	}
	return c
}

// get returns a Buf of capacity at least n, with length 0.
func (p *Pool) get(n int) *Buf {
	c := classOf(n)
	if c < 0 {
		size := (n + pageSize - 1) &^ (pageSize - 1)
		b := &Buf{data: alloc(size), class: -1, pool: p}
		p.onGet(b, true)
		return b
	}
	if v := p.classes[c].Get(); v != nil {
		b := v.(*Buf)
		p.onGet(b, false)
		return b
	}
	b := &Buf{data: alloc(MinClass << c), class: c, pool: p}
	p.onGet(b, true)
	return b
}

// alloc returns size bytes of heap memory, page-aligned when size is at
// least the page size.
func alloc(size int) []byte {
	b := make([]byte, size)
	if size < pageSize || aligned(b) {
		return b
	}
	// Go's allocator places objects this large on page boundaries, so this
	// is a fallback that should not run; it keeps the promise if it does.
	return alignedIn(make([]byte, size+pageSize), size)
}

// alignedIn returns the first page-aligned size bytes of raw, which must be
// at least size+pageSize-1 long.
func alignedIn(raw []byte, size int) []byte {
	off := (pageSize - int(uintptr(unsafe.Pointer(unsafe.SliceData(raw)))&uintptr(pageSize-1))) & (pageSize - 1)
	return raw[off : off+size : off+size]
}

func aligned(b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))&uintptr(pageSize-1) == 0
}

// Bytes returns the buffer's contents: length Len, capacity Cap. The slice
// is valid until Release; do not keep it, or any slice of it, after that.
func (b *Buf) Bytes() []byte {
	b.checkLive("Bytes")
	return b.data[:b.n]
}

// Len returns len(b.Bytes()).
func (b *Buf) Len() int {
	b.checkLive("Len")
	return b.n
}

// Cap returns cap(b.Bytes()), the class size.
func (b *Buf) Cap() int {
	b.checkLive("Cap")
	return len(b.data)
}

// Release gives the buffer back to its pool. Neither b nor any slice from
// its Bytes may be used afterwards. Releasing a nil *Buf does nothing.
func (b *Buf) Release() {
	if b == nil || b.pool == nil {
		return
	}
	p := b.pool
	b = p.onRelease(b) // with -tags invariants, a new handle; b is dead
	if b.class < 0 {
		return
	}
	b.n = 0
	p.classes[b.class].Put(b)
}
