package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/iopath/iopath/metrics"
)

func init() { Register(archiveEngine{}) }

// archiveEngine reads the files of one packed archive (see Pack): a tar
// stream, zstd-compressed or not, read front to back. Opening 100,000 files
// becomes reading one, so the per-file costs (path lookup, open, fstat,
// close) vanish and what is left is copying — and, with zstd, decoding.
//
// It is sequential: a stream has one reader, and fn is called from the
// goroutine that called Run. Job.Workers is the zstd decoder's concurrency
// (blocks decoded ahead on other goroutines; 0 means archiveDecoders, 1
// decodes synchronously); plain tar ignores it. Job.Paths is ignored:
// every regular member is delivered, in the archive's order. A member of a
// plain tar up to archivePeekMax is delivered in place, in the read
// buffer; others are read into one buffer, first Job.BufferSize, grown to
// the largest member and reused. Either way File.Data is valid only during
// the call.
//
// File.Path is the member's name as stored: for Pack's archives the path
// relative to the packed directory, slash-separated ("sub/dir/file").
// Members that are not regular files (directories, symlinks, devices,
// written by another tar) are skipped and counted in a note. A corrupt or
// truncated archive stops the batch with an error naming the archive and
// the member; members are never delivered with File.Err. The format is
// told by content, not by name: zstd's magic number, or tar.
//
// Stats.Syscalls counts the system calls on the archive file: open, fstat,
// the reads (1 MiB each) and close. Latency, with Job.Latency, is per
// member: from starting to read its header to having all its bytes.
type archiveEngine struct{}

func (archiveEngine) Name() string { return "archive" }

// archiveReadSize is the read() size on the archive file.
const archiveReadSize = 1 << 20

// archiveDecoders is the zstd decoder concurrency when Job.Workers is 0:
// synchronous. Decoding ahead on other goroutines gains nothing on two
// cores (see BenchmarkArchive: on text-like data 2 or 4 decoders are
// within noise of 1; on incompressible data, stored in raw blocks, they
// are 25-30% slower, paying for the hand-off and not saving any work).
const archiveDecoders = 1

// archivePeekMax is the largest member of a plain tar delivered from the
// read buffer itself; larger ones are copied into a buffer of their own
// (sliding a large member to the buffer's front costs a copy anyway).
const archivePeekMax = 256 << 10

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

func (archiveEngine) Run(ctx context.Context, job Job, fn Func) (*Stats, error) {
	if job.Archive == "" {
		return nil, fmt.Errorf("%w: the archive engine reads a packed file: give one (iopath pack DIR -o FILE)", ErrNotSupported)
	}
	st := &Stats{}
	if job.Latency {
		st.Lat = metrics.NewHistogram()
	}
	f, err := os.Open(job.Archive)
	if err != nil {
		return st, err
	}
	st.Syscalls++ // openat
	defer func() {
		f.Close()
		st.Syscalls++ // close
	}()
	st.Syscalls++ // fstat
	if fi, err := f.Stat(); err != nil {
		return st, err
	} else if fi.IsDir() {
		return st, fmt.Errorf("%s: is a directory, not a packed archive (iopath pack DIR -o FILE makes one)", job.Archive)
	}

	cr := &countReader{r: f, calls: &st.Syscalls}
	br := bufio.NewReaderSize(cr, archiveReadSize)
	var stream io.Reader = br
	kind := "tar"
	magic, _ := br.Peek(4)
	switch {
	case len(magic) == 0:
		return st, fmt.Errorf("%s: empty file, not a packed archive", job.Archive)
	case bytes.Equal(magic, zstdMagic):
		workers := job.Workers
		if workers == 0 {
			workers = archiveDecoders
		}
		dec, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(workers))
		if err != nil {
			return st, fmt.Errorf("%s: %w", job.Archive, err)
		}
		defer dec.Close()
		stream = dec
		kind = "tar.zst"
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		return st, fmt.Errorf("%s: gzip-compressed; the archive engine reads tar and tar.zst (iopath pack DIR -o FILE)", job.Archive)
	}

	// Plain tar: members up to archivePeekMax are handed to fn in place,
	// in the read buffer, without a copy.
	direct := stream == io.Reader(br)
	sc := &tarScanner{r: stream}
	data := make([]byte, 0, job.BufferSize)
	done := ctx.Done()
	fail := func(err error) (*Stats, error) {
		switch {
		case sc.name != "":
			return st, fmt.Errorf("%s: after member %q: %w", job.Archive, sc.name, noEOF(err))
		case errors.Is(err, errTarHeader):
			return st, fmt.Errorf("%s: not a %s archive (%v)", job.Archive, kind, err)
		case kind == "tar" && errors.Is(err, io.ErrUnexpectedEOF):
			return st, fmt.Errorf("%s: not a tar archive, or truncated in its first member's header (%v)", job.Archive, err)
		}
		return st, fmt.Errorf("%s: not a valid %s archive at its first member: %w", job.Archive, kind, noEOF(err))
	}
	for {
		select {
		case <-done:
			return st, ctx.Err()
		default:
		}
		var t0 int64
		if st.Lat != nil {
			t0 = metrics.Ticks()
		}
		err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
		var b []byte
		if direct && sc.left <= archivePeekMax {
			b, err = sc.view(br)
		} else {
			data, err = sc.read(data)
			b = data
		}
		if err != nil {
			return st, fmt.Errorf("%s: member %q: %w", job.Archive, sc.name, noEOF(err))
		}
		if st.Lat != nil {
			st.Lat.RecordTicks(metrics.Ticks() - t0)
		}
		st.Files++
		st.Bytes += int64(len(b))
		if err := fn(&File{Path: sc.name, Data: b}); err != nil {
			return st, err
		}
	}
	if skipped := sc.skipped; skipped > 0 {
		what := "members that are not regular files"
		if skipped == 1 {
			what = "member that is not a regular file"
		}
		st.Notes = append(st.Notes, fmt.Sprintf("archive: skipped %d %s", skipped, what))
	}
	return st, nil
}

// noEOF turns a bare io.EOF (a stream that stopped mid-header) into a
// message that says what it means.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated or corrupt archive (%w)", err)
	}
	return err
}

// countReader counts the reads on the archive file.
type countReader struct {
	r     io.Reader
	calls *int64
}

func (c *countReader) Read(p []byte) (int, error) {
	*c.calls++
	return c.r.Read(p)
}

// tarScanner reads the regular files of a tar stream, one after another.
//
// archive/tar's Reader would do, but on small files its header parsing is
// most of the engine's time (it scans every 512-byte header rune by rune
// to guess its format, then parses every field): 2.2 µs of 3.1 µs per
// 4 KiB file here. tarScanner parses what delivering a file needs — the
// checksum, name and prefix, size, type — and the metadata headers that
// change them: PAX extended headers (path, size), GNU long names. It
// agrees with archive/tar on every archive archive/tar reads (see
// FuzzTarScanner) except sparse members, which are an error here. It is
// more lenient about fields it does not use (mode, owner, times).
type tarScanner struct {
	r       io.Reader
	blk     [tarBlock]byte
	name    string // the current member's name
	left    int64  // its data bytes not read yet
	pad     int64  // its padding to the next block
	skipped int64  // members that are not regular files
}

const tarBlock = 512

var (
	errTarHeader   = errors.New("invalid tar header")
	errTarNoEnd    = errors.New("truncated: the stream ends without an end-of-archive marker")
	errTarDangling = errors.New("truncated: the stream ends after a metadata header, before its member")
	zeroBlock      [tarBlock]byte
)

func tarErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errTarHeader}, args...)...)
}

// next moves to the next regular file: name is its name, left its size.
// It returns io.EOF at the end-of-archive marker, and an error for a
// stream that ends without one.
func (s *tarScanner) next() error {
	if err := s.skip(errTarNoEnd); err != nil {
		return err
	}
	var (
		paxPath, gnuName string
		paxSize          = int64(-1)
		meta             bool // a metadata header awaits its member
	)
	for {
		if _, err := io.ReadFull(s.r, s.blk[:]); err != nil {
			if err == io.EOF {
				if meta {
					return errTarDangling
				}
				return errTarNoEnd // (or nothing at all)
			}
			return err
		}
		if s.blk == zeroBlock {
			// The end: a second zero block, or (tolerated, as
			// archive/tar and GNU tar do) the stream's end.
			_, err := io.ReadFull(s.r, s.blk[:])
			switch {
			case err == io.EOF || err == nil && s.blk == zeroBlock:
				if meta {
					return errTarDangling
				}
				return io.EOF
			case err != nil:
				return err
			}
			return tarErr("a zero block followed by data")
		}
		h := &s.blk
		if !tarChecksumOK(h) {
			return tarErr("bad checksum")
		}
		size, ok := tarNumeric(h[124:136])
		if !ok || size < 0 {
			return tarErr("bad size field")
		}
		typ := h[156]
		switch typ {
		case 'x', 'g':
			rec, err := s.special(size)
			if err != nil {
				return err
			}
			if typ == 'g' {
				s.skipped++ // archive/tar returns it as a member
				paxPath, gnuName, paxSize, meta = "", "", -1, false
				continue
			}
			if paxPath, paxSize, err = tarPAX(rec); err != nil {
				return err
			}
			meta = true
			continue
		case 'L':
			rec, err := s.special(size)
			if err != nil {
				return err
			}
			gnuName = tarString(rec)
			meta = true
			continue
		case 'K':
			if _, err := s.special(size); err != nil {
				return err
			}
			meta = true
			continue
		}

		name := tarString(h[0:100])
		if prefix := tarPrefix(h); prefix != "" {
			name = prefix + "/" + name
		}
		if paxPath != "" {
			name = paxPath
		}
		if gnuName != "" {
			name = gnuName
		}
		if paxSize >= 0 {
			size = paxSize
		}
		if typ == 0 { // old-style regular file, or directory
			typ = '0'
			if len(name) > 0 && name[len(name)-1] == '/' {
				typ = '5'
			}
		}
		s.name = name
		switch typ {
		case '0':
			s.left, s.pad = size, -size&(tarBlock-1)
			return nil
		case 'S':
			return fmt.Errorf("member %q: GNU sparse files are not supported", name)
		case '1', '2', '3', '4', '5', '6':
			// Links, devices, directories, FIFOs: no data follows.
		default:
			s.left, s.pad = size, -size&(tarBlock-1)
		}
		s.skipped++
		if err := s.skip(errTarNoEnd); err != nil {
			return err
		}
		paxPath, gnuName, paxSize, meta = "", "", -1, false
	}
}

// read reads the current member's data into buf, growing it as the bytes
// arrive (a corrupt header claiming terabytes costs no more memory than
// the stream holds).
func (s *tarScanner) read(buf []byte) ([]byte, error) {
	size := s.left
	if size <= int64(cap(buf)) {
		buf = buf[:size]
		_, err := io.ReadFull(s.r, buf)
		if err == nil {
			s.left = 0
		}
		return buf, err
	}
	buf = buf[:0]
	for int64(len(buf)) < size {
		if len(buf) == cap(buf) {
			c := max(2*cap(buf), 64<<10)
			if int64(c) > size {
				c = int(size)
			}
			nb := make([]byte, len(buf), c)
			copy(nb, buf)
			buf = nb
		}
		n, err := s.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF && int64(len(buf)) < size {
			return buf, io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return buf, err
		}
	}
	s.left = 0
	return buf, nil
}

// view returns the current member's data in br's buffer (it must be
// s.r and hold size bytes); the next call to next skips it. The slice's
// capacity ends with it, so an append cannot write into the buffer.
func (s *tarScanner) view(br *bufio.Reader) ([]byte, error) {
	n := int(s.left)
	b, err := br.Peek(n)
	if err != nil {
		return nil, unexpected(err)
	}
	return b[:n:n], nil
}

// special reads a metadata member's data (PAX records, a GNU long name),
// which archive/tar limits to 1 MiB too.
func (s *tarScanner) special(size int64) ([]byte, error) {
	if size > 1<<20 {
		return nil, tarErr("metadata header of %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, noEOF(unexpected(err))
	}
	s.pad = -size & (tarBlock - 1)
	return b, s.skip(errTarDangling)
}

// skip skips the rest of the current member's data, then its padding.
// A stream that ends before the data does is truncated; one that ends in
// the padding is too, and returns atEnd, which says what it lacks.
func (s *tarScanner) skip(atEnd error) error {
	if n := s.left; n > 0 {
		var err error
		if br, ok := s.r.(*bufio.Reader); ok && n <= math.MaxInt {
			_, err = br.Discard(int(n))
		} else {
			_, err = io.CopyN(io.Discard, s.r, n)
		}
		if err != nil {
			return unexpected(err)
		}
		s.left = 0
	}
	if s.pad > 0 {
		_, err := io.ReadFull(s.r, s.blk[:s.pad])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return atEnd
		}
		if err != nil {
			return err
		}
		s.pad = 0
	}
	return nil
}

// unexpected is err, with io.EOF (a stream ending before the bytes its
// header promised) made io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// tarChecksumOK checks a header's checksum, which is the sum of its bytes
// with the checksum field taken as spaces: unsigned, as POSIX says, or
// signed, as some old tars wrote it.
func tarChecksumOK(h *[tarBlock]byte) bool {
	want, ok := tarOctal(h[148:156])
	if !ok {
		return false
	}
	// The unsigned sum, eight bytes at a time: each word's bytes are
	// added in four 16-bit lanes (at most 64 × 2 × 255 each: no carry).
	const lo = 0x00ff00ff00ff00ff
	var lanes uint64
	for i := 0; i < tarBlock; i += 8 {
		w := binary.LittleEndian.Uint64(h[i:])
		lanes += w&lo + w>>8&lo
	}
	unsigned := int64(lanes&0xffff + lanes>>16&0xffff + lanes>>32&0xffff + lanes>>48)
	var field int64
	for _, c := range h[148:156] {
		field += int64(c)
	}
	unsigned += 8*' ' - field
	if want == unsigned {
		return true
	}
	var signed int64
	for i, c := range h {
		if i >= 148 && i < 156 {
			c = ' '
		}
		signed += int64(int8(c))
	}
	return want == signed
}

// tarPrefix is the USTAR or STAR name prefix, or "" for formats without
// one — except that, like archive/tar, a GNU header whose time fields do
// not parse is taken for a pre-Go 1.8 header with a USTAR prefix.
func tarPrefix(h *[tarBlock]byte) string {
	magic, version := string(h[257:263]), string(h[263:265])
	switch {
	case magic == "ustar\x00" && string(h[508:512]) == "tar\x00": // STAR
		return tarString(h[345:476])
	case magic == "ustar\x00":
		return tarString(h[345:500])
	case magic == "ustar " && version == " \x00": // GNU
		for _, f := range [][]byte{h[345:357], h[357:369]} {
			if f[0] != 0 {
				if _, ok := tarNumeric(f); !ok {
					p := tarString(h[345:500])
					for i := range len(p) {
						if p[i] >= 0x80 {
							return ""
						}
					}
					return p
				}
			}
		}
	}
	return ""
}

// tarString is a NUL-terminated field.
func tarString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// tarNumeric parses a numeric field: octal, or base-256 when its first
// byte's high bit is set.
func tarNumeric(b []byte) (int64, bool) {
	if len(b) > 0 && b[0]&0x80 != 0 {
		var inv byte
		if b[0]&0x40 != 0 {
			inv = 0xff // negative: two's complement
		}
		var x uint64
		for i, c := range b {
			c ^= inv
			if i == 0 {
				c &= 0x7f
			}
			if x>>56 > 0 {
				return 0, false
			}
			x = x<<8 | uint64(c)
		}
		if x>>63 > 0 {
			return 0, false
		}
		if inv == 0xff {
			return ^int64(x), true
		}
		return int64(x), true
	}
	return tarOctal(b)
}

// tarOctal parses an octal field padded with spaces or NULs on either
// side.
func tarOctal(b []byte) (int64, bool) {
	for len(b) > 0 && (b[0] == ' ' || b[0] == 0) {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i] // as archive/tar: the digits end at a NUL
	}
	var x uint64
	for _, c := range b {
		if c < '0' || c > '7' || x>>61 != 0 {
			return 0, false
		}
		x = x<<3 | uint64(c-'0')
	}
	return int64(x), true
}

// tarPAX parses PAX records ("%d %s=%s\n") for the member's path and size;
// size is -1 when not given. Sparse records are refused.
func tarPAX(b []byte) (path string, size int64, err error) {
	size = -1
	s := string(b)
	for len(s) > 0 {
		sp := strings.IndexByte(s, ' ')
		if sp <= 0 {
			return "", -1, tarErr("bad PAX record")
		}
		n, perr := strconv.ParseInt(s[:sp], 10, 0)
		if perr != nil || n < 5 || n > int64(len(s)) || n <= int64(sp+1) {
			return "", -1, tarErr("bad PAX record")
		}
		rec := s[sp+1 : n]
		s = s[n:]
		if rec[len(rec)-1] != '\n' {
			return "", -1, tarErr("bad PAX record")
		}
		k, v, ok := strings.Cut(rec[:len(rec)-1], "=")
		if !ok || k == "" {
			return "", -1, tarErr("bad PAX record")
		}
		switch {
		case strings.HasPrefix(k, "GNU.sparse."):
			return "", -1, errors.New("GNU sparse files are not supported")
		case v == "":
			// An empty value keeps the header's own.
		case k == "path":
			path = v
		case k == "size":
			if size, perr = strconv.ParseInt(v, 10, 64); perr != nil || size < 0 {
				return "", -1, tarErr("bad PAX size %q", v)
			}
		}
	}
	return path, size, nil
}
