package sys_test

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	seccomptest.Install()
	os.Exit(m.Run())
}

// The filter refuses exactly the calls it lists, with EPERM, on every
// thread: the one that installed it, the others that existed then, and
// those made later; the process that started the child is not affected.
func TestDenySyscalls(t *testing.T) {
	seccomptest.Run(t, "TestDenySyscallsChild", []string{"io_uring_setup", "io_uring_register"})
	// This process has no filter.
	var p [120]byte
	fd, err := sys.IoUringSetup(2, unsafe.Pointer(&p))
	if errors.Is(err, sys.EPERM) {
		t.Fatalf("io_uring_setup refused in the parent: %v", err)
	}
	if err == nil {
		sys.Close(fd)
	}
}

func TestDenySyscallsChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestDenySyscalls: runs only under its filter")
	}
	check := func(where string) {
		var p [120]byte // struct io_uring_params
		if _, err := sys.IoUringSetup(2, unsafe.Pointer(&p)); !errors.Is(err, sys.EPERM) {
			t.Errorf("%s: io_uring_setup: %v, want EPERM", where, err)
		}
		if _, err := sys.IoUringRegister(-1, 0, nil, 0); !errors.Is(err, sys.EPERM) {
			t.Errorf("%s: io_uring_register: %v, want EPERM", where, err)
		}
		// Not listed: it runs, and fails on the bad descriptor.
		if _, err := sys.IoUringEnter(-1, 0, 0, 0, nil, 0); !errors.Is(err, sys.EBADF) {
			t.Errorf("%s: io_uring_enter: %v, want EBADF (not filtered)", where, err)
		}
	}
	check("the main test goroutine")
	// Another OS thread, new since the filter: it inherits it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // ends with the goroutine: the thread exits
		check("a locked new thread")
	}()
	<-done
}

// Unknown names are refused before anything is installed.
func TestDenyUnknownCall(t *testing.T) {
	if err := seccomptest.Deny("no_such_call"); err == nil {
		t.Fatal("Deny accepted an unknown call name")
	}
}
