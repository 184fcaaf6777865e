package advise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/perf/perftest"

	"github.com/iopath/iopath/perf"
)

// perfLeftovers says what a recording left behind: perf processes this
// process started, and recording directories under tmp (the TMPDIR the
// test set).
func perfLeftovers(t *testing.T, tmp string, tracked []string) {
	t.Helper()
	if kids := testenv.ChildrenNamed("perf"); len(kids) > 0 {
		t.Errorf("perf still runs: pids %v", kids)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "iopath-perf-*")); len(left) > 0 {
		t.Errorf("recording directories left: %q", left)
	}
	for _, d := range tracked {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("tracked directory %s left: %v", d, err)
		}
	}
}

// trackDirs is an Options.TrackTempDir that keeps what it is told.
type trackDirs struct {
	mu   sync.Mutex
	dirs []string
}

func (d *trackDirs) track(dir string) func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dirs = append(d.dirs, dir)
	return func() {}
}

func (d *trackDirs) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dirs)
}

// TestRunPerf records a one-file trial: every measured candidate has a
// breakdown of real samples and a profile pprof reads, with kernel and Go
// frames; nothing of perf is left.
func TestRunPerf(t *testing.T) {
	perftest.Need(t)
	data := t.TempDir()
	writeFiles(t, data, map[string]int{"big": 4 << 20})
	out := filepath.Join(t.TempDir(), "profiles") // made by Run
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var td trackDirs
	res, err := Run(context.Background(), []string{filepath.Join(data, "big")},
		Options{Budget: 3 * time.Second, Procs: 2, PerfDir: out, TrackTempDir: td.track})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, OneFile)
	if len(td.list()) != 1 {
		t.Errorf("tracked directories %q, want perf's one", td.list())
	}
	perfLeftovers(t, tmp, td.list())
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "recorded with perf ") }) {
		t.Errorf("no note of the recording: %q", res.Notes)
	}
	profiles := 0
	for _, m := range res.Measurements {
		if !m.Measured() {
			if m.Perf != nil || m.PerfProfile != "" {
				t.Errorf("%s %s: not measured, but recorded: %+v %q", m.Label, m.Cache, m.Perf, m.PerfProfile)
			}
			continue
		}
		if m.Perf == nil || m.Perf.Samples == 0 || m.Perf.CPUNs == 0 {
			t.Errorf("%s %s: no samples: %+v", m.Label, m.Cache, m.Perf)
			continue
		}
		var sum float64
		for _, k := range perf.Kinds() {
			sum += m.Perf.Share(k)
		}
		if sum < 0.999 || sum > 1.001 {
			t.Errorf("%s %s: shares add up to %v: %+v", m.Label, m.Cache, sum, m.Perf)
		}
		if want := filepath.Join(out, ProfileFile(m.Label, m.Cache)); m.PerfProfile != want {
			t.Errorf("%s %s: profile %q, want %q", m.Label, m.Cache, m.PerfProfile, want)
		}
		checkPprof(t, m.PerfProfile, m.Perf.Samples)
		profiles++
	}
	if profiles == 0 {
		t.Fatal("no measurement was recorded")
	}
	// The JSON names (docs/advise.md).
	var b bytes.Buffer
	if err := WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Measurements []map[string]json.RawMessage `json:"measurements"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if m := doc.Measurements[0]; m["perf"] == nil || m["perf_profile"] == nil {
		t.Errorf("measurement keys: %v", slices.Collect(maps.Keys(m)))
	}
	// Only the measured candidates' profiles are written, nothing else.
	ents, _ := os.ReadDir(out)
	if len(ents) != profiles {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %q, want the %d profiles", out, names, profiles)
	}
}

// checkPprof parses a profile and wants its samples, a kernel frame and a
// Go frame of iopath.
func checkPprof(t *testing.T, path string, samples int64) {
	t.Helper()
	p := perftest.Read(t, path)
	if int64(len(p.Sample)) != samples {
		t.Errorf("%s: %d samples, the breakdown counts %d", path, len(p.Sample), samples)
	}
	var kernel, gofn bool
	for _, fn := range p.Function {
		kernel = kernel || strings.HasPrefix(fn.Filename, "[kernel")
		gofn = gofn || strings.HasPrefix(fn.Name, "github.com/iopath/iopath/")
	}
	if !kernel || !gofn {
		t.Errorf("%s: a kernel frame: %v, a Go frame of iopath: %v (%d functions)", path, kernel, gofn, len(p.Function))
	}
}

// A profile's name that exists is refused before the trial, and the
// file is left as it was; with PerfReplace it is replaced.
func TestRunPerfExisting(t *testing.T) {
	perftest.Need(t)
	data := t.TempDir()
	writeFiles(t, data, map[string]int{"big": 1 << 20})
	out := t.TempDir()
	old := filepath.Join(out, ProfileFile("pread ×2", Cold))
	if err := os.WriteFile(old, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Run(context.Background(), []string{filepath.Join(data, "big")},
		Options{Budget: 3 * time.Second, Procs: 2, PerfDir: out})
	var pe *ProfileExistsError
	if !errors.As(err, &pe) || pe.Path != old || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("err %v, want a ProfileExistsError for %s", err, old)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refused after %v: not before the trial", d)
	}
	if b, _ := os.ReadFile(old); string(b) != "mine" {
		t.Errorf("the file holds %q", b)
	}
	if kids := testenv.ChildrenNamed("perf"); len(kids) > 0 {
		t.Errorf("perf started: %v", kids)
	}
}

// Cancelling Run during the trial stops perf and removes its recording.
func TestRunPerfCancel(t *testing.T) {
	perftest.Need(t)
	data := t.TempDir()
	writeFiles(t, data, map[string]int{"big": 32 << 20})
	out := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var td trackDirs
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	var (
		mu        sync.Mutex
		cancelled time.Time
	)
	_, err := Run(ctx, []string{filepath.Join(data, "big")}, Options{Budget: 10 * time.Second, Procs: 2, PerfDir: out,
		TrackTempDir: td.track,
		Progress: func(_, _ int, what string) {
			if strings.Contains(what, ", round ") {
				if runs++; runs == 2 {
					// A run was recorded; the cancel comes while
					// the next one is, as a Ctrl-C does.
					time.AfterFunc(20*time.Millisecond, func() {
						mu.Lock()
						cancelled = time.Now()
						mu.Unlock()
						cancel()
					})
				}
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// The cancel stops perf: switching it off must not then wait out
	// perfctl's 5 s for an answer (the CLI gives a Ctrl-C 700 ms).
	mu.Lock()
	defer mu.Unlock()
	if d := time.Since(cancelled); d > 2*time.Second {
		t.Errorf("Run returned %v after the cancel", d.Round(time.Millisecond))
	}
	if len(td.list()) != 1 {
		t.Errorf("tracked directories %q, want perf's one", td.list())
	}
	perfLeftovers(t, tmp, td.list())
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("%s holds %d files after an interrupted trial", out, len(ents))
	}
}

func TestProfileFile(t *testing.T) {
	for _, tt := range []struct {
		label string
		c     Cache
		want  string
	}{
		{"raw ×2", Warm, "raw-x2-warm.pb.gz"},
		{"io_uring", Cold, "io_uring-cold.pb.gz"},
		{"readfile", Warm, "readfile-warm.pb.gz"},
		{"../a/b c", Warm, "_._a_b-c-warm.pb.gz"},
	} {
		if got := ProfileFile(tt.label, tt.c); got != tt.want {
			t.Errorf("ProfileFile(%q, %s) = %q, want %q", tt.label, tt.c, got, tt.want)
		}
	}
}
