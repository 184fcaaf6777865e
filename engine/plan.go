package engine

import (
	"math/bits"
	"sync/atomic"
)

// plan cuts a file into blocks and deals them to workers.
type plan struct {
	size    int64 // file size (writers: the bytes to write)
	bs      int64 // block size
	nblocks int64 // ceil(size/bs)
	workers int
	random  bool
	perm    perm
	// The append pattern (writers): blocks are offsets base, base+bs,
	// ... and every worker takes the next one from the shared counter
	// next, so that the file grows in order whichever worker is ahead.
	base int64
	next *atomic.Int64
}

func newPlan(job *Job, size int64) plan {
	bs := int64(job.BlockSize)
	n := (size + bs - 1) / bs
	p := plan{size: size, bs: bs, nblocks: n, workers: job.Workers, random: job.Pattern == Random}
	if p.random {
		p.perm = newPerm(uint64(n), job.Seed)
	}
	return p
}

// appendPlan is the plan of size bytes appended at base (the file's
// size at open).
func appendPlan(job *Job, base, size int64) plan {
	p := newPlan(job, size)
	p.base, p.next = base, new(atomic.Int64)
	return p
}

// share returns worker w's range of block indexes [lo, hi).
func (p *plan) share(w int) (lo, hi int64) {
	return p.nthShare(w), p.nthShare(w + 1)
}

// nthShare is nblocks*w/workers without overflowing 64 bits.
func (p *plan) nthShare(w int) int64 {
	h, l := bits.Mul64(uint64(p.nblocks), uint64(w))
	q, _ := bits.Div64(h, l, uint64(p.workers))
	return int64(q)
}

// cursor walks one worker's blocks.
type cursor struct {
	p      *plan
	i, end int64
}

func (p *plan) cursor(w int) cursor {
	lo, hi := p.share(w)
	return cursor{p: p, i: lo, end: hi}
}

// next returns the next block's offset and length; ok is false at the end.
func (c *cursor) next() (off int64, n int, ok bool) {
	if c.p.next != nil {
		idx, m := c.take(1)
		if m == 0 {
			return 0, 0, false
		}
		return c.p.block(idx)
	}
	if c.i >= c.end {
		return 0, 0, false
	}
	idx := c.i
	c.i++
	if c.p.random {
		idx = int64(c.p.perm.at(uint64(idx)))
	}
	off = idx * c.p.bs
	n = int(min(c.p.bs, c.p.size-off))
	return off, n, true
}

// take returns the index of the next of this cursor's blocks and how
// many blocks (at most k) follow it contiguously in the file, which the
// cursor then has handed out: m is 0 at the end. The random pattern
// hands out one block at a time.
func (c *cursor) take(k int) (idx int64, m int) {
	p := c.p
	if p.next != nil {
		idx = p.next.Add(int64(k)) - int64(k)
		return idx, int(max(0, min(int64(k), p.nblocks-idx)))
	}
	if c.i >= c.end {
		return 0, 0
	}
	idx = c.i
	if p.random {
		c.i++
		return int64(p.perm.at(uint64(idx))), 1
	}
	m = int(min(int64(k), c.end-c.i))
	c.i += int64(m)
	return idx, m
}

// block returns block idx's file offset and length.
func (p *plan) block(idx int64) (off int64, n int, ok bool) {
	off = idx * p.bs
	return p.base + off, int(min(p.bs, p.size-off)), true
}

// remaining is the number of blocks left (for the append pattern: left
// to all workers).
func (c *cursor) remaining() int64 {
	if c.p.next != nil {
		return max(0, c.p.nblocks-c.p.next.Load())
	}
	return c.end - c.i
}

// perm is a seeded bijection of [0, n): a mixing permutation of the
// enclosing power of two, walked in cycles until it lands below n. It needs
// no memory, so a random pass over a huge file costs nothing to plan.
type perm struct {
	n, mask    uint64
	k1, k2, k3 uint64
	shift      uint
}

func newPerm(n, seed uint64) perm {
	k := uint(bits.Len64(n - 1))
	if n <= 1 {
		k = 1
	}
	s := splitmix(&seed)
	p := perm{n: n, mask: 1<<k - 1, shift: max(k/2, 1)}
	p.k1 = s | 1
	p.k2 = splitmix(&seed)
	p.k3 = splitmix(&seed) | 1
	return p
}

func (p *perm) mix(x uint64) uint64 {
	x = (x*p.k1 + p.k2) & p.mask
	x ^= x >> p.shift
	x = (x * p.k3) & p.mask
	x ^= x >> p.shift
	return x
}

func (p *perm) at(i uint64) uint64 {
	x := p.mix(i)
	for x >= p.n {
		x = p.mix(x)
	}
	return x
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
