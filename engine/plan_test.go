package engine

import "testing"

func TestPermIsBijection(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 100, 1000, 4095, 4096, 4097, 65537} {
		for _, seed := range []uint64{1, DefaultSeed, 0xdeadbeef} {
			p := newPerm(n, seed)
			seen := make([]bool, n)
			for i := range n {
				x := p.at(i)
				if x >= n {
					t.Fatalf("n=%d seed=%#x: perm(%d) = %d, out of range", n, seed, i, x)
				}
				if seen[x] {
					t.Fatalf("n=%d seed=%#x: %d appears twice", n, seed, x)
				}
				seen[x] = true
			}
		}
	}
}

func TestPermDependsOnSeed(t *testing.T) {
	a, b := newPerm(1000, 1), newPerm(1000, 2)
	same := 0
	for i := range uint64(1000) {
		if a.at(i) == b.at(i) {
			same++
		}
	}
	if same == 1000 {
		t.Error("two seeds give the same order")
	}
}

func TestSharesCoverAllBlocksOnce(t *testing.T) {
	for _, size := range []int64{0, 1, 4095, 4096, 4097, 1<<20 + 1, 3<<20 + 17} {
		for _, bs := range []int{512, 4096, 65536, 1 << 20} {
			for _, workers := range []int{1, 2, 3, 4, 7, 64} {
				for _, pat := range []Pattern{Sequential, Random} {
					job := Job{Path: "x", BlockSize: bs, Workers: workers, Pattern: pat}.WithDefaults()
					p := newPlan(&job, size)
					seen := make([]bool, p.nblocks)
					var total int64
					for w := range workers {
						c := p.cursor(w)
						prev := int64(-1)
						for {
							off, n, ok := c.next()
							if !ok {
								break
							}
							if off%int64(bs) != 0 || off >= size || n != int(min(int64(bs), size-off)) {
								t.Fatalf("size %d bs %d: bad block (%d, %d)", size, bs, off, n)
							}
							if seen[off/int64(bs)] {
								t.Fatalf("size %d bs %d workers %d %s: block at %d dealt twice", size, bs, workers, pat, off)
							}
							seen[off/int64(bs)] = true
							total += int64(n)
							if pat == Sequential && prev >= 0 && off != prev+int64(bs) {
								t.Fatalf("sequential share not contiguous: %d after %d", off, prev)
							}
							prev = off
						}
						if c.remaining() != 0 {
							t.Fatalf("cursor done with %d remaining", c.remaining())
						}
					}
					if total != size {
						t.Fatalf("size %d bs %d workers %d %s: shares cover %d bytes", size, bs, workers, pat, total)
					}
				}
			}
		}
	}
}

func TestDirectResume(t *testing.T) {
	for _, c := range []struct {
		got, before int
		direct      bool
		next        int
		ok          bool
	}{
		{5000, 0, false, 5000, true},    // buffered: go on where it stopped
		{8192, 0, true, 8192, true},     // aligned: nothing to redo
		{5000, 0, true, 4096, true},     // redo the unaligned tail
		{5000, 4096, true, 4096, false}, // no aligned progress: stuck
		{100, 0, true, 0, false},
	} {
		next, ok := directResume(c.got, c.before, c.direct)
		if next != c.next || ok != c.ok {
			t.Errorf("directResume(%d, %d, %v) = %d, %v; want %d, %v", c.got, c.before, c.direct, next, ok, c.next, c.ok)
		}
	}
}

func TestSharesOfHugeFiles(t *testing.T) {
	// 2^62 bytes in 512-byte blocks over 1024 workers: nblocks*w overflows
	// 64 bits unless the multiplication is done in 128.
	p := plan{size: 1 << 62, bs: 512, nblocks: 1 << 53, workers: 1024}
	var next int64
	for w := range p.workers {
		lo, hi := p.share(w)
		if lo != next || hi < lo {
			t.Fatalf("worker %d: [%d, %d) after %d", w, lo, hi, next)
		}
		next = hi
	}
	if next != p.nblocks {
		t.Fatalf("shares end at %d, want %d", next, p.nblocks)
	}
}
