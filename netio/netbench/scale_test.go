package netbench

import (
	"context"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/netio/netresult"
)

// TestBenchGroup: with 30 connections a process, 100 connections run
// against a group of server processes sharing the port and a group of
// load generators on source addresses of their own, and 10 against the
// same group from one generator; every byte is verified, the windows are
// one, and the group's CPU and memory are read.
func TestBenchGroup(t *testing.T) {
	for _, hb := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run("heartbeat "+hb.String(), func(t *testing.T) {
			o := Options{
				Engines: []string{"epoll", "io_uring", "net"}, Conns: []int{10, 100}, Sizes: []int{64}, Modes: []string{"pingpong"},
				Duration: time.Second, Runs: 1, Heartbeat: hb, perProcess: 30,
				Command: iopathCommand(t), Log: t.Logf,
			}
			rep, err := Bench(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Points {
				r, ok := soleRun(t, p.Engine, p)
				if !ok {
					continue
				}
				if r.ServerCPUNs <= 0 || r.ServerCPUPerReqUs <= 0 || r.P99Ns <= 0 {
					t.Errorf("%s: server CPU %d ns (%.2f µs/req), P99 %d", p.Engine, r.ServerCPUNs, r.ServerCPUPerReqUs, r.P99Ns)
				}
				if hb > 0 {
					// One message a connection every 100 ms.
					if want := float64(p.Conns) * 10; r.QPS < 0.7*want || r.QPS > 1.3*want {
						t.Errorf("%s at %d conns: %.0f requests a second, want about %.0f", p.Engine, p.Conns, r.QPS, want)
					}
					if r.ServerRSSHeld <= 0 || r.TCPSocketsHeld < 2*int64(p.Conns) {
						t.Errorf("%s: RSS held %d, TCP sockets %d", p.Engine, r.ServerRSSHeld, r.TCPSocketsHeld)
					}
				}
			}
			deadline := time.Now().Add(2 * time.Second)
			for len(testenv.ChildrenNamed("iopath")) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if left := testenv.ChildrenNamed("iopath"); len(left) > 0 {
				t.Errorf("children left: %v", left)
			}
		})
	}
}

func TestGroupSizes(t *testing.T) {
	for _, c := range []struct{ conns, per, servers, loads int }{
		{100, 30, 5, 4}, {100_000, 19_800, 7, 9}, {18_000, 19_800, 2, 2}, {1, 19_800, 1, 1},
	} {
		if s, l := serverGroup(c.conns, c.per), loadGroup(c.conns, c.per); s != c.servers || l != c.loads {
			t.Errorf("%d conns at %d a process: %d servers, %d load generators; want %d and %d", c.conns, c.per, s, l, c.servers, c.loads)
		}
	}
	if a, b := sourceAddr(0), sourceAddr(300); a != "127.0.0.2" || b != "127.0.1.46" {
		t.Errorf("source addresses %s, %s", a, b)
	}
}

// mergeLoads adds the parts up and merges their latencies.
func TestMergeLoads(t *testing.T) {
	a := &netresult.Load{Requests: 10, QPS: 100, Conns: 5, Elapsed: time.Second, LatencyBuckets: [][2]int64{{1000, 10}}, ClientCPU: time.Millisecond}
	b := &netresult.Load{Requests: 30, QPS: 300, Conns: 7, Elapsed: 2 * time.Second, LatencyBuckets: [][2]int64{{1_000_000, 30}}, Lost: 64, ConnErrors: 1, FirstError: "x"}
	m := mergeLoads([]*netresult.Load{a, b})
	if m.Requests != 40 || m.QPS != 400 || m.Conns != 12 || m.Elapsed != 2*time.Second || m.Lost != 64 || m.ConnErrors != 1 || m.FirstError != "x" {
		t.Errorf("merged: %+v", m)
	}
	if m.LatencyNs.P50 < 900_000 || m.LatencyNs.P50 > 1_100_000 || m.ClientCPUPerReqUs != 25 {
		t.Errorf("P50 %d (want about 1 ms: 30 of 40 there), client %.3f µs/req", m.LatencyNs.P50, m.ClientCPUPerReqUs)
	}
}
