// Package wdata makes the bytes iopath's write benchmarks write, and
// checks them when they are read back, as fio's verify does.
//
// The data is seeded and cheap to make: every buffer is primed once
// with a block-sized template of pseudo-random bytes drawn from the
// seed, and each block written is made from it by stamping the first 16
// bytes of every 512-byte sector with the sector's file offset and the
// pass number (as fio scrambles its buffers with the offset and time).
// A block written to the wrong offset, a block of an earlier pass, a
// lost write, or a torn or zeroed sector is caught by Verify, which
// reads the file back from the device.
package wdata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"

	"github.com/iopath/iopath/internal/sys"
)

// Sector is the span of one stamp: every Sector bytes of a block begin
// with a stamp of StampLen bytes.
const (
	Sector   = 512
	StampLen = 16
)

// Source is a seeded engine.Source. Its methods may be called from
// several goroutines at once, as engines do.
type Source struct {
	seed uint64
	tmpl []byte        // the block-sized template
	pass atomic.Uint64 // stamped into every sector
}

// New returns a Source for blocks of bs bytes drawn from seed.
func New(seed uint64, bs int) *Source {
	s := &Source{seed: seed, tmpl: make([]byte, bs)}
	x := seed
	for i := 0; i < bs; i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], splitmix(&x))
		copy(s.tmpl[i:], w[:])
	}
	return s
}

// SetPass sets the pass number stamped into the blocks written from now
// on: the caller sets it before each Run, so that a block left from an
// earlier pass does not pass for a new one.
func (s *Source) SetPass(n uint64) { s.pass.Store(n) }

// Pass is the pass number being stamped.
func (s *Source) Pass() uint64 { return s.pass.Load() }

// Prime fills b with the template, repeated.
func (s *Source) Prime(b []byte) {
	for i := 0; i < len(b); i += len(s.tmpl) {
		copy(b[i:], s.tmpl)
	}
}

// Fill stamps b, a primed buffer, as the block at file offset off.
func (s *Source) Fill(_ int, off int64, b []byte) error {
	tag := s.tag()
	for i := 0; i < len(b); i += Sector {
		st := b[i:min(i+StampLen, len(b))]
		var w [StampLen]byte
		binary.LittleEndian.PutUint64(w[0:], uint64(off)+uint64(i))
		binary.LittleEndian.PutUint64(w[8:], tag)
		copy(st, w[:])
	}
	return nil
}

func (s *Source) tag() uint64 { return s.seed*0x9e3779b97f4a7c15 ^ s.pass.Load() }

// expect writes into b the bytes the block at off (which starts a block,
// base plus a multiple of the block size) must hold.
func (s *Source) expect(off int64, b []byte) {
	copy(b, s.tmpl)
	s.Fill(0, off, b)
}

// ErrMismatch is wrapped by Verify's error when the file does not hold
// what was written.
var ErrMismatch = errors.New("the data read back differs from the data written")

// Verify reads [base, base+size) of the file fd (opened at path, for the
// messages) back from its device and checks that it holds the blocks of
// bs bytes, starting at base, that s wrote in its current pass. It reads
// through a new O_DIRECT descriptor, which writes back any dirty pages of
// the range first and then reads the device, not the page cache; on a
// filesystem that refuses O_DIRECT it fsyncs the file, drops its pages
// from the cache and reads it normally. direct says which was done.
func (s *Source) Verify(path string, base, size int64) (direct bool, err error) {
	bs := len(s.tmpl)
	fd, err := sys.Open(path, sys.O_RDONLY|sys.O_DIRECT)
	direct = err == nil
	if !direct {
		if fd, err = sys.Open(path, sys.O_RDONLY); err != nil {
			return false, err
		}
		if err := sys.Fsync(fd); err != nil {
			sys.Close(fd)
			return false, &fs.PathError{Op: "verify: fsync", Path: path, Err: err}
		}
		sys.Fadvise(fd, 0, 0, sys.FADV_DONTNEED)
	}
	defer sys.Close(fd)
	// Read in chunks of whole pages at page offsets, as O_DIRECT wants
	// whatever the block size (5000 bytes, say) and base, into an aligned
	// buffer that holds a block wherever in a page it starts; a block the
	// buffer does not hold whole is read again in the next chunk.
	ps := int64(sys.PageSize())
	chunk := max(4<<20, (int64(bs)+ps-1)/ps*ps+ps)
	mem, err := sys.MmapAnon(int(chunk))
	if err != nil {
		return direct, err
	}
	defer sys.Munmap(mem)
	want := make([]byte, bs)
	end := base + size
	var start, have int64 // mem holds the file's [start, start+have)
	for off := base; off < end; off += int64(bs) {
		n := min(int64(bs), end-off)
		if off < start || off+n > start+have {
			start, have = off/ps*ps, 0
			need := min(chunk, end-start)
			for have < need {
				// Past the file's end a read is short: accepted when
				// what was written was read.
				m, err := sys.Pread(fd, mem[have:chunk], start+have)
				if err != nil {
					return direct, &fs.PathError{Op: "verify: read", Path: path, Err: fmt.Errorf("at offset %d: %w", start+have, err)}
				}
				if m == 0 {
					return direct, &fs.PathError{Op: "verify", Path: path, Err: fmt.Errorf("%w: the file ends at %d, before the %d bytes written", ErrMismatch, start+have, end)}
				}
				have += int64(m)
			}
		}
		blk := mem[off-start : off-start+n]
		s.expect(off, want[:n])
		if string(blk) != string(want[:n]) {
			return direct, &fs.PathError{Op: "verify", Path: path, Err: mismatch(off, blk, want[:n])}
		}
	}
	return direct, nil
}

// mismatch says where and how a block differs.
func mismatch(off int64, got, want []byte) error {
	i := 0
	for i < len(got) && got[i] == want[i] {
		i++
	}
	sec := i / Sector * Sector
	what := "other bytes"
	st := got[sec:min(sec+StampLen, len(got))]
	if len(st) == StampLen {
		gotOff := binary.LittleEndian.Uint64(st)
		wantOff := binary.LittleEndian.Uint64(want[sec:])
		switch {
		case allZero(got[sec:min(sec+Sector, len(got))]):
			what = "zeros (a lost or torn write)"
		case gotOff != wantOff:
			what = fmt.Sprintf("the sector written for offset %d", gotOff)
		case binary.LittleEndian.Uint64(st[8:]) != binary.LittleEndian.Uint64(want[sec+8:]):
			what = "a sector of another pass (a lost write)"
		}
	}
	return fmt.Errorf("%w: at offset %d the file holds %s", ErrMismatch, off+int64(i), what)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
