package perf

import (
	"strings"
)

// Kind is where a sample's CPU went, as the breakdown counts it.
type Kind uint8

// The kinds, in the order reports show them.
const (
	User    Kind = iota // the program's own code, libraries and the copies it makes itself (runtime.memmove)
	Runtime             // the Go runtime: scheduler, GC, allocation, entering and leaving syscalls
	Syscall             // syscall entry and exit: the kernel's entry code and the user-space stubs
	Copy                // the kernel's copy routines (copy_to_user, rep_movs_alternative, memcpy)
	Fault               // page-fault handling, whatever code faulted
	IOUring             // io_uring's own machinery: submission, completion, task work, io-wq
	Poll                // readiness polling: epoll, poll and select, and the readiness checks they make (sock_poll)
	Net                 // the network stack: sockets, TCP/IP, loopback, softirq receive
	Kernel              // the rest of the kernel: VFS, page cache, file systems, scheduler, locks
	numKinds
)

var kindNames = [numKinds]string{"user", "go_runtime", "syscall", "copy", "fault", "io_uring", "poll", "net", "kernel"}

var kindLabels = [numKinds]string{"user code", "Go runtime", "syscall entry/exit", "kernel copy", "page faults", "io_uring", "readiness polling", "network stack", "other kernel"}

// Kinds lists every kind in report order.
func Kinds() []Kind {
	k := make([]Kind, numKinds)
	for i := range k {
		k[i] = Kind(i)
	}
	return k
}

// String is the kind's JSON key: "user", "go_runtime", "copy"...
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Label is the kind's name in a table or chart legend.
func (k Kind) Label() string {
	if k < numKinds {
		return kindLabels[k]
	}
	return "unknown"
}

// ParseKind is the inverse of String.
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

// role is what one frame says about a sample, alone.
type role uint8

const (
	roleNone     role = iota // generic: locks, allocation, scheduling; decided by a frame further up
	roleCopy                 // a copy routine
	roleFault                // the page-fault entry
	roleIOUring              // io_uring's code
	rolePoll                 // epoll, poll, select and the readiness checks they call
	roleNet                  // the network stack's code
	roleSyscall              // syscall entry/exit code
	roleKernel               // a specific kernel path that is none of the above: VFS, a file system, the page cache
	roleUser                 // user code
	roleRuntime              // the Go runtime
	roleUserCall             // a user-space syscall stub
)

// classify says where sample smp's CPU went. The rules, in order:
//
//  1. A kernel leaf that is a copy routine is Copy.
//  2. A stack with the page-fault entry in it is Fault (a copy that
//     faults is the fault's: rule 1 has taken the copy itself).
//  3. Otherwise the first frame from the leaf up that belongs to a known
//     part decides: io_uring's code, readiness polling, the network stack, syscall
//     entry/exit, or a specific kernel path (VFS, file systems, the page
//     cache, the syscall handlers, the context switch), which is Kernel.
//     Generic frames (locks, allocation, RCU, wakeups) are passed over,
//     so a lock taken by TCP is the network stack's and one taken by
//     io_uring is io_uring's; a thread's sleep in epoll_wait or
//     io_uring_enter is the scheduler's.
//  4. A user leaf: the Go runtime, a syscall stub, or user code.
func classify(s *Samples, smp *Sample) Kind {
	if len(smp.Stack) == 0 {
		return User
	}
	leaf := &s.Frames[smp.Stack[0]]
	if !leaf.Kernel {
		switch frameRole(leaf) {
		case roleRuntime:
			return Runtime
		case roleUserCall:
			return Syscall
		}
		return User
	}
	if frameRole(leaf) == roleCopy {
		return Copy
	}
	for _, i := range smp.Stack {
		if f := &s.Frames[i]; f.Kernel && frameRole(f) == roleFault {
			return Fault
		}
	}
	for _, i := range smp.Stack {
		f := &s.Frames[i]
		if !f.Kernel {
			break
		}
		switch frameRole(f) {
		case roleIOUring:
			return IOUring
		case rolePoll:
			return Poll
		case roleNet:
			return Net
		case roleSyscall:
			return Syscall
		case roleKernel:
			return Kernel
		}
	}
	return Kernel
}

// FrameKind is the kind a frame stands for by itself, which colours a
// flame graph: a generic kernel frame (a lock) is Kernel.
func FrameKind(f Frame) Kind {
	switch frameRole(&f) {
	case roleCopy:
		return Copy
	case roleFault:
		return Fault
	case roleIOUring:
		return IOUring
	case rolePoll:
		return Poll
	case roleNet:
		return Net
	case roleSyscall, roleUserCall:
		return Syscall
	case roleRuntime:
		return Runtime
	case roleUser:
		return User
	}
	return Kernel
}

func frameRole(f *Frame) role {
	n := f.Func
	if !f.Kernel {
		return userRole(n)
	}
	// perf names local copies of a function "name.isra.0", "name.constprop.0".
	if i := strings.IndexByte(n, '.'); i > 0 {
		n = n[:i]
	}
	switch {
	case isCopy(n):
		return roleCopy
	case isFault(n):
		return roleFault
	case isIOUring(n):
		return roleIOUring
	case isPoll(n):
		return rolePoll
	case isNet(n):
		return roleNet
	case isSyscallEntry(n):
		return roleSyscall
	case isKernelPath(n):
		return roleKernel
	}
	return roleNone
}

func userRole(n string) role {
	switch {
	case n == "runtime.memmove":
		return roleUser // the program's own copies (the mmap engine's, bytes.Buffer's)
	case hasPrefix(n, "syscall.Syscall", "syscall.RawSyscall", "syscall.rawSyscall", "syscall.rawVforkSyscall",
		"internal/runtime/syscall", "golang.org/x/sys/unix.Syscall", "golang.org/x/sys/unix.RawSyscall",
		"golang.org/x/sys/unix.rawSyscall"):
		return roleUserCall
	case hasPrefix(n, "runtime.", "internal/runtime/", "runtime/internal/", "gcWriteBarrier", "aeshash"):
		return roleRuntime
	}
	return roleUser
}

func hasPrefix(n string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// isCopy: the routines that move bytes between user and kernel memory or
// within the kernel (arch/x86/lib and lib/iov_iter.c).
func isCopy(n string) bool {
	n = strings.TrimLeft(n, "_")
	n = strings.TrimPrefix(n, "pi_") // arm64's and newer x86's position-independent aliases: __pi_memcpy
	return hasPrefix(n, "copy_", "rep_movs", "memcpy", "memmove", "copyout", "copyin", "csum_partial_copy",
		"skb_copy_datagram", "simple_copy_to_iter")
}

// isFault: the page-fault entry, from the exception down to the handler.
func isFault(n string) bool {
	return hasPrefix(n, "asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault", "__handle_mm_fault")
}

// isIOUring: io_uring's code (io_uring/*.c names its functions io_ and
// __io_), less the few io_ names elsewhere in the kernel.
func isIOUring(n string) bool {
	if hasPrefix(n, "io_schedule", "io_apic", "io_serial", "io_delay", "io_watchdog", "io_check") {
		return false
	}
	return hasPrefix(n, "io_", "__io_", "__x64_sys_io_uring", "__do_sys_io_uring", "tctx_task_work")
}

// isPoll: readiness polling. epoll_wait and epoll_ctl (ep_*), poll and
// select, the poll methods they call to ask a file whether it is ready
// (sock_poll, tcp_poll...), and the wakeup callbacks that mark it ready
// (ep_poll_callback, pollwake). io_uring's own poll requests (io_poll_*)
// are io_uring's, though the poll methods they call are here. Asked
// before isNet: sock_poll and tcp_poll would be the network stack's.
func isPoll(n string) bool {
	switch n {
	case "sock_poll", "tcp_poll", "udp_poll", "datagram_poll", "unix_poll", "unix_dgram_poll", "pipe_poll",
		"eventfd_poll", "vfs_poll", "pollwake", "__pollwait", "poll_freewait", "poll_select_finish":
		return true
	}
	return hasPrefix(n, "ep_", "do_epoll", "__x64_sys_epoll", "__do_sys_epoll", "__se_sys_epoll", "do_sys_poll",
		"do_poll", "do_select", "core_sys_select", "__x64_sys_poll", "__x64_sys_ppoll", "__x64_sys_select",
		"__x64_sys_pselect", "__do_sys_poll", "__do_sys_ppoll", "__se_sys_poll")
}

// isNet: the socket layer, TCP/IP, loopback and the receive softirq.
func isNet(n string) bool {
	return hasPrefix(n, "tcp_", "__tcp_", "tcp4_", "inet_", "__inet_", "inet6_", "ip_", "__ip_", "ip6_", "ipv4_", "ipv6_",
		"udp_", "__udp", "sock_", "__sock_", "sk_", "__sk_", "skb_", "__skb_", "kfree_skb", "__kfree_skb", "consume_skb",
		"napi_", "__napi_", "net_rx", "net_tx", "__net", "netif_", "__netif_", "dev_hard_start_xmit", "__dev_queue_xmit",
		"dev_queue_xmit", "loopback_xmit", "process_backlog", "__sys_sendto", "__sys_recvfrom", "__sys_sendmsg",
		"___sys_sendmsg", "__sys_recvmsg", "___sys_recvmsg", "__sys_accept", "do_accept", "__sys_connect",
		"__sys_shutdown", "__sys_setsockopt", "__x64_sys_sendto", "__x64_sys_recvfrom", "__x64_sys_sendmsg",
		"__x64_sys_recvmsg", "__x64_sys_accept", "__x64_sys_connect", "__x64_sys_shutdown", "__x64_sys_setsockopt",
		"sockfd_lookup", "lock_sock", "release_sock", "__release_sock", "nf_", "nft_", "ipt_", "__x64_sys_socket",
		"__sys_socket", "unix_", "splice_to_socket", "security_socket", "selinux_socket", "rps_", "dst_", "neigh_", "eth_")
}

// isContextSwitch: the scheduler's switch away from a thread that sleeps
// and back (schedule_work and the like only queue work, and are not).
func isContextSwitch(n string) bool {
	return n == "schedule" || hasPrefix(n, "__schedule", "schedule_hrtimeout", "schedule_timeout", "schedule_preempt_disabled",
		"finish_task_switch", "preempt_schedule")
}

// isSyscallEntry: the kernel's system call entry and exit.
func isSyscallEntry(n string) bool {
	return hasPrefix(n, "entry_SYSCALL", "do_syscall_64", "syscall_exit", "syscall_return", "exit_to_user_mode",
		"__exit_to_user_mode", "syscall_enter", "x64_sys_call", "entry_SYSRETQ", "arch_exit_to_user_mode",
		"__audit_syscall", "fpregs_restore_userregs", "switch_fpu_return", "clear_bhb_loop", "srso_", "retbleed_")
}

// isKernelPath: kernel code that is none of the parts above and answers
// for what it calls (a lock taken by the page cache is the page cache's):
// the system call handlers, VFS, file systems, the page cache, block I/O,
// memory mapping, and the context switch: a thread that waits and wakes
// (in epoll_wait, io_uring_enter, a futex) pays the switch where it
// sleeps, and the switch is the scheduler's, not the wait's, so that
// io_uring's and epoll's own shares are their machinery alone.
func isKernelPath(n string) bool {
	if isContextSwitch(n) {
		return true
	}
	return hasPrefix(n, "__x64_sys_", "__do_sys_", "ksys_", "vfs_", "do_iter", "filemap_", "__filemap", "generic_file",
		"ext4_", "xfs_", "btrfs_", "iomap_", "folio_", "__folio", "page_cache", "readahead", "page_cache_ra",
		"blk_", "__blk", "submit_bio", "bio_", "do_sys_", "do_filp_open", "path_", "link_path_walk", "filename_",
		"shmem_", "tmpfs_", "fsnotify", "__fsnotify", "do_madvise",
		"do_mmap", "__vm_munmap", "vm_mmap", "mincore", "do_fsync", "file_write_and_wait", "jbd2_", "fuse_",
		"nfs_", "overlay_", "ovl_", "generic_perform_write", "new_sync", "rw_verify_area", "fdget", "__fdget",
		"fput", "__fput", "do_splice", "splice_", "pipe_", "anon_pipe", "do_sendfile", "dio_", "__iomap")
}
