package features

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/internal/uring"
)

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	seccomptest.Install()
	os.Exit(m.Run())
}

func TestProbeAvailable(t *testing.T) {
	t.Setenv(DisableEnv, "")
	r := Probe()
	if !r.IOURing.Available {
		// This is the only acceptable skip: the probe says why not.
		t.Skipf("io_uring not supported here: %s (%s)", r.IOURing.Reason, r.IOURing.Errno)
	}
	if r.IOURing.Reason != "" || r.IOURing.Errno != "" {
		t.Errorf("available but reason %q errno %q", r.IOURing.Reason, r.IOURing.Errno)
	}
	for _, op := range []string{"NOP", "READ", "READ_FIXED", "OPENAT", "STATX", "CLOSE"} {
		if !r.HasOp(op) {
			t.Errorf("op %s not listed in %v", op, r.Ops)
		}
	}
	if len(r.SetupFlags) != len(probedFlags) {
		t.Errorf("%d flags probed, want %d", len(r.SetupFlags), len(probedFlags))
	}
	if !r.FlagSupported("SQPOLL") {
		t.Errorf("SQPOLL not supported on this kernel? %+v", r.SetupFlags)
	}
	if r.Kernel == "" || r.PageSize <= 0 || r.MemlockBytes == 0 {
		t.Errorf("kernel %q page size %d memlock %d", r.Kernel, r.PageSize, r.MemlockBytes)
	}
	if err := HaveOps(); err != nil {
		t.Errorf("HaveOps() = %v while available", err)
	}
}

// TestHaveOps: opcodes the kernel has pass, one it lacks is named in an
// error that wraps ErrNotSupported, and io_uring refused (DisableEnv)
// comes before any opcode. Skips only when the probe says io_uring is
// not supported here.
func TestHaveOps(t *testing.T) {
	if err := HaveOps(); err != nil {
		if errors.Is(err, ErrNotSupported) {
			t.Skipf("io_uring not supported here: %v", err)
		}
		t.Fatal(err)
	}
	if err := HaveOps("NOP", "READ"); err != nil {
		t.Errorf("HaveOps(NOP, READ) = %v", err)
	}
	r := Probe()
	lacking := &Report{IOURing: r.IOURing, Kernel: r.Kernel, Ops: []string{"NOP"}}
	probeMu.Lock()
	saved := cached
	cached = lacking
	probeMu.Unlock()
	t.Cleanup(func() { probeMu.Lock(); cached = saved; probeMu.Unlock() })
	err := HaveOps("NOP", "SENDMSG", "READ")
	var me *MissingOpError
	if !errors.Is(err, ErrNotSupported) || !errors.As(err, &me) || me.Op != "SENDMSG" ||
		!strings.Contains(err.Error(), "IORING_OP_SENDMSG") || !strings.Contains(err.Error(), r.Kernel) {
		t.Errorf("HaveOps with SENDMSG missing = %v", err)
	}
	t.Setenv(DisableEnv, "1")
	if err := HaveOps("SENDMSG"); !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), DisableEnv) {
		t.Errorf("HaveOps with %s=1 = %v, want the refusal first", DisableEnv, err)
	}
}

func TestProbeDisabledByEnv(t *testing.T) {
	t.Setenv(DisableEnv, "1")
	r := Probe()
	if r.IOURing.Available || r.IOURing.Reason != "disabled by IOPATH_DISABLE_IO_URING=1" {
		t.Errorf("with %s=1: %+v", DisableEnv, r.IOURing)
	}
	err := HaveOps()
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), DisableEnv) {
		t.Errorf("HaveOps() = %v", err)
	}
	// Not cached: unset, it is available again (when the kernel allows).
	t.Setenv(DisableEnv, "0")
	if r2 := Probe(); r2.IOURing.Reason == disabledReason {
		t.Errorf("env override was cached: %+v", r2.IOURing)
	}
}

func TestExplain(t *testing.T) {
	for _, c := range []struct {
		name            string
		errno           syscall.Errno
		disabled, group int
		memlock         int64
		wantName        string
		want            []string
	}{
		{"enosys", sys.ENOSYS, -1, -1, -1, "ENOSYS", []string{"5.1", "seccomp"}},
		// The sysctl exists only in kernels with io_uring.
		{"enosys with the sysctl", sys.ENOSYS, 0, 0, -1, "ENOSYS", []string{"seccomp", "io_uring_setup", "allows io_uring_setup, io_uring_enter and io_uring_register"}},
		{"eacces", sys.EACCES, 0, 0, -1, "EACCES", []string{"security module", "io_uring_setup"}},
		{"sysctl 2", sys.EPERM, 2, 0, -1, "EPERM", []string{"io_uring_disabled=2", "every process"}},
		{"sysctl 1", sys.EPERM, 1, 1234, -1, "EPERM", []string{"io_uring_disabled=1", "group 1234"}},
		{"seccomp", sys.EPERM, 0, -1, -1, "EPERM", []string{"seccomp", "Docker"}},
		{"no sysctl seccomp", sys.EPERM, -1, -1, -1, "EPERM", []string{"seccomp"}},
		{"memlock", sys.ENOMEM, 0, 0, 65536, "ENOMEM", []string{"RLIMIT_MEMLOCK", "65536 bytes", "ulimit -l"}},
		{"other", sys.EFAULT, 0, 0, 0, "", []string{"io_uring_setup failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			name, reason := explain(c.errno, c.errno, c.disabled, c.group, c.memlock)
			if name != c.wantName {
				t.Errorf("errno name %q, want %q", name, c.wantName)
			}
			for _, w := range c.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q lacks %q", reason, w)
				}
			}
		})
	}
}

func TestBracketed(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never\n": "madvise",
		"[always] madvise never":   "always",
		"never":                    "never",
	} {
		if got := bracketed(in); got != want {
			t.Errorf("bracketed(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDescribeMachine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := DescribeMachine(path, "test")
	if m.Kernel == "" || m.Cores < 1 || m.MemBytes <= 0 || m.PageSize <= 0 || m.Filesystem == "" ||
		m.GoVersion == "" || m.IopathVersion != "test" || m.IOURing == "" || m.Arch == "" {
		t.Errorf("incomplete: %+v", m)
	}
	if strings.HasPrefix(m.Filesystem, "0x") {
		t.Errorf("unknown filesystem magic %s", m.Filesystem)
	}
	t.Logf("%+v", m)
}

func TestExplainCall(t *testing.T) {
	for _, c := range []struct {
		call     string
		errno    syscall.Errno
		wantName string
		want     []string
	}{
		{"io_uring_enter", sys.EPERM, "EPERM", []string{"io_uring_enter was refused", "seccomp", "allows io_uring_setup, io_uring_enter and io_uring_register"}},
		{"io_uring_register", sys.EPERM, "EPERM", []string{"io_uring_register was refused", "seccomp"}},
		{"io_uring_register", sys.ENOSYS, "ENOSYS", []string{"io_uring_register was refused with ENOSYS", "seccomp"}},
		{"io_uring_enter", sys.EACCES, "EACCES", []string{"io_uring_enter", "security module"}},
		{"io_uring_enter", sys.EFAULT, "", []string{"io_uring_enter failed"}},
	} {
		t.Run(c.call+" "+c.errno.Error(), func(t *testing.T) {
			name, reason := explainCall(c.call, c.errno, c.errno)
			if name != c.wantName {
				t.Errorf("errno name %q, want %q", name, c.wantName)
			}
			for _, w := range c.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q lacks %q", reason, w)
				}
			}
		})
	}
}

// keepProbe restores the cached probe when the test ends, for tests that
// make Classify change it.
func keepProbe(t *testing.T) {
	Probe()
	probeMu.Lock()
	saved := cached
	probeMu.Unlock()
	t.Cleanup(func() {
		probeMu.Lock()
		cached = saved
		probeMu.Unlock()
	})
}

// A refusal of any io_uring call becomes ErrNotSupported with a reason
// naming the call, and Probe says so from then on; a resource error is
// returned as itself.
func TestClassify(t *testing.T) {
	t.Setenv(DisableEnv, "")
	for _, c := range []struct {
		name    string
		err     error
		refusal bool
		call    string
	}{
		{"setup EPERM", &uring.SetupError{Err: sys.EPERM}, true, "io_uring_setup"},
		{"setup ENOSYS", &uring.SetupError{Err: sys.ENOSYS}, true, "io_uring_setup"},
		{"enter EPERM", fmt.Errorf("wrapped: %w", &uring.SyscallError{Syscall: "io_uring_enter", Err: sys.EPERM}), true, "io_uring_enter"},
		{"register EACCES", &uring.SyscallError{Syscall: "io_uring_register", Op: "probe", Err: sys.EACCES}, true, "io_uring_register"},
		{"register ENOSYS", &uring.SyscallError{Syscall: "io_uring_register", Op: "buffers", Err: sys.ENOSYS}, true, "io_uring_register"},
		{"setup EMFILE", &uring.SetupError{Err: syscall.EMFILE}, false, ""},
		{"setup ENFILE", &uring.SetupError{Err: syscall.ENFILE}, false, ""},
		{"setup ENOMEM", &uring.SetupError{Err: sys.ENOMEM}, false, ""},
		{"register ENOMEM", &uring.SyscallError{Syscall: "io_uring_register", Op: "buffers", Err: sys.ENOMEM}, false, ""},
		{"enter EBADF", &uring.SyscallError{Syscall: "io_uring_enter", Err: sys.EBADF}, false, ""},
		{"not an io_uring call", fmt.Errorf("mmap sq ring: %w", sys.EPERM), false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			keepProbe(t)
			err := Classify(c.err)
			if !c.refusal {
				if err != c.err {
					t.Errorf("Classify(%v) = %v, want the error unchanged", c.err, err)
				}
				if errors.Is(err, ErrNotSupported) {
					t.Errorf("a resource error wraps ErrNotSupported: %v", err)
				}
				if u := Probe().IOURing; !u.Available && u.Syscall != "" {
					t.Errorf("a resource error changed the probe: %+v", u)
				}
				return
			}
			var ue *UnavailableError
			if !errors.As(err, &ue) || !errors.Is(err, ErrNotSupported) {
				t.Fatalf("Classify(%v) = %v, want an *UnavailableError wrapping ErrNotSupported", c.err, err)
			}
			if ue.IOURing.Syscall != c.call || !strings.Contains(ue.IOURing.Reason, c.call) || ue.IOURing.Available {
				t.Errorf("refusal %+v does not name %s", ue.IOURing, c.call)
			}
			// Auto and every caller now see io_uring as unavailable, with
			// that reason.
			if u := Probe().IOURing; u.Available || u != ue.IOURing {
				t.Errorf("Probe after the refusal: %+v, want %+v", u, ue.IOURing)
			}
			if err := HaveOps(); !errors.Is(err, ErrNotSupported) {
				t.Errorf("HaveOps after the refusal: %v", err)
			}
		})
	}
}

// With a seccomp filter that forbids one io_uring call, Probe says
// io_uring is unavailable, names the call and closes the ring it made.
func TestProbeForbidden(t *testing.T) {
	t.Setenv(DisableEnv, "")
	if u := Probe().IOURing; !u.Available {
		t.Skipf("io_uring not supported here: %s", u.Reason)
	}
	for _, call := range seccomptest.Calls() {
		t.Run(call, func(t *testing.T) {
			t.Parallel() // each runs in a process of its own
			seccomptest.Run(t, "TestProbeForbiddenChild", []string{call})
		})
	}
}

func TestProbeForbiddenChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestProbeForbidden: runs only under its seccomp filter")
	}
	t.Setenv(DisableEnv, "")
	call := seccomptest.Denied()[0]
	// The runtime poller's descriptors stay open once made (the probe
	// reads /proc and /sys files): make them before counting.
	if f, err := os.Open(os.DevNull); err == nil {
		f.Close()
	}
	before := testenv.OpenFDs(t)
	u := Probe().IOURing
	if after := testenv.OpenFDs(t); after != before {
		t.Errorf("the probe left %d descriptors open", after-before)
	}
	if u.Available || u.Errno != "EPERM" || u.Syscall != call {
		t.Errorf("with %s forbidden: %+v", call, u)
	}
	for _, w := range []string{call, "seccomp", "allows io_uring_setup, io_uring_enter and io_uring_register"} {
		if !strings.Contains(u.Reason, w) {
			t.Errorf("reason %q lacks %q", u.Reason, w)
		}
	}
	if err := HaveOps(); !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), call) {
		t.Errorf("HaveOps() = %v", err)
	}
}

// A probe that ran short of a resource says so with that error, which
// does not wrap ErrNotSupported: nothing falls back from a limit.
func TestHaveOpsResource(t *testing.T) {
	t.Setenv(DisableEnv, "")
	keepProbe(t)
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, sys.ENOMEM} {
		u := refused("io_uring_setup", errno, &uring.SetupError{Err: errno}, -1)
		if conclusive(&Report{IOURing: u}) {
			t.Errorf("%v: a resource error is cached for good", errno)
		}
		probeMu.Lock()
		cached = &Report{IOURing: u}
		probeMu.Unlock()
		err := HaveOps()
		if !errors.Is(err, errno) || errors.Is(err, ErrNotSupported) {
			t.Errorf("%v: HaveOps() = %v; want it to wrap %v and not ErrNotSupported", errno, err, errno)
		}
	}
}
