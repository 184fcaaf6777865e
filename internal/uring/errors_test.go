package uring

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/sys"
)

// A ring whose mapping fails after io_uring_setup gave it a descriptor
// closes that descriptor.
func TestNewClosesOnMapFailure(t *testing.T) {
	checkFds(t)
	var fd int
	setup := func(entries uint32, p *Params) (int, error) {
		// A descriptor that cannot be mapped as a ring; the zero
		// offsets in p make every mmap fail.
		var err error
		fd, err = sys.Open(os.DevNull, sys.O_RDONLY)
		return fd, err
	}
	r, err := newRing(4, Options{}, setup)
	if err == nil {
		r.Close()
		t.Fatal("newRing mapped /dev/null as a ring")
	}
	if _, _, _, ok := FailedCall(err); ok {
		t.Errorf("a mapping failure %v is reported as an io_uring call's", err)
	}
}

func TestFailedCall(t *testing.T) {
	for _, c := range []struct {
		err   error
		call  string
		errno error
	}{
		{&SetupError{Flags: SetupSQPoll, Err: sys.EPERM}, "io_uring_setup", sys.EPERM},
		{errors.Join(errors.New("x"), enterError(sys.EINTR)), "io_uring_enter", sys.EINTR},
		{registerError("probe", sys.EACCES), "io_uring_register", sys.EACCES},
		{errors.New("io_uring_enter: operation not permitted"), "", nil},
	} {
		call, errno, _, ok := FailedCall(c.err)
		if call != c.call || ok != (c.call != "") || (ok && errno != c.errno) {
			t.Errorf("FailedCall(%v) = %q, %v, %v", c.err, call, errno, ok)
		}
	}
}

// Under a seccomp filter that forbids one io_uring call, each method that
// makes it fails with an error naming it (FailedCall), and nothing is
// leaked.
func TestForbiddenCallsAreNamed(t *testing.T) {
	requireRing(t)
	for _, call := range seccomptest.Calls() {
		t.Run(call, func(t *testing.T) {
			t.Parallel() // each runs in a process of its own
			seccomptest.Run(t, "TestForbiddenCallsAreNamedChild", []string{call})
		})
	}
}

func TestForbiddenCallsAreNamedChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestForbiddenCallsAreNamed: runs only under its seccomp filter")
	}
	checkFds(t)
	call := seccomptest.Denied()[0]
	named := func(what string, err error) {
		t.Helper()
		got, errno, _, ok := FailedCall(err)
		if !ok || got != call || errno != sys.EPERM {
			t.Errorf("%s: %v: FailedCall says %q, %v, %v; want %s, EPERM", what, err, got, errno, ok, call)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	opts := Options{SingleIssuer: true, DeferTaskrun: true, CoopTaskrun: true, TaskrunFlag: true}
	r, err := New(8, opts)
	if call == "io_uring_setup" {
		if err == nil {
			r.Close()
			t.Fatal("New worked with io_uring_setup forbidden")
		}
		named("New", err)
		var se *SetupError
		if errors.As(err, &se) && se.Flags != opts.params().Flags {
			t.Errorf("EPERM stepped the flags down to %s", FlagString(se.Flags))
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if call == "io_uring_register" {
		_, err := r.Probe()
		named("Probe", err)
		named("RegisterFilesSparse", r.RegisterFilesSparse(4))
		named("RegisterBuffers", r.RegisterBuffers([][]byte{make([]byte, 4096)}))
		_, err = r.RegisterBufRing(0, 2, 64)
		named("RegisterBufRing", err)
		return
	}
	r.GetSQE().PrepNop(1)
	_, err = r.SubmitAndWait(1)
	named("SubmitAndWait", err)
	_, err = r.SubmitNoWait()
	named("SubmitNoWait", err)
	if r.SQReady() != 1 {
		t.Errorf("%d SQEs ready after the refusal, want the 1 the kernel never took", r.SQReady())
	}
}
