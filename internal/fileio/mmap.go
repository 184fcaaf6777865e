package fileio

import (
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/iopath/iopath/internal/sys"
)

// A file truncated under a mapping raises SIGBUS when a page past its new
// end is touched. Under debug.SetPanicOnFault that is a panic on the
// touching goroutine, whose value has an Addr method; the copies below
// recover it and report the fault, and re-raise every other panic.

// IsFault reports whether a recovered panic value is a memory fault
// (SIGBUS on a mapping of a file that shrank) made a panic by
// debug.SetPanicOnFault.
func IsFault(r any) bool {
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}

// CopyAt copies p from the mapping m at off, as far as the mapping goes
// (0 at or past its end). faulted is true when the copy touched a page
// past the file's end (it was truncated under the mapping); n is 0 then.
func CopyAt(m, p []byte, off int64) (n int, faulted bool) {
	if off >= int64(len(m)) {
		return 0, false
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !IsFault(r) {
				panic(r)
			}
			n, faulted = 0, true
		}
	}()
	return CopyMapped(p, m[off:]), false
}

// mappedParallelMin is the batch size from which CopyRequests copies with
// several goroutines: below it, starting goroutines (about 1 µs each
// here) costs more than the copy they share (64 × 4 KiB copied in 7 µs
// on one).
const mappedParallelMin = 1 << 20

// CopyRequests copies the requests idx (indexes into reqs, each with a
// non-empty Buf) from the mapping m, each as far as the mapping goes, on
// up to workers goroutines (the caller's included) when the batch is
// large, and returns the requests (idx compacted in place, in order) not
// filled, whose rest lies past the mapping. A request whose copy faults
// gets N 0 and Err changed; the others go on.
func CopyRequests(m []byte, reqs []Request, idx []int32, workers int, changed error) []int32 {
	if w := copyWorkers(reqs, idx, workers); w > 1 {
		// Each goroutine takes a contiguous share of the requests.
		var wg sync.WaitGroup
		share := (len(idx) + w - 1) / w
		for lo := share; lo < len(idx); lo += share {
			part := idx[lo:min(lo+share, len(idx))]
			wg.Go(func() { copyAll(m, reqs, part, changed) })
		}
		copyAll(m, reqs, idx[:share], changed)
		wg.Wait()
	} else {
		copyAll(m, reqs, idx, changed)
	}
	rest := idx[:0] // writes never pass the reads
	for _, i := range idx {
		if r := &reqs[i]; r.Err == nil && r.N < len(r.Buf) {
			rest = append(rest, i)
		}
	}
	return rest
}

// copyWorkers is how many goroutines copy the requests idx.
func copyWorkers(reqs []Request, idx []int32, workers int) int {
	w := min(workers, len(idx))
	if w <= 1 {
		return 1
	}
	total := 0
	for _, i := range idx {
		if total += len(reqs[i].Buf); total >= mappedParallelMin {
			return w
		}
	}
	return 1
}

// copyAll copies the requests idx from the mapping; a request whose copy
// faults fails with changed and the others go on.
func copyAll(m []byte, reqs []Request, idx []int32, changed error) {
	for k := 0; k < len(idx); k++ {
		// One fault-catching frame for the whole run of requests: a fault
		// stops copyRun at request k, which fails; the others go on.
		if k = copyRun(m, reqs, idx, k); k < len(idx) {
			r := &reqs[idx[k]]
			r.N, r.Err = 0, changed
		}
	}
}

// copyRun copies reqs[idx[k]], reqs[idx[k+1]], ... from the mapping, each
// as far as the mapping goes. It returns len(idx), or the position in idx
// of the request whose copy faulted, where it stopped.
func copyRun(m []byte, reqs []Request, idx []int32, k int) (at int) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil && !IsFault(r) {
			panic(r)
		}
	}()
	size := int64(len(m))
	for at = k; at < len(idx); at++ {
		r := &reqs[idx[at]]
		if r.Off < size {
			r.N = CopyMapped(r.Buf, m[r.Off:])
		}
	}
	return at
}

// MmapCopy copies the file into dst (its size at fstat, bs > 0) from a
// shared read-only mapping, in chunks of bs taken in turn by up to
// workers goroutines. again is true when the file changed size under the
// mapping: a page past a new end faults (SIGBUS, caught), and a file cut
// inside its last page reads as zeros without a fault, which the fstat
// after the copy catches. dst then holds garbage and must be read again.
// Errors are bare errnos.
func MmapCopy(fd int, dst []byte, workers, bs int) (n int, again bool, err error) {
	size := len(dst)
	if size == 0 {
		return 0, false, nil
	}
	m, err := sys.Mmap(fd, 0, size, sys.PROT_READ, sys.MAP_SHARED)
	if err != nil {
		return 0, false, err
	}
	sys.Madvise(m, sys.MADV_SEQUENTIAL)
	sys.Madvise(m, sys.MADV_WILLNEED)
	nchunks := (size + bs - 1) / bs
	workers = max(1, min(workers, nchunks))
	var next atomic.Int64
	var faulted atomic.Bool
	copyChunks := func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				if !IsFault(r) {
					panic(r)
				}
				faulted.Store(true)
			}
		}()
		for !faulted.Load() {
			i := int(next.Add(1) - 1)
			if i >= nchunks {
				return
			}
			lo := i * bs
			hi := min(lo+bs, size)
			CopyMapped(dst[lo:hi], m[lo:hi])
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(copyChunks)
	}
	copyChunks()
	wg.Wait()
	if err := sys.Munmap(m); err != nil {
		return 0, false, err
	}
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		return 0, false, err
	}
	if faulted.Load() || st.Size != int64(size) {
		return 0, true, nil
	}
	return size, false, nil
}
