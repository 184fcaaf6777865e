package uring

import (
	"errors"
	"syscall"
)

// SyscallError is a failed io_uring_enter or io_uring_register: which
// call, what it was for, and the errno. (io_uring_setup's failure is a
// *SetupError.) Callers classify it with FailedCall.
type SyscallError struct {
	Syscall string // "io_uring_enter" or "io_uring_register"
	Op      string // what the call was for ("sparse files", "probe"); "" for enter
	Err     error  // a syscall.Errno
}

func (e *SyscallError) Error() string {
	if e.Op == "" {
		return e.Syscall + ": " + e.Err.Error()
	}
	return e.Syscall + " (" + e.Op + "): " + e.Err.Error()
}

func (e *SyscallError) Unwrap() error { return e.Err }

func enterError(err error) error { return &SyscallError{Syscall: "io_uring_enter", Err: err} }

func registerError(op string, err error) error {
	return &SyscallError{Syscall: "io_uring_register", Op: op, Err: err}
}

// FailedCall reports which io_uring system call err comes from
// ("io_uring_setup", "io_uring_enter" or "io_uring_register"), its errno,
// and the setup flags asked for when it is io_uring_setup; ok is false
// when err is not the failure of one of them (a failed mmap of the ring,
// a bad argument caught before the call).
func FailedCall(err error) (call string, errno syscall.Errno, setupFlags uint32, ok bool) {
	var se *SetupError
	if errors.As(err, &se) {
		errno, ok = se.Err.(syscall.Errno)
		return "io_uring_setup", errno, se.Flags, ok
	}
	var ce *SyscallError
	if errors.As(err, &ce) {
		errno, ok = ce.Err.(syscall.Errno)
		return ce.Syscall, errno, 0, ok
	}
	return "", 0, 0, false
}
