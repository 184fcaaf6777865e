package load

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
)

const (
	// patternLen is the period of every connection's byte stream: the
	// largest prime below 2^20. Prime, so that no message size divides
	// it (a duplicated or skipped message always shifts the stream by a
	// distance the pattern tells apart), and above MaxConns, so that
	// every connection starts at a different offset.
	patternLen = 1_048_573
	// maxWindow is the longest slice taken from the pattern at once (one
	// write or one read); the block repeats its head after patternLen so
	// that every window is contiguous.
	maxWindow = 256 << 10
	// phaseMul spreads connections over the pattern: connection i starts
	// at i*phaseMul mod patternLen, distinct for i < patternLen because
	// patternLen is prime and does not divide phaseMul.
	phaseMul = 2_654_435_761
)

// pattern is the pseudo-random block every connection's stream is cut
// from: the same bytes in every run, built once per process (1.3 MiB).
var pattern = sync.OnceValue(func() []byte {
	b := make([]byte, patternLen+maxWindow)
	rng := rand.New(rand.NewPCG(0x696f70617468, 0x6c6f6164))
	var w [8]byte
	for i := 0; i < patternLen; i += 8 {
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		copy(b[i:patternLen], w[:])
	}
	copy(b[patternLen:], b[:maxWindow])
	return b
})

// connBase is where connection id's stream starts in the pattern.
func connBase(id int) int64 { return int64(uint64(id) * phaseMul % patternLen) }

// expected returns what bytes [off, off+n) of the stream of the connection
// starting at base are: a slice of pat, n ≤ maxWindow.
func expected(pat []byte, base, off, n int64) []byte {
	p := (base + off) % patternLen
	return pat[p : p+n]
}

// countDiff counts the positions where a and b differ (len(a) == len(b)).
// It is the slow path, taken only when bytes.Equal said no.
func countDiff(a, b []byte) int64 {
	var d int64
	for i := range a {
		if a[i] != b[i] {
			d++
		}
	}
	return d
}
