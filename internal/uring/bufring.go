package uring

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/iopath/iopath/internal/sys"
)

// io_uring_register opcodes for provided buffer rings (Linux 5.19).
const (
	registerPbufRing   uint32 = 22
	unregisterPbufRing uint32 = 23
)

// bufReg is struct io_uring_buf_reg (40 bytes).
type bufReg struct {
	RingAddr    uint64
	RingEntries uint32
	Bgid        uint16
	Flags       uint16
	Resv        [3]uint64
}

// bufEntry is struct io_uring_buf (16 bytes). The ring's tail lives in
// the Resv field of entry 0.
type bufEntry struct {
	Addr uint64
	Len  uint32
	Bid  uint16
	Resv uint16
}

// MaxBufRingEntries is the kernel's limit on a buffer ring's size.
const MaxBufRingEntries = 1 << 15

// BufRing is a provided buffer ring (IORING_REGISTER_PBUF_RING, Linux
// 5.19): a group of equal buffers the kernel picks from when a request
// has SQEBufferSelect, such as a multishot recv. The kernel takes buffers
// from the head; the owner gives them back with Recycle and Publish once
// it is done with their bytes. Buffer and ring memory are off the Go heap
// and mapped for the ring's life. Like the Ring, a BufRing has one owner.
type BufRing struct {
	r       *Ring
	group   uint16
	mask    uint16
	size    int
	tail    uint16 // next entry to fill (published by Publish)
	ringMem []byte
	bufMem  []byte
	closed  bool
}

// RegisterBufRing maps entries buffers of size bytes each (entries a
// power of two up to MaxBufRingEntries), registers them as buffer group
// group, and hands them all to the kernel.
func (r *Ring) RegisterBufRing(group uint16, entries int, size int) (*BufRing, error) {
	b, err := r.RegisterBufRingEmpty(group, entries, size)
	if err != nil {
		return nil, err
	}
	for i := 0; i < entries; i++ {
		b.Recycle(uint16(i))
	}
	b.Publish()
	return b, nil
}

// Group is the buffer group id, for PrepRecvMultishot.
func (b *BufRing) Group() uint16 { return b.group }

// Size is the size of each buffer.
func (b *BufRing) Size() int { return b.size }

// Entries is the number of buffers.
func (b *BufRing) Entries() int { return int(b.mask) + 1 }

// Buf returns buffer id's whole memory; a CQE's Res says how much of it
// holds data.
func (b *BufRing) Buf(id uint16) []byte {
	off := int(id) * b.size
	return b.bufMem[off : off+b.size : off+b.size]
}

func (b *BufRing) entry(i uint16) *bufEntry {
	return (*bufEntry)(unsafe.Add(unsafe.Pointer(&b.ringMem[0]), uintptr(i&b.mask)*unsafe.Sizeof(bufEntry{})))
}

// Recycle queues buffer id to be given back to the kernel; Publish hands
// every queued buffer over at once. The caller must not touch the
// buffer's bytes after Recycle. Giving back more buffers than the ring
// holds overwrites entries the kernel has not consumed: give back only
// buffers the kernel handed out.
func (b *BufRing) Recycle(id uint16) {
	e := b.entry(b.tail)
	e.Addr = uint64(uintptr(unsafe.Pointer(&b.bufMem[int(id)*b.size])))
	e.Len = uint32(b.size)
	e.Bid = id
	b.tail++
}

// Publish makes the recycled buffers visible to the kernel. The tail is
// the Resv half of entry 0's last 32 bits; it is stored together with
// entry 0's Bid in one atomic 32-bit store (little endian), which orders
// it after the entry writes.
func (b *BufRing) Publish() {
	e0 := b.entry(0)
	word := (*uint32)(unsafe.Pointer(&e0.Bid))
	atomic.StoreUint32(word, uint32(e0.Bid)|uint32(b.tail)<<16)
}

// Close unregisters the group and unmaps its memory. Every request that
// may select from it must have completed (its final CQE reaped).
func (b *BufRing) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	var err error
	if !b.r.closed {
		reg := bufReg{Bgid: b.group}
		var pin runtime.Pinner
		pin.Pin(&reg)
		_, err = b.r.register(unregisterPbufRing, unsafe.Pointer(&reg), 1)
		pin.Unpin()
		if err != nil {
			err = registerError("unregister buffer ring", err)
		}
	}
	sys.Munmap(b.ringMem)
	sys.Munmap(b.bufMem)
	return err
}

// Position returns where the next Recycle puts its buffer in the ring:
// the entry index, counting from the ring's start and wrapping at 2^16.
// A buffer's position is its place in the order the kernel takes buffers.
func (b *BufRing) Position() uint16 { return b.tail }

// RegisterBufRingEmpty is RegisterBufRing without handing any buffer to
// the kernel: the caller gives buffers with Recycle and Publish as it sees
// fit. A caller that keeps the ring shallow, and gives back the buffers it
// used last first, has the kernel fill buffers still in the CPU's cache,
// where a full ring would cycle through all of its buffers' memory.
func (r *Ring) RegisterBufRingEmpty(group uint16, entries int, size int) (*BufRing, error) {
	if entries <= 0 || entries > MaxBufRingEntries || entries&(entries-1) != 0 {
		return nil, fmt.Errorf("io_uring buffer ring: %d entries, want a power of two up to %d", entries, MaxBufRingEntries)
	}
	if size <= 0 || size > 1<<30 {
		return nil, fmt.Errorf("io_uring buffer ring: buffer size %d", size)
	}
	ringMem, err := sys.MmapAnon(entries * int(unsafe.Sizeof(bufEntry{})))
	if err != nil {
		return nil, fmt.Errorf("io_uring buffer ring: %w", err)
	}
	bufMem, err := sys.MmapAnon(entries * size)
	if err != nil {
		sys.Munmap(ringMem)
		return nil, fmt.Errorf("io_uring buffer ring: %w", err)
	}
	b := &BufRing{r: r, group: group, mask: uint16(entries - 1), size: size, ringMem: ringMem, bufMem: bufMem}
	reg := bufReg{RingAddr: uint64(uintptr(unsafe.Pointer(&ringMem[0]))), RingEntries: uint32(entries), Bgid: group}
	var pin runtime.Pinner
	pin.Pin(&reg)
	_, err = r.register(registerPbufRing, unsafe.Pointer(&reg), 1)
	pin.Unpin()
	if err != nil {
		sys.Munmap(ringMem)
		sys.Munmap(bufMem)
		return nil, registerError("buffer ring", err)
	}
	return b, nil
}
