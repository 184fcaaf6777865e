package fio

import (
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
	if r.Write != job.Write {
		t.Errorf("Result.Write %v for a job with Write %v", r.Write, job.Write)
	}
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
					if cerr := info.Check(job); cerr != nil {
						// fio before 3.42: mmap with several workers.
						if err == nil || !strings.Contains(err.Error(), cerr.Error()) {
							t.Fatalf("Run: %v; want Check's error %v", err, cerr)
						}
						return
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

// writeTwinCase is one write twin of TestRunWriteTwins.
type writeTwinCase struct {
	name string
	job  Job
}

// writeTwinCases are every write twin, once per sync mode and with
// O_DIRECT, on a 4 MiB file of 128 KiB blocks.
func writeTwinCases() []writeTwinCase {
	const size = 4 << 20
	var cases []writeTwinCase
	for _, engine := range []string{"write", "pwrite", "pwritev", "pwritev+4", "mmap", "io_uring", "io_uring+sqpoll"} {
		for _, sync := range []string{"none", "end", "every:4", "dsync", "direct"} {
			job := Job{FileSize: size, Engine: engine, Write: true, BlockSize: 128 << 10, Workers: 1,
				QueueDepth: 8, Seed: 1}
			switch engine {
			case "pwritev+4":
				job.Engine, job.Vectors = "pwritev", 4
			case "io_uring+sqpoll":
				job.Engine, job.SQPoll = "io_uring", true
			}
			switch sync {
			case "end":
				job.Sync = SyncEnd
			case "every:4":
				job.Sync, job.SyncEvery = SyncEvery, 4
			case "dsync":
				job.Sync = SyncDSync
			case "direct":
				if engine == "mmap" {
					continue // not applicable: Args says so (TestArgsErrors)
				}
				job.Direct = true
			}
			if job.SQPoll && sync != "none" && sync != "every:4" {
				continue // the polling thread changes nothing else
			}
			cases = append(cases, writeTwinCase{engine + "/" + sync, job})
		}
	}
	// Two workers, the random pattern.
	cases = append(cases,
		writeTwinCase{"pwrite/rand/w2/every:4", Job{FileSize: size, Engine: "pwrite", Write: true, Random: true,
			BlockSize: 64 << 10, Workers: 2, Sync: SyncEvery, SyncEvery: 4, Seed: 5}},
		writeTwinCase{"io_uring/rand/w2/direct", Job{FileSize: size, Engine: "io_uring", Write: true, Random: true,
			BlockSize: 64 << 10, Workers: 2, QueueDepth: 4, Direct: true, Seed: 5}},
	)
	return cases
}

// TestRunWriteTwins runs every write twin for one pass over a 4 MiB
// file of its own: fio writes the whole file, which keeps its size and
// inode, and no other file appears beside it.
func TestRunWriteTwins(t *testing.T) {
	info := needFio(t)
	for _, c := range writeTwinCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // dsync and every:4 wait for the disk
			job := c.job
			job.Path = writeFile(t, int(job.FileSize))
			before := fileID(t, job.Path)
			r, err := Run(context.Background(), info, job)
			if err != nil && job.Engine == "io_uring" && ioUringUnavailable(err) {
				t.Skipf("fio cannot use io_uring here: %v", err)
			}
			if err != nil && job.Direct && strings.Contains(err.Error(), "error 22") {
				t.Skipf("the filesystem of %s refuses O_DIRECT: %v", job.Path, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, info, job, r)
			if r.Bytes != job.FileSize {
				t.Errorf("Bytes %d, want the file's %d", r.Bytes, job.FileSize)
			}
			if after := fileID(t, job.Path); after != before {
				t.Errorf("file changed identity or size: %+v, was %+v", after, before)
			}
			if names := dirNames(t, filepath.Dir(job.Path)); len(names) != 1 || names[0] != filepath.Base(job.Path) {
				t.Errorf("directory holds %q, want only %s", names, filepath.Base(job.Path))
			}
			if unchanged := samePattern(t, job.Path); unchanged > job.FileSize/2 {
				t.Errorf("%d of %d bytes still hold writeFile's pattern: fio did not write the file", unchanged, job.FileSize)
			}
			// fio times the syncs of --fdatasync=N (msyncs for mmap), not
			// its end fsync. A synchronous engine makes one after every
			// N-th write but the last: 128 blocks, N=4: 31. io_uring makes
			// more: one for each free slot until the first completes.
			blocks := job.FileSize / int64(job.BlockSize) / int64(job.Workers)
			var want int64
			switch {
			case job.Sync == SyncEvery:
				want = (blocks - 1) / int64(job.SyncEvery) * int64(job.Workers)
			case job.Sync == SyncDSync && job.Engine == "mmap":
				want = blocks - 1
			}
			if r.SyncCount < want || job.Engine != "io_uring" && r.SyncCount != want {
				t.Errorf("SyncCount %d, want %d", r.SyncCount, want)
			}
			if r.SyncCount > 0 && (r.SyncLatP50Ns <= 0 || r.SyncLatP99Ns < r.SyncLatP50Ns ||
				r.SyncLatMaxNs <= 0 || r.SyncLatMeanNs <= 0) {
				t.Errorf("sync latency: mean %d P50 %d P99 %d max %d", r.SyncLatMeanNs, r.SyncLatP50Ns,
					r.SyncLatP99Ns, r.SyncLatMaxNs)
			}
		})
	}
}

// TestRunWriteEndOnePass checks that a write twin with SyncEnd makes one
// pass whatever MinTime says (fio's end fsync comes once per run), and
// that one with another mode repeats passes for MinTime.
func TestRunWriteEndOnePass(t *testing.T) {
	info := needFio(t)
	const size = 4 << 20
	for _, sync := range []SyncMode{SyncEnd, SyncNone} {
		t.Run(sync.String(), func(t *testing.T) {
			job := Job{Path: writeFile(t, size), FileSize: size, Engine: "pwrite", Write: true, BlockSize: 64 << 10,
				Workers: 1, Sync: sync, MinTime: 300 * time.Millisecond}
			r, err := Run(context.Background(), info, job)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, info, job, r)
			if sync == SyncEnd && r.Bytes != size || sync != SyncEnd && r.Bytes < 2*size {
				t.Errorf("sync %v: %d bytes, %.1f passes", sync, r.Bytes, float64(r.Bytes)/size)
			}
		})
	}
}

// fileIdentity is what a write twin must not change about its file.
type fileIdentity struct {
	dev, ino uint64
	size     int64
}

func fileID(t *testing.T, path string) fileIdentity {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	return fileIdentity{dev: uint64(sys.Dev), ino: sys.Ino, size: st.Size()}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// samePattern counts the bytes of path that still hold writeFile's
// pattern.
func samePattern(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for i := range b {
		if b[i] == byte(i*7+i>>12) {
			n++
		}
	}
	return n
}

// TestRunWriteFileChecks checks that a write twin runs only on a regular
// file of exactly the job's size, and that fio itself, given Args, never
// creates a missing file and never unlinks a short one (it writes past
// its end instead: --create_on_open=1).
func TestRunWriteFileChecks(t *testing.T) {
	info := needFio(t)
	const size = 1 << 20
	job := Job{FileSize: size, Engine: "pwrite", Write: true, BlockSize: 4096, Workers: 1}
	for _, n := range []int{size / 2, size + 4096} {
		j := job
		j.Path = writeFile(t, n)
		before := fileID(t, j.Path)
		_, err := Run(context.Background(), info, j)
		if err == nil || !strings.Contains(err.Error(), j.Path) || !strings.Contains(err.Error(), "not the 1048576") {
			t.Errorf("Run on a %d-byte file: %v; want an error naming %s and the size", n, err, j.Path)
		}
		if after := fileID(t, j.Path); after != before || samePattern(t, j.Path) != int64(n) {
			t.Errorf("%d-byte file changed: %+v, was %+v", n, after, before)
		}
	}
	dir := t.TempDir()
	j := job
	j.Path = dir
	if _, err := Run(context.Background(), info, j); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "write "+dir) {
		t.Errorf("Run on a directory: %v; want ErrNotRegular for write", err)
	}

	// fio itself, given Args.
	j.Path = filepath.Join(dir, "missing")
	if _, err := Run(context.Background(), info, j); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Run on a missing file: %v", err)
	}
	args, err := j.Args()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(info.Path, args...).CombinedOutput(); err == nil {
		t.Errorf("fio %q succeeded on a missing file: %s", args, out)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("fio created %q", names)
	}
	j.Path = writeFile(t, size/2)
	before := fileID(t, j.Path)
	if args, err = j.Args(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(info.Path, args...).CombinedOutput(); err != nil {
		t.Errorf("fio %q on a short file: %v: %s", args, err, out)
	}
	after := fileID(t, j.Path)
	if after.dev != before.dev || after.ino != before.ino {
		t.Errorf("fio replaced the short file: %+v, was %+v", after, before)
	}
	if after.size != size {
		t.Errorf("fio left the short file %d bytes long; want it written to %d", after.size, size)
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
