package perf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.uber.org/goleak"

	"github.com/iopath/iopath/internal/perfctl"
	"github.com/iopath/iopath/internal/sys"
)

// The test binary is also the recorded child: PERF_TEST_CHILD says what
// it does.
const childEnv = "PERF_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		goleak.VerifyTestMain(m)
		return
	case "wrap": // switch recording on, read a file for a while, switch it off
		ctl, err := perfctl.FromEnv()
		if err != nil || ctl == nil {
			fmt.Fprintln(os.Stderr, "no perf control:", err)
			os.Exit(3)
		}
		if _, err := ctl.Enable(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		preadForCPU(300 * time.Millisecond)
		if _, err := ctl.Disable(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(5)
		}
		os.Exit(0)
	case "hang": // switch recording on, then wait for ever
		ctl, _ := perfctl.FromEnv()
		if ctl != nil {
			ctl.Enable()
		}
		time.Sleep(time.Hour)
	case "spin": // read a file until stdin closes
		fmt.Println("ready")
		done := make(chan struct{})
		go func() { bufio.NewReader(os.Stdin).ReadByte(); close(done) }()
		for {
			select {
			case <-done:
				os.Exit(0)
			default:
				preadFor(10 * time.Millisecond)
			}
		}
	}
	os.Exit(2)
}

// preadForCPU reads as preadFor until the process has used d of CPU
// time, or for ten times d at most: on a machine busy with other tests a
// child that reads for d of wall time may run for a third of it, and give
// perf a third of the samples a test expects.
func preadForCPU(d time.Duration) {
	cpu := func() time.Duration {
		ns, err := sys.ProcessCPU()
		if err != nil {
			os.Exit(7)
		}
		return time.Duration(ns)
	}
	start, t := cpu(), time.Now()
	for cpu()-start < d && time.Since(t) < 10*d {
		preadFor(10 * time.Millisecond)
	}
}

// preadFor reads the test binary itself, 64 KiB at a time, for d.
func preadFor(d time.Duration) {
	f, err := os.Open(os.Args[0])
	if err != nil {
		os.Exit(6)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for t := time.Now(); time.Since(t) < d; {
		for off := int64(0); off < 4<<20; off += int64(len(buf)) {
			if _, err := f.ReadAt(buf, off); err != nil {
				break
			}
		}
	}
}

func needPerf(t *testing.T) {
	t.Helper()
	if _, err := Probe(); err != nil {
		t.Skipf("perf cannot record here: %v", err)
	}
}

func child(ctx context.Context, mode string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	return cmd
}

// checkProfile parses a written profile and wants a kernel and a Go frame.
func checkProfile(t *testing.T, s *Samples) {
	t.Helper()
	var buf bytes.Buffer
	if err := s.WriteProfile(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("pprof cannot read the profile: %v", err)
	}
	var kernel, gofn bool
	for _, fn := range p.Function {
		kernel = kernel || fn.Filename == "[kernel.kallsyms]"
		gofn = gofn || strings.HasPrefix(fn.Name, "github.com/iopath/iopath/perf.")
	}
	if !kernel || !gofn {
		var names []string
		for _, fn := range p.Function {
			names = append(names, fn.Name+"@"+fn.Filename)
		}
		t.Errorf("profile has a kernel function: %v, a Go function of this package: %v: %q", kernel, gofn, names)
	}
	if strings.HasPrefix(p.Mapping[0].File, "[") {
		t.Errorf("the profile's main mapping is %s, not the program", p.Mapping[0].File)
	}
}

func TestWrap(t *testing.T) {
	needPerf(t)
	ctx := context.Background()
	cmd := child(ctx, "wrap")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var tracked, forgotten string
	rec, err := Wrap(cmd, Options{Track: func(dir string) func() {
		tracked = dir
		return func() { forgotten = dir }
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	s, err := rec.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 300 ms of CPU at 1000 Hz is about 300 samples; the setup before Enable
	// and the exit after Disable are not recorded.
	if n := len(s.List); n < 100 {
		t.Fatalf("%d samples", n)
	}
	for _, smp := range s.List {
		for _, i := range smp.Stack {
			if f := s.Frames[i]; strings.HasPrefix(f.Func, "runtime.doInit") || f.Func == "runtime.main" && len(smp.Stack) < 4 {
				t.Fatalf("a sample from before the measured phase: %+v", s.Frames[smp.Stack[0]])
			}
		}
	}
	b := s.Breakdown()
	// The copy is most of it (70% here); under the race detector, which
	// slows the user side many times, only that there is one.
	if min := 0.3; b.Copy < min && !raceEnabled || b.Copy == 0 {
		t.Errorf("reading a cached file spent %.0f%% in kernel copies, %.0f%% in the kernel: %+v", 100*b.Copy, 100*b.KernelShare(), b)
	}
	checkProfile(t, s)
	rec.Close()
	if tracked == "" || forgotten != tracked {
		t.Errorf("temporary directory tracked %q, forgotten %q", tracked, forgotten)
	}
	if _, err := os.Stat(tracked); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory %s left: %v", tracked, err)
	}
}

func TestAttach(t *testing.T) {
	needPerf(t)
	ctx := context.Background()
	cmd := child(ctx, "spin")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		t.Fatalf("child said %q", l)
	}
	rec, err := Attach(ctx, cmd.Process.Pid, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	// A Ctrl-C at the terminal must not reach perf (a process group of
	// its own), or it starts writing files Close then leaves behind.
	if pg, err := syscall.Getpgid(rec.perf.Process.Pid); err != nil || pg == syscall.Getpgrp() {
		t.Errorf("perf's process group %d (%v) is the caller's", pg, err)
	}
	time.Sleep(100 * time.Millisecond) // not recorded: events are off
	t0, err := rec.Enable()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	t1, err := rec.Disable()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	s, err := rec.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := s.Window(t0, t1)
	if len(w.List) < 50 || len(w.List) < len(s.List)*9/10 {
		t.Fatalf("%d samples in the window [%d, %d], %d in all", len(w.List), t0, t1, len(s.List))
	}
	checkProfile(t, w)
}

// Cancelling the command kills perf and the child together, and Close
// leaves nothing.
func TestWrapCancel(t *testing.T) {
	needPerf(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := child(ctx, "hang")
	rec, err := Wrap(cmd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	cancel()
	cmd.Wait()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopping took %v", d)
	}
	pgid := cmd.Process.Pid
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("a process of the recording's group is still alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec.Close()
	if _, err := os.Stat(rec.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory left: %v", err)
	}
}

func TestProbeWithoutPerf(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Probe()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not installed") || !strings.Contains(err.Error(), "linux-perf") {
		t.Fatalf("Probe without perf on PATH: %v", err)
	}
	// A perf that fails is found out too.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "perf"), []byte("#!/bin/sh\necho 'perf_event_open: Operation not permitted' >&2\nexit 1\n"), 0o755)
	t.Setenv("PATH", dir)
	_, err = Probe()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Operation not permitted") {
		t.Fatalf("Probe with a failing perf: %v", err)
	}
}
