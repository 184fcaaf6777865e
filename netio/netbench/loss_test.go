package netbench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/netns"
	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/perf/perftest"
)

func TestValidateLoss(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Loss: []float64{-0.1}}, "want 0% to 95%"},
		{Options{Loss: []float64{0.96}}, "want 0% to 95%"},
		{Options{Loss: []float64{math.NaN()}}, "want 0% to 95%"},
		{Options{Loss: []float64{0.1, 0, 0.1}}, "given twice"},
		{Options{Loss: []float64{0.1}, Recovery: time.Second, PerfDir: "p"}, "--perf and --recovery"},
		{Options{Loss: []float64{0.1}, RTOMax: 500 * time.Millisecond}, "want 1s to 2m0s"},
		{Options{Loss: []float64{0.1}, RTOMax: 121 * time.Second}, "want 1s to 2m0s"},
		{Options{RTOMax: time.Second}, "give --loss too"},
	} {
		tc.o.Command = cmdFn
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(Loss %v, RTOMax %v) = %v, want %q", tc.o.Loss, tc.o.RTOMax, err, tc.want)
		}
	}
	o := Options{Loss: []float64{0, 0.01, 0.3}, RTOMax: MaxRTOMax, Command: cmdFn}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate(%v) = %v", o.Loss, err)
	}
}

// nsTracker records the namespaces Bench tracks (TrackNS).
type nsTracker struct{ tracker }

func lossOptions(t *testing.T, tr *nsTracker, loss ...float64) Options {
	if err := netns.Check(); err != nil {
		t.Skipf("--loss: %v", err)
	}
	return Options{
		Engines: []string{"epoll", "io_uring", "net"}, Conns: []int{20}, Sizes: []int{64}, Modes: []string{"pingpong"},
		Duration: 300 * time.Millisecond, Runs: 1, Loss: loss, RTOMax: DefaultRTOMax,
		Command: iopathCommand(t), Log: t.Logf, TrackNS: tr.track,
	}
}

// checkNSGone fails t if a namespace Bench made is left, or a child of
// this process (an ip or an iopath) still runs.
func (tr *nsTracker) checkNSGone(t *testing.T, levels int) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.paths) != levels {
		t.Errorf("%d namespaces tracked (%q), want %d", len(tr.paths), tr.paths, levels)
	}
	for _, name := range tr.paths {
		if netns.Exists(name) {
			t.Errorf("namespace %s is left behind", name)
			(&netns.NS{Name: name}).Close()
		}
		if !strings.HasPrefix(name, fmt.Sprintf("iopath-%d-", os.Getpid())) {
			t.Errorf("namespace %s: want it named after this process", name)
		}
	}
	for name := range tr.tracked {
		t.Errorf("namespace %s is still tracked", name)
	}
	for _, child := range []string{"iopath", "ip"} {
		deadline := time.Now().Add(2 * time.Second)
		for len(testenv.ChildrenNamed(child)) > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if left := testenv.ChildrenNamed(child); len(left) > 0 {
			t.Errorf("%s processes left: %v", child, left)
		}
	}
}

// TestBenchLoss runs every engine with no loss and with 10% of packets
// dropped, each level in a namespace of its own: every echoed byte is
// verified at both, TCP retransmits at 10% (and the table's figures come
// from the namespace's counters), and nothing is left behind.
func TestBenchLoss(t *testing.T) {
	var tr nsTracker
	o := lossOptions(t, &tr, 0, 0.1)
	rep, err := Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	tr.checkNSGone(t, 2)
	if len(rep.Config.Loss) != 2 || rep.Config.RTOMaxMs != 1000 {
		t.Errorf("config: loss %v, rto_max_ms %d", rep.Config.Loss, rep.Config.RTOMaxMs)
	}
	measured := len(o.Engines) - len(rep.Skipped)
	if len(rep.Points) != 2*measured {
		t.Fatalf("%d points, want %d (skipped: %+v)", len(rep.Points), 2*measured, rep.Skipped)
	}
	var retrans [2]int64
	for _, p := range rep.Points {
		if !p.LossSet || (p.Loss != 0 && p.Loss != 0.1) {
			t.Errorf("%s: loss %v (set %v)", p.Engine, p.Loss, p.LossSet)
		}
		r, ok := soleRun(t, fmt.Sprintf("%s at %v%% loss", p.Engine, 100*p.Loss), p)
		if !ok {
			continue
		}
		lvl := 0
		if p.Loss > 0 {
			lvl = 1
			if want := float64(r.Retransmits) * 1000 / float64(r.Requests); p.RetransPer1kReq != want {
				t.Errorf("%s: retrans/1k %v, want %v", p.Engine, p.RetransPer1kReq, want)
			}
		}
		retrans[lvl] += r.Retransmits
	}
	// 10% of a few thousand segments each way are lost: TCP must
	// have retransmitted some, and more than on a lossless loopback.
	if retrans[1] == 0 || retrans[1] <= retrans[0] {
		t.Errorf("retransmits: %d with no loss, %d at 10%%", retrans[0], retrans[1])
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "capped at 1s") {
		t.Errorf("notes do not say how TCP was set: %q", rep.Notes)
	}
}

// TestBenchLossInterrupted: cancelled in its second level, Bench returns
// what it measured and leaves no namespace and no child behind.
func TestBenchLossInterrupted(t *testing.T) {
	var tr nsTracker
	o := lossOptions(t, &tr, 0, 0.3)
	o.Engines = []string{"epoll"}
	o.Duration = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = func(done, total int, what string) {
		if done == 1 {
			time.AfterFunc(300*time.Millisecond, cancel) // in the second level's run
		}
	}
	rep, err := Bench(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Bench = %v, want it cancelled", err)
	}
	tr.checkNSGone(t, 2)
	if rep == nil || !hasMeasured(rep, 0) {
		t.Errorf("report %+v: want the first level's run", rep)
	}
}

func hasMeasured(rep *netresult.Report, loss float64) bool {
	for _, p := range rep.Points {
		if p.LossSet && p.Loss == loss && p.Err == "" && len(p.Runs) > 0 {
			return true
		}
	}
	return false
}

// With --perf, each loss level's profiles have names of their own, and
// all of them are checked before the first level runs.
func TestBenchLossPerf(t *testing.T) {
	perftest.Need(t)
	var tr nsTracker
	o := lossOptions(t, &tr, 0, 0.1)
	o.Engines, o.Duration = []string{"epoll"}, 200*time.Millisecond
	o.PerfDir = t.TempDir()
	files := o.PerfFiles()
	if len(files) != 2 || !strings.HasSuffix(files[0], "-c20-loss0pct-run1.pb.gz") || !strings.HasSuffix(files[1], "-c20-loss10pct-run1.pb.gz") {
		t.Fatalf("profiles %q", files)
	}
	if _, err := Bench(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	tr.checkNSGone(t, 2)
	// Both are profiles; the lossless one has samples (at 10% loss 20
	// connections keep the server too idle to be sure of one).
	for i, f := range files {
		if prof := perftest.Read(t, f); i == 0 && len(prof.Sample) == 0 {
			t.Errorf("%s: no sample", f)
		}
	}
	// Run again: the first level's profile exists, and nothing runs.
	var tr2 nsTracker
	o.TrackNS = tr2.track
	if _, err := Bench(context.Background(), o); !errors.Is(err, fs.ErrExist) && (err == nil || !strings.Contains(err.Error(), "exists")) {
		t.Errorf("a second run over the profiles: %v", err)
	}
	if len(tr2.paths) != 0 {
		t.Errorf("namespaces made before the refusal: %q", tr2.paths)
	}
}
