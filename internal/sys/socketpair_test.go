package sys

import (
	"syscall"
	"testing"
)

func TestSocketpair(t *testing.T) {
	fds, err := Socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fds[0])
	defer Close(fds[1])
	for i, fd := range fds {
		flags, err := fcntl(fd, syscall.F_GETFD)
		if err != nil || flags&syscall.FD_CLOEXEC == 0 {
			t.Errorf("fd %d: FD_CLOEXEC not set (%#x, %v)", i, flags, err)
		}
		flags, err = fcntl(fd, syscall.F_GETFL)
		if err != nil || flags&syscall.O_NONBLOCK == 0 {
			t.Errorf("fd %d: O_NONBLOCK not set (%#x, %v)", i, flags, err)
		}
	}
	if _, err := Read(fds[0], make([]byte, 1)); err != EAGAIN {
		t.Errorf("read of an empty socket: %v, want EAGAIN", err)
	}
	if _, err := Write(fds[1], []byte("ab")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if n, err := Read(fds[0], b); n != 2 || string(b[:2]) != "ab" || err != nil {
		t.Errorf("read %q, %v; want \"ab\"", b[:n], err)
	}
}

func fcntl(fd, cmd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
