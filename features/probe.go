package features

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

// DisableEnv is the environment variable that, set to 1, makes io_uring
// unavailable to iopath.
const DisableEnv = "IOPATH_DISABLE_IO_URING"

// disabledReason is the Reason when DisableEnv is set.
const disabledReason = "disabled by " + DisableEnv + "=1"

// IOURing says whether this process can use io_uring, and why not.
type IOURing struct {
	Available bool   `json:"available"`
	Errno     string `json:"errno,omitempty"`  // "ENOSYS", "EPERM", "ENOMEM", or "" (other or none)
	Reason    string `json:"reason,omitempty"` // a sentence a user can act on; "" when available
}

// Flag is one io_uring setup flag and whether the kernel accepts it.
type Flag struct {
	Name      string `json:"name"` // "SQPOLL", without IORING_SETUP_
	Supported bool   `json:"supported"`
	Note      string `json:"note,omitempty"` // what the answer does not cover, or the error
}

// Report is what Probe found.
type Report struct {
	IOURing    IOURing  `json:"io_uring"`
	Ops        []string `json:"ops"`         // supported opcodes, without IORING_OP_
	SetupFlags []Flag   `json:"setup_flags"` // each flag probed by creating a tiny ring with it
	Kernel     string   `json:"kernel"`      // uname release
	PageSize   int      `json:"page_size"`
	THP        string   `json:"thp"` // transparent hugepage mode: always, madvise, never, or ""
	// MemlockBytes is RLIMIT_MEMLOCK's soft limit; -1 means unlimited.
	MemlockBytes int64 `json:"memlock_bytes"`
}

// HasOp reports whether the kernel supports the opcode called name ("READ_FIXED").
func (r *Report) HasOp(name string) bool {
	for _, o := range r.Ops {
		if o == name {
			return true
		}
	}
	return false
}

// FlagSupported reports whether the setup flag called name is supported.
func (r *Report) FlagSupported(name string) bool {
	for _, f := range r.SetupFlags {
		if f.Name == name {
			return f.Supported
		}
	}
	return false
}

var (
	probeMu sync.Mutex
	cached  *Report
)

// Probe reports what this process can use. The result must not be modified.
func Probe() *Report {
	probeMu.Lock()
	r := cached
	if r == nil {
		r = probe()
		if conclusive(r) {
			cached = r
		}
	}
	probeMu.Unlock()
	if os.Getenv(DisableEnv) == "1" {
		c := *r
		c.IOURing = IOURing{Reason: disabledReason}
		return &c
	}
	return r
}

// conclusive reports whether a probe's answer will not change during the
// process's life.
func conclusive(r *Report) bool {
	return r.IOURing.Available || r.IOURing.Errno == "ENOSYS" || r.IOURing.Errno == "EPERM"
}

// IOURingError returns nil when io_uring is available, or an error saying
// why not. engine wraps it into an *engine.NotSupportedError.
func IOURingError() error {
	u := Probe().IOURing
	if u.Available {
		return nil
	}
	return &UnavailableError{IOURing: u}
}

// UnavailableError says why io_uring cannot be used.
type UnavailableError struct{ IOURing IOURing }

func (e *UnavailableError) Error() string { return "io_uring is not available: " + e.IOURing.Reason }

// probedFlags are the setup flags Probe tries, each with the flags it needs.
var probedFlags = []struct {
	name  string
	flags uint32
	note  string
}{
	{"SQPOLL", uring.SetupSQPoll, ""},
	{"IOPOLL", uring.SetupIOPoll, "accepted at setup; reads fail with EOPNOTSUPP on devices without poll queues (virtio)"},
	{"SINGLE_ISSUER", uring.SetupSingleIssuer, ""},
	{"DEFER_TASKRUN", uring.SetupSingleIssuer | uring.SetupDeferTaskrun, ""},
	{"COOP_TASKRUN", uring.SetupCoopTaskrun, ""},
	{"TASKRUN_FLAG", uring.SetupCoopTaskrun | uring.SetupTaskrunFlag, ""},
	{"SUBMIT_ALL", uring.SetupSubmitAll, ""},
	{"NO_SQARRAY", uring.SetupNoSQArray, ""},
	{"SQE128", uring.SetupSQE128, ""},
	{"CQE32", uring.SetupCQE32, ""},
}

func probe() *Report {
	r := &Report{
		Kernel:       kernelRelease(),
		PageSize:     sys.PageSize(),
		THP:          thpMode(),
		MemlockBytes: memlock(),
	}
	err := uring.TrySetup(4, 0)
	if err != nil {
		errno, _ := sys.Errno(err)
		name, reason := explain(errno, err, readSysctlInt("/proc/sys/kernel/io_uring_disabled"),
			readSysctlInt("/proc/sys/kernel/io_uring_group"), r.MemlockBytes)
		r.IOURing = IOURing{Errno: name, Reason: reason}
		return r
	}
	ring, err := uring.New(4, uring.Options{})
	if err != nil {
		// setup worked a moment ago; mapping failed: not conclusive.
		r.IOURing = IOURing{Reason: fmt.Sprintf("io_uring ring could not be set up: %v", err)}
		return r
	}
	ops, perr := ring.Probe()
	ring.Close()
	r.IOURing.Available = true
	if perr == nil {
		for _, op := range ops.List() {
			r.Ops = append(r.Ops, op.String())
		}
	}
	for _, f := range probedFlags {
		fl := Flag{Name: f.name, Note: f.note}
		if err := uring.TrySetup(4, f.flags); err != nil {
			fl.Note = err.Error()
		} else {
			fl.Supported = true
		}
		r.SetupFlags = append(r.SetupFlags, fl)
	}
	return r
}

// explain maps io_uring_setup's failure to an errno name and a reason a
// user can act on. disabled is kernel.io_uring_disabled (-1 if unknown),
// group kernel.io_uring_group (-1 if unknown), memlock the RLIMIT_MEMLOCK
// soft limit (-1 unlimited).
func explain(errno syscall.Errno, err error, disabled, group int, memlock int64) (name, reason string) {
	switch errno {
	case sys.ENOSYS:
		return "ENOSYS", "this kernel has no io_uring (older than 5.1, or built without CONFIG_IO_URING); iopath falls back to pread"
	case sys.EPERM:
		switch disabled {
		case 2:
			return "EPERM", "io_uring is disabled for every process by the sysctl kernel.io_uring_disabled=2; set it to 0 (sysctl -w kernel.io_uring_disabled=0) to use it"
		case 1:
			g := "the group in kernel.io_uring_group"
			if group >= 0 {
				g = fmt.Sprintf("group %d (kernel.io_uring_group)", group)
			}
			return "EPERM", fmt.Sprintf("the sysctl kernel.io_uring_disabled=1 lets only members of %s and CAP_SYS_ADMIN use io_uring; join that group or set the sysctl to 0", g)
		}
		return "EPERM", "io_uring_setup was refused with EPERM while kernel.io_uring_disabled allows it: a seccomp profile (e.g. Docker's default) forbids io_uring_setup; run with a profile that allows io_uring_setup, io_uring_enter and io_uring_register"
	case sys.ENOMEM:
		lim := "unlimited"
		if memlock >= 0 {
			lim = fmt.Sprintf("%d bytes", memlock)
		}
		return "ENOMEM", fmt.Sprintf("the kernel could not allocate a ring: RLIMIT_MEMLOCK is too low (%s); raise it with `ulimit -l unlimited` (or LimitMEMLOCK= in a systemd unit, --ulimit memlock=-1 in Docker)", lim)
	}
	if err == nil {
		err = errno
	}
	var se *uring.SetupError
	if errors.As(err, &se) {
		err = se.Err
	}
	return "", fmt.Sprintf("io_uring_setup failed: %v", err)
}

func readSysctlInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

func kernelRelease() string {
	var u sys.Utsname
	if err := sys.Uname(&u); err != nil {
		return ""
	}
	b := u.Release[:]
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	return string(b)
}

// thpMode is the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled.
func thpMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	return bracketed(string(b))
}

func bracketed(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return strings.TrimSpace(s)
	}
	return s[i+1 : j]
}

// memlock is RLIMIT_MEMLOCK's soft limit in bytes, -1 for unlimited.
func memlock() int64 {
	var rl sys.Rlimit
	if err := sys.Getrlimit(sys.RLIMIT_MEMLOCK, &rl); err != nil {
		return 0
	}
	if rl.Cur == sys.RLIM_INFINITY {
		return -1
	}
	return int64(rl.Cur)
}
