//go:build !linux

// iopath reads files and serves sockets through Linux's own system calls
// (preadv2 with RWF_NOWAIT, mmap, io_uring, epoll) and has no port to
// other systems. This file, in the package every other one imports, makes
// a build for another GOOS fail here, with one line that says so, rather
// than with every Linux definition the other packages miss.

package sys

var _ = iopath_builds_on_Linux_only
