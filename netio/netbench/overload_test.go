package netbench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBenchOverload: every engine under twice the connections its limit
// allows, a quarter of them resetting themselves mid-request: each server
// refuses the connections over its limit, keeps serving the others with
// every byte verified, and holds no descriptor more after the run.
func TestBenchOverload(t *testing.T) {
	o := Options{
		Engines: []string{"epoll", "io_uring", "net"}, Conns: []int{40}, Sizes: []int{64}, Modes: []string{"pingpong"},
		Duration: 300 * time.Millisecond, Runs: 1, MaxConns: 20, ResetShare: 0.25,
		Command: iopathCommand(t), Log: t.Logf,
	}
	rep, err := Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Config.MaxConns != 20 || rep.Config.ResetShare != 0.25 || !strings.Contains(strings.Join(rep.Notes, "\n"), "--max-conns 20") {
		t.Errorf("config %+v, notes %q", rep.Config, rep.Notes)
	}
	// The report says what GOMAXPROCS each server that ran had.
	loops := serverLoops(rep.Config.ServerCPUs)
	if len(rep.Config.ServerProcs) != len(rep.Config.Engines) {
		t.Errorf("GOMAXPROCS of %v for engines %v", rep.Config.ServerProcs, rep.Config.Engines)
	}
	for _, e := range rep.Config.Engines {
		if got, want := rep.Config.ServerProcs[e], serverProcs(e, loops); got != want {
			t.Errorf("%s: GOMAXPROCS %d in the report, want %d", e, got, want)
		}
	}
	for _, p := range rep.Points {
		r, ok := soleRun(t, p.Engine, p)
		if !ok {
			continue
		}
		// 20 connections over the limit are refused; of the 10 that
		// reset themselves, those the server served do.
		if r.Refused != 20 || r.Resets < 1 || r.Resets > 10 {
			t.Errorf("%s: %d refused, %d resets; want 20 and 1 to 10", p.Engine, r.Refused, r.Resets)
		}
		if r.ServerFDsBefore == 0 || r.ServerFDsAfter > r.ServerFDsBefore || p.LeakedFDs != 0 || r.ServerRSSBefore == 0 || r.ServerRSSAfter == 0 {
			t.Errorf("%s: descriptors %d before, %d after (%d leaked); RSS %d, %d", p.Engine,
				r.ServerFDsBefore, r.ServerFDsAfter, p.LeakedFDs, r.ServerRSSBefore, r.ServerRSSAfter)
		}
	}
}

// readUse counts descriptors as they open and close, and settledUse
// waits for them to come back.
func TestReadUse(t *testing.T) {
	u0, err := readUse(os.Getpid())
	if err != nil || u0.fds == 0 || u0.rss == 0 {
		t.Fatalf("readUse: %+v, %v", u0, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if u1, _ := readUse(os.Getpid()); u1.fds != u0.fds+2 {
		t.Errorf("%d descriptors after a pipe, want %d", u1.fds, u0.fds+2)
	}
	time.AfterFunc(50*time.Millisecond, func() { r.Close(); w.Close() })
	start := time.Now()
	u2, err := settledUse(context.Background(), os.Getpid(), u0.fds)
	if err != nil || u2.fds != u0.fds || time.Since(start) > leakSettle {
		t.Errorf("settledUse: %+v after %v (%v), want %d descriptors", u2, time.Since(start), err, u0.fds)
	}
	if _, err := readUse(1 << 30); err == nil {
		t.Error("readUse of no process: no error")
	}
}
