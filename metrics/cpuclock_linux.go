package metrics

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// ProcessCPUClock returns the CPU time process pid has used so far, user
// and system together, every thread of it included (live and exited ones;
// not its children), read from the kernel's CPU clock of that process
// (clock_gettime on MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)). It is
// the scheduler's own count in nanoseconds, the running slices included,
// where ProcessCPU's /proc/PID/stat counts 10 ms ticks: a difference of
// two readings is exact to the microsecond, not ±20 ms. Any process's
// clock may be read, without ptrace rights.
//
// Errors name the pid. A pid no process has (never had, or one that has
// exited and been reaped) is an error for which errors.Is(err,
// fs.ErrNotExist) holds. When the kernel refuses the clock of a process
// that does exist (a seccomp policy, a sandbox's kernel), errors.Is(err,
// errors.ErrUnsupported) holds, and the caller may fall back to
// ProcessCPU.
func ProcessCPUClock(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("process CPU clock: pid %d: want a process id above 0", pid)
	}
	ns, err := sys.ProcessCPUClock(pid)
	if err == nil {
		return time.Duration(ns), nil
	}
	e := &cpuClockError{pid: pid, errno: err}
	if errors.Is(err, sys.EINVAL) {
		// EINVAL is also how a policy may refuse an id it does not
		// know: the process's /proc directory tells the two apart.
		_, serr := os.Stat("/proc/" + strconv.Itoa(pid))
		e.gone = errors.Is(serr, fs.ErrNotExist)
	}
	return 0, e
}

// cpuClockError is ProcessCPUClock's error: no such process (gone), or a
// clock the kernel refused.
type cpuClockError struct {
	pid   int
	errno error
	gone  bool
}

func (e *cpuClockError) Error() string {
	if e.gone {
		return fmt.Sprintf("process CPU clock of pid %d: no such process", e.pid)
	}
	return fmt.Sprintf("process CPU clock of pid %d: clock_gettime refused it: %v", e.pid, e.errno)
}

func (e *cpuClockError) Unwrap() error { return e.errno }

// Is makes a vanished process fs.ErrNotExist, as ProcessCPU's error is,
// and a refused clock errors.ErrUnsupported.
func (e *cpuClockError) Is(target error) bool {
	if e.gone {
		return target == fs.ErrNotExist
	}
	return target == errors.ErrUnsupported
}
