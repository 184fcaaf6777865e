package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/gen"
)

// The signal tests run the iopath command in a process of its own (this
// test binary, see TestMain), in a process group of its own, with TMPDIR
// set to an empty directory; they wait for a sign that it is in the middle
// of its work (a child process, a file, bytes read), send SIGINT to the
// group as Ctrl-C does, and check that it has exited within 1 s, with a
// non-zero status and one line saying it was interrupted, leaving no
// temporary file and no process of its group behind.

// stopGraceEnv sets stopGrace in the command's process (TestMain), so that
// a test can tell the second signal's stop from the grace's.
const stopGraceEnv = "IOPATH_TEST_STOP_GRACE"

// stopBound is the promise: every command stops within 1 s of the first
// signal.
const stopBound = time.Second

// cliProc is a running iopath command.
type cliProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	tmp    string // its TMPDIR
	errOut string // the file its stderr goes to
	// out is the read end of its stdout when that is a pipe
	// (startCLIPipe): nobody reads it unless the test does, a consumer
	// slower than any.
	out *os.File
	// alone, when set, makes interrupt signal the command alone rather
	// than its group (as Ctrl-C does): its children must then be stopped
	// by the command itself.
	alone  bool
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// startCLIProc starts iopath with args, stdout going to stdout (nil: a
// file), in a new process group.
func startCLIProc(t *testing.T, stdout *os.File, env []string, args ...string) *cliProc {
	t.Helper()
	dir := t.TempDir()
	p := &cliProc{t: t, tmp: filepath.Join(dir, "tmp"), errOut: filepath.Join(dir, "stderr"), exited: make(chan struct{})}
	if err := os.Mkdir(p.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	errFile, err := os.Create(p.errOut)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	if stdout == nil {
		f, err := os.Create(filepath.Join(dir, "stdout"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		stdout = f
	}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(append(os.Environ(), cliEnv+"=1", "TMPDIR="+p.tmp), env...)
	p.cmd.Stdout, p.cmd.Stderr = stdout, errFile // files: Wait copies nothing
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	})
	return p
}

// startCLIPipe is startCLIProc with stdout on a pipe, whose read end is
// p.out.
func startCLIPipe(t *testing.T, env []string, args ...string) *cliProc {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() }) // after the command is killed (cleanups run last first)
	p := startCLIProc(t, w, env, args...)
	w.Close()
	p.out = r
	return p
}

func (p *cliProc) stderr() string {
	b, _ := os.ReadFile(p.errOut)
	return string(b)
}

// stdout reads what the command wrote to its pipe (startCLIPipe), once
// it has exited.
func (p *cliProc) stdout() string {
	p.t.Helper()
	select {
	case <-p.exited:
	default:
		p.t.Fatal("stdout read before the command exited")
	}
	b, _ := io.ReadAll(p.out)
	return string(b)
}

// waitFor waits until cond holds (the command is in the middle of its
// work), failing if the command exits first.
func (p *cliProc) waitFor(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case <-p.exited:
			p.t.Fatalf("exited (%v) before %s: %s", p.err, what, p.stderr())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no sign of %s after a minute: %s", what, p.stderr())
		}
	}
}

// interrupt sends SIGINT to the command's group, as Ctrl-C does (to the
// command alone if p.alone), and waits for the command to exit; again, it
// sends SIGINT again and again until then (as someone who presses Ctrl-C
// twice: the Go runtime merges a signal that comes before it has taken
// the last one). It returns how long the command took to exit after the
// first signal.
func (p *cliProc) interrupt(again bool) time.Duration {
	p.t.Helper()
	to := -p.cmd.Process.Pid
	if p.alone {
		to = p.cmd.Process.Pid
	}
	t0 := time.Now()
	if err := syscall.Kill(to, syscall.SIGINT); err != nil {
		p.t.Fatal(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case <-p.exited:
			return time.Since(t0)
		case <-tick.C:
			if again {
				syscall.Kill(to, syscall.SIGINT)
			}
		case <-timeout:
			p.t.Fatalf("still running 30 s after SIGINT: %s", p.stderr())
		}
	}
}

// checkInterrupted checks what an interrupted command must leave: it
// stopped within stopBound (took), exited 130, said so in one last line
// (with want in it), and left nothing in its TMPDIR or in dirs, and no
// process of its group.
func (p *cliProc) checkInterrupted(took time.Duration, want string, dirs ...string) {
	p.t.Helper()
	p.checkStopped(took, want, dirs...)
	errOut := p.stderr()
	if code := p.cmd.ProcessState.ExitCode(); code != 130 {
		p.t.Errorf("exit status %d (%v), want 130", code, p.err)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasSuffix(errOut, "\n") || !strings.HasPrefix(last, "iopath: ") || !strings.Contains(last, want) {
		p.t.Errorf("stderr %q: want a last line \"iopath: ...%s...\"", errOut, want)
	}
}

// checkStopped is checkInterrupted for a command whose way to stop is a
// signal (net serve: it drains, reports and exits 0): it stopped within
// stopBound, said want on stderr and neither "context canceled" nor a
// goroutine trace, and left nothing in its TMPDIR or in dirs, and no
// process of its group.
func (p *cliProc) checkStopped(took time.Duration, want string, dirs ...string) {
	p.t.Helper()
	errOut := p.stderr()
	p.t.Logf("exited %v after SIGINT; stderr %q", took.Round(time.Millisecond), errOut)
	if took > stopBound {
		p.t.Errorf("exited %v after SIGINT, want within %v", took.Round(time.Millisecond), stopBound)
	}
	if !strings.Contains(errOut, want) {
		p.t.Errorf("stderr %q does not say %q", errOut, want)
	}
	if strings.Contains(errOut, "context canceled") || strings.Contains(errOut, "goroutine ") {
		p.t.Errorf("stderr %q", errOut)
	}
	for _, d := range append([]string{p.tmp}, dirs...) {
		if left := listTree(d); len(left) > 0 {
			p.t.Errorf("left in %s: %v", d, left)
		}
	}
	// The group's other processes (children) must be gone too; they are
	// killed when the command stops, but dying takes a moment. A command
	// signalled alone must have stopped its children before it exited.
	deadline := time.Now().Add(stopBound)
	if p.alone {
		deadline = time.Now()
	}
	for {
		left := groupMembers(p.cmd.Process.Pid)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			p.t.Errorf("processes of the group left running: %v", left)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listTree lists every file and directory under dir (not dir itself).
func listTree(dir string) []string {
	var names []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && path != dir {
			names = append(names, path)
		}
		if len(names) > 10 {
			return filepath.SkipAll
		}
		return nil
	})
	return names
}

// groupMembers lists the live (not zombie) processes of process group
// pgid, each as "pid (comm)".
func groupMembers(pgid int) []string {
	var left []string
	for _, pid := range groupPIDs(pgid) {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		left = append(left, fmt.Sprintf("%d (%s)", pid, bytes.TrimSpace(comm)))
	}
	return left
}

// groupPIDs lists the live (not zombie) processes of process group pgid.
func groupPIDs(pgid int) []int {
	var pids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After "pid (comm)": state ppid pgrp ...
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		if pid, err := strconv.Atoi(strings.Fields(string(b[:i]))[0]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inPipeWrite says whether a thread of pid is blocked writing to a pipe
// (a full one: its reader does not read).
func inPipeWrite(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil && strings.HasSuffix(string(b), "pipe_write") {
			return true
		}
	}
	return false
}

// hasChild says whether pid has a child process (a benchmark run started).
func hasChild(pid int) bool { return len(childrenOf(pid)) > 0 }

// hasSocket says whether pid has a socket open.
func hasSocket(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			return true
		}
	}
	return false
}

// readBytes is how much pid has read (rchar: read(2), pread(2) and the
// like, from any file), -1 if unknown.
func readBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

func signalTestFile(t *testing.T, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := gen.File(context.Background(), path, size, gen.Options{}); err != nil {
		t.Fatal(err)
	}
	return path
}

func signalTestTree(t *testing.T, files int, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	if _, err := gen.Tree(context.Background(), dir, gen.TreeOptions{Files: files, Size: gen.FixedSize(size)}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestInterruptBench: bench with no FILE makes a temporary file and runs
// children; SIGINT while they run removes the file and ends the children.
func TestInterruptBench(t *testing.T) {
	p := startCLIProc(t, nil, nil, "bench", "--size", "32MiB", "--runs", "100", "--cache", "warm",
		"--engines", "pread,mmap", "--min-time", "200ms")
	p.waitFor("a benchmark child", func() bool { return hasChild(p.cmd.Process.Pid) })
	p.checkInterrupted(p.interrupt(false), "interrupted")
}

// TestInterruptBenchTree: bench --tree with no DIR makes a temporary tree.
func TestInterruptBenchTree(t *testing.T) {
	p := startCLIProc(t, nil, nil, "bench", "--tree", "--files", "200", "--runs", "100", "--cache", "warm",
		"--engines", "readfile,raw", "--min-time", "200ms")
	p.waitFor("a benchmark child", func() bool { return hasChild(p.cmd.Process.Pid) })
	p.checkInterrupted(p.interrupt(false), "interrupted")
}

// TestInterruptCat: cat writing to a pipe whose reader reads a little,
// slowly, or nothing at all, through each kind of engine.
func TestInterruptCat(t *testing.T) {
	path := signalTestFile(t, 32<<20)
	for _, engine := range []string{"pread", "mmap", "io_uring"} {
		for _, reader := range []string{"stalled", "slow"} {
			t.Run(engine+"/"+reader, func(t *testing.T) {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				p := startCLIProc(t, w, nil, "cat", "-e", engine, "--workers", "2", "--bs", "4k", "--qd", "128", path)
				w.Close()
				var first [1]byte
				if _, err := io.ReadFull(r, first[:]); err != nil { // cat is writing
					t.Fatalf("read: %v: %s", err, p.stderr())
				}
				p.waitFor("cat blocked in write(2)", func() bool { return inPipeWrite(p.cmd.Process.Pid) })
				if reader == "slow" {
					stop := make(chan struct{})
					defer close(stop)
					go func() {
						buf := make([]byte, 512)
						for {
							select {
							case <-stop:
								return
							case <-time.After(20 * time.Millisecond):
							}
							if _, err := r.Read(buf); err != nil {
								return
							}
						}
					}()
				}
				p.checkInterrupted(p.interrupt(false), "interrupted")
			})
		}
	}
}

// TestInterruptGen: gen FILE removes the partial file.
func TestInterruptGen(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	p := startCLIProc(t, nil, nil, "gen", out, "--size", "2GiB")
	p.waitFor("data written", func() bool { return len(listTree(dir)) > 0 })
	p.checkInterrupted(p.interrupt(false), "interrupted", dir)
}

// TestInterruptGenTree: gen --tree stops leaving only whole files.
func TestInterruptGenTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	p := startCLIProc(t, nil, nil, "gen", "--tree", dir, "--files", "1000000", "--size", "1KiB")
	p.waitFor("files written", func() bool { return len(listTree(dir)) > 10 })
	p.checkInterrupted(p.interrupt(false), "interrupted")
}

// TestInterruptPack: pack leaves no partial archive and no temporary file.
func TestInterruptPack(t *testing.T) {
	tree := signalTestTree(t, 64, 1<<20)
	outDir := t.TempDir()
	p := startCLIProc(t, nil, nil, "pack", tree, "-o", filepath.Join(outDir, "out.tar.zst"), "--level", "better")
	p.waitFor("the archive started", func() bool { return len(listTree(outDir)) > 0 })
	p.checkInterrupted(p.interrupt(false), "interrupted", outDir)
}

// TestInterruptAdvise: advise stops in the middle of its trial.
func TestInterruptAdvise(t *testing.T) {
	path := signalTestFile(t, 64<<20)
	p := startCLIProc(t, nil, nil, "advise", "--budget", "1m", path)
	p.waitFor("the trial reading", func() bool { return readBytes(p.cmd.Process.Pid) > 64<<20 })
	p.checkInterrupted(p.interrupt(false), "interrupted")
}

// TestInterruptTune: tune stops in the middle of its trial, removes its
// trial files and writes no profile.
func TestInterruptTune(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(t.TempDir(), "p.json")
	p := startCLIProc(t, nil, []string{"IOPATH_PROFILE=" + prof}, "tune", "--time", "1m", dir)
	p.waitFor("the trial reading", func() bool { return readBytes(p.cmd.Process.Pid) > 400<<20 })
	p.checkInterrupted(p.interrupt(false), "tune: interrupted; the profile is unchanged", dir)
	if _, err := os.Stat(prof); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a profile was written: %v", err)
	}
}

// hangEnv adds the command "test-hang FILE" to the test binary acting as
// iopath: it writes FILE's temporary file (registered with cleanups, as
// writeFileAtomic does), says so on stderr, and then ignores its context
// for good: a command that cannot stop by itself, as one stuck in a system
// call would be.
const hangEnv = "IOPATH_TEST_HANG"

func init() {
	if os.Getenv(cliEnv) != "1" || os.Getenv(hangEnv) != "1" {
		return
	}
	subcommands = append(subcommands, func(_, stderr io.Writer) *cobra.Command {
		return &cobra.Command{
			Use:  "test-hang FILE",
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				tmp := args[0] + ".tmp"
				if err := os.WriteFile(tmp, []byte("half"), 0o644); err != nil {
					return err
				}
				defer cleanups.removeOnExit(tmp)()
				fmt.Fprintln(stderr, "hanging")
				select {}
			},
		}
	})
}

// startHang starts test-hang and waits until it hangs; it returns its
// temporary file's directory.
func startHang(t *testing.T, env ...string) (*cliProc, string) {
	dir := t.TempDir()
	p := startCLIProc(t, nil, append(env, hangEnv+"=1"), "test-hang", filepath.Join(dir, "out"))
	p.waitFor("the hang", func() bool { return strings.Contains(p.stderr(), "hanging\n") })
	return p, dir
}

// TestInterruptTwice: a second signal right after the first ends the
// command at once, even one that cannot stop by itself, with its
// temporary files removed; and a command that stops by itself is left to
// do so.
func TestInterruptTwice(t *testing.T) {
	env := []string{stopGraceEnv + "=1m"} // only the second signal can stop it in time
	t.Run("hang", func(t *testing.T) {
		p, dir := startHang(t, env...)
		p.checkInterrupted(p.interrupt(true), "test-hang: interrupted (stopped at once on a second signal)", dir)
	})
	t.Run("bench", func(t *testing.T) {
		p := startCLIProc(t, nil, env, "bench", "--size", "32MiB", "--runs", "100", "--cache", "warm",
			"--engines", "pread", "--min-time", "200ms")
		p.waitFor("a benchmark child", func() bool { return hasChild(p.cmd.Process.Pid) })
		p.checkInterrupted(p.interrupt(true), "interrupted")
	})
	t.Run("pack", func(t *testing.T) {
		tree := signalTestTree(t, 64, 1<<20)
		outDir := t.TempDir()
		p := startCLIProc(t, nil, env, "pack", tree, "-o", filepath.Join(outDir, "out.tar.zst"), "--level", "better")
		p.waitFor("the archive started", func() bool { return len(listTree(outDir)) > 0 })
		p.checkInterrupted(p.interrupt(true), "interrupted", outDir)
	})
}

// TestInterruptGrace: a command that cannot stop by itself is ended
// stopGrace after the first signal, its temporary files removed. (A grace
// of 300ms here, so that a busy machine's delays cannot take the test
// past the 1 s bound; the real one, 700ms, leaves the commands more time
// to clean up by themselves.)
func TestInterruptGrace(t *testing.T) {
	p, dir := startHang(t, stopGraceEnv+"=300ms")
	p.checkInterrupted(p.interrupt(false), "test-hang: interrupted (did not stop within 300ms; stopped at once)", dir)
}

// TestInterruptSIGTERM: SIGTERM stops like SIGINT, with status 143.
func TestInterruptSIGTERM(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	p := startCLIProc(t, nil, nil, "gen", out, "--size", "2GiB")
	p.waitFor("data written", func() bool { return len(listTree(dir)) > 0 })
	t0 := time.Now()
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	<-p.exited
	if took := time.Since(t0); took > stopBound {
		t.Errorf("exited %v after SIGTERM", took)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("exit status %d, want 143 (128+SIGTERM)", code)
	}
	if errOut := p.stderr(); !strings.Contains(errOut, "interrupted") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q: want one line saying interrupted", errOut)
	}
}

// newTestProcess is mainCode's process state with its exit caught: exit
// sends the status on the returned channel and ends the calling goroutine,
// as os.Exit would end the process.
func newTestProcess(name string) (*process, context.Context, *syncBuffer, <-chan int) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stderr := &syncBuffer{}
	exited := make(chan int, 1)
	p := &process{name: name, stderr: stderr, cancel: cancel, done: make(chan struct{}),
		exit: func(code int) { exited <- code; runtime.Goexit() }}
	return p, ctx, stderr, exited
}

// TestSecondSignalCleansUp: the first signal cancels the command's context
// with the interrupt as its cause; a second ends the process at once,
// after removing the temporary files the commands registered.
func TestSecondSignalCleansUp(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), ".out.123.tmp")
	if err := os.WriteFile(tmp, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	forget := cleanups.removeOnExit(tmp)
	defer forget()
	p, ctx, stderr, exited := newTestProcess("pack")
	sigs := make(chan os.Signal, 2)
	go p.watch(sigs)
	sigs <- syscall.SIGINT
	<-ctx.Done()
	var cause interrupted
	if !errors.As(context.Cause(ctx), &cause) || cause.sig != syscall.SIGINT {
		t.Errorf("cause %v, want the interrupt", context.Cause(ctx))
	}
	time.Sleep(signalEcho) // a person's second Ctrl-C
	sigs <- syscall.SIGINT
	select {
	case code := <-exited:
		if code != 130 {
			t.Errorf("exit status %d, want 130", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not end the process")
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
	if want := "iopath: pack: interrupted (stopped at once on a second signal)\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// TestSignalEcho: one signal reported twice at once (see signalEcho) is
// not a second signal; the command then has stopGrace to stop.
func TestSignalEcho(t *testing.T) {
	old := stopGrace
	stopGrace = 300 * time.Millisecond
	defer func() { stopGrace = old }()
	p, _, stderr, exited := newTestProcess("bench")
	sigs := make(chan os.Signal, 2)
	sigs <- syscall.SIGTERM
	sigs <- syscall.SIGTERM
	go p.watch(sigs)
	select {
	case code := <-exited:
		if code != 143 {
			t.Errorf("exit status %d, want 143", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stopGrace did not end the process")
	}
	if want := "iopath: bench: interrupted (did not stop within 300ms; stopped at once)\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// TestFinishAfterInterrupt: a command that returns after an interrupt
// exits 128+N, and a cancellation from anywhere below says "interrupted".
func TestFinishAfterInterrupt(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
		code int
	}{
		{context.Canceled, "iopath: gen: interrupted\n", 130},
		{fmt.Errorf("cat: %w", context.Canceled), "iopath: cat: interrupted\n", 130},
		{&fs.PathError{Op: "gen", Path: "/x/out", Err: fmt.Errorf("%w (wrote 2MiB of 1GiB; partial file removed)", context.Canceled)},
			"iopath: gen /x/out: interrupted (wrote 2MiB of 1GiB; partial file removed)\n", 130},
		{errors.New("bench: interrupted; the results above are incomplete"), "iopath: bench: interrupted; the results above are incomplete\n", 130},
		{nil, "", 0}, // a server that drained
	} {
		p, _, stderr, _ := newTestProcess("gen")
		if code := p.finish(tc.err, interrupted{syscall.SIGINT}); code != tc.code || stderr.String() != tc.want {
			t.Errorf("%v: status %d, stderr %q; want %d, %q", tc.err, code, stderr.String(), tc.code, tc.want)
		}
	}
	// Without an interrupt a cancellation is reported as it is.
	p, _, stderr, _ := newTestProcess("gen")
	if code := p.finish(fmt.Errorf("gen: %w", context.Canceled), interrupted{}); code != 1 || stderr.String() != "iopath: gen: context canceled\n" {
		t.Errorf("status %d, stderr %q", code, stderr.String())
	}
}

// TestErrorIsOneLine: whatever an error carries, iopath's last line is one
// line with no terminal escapes.
func TestErrorIsOneLine(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"open a\nb: no such file", `iopath: open a\nb: no such file`},
		{"open \x1b[31mred\x1b[0m: denied", `iopath: open \x1b[31mred\x1b[0m: denied`},
		{"bad \xff byte\r", `iopath: bad \xff byte\r`},
		{"naïve ünïcode — fine", "iopath: naïve ünïcode — fine"},
		{`quoted "a\nb" stays`, `iopath: quoted "a\nb" stays`},
	} {
		var stderr bytes.Buffer
		exitCode(errors.New(tc.msg), &stderr)
		if got := stderr.String(); got != tc.want+"\n" {
			t.Errorf("%q: printed %q, want %q", tc.msg, got, tc.want+"\n")
		}
	}
}

// descendants lists the live processes below pid (children, theirs, ...),
// whatever their process group or session (fio's jobs have their own).
func descendants(pid int) map[int]string {
	parent := map[int]int{}
	comm := map[int]string{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		fields := strings.Fields(string(b[i+1:]))
		if i < 0 || len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		parent[p], _ = strconv.Atoi(fields[1])
		comm[p] = string(b[:i+1])
	}
	below := map[int]string{}
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				below[p] = comm[p]
				break
			}
		}
	}
	return below
}

// TestBenchChildrenDieWithIt: bench's benchmark child never outlives a
// bench that dies without cleaning up (SIGKILL; a second Ctrl-C exits
// the same way). (fio gets SIGTERM then, and usually stops its job
// processes on it, but not always on a starved machine: a job was seen
// reading to the end of its runtime. TestInterruptBenchFio covers the
// path that matters, Ctrl-C.)
func TestBenchChildrenDieWithIt(t *testing.T) {
	path := signalTestFile(t, 8<<20)
	p := startCLIProc(t, nil, nil, "bench", path, "--runs", "1", "--cache", "warm", "--engines", "pread", "--min-time", "1m")
	var kids map[int]string
	p.waitFor("a benchmark child", func() bool {
		kids = descendants(p.cmd.Process.Pid)
		return len(kids) > 0
	})
	p.cmd.Process.Kill()
	<-p.exited
	checkGone(t, kids, time.Now().Add(2*time.Second))
}

// checkGone checks that the processes procs are gone by deadline.
func checkGone(t *testing.T, procs map[int]string, deadline time.Time) {
	t.Helper()
	for pid, c := range procs {
		for alive(pid) {
			if time.Now().After(deadline) {
				st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				t.Errorf("%s outlived the bench: %s", c, st)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestInterruptBenchFio: SIGINT while fio runs (to the process group, as
// Ctrl-C sends it, or to bench alone, as timeout -s INT does) ends bench,
// fio and fio's job processes (in sessions of their own, out of the
// group's reach) within 1 s.
func TestInterruptBenchFio(t *testing.T) {
	if _, err := exec.LookPath("fio"); err != nil {
		t.Skip("fio is not installed")
	}
	path := signalTestFile(t, 8<<20)
	for _, group := range []bool{true, false} {
		t.Run(fmt.Sprintf("group=%v", group), func(t *testing.T) {
			// Our own pread run first, then fio's, 2s each: fio must
			// stop long before its run would end.
			p := startCLIProc(t, nil, nil, "bench", path, "--runs", "1", "--cache", "warm", "--engines", "pread",
				"--fio", "--min-time", "2s")
			var kids map[int]string
			p.waitFor("fio's job reading", func() bool {
				kids = descendants(p.cmd.Process.Pid)
				n, reading := 0, false
				for pid, c := range kids {
					if strings.Contains(c, "(fio)") {
						n++
						reading = reading || readBytes(pid) > 4<<20
					}
				}
				return n >= 2 && reading
			})
			target := p.cmd.Process.Pid
			if group {
				target = -target
			}
			t0 := time.Now()
			syscall.Kill(target, syscall.SIGINT)
			<-p.exited
			if took := time.Since(t0); took > stopBound {
				t.Errorf("bench exited %v after SIGINT", took)
			}
			if code := p.cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit status %d, want 130: %s", code, p.stderr())
			}
			checkGone(t, kids, t0.Add(stopBound))
		})
	}
}

func TestCommandName(t *testing.T) {
	for args, want := range map[string]string{
		"bench --tree x":          "bench",
		"net serve --addr :0":     "net serve",
		"cat -e io_uring f":       "cat",
		"":                        "iopath",
		"--version":               "iopath",
		"no-such-command and-arg": "iopath",
	} {
		if got := commandName(strings.Fields(args)); got != want {
			t.Errorf("commandName(%q) = %q, want %q", args, got, want)
		}
	}
}

// TestLateSignal: a command that failed because a child died of the
// Ctrl-C (which reaches the whole group) ends as interrupted, when the
// signal reaches this process's watcher just after the failure.
func TestLateSignal(t *testing.T) {
	p, ctx, stderr, _ := newTestProcess("net bench")
	sigs := make(chan os.Signal, 2)
	go p.watch(sigs)
	failed := errors.New("load generator: exit status 130")
	go func() {
		time.Sleep(signalLate / 5)
		sigs <- syscall.SIGINT
	}()
	awaitLateSignal(ctx, failed)
	close(p.done)
	var cause interrupted
	if !errors.As(context.Cause(ctx), &cause) {
		t.Fatalf("cause %v: the signal after the failure was not seen", context.Cause(ctx))
	}
	if code := p.finish(failed, cause); code != 130 {
		t.Errorf("exit %d, want 130; stderr %q", code, stderr.String())
	}
	// Without a signal, a failure waits signalLate at most and stays one.
	ctx2, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	awaitLateSignal(ctx2, failed)
	if d := time.Since(t0); d < signalLate || d > signalLate+time.Second {
		t.Errorf("waited %v for a signal that did not come, want %v", d, signalLate)
	}
}
