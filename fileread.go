package iopath

import (
	"cmp"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"unsafe"

	"github.com/iopath/iopath/internal/fileio"
)

// ReadAt reads len(p) bytes at off, as io.ReaderAt says: n < len(p) comes
// with a non-nil error, io.EOF when the file ended first; it does not
// return before p is full, the file ends or an error occurs. A negative
// off gives an *fs.PathError wrapping ErrNegativeOffset; with WithDirect,
// an unaligned request one wrapping ErrUnaligned (an empty p needs no
// alignment: it reads nothing and succeeds). Other errors are
// *fs.PathError naming the file.
//
// ReadAt is one pread (a request of at least 4 MiB is split into chunks
// read by the File's workers in parallel): a single request gains nothing
// from a ring, so even an io_uring File reads it with pread. Use ReadBatch
// for many requests at once. An mmap File copies from its mapping on the
// calling goroutine instead, and reads what lies past the size mapped at
// Open (the file grew) with pread. A file truncated under the mapping
// makes a read of a page past its new end fail with an *fs.PathError
// wrapping ErrChanged (the fault is caught, never a crash); the part of
// its new last page past the new end reads as zeros, as the kernel maps
// it.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.readAt(p, off)
	if err != nil {
		err = public(err)
	}
	return n, err
}

func (f *File) readAt(p []byte, off int64) (int, error) {
	if err := f.acquire("read"); err != nil {
		return 0, err
	}
	defer f.release()
	if testHookReading != nil {
		testHookReading()
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: ErrNegativeOffset}
	}
	if len(p) == 0 {
		// Nothing to transfer, so nothing to align, even WithDirect.
		return 0, nil
	}
	if f.direct && !directAligned(p, off) {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: ErrUnaligned}
	}
	var n int
	var err error
	if f.m != nil {
		var faulted bool
		if n, faulted = fileio.CopyAt(f.m, p, off); faulted {
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: ErrChanged}
		}
		if n == len(p) {
			return n, nil
		}
		// Past the mapping: the file grew since Open, or ends here.
		nw := fileio.Nowait{Off: f.inline.Off.Load()}
		var m int
		m, err = fileio.PreadFull(f.fd, p[n:], off+int64(n), &nw, false)
		n += m
	} else if len(p) >= splitReadAt && f.choice.Workers > 1 {
		n, err = fileio.ReadChunks(f.fd, p, off, max(f.choice.BlockSize, splitChunk), f.choice.Workers, f.direct, false)
	} else {
		nw := fileio.Nowait{Off: f.direct || f.inline.Off.Load()}
		n, err = fileio.PreadFull(f.fd, p, off, &nw, f.direct)
		if nw.Off && !f.direct {
			f.inline.Off.Store(true) // the kernel refused RWF_NOWAIT
		}
	}
	if err != nil {
		return n, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Thresholds of ReadAt's split into parallel chunks.
const (
	splitReadAt = 4 << 20
	splitChunk  = 1 << 20
)

// ReadBatch reads every request and sets each one's N and Err. It returns
// the first request's error in slice order (io.EOF included), or an error
// that stopped the whole batch, which every request's Err then holds too:
// a closed File (an *fs.PathError wrapping fs.ErrClosed), or two requests
// whose buffers overlap (wrapping ErrOverlap; nothing is read). A request
// with an empty Buf reads nothing and succeeds (WithDirect too: it needs
// no alignment); one with a negative Off (ErrNegativeOffset) or,
// WithDirect, an unaligned one (ErrUnaligned) fails on its own while the
// others are read.
//
// Unless the File is WithDirect, ReadBatch first reads the requests whose
// data is in the page cache on the calling goroutine, with
// preadv2(RWF_NOWAIT) (one call per run of requests adjacent in the slice
// and in the file): on cached data that costs no goroutine, ring or pin.
// Only the requests that were not cached, or only partly, go on to the
// backend, for what is left of them.
//
// Backends: with io_uring the requests go to one of the File's rings,
// up to the queue depth in flight, with one io_uring_enter per round; the
// buffers are pinned until their completions arrive. With pread, requests
// whose file ranges are adjacent are read together with one preadv, and
// the reads are spread over the File's workers. The requests' buffers are
// written by the kernel only; ReadBatch keeps no reference to them after
// it returns, with one exception: if the ring itself fails (the error
// says "io_uring ring failed", and every request it did not finish holds
// it), the kernel may still write the buffers of the reads it had in
// flight at any time. Those buffers are then kept pinned and referenced
// for as long as the process lives, and the caller must not reuse them;
// the File goes on with a new ring, or with pread. An io_uring read asks
// for at most 1 GiB at a time, so a request may be of any size.
func (f *File) ReadBatch(reqs []Request) error {
	err := f.readBatch(reqs)
	if err == nil {
		return nil
	}
	// Every request's error in the public form; requests that share one
	// error (a closed File, overlapping buffers, a failed ring) share the
	// public one too, and the error returned is the first request's own.
	ret := public(err)
	var last, lastPub error
	for i := range reqs {
		r := &reqs[i]
		if r.Err == nil || r.Err == io.EOF {
			continue
		}
		if r.Err != last {
			last, lastPub = r.Err, public(r.Err)
			if last == err {
				lastPub = ret
			}
		}
		r.Err = lastPub
	}
	return ret
}

func (f *File) readBatch(reqs []Request) error {
	if err := f.acquire("read"); err != nil {
		for i := range reqs {
			reqs[i].N, reqs[i].Err = 0, err
		}
		return err
	}
	defer f.release()
	if err := f.checkOverlap(reqs); err != nil {
		for i := range reqs {
			reqs[i].N, reqs[i].Err = 0, err
		}
		return err
	}
	// Requests that need I/O, by index.
	var small [64]int32
	idx := small[:0]
	for i := range reqs {
		r := &reqs[i]
		r.N, r.Err = 0, nil
		switch {
		case r.Off < 0:
			r.Err = &fs.PathError{Op: "readat", Path: f.name, Err: ErrNegativeOffset}
		case len(r.Buf) == 0:
			// Reads nothing and succeeds, even WithDirect: nothing to align.
		case f.direct && !directAligned(r.Buf, r.Off):
			r.Err = &fs.PathError{Op: "readat", Path: f.name, Err: ErrUnaligned}
		default:
			idx = append(idx, int32(i))
		}
	}
	ioreqs := ioRequests(reqs)
	if len(idx) > 0 && f.m != nil {
		// The mmap backend copies on the calling goroutine (and its
		// workers, for a large batch); what lies past the mapping goes on
		// to pread.
		idx = fileio.CopyRequests(f.m, ioreqs, idx, f.choice.Workers, f.changed)
	} else if len(idx) > 0 && !f.direct && !testNoInline {
		n0 := len(idx)
		var tried bool
		idx, tried = f.inline.Read(f.fd, ioreqs, idx)
		if tried && testHookInline != nil {
			testHookInline(n0-len(idx), slices.Clone(idx))
		}
	}
	if len(idx) > 0 {
		var err error
		if f.rings != nil {
			err = f.rings.Read(int32(f.fd), ioreqs, idx, f.direct)
		}
		if f.rings == nil || err == fileio.ErrNoRing {
			err = nil
			fileio.ReadSync(f.fd, ioreqs, idx, f.choice.Workers, f.direct)
		}
		if err != nil {
			// The ring failed: requests it did not finish carry its error.
			for _, i := range idx {
				if r := &reqs[i]; r.Err == nil && r.N < len(r.Buf) {
					r.Err = err
				}
			}
		}
		for _, i := range idx {
			r := &reqs[i]
			if r.Err != nil && r.Err != io.EOF {
				if _, ok := r.Err.(*fs.PathError); !ok {
					r.Err = &fs.PathError{Op: "read", Path: f.name, Err: r.Err}
				}
			}
		}
	}
	for i := range reqs {
		if reqs[i].Err != nil {
			return reqs[i].Err
		}
	}
	return nil
}

// Request has fileio.Request's fields, so that a batch is read in place
// (the conversion below compiles only while they stay the same).
var _ = fileio.Request(Request{})

// ioRequests is reqs as the I/O layer's requests: the same memory.
func ioRequests(reqs []Request) []fileio.Request {
	return unsafe.Slice((*fileio.Request)(unsafe.Pointer(unsafe.SliceData(reqs))), len(reqs))
}

// checkOverlap returns ErrOverlap (in an *fs.PathError) when two
// requests' buffers share memory.
func (f *File) checkOverlap(reqs []Request) error {
	if len(reqs) < 2 {
		return nil
	}
	// The buffers' address ranges, copied out so that sorting them
	// compares plain integers (with indexes through reqs, the sort was
	// ~5% of a batch of 64 cached 4 KiB reads).
	type span struct {
		lo, hi uintptr
		i      int32
	}
	var small [64]span
	spans := small[:0]
	for i := range reqs {
		if b := reqs[i].Buf; len(b) > 0 {
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			spans = append(spans, span{lo, lo + uintptr(len(b)), int32(i)})
		}
	}
	// Buffers are most often in increasing address order already.
	sorted := true
	for k := 1; k < len(spans) && sorted; k++ {
		sorted = spans[k-1].lo < spans[k].lo
	}
	if !sorted {
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	}
	for k := 1; k < len(spans); k++ {
		if spans[k-1].hi > spans[k].lo {
			a, b := min(spans[k-1].i, spans[k].i), max(spans[k-1].i, spans[k].i)
			return &fs.PathError{Op: "readbatch", Path: f.name, Err: fmt.Errorf("%w: requests %d and %d", ErrOverlap, a, b)}
		}
	}
	return nil
}

func directAligned(b []byte, off int64) bool { return fileio.Aligned(b, off) }

// testNoInline, set by tests of the rings (fault injection, split reads),
// sends every request to the backend, cached or not.
var testNoInline bool

// testHookInline, if set, sees each inline pass: how many requests it
// served, and the requests (indexes into reqs) left for the backend.
var testHookInline func(served int, rest []int32)
