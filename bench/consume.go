package bench

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/zeebo/xxh3"

	"github.com/iopath/iopath/engine"
)

// The checksum of a read is order-independent, so that engines that deliver
// blocks out of order (io_uring, several workers, the random pattern) can be
// compared with a plain sequential reference: the sum, modulo 2^64, of each
// block's xxh3 hash seeded with its offset. A block delivered twice, missing,
// at the wrong offset or with a wrong byte changes it.

func blockSum(off int64, b []byte) uint64 { return xxh3.HashSeed(b, uint64(off)) }

// acc is one worker's accumulator, padded to its own cache line so that
// workers do not share one.
type acc struct {
	v uint64
	_ [56]byte
}

// consumer is the Sink a child hands to the engine.
type consumer struct {
	mode Consume
	accs []acc
}

func newConsumer(mode Consume, workers int) *consumer {
	return &consumer{mode: mode, accs: make([]acc, workers)}
}

func (c *consumer) Block(w int, off int64, b []byte) error {
	switch c.mode {
	case Checksum:
		c.accs[w].v += blockSum(off, b)
	case Touch:
		var x byte
		for i := 0; i < len(b); i += 4096 {
			x += b[i]
		}
		c.accs[w].v += uint64(x)
	}
	return nil
}

func (c *consumer) reset() {
	for i := range c.accs {
		c.accs[i].v = 0
	}
}

func (c *consumer) sum() uint64 {
	var s uint64
	for i := range c.accs {
		s += c.accs[i].v
	}
	return s
}

// referenceChecksum reads path with plain pread, block by block, and
// returns the checksum every engine must reproduce.
func referenceChecksum(path string, bs int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	buf := make([]byte, bs)
	var sum uint64
	for off := int64(0); off < st.Size(); off += int64(bs) {
		n := int(min(int64(bs), st.Size()-off))
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return "", &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("reference read at %d: %w (%w)", off, err, engine.ErrChanged)}
		}
		sum += blockSum(off, buf[:n])
	}
	return formatSum(sum), nil
}

func formatSum(s uint64) string { return fmt.Sprintf("%016x", s) }
