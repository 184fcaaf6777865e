package sys

import "golang.org/x/sys/unix"

// Cachestat returns how many pages of [off, off+length) of the file open
// at fd are in the page cache (length 0 means to the end of the file). It
// is cachestat(2), Linux 6.5 and later: older kernels, or a seccomp
// policy that does not know it, answer ENOSYS (or EPERM), and a few
// filesystems (hugetlbfs) EOPNOTSUPP. Unlike mincore it needs no mapping,
// and it neither reads nor faults in anything. EINTR is retried; the
// error is the bare errno.
func Cachestat(fd int, off, length uint64) (uint64, error) {
	r := unix.CachestatRange{Off: off, Len: length}
	var st unix.Cachestat_t
	for {
		err := unix.Cachestat(uint(fd), &r, &st, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return st.Cache, nil
	}
}
