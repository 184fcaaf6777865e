package advise

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/sys"
)

// openRO opens path read-only for looking at its cache state. O_NONBLOCK
// keeps a FIFO that replaced a file from blocking the open; the mode is
// checked so that nothing but a regular file is mapped or advised.
func openRO(path string) (fd int, size int64, err error) {
	fd, st, err := openStat(path)
	return fd, st.Size, err
}

func openStat(path string) (int, sys.Stat_t, error) {
	var st sys.Stat_t
	fd, err := sys.Open(path, sys.O_RDONLY|sys.O_NONBLOCK)
	if err != nil {
		return -1, st, err
	}
	if err := sys.Fstat(fd, &st); err != nil {
		sys.Close(fd)
		return -1, st, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&sys.S_IFMT != sys.S_IFREG {
		sys.Close(fd)
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: syscall.EINVAL}
	}
	return fd, st, nil
}

// errHidden is the error of a residency look at a file mincore(2) does not
// tell the truth about.
var errHidden = errors.New("mincore hides the page cache of files this user cannot write")

// mincoreSees reports whether mincore(2) tells the truth about a file with
// stat st. Since Linux 5.0 it reports every page of a file mapping as
// resident unless the caller owns the file or could open it for writing
// (a fix for a page-cache side channel), so for files a user may only
// read, residency cannot be seen. This checks what it can without a
// system call: root (CAP_FOWNER), the owner, or write permission in the
// mode bits (a read-only mount is not seen).
func mincoreSees(st *sys.Stat_t) bool {
	groups, _ := os.Getgroups()
	return mincoreSeesAs(st.Uid, st.Gid, st.Mode, os.Geteuid(), os.Getegid(), groups)
}

// mincoreSeesAs is mincoreSees for a file of owner uid, group gid and mode,
// looked at by a process with effective ids euid, egid and groups.
func mincoreSeesAs(uid, gid, mode uint32, euid, egid int, groups []int) bool {
	switch {
	case euid == 0, uint32(euid) == uid, mode&0o002 != 0:
		return true
	case mode&0o020 == 0:
		return false
	case uint32(egid) == gid:
		return true
	}
	for _, g := range groups {
		if uint32(g) == gid {
			return true
		}
	}
	return false
}

// visible reports whether mincore tells the truth about path.
func visible(path string) bool {
	fd, st, err := openStat(path)
	if err != nil {
		return false
	}
	sys.Close(fd)
	return mincoreSees(&st)
}

// span is a byte range of a file.
type span struct{ off, n int64 }

// pagesResident counts the pages of fd's ranges that are in the page
// cache, with mincore on a read-only mapping that is never touched (so no
// page is faulted in). Ranges are clipped to size.
func pagesResident(fd int, size int64, spans []span) (resident, total int64, err error) {
	ps := int64(sys.PageSize())
	const chunk = 1 << 30 // map and probe at most a GiB at a time
	var vec []byte
	for _, s := range spans {
		lo := s.off &^ (ps - 1)
		hi := min(s.off+s.n, size)
		for lo < hi {
			n := min(chunk, hi-lo)
			m, err := sys.Mmap(fd, lo, int(n), sys.PROT_READ, sys.MAP_SHARED)
			if err != nil {
				return 0, 0, err
			}
			pages := (n + ps - 1) / ps
			if int64(cap(vec)) < pages {
				vec = make([]byte, pages)
			}
			err = sys.Mincore(m, vec[:pages])
			sys.Munmap(m)
			if err != nil {
				return 0, 0, err
			}
			for _, v := range vec[:pages] {
				resident += int64(v & 1)
			}
			total += pages
			lo += n
		}
	}
	return resident, total, nil
}

// fileResidency returns the fraction of path's ranges that are cached (1
// for an empty range: there is nothing to read from a device).
func fileResidency(path string, spans []span) (float64, error) {
	fd, st, err := openStat(path)
	if err != nil {
		return 0, err
	}
	defer sys.Close(fd)
	if !mincoreSees(&st) {
		return 0, &fs.PathError{Op: "mincore", Path: path, Err: errHidden}
	}
	r, t, err := pagesResident(fd, st.Size, spans)
	if err != nil {
		return 0, &fs.PathError{Op: "mincore", Path: path, Err: err}
	}
	if t == 0 {
		return 1, nil
	}
	return float64(r) / float64(t), nil
}

// filesResidency returns the fraction of the pages of up to limit of the
// files (spread evenly over the list) that are cached, weighted by pages.
// Files that cannot be looked at (gone, or hidden from mincore) are left
// out; ok is false when none could be.
func filesResidency(files []sampled, limit int) (frac float64, ok bool) {
	n := len(files)
	k := min(n, limit)
	var res, tot int64
	seen := 0
	for i := range k {
		f := files[i*n/k]
		fd, st, err := openStat(f.path)
		if err != nil {
			continue
		}
		if !mincoreSees(&st) {
			sys.Close(fd)
			continue
		}
		r, t, err := pagesResident(fd, st.Size, []span{{0, st.Size}})
		sys.Close(fd)
		if err != nil {
			continue
		}
		res += r
		tot += t
		seen++
	}
	if seen == 0 {
		return 0, false
	}
	if tot == 0 {
		return 1, true
	}
	return float64(res) / float64(tot), true
}

// residencyNow is how much of the data is cached before the trial: for
// one file auto.Residency (what iopath's Auto looks at), for many files
// the page-weighted fraction over up to 1,000 files of the sample.
func residencyNow(inv *Inventory) (float64, bool) {
	if inv.Kind == OneFile {
		if !visible(inv.Paths[0]) {
			return 0, false
		}
		r, err := auto.Residency(inv.Paths[0], inv.Bytes)
		return r, err == nil
	}
	return filesResidency(inv.sample, 1000)
}

// dropSpans asks the kernel to drop path's cached pages in the ranges
// (nil: the whole file). It writes nothing back: dirty pages stay, and the
// residency checked afterwards says so. A file that vanished is skipped.
func dropSpans(path string, spans []span) error {
	fd, _, err := openRO(path)
	if err != nil {
		return nil // vanished or replaced: the run will say so
	}
	defer sys.Close(fd)
	if spans == nil {
		spans = []span{{0, 0}} // length 0: to the end of the file
	}
	for _, s := range spans {
		if err := sys.Fadvise(fd, s.off, s.n, sys.FADV_DONTNEED); err != nil {
			return &fs.PathError{Op: "fadvise", Path: path, Err: err}
		}
	}
	return nil
}

// memAvailable returns MemAvailable from /proc/meminfo in bytes, or 0 when
// it cannot be read.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte("MemAvailable:")); ok {
			fields := bytes.Fields(rest)
			if len(fields) == 0 {
				return 0
			}
			kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
