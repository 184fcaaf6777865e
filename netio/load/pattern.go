package load

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"sync"
	"unsafe"
)

const (
	// patternLen is the period of every connection's byte stream: the
	// largest prime below 2^20. Prime, so that a duplicated or skipped
	// run of whole messages shifts the stream by a distance the pattern
	// tells apart whenever the period does not divide the message size,
	// and above MaxConns, so that every connection starts at a different
	// offset.
	patternLen = 1_048_573
	// altPatternLen is the period of a run whose message size patternLen
	// divides (1,048,573 bytes and its multiples up to MaxSize): the
	// next prime below. With patternLen every message of such a run
	// would be the same bytes, and a server that echoed an earlier
	// message in place of the next would go unseen. Both are prime, so
	// no size up to their product (far above MaxSize) is a multiple of
	// both.
	altPatternLen = 1_048_571
	// maxWindow is the longest slice taken from the pattern at once (one
	// write or one read); the block repeats its head after the period so
	// that every window is contiguous.
	maxWindow = 256 << 10
	// phaseMul spreads connections over the pattern: connection i starts
	// at i*phaseMul mod the period, distinct for i below the period
	// because the period is prime and does not divide phaseMul.
	phaseMul = 2_654_435_761
)

// patterns are the pseudo-random blocks connections' streams are cut
// from, by period: the same bytes in every run, each built once per
// process (1.3 MiB) when a run first needs it.
var patterns = map[int64]func() []byte{
	patternLen:    sync.OnceValue(func() []byte { return buildPattern(patternLen) }),
	altPatternLen: sync.OnceValue(func() []byte { return buildPattern(altPatternLen) }),
}

func buildPattern(period int) []byte {
	b := make([]byte, period+maxWindow)
	rng := rand.New(rand.NewPCG(0x696f70617468, 0x6c6f6164))
	var w [8]byte
	for i := 0; i < period; i += 8 {
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		copy(b[i:period], w[:])
	}
	copy(b[period:], b[:maxWindow])
	return b
}

// periodFor returns the period of the streams of a run whose messages
// are size bytes: one that does not divide size, so that message m+d
// differs from message m for every d below the period (d messages shift
// the stream by d*size, a multiple of the prime period only when d is).
func periodFor(size int64) int64 {
	if size%patternLen == 0 {
		return altPatternLen
	}
	return patternLen
}

// pattern returns the block of a period periodFor chose.
func pattern(period int64) []byte { return patterns[period]() }

// connBase is where connection id's stream starts in a pattern of the
// period.
func connBase(id int, period int64) int64 { return int64(uint64(id) * phaseMul % uint64(period)) }

// expected returns what bytes [off, off+n) of the stream of the connection
// starting at base are: a slice of pat, whose period is period,
// n ≤ maxWindow.
func expected(pat []byte, period, base, off, n int64) []byte {
	p := (base + off) % period
	return pat[p : p+n]
}

// countDiff counts the positions where a and b differ (len(a) == len(b)).
// It is the slow path, taken only when bytes.Equal said no, but a stream
// that a server shifted stays wrong to the end of the run, so it goes a
// word at a time: a connection checking megabytes of wrong echo must not
// take the CPU its healthy neighbours need.
func countDiff(a, b []byte) int64 {
	const lo = 0x0101010101010101
	// Whole words, loaded as such (one access each, also for the race
	// detector, which instruments every byte of a byte-wise load).
	n := len(a) / 8
	var d int
	if n > 0 {
		wa := unsafe.Slice((*uint64)(unsafe.Pointer(&a[0])), n)
		wb := unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
		for i, x := range wa {
			x ^= wb[i]
			// fold each byte's bits into its lowest bit: one per
			// byte that differs
			x |= x >> 4
			x |= x >> 2
			x |= x >> 1
			d += bits.OnesCount64(x & lo)
		}
	}
	for i := n * 8; i < len(a); i++ {
		if a[i] != b[i] {
			d++
		}
	}
	return int64(d)
}
