package fio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// needFio returns the fio on PATH, or skips the test.
func needFio(t *testing.T) Info {
	t.Helper()
	info, err := Find()
	if err != nil {
		t.Skipf("%v (to run this test: apt-get install -y fio)", err)
	}
	return info
}

// writeFile makes a file of n bytes of a repeating pattern in a temporary
// directory; it is in the page cache afterwards.
func writeFile(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ioUringUnavailable says whether err is fio failing to set up io_uring
// (kernel too old, or io_uring disabled by policy or seccomp).
func ioUringUnavailable(err error) bool {
	s := err.Error()
	return strings.Contains(s, "io_queue_init") || strings.Contains(s, "support io_uring")
}

func checkResult(t *testing.T, info Info, job Job, r *Result) {
	t.Helper()
	pass := job.PassBytes()
	if r.PassBytes != pass {
		t.Errorf("PassBytes %d, want %d", r.PassBytes, pass)
	}
	if job.MinTime == 0 && r.Bytes != pass || r.Bytes < pass {
		t.Errorf("Bytes %d, want %d (one pass)", r.Bytes, pass)
	}
	if r.Blocks != r.Bytes/int64(job.BlockSize) {
		t.Errorf("Blocks %d, want %d", r.Blocks, r.Bytes/int64(job.BlockSize))
	}
	if r.BytesPerS <= 0 || r.IOPS <= 0 || r.RuntimeNs <= 0 {
		t.Errorf("BytesPerS %g, IOPS %g, RuntimeNs %d: want > 0", r.BytesPerS, r.IOPS, r.RuntimeNs)
	}
	p := []int64{r.LatP50Ns, r.LatP90Ns, r.LatP99Ns, r.LatP999Ns, r.LatP9999Ns}
	for i := range p {
		if p[i] <= 0 || i > 0 && p[i] < p[i-1] {
			t.Errorf("latency percentiles %v: want positive and ordered", p)
			break
		}
	}
	if r.LatMaxNs <= 0 {
		t.Errorf("LatMaxNs %d", r.LatMaxNs)
	}
	if r.ProcessUserNs+r.ProcessSysNs <= 0 {
		t.Errorf("no process CPU time: %d + %d", r.ProcessUserNs, r.ProcessSysNs)
	}
	if len(r.Command) == 0 || r.Command[0] != info.Path {
		t.Errorf("Command %q does not start with %s", r.Command, info.Path)
	}
	if len(r.Warnings) > 0 {
		t.Logf("warnings: %q", r.Warnings)
	}
}

// TestRunTwins runs every twin, one pass over a warm 8 MiB file, with one
// and two workers and both patterns.
func TestRunTwins(t *testing.T) {
	info := needFio(t)
	const size = 8 << 20
	path := writeFile(t, size)
	for _, engine := range []string{"read", "pread", "readv", "mmap", "io_uring", "io_uring+sqpoll"} {
		for _, workers := range []int{1, 2} {
			for _, random := range []bool{false, true} {
				job := Job{Path: path, FileSize: size, Engine: engine, Random: random, BlockSize: 64 << 10,
					Workers: workers, QueueDepth: 8, Seed: 1}
				if engine == "io_uring+sqpoll" {
					job.Engine, job.SQPoll = "io_uring", true
				}
				t.Run(fmt.Sprintf("%s/w%d/random=%v", engine, workers, random), func(t *testing.T) {
					t.Parallel() // fio spends most of its ~0.3 s start and exit asleep
					r, err := Run(context.Background(), info, job)
					if err != nil && job.Engine == "io_uring" && ioUringUnavailable(err) {
						t.Skipf("fio cannot use io_uring here: %v", err)
					}
					if err != nil {
						t.Fatal(err)
					}
					checkResult(t, info, job, r)
				})
			}
		}
	}
}

// TestRunTimeBased checks that MinTime repeats passes for that long and
// that fio's own CPU figures come out.
func TestRunTimeBased(t *testing.T) {
	info := needFio(t)
	const size = 8 << 20
	job := Job{Path: writeFile(t, size), FileSize: size, Engine: "pread", BlockSize: 4096, Workers: 2,
		MinTime: 300 * time.Millisecond}
	r, err := Run(context.Background(), info, job)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, info, job, r)
	if r.RuntimeNs < 300e6 {
		t.Errorf("RuntimeNs %d, want at least 300 ms", r.RuntimeNs)
	}
	if r.Bytes < 2*job.PassBytes() {
		t.Errorf("Bytes %d: want several passes of %d in 300 ms", r.Bytes, job.PassBytes())
	}
	// Two jobs busy for the runtime each: fio's figure sums them (up to
	// twice the runtime; how much less depends on what else the machine
	// runs, so only the bounds are checked).
	fioCPU, procCPU := r.UserNs+r.SysNs, r.ProcessUserNs+r.ProcessSysNs
	if fioCPU <= 0 || fioCPU > 2*r.RuntimeNs+100e6 {
		t.Errorf("fio's CPU %d ns for two jobs of %d ns: want more than 0, at most both jobs' time", fioCPU, r.RuntimeNs)
	}
	if procCPU+20e6 < fioCPU {
		t.Errorf("process CPU %d ns below fio's per-job figure %d ns", procCPU, fioCPU)
	}
}

// TestRunMissingFile checks that a missing file is a clear error and is
// not created, by Run and by fio itself given Args.
func TestRunMissingFile(t *testing.T) {
	info := needFio(t)
	path := filepath.Join(t.TempDir(), "missing")
	job := Job{Path: path, FileSize: 1 << 20, Engine: "pread", BlockSize: 4096, Workers: 1}
	_, err := Run(context.Background(), info, job)
	if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Run on a missing file: %v; want an error naming %s", err, path)
	}
	args, err := job.Args()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(info.Path, args...).CombinedOutput()
	if err == nil {
		t.Errorf("fio %q succeeded on a missing file", args)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fio created %s (stat: %v); it printed %s", path, err, out)
	}
}

// TestRunShortFile checks that a file shorter than the job is an error
// and is left alone (fio would lay it out again, unlinking it first).
func TestRunShortFile(t *testing.T) {
	info := needFio(t)
	path := writeFile(t, 64<<10)
	job := Job{Path: path, FileSize: 1 << 20, Engine: "pread", BlockSize: 4096, Workers: 1}
	_, err := Run(context.Background(), info, job)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Run on a short file: %v; want an error naming %s", err, path)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 64<<10 {
		t.Errorf("file changed: %v %v", st, err)
	}
	if _, err := Run(context.Background(), info, Job{Path: filepath.Dir(path), FileSize: 1 << 20,
		Engine: "pread", BlockSize: 4096, Workers: 1}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Run on a directory: %v; want ErrNotRegular", err)
	}
}

// TestRunCancel checks that cancelling ctx kills fio and its job processes
// promptly.
func TestRunCancel(t *testing.T) {
	info := needFio(t)
	const size = 8 << 20
	path := writeFile(t, size)
	job := Job{Path: path, FileSize: size, Engine: "pread", BlockSize: 4096, Workers: 2, MinTime: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := Run(ctx, info, job)
	took := time.Since(start)
	t.Logf("Run returned %v after it started", took)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v; want context.Canceled", err)
	}
	if took > 5*time.Second {
		t.Errorf("Run took %v after cancel", took)
	}
	if pids := processesReading(path); len(pids) > 0 {
		t.Errorf("fio processes still reading %s: %v", path, pids)
	}

	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := Run(done, info, job); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled ctx: %v; want context.Canceled", err)
	}
}

// processesReading lists the processes whose command line names path.
// Processes killed a moment ago may linger as zombies for their parent to
// reap, so it retries for a second.
func processesReading(path string) []string {
	var pids []string
	for range 20 {
		pids = pids[:0]
		dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, d := range dirs {
			b, err := os.ReadFile(d)
			if err == nil && strings.Contains(string(b), path) {
				pids = append(pids, filepath.Base(filepath.Dir(d)))
			}
		}
		if len(pids) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pids
}

// TestRunCancelEscalates checks that a fio that ignores SIGTERM is killed
// after killGrace, and so are its children in sessions of their own (as
// fio's job processes are).
func TestRunCancelEscalates(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	fake := filepath.Join(dir, "fio")
	script := "#!/bin/sh\ntrap '' TERM\nsetsid sleep 30 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func(g time.Duration) { killGrace = g }(killGrace)
	killGrace = 200 * time.Millisecond
	path := writeFile(t, 1<<20)
	job := Job{Path: path, FileSize: 1 << 20, Engine: "pread", BlockSize: 4096, Workers: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Run(ctx, Info{Path: fake, Version: "fio-3.33"}, job); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: %v; want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Run took %v", took)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	// Killed: gone, or a zombie waiting for init to reap it.
	for range 20 {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("child %s of the fake fio still runs", pid)
}

// TestRunJobError checks that a job fio cannot run (O_DIRECT with a
// 1000-byte block: EINVAL) is an error naming fio and the file.
func TestRunJobError(t *testing.T) {
	info := needFio(t)
	path := writeFile(t, 1<<20)
	job := Job{Path: path, FileSize: 1 << 20, Engine: "pread", BlockSize: 1000, Workers: 1, Direct: true}
	_, err := Run(context.Background(), info, job)
	if err == nil || !strings.Contains(err.Error(), info.Path) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Run: %v; want an error naming %s and %s", err, info.Path, path)
	}
	t.Log(err)
}
