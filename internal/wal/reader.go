package wal

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"

	"github.com/iopath/iopath/internal/sys"
)

// Result is what Scan found.
type Result struct {
	// End is the end of the last good record: where appends go.
	End int64
	// Records is the number of good records.
	Records int64
	// Torn is the number of bytes after End, a torn tail (0: none).
	Torn int64
	// Why says what was wrong with the first torn record ("" if none).
	Why string
}

// CorruptError is damage that is not a torn tail: it wraps ErrCorrupt.
type CorruptError struct {
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt at offset %d: %s", e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// windowLen is how much the scanner reads at a time.
const windowLen = 1 << 20

// FdReader reads a file by position with pread(2) on the descriptor:
// nothing moves a shared file offset.
type FdReader int

// ReadAt is pread(2), retrying EINTR; 0 bytes at the end is io.EOF.
func (fd FdReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := sys.Pread(int(fd), b, off)
	if err == nil && n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, err
}

// scanner reads a log file through a window of its bytes.
type scanner struct {
	r    io.ReaderAt
	path string
	size int64  // the bytes the scan covers
	buf  []byte // the window: file bytes [wOff, wOff+len(buf))
	wOff int64
}

// at returns the file's bytes [off, off+n), valid until the next call.
// The caller has checked that off+n <= s.size.
func (s *scanner) at(off int64, n int) ([]byte, error) {
	if off >= s.wOff && off+int64(n) <= s.wOff+int64(len(s.buf)) {
		return s.buf[off-s.wOff : off-s.wOff+int64(n)], nil
	}
	want := int(min(int64(max(n, windowLen)), s.size-off))
	if cap(s.buf) < want {
		s.buf = make([]byte, want)
	}
	b := s.buf[:want]
	got := 0
	for got < want {
		k, err := s.r.ReadAt(b[got:], off+int64(got))
		got += k
		if err == io.EOF {
			break
		}
		if err != nil {
			s.buf = s.buf[:0]
			return nil, &fs.PathError{Op: "read", Path: s.path, Err: err}
		}
	}
	s.buf, s.wOff = b[:got], off
	if got < n {
		return nil, &fs.PathError{Op: "read", Path: s.path,
			Err: fmt.Errorf("the file ended at offset %d while %d bytes were expected (truncated while read): %w", off+int64(got), s.size, io.ErrUnexpectedEOF)}
	}
	return b[:n], nil
}

// record checks the record at off and returns its frame (header and
// payload), or why it is not a good record.
func (s *scanner) record(off int64) (frame []byte, h header, why string, err error) {
	if s.size-off < HeaderLen {
		return nil, h, fmt.Sprintf("%d bytes left, less than a record header", s.size-off), nil
	}
	b, err := s.at(off, HeaderLen)
	if err != nil {
		return nil, h, "", err
	}
	h = parseHeader(b)
	switch {
	case h.off != uint64(off):
		return nil, h, "no record header (its offset field does not match its place)", nil
	case h.length > MaxRecord:
		return nil, h, fmt.Sprintf("length %d over the limit %d", h.length, MaxRecord), nil
	case int64(h.back) > off-FileHeaderLen:
		return nil, h, "its commit would start before the first record", nil
	case s.size-off-HeaderLen < int64(h.length):
		return nil, h, fmt.Sprintf("a record of %d bytes with %d left (incomplete)", h.length, s.size-off-HeaderLen), nil
	}
	frame, err = s.at(off, HeaderLen+int(h.length))
	if err != nil {
		return nil, h, "", err
	}
	if !h.check(frame) {
		return nil, h, "checksum mismatch", nil
	}
	return frame, h, "", nil
}

// candidate returns the first offset at or after off where a header's
// offset field equals its own place in the file, or -1: the only places
// a good record can start.
func (s *scanner) candidate(off int64) (int64, error) {
	for s.size-off >= HeaderLen {
		n := int(min(int64(windowLen), s.size-off))
		b, err := s.at(off, n)
		if err != nil {
			return -1, err
		}
		for i := 0; i+HeaderLen <= len(b); i++ {
			if binary.LittleEndian.Uint64(b[i+8:]) == uint64(off+int64(i)) {
				return off + int64(i), nil
			}
		}
		off += int64(len(b) - HeaderLen + 1)
	}
	return -1, nil
}

// Scan reads the records of the log in r, whose first size bytes it
// covers and whose file header the caller has checked, and calls fn
// (if not nil) with each good record's offset and payload, in order,
// until the first bad one. The payload is valid only during the call.
// An error from fn stops the scan and is returned as it is.
//
// A bad record (incomplete, a header out of place, a checksum mismatch)
// at offset X starts a torn tail when no good record of a later commit
// follows: every good record after X has a commit start (its offset
// minus back) at or before X, so it belongs to the commit X is in,
// which was being written when the system stopped. A good record whose
// commit starts after X means that a later commit was written, which
// happens only once X's commit was durable: that is corruption, and Scan
// returns a *CorruptError wrapping ErrCorrupt. With strict (a log this
// process wrote and synced up to size) any bad record is corruption.
func Scan(r io.ReaderAt, path string, size int64, strict bool, fn func(off int64, rec []byte) error) (Result, error) {
	s := &scanner{r: r, path: path, size: size}
	var res Result
	off := int64(FileHeaderLen)
	for off < size {
		frame, _, why, err := s.record(off)
		if err != nil {
			return res, err
		}
		if why != "" {
			if strict {
				return res, &fs.PathError{Op: "read", Path: path, Err: &CorruptError{Offset: off, Reason: why}}
			}
			return s.tail(res, off, why)
		}
		if fn != nil {
			if err := fn(off, frame[HeaderLen:]); err != nil {
				return res, err
			}
		}
		res.Records++
		off += int64(len(frame))
	}
	res.End = off
	return res, nil
}

// tail decides whether the bad record at x starts a torn tail (see Scan).
func (s *scanner) tail(r Result, x int64, why string) (Result, error) {
	for y := x + 1; ; {
		c, err := s.candidate(y)
		if err != nil {
			return r, err
		}
		if c < 0 {
			break
		}
		frame, h, bad, err := s.record(c)
		if err != nil {
			return r, err
		}
		if bad != "" {
			y = c + 1
			continue
		}
		if start := c - int64(h.back); start > x {
			return r, &fs.PathError{Op: "read", Path: s.path, Err: &CorruptError{Offset: x,
				Reason: fmt.Sprintf("%s, and a good record of a later commit (started at offset %d) follows at offset %d", why, start, c)}}
		}
		y = c + int64(len(frame))
	}
	r.End, r.Torn, r.Why = x, s.size-x, why
	return r, nil
}

// CheckFileHeader reads the file header of the log in r, size bytes
// long. It returns ok when the file is a log; fresh when it holds no log
// yet (empty, or a header torn while it was first written: nothing was
// ever acknowledged in it); otherwise an error wrapping ErrCorrupt (not a
// log, or a version this package cannot read) or the read's error.
func CheckFileHeader(r io.ReaderAt, path string, size int64) (fresh bool, err error) {
	if size == 0 {
		return true, nil
	}
	s := &scanner{r: r, path: path, size: min(size, FileHeaderLen)}
	b, err := s.at(0, int(s.size))
	if err != nil {
		return false, err
	}
	switch st, why := checkFileHeader(b, size); st {
	case headerTorn:
		return true, nil
	case headerForeign:
		return false, &fs.PathError{Op: "read", Path: path, Err: &CorruptError{Offset: 0, Reason: why}}
	}
	return false, nil
}
