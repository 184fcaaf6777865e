package sys

import "golang.org/x/sys/unix"

// Calls for netio/load's epoll client, which takes over sockets that Go's
// dialer connected and drives them from its own epoll loops.

// SetNonblock sets O_NONBLOCK on fd (fcntl F_GETFL/F_SETFL), unless it is
// set already. The flag belongs to the open file description, so it holds
// for every descriptor that shares it (a dup's too).
func SetNonblock(fd int) error {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if fl&unix.O_NONBLOCK != 0 {
		return nil
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl|unix.O_NONBLOCK)
	return err
}

// SetCork sets or clears TCP_CORK: while set, TCP sends only full
// segments, and a close sends what is held with the FIN in one segment
// (netio/load's tests make a server whose last data and FIN arrive
// together that way).
func SetCork(fd int, on bool) error {
	v := 0
	if on {
		v = 1
	}
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_CORK, v)
}
