package load

import (
	"math/rand/v2"
	"testing"
)

// TestCountDiff checks the word-at-a-time count against a byte loop, for
// every length up to a few words and every byte position and value of a
// difference, and for random pairs.
func TestCountDiff(t *testing.T) {
	naive := func(a, b []byte) int64 {
		var d int64
		for i := range a {
			if a[i] != b[i] {
				d++
			}
		}
		return d
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 40; n++ {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		if got := countDiff(a, a); got != 0 {
			t.Fatalf("len %d, equal: %d", n, got)
		}
		for pos := 0; pos < n; pos++ {
			for _, x := range []byte{0x01, 0x10, 0x80, 0xff} {
				b := append([]byte(nil), a...)
				b[pos] ^= x
				if got := countDiff(a, b); got != 1 {
					t.Fatalf("len %d, byte %d ^ %#x: %d, want 1", n, pos, x, got)
				}
			}
		}
	}
	for range 1000 {
		n := rng.IntN(300)
		a, b := make([]byte, n), make([]byte, n)
		for i := range a {
			a[i] = byte(rng.Uint32())
			b[i] = a[i]
			if rng.IntN(3) == 0 {
				b[i] = byte(rng.Uint32())
			}
		}
		if got, want := countDiff(a, b), naive(a, b); got != want {
			t.Fatalf("len %d: %d, want %d", n, got, want)
		}
	}
}

// BenchmarkCountDiff is the cost of checking a shifted stream: every
// byte wrong.
func BenchmarkCountDiff(b *testing.B) {
	pat := pattern(patternLen)
	x, y := pat[:64<<10], pat[1:64<<10+1]
	b.SetBytes(int64(len(x)))
	for b.Loop() {
		countDiff(x, y)
	}
}
