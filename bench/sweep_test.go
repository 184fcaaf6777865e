package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
	quiet := Run{OtherCPUPct: 5, ResidentBefore: 1, ResidentAfter: 1}
	for _, tc := range []struct {
		name    string
		cache   Cache
		run     Run
		slack   float64
		want    string
		unknown bool
	}{
		{"busy machine", Warm, Run{OtherCPUPct: 50, ResidentBefore: 1, ResidentAfter: 1}, 2, "other processes used 50% of a core", false},
		{"quiet", Warm, quiet, 2, "", false},
		{"within the sampling error", Warm, Run{OtherCPUPct: 15, ResidentBefore: 1, ResidentAfter: 1}, 8, "", false},
		{"too short to judge", Warm, Run{OtherCPUPct: 80, ResidentBefore: 1, ResidentAfter: 1}, 40, "", true},
		{"evicted", Warm, Run{ResidentBefore: 1, ResidentAfter: 0.6}, 2, "lost cached pages", false},
		{"evicted, short", Warm, Run{ResidentBefore: 1, ResidentAfter: 0.6}, 40, "lost cached pages", true},
		{"a cold run fills the cache: not noise", Cold, Run{ResidentBefore: 0, ResidentAfter: 1}, 2, "", false},
		{"failed runs are not judged", Warm, Run{OtherCPUPct: 90, Error: "x"}, 2, "", false},
	} {
		got, unknown := noisy(tc.cache, tc.run, tc.slack)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || unknown != tc.unknown {
			t.Errorf("%s: noisy = %q, unknown %v; want %q, %v", tc.name, got, unknown, tc.want, tc.unknown)
		}
	}
	// The arithmetic: the machine was busy 1.5 s over 1 s, the run and
	// the runner used 1.2 s of it: others used 30% of a core.
	if got := otherCPUPct(1500*time.Millisecond, 1200*time.Millisecond, time.Second); got < 29.99 || got > 30.01 {
		t.Errorf("otherCPUPct = %v, want 30", got)
	}
	if got := otherCPUPct(time.Second, 1100*time.Millisecond, time.Second); got != 0 {
		t.Errorf("otherCPUPct below zero: %v", got)
	}
	// Two busy CPUs over 1 s: a tick each, 2% of a core; 64 idle CPUs
	// add nothing.
	if got := tickSlackPct(2, time.Second); got < 1.99 || got > 2.01 {
		t.Errorf("slack = %v, want 2", got)
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

// Every run records its residency after. (Whether the guard cries wolf on a
// quiet machine cannot be tested here, where other test packages run
// beside this one; the arithmetic is tested in TestNoiseGuard.)
func TestMeasureRecordsResidencyAfter(t *testing.T) {
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

func TestUpgradeVersion1(t *testing.T) {
	r := &Report{SchemaVersion: 1, Results: []Result{
		{Engine: "pread", QD: 32}, {Engine: "io_uring", QD: 32}, {Engine: "gone", QD: 8},
	}}
	if err := Upgrade(r); err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != SchemaVersion || r.Results[0].QD != 0 || r.Results[1].QD != 32 || r.Results[2].QD != 8 {
		t.Errorf("upgraded: %+v", r)
	}
	for _, res := range r.Results {
		if res.Tool != ToolIopath {
			t.Errorf("tool %q", res.Tool)
		}
	}
	if err := Upgrade(&Report{SchemaVersion: SchemaVersion + 1}); err == nil {
		t.Error("a newer schema was accepted")
	}
}
