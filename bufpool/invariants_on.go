//go:build invariants

package bufpool

import (
	"bytes"
	"fmt"
	"sync/atomic"
)

// invariants reports whether the package was built with -tags invariants.
const invariants = true

// Under the invariants tag every handle has a state, handles are never
// reused (Release moves the memory to a new handle, so a stale handle stays
// released for good), and released memory is poisoned and checked when it is
// handed out again.

const (
	stateFree     = 0 // in a pool, never handed out
	stateLive     = 1 // handed out
	stateReleased = 2 // released: every method panics

	// poisonByte fills released memory, and new memory, so that code which
	// reads a buffer it has released, or assumes zeroed memory, sees it.
	poisonByte = 0xDB
)

var poisonBlock = bytes.Repeat([]byte{poisonByte}, 4096)

type bufDebug struct {
	state atomic.Uint32
}

type poolDebug struct {
	live atomic.Int64
}

func (b *Buf) checkLive(op string) {
	switch b.dbg.state.Load() {
	case stateLive:
	case stateReleased:
		panic("bufpool: " + op + " called on a Buf after its Release (use after Release)")
	default:
		panic("bufpool: " + op + " called on a Buf that did not come from a Pool")
	}
}

func (p *Pool) onGet(b *Buf, fresh bool) {
	if fresh {
		poison(b.data)
	} else if off := unpoisoned(b.data); off >= 0 {
		panic(fmt.Sprintf("bufpool: a released %d-byte buffer was written after its Release "+
			"(at offset %d): a Bytes slice was kept past Release", len(b.data), off))
	}
	if !b.dbg.state.CompareAndSwap(stateFree, stateLive) {
		panic("bufpool: internal error: a pooled handle was not free")
	}
	p.dbg.live.Add(1)
}

func (p *Pool) onRelease(b *Buf) *Buf {
	if !b.dbg.state.CompareAndSwap(stateLive, stateReleased) {
		if b.dbg.state.Load() == stateReleased {
			panic("bufpool: Release called twice on the same Buf (double Release)")
		}
		panic("bufpool: Release called on a Buf that did not come from a Pool")
	}
	p.dbg.live.Add(-1)
	poison(b.data)
	nb := &Buf{data: b.data, class: b.class, pool: p}
	b.data, b.n = nil, 0
	return nb
}

func (p *Pool) outstanding() int64 { return p.dbg.live.Load() }

func poison(b []byte) {
	for len(b) > 0 {
		b = b[copy(b, poisonBlock):]
	}
}

// unpoisoned returns the offset of the first byte of b that is not
// poisonByte, or -1.
func unpoisoned(b []byte) int {
	for off := 0; off < len(b); off += len(poisonBlock) {
		chunk := b[off:min(off+len(poisonBlock), len(b))]
		if !bytes.Equal(chunk, poisonBlock[:len(chunk)]) {
			for i, c := range chunk {
				if c != poisonByte {
					return off + i
				}
			}
		}
	}
	return -1
}
