package netbench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/perf/perftest"
)

// The tests of --perf run the real thing: the iopath command, built once,
// as the server and load-generator children, and perf attached to the
// servers.

var iopathBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if iopathBuild.dir != "" {
		os.RemoveAll(iopathBuild.dir)
	}
	os.Exit(code)
}

// iopathCommand builds cmd/iopath (once) and returns Options.Command for
// it.
func iopathCommand(t *testing.T) func(args ...string) *exec.Cmd {
	t.Helper()
	b := &iopathBuild
	b.once.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if b.dir, b.err = os.MkdirTemp("", "netbench-test-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "iopath")
		out, err := exec.Command(goCmd, "build", "-o", b.path, "github.com/iopath/iopath/cmd/iopath").CombinedOutput()
		if err != nil {
			b.err = errors.New(err.Error() + ": " + string(out))
		}
	})
	if b.err != nil {
		t.Fatalf("building iopath: %v", b.err)
	}
	return func(args ...string) *exec.Cmd { return exec.Command(b.path, args...) }
}

// tracker records what Bench tracks (TrackTemp, TrackTempDir), and
// checks that all of it is gone and forgotten.
type tracker struct {
	mu      sync.Mutex
	paths   []string
	tracked map[string]bool
}

func (tr *tracker) track(p string) func() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.tracked == nil {
		tr.tracked = map[string]bool{}
	}
	tr.paths = append(tr.paths, p)
	tr.tracked[p] = true
	return func() {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		delete(tr.tracked, p)
	}
}

// check fails t if something tracked is still there or still tracked;
// dirs says how many perf recordings' directories at least were made.
func (tr *tracker) check(t *testing.T, dirs int) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, p := range tr.paths {
		if strings.HasPrefix(filepath.Base(p), "iopath-perf-") {
			n++
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left behind (%v)", p, err)
		}
	}
	for p := range tr.tracked {
		t.Errorf("%s is still tracked", p)
	}
	if n < dirs {
		t.Errorf("%d perf recordings' directories tracked, want at least %d: %q", n, dirs, tr.paths)
	}
}

// checkNoPerf fails t if a perf process of this one is left, waiting
// a little for one being reaped.
func checkNoPerf(t *testing.T) {
	t.Helper()
	var left []int
	for try := 0; try < 20; try++ {
		if left = testenv.ChildrenNamed("perf"); len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("perf processes left: %v", left)
}

// noTemps fails t if dir holds a temporary file (a profile half written).
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left in %s: %s", dir, e.Name())
		}
	}
}

func perfOptions(t *testing.T, tr *tracker, engines ...string) Options {
	return Options{
		Engines: engines, Conns: []int{10}, Sizes: []int{64}, Modes: []string{"pingpong"},
		Duration: 200 * time.Millisecond, Warmup: 0, Runs: 2,
		Command: iopathCommand(t), Log: t.Logf,
		PerfDir: filepath.Join(t.TempDir(), "perf"), TrackTemp: tr.track, TrackTempDir: tr.track,
	}
}

// TestBenchPerf: with PerfDir, every run of epoll and io_uring has a
// pprof profile of the server with kernel and Go frames, a breakdown with
// the network stack in it, and every point its merged breakdown and call
// tree; no perf process, recording or temporary file is left.
func TestBenchPerf(t *testing.T) {
	perftest.Need(t)
	var tr tracker
	o := perfOptions(t, &tr, "epoll", "io_uring")
	rep, err := Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkNoPerf(t)
	tr.check(t, 2-len(rep.Skipped))
	noTemps(t, o.PerfDir)
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "server process only") }) {
		t.Errorf("notes %q: want one saying what was recorded", rep.Notes)
	}
	if rep.Config.PerfDir != o.PerfDir {
		t.Errorf("config perf_dir %q, want %q", rep.Config.PerfDir, o.PerfDir)
	}
	for _, s := range rep.Skipped {
		t.Logf("skipped %s: %s", s.Engine, s.Reason)
	}
	if len(rep.Points) == 0 {
		t.Fatal("no point measured")
	}
	for _, p := range rep.Points {
		if p.Err != "" || len(p.Runs) != 2 {
			t.Fatalf("%s: %d runs, error %q", p.Engine, len(p.Runs), p.Err)
		}
		var samples int64
		for i, r := range p.Runs {
			want := filepath.Join(o.PerfDir, PerfName(p.Engine, "pingpong", 64, 10, i+1))
			if r.PerfError != "" || r.Perf == nil || r.PerfProfile != want {
				t.Fatalf("%s run %d: perf %+v, profile %q (want %q), error %q", p.Engine, i+1, r.Perf, r.PerfProfile, want, r.PerfError)
			}
			if r.Perf.Samples <= 0 || r.Perf.Net <= 0 {
				t.Errorf("%s run %d: breakdown %+v: want samples and a network-stack share", p.Engine, i+1, *r.Perf)
			}
			if p.Engine == "io_uring" && r.Perf.IOUring <= 0 {
				t.Errorf("io_uring run %d: breakdown %+v: want an io_uring share", i+1, *r.Perf)
			}
			samples += r.Perf.Samples
			checkProfile(t, r.PerfProfile)
		}
		if p.Perf == nil || p.Perf.Samples != samples || p.Perf.Net <= 0 {
			t.Errorf("%s: point breakdown %+v, want the runs' %d samples merged", p.Engine, p.Perf, samples)
		}
		if p.Flame == nil || p.Flame.Value != samples || len(p.Flame.Children) == 0 {
			t.Errorf("%s: flame %+v, want a tree of the runs' %d samples", p.Engine, p.Flame, samples)
		}
		if p.PerfError != "" {
			t.Errorf("%s: perf error %q", p.Engine, p.PerfError)
		}
	}
}

// checkProfile reads a profile as pprof does and wants a kernel frame of
// the network path and a Go frame in it.
func checkProfile(t *testing.T, path string) {
	t.Helper()
	p := perftest.Read(t, path)
	var kernel, goFrame string
	for _, fn := range p.Function {
		n := fn.Name
		if kernel == "" && (strings.Contains(n, "tcp_") || strings.Contains(n, "sock") || strings.HasPrefix(n, "entry_SYSCALL")) {
			kernel = n
		}
		if goFrame == "" && (strings.HasPrefix(n, "runtime.") || strings.HasPrefix(n, "github.com/iopath/iopath/")) {
			goFrame = n
		}
	}
	if kernel == "" || goFrame == "" || len(p.Sample) == 0 {
		t.Errorf("%s: %d samples, kernel frame %q, Go frame %q: want both", path, len(p.Sample), kernel, goFrame)
	}
}

// TestBenchPerfInterrupted: a bench cancelled while perf samples a
// window leaves no perf process, no recording and no file.
func TestBenchPerfInterrupted(t *testing.T) {
	perftest.Need(t)
	var tr tracker
	o := perfOptions(t, &tr, "epoll")
	o.Duration = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = func(done, total int, what string) {
		if done == 1 {
			time.AfterFunc(150*time.Millisecond, cancel) // in the second run's window
		}
	}
	rep, err := Bench(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Bench = %v, want it cancelled", err)
	}
	checkNoPerf(t)
	tr.check(t, 1)
	if ents, _ := os.ReadDir(o.PerfDir); len(ents) != 0 {
		t.Errorf("%s holds %d files after an interruption, want none", o.PerfDir, len(ents))
	}
	if rep == nil || len(rep.Points) != 1 || len(rep.Points[0].Runs) != 1 {
		t.Fatalf("report %+v: want the first run", rep)
	}
}

// TestBenchPerfDies: perf killed in the middle of the bench costs the
// runs their profiles, which say why, not the bench its figures.
func TestBenchPerfDies(t *testing.T) {
	perftest.Need(t)
	var tr tracker
	o := perfOptions(t, &tr, "epoll")
	o.Runs, o.Duration = 3, 100*time.Millisecond
	o.Progress = func(done, total int, what string) {
		if done == 1 {
			for _, pid := range testenv.ChildrenNamed("perf") {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	rep, err := Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkNoPerf(t)
	tr.check(t, 1)
	noTemps(t, o.PerfDir)
	p := rep.Points[0]
	if p.Err != "" || len(p.Runs) != 3 {
		t.Fatalf("%d runs, error %q: want every run measured", len(p.Runs), p.Err)
	}
	for i, r := range p.Runs {
		if r.QPS <= 0 {
			t.Errorf("run %d: QPS %v", i+1, r.QPS)
		}
		if i > 0 && (r.PerfError == "" || r.Perf != nil || r.PerfProfile != "") {
			t.Errorf("run %d after perf died: perf %+v, profile %q, error %q: want the error only", i+1, r.Perf, r.PerfProfile, r.PerfError)
		}
		t.Logf("run %d: perf error %q", i+1, r.PerfError)
	}
	if p.PerfError == "" {
		t.Error("the point does not say its runs were not recorded")
	}
}

// TestPerfNames: the profiles' names are safe in a file system, tell the
// runs apart, and are all checked before a bench starts.
func TestPerfNames(t *testing.T) {
	for _, tc := range []struct {
		engine, mode string
		size, conns  int
		want         string
	}{
		{"io_uring", "pipeline:16", 1024, 1000, "io_uring-pipeline16-1KiB-c1000-run2.pb.gz"},
		{"epoll", "pingpong", 64, 10, "epoll-pingpong-64B-c10-run2.pb.gz"},
		{"net", "stream", 1536, 1, "net-stream-1536B-c1-run2.pb.gz"},
		{"net", "a/b c:d", 16 << 10, 1, "net-abcd-16KiB-c1-run2.pb.gz"},
	} {
		if got := PerfName(tc.engine, tc.mode, tc.size, tc.conns, 2); got != tc.want {
			t.Errorf("PerfName(%s, %s, %d, %d) = %q, want %q", tc.engine, tc.mode, tc.size, tc.conns, got, tc.want)
		}
	}
	o := Options{Engines: []string{"epoll", "net"}, Conns: []int{1, 10}, Sizes: []int{64}, Modes: []string{"pingpong", "pipeline:4"},
		Runs: 2, Command: cmdFn, PerfDir: t.TempDir()}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	files := o.PerfFiles()
	if len(files) != 2*2*2*2 {
		t.Fatalf("%d files: %q", len(files), files)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] {
			t.Errorf("%s named twice", f)
		}
		seen[f] = true
	}
	perftest.Need(t)
	if err := os.WriteFile(files[5], []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Bench(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), files[5]) || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Bench with %s there = %v, want a refusal naming it", files[5], err)
	}
}
