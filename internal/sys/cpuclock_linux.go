package sys

import "golang.org/x/sys/unix"

// Process CPU clocks (clock_gettime(2), "CPU-time clocks"): the kernel
// encodes a clock for another process's CPU time in the clock id itself,
// as MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) in
// include/linux/posix-timers.h: the pid's complement shifted left by
// three, with the low bits saying which clock (2, CPUCLOCK_SCHED: the
// scheduler's runtime in nanoseconds) and that it is the whole process's
// (bit 2, CPUCLOCK_PERTHREAD_MASK, clear). glibc's clock_getcpuclockid
// builds the same id.
const (
	cpuclockSched = 2
	// maxClockPID is the largest pid the 32-bit clock id can carry:
	// ^pid<<3 must not overflow int32. Linux pids are below 2^22
	// (PID_MAX_LIMIT), far under it.
	maxClockPID = 1<<28 - 1
)

// ProcessCPUClock returns the CPU time, in nanoseconds, that process pid
// has used so far: every thread of it, those that have exited included
// (not its children), at the scheduler's resolution, including the slice
// a thread is running now. It is clock_gettime on pid's process CPU
// clock. It returns the bare errno: EINVAL when no process (thread group)
// has that id, or a pid out of range; a policy (seccomp, a sandbox's
// kernel) may answer EPERM, ENOSYS or EINVAL for a process that exists.
func ProcessCPUClock(pid int) (int64, error) {
	if pid <= 0 || pid > maxClockPID {
		return 0, unix.EINVAL
	}
	id := int32((^pid)<<3 | cpuclockSched)
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// MonotonicNs is CLOCK_MONOTONIC in nanoseconds: the clock perf stamps
// its samples with when recording with --clockid monotonic, so that a
// window of time taken here selects samples there.
func MonotonicNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// SetParentDeathSignal makes the kernel send sig to this process when the
// thread that created it ends (prctl PR_SET_PDEATHSIG). A process started
// by a tool in between (perf record) sets it on itself, since its starter
// cannot.
func SetParentDeathSignal(sig unix.Signal) error {
	return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(sig), 0, 0, 0)
}
