package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/features"
)

func TestMeasureSweep(t *testing.T) {
	path := testFile(t, 1<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread", "io_uring"}, Caches: []Cache{Warm}, Runs: 1,
		BlockSizes: []int{4096, 65536}, Workers: []int{1, 2}, QueueDepths: []int{1, 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	// pread has no queue: 2 bs × 2 workers once; io_uring: × 2 depths.
	type key struct {
		engine    string
		bs, w, qd int
	}
	got := map[key]bool{}
	for _, r := range rep.Results {
		got[key{r.Engine, r.BS, r.Workers, r.QD}] = true
		if r.Engine == "io_uring" && r.Error != "" && features.Probe().IOURing.Available {
			t.Errorf("io_uring %d/%d/%d: %s", r.BS, r.Workers, r.QD, r.Error)
		}
		if r.Engine == "pread" && (r.Error != "" || r.ChecksumOK == nil || !*r.ChecksumOK) {
			t.Errorf("pread %d/%d: %+v", r.BS, r.Workers, r)
		}
	}
	for _, bs := range []int{4096, 65536} {
		for _, w := range []int{1, 2} {
			if !got[key{"pread", bs, w, 0}] {
				t.Errorf("no pread row at bs %d workers %d (qd 0)", bs, w)
			}
			for _, qd := range []int{1, 8} {
				if !got[key{"io_uring", bs, w, qd}] {
					t.Errorf("no io_uring row at bs %d workers %d qd %d", bs, w, qd)
				}
			}
		}
	}
	if len(rep.Results) != 12 {
		t.Errorf("%d rows, want 12", len(rep.Results))
	}
	if s := rep.Sweep; len(s.BlockSizes) != 2 || len(s.Workers) != 2 || len(s.QueueDepths) != 2 || s.Points() != 8 {
		t.Errorf("sweep %+v", s)
	}
}

// An engine that fails half-way through a run still yields a complete,
// valid JSON report, with that row's error set and the others measured.
func TestMeasureEngineFailsMidRun(t *testing.T) {
	path := testFile(t, 1<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread", "test-midway", "mmap"}, Caches: []Cache{Warm, Cold}, Runs: 2,
	})
	if !errors.Is(err, ErrFailed) || rep == nil {
		t.Fatalf("err = %v, want ErrFailed with a report", err)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(rep); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(buf.Bytes()) {
		t.Fatal("report is not valid JSON")
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, r := range back.Results {
		switch r.Engine {
		case "test-midway":
			if !strings.Contains(r.Error, "injected failure midway") || len(r.Runs) != 2 {
				t.Errorf("failing row: error %q, %d runs", r.Error, len(r.Runs))
			}
		default:
			if r.Error != "" || r.BytesPerS <= 0 {
				t.Errorf("%s %s: %q", r.Engine, r.Cache, r.Error)
			}
		}
	}
}

func TestNoiseGuard(t *testing.T) {
	if got := noisy(Warm, Run{OtherCPUPct: 50}, time.Second); !strings.Contains(got, "other processes used 50% of a core") {
		t.Errorf("busy machine not flagged: %q", got)
	}
	if got := noisy(Warm, Run{OtherCPUPct: 5, ResidentBefore: 1, ResidentAfter: 1}, time.Second); got != "" {
		t.Errorf("quiet run flagged: %q", got)
	}
	// Over 50 ms, 30% is within the ticks' sampling error.
	if got := noisy(Warm, Run{OtherCPUPct: 30, ResidentBefore: 1, ResidentAfter: 1}, 50*time.Millisecond); got != "" {
		t.Errorf("short run flagged on sampling error: %q", got)
	}
	if got := noisy(Warm, Run{ResidentBefore: 1, ResidentAfter: 0.6}, time.Second); !strings.Contains(got, "lost cached pages") {
		t.Errorf("eviction not flagged: %q", got)
	}
	if got := noisy(Cold, Run{ResidentBefore: 0, ResidentAfter: 1}, time.Second); got != "" {
		t.Errorf("a cold run fills the cache, that is not noise: %q", got)
	}
}

// A run while another process burns a core is marked noisy, kept in the
// figures and counted.
func TestMeasureMarksNoisyRuns(t *testing.T) {
	path := testFile(t, 4<<20)
	spinner := exec.Command("sh", "-c", "while :; do :; done")
	if err := spinner.Start(); err != nil {
		t.Skipf("cannot start a busy shell: %v", err)
	}
	defer func() {
		spinner.Process.Kill()
		spinner.Wait()
	}()
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread"}, Caches: []Cache{Warm}, Runs: 2, MinTime: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.NoisyRuns != 2 {
		t.Fatalf("%d of 2 runs marked noisy while another process spun: %+v", r.NoisyRuns, r.Runs)
	}
	for _, run := range r.Runs {
		if !strings.Contains(run.Noisy, "other processes") || run.OtherCPUPct < 50 {
			t.Errorf("noisy %q with others at %.0f%%", run.Noisy, run.OtherCPUPct)
		}
	}
	if r.BytesPerS <= 0 {
		t.Error("noisy runs must still count")
	}
}

// On a quiet machine the guard must not cry wolf: the runner's and the
// child's own CPU are not "other".
func TestMeasureQuietRunNotNoisy(t *testing.T) {
	path := testFile(t, 4<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread"}, Caches: []Cache{Warm}, Runs: 1, MinTime: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Results[0].Runs[0]
	if run.ResidentAfter < 1 {
		t.Errorf("residency after a warm run: %v", run.ResidentAfter)
	}
	// Other tests may run in parallel packages; only a clear false alarm
	// (more than a core) would mean the accounting is wrong.
	if run.OtherCPUPct > 100*float64(runtime.NumCPU()) || run.OtherCPUPct < 0 {
		t.Errorf("other CPU %.0f%% is impossible", run.OtherCPUPct)
	}
}

// The SQPOLL thread's CPU is reported, and is inside the run's CPU.
func TestMeasureCountsSQPollThread(t *testing.T) {
	if p := features.Probe(); !p.IOURing.Available {
		t.Skipf("io_uring unavailable here: %s", p.IOURing.Reason)
	}
	path := testFile(t, 8<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"io_uring"}, Caches: []Cache{Warm}, Runs: 1, SQPoll: true,
		MinTime: 200 * time.Millisecond,
	})
	if err != nil {
		if strings.Contains(err.Error(), "not supported") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	run := r.Runs[0]
	if run.IOThreadNs <= 0 {
		t.Fatalf("SQPOLL run reports no io_uring thread CPU: %+v", run)
	}
	if run.IOThreadNs > run.UserNs+run.SysNs+int64(10*time.Millisecond) {
		t.Errorf("io thread CPU %v is not inside the process's %v", time.Duration(run.IOThreadNs), time.Duration(run.UserNs+run.SysNs))
	}
	if r.IOThreadCPUSPerGiB <= 0 || r.IOThreadCPUSPerGiB > r.CPUSPerGiB*1.05 {
		t.Errorf("io thread CPU/GiB %v vs total %v", r.IOThreadCPUSPerGiB, r.CPUSPerGiB)
	}
}

func TestMeasureProfiles(t *testing.T) {
	path := testFile(t, 1<<20)
	dir := filepath.Join(t.TempDir(), "prof")
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread", "mmap"}, Caches: []Cache{Warm}, Runs: 2, ProfileDir: dir,
		MinTime: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		for _, run := range r.Runs {
			b, err := os.ReadFile(run.Profile)
			// pprof's format is gzipped protobuf.
			if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b || filepath.Dir(run.Profile) != dir {
				t.Errorf("%s: profile %q is not a pprof file: %v", r.Engine, run.Profile, err)
			}
			if seen[run.Profile] {
				t.Errorf("two runs wrote %s", run.Profile)
			}
			seen[run.Profile] = true
		}
	}
	if len(seen) != 4 {
		t.Errorf("%d profiles, want 4", len(seen))
	}
}
