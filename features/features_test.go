package features

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

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
	if err := IOURingError(); err != nil {
		t.Errorf("IOURingError = %v while available", err)
	}
}

func TestProbeDisabledByEnv(t *testing.T) {
	t.Setenv(DisableEnv, "1")
	r := Probe()
	if r.IOURing.Available || r.IOURing.Reason != "disabled by IOPATH_DISABLE_IO_URING=1" {
		t.Errorf("with %s=1: %+v", DisableEnv, r.IOURing)
	}
	err := IOURingError()
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), DisableEnv) {
		t.Errorf("IOURingError = %v", err)
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
		{"enosys", sys.ENOSYS, 0, 0, -1, "ENOSYS", []string{"5.1"}},
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
