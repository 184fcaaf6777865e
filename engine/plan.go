package engine

import "math/bits"

// plan cuts a file into blocks and deals them to workers.
type plan struct {
	size    int64 // file size
	bs      int64 // block size
	nblocks int64 // ceil(size/bs)
	workers int
	random  bool
	perm    perm
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

// remaining is the number of blocks left.
func (c *cursor) remaining() int64 { return c.end - c.i }

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
