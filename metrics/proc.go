package metrics

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/stat: USER_HZ, which the
// kernel fixes at 100 for user space on every architecture Go supports.
const userHZ = 100

// TickDuration is the resolution of SystemCPU.
const TickDuration = time.Second / userHZ

// CPUStat is the CPU time the machine has spent busy since boot, from
// /proc/stat: in all and per CPU. Busy is user, nice, system, irq, softirq
// and steal (time a hypervisor gave to someone else counts as busy too: it
// is time this machine's work could not run). Idle and iowait are not busy.
// Guest time is already inside user.
type CPUStat struct {
	Busy   time.Duration
	PerCPU []time.Duration
}

// SystemCPU reads /proc/stat.
func SystemCPU() (CPUStat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUStat{}, err
	}
	return parseProcStat(b)
}

// Moved counts the CPUs whose busy time changed between o and s: only
// those can carry the tick-rounding error of a difference.
func (s CPUStat) Moved(o CPUStat) int {
	n := 0
	for i, b := range s.PerCPU {
		if i >= len(o.PerCPU) || b != o.PerCPU[i] {
			n++
		}
	}
	return n
}

func parseProcStat(b []byte) (CPUStat, error) {
	var st CPUStat
	seen := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if len(f) < 9 {
			return CPUStat{}, fmt.Errorf("/proc/stat: short line %q", line)
		}
		var busy uint64
		// user nice system idle iowait irq softirq steal
		for _, i := range []int{1, 2, 3, 6, 7, 8} {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return CPUStat{}, fmt.Errorf("/proc/stat: %w", err)
			}
			busy += v
		}
		d := time.Duration(busy) * TickDuration
		if f[0] == "cpu" {
			st.Busy, seen = d, true
		} else {
			st.PerCPU = append(st.PerCPU, d)
		}
	}
	if !seen {
		return CPUStat{}, errors.New("/proc/stat: no aggregate cpu line")
	}
	return st, nil
}

// IOThreadPrefixes are the names io_uring gives its kernel threads: the
// SQPOLL submission thread and the io-wq workers. Since Linux 5.12 they are
// threads of the process that owns the ring, so getrusage(RUSAGE_SELF)
// counts their CPU; fio, which reports per-thread usage, does not.
var IOThreadPrefixes = []string{"iou-sqp-", "iou-wrk-"}

// IOThreadCPU returns the CPU time (user+system, from schedstat, in
// nanoseconds) used so far by each of this process's io_uring kernel
// threads, by thread id. It is empty when there are none.
func IOThreadCPU() (map[int]time.Duration, error) {
	return ioThreadCPU("/proc/self/task")
}

func ioThreadCPU(taskDir string) (map[int]time.Duration, error) {
	ents, err := os.ReadDir(taskDir)
	if err != nil {
		return nil, err
	}
	out := map[int]time.Duration{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(taskDir, e.Name(), "comm"))
		if err != nil {
			continue // the thread exited
		}
		if !isIOThread(strings.TrimSpace(string(comm))) {
			continue
		}
		ss, err := os.ReadFile(filepath.Join(taskDir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(ss))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		out[tid] = time.Duration(ns)
	}
	return out, nil
}

// KworkerCPU returns the CPU time (from schedstat) used so far by the
// kernel's worker threads (kworker/*), which write back dirty pages for
// every process: a write benchmark's run makes them work, and their CPU
// is neither the run's (its rusage) nor another process's.
func KworkerCPU() (time.Duration, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || !strings.HasPrefix(string(comm), "kworker/") {
			continue
		}
		ss, err := os.ReadFile(filepath.Join("/proc", e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(ss)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total, nil
}

func isIOThread(comm string) bool {
	for _, p := range IOThreadPrefixes {
		if strings.HasPrefix(comm, p) {
			return true
		}
	}
	return false
}

// IOThreadDelta is the CPU the io_uring kernel threads used between two
// IOThreadCPU samples. A thread born in between counts from zero; one that
// exited in between is lost (its time is still in RUSAGE_SELF).
func IOThreadDelta(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for tid, t := range after {
		d += t - before[tid]
	}
	return d
}
