package netbench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBenchHeartbeat: connections held with a heartbeat send what the
// interval says, every byte verified, and the run reads what the server
// held while they were open.
func TestBenchHeartbeat(t *testing.T) {
	o := Options{
		Engines: []string{"epoll", "io_uring"}, Conns: []int{20, 50}, Sizes: []int{64}, Modes: []string{"pingpong"},
		Duration: time.Second, Runs: 1, Heartbeat: 100 * time.Millisecond,
		Command: iopathCommand(t), Log: t.Logf,
	}
	rep, err := Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Config.HeartbeatNs != int64(100*time.Millisecond) || !strings.Contains(strings.Join(rep.Notes, "\n"), "--heartbeat 100ms") {
		t.Errorf("config %+v, notes %q", rep.Config, rep.Notes)
	}
	for _, p := range rep.Points {
		if p.Err != "" || len(p.Runs) != 1 {
			t.Errorf("%s: %q", p.Engine, p.Err)
			continue
		}
		r := p.Runs[0]
		if r.Corrupted != 0 || r.Lost != 0 || r.ConnErrors != 0 {
			t.Errorf("%s: %d corrupted, %d lost, %d failed", p.Engine, r.Corrupted, r.Lost, r.ConnErrors)
		}
		// One message a connection every 100 ms.
		if want := 10 * float64(p.Conns); r.QPS < 0.7*want || r.QPS > 1.3*want {
			t.Errorf("%s at %d conns: %.0f requests a second, want about %.0f", p.Engine, p.Conns, r.QPS, want)
		}
		if r.ServerRSSIdle <= 0 || r.ServerRSSHeld <= 0 || r.TCPSocketsHeld < 2*int64(p.Conns) {
			t.Errorf("%s: RSS %d before, %d held; %d TCP sockets held (want 100 at least: both ends)", p.Engine,
				r.ServerRSSIdle, r.ServerRSSHeld, r.TCPSocketsHeld)
		}
	}
}

func TestReadSockstat(t *testing.T) {
	s, err := readSockstat(os.Getpid())
	if err != nil || s.inuse < 0 || s.memPages < 0 {
		t.Fatalf("readSockstat: %+v, %v", s, err)
	}
	if _, err := readSockstat(1 << 30); err == nil {
		t.Error("no process: no error")
	}
}

func TestValidateHeartbeat(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Heartbeat: time.Millisecond}, "want 100ms to 1m0s"},
		{Options{Heartbeat: time.Second, Modes: []string{"pingpong", "stream"}}, "pingpong mode only"},
		{Options{Heartbeat: time.Second, Modes: []string{"pingpong"}, ResetShare: 0.1}, "not with --recovery, --reset or --perf"},
	} {
		c.o.Command = cmdFn
		if err := c.o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
