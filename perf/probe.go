package perf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrUnavailable is wrapped by every error that says perf cannot record
// here: not installed, forbidden by perf_event_paranoid or a seccomp
// profile, or unable to show kernel frames. The message says which and
// how to allow it.
var ErrUnavailable = errors.New("perf cannot record here")

// Info is what Probe found.
type Info struct {
	Path    string // the perf binary
	Version string // "6.1.187"
	// Paranoid and KptrRestrict are kernel.perf_event_paranoid and
	// kernel.kptr_restrict (-9 when unreadable).
	Paranoid, KptrRestrict int
	// Privileged says this process has CAP_PERFMON or CAP_SYS_ADMIN,
	// which lift both limits.
	Privileged bool
}

// String is one line for a report's notes.
func (i *Info) String() string {
	return fmt.Sprintf("perf %s, cpu-clock sampling with call graphs (frame pointers), kernel frames included", i.Version)
}

// Describe is the one line a report says about its recordings at freq Hz
// (0: DefaultFreq).
func (i *Info) Describe(freq int) string {
	if freq <= 0 {
		freq = DefaultFreq
	}
	return fmt.Sprintf("perf %s, cpu-clock at %d Hz with call graphs (frame pointers), kernel frames included", i.Version, freq)
}

type probeResult struct {
	info *Info
	err  error
}

var probes struct {
	mu   sync.Mutex
	byAt map[string]probeResult // by the perf binary's path
}

// Probe says whether perf can record this process's children with kernel
// and user frames, and why not. The answer is found once per perf binary
// (the one on PATH): the binary, the two sysctls, and a real recording of
// /bin/true, which is what finds a seccomp profile or a kernel without
// perf events.
func Probe() (*Info, error) {
	path, err := exec.LookPath("perf")
	if err != nil {
		return nil, fmt.Errorf("%w: perf is not installed (Debian: apt-get install linux-perf)", ErrUnavailable)
	}
	probes.mu.Lock()
	defer probes.mu.Unlock()
	if r, ok := probes.byAt[path]; ok {
		return r.info, r.err
	}
	info, err := probeAt(path)
	if probes.byAt == nil {
		probes.byAt = map[string]probeResult{}
	}
	probes.byAt[path] = probeResult{info, err}
	return info, err
}

func probeAt(path string) (*Info, error) {
	info := &Info{Path: path, Paranoid: readSysctl("perf_event_paranoid"), KptrRestrict: readSysctl("kptr_restrict"), Privileged: privileged()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s version: %v%s", ErrUnavailable, path, err, firstLine(out))
	}
	v := strings.TrimSpace(string(out))
	info.Version = strings.TrimPrefix(v, "perf version ")
	if err := info.kernelFrames(); err != nil {
		return nil, err
	}
	tr, err := exec.LookPath("true")
	if err != nil {
		tr = "/bin/true"
	}
	// The recording goes to stdout (perf's pipe mode) and is dropped:
	// the probe leaves no file behind, whatever stops it.
	cmd := exec.CommandContext(ctx, path, "record", "-q", "--no-bpf-event", "-e", "cpu-clock", "-g", "-o", "-", "--", tr)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	// A group of its own: a Ctrl-C at the terminal is iopath's to handle,
	// not a failed probe ("perf record failed (signal: interrupt)").
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: perf record failed (%v)%s; a container's seccomp profile may forbid perf_event_open", ErrUnavailable, err, firstLine(stderr.Bytes()))
	}
	return info, nil
}

// kernelFrames says why this process may not record kernel frames with
// their symbols, and how to allow it; nil when it may.
func (info *Info) kernelFrames() error {
	if !info.Privileged {
		// perf_event_paranoid: 2 (the kernel's default) forbids kernel
		// profiling, Debian's 3 any perf_event_open, to the unprivileged.
		if info.Paranoid > 1 {
			return fmt.Errorf("%w: kernel.perf_event_paranoid is %d, which hides kernel frames from this user; allow them with sysctl kernel.perf_event_paranoid=1 (or run as root)", ErrUnavailable, info.Paranoid)
		}
		if info.KptrRestrict >= 1 {
			return fmt.Errorf("%w: kernel.kptr_restrict is %d, which hides kernel symbols from this user; allow them with sysctl kernel.kptr_restrict=0 (or run as root)", ErrUnavailable, info.KptrRestrict)
		}
	} else if info.KptrRestrict >= 2 {
		return fmt.Errorf("%w: kernel.kptr_restrict is 2, which hides kernel symbols even from root; allow them with sysctl kernel.kptr_restrict=0", ErrUnavailable)
	}
	return nil
}

// readSysctl reads /proc/sys/kernel/name as a number, -9 when it cannot.
func readSysctl(name string) int {
	b, err := os.ReadFile("/proc/sys/kernel/" + name)
	if err != nil {
		return -9
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -9
	}
	return n
}

// privileged says this process's effective capabilities hold CAP_PERFMON
// (38) or CAP_SYS_ADMIN (21).
func privileged() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return os.Geteuid() == 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return os.Geteuid() == 0
			}
			return caps&(1<<38|1<<21) != 0
		}
	}
	return os.Geteuid() == 0
}

// firstLine is ": " and the first non-empty line of a tool's output, or "".
func firstLine(out []byte) string {
	for _, l := range bytes.Split(out, []byte("\n")) {
		if s := strings.TrimSpace(string(l)); s != "" {
			return ": " + s
		}
	}
	return ""
}
