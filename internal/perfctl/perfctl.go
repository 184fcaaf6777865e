// Package perfctl speaks perf record's control protocol (perf-record(1),
// --control=fifo:ctl-fifo,ack-fifo): a process writes "enable" or
// "disable" on the control FIFO and perf answers "ack" on the other once
// its events are switched. iopath records a run with perf started
// disabled (-D -1), and whoever knows where the measured phase starts —
// the benchmark child itself, or the orchestrator of a server's load —
// switches it on and off through a Ctl, so that a profile holds the
// measured phase and nothing of the setup around it.
package perfctl

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// Env is the environment variable that hands a child the two FIFOs of
// the perf record that started it: "CTL,ACK" (paths without commas).
const Env = "IOPATH_PERF_CTL"

// ackTimeout bounds the wait for perf's answer: it answers within
// milliseconds, so a perf that does not has died or hangs.
const ackTimeout = 5 * time.Second

// Ctl is one end of a recording's control FIFOs.
type Ctl struct {
	ctl, ack *os.File
	r        *bufio.Reader
	aborted  atomic.Bool
}

// ErrAborted is the error of a command that Abort ended.
var ErrAborted = errors.New("perf control: aborted")

// Abort ends the wait for perf's answer to a command in progress, and
// makes every later command fail at once with ErrAborted: for a caller
// being interrupted, whose perf may be gone already (and would leave a
// command waiting out its timeout). It may be called from any goroutine.
func (c *Ctl) Abort() {
	c.aborted.Store(true)
	c.ack.SetReadDeadline(time.Unix(1, 0))
}

// Open opens the FIFOs named by spec ("CTL,ACK"). Both are opened read
// and write, which never blocks on a FIFO: a perf that is gone shows as a
// missing answer, not as an open that waits for ever.
func Open(spec string) (*Ctl, error) {
	ctlPath, ackPath, ok := strings.Cut(spec, ",")
	if !ok || ctlPath == "" || ackPath == "" {
		return nil, fmt.Errorf("perf control %q: want CTL,ACK", spec)
	}
	ctl, err := os.OpenFile(ctlPath, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("perf control: %w", err)
	}
	ack, err := os.OpenFile(ackPath, os.O_RDWR, 0)
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("perf control: %w", err)
	}
	return &Ctl{ctl: ctl, ack: ack, r: bufio.NewReader(ack)}, nil
}

// FromEnv opens the FIFOs Env names; it returns nil, nil when this
// process is not being recorded. A process being recorded also asks to be
// killed when perf, its parent, dies: perf does not kill what it started.
func FromEnv() (*Ctl, error) {
	spec := os.Getenv(Env)
	if spec == "" {
		return nil, nil
	}
	if err := sys.SetParentDeathSignal(syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("perf control: prctl(PR_SET_PDEATHSIG): %w", err)
	}
	return Open(spec)
}

// Enable switches recording on and returns when perf says it is on, with
// the CLOCK_MONOTONIC time (ns) just before asking.
func (c *Ctl) Enable() (int64, error) {
	t := sys.MonotonicNs()
	return t, c.command("enable")
}

// Disable switches recording off and returns when perf says it is off,
// with the CLOCK_MONOTONIC time (ns) once it is.
func (c *Ctl) Disable() (int64, error) {
	err := c.command("disable")
	return sys.MonotonicNs(), err
}

func (c *Ctl) command(cmd string) error {
	if _, err := c.ctl.WriteString(cmd + "\n"); err != nil {
		return fmt.Errorf("perf control: %s: %w", cmd, err)
	}
	// FIFOs are polled by the runtime, so a deadline bounds the wait.
	if err := c.ack.SetReadDeadline(time.Now().Add(ackTimeout)); err != nil {
		return fmt.Errorf("perf control: %w", err)
	}
	// After the deadline is set: an Abort from now on moves it back.
	if c.aborted.Load() {
		return ErrAborted
	}
	line, err := c.r.ReadString('\n')
	if errors.Is(err, os.ErrDeadlineExceeded) && c.aborted.Load() {
		return ErrAborted
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("perf control: %s: perf did not answer within %v", cmd, ackTimeout)
	}
	if err != nil {
		return fmt.Errorf("perf control: %s: %w", cmd, err)
	}
	// perf writes "ack\n" followed by a NUL.
	if strings.Trim(line, "\x00\n") != "ack" {
		return fmt.Errorf("perf control: %s: perf answered %q", cmd, line)
	}
	return nil
}

// Close closes both FIFOs.
func (c *Ctl) Close() error {
	if c == nil {
		return nil
	}
	err := c.ctl.Close()
	if e := c.ack.Close(); err == nil {
		err = e
	}
	return err
}
