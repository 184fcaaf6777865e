package sys

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Syscall numbers of io_uring, for internal/uring, and of openat2, for
// tests that forbid them (DenySyscalls).
const (
	SYS_IO_URING_SETUP    = unix.SYS_IO_URING_SETUP
	SYS_IO_URING_ENTER    = unix.SYS_IO_URING_ENTER
	SYS_IO_URING_REGISTER = unix.SYS_IO_URING_REGISTER
	SYS_OPENAT2           = unix.SYS_OPENAT2
)

// auditArch is the AUDIT_ARCH_* value of the architecture this binary was
// built for: the seccomp filter checks it, because syscall numbers mean
// different calls on different architectures (a 32-bit call made from a
// 64-bit process carries another arch value and numbering).
var auditArch = map[string]uint32{
	"amd64":   unix.AUDIT_ARCH_X86_64,
	"arm64":   unix.AUDIT_ARCH_AARCH64,
	"riscv64": unix.AUDIT_ARCH_RISCV64,
	"ppc64le": unix.AUDIT_ARCH_PPC64LE,
	"s390x":   unix.AUDIT_ARCH_S390X,
	"386":     unix.AUDIT_ARCH_I386,
}

// seccompFilter assembles a classic BPF program for seccomp that makes
// the system calls numbered nrs fail with EPERM and allows everything
// else. A call made under another architecture's numbering (arch differs)
// is allowed: its number does not name the same call.
func seccompFilter(arch uint32, nrs []uintptr) []unix.SockFilter {
	const (
		offNr   = 0 // struct seccomp_data: int nr;
		offArch = 4 //                      __u32 arch;
	)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jt, Jf: jf, K: k}
	}
	n := len(nrs)
	prog := []unix.SockFilter{
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArch),
		jeq(arch, 1, 0), // this architecture: go on; else allow
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr),
	}
	// The i-th comparison jumps over the n-1-i comparisons after it and
	// the ALLOW to the EPERM return.
	for i, nr := range nrs {
		prog = append(prog, jeq(uint32(nr), uint8(n-i), 0))
	}
	return append(prog,
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|(uint32(unix.EPERM)&unix.SECCOMP_RET_DATA)),
	)
}

// DenySyscalls installs a seccomp filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC) that makes the system calls numbered nrs
// fail with EPERM, as a container's seccomp profile does. It sets
// PR_SET_NO_NEW_PRIVS first, which seccomp needs without CAP_SYS_ADMIN.
//
// It cannot be undone: the filter stays for the life of the process and
// of every process it starts. Tests call it in a child process of their
// own. At most 250 numbers (a BPF jump reaches 255 instructions).
func DenySyscalls(nrs []uintptr) error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("seccomp filter: no audit architecture known for %s", runtime.GOARCH)
	}
	if len(nrs) == 0 || len(nrs) > 250 {
		return fmt.Errorf("seccomp filter: %d system calls, want 1 to 250", len(nrs))
	}
	prog := seccompFilter(arch, nrs)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// PR_SET_NO_NEW_PRIVS is per thread and seccomp checks it on the
	// calling thread: make both calls on one. TSYNC then gives every
	// other thread the flag and the filter.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp filter: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("seccomp filter: seccomp(SECCOMP_SET_MODE_FILTER): %w", e)
	}
	if r != 0 {
		// With TSYNC, a positive result is a thread that could not be
		// synchronised (it has a filter of its own that conflicts).
		return fmt.Errorf("seccomp filter: thread %d could not take the filter", r)
	}
	return nil
}
