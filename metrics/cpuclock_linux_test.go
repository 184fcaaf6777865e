package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// burnThread spins on the calling goroutine, locked to its thread, until
// the thread's own CPU clock says d went by, and returns what it says.
func burnThread(d time.Duration) (time.Duration, error) {
	runtime.LockOSThread()
	t0, err := sys.ThreadCPU()
	if err != nil {
		return 0, err
	}
	x := 1
	for {
		for i := 0; i < 1e5; i++ {
			x = x*31 + i
		}
		t, err := sys.ThreadCPU()
		if err != nil {
			return 0, err
		}
		if t-t0 >= int64(d) {
			_ = x
			return time.Duration(t - t0), nil
		}
	}
}

// TestProcessCPUClockSelf: this process's clock lies between two
// getrusage readings taken around it (the same scheduler count, which
// getrusage rounds to microseconds), and it resolves far below /proc's
// 10 ms tick.
func TestProcessCPUClockSelf(t *testing.T) {
	pid := os.Getpid()
	for range 20 {
		r0, err := SelfUsage()
		if err != nil {
			t.Fatal(err)
		}
		c, err := ProcessCPUClock(pid)
		if err != nil {
			t.Fatal(err)
		}
		r1, _ := SelfUsage()
		lo, hi := r0.User+r0.System, r1.User+r1.System
		// getrusage truncates each of user and system to a microsecond.
		if c < lo || c > hi+2*time.Microsecond {
			t.Fatalf("clock says %v, getrusage %v before and %v after", c, lo, hi)
		}
	}
	// About a millisecond of work shows as about a millisecond: more
	// than nothing and less than one of /proc's ticks.
	c0, _ := ProcessCPUClock(pid)
	done := make(chan error)
	go func() {
		defer runtime.UnlockOSThread()
		_, err := burnThread(time.Millisecond)
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c1, _ := ProcessCPUClock(pid)
	if d := c1 - c0; d < time.Millisecond || d >= TickDuration {
		t.Errorf("1 ms of thread CPU moved the process clock by %v", d)
	}
}

// cpuChildEnv makes the test binary a child (TestProcessCPUClockChild's)
// that burns CPU in a thread that then exits and in one that stays,
// reports what each burned, and waits for its stdin to close.
const cpuChildEnv = "IOPATH_METRICS_CPU_CHILD"

func TestProcessCPUClockChildHelper(t *testing.T) {
	if os.Getenv(cpuChildEnv) == "" {
		return // only the child runs this
	}
	type res struct {
		d   time.Duration
		err error
	}
	ch := make(chan res)
	go func() {
		// Never unlocked: the thread exits with the goroutine, and
		// its CPU time must stay in the process's count.
		d, err := burnThread(150 * time.Millisecond)
		ch <- res{d, err}
	}()
	gone := <-ch
	stays, err := burnThread(150 * time.Millisecond)
	runtime.UnlockOSThread()
	if gone.err != nil || err != nil {
		fmt.Println("ERR:", gone.err, err)
		os.Exit(1)
	}
	fmt.Printf("ready %d %d\n", gone.d.Nanoseconds(), stays.Nanoseconds())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// TestProcessCPUClockChild reads another process's clock: it holds the
// CPU of a thread that has exited, agrees with /proc/PID/stat within its
// ticks, and with the rusage the kernel reports when the child is reaped;
// after that the pid is no process.
func TestProcessCPUClockChild(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessCPUClockChildHelper$")
	cmd.Env = append(os.Environ(), cpuChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if cmd.ProcessState == nil {
			cmd.Wait()
		}
	}()
	pid := cmd.Process.Pid
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v (%q)", err, line)
	}
	var gone, stays int64
	if _, err := fmt.Sscanf(line, "ready %d %d", &gone, &stays); err != nil {
		t.Fatalf("child said %q: %v", line, err)
	}
	c, err := ProcessCPUClock(pid)
	if err != nil {
		t.Fatal(err)
	}
	u, s, err := ProcessCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	// The child is blocked on its stdin now: nothing it does from here
	// to its exit costs more than a few milliseconds.
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	ru := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	burned := time.Duration(gone + stays)
	t.Logf("burned %v (%v in a thread that exited), clock %v, /proc %v, rusage at exit %v", burned, time.Duration(gone), c, u+s, ru)
	if c < burned {
		t.Errorf("clock %v < %v the child's threads burned: the exited thread's %v is missing?", c, burned, time.Duration(gone))
	}
	// /proc truncates user and system to 10 ms ticks each.
	if d := c - (u + s); d < -5*time.Millisecond || d > 2*TickDuration+5*time.Millisecond {
		t.Errorf("clock %v, /proc/%d/stat %v", c, pid, u+s)
	}
	if d := ru - c; d < -time.Millisecond || d > 50*time.Millisecond {
		t.Errorf("clock %v before the child exited, rusage %v after", c, ru)
	}
	// Reaped: the pid is no process now (pids are reused only after
	// the whole range went round).
	_, err = ProcessCPUClock(pid)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), fmt.Sprint(pid)) {
		t.Errorf("reaped child %d: err = %v, want not-exist naming the pid", pid, err)
	}
}

func TestProcessCPUClockNoProcess(t *testing.T) {
	for _, pid := range []int{1 << 30, 1<<22 + 1, 0, -1} {
		_, err := ProcessCPUClock(pid)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) {
			t.Errorf("pid %d: err = %v, want an error naming the pid", pid, err)
			continue
		}
		if pid > 0 && (!errors.Is(err, fs.ErrNotExist) || errors.Is(err, errors.ErrUnsupported)) {
			t.Errorf("pid %d: err = %v, want not-exist", pid, err)
		}
	}
	// A refused clock of a live process is ErrUnsupported, for the
	// caller's fallback.
	e := &cpuClockError{pid: 1, errno: sys.EPERM}
	if !errors.Is(e, errors.ErrUnsupported) || errors.Is(e, fs.ErrNotExist) || !errors.Is(e, sys.EPERM) ||
		e.Error() != "process CPU clock of pid 1: clock_gettime refused it: operation not permitted" {
		t.Errorf("refused: %v", e)
	}
}
