package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The on-disk format (docs/log.md has the long form).
//
// A log file starts with a file header of FileHeaderLen bytes:
//
//	0  [8]byte  magic "IOPATHWL"
//	8  uint32   format version (1)
//	12 uint32   CRC-32C of bytes 0..12
//
// and goes on with records, each a header of HeaderLen bytes and then the
// payload, back to back with no padding. All integers are little-endian.
//
//	0  uint32   CRC-32C (Castagnoli) of the payload, then of header bytes 4..20
//	4  uint32   payload length
//	8  uint64   offset of this header in the file
//	16 uint32   back: bytes from the start of this record's commit to this
//	            header (0 for the first record of a commit)
//
// A commit is the bytes one group commit wrote with one write: whole
// records, the first of them at the commit's start. A commit's write
// begins only after the fdatasync of every earlier commit has completed,
// so at most one commit, the last, can be partly on disk after a crash:
// that is what lets the reader tell a torn tail from corruption (see
// Scan).
//
// The offset field makes a header valid at one position only: zeros (a
// block the filesystem allocated but never wrote, which ext4 shows after
// a crash) and bytes of another record never pass for a header, and the
// reader can look for the next valid header byte by byte without running
// a CRC at every offset. The CRC covers the length, the offset and back,
// so none of them can be damaged unseen.
const (
	FileHeaderLen = 16
	HeaderLen     = 20
	// MaxRecord is the largest payload a record may have.
	MaxRecord = 64 << 20
	// Version is the format version this package writes and reads.
	Version = 1
)

var magic = [8]byte{'I', 'O', 'P', 'A', 'T', 'H', 'W', 'L'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by the error for a log whose damage is not a torn
// tail: a bad record followed by a record of a later commit, a file
// header that is not a log's. iopath.ErrCorrupt is this value.
var ErrCorrupt = errors.New("log corrupt")

// PayloadCRC is the first part of a record's CRC, over its payload: it
// can be computed before the record's place in the file is known.
func PayloadCRC(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// PutHeader writes the header of a record of length bytes whose payload
// CRC is payloadCRC, at file offset off, back bytes after its commit's
// start, into h[:HeaderLen].
func PutHeader(h []byte, payloadCRC uint32, length int, off int64, back int) {
	_ = h[HeaderLen-1]
	binary.LittleEndian.PutUint32(h[4:], uint32(length))
	binary.LittleEndian.PutUint64(h[8:], uint64(off))
	binary.LittleEndian.PutUint32(h[16:], uint32(back))
	binary.LittleEndian.PutUint32(h[0:], crc32.Update(payloadCRC, castagnoli, h[4:HeaderLen]))
}

// header is a record header as read, before its CRC is checked.
type header struct {
	crc    uint32
	length uint32
	off    uint64
	back   uint32
}

func parseHeader(h []byte) header {
	_ = h[HeaderLen-1]
	return header{
		crc:    binary.LittleEndian.Uint32(h[0:]),
		length: binary.LittleEndian.Uint32(h[4:]),
		off:    binary.LittleEndian.Uint64(h[8:]),
		back:   binary.LittleEndian.Uint32(h[16:]),
	}
}

// check reports whether frame (a header then its payload) checks out.
func (h header) check(frame []byte) bool {
	c := crc32.Update(PayloadCRC(frame[HeaderLen:]), castagnoli, frame[4:HeaderLen])
	return c == h.crc
}

// FileHeader returns the file header this package writes.
func FileHeader() []byte {
	b := make([]byte, FileHeaderLen)
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[8:], Version)
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[:12], castagnoli))
	return b
}

// fileHeaderState says what the first bytes of a file are.
type fileHeaderState int

const (
	headerOK      fileHeaderState = iota
	headerTorn                    // a header that was being written when the system stopped: no log yet
	headerForeign                 // not an iopath log, or a version this package cannot read
)

// checkFileHeader classifies b, the first min(size, FileHeaderLen)
// bytes of a file of size bytes. A file no longer than the header whose
// bytes are each the header's own or zero is a torn creation: OpenLog
// writes and syncs the header before the first record, so nothing was
// ever acknowledged in such a file.
func checkFileHeader(b []byte, size int64) (fileHeaderState, string) {
	want := FileHeader()
	if size >= FileHeaderLen && string(b[:FileHeaderLen]) == string(want) {
		return headerOK, ""
	}
	if size <= FileHeaderLen {
		torn := true
		for i, c := range b {
			if c != 0 && c != want[i] {
				torn = false
			}
		}
		if torn {
			return headerTorn, ""
		}
	}
	if len(b) >= 12 && string(b[:8]) == string(magic[:]) {
		if v := binary.LittleEndian.Uint32(b[8:]); v != Version {
			return headerForeign, fmt.Sprintf("format version %d, and this build reads version %d", v, Version)
		}
		return headerForeign, "the file header's checksum does not match"
	}
	return headerForeign, "not an iopath log (no IOPATHWL file header)"
}
