package bufpool

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

// skipAllocs skips allocation assertions where they cannot hold: under the
// race detector (sync.Pool drops items at random) and under the invariants
// tag (handles are never reused).
func skipAllocs(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts are unreliable under the race detector")
	}
	if invariants {
		t.Skip("the invariants build allocates a new handle per Release")
	}
}

// checkNoLeak fails if p has Bufs handed out and not released (counted only
// under the invariants tag).
func checkNoLeak(t *testing.T, p *Pool) {
	t.Helper()
	if n := p.outstanding(); n > 0 {
		t.Errorf("%d Bufs not released", n)
	}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func TestClassOf(t *testing.T) {
	for _, tc := range []struct{ n, class int }{
		{0, 0}, {1, 0}, {63, 0}, {64, 0}, {65, 1}, {128, 1}, {129, 2},
		{4096, 6}, {4097, 7}, {1 << 20, 14}, {MaxClass, numClasses - 1}, {MaxClass + 1, -1},
	} {
		if got := classOf(tc.n); got != tc.class {
			t.Errorf("classOf(%d) = %d, want %d", tc.n, got, tc.class)
		}
	}
}

func TestGet(t *testing.T) {
	var p Pool
	for _, n := range []int{0, 1, 63, 64, 65, 100, 511, 512, 513, 4095, 4096, 4097, 65536, 1<<20 + 1} {
		b := p.Get(n)
		want := MinClass
		for want < n {
			want *= 2
		}
		if b.Len() != n || len(b.Bytes()) != n {
			t.Errorf("Get(%d): Len %d, len(Bytes) %d", n, b.Len(), len(b.Bytes()))
		}
		if b.Cap() != want || cap(b.Bytes()) != want {
			t.Errorf("Get(%d): Cap %d, cap(Bytes) %d, want %d", n, b.Cap(), cap(b.Bytes()), want)
		}
		if want >= pageSize && addr(b.Bytes()[:1])%uintptr(pageSize) != 0 {
			t.Errorf("Get(%d): class %d not page-aligned: %#x", n, want, addr(b.Bytes()[:1]))
		}
		// The whole capacity is usable.
		full := b.Bytes()[:b.Cap()]
		for i := range full {
			full[i] = byte(i)
		}
		b.Release()
	}
	checkNoLeak(t, &p)
}

func TestGetNegativePanics(t *testing.T) {
	var p Pool
	for name, f := range map[string]func(){
		"Get":        func() { p.Get(-1) },
		"GetAligned": func() { p.GetAligned(-1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s(-1) did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestGetAligned(t *testing.T) {
	var p Pool
	var bufs []*Buf
	for _, n := range []int{0, 1, 100, 4095, 4096, 4097, 12345, 65536, 1 << 20, 3 << 20} {
		b := p.GetAligned(n)
		bufs = append(bufs, b)
		if b.Len() != n {
			t.Errorf("GetAligned(%d): Len %d", n, b.Len())
		}
		if b.Cap() < pageSize || b.Cap()%pageSize != 0 || b.Cap() < n {
			t.Errorf("GetAligned(%d): Cap %d not a multiple of the page size %d", n, b.Cap(), pageSize)
		}
		if a := addr(b.Bytes()[:1]); a%uintptr(pageSize) != 0 {
			t.Errorf("GetAligned(%d): address %#x not page-aligned", n, a)
		}
	}
	for _, b := range bufs {
		b.Release()
	}
	checkNoLeak(t, &p)
}

func TestOversize(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates more than 1 GiB")
	}
	var p Pool
	b := p.Get(MaxClass + 1)
	if b.Len() != MaxClass+1 || b.Cap() != MaxClass+pageSize {
		t.Fatalf("Get(MaxClass+1): Len %d Cap %d", b.Len(), b.Cap())
	}
	if addr(b.Bytes())%uintptr(pageSize) != 0 {
		t.Fatal("oversize buffer not page-aligned")
	}
	b.Release()
	checkNoLeak(t, &p)
}

func TestAllocAligns(t *testing.T) {
	for _, size := range []int{pageSize, 3 * pageSize, 1 << 20} {
		b := alloc(size)
		if len(b) != size || cap(b) != size || !aligned(b) {
			t.Errorf("alloc(%d): len %d cap %d aligned %v", size, len(b), cap(b), aligned(b))
		}
	}
	// alloc's fallback, which Go's allocator never makes it take: an
	// unaligned slice is realigned within itself.
	raw := make([]byte, 3*pageSize)
	for _, off := range []int{0, 1, 100, pageSize - 1, pageSize} {
		in := raw[off:]
		b := alignedIn(in, pageSize)
		if len(b) != pageSize || cap(b) != pageSize || !aligned(b) ||
			addr(b) < addr(in) || addr(b)+uintptr(pageSize) > addr(in)+uintptr(len(in)) {
			t.Errorf("alignedIn(raw[%d:]): len %d cap %d at %#x, raw at %#x", off, len(b), cap(b), addr(b), addr(in))
		}
	}
}

func TestReleaseNil(t *testing.T) {
	var b *Buf
	b.Release()
}

func TestReuse(t *testing.T) {
	if raceEnabled || invariants {
		t.Skip("sync.Pool drops items under the race detector; the invariants build never reuses handles")
	}
	var p Pool
	// sync.Pool is per-P; a goroutine may move between Put and Get, so allow
	// a few tries.
	for range 10 {
		b := p.Get(5000)
		h, a := b, addr(b.Bytes())
		b.Release()
		b = p.Get(6000)
		if b == h && addr(b.Bytes()) == a {
			b.Release()
			return
		}
		b.Release()
	}
	t.Error("a released buffer was never reused by the same class")
}

func TestGetReleaseAllocs(t *testing.T) {
	skipAllocs(t)
	var p Pool
	for _, n := range []int{1, 4096, 1 << 20} {
		p.Get(n).Release()
		if a := testing.AllocsPerRun(1000, func() { p.Get(n).Release() }); a != 0 {
			t.Errorf("Get(%d)+Release: %v allocs, want 0", n, a)
		}
		if a := testing.AllocsPerRun(1000, func() { p.GetAligned(n).Release() }); a != 0 {
			t.Errorf("GetAligned(%d)+Release: %v allocs, want 0", n, a)
		}
	}
}

// TestHammer uses one pool from 32 goroutines: Get, ReadAll and ReadFile,
// each checking that no other goroutine writes its buffer. Run it with -race.
func TestHammer(t *testing.T) {
	var p Pool
	dir := t.TempDir()
	files := make([]string, 4)
	datas := make([][]byte, len(files))
	for i := range files {
		datas[i] = pattern(i, []int{100, 4096, 70000, 300000}[i])
		files[i] = writeFile(t, dir, datas[i])
	}
	iters := 300
	if testing.Short() || raceEnabled {
		iters = 60
	}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			mine := bytes.Repeat([]byte{byte(g)}, 200000)
			for range iters {
				switch rng.IntN(3) {
				case 0:
					n := rng.IntN(200000)
					b := p.Get(n)
					buf := b.Bytes()
					copy(buf, mine)
					runtime.Gosched()
					if !bytes.Equal(buf, mine[:n]) {
						t.Errorf("goroutine %d: buffer shared with another user", g)
					}
					b.Release()
				case 1:
					i := rng.IntN(len(datas))
					b, err := p.ReadAll(hidden{newChunky(datas[i], rng.Uint64())})
					if err != nil {
						t.Error(err)
						continue
					}
					if !equal(b.Bytes(), datas[i]) {
						t.Errorf("ReadAll: wrong bytes")
					}
					b.Release()
				case 2:
					i := rng.IntN(len(files))
					b, err := p.ReadFile(files[i])
					if err != nil {
						t.Error(err)
						continue
					}
					if !equal(b.Bytes(), datas[i]) {
						t.Errorf("ReadFile: wrong bytes")
					}
					b.Release()
				}
			}
		})
	}
	wg.Wait()
	checkNoLeak(t, &p)
}
