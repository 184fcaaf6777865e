package fileio

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/iopath/iopath/internal/sys"
)

// PreadFull reads b at off until b is full or the file ends; n < len(b)
// means end of file. With O_DIRECT a read that ends short of an aligned
// boundary is the end of the file. Each read tries nw's fast path first.
// Errors are bare errnos.
func PreadFull(fd int, b []byte, off int64, nw *Nowait, direct bool) (int, error) {
	got := 0
	var iov [1]sys.Iovec
	for got < len(b) {
		rest := b[got:]
		iov[0].Base = &rest[0]
		iov[0].SetLen(len(rest))
		n, err := nw.Preadv(fd, iov[:], len(rest), off+int64(got), nil)
		if err != nil {
			return got, err
		}
		if n == 0 {
			break
		}
		got += n
		if direct && got%DirectAlign != 0 {
			break
		}
	}
	return got, nil
}

// ReadChunks fills dst from the file at off in chunks of bs bytes (bs >
// 0), taken in turn by up to workers goroutines (the caller's included),
// each chunk read straight into its place in dst. It returns the length
// of the prefix of dst that was read: less than len(dst) when the file
// ended first (the lowest end any chunk saw). With sequential, one
// goroutine reads with read(2) from the file position instead. Errors are
// bare errnos.
func ReadChunks(fd int, dst []byte, off int64, bs, workers int, direct, sequential bool) (int, error) {
	nchunks := (len(dst) + bs - 1) / bs
	workers = max(1, min(workers, nchunks))
	if sequential {
		return ReadSeq(fd, dst, direct)
	}
	if workers == 1 {
		nw := Nowait{Off: direct}
		n := 0
		for n < len(dst) {
			want := min(bs, len(dst)-n)
			m, err := PreadFull(fd, dst[n:n+want], off+int64(n), &nw, direct)
			n += m
			if err != nil {
				return n, err
			}
			if m < want {
				break
			}
		}
		return n, nil
	}
	var (
		next  atomic.Int64
		end   atomic.Int64 // lowest end of file seen
		errMu sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	end.Store(int64(len(dst)))
	work := func() {
		nw := Nowait{Off: direct}
		for {
			i := int(next.Add(1) - 1)
			lo := i * bs
			if i >= nchunks || int64(lo) >= end.Load() {
				return
			}
			hi := min(lo+bs, len(dst))
			m, err := PreadFull(fd, dst[lo:hi], off+int64(lo), &nw, direct)
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
				end.Store(0) // stops the others
				return
			}
			if m < hi-lo {
				for e := end.Load(); int64(lo+m) < e && !end.CompareAndSwap(e, int64(lo+m)); e = end.Load() {
				}
			}
		}
	}
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return int(end.Load()), nil
}

// ReadSeq reads dst with read(2) from the file position, until dst is
// full or the file ends (with O_DIRECT, a read that ends short of an
// aligned boundary is the end). Errors are bare errnos.
func ReadSeq(fd int, dst []byte, direct bool) (int, error) {
	n := 0
	for n < len(dst) {
		b := dst[n:]
		if TestMaxRead > 0 {
			b = b[:min(len(b), TestMaxRead)]
		}
		m, err := sys.Read(fd, b)
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
		if direct && n%DirectAlign != 0 {
			break
		}
	}
	return n, nil
}

// ReadNonblock is one read(2) on a descriptor opened with O_NONBLOCK (so
// that opening a FIFO cannot block). Regular files ignore the flag on
// Linux's page-cache read path; should a filesystem honour it and answer
// EAGAIN, the flag is cleared and the read made again. A FIFO or socket
// with nothing to read yet keeps its EAGAIN. calls, if not nil, counts
// the system calls made. Errors are bare errnos.
func ReadNonblock(fd int, b []byte, calls *int64) (int, error) {
	n, err := sys.Read(fd, b)
	if !errors.Is(err, sys.EAGAIN) {
		if calls != nil {
			*calls++
		}
		return n, err
	}
	var st sys.Stat_t
	c := int64(2)
	defer func() {
		if calls != nil {
			*calls += c
		}
	}()
	if sys.Fstat(fd, &st) != nil || st.Mode&sys.S_IFMT != sys.S_IFREG {
		return n, err
	}
	c += 2 // fcntl F_GETFL, F_SETFL
	if cerr := sys.ClearNonblock(fd); cerr != nil {
		return n, err
	}
	c++
	return sys.Read(fd, b)
}
