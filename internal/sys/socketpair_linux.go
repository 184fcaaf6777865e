package sys

import "golang.org/x/sys/unix"

// Socketpair returns a connected pair of non-blocking, close-on-exec
// AF_UNIX stream sockets, for probing socket requests (such as io_uring's
// multishot recv) without the network.
func Socketpair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
}
