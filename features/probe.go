package features

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/iopath/iopath/internal/machine"
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
	Errno     string `json:"errno,omitempty"` // "ENOSYS", "EPERM", "EACCES", "ENOMEM", or "" (other or none)
	// Syscall is the io_uring system call that failed: "io_uring_setup",
	// "io_uring_register" or "io_uring_enter"; "" when available or
	// disabled by DisableEnv.
	Syscall string `json:"syscall,omitempty"`
	Reason  string `json:"reason,omitempty"` // a sentence a user can act on; "" when available

	// err is the failure when it was not a refusal (a resource ran
	// short, or something unexpected): such an answer is not cached,
	// and HaveOps wraps err rather than ErrNotSupported.
	err error
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
	PageSize   int      `json:"page_size_bytes"`
	THP        string   `json:"thp"` // transparent hugepage mode: always, madvise, never, or ""
	// MemlockBytes is RLIMIT_MEMLOCK's soft limit; -1 means unlimited.
	MemlockBytes int64 `json:"memlock_bytes"`
	// BufferPlacement is set by `iopath features` (Probe leaves it nil:
	// measuring it takes a few milliseconds).
	BufferPlacement *Placement `json:"buffer_placement,omitempty"`
	// MappedCopy is set by `iopath features`, like BufferPlacement.
	MappedCopy *CopyChoice `json:"mapped_copy,omitempty"`
	// MachineProfile is the state of the machine profile ("iopath tune")
	// a new process would read, set by `iopath features`.
	MachineProfile string `json:"machine_profile,omitempty"`
	// Perf says whether --perf can record here (package perf's Probe):
	// "perf VERSION: kernel and Go frames" or why not and how to allow
	// it; set by `iopath features`.
	Perf string `json:"perf,omitempty"`
	// Loss says whether net bench --loss can make its namespaces here
	// (root, ip and nft): "available" or why not; set by `iopath
	// features`.
	Loss string `json:"loss,omitempty"`
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
//
// io_uring is available only when all three of its system calls work: a
// ring is set up (io_uring_setup), asked for its opcodes
// (IORING_REGISTER_PROBE through io_uring_register) and made to complete
// a NOP (io_uring_enter), since a seccomp profile can forbid any one of
// them. Otherwise IOURing says which call was refused and why. Classify
// updates the cached answer when a ring creator is refused later.
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
	switch r.IOURing.Errno {
	case "ENOSYS", "EPERM", "EACCES":
		return true
	}
	return r.IOURing.Available
}

// ErrNotSupported is wrapped by every error that says a path cannot run
// in this kernel, process or configuration (io_uring refused, an opcode
// missing, O_DIRECT refused). It is iopath's one such sentinel, defined
// in internal/sys (see there why): engine.ErrNotSupported,
// batch.ErrNotSupported, netio.ErrNotSupported and iopath.ErrNotSupported
// are this value.
var ErrNotSupported = sys.ErrNotSupported

// HaveOps is the one answer to "can this process use io_uring, with these
// opcodes": ops are names without IORING_OP_ ("READ_FIXED", "SENDMSG");
// none asks about io_uring alone. It returns nil when Probe found io_uring
// usable and the kernel supporting every op; otherwise
//
//   - an *UnavailableError when io_uring itself cannot be used: it wraps
//     ErrNotSupported with the probe's reason for a refusal (seccomp, the
//     sysctl, a kernel without io_uring, DisableEnv), or the probe's own
//     error when it ran short of a resource (EMFILE, ENOMEM), which is
//     not a reason to fall back;
//   - a *MissingOpError, which wraps ErrNotSupported, naming the first op
//     of ops that the kernel lacks.
//
// The answer comes from Probe, which caches only a conclusive answer (as
// cilium/ebpf's feature probes do): a resource error is probed again at
// the next call. engine.UringError puts the error into an
// *engine.NotSupportedError.
//
// A caller that needs more than opcodes (a request that the kernel knows
// but must also behave: netio's multishot receive with byte limits) asks
// HaveOps first and then tries the request itself.
func HaveOps(ops ...string) error {
	r := Probe()
	if u := r.IOURing; !u.Available {
		return &UnavailableError{IOURing: u, Err: u.err}
	}
	for _, op := range ops {
		if !r.HasOp(op) {
			return &MissingOpError{Op: op, Kernel: r.Kernel, Known: len(r.Ops) > 0}
		}
	}
	return nil
}

// MissingOpError says that io_uring works here but the kernel lacks an
// opcode. It wraps ErrNotSupported.
type MissingOpError struct {
	Op     string // without IORING_OP_: "SENDMSG"
	Kernel string // uname release
	// Known is false when the kernel did not list its opcodes
	// (IORING_REGISTER_PROBE came in Linux 5.6), so that none is known.
	Known bool
}

func (e *MissingOpError) Error() string {
	if !e.Known {
		return fmt.Sprintf("io_uring is not supported: kernel %s does not list its opcodes (IORING_REGISTER_PROBE, Linux 5.6), so IORING_OP_%s cannot be relied on", e.Kernel, e.Op)
	}
	return fmt.Sprintf("io_uring is not supported: kernel %s lacks IORING_OP_%s", e.Kernel, e.Op)
}

// Is makes errors.Is(err, ErrNotSupported) true.
func (e *MissingOpError) Is(target error) bool { return target == ErrNotSupported }

// UnavailableError says why io_uring cannot be used. When io_uring is
// refused (a seccomp profile, the sysctl, a kernel without it,
// DisableEnv) it wraps ErrNotSupported, and callers fall back. When the
// probe ran short of a resource (descriptors, memory) Err is that error
// and it is wrapped instead of ErrNotSupported, so that
// errors.Is(err, syscall.EMFILE) holds and nothing falls back from a
// limit the user should hear about.
type UnavailableError struct {
	IOURing IOURing
	Err     error // nil for a refusal
}

func (e *UnavailableError) Error() string { return "io_uring is not supported: " + e.IOURing.Reason }

// Is makes errors.Is(err, ErrNotSupported) true for a refusal.
func (e *UnavailableError) Is(target error) bool { return target == ErrNotSupported && e.Err == nil }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Classify sorts an error from a ring creator's io_uring system calls
// (uring.New, a register, a submit: see uring.FailedCall), so that every
// caller falls back on the same errors and reports the rest as they are:
//
//   - a refusal by policy or absence (EPERM, EACCES or ENOSYS: seccomp,
//     the kernel.io_uring_disabled sysctl, a security module, a kernel
//     without io_uring) becomes an *UnavailableError, which wraps
//     ErrNotSupported, with the reason Probe gives for it; and Probe says
//     io_uring is unavailable from then on, so that Auto stops choosing
//     it (the sysctl may have been set after the first probe);
//   - anything else, resource errors included (EMFILE, ENFILE, ENOMEM,
//     EAGAIN), is returned unchanged, so that errors.Is(err,
//     syscall.EMFILE) holds and nothing falls back from a limit the user
//     should hear about.
//
// An io_uring_setup refused only for the flags it asked (plain rings
// still work: SQPOLL needed CAP_SYS_ADMIN before Linux 5.11) is an
// *UnavailableError too, but leaves Probe's answer alone.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return err
	}
	call, errno, flags, ok := uring.FailedCall(err)
	if !ok || !refusal(errno) {
		return err
	}
	if call == "io_uring_setup" && flags != 0 && uring.TrySetup(2, 0) == nil {
		return &UnavailableError{IOURing: IOURing{
			Errno:   errnoName(errno),
			Syscall: call,
			Reason: fmt.Sprintf("io_uring_setup refused the flags %s with %s while plain rings work (SQPOLL needs CAP_SYS_ADMIN before Linux 5.11)",
				uring.FlagString(flags), errnoName(errno)),
		}}
	}
	u := refused(call, errno, err, memlock())
	markUnavailable(u)
	return &UnavailableError{IOURing: u}
}

// refusal reports whether errno from an io_uring system call means that
// this process may not use io_uring at all (policy), or that the kernel
// has none (absence), rather than that something ran short.
func refusal(errno syscall.Errno) bool {
	return errno == sys.EPERM || errno == sys.EACCES || errno == sys.ENOSYS
}

// markUnavailable makes Probe answer u from now on, keeping the rest of
// the report (kernel, ops, flags: what the kernel offers).
func markUnavailable(u IOURing) {
	probeMu.Lock()
	defer probeMu.Unlock()
	if cached != nil && !cached.IOURing.Available {
		return // already known (the first refusal's reason stays)
	}
	var r Report
	if cached != nil {
		r = *cached // a copy: callers hold the old one, which must not change
	} else {
		r = Report{Kernel: machine.KernelRelease(), PageSize: sys.PageSize(), THP: thpMode(), MemlockBytes: memlock()}
	}
	r.IOURing = u
	cached = &r
}

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
		Kernel:       machine.KernelRelease(),
		PageSize:     sys.PageSize(),
		THP:          thpMode(),
		MemlockBytes: memlock(),
	}
	r.IOURing, r.Ops = probeRing(r.MemlockBytes)
	if r.IOURing.Syscall == "io_uring_setup" || (!r.IOURing.Available && r.IOURing.Syscall == "") {
		return r // no ring could be set up: no flag can be tried
	}
	// io_uring_setup works (whether or not its other calls do): say which
	// flags the kernel accepts.
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

// probeRing sets up a ring, asks it for its opcodes (io_uring_register)
// and completes a NOP through it (io_uring_enter), and says whether all
// of that worked and, if not, which call failed and why. ops is the
// kernel's opcode list when the register call answered. The ring is
// closed on every path.
func probeRing(memlock int64) (u IOURing, ops []string) {
	ring, err := uring.New(4, uring.Options{})
	if err != nil {
		if call, errno, _, ok := uring.FailedCall(err); ok {
			return refused(call, errno, err, memlock), nil
		}
		// io_uring_setup worked; mapping the ring failed: not conclusive.
		return IOURing{Reason: fmt.Sprintf("io_uring ring could not be set up: %v", err), err: err}, nil
	}
	defer ring.Close()
	set, err := ring.Probe()
	switch {
	case err == nil:
		for _, op := range set.List() {
			ops = append(ops, op.String())
		}
	case errors.Is(err, sys.EINVAL):
		// A kernel before 5.6 has no IORING_REGISTER_PROBE; the call ran,
		// so io_uring_register is allowed. The opcodes stay unknown.
	default:
		call, errno, _, _ := uring.FailedCall(err)
		return refused(call, errno, err, memlock), nil
	}
	ring.GetSQE().PrepNop(1)
	if _, err := ring.SubmitAndWait(1); err != nil {
		call, errno, _, _ := uring.FailedCall(err)
		return refused(call, errno, err, memlock), ops
	}
	var cqe [1]uring.CQE
	if n := ring.PeekBatch(cqe[:]); n != 1 || cqe[0].UserData != 1 || cqe[0].Res != 0 {
		err := fmt.Errorf("io_uring did not complete a NOP (%d completions, result %d)", n, cqe[0].Res)
		return IOURing{Syscall: "io_uring_enter", Reason: err.Error(), err: err}, ops
	}
	ring.Advance(1)
	return IOURing{Available: true}, ops
}

// refused describes the failure err (errno) of the io_uring system call
// call, reading the sysctls that explain an io_uring_setup refusal.
func refused(call string, errno syscall.Errno, err error, memlock int64) IOURing {
	var name, reason string
	if call == "io_uring_setup" {
		name, reason = explain(errno, err, readSysctlInt("/proc/sys/kernel/io_uring_disabled"),
			readSysctlInt("/proc/sys/kernel/io_uring_group"), memlock)
	} else {
		name, reason = explainCall(call, errno, err)
	}
	u := IOURing{Errno: name, Syscall: call, Reason: reason}
	if !refusal(errno) {
		u.err = err
	}
	return u
}

// allowAll is the advice that ends every reason for a refusal by a
// seccomp profile.
const allowAll = "run with a profile that allows io_uring_setup, io_uring_enter and io_uring_register"

// explain maps io_uring_setup's failure to an errno name and a reason a
// user can act on. disabled is kernel.io_uring_disabled (-1 if unknown),
// group kernel.io_uring_group (-1 if unknown), memlock the RLIMIT_MEMLOCK
// soft limit (-1 unlimited).
func explain(errno syscall.Errno, err error, disabled, group int, memlock int64) (name, reason string) {
	switch errno {
	case sys.ENOSYS:
		if disabled >= 0 {
			// The sysctl exists, so the kernel has io_uring: something
			// answers for it.
			return "ENOSYS", "io_uring_setup returned ENOSYS though this kernel has io_uring (kernel.io_uring_disabled exists): a seccomp profile forbids io_uring_setup; " + allowAll
		}
		return "ENOSYS", "this kernel has no io_uring (older than 5.1, or built without CONFIG_IO_URING), or a seccomp profile forbids io_uring_setup with ENOSYS; iopath falls back to pread"
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
		return "EPERM", "io_uring_setup was refused with EPERM while kernel.io_uring_disabled allows it: a seccomp profile (e.g. Docker's default) forbids io_uring_setup; " + allowAll
	case sys.EACCES:
		return "EACCES", "io_uring_setup was refused with EACCES: a security module (SELinux, AppArmor) or seccomp profile forbids io_uring; allow io_uring_setup, io_uring_enter and io_uring_register for this program"
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

// explainCall maps the failure of io_uring_enter or io_uring_register,
// made on a ring io_uring_setup created, to an errno name and a reason.
// The sysctl kernel.io_uring_disabled only ever refuses io_uring_setup,
// so a refusal here comes from a seccomp profile or a security module.
func explainCall(call string, errno syscall.Errno, err error) (name, reason string) {
	switch errno {
	case sys.EPERM, sys.ENOSYS:
		name = errnoName(errno)
		return name, fmt.Sprintf("%s was refused with %s although io_uring_setup worked: a seccomp profile forbids %s (kernel.io_uring_disabled refuses only io_uring_setup); %s",
			call, name, call, allowAll)
	case sys.EACCES:
		return "EACCES", fmt.Sprintf("%s was refused with EACCES although io_uring_setup worked: a security module (SELinux, AppArmor) or seccomp profile forbids %s; allow io_uring_setup, io_uring_enter and io_uring_register for this program",
			call, call)
	}
	if call == "" {
		call = "io_uring"
	}
	if err == nil {
		err = errno
	}
	return errnoName(errno), fmt.Sprintf("%s failed: %v", call, err)
}

// errnoName is the symbolic name of the errnos a reason mentions, "" for
// the others.
func errnoName(errno syscall.Errno) string {
	switch errno {
	case sys.EPERM:
		return "EPERM"
	case sys.EACCES:
		return "EACCES"
	case sys.ENOSYS:
		return "ENOSYS"
	case sys.ENOMEM:
		return "ENOMEM"
	}
	return ""
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
