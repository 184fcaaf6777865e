package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/iopath/iopath/internal/perfctl"
)

// DefaultFreq is the sampling frequency iopath records at, per CPU: a
// quarter of perf's own default (4000 Hz). Each cpu-clock sample costs
// the sampled program a timer interrupt and two stack walks; on this
// project's 2-vCPU VM (AMD EPYC, Linux 6.18) that took 6–13% off a warm
// read's GiB/s at 4000 Hz and 0–4.5% at 1000 Hz (BenchmarkPerfOverhead,
// docs/perf.md), and on bare metal with a PMU it costs less. A
// one-second run still gives about 1000 samples.
const DefaultFreq = 1000

// MaxFreq is the highest frequency the kernel allows
// (kernel.perf_event_max_sample_rate; 100000 when unreadable).
func MaxFreq() int {
	if n := readSysctl("perf_event_max_sample_rate"); n > 0 {
		return n
	}
	return 100000
}

// Options shape a recording.
type Options struct {
	// Freq is the sampling frequency per CPU, in Hz; 0 is DefaultFreq.
	Freq int
	// Track, when set, is told the recording's temporary directory as it
	// is made, and returns the function that forgets it once removed (the
	// CLI removes what is tracked when a second Ctrl-C ends it at once).
	Track func(dir string) (forget func())
}

// Recording is one perf record: of a child it starts (Wrap), or of a
// running process (Attach). Events start disabled; they are switched on
// for the measured phase only, by the child itself (Wrap) or by the
// caller (Enable, Disable).
type Recording struct {
	info    *Info
	dir     string
	data    string
	spec    string // "CTL,ACK"
	forget  func()
	perf    *exec.Cmd    // Attach: the perf process
	ctl     *perfctl.Ctl // Attach: the caller's end of the FIFOs
	ctx     context.Context
	unhook  func() bool // Attach: stops aborting ctl when ctx ends
	stderr  tail
	stopped bool
	once    sync.Once
}

// eventArgs are the perf record arguments every recording uses: cpu-clock
// (a timer, so it works in a VM without a PMU) with frame-pointer call
// graphs (Go keeps frame pointers; the kernel unwinds its own part), time
// stamps on CLOCK_MONOTONIC, and events off until switched on.
// --no-bpf-event: perf 6.1's BPF side-band thread polls with a 1 s
// timeout and perf joins it on the way out, which made every recording
// end a second late.
func eventArgs(o Options) []string {
	freq := o.Freq
	if freq <= 0 {
		freq = DefaultFreq
	}
	return []string{"record", "-q", "--no-bpf-event", "-e", "cpu-clock", "-F", strconv.Itoa(freq), "-g",
		"--clockid", "monotonic", "-D", "-1"}
}

func newRecording(o Options) (*Recording, error) {
	info, err := Probe()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "iopath-perf-")
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	r := &Recording{info: info, dir: dir, data: filepath.Join(dir, "perf.data"), forget: func() {}}
	if o.Track != nil {
		r.forget = o.Track(dir)
	}
	ctl, ack := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, p := range []string{ctl, ack} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			r.Close()
			return nil, fmt.Errorf("perf: mkfifo %s: %w", p, err)
		}
	}
	r.spec = ctl + "," + ack
	return r, nil
}

func (r *Recording) args(o Options) []string {
	return append(eventArgs(o), "--control", "fifo:"+r.spec, "-o", r.data)
}

// Wrap makes cmd (not yet started) run under perf record. The child finds
// the control FIFOs in its environment (perfctl.FromEnv) and switches
// recording on for its measured phase. Wrap puts perf and the child in a
// process group of their own, which cmd's Cancel kills whole; the child
// asks to be killed if perf dies. cmd's exit status is the child's.
func Wrap(cmd *exec.Cmd, o Options) (*Recording, error) {
	if cmd.Process != nil {
		return nil, errors.New("perf: Wrap of a started command")
	}
	r, err := newRecording(o)
	if err != nil {
		return nil, err
	}
	argv := append(r.args(o), "--", cmd.Path)
	argv = append(argv, cmd.Args[1:]...)
	cmd.Path = r.info.Path
	cmd.Args = append([]string{r.info.Path}, argv...)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, perfctl.Env+"="+r.spec)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return r, nil
}

// Attach starts perf record on the running process pid (every thread it
// has and starts), with events off until Enable. ctx bounds perf's life.
func Attach(ctx context.Context, pid int, o Options) (*Recording, error) {
	r, err := newRecording(o)
	if err != nil {
		return nil, err
	}
	argv := append(r.args(o), "-p", strconv.Itoa(pid))
	r.perf = exec.CommandContext(ctx, r.info.Path, argv...)
	r.perf.Stderr = &r.stderr
	// perf is a process group of its own, so that a Ctrl-C at the
	// terminal reaches iopath alone: a perf that had it too would start
	// writing its recording (and a /tmp/perf-vdso.so-* file) just before
	// Close kills it, leaving that file behind. The end of ctx is an
	// interrupt, whose recording is not wanted: perf is killed.
	r.perf.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	r.perf.Cancel = func() error { return r.perf.Process.Kill() }
	r.perf.WaitDelay = 5 * time.Second
	if r.ctl, err = perfctl.Open(r.spec); err != nil {
		r.Close()
		return nil, err
	}
	// ctx's end stops perf (SIGINT): a command to it then has no one to
	// answer, and must not wait out its timeout.
	r.ctx, r.unhook = ctx, context.AfterFunc(ctx, r.ctl.Abort)
	if err := r.perf.Start(); err != nil {
		r.Close()
		return nil, fmt.Errorf("perf: %w", err)
	}
	return r, nil
}

// Enable switches an attached recording on; it returns the
// CLOCK_MONOTONIC time (ns) from which samples belong to this window.
func (r *Recording) Enable() (int64, error) {
	if r.ctl == nil {
		return 0, errors.New("perf: Enable of a recording the child controls")
	}
	t, err := r.ctl.Enable()
	return t, r.stopping(r.explain(err))
}

// stopping is ctx's error when ctx ended (and so a command to perf was
// aborted), else err.
func (r *Recording) stopping(err error) error {
	if err != nil && r.ctx != nil && r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	return err
}

// Disable switches an attached recording off; it returns the
// CLOCK_MONOTONIC time (ns) up to which samples belong to the window.
func (r *Recording) Disable() (int64, error) {
	if r.ctl == nil {
		return 0, errors.New("perf: Disable of a recording the child controls")
	}
	t, err := r.ctl.Disable()
	return t, r.stopping(r.explain(err))
}

// explain adds what perf said on its way out to a control error.
func (r *Recording) explain(err error) error {
	if err != nil && r.stderr.String() != "" {
		return fmt.Errorf("%w: %s", err, r.stderr.String())
	}
	return err
}

// Stop ends an attached recording and waits for perf to write it: perf
// stops on SIGINT. (A wrapped recording ends with its command.)
func (r *Recording) Stop() error {
	if r.perf == nil || r.stopped {
		return nil
	}
	r.stopped = true
	r.perf.Process.Signal(syscall.SIGINT)
	err := r.perf.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 0 {
		err = nil
	}
	if err != nil {
		// perf -p exits with the status of SIGINT's handling; only a
		// recording it failed to write matters, and Read finds that.
		if _, serr := os.Stat(r.data); serr == nil {
			return nil
		}
		return fmt.Errorf("perf record -p: %v%s", err, firstLine([]byte(r.stderr.String())))
	}
	return nil
}

// Read turns the recording into samples (perf script). The recording
// must have ended: its command waited for, or Stop called.
func (r *Recording) Read(ctx context.Context) (*Samples, error) {
	st, err := os.Stat(r.data)
	if err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("perf wrote no recording%s", firstLine([]byte(r.stderr.String())))
	}
	return Script(ctx, r.info.Path, r.data)
}

// Close stops perf if it still runs and removes the temporary directory.
// It may be called more than once.
func (r *Recording) Close() {
	r.once.Do(func() {
		if r.perf != nil && r.perf.Process != nil && !r.stopped {
			r.perf.Process.Kill()
			r.perf.Wait()
		}
		if r.unhook != nil {
			r.unhook()
		}
		r.ctl.Close()
		os.RemoveAll(r.dir)
		r.forget()
	})
}

// tail keeps the last few KiB written to it (perf's stderr).
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var _ io.Writer = (*tail)(nil)
