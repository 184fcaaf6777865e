package bench

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/iopath/iopath/perf/perftest"

	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/perf"
)

// trackDirs records the temporary directories a Measure tracks, and
// whether each was forgotten again.
type trackDirs struct {
	mu   sync.Mutex
	dirs map[string]bool // dir -> forgotten
}

func (d *trackDirs) track(dir string) func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dirs == nil {
		d.dirs = map[string]bool{}
	}
	d.dirs[dir] = false
	return func() {
		d.mu.Lock()
		d.dirs[dir] = true
		d.mu.Unlock()
	}
}

func (d *trackDirs) check(t *testing.T, want int) {
	t.Helper()
	// One per run recorded, and one per engine that found it cannot
	// run here (its first run was recorded too, and said so).
	if len(d.dirs) < want {
		t.Errorf("%d temporary directories tracked, want %d at least", len(d.dirs), want)
	}
	for dir, forgotten := range d.dirs {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) || !forgotten {
			t.Errorf("temporary directory %s: left (%v) or not forgotten (%v)", dir, err, forgotten)
		}
	}
}

// --perf and --trace: a recording per run with kernel and Go frames that
// go tool pprof reads, a breakdown and a flame tree per row, a trace per
// run, the runtime's figures always, and nothing temporary left.
func TestPerfAndTrace(t *testing.T) {
	perftest.Need(t)
	path := testFile(t, 8<<20)
	out := t.TempDir()
	var dirs trackDirs
	cfg := Config{Path: path, Engines: []string{"pread", "io_uring"}, Caches: []Cache{Warm}, Runs: 1,
		MinTime: 200 * time.Millisecond, PerfDir: filepath.Join(out, "perf"), TraceDir: filepath.Join(out, "trace"),
		TrackTempDir: dirs.track}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	fds := testenv.OpenFDs(t)
	rep, err := Measure(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg.RunFiles()
	if len(want) != 4 {
		t.Fatalf("RunFiles = %q", want)
	}
	recorded := 0
	for _, r := range rep.Results {
		if r.Engine == "io_uring" && len(r.Runs) == 0 && strings.Contains(r.Error, "not supported") {
			continue // io_uring refused here (IOPATH_DISABLE_IO_URING, a seccomp profile): pread is still recorded
		}
		if r.Error != "" {
			t.Fatalf("%s: %s", r.Engine, r.Error)
		}
		run := r.Runs[0]
		if run.Perf == nil || run.Perf.Samples < 50 || !slices.Contains(want, run.PerfProfile) || !slices.Contains(want, run.Trace) {
			t.Fatalf("%s run: perf %+v in %q, trace %q", r.Engine, run.Perf, run.PerfProfile, run.Trace)
		}
		if r.Perf == nil || *r.Perf != *run.Perf || r.Flame == nil || r.Flame.Value != run.Perf.Samples {
			t.Errorf("%s row: perf %+v, flame %v", r.Engine, r.Perf, r.Flame != nil)
		}
		// The kernel's copy is most of a cached read's CPU (64–75% of a 1 GiB
		// file here; 25% and more of this small one, read again and again);
		// under the race detector, which slows the user side many times,
		// only that there is one.
		if r.Perf.Copy < 0.1 && !raceEnabled || r.Perf.Copy == 0 {
			t.Errorf("%s reading a cached file: %+v", r.Engine, r.Perf)
		}
		// io_uring's own share is small (3% here, less under the race
		// detector), but its reads run under io_uring_enter.
		if r.Engine == "io_uring" && !hasFrame(r.Flame, "io_submit_sqes") {
			t.Errorf("io_uring's call tree has no io_submit_sqes: %+v", r.Perf)
		}
		if r.Runtime == nil || r.Runtime.ThreadsMax < 2 || r.Runtime.GoroutinesMax < 1 || r.Runtime.GoThreadsMax < 2 {
			t.Errorf("%s runtime figures %+v", r.Engine, r.Runtime)
		}
		recorded++
		tr, err := os.ReadFile(run.Trace)
		if err != nil || !bytes.HasPrefix(tr, []byte("go 1.")) {
			t.Errorf("%s trace: %v, starts %q", r.Engine, err, tr[:min(len(tr), 16)])
		}
	}
	// The check: go tool pprof -top lists kernel and Go symbols.
	pread := rep.Results[0].Runs[0].PerfProfile
	top, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "pprof", "-top", pread).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top %s: %v\n%s", pread, err, top)
	}
	if s := string(top); !strings.Contains(s, "filemap_read") || !strings.Contains(s, "github.com/iopath/iopath/engine.") {
		t.Errorf("go tool pprof -top lists no kernel (filemap_read) or no engine symbol:\n%s", s)
	}
	dirs.check(t, recorded)
	if n := testenv.OpenFDs(t); n != fds {
		t.Errorf("%d descriptors open after Measure, %d before", n, fds)
	}
	// Existing recordings are refused, and kept.
	if _, err := Measure(context.Background(), cfg); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), ".pb.gz") {
		t.Fatalf("over existing recordings: %v", err)
	}
}

// Without --perf nothing is recorded, but the runtime's figures are.
func TestRuntimeFigures(t *testing.T) {
	path := testFile(t, 4<<20)
	cfg := Config{Path: path, Engines: []string{"pread"}, Caches: []Cache{Warm}, Runs: 1, MinTime: 50 * time.Millisecond}
	rep, err := Measure(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Perf != nil || r.Flame != nil || r.Runs[0].Perf != nil || r.Runtime == nil || r.Runs[0].Runtime == nil || r.Runtime.ThreadsMax == 0 {
		t.Fatalf("perf %v, flame %v, runtime %+v", r.Perf, r.Flame, r.Runtime)
	}
}

// bench --tree --perf: the pool engine's threads, recorded.
func TestTreePerf(t *testing.T) {
	perftest.Need(t)
	dir := t.TempDir()
	for i := range 200 {
		os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i%26))+strings.Repeat("x", i/26)), bytes.Repeat([]byte{byte(i)}, 4096), 0o644)
	}
	var dirs trackDirs
	cfg := TreeConfig{Dir: dir, Engines: []string{"pool", "io_uring"}, Caches: []Cache{Warm}, Runs: 1, MinTime: 100 * time.Millisecond,
		PerfDir: filepath.Join(t.TempDir(), "perf"), TrackTempDir: dirs.track}
	rep, err := MeasureTree(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, r := range rep.Results {
		if r.Engine == "io_uring" && len(r.Runs) == 0 && strings.Contains(r.Error, "not supported") {
			continue // io_uring refused here: the pool is still recorded
		}
		if r.Error != "" {
			t.Fatalf("%s: %s", r.Engine, r.Error)
		}
		recorded++
		if r.Perf == nil || r.Perf.Samples == 0 || r.Flame == nil || r.Runtime == nil {
			t.Errorf("%s: perf %+v, runtime %+v", r.Engine, r.Perf, r.Runtime)
		}
		if want := filepath.Join(cfg.PerfDir, r.Engine+"-warm-tree-w"+itoa(r.Workers)); !strings.HasPrefix(r.Runs[0].PerfProfile, want) {
			t.Errorf("%s profile %q, want it named %s...", r.Engine, r.Runs[0].PerfProfile, want)
		}
	}
	dirs.check(t, recorded)
}

// hasFrame says whether a call tree holds a function named name.
func hasFrame(f *perf.Flame, name string) bool {
	if f == nil {
		return false
	}
	if f.Name == name {
		return true
	}
	for _, c := range f.Children {
		if hasFrame(c, name) {
			return true
		}
	}
	return false
}
