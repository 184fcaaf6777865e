package load

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/netresult"
)

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	if os.Getenv(nofileHelperEnv) != "" {
		os.Exit(nofileHelper())
	}
	// Start the runtime's netpoller (its epoll fd and eventfd live as
	// long as the process) before any test counts fds.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	goleak.VerifyTestMain(m)
}

// clients are the drivers every test that can runs under.
var clients = []string{ClientNet, ClientEpoll}

// drives reports whether client can drive mode (closed loop).
func drives(client, mode string) bool {
	return client == ClientNet || !strings.HasPrefix(mode, Stream)
}

// echoServer starts netio's net engine on loopback for the test.
func echoServer(t testing.TB) string {
	t.Helper()
	s, err := netio.Listen("net", netio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// checkFds fails the test if the process holds more fds at cleanup than
// now (closed sockets may take a moment to leave the poller). The garbage
// collector is off meanwhile: its finalizers close the fds of unreachable
// connections, which would hide a leak.
func checkFds(t *testing.T) {
	t.Helper()
	gc := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(gc) })
	testenv.CheckFDs(t)
}

func mustMode(t testing.TB, s string) Mode {
	t.Helper()
	m, err := ParseMode(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// clean fails unless the run saw no fault and measured something.
func clean(t *testing.T, res *netresult.Load, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Err(); e != nil {
		t.Fatalf("%v\n%+v", e, res)
	}
	if res.Requests == 0 || res.Bytes == 0 || res.QPS <= 0 || res.MBps <= 0 || res.Elapsed <= 0 {
		t.Fatalf("nothing measured: %+v", res)
	}
}

// runUntil runs cfg and, while enough does not hold for what it gave,
// again with twice the Duration, up to 5 s: a busy machine (two CPUs,
// -race, another test binary) may complete few messages, or none, in a
// short window, and the tests need a number of them, not a speed.
// The Duration of the last run is left in cfg.
func runUntil(t *testing.T, cfg *Config, enough func(*netresult.Load, error) bool) (*netresult.Load, error) {
	t.Helper()
	for {
		res, err := Run(context.Background(), *cfg)
		if enough(res, err) || cfg.Duration >= 5*time.Second {
			return res, err
		}
		cfg.Duration = min(2*cfg.Duration, 5*time.Second)
		t.Logf("%+v, %v: again for %v", res, err, cfg.Duration)
	}
}

// measure runs cfg until it has failed or completed a message (runUntil):
// for the tests that need a measurement, not a number of messages.
func measure(t *testing.T, cfg Config) (*netresult.Load, error) {
	t.Helper()
	return runUntil(t, &cfg, measured)
}

// measured: the run has failed or completed a message.
func measured(res *netresult.Load, err error) bool {
	return err != nil || res.Err() != nil || res.Requests > 0
}

func TestModes(t *testing.T) {
	checkFds(t)
	addr := echoServer(t)
	for _, client := range clients {
		for _, mode := range []string{"pingpong", "pipeline:4", "pipeline:64", "stream"} {
			if !drives(client, mode) {
				continue
			}
			for _, size := range []int{1, 1000, syncMax, 40 << 10, 1 << 20} {
				t.Run(fmt.Sprintf("%s/%s/%d", client, mode, size), func(t *testing.T) {
					testMode(t, addr, client, mode, size)
				})
			}
		}
	}
}

func testMode(t *testing.T, addr, client, mode string, size int) {
	m := mustMode(t, mode)
	res, err := runUntil(t, &Config{
		Addr: addr, Conns: 3, Size: size, Mode: m, Client: client,
		Duration: 100 * time.Millisecond, Warmup: 20 * time.Millisecond,
	}, measured)
	clean(t, res, err)
	if res.Mode != mode || res.Conns != 3 || res.Size != size || res.OpenLoop || res.Client != client {
		t.Errorf("result says %s × %d × %d B open=%v client %s", res.Mode, res.Conns, res.Size, res.OpenLoop, res.Client)
	}
	h := metrics.Import(res.Hist)
	if m.Kind == Stream {
		if h.Count() != 0 || res.LatencyNs.P50 != 0 {
			t.Errorf("stream measured latency: %+v", res.LatencyNs)
		}
		return
	}
	if h.Count() != res.Requests {
		t.Errorf("histogram holds %d latencies for %d requests", h.Count(), res.Requests)
	}
	l := res.LatencyNs
	if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max && l.Mean > 0) {
		t.Errorf("latencies out of order: %+v", l)
	}
	// Whole messages: a window holds at most the messages it
	// completed plus the part of those in flight at its start.
	if max := res.Requests*int64(size) + int64(2*3*m.Depth*size); res.Bytes > max {
		t.Errorf("bytes %d > %d requests × %d B + in flight", res.Bytes, res.Requests, size)
	}
}

func TestManyConns(t *testing.T) {
	checkFds(t)
	addr := echoServer(t)
	for _, client := range clients {
		t.Run(client, func(t *testing.T) { testManyConns(t, addr, client) })
	}
}

func testManyConns(t *testing.T, addr, client string) {
	var mu sync.Mutex
	seen := map[string][2]int{}
	cfg := Config{
		Addr: addr, Conns: 500, Size: 64, Mode: mustMode(t, "pingpong"), Client: client,
		Duration: 200 * time.Millisecond,
		Progress: func(phase string, done, total int) {
			mu.Lock()
			seen[phase] = [2]int{done, total}
			mu.Unlock()
		},
	}
	res, err := runUntil(t, &cfg, func(res *netresult.Load, err error) bool {
		if measured(res, err) {
			return true
		}
		mu.Lock()
		seen = map[string][2]int{} // another run: its own progress
		mu.Unlock()
		return false
	})
	clean(t, res, err)
	if res.DialTime <= 0 {
		t.Errorf("dial time %v", res.DialTime)
	}
	ms := int(cfg.Duration.Milliseconds())
	for phase, want := range map[string][2]int{"dial": {500, 500}, "run": {ms, ms}, "drain": {500, 500}} {
		if seen[phase] != want {
			t.Errorf("last progress %q = %v, want %v", phase, seen[phase], want)
		}
	}
	if _, ok := seen["warmup"]; ok {
		t.Error("progress reported a warmup that was not asked for")
	}
}

func TestDialRate(t *testing.T) {
	addr := echoServer(t)
	for _, client := range clients {
		res, err := measure(t, Config{
			Addr: addr, Conns: 20, Size: 64, Mode: mustMode(t, "pingpong"), Client: client,
			Duration: 50 * time.Millisecond, DialRate: 100,
		})
		clean(t, res, err)
		// 20 dials paced at 100/s: the 20th may not start before 190 ms.
		if res.DialTime < 190*time.Millisecond {
			t.Errorf("%s: 20 connections at 100/s dialled in %v", client, res.DialTime)
		}
	}
}

func TestOpenLoop(t *testing.T) {
	addr := echoServer(t)
	for _, mode := range []string{"pingpong", "pipeline:8"} {
		t.Run(mode, func(t *testing.T) {
			const rate, conns = 400.0, 4
			m := mustMode(t, mode)
			// A server that keeps up leaves about the messages in flight
			// at the end unfinished. A busy machine (two CPUs, -race,
			// another test binary) may hold the loop back for a few
			// hundred milliseconds, which adds the messages that fell due
			// meanwhile; a longer window dilutes that (runUntil).
			// Counting every message of the window as unfinished would be
			// ten times more.
			bound := float64(conns*m.Depth) + rate*0.1
			keptUp := func(res *netresult.Load, err error) bool {
				return measured(res, err) && (err != nil || res.Err() != nil || float64(res.Unfinished) <= bound)
			}
			res, err := runUntil(t, &Config{
				Addr: addr, Conns: conns, Size: 100, Mode: m,
				Duration: 300 * time.Millisecond, Rate: rate,
			}, keptUp)
			clean(t, res, err)
			if !res.OpenLoop || res.Rate != rate || res.Client != ClientNet {
				t.Errorf("result: open %v rate %v client %s", res.OpenLoop, res.Rate, res.Client)
			}
			// The schedule, not the server, sets the pace: no more
			// messages than were due by the end of the window (plus one
			// per connection for the rounding of phases). A closed loop
			// would do thousands here.
			if due := rate*res.Elapsed.Seconds() + conns; float64(res.Requests) > due*1.1 {
				t.Errorf("%d requests in %v at %v/s: the schedule allows %.0f", res.Requests, res.Elapsed, rate, due)
			}
			// Every message due in the window either came back in it or
			// is unfinished: the two add up to the schedule, within one
			// message per connection (each starts at its own phase),
			// and the messages due between the schedule's start and the
			// window's, which a busy machine may hold apart for some
			// tens of milliseconds (20 messages in 50 ms).
			if due, got := rate*res.Elapsed.Seconds(), float64(res.Requests+res.Unfinished); got < due-conns-rate*0.05 || got > due+conns+rate*0.05 {
				t.Errorf("%d requests + %d unfinished in %v at %v/s: the schedule had %.0f due", res.Requests, res.Unfinished, res.Elapsed, rate, due)
			}
			if float64(res.Unfinished) > bound {
				t.Errorf("%d messages unfinished at the end of the window, %d connections × %d in flight", res.Unfinished, conns, m.Depth)
			}
			if n := metrics.Import(res.Hist).Count(); n != res.Requests+res.Unfinished {
				t.Errorf("histogram holds %d latencies for %d requests + %d unfinished", n, res.Requests, res.Unfinished)
			}
		})
	}
}

// TestCoordinatedOmission stalls the server once for 300 ms: a closed
// loop sees one slow message per connection, an open loop sees every
// message that was due during the stall as late. TestStallAtEnd is its
// open-loop sequel, for a stall that lasts past the window.
func TestCoordinatedOmission(t *testing.T) {
	for _, c := range []struct {
		client string
		open   bool
	}{{ClientNet, false}, {ClientEpoll, false}, {ClientNet, true}} {
		open := c.open
		t.Run(fmt.Sprintf("%s/open=%v", c.client, open), func(t *testing.T) {
			srv := startBroken(t, fault{kind: "pause", at: 2000, pause: 300 * time.Millisecond})
			cfg := Config{
				Addr: srv.addr(), Conns: 1, Size: 100, Mode: mustMode(t, "pingpong"),
				Duration: 800 * time.Millisecond, Client: c.client,
			}
			if open {
				cfg.Rate = 1000
			}
			res, err := measure(t, cfg)
			clean(t, res, err)
			var slow int64
			for _, b := range metrics.Import(res.Hist).Buckets() {
				if b[0] >= int64(100*time.Millisecond) {
					slow += b[1]
				}
			}
			if res.LatencyNs.Max < int64(300*time.Millisecond) {
				t.Errorf("max latency %v across a 300 ms stall", time.Duration(res.LatencyNs.Max))
			}
			// Open loop at 1000/s: about 200 messages were due 100 ms or
			// more before they could go.
			if open && slow < 50 {
				t.Errorf("open loop: %d messages over 100 ms after a 300 ms stall; want the ones due during it", slow)
			}
			if !open && slow > 5 {
				t.Errorf("closed loop: %d messages over 100 ms after one 300 ms stall", slow)
			}
		})
	}
}

// TestStallAtEnd: in open loop, a server that stops echoing halfway
// through the window and never resumes leaves the messages due after the
// stall unfinished; they enter the latency figures with the time they
// had waited when the window ended, instead of vanishing from them.
func TestStallAtEnd(t *testing.T) {
	for _, mode := range []string{"pingpong", "pipeline:8"} {
		t.Run(mode, func(t *testing.T) {
			// 1000 messages of 100 B a second: the stall comes at
			// message 100, about 100 ms into the 600 ms window, early
			// enough that a client a busy machine holds back (250
			// messages in the window, seen with two -race copies at
			// once) still reaches it.
			srv := startBroken(t, fault{kind: "stall", at: 10_050})
			res, err := Run(context.Background(), Config{
				Addr: srv.addr(), Conns: 1, Size: 100, Mode: mustMode(t, mode), Rate: 1000,
				Duration: 600 * time.Millisecond, Drain: 100 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Lost == 0 || res.ConnErrors != 1 || res.Requests == 0 {
				t.Fatalf("stalled server: %+v", res)
			}
			h := metrics.Import(res.Hist)
			if h.Count() != res.Requests+res.Unfinished {
				t.Errorf("histogram holds %d latencies for %d requests + %d unfinished", h.Count(), res.Requests, res.Unfinished)
			}
			// About 500 messages were due after the stall; the window
			// may run long on a loaded machine, which adds more.
			if res.Unfinished < 150 {
				t.Errorf("%d messages unfinished after a stall at the middle of the window (%d requests in %v)", res.Unfinished, res.Requests, res.Elapsed)
			}
			var slow int64
			for _, b := range h.Buckets() {
				if b[0] >= int64(100*time.Millisecond) {
					slow += b[1]
				}
			}
			t.Logf("%d requests, %d unfinished, %d over 100 ms; latency %+v", res.Requests, res.Unfinished, slow, res.LatencyNs)
			if slow < 100 || res.LatencyNs.Max < int64(200*time.Millisecond) || res.LatencyNs.P90 < int64(50*time.Millisecond) {
				t.Errorf("the stall is missing from the tail: %d messages over 100 ms, %+v", slow, res.LatencyNs)
			}
		})
	}
}

func TestServerPID(t *testing.T) {
	addr := echoServer(t)
	res, err := measure(t, Config{
		Addr: addr, Conns: 4, Size: 64, Mode: mustMode(t, "pingpong"),
		Duration: 300 * time.Millisecond, ServerPID: os.Getpid(),
	})
	clean(t, res, err)
	// The server is this process: its CPU is the client's too. The
	// process's CPU clock counts nanoseconds, not /proc's 10 ms ticks
	// (a whole number of which would be a one in ten million chance),
	// and agrees with getrusage but for what the process burns between
	// the two calls at each end of the window.
	if res.ServerCPUSource != "clock" || res.ServerCPU%(10*time.Millisecond) == 0 {
		t.Errorf("server CPU %v from %q: want the process CPU clock", res.ServerCPU, res.ServerCPUSource)
	}
	if res.ServerCPU <= 0 || res.ServerCPUPerReqUs <= 0 {
		t.Errorf("server CPU %v (%v µs/request)", res.ServerCPU, res.ServerCPUPerReqUs)
	}
	if res.ClientCPU <= 0 || res.ClientCPUPerReqUs <= 0 {
		t.Errorf("client CPU %v (%v µs/request)", res.ClientCPU, res.ClientCPUPerReqUs)
	}
	// What the process burns between the two readings at each end (a
	// thread preempted between them on a busy machine, the others still
	// running) is up to some milliseconds; another clock (a thread's, a
	// child's) would be far off.
	tol := max(5*time.Millisecond, res.ClientCPU/5)
	if d := res.ServerCPU - res.ClientCPU; d > tol || d < -tol {
		t.Errorf("one process, two readings: the clock says %v, getrusage %v", res.ServerCPU, res.ClientCPU)
	}

	_, err = Run(context.Background(), Config{
		Addr: addr, Conns: 1, Size: 64, Mode: mustMode(t, "pingpong"),
		Duration: time.Second, ServerPID: 1 << 30,
	})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "load: server pid 1073741824: ") {
		t.Errorf("missing server pid: %v", err)
	}
}

// TestServerPIDFallback: where the kernel refuses the process CPU clock,
// the server's CPU comes from /proc/PID/stat, and the netresult.Load says so.
func TestServerPIDFallback(t *testing.T) {
	defer func(f func(int) (time.Duration, error)) { processCPUClock = f }(processCPUClock)
	processCPUClock = func(pid int) (time.Duration, error) {
		return 0, fmt.Errorf("process CPU clock of pid %d: refused: %w", pid, errors.ErrUnsupported)
	}
	addr := echoServer(t)
	res, err := measure(t, Config{
		Addr: addr, Conns: 4, Size: 64, Mode: mustMode(t, "pingpong"),
		Duration: 300 * time.Millisecond, ServerPID: os.Getpid(),
	})
	clean(t, res, err)
	// /proc counts whole ticks for user and system at each end, so the
	// two readings of one process differ by up to four ticks.
	if res.ServerCPUSource != "proc" || res.ServerCPU <= 0 || res.ServerCPU%(10*time.Millisecond) != 0 {
		t.Errorf("server CPU %v from %q: want /proc's ticks", res.ServerCPU, res.ServerCPUSource)
	}
	if d := res.ServerCPU - res.ClientCPU; d > 50*time.Millisecond || d < -50*time.Millisecond {
		t.Errorf("one process, two readings: /proc says %v, getrusage %v", res.ServerCPU, res.ClientCPU)
	}
	_, err = Run(context.Background(), Config{
		Addr: addr, Conns: 1, Size: 64, Mode: mustMode(t, "pingpong"),
		Duration: time.Second, ServerPID: 1 << 30,
	})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/proc/1073741824/stat") {
		t.Errorf("missing server pid: %v", err)
	}
}

func TestBadConfig(t *testing.T) {
	good := Config{Addr: "127.0.0.1:7", Conns: 1, Size: 1, Duration: time.Second, Mode: Mode{Kind: PingPong, Depth: 1}}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no addr", func(c *Config) { c.Addr = "" }, "address not set"},
		{"addr no port", func(c *Config) { c.Addr = "127.0.0.1" }, "want host:port"},
		{"addr port 0", func(c *Config) { c.Addr = "127.0.0.1:0" }, "port"},
		{"addr port big", func(c *Config) { c.Addr = "127.0.0.1:65536" }, "port"},
		{"addr no host", func(c *Config) { c.Addr = ":7000" }, "no host"},
		{"conns 0", func(c *Config) { c.Conns = 0 }, "conns 0"},
		{"conns negative", func(c *Config) { c.Conns = -5 }, "conns -5"},
		{"conns 2M", func(c *Config) { c.Conns = 2_000_000 }, "conns 2000000: want 1 to 1000000"},
		{"size 0", func(c *Config) { c.Size = 0 }, "size 0"},
		{"size 64MiB+1", func(c *Config) { c.Size = 64<<20 + 1 }, "size 67108865"},
		{"duration 0", func(c *Config) { c.Duration = 0 }, "duration 0s"},
		{"duration 25h", func(c *Config) { c.Duration = 25 * time.Hour }, "duration 25h"},
		{"warmup negative", func(c *Config) { c.Warmup = -time.Second }, "warmup -1s"},
		{"warmup 25h", func(c *Config) { c.Warmup = 25 * time.Hour }, "warmup 25h"},
		{"drain negative", func(c *Config) { c.Drain = -1 }, "drain"},
		{"drain 3s", func(c *Config) { c.Drain = 3 * time.Second }, "drain 3s"},
		{"mode unset", func(c *Config) { c.Mode = Mode{} }, "mode not set"},
		{"mode bad kind", func(c *Config) { c.Mode = Mode{Kind: "burst", Depth: 1} }, `"burst"`},
		{"mode pingpong depth 2", func(c *Config) { c.Mode = Mode{Kind: PingPong, Depth: 2} }, "mode"},
		{"mode pipeline depth 0", func(c *Config) { c.Mode = Mode{Kind: Pipeline} }, "mode"},
		{"mode stream depth 1", func(c *Config) { c.Mode = Mode{Kind: Stream, Depth: 1} }, "mode"},
		{"rate negative", func(c *Config) { c.Rate = -1 }, "rate -1"},
		{"rate NaN", func(c *Config) { c.Rate = math.NaN() }, "rate NaN"},
		{"rate inf", func(c *Config) { c.Rate = math.Inf(1) }, "rate +Inf"},
		{"rate stream", func(c *Config) { c.Rate = 10; c.Mode = Mode{Kind: Stream} }, "stream mode has no rate"},
		{"dial rate negative", func(c *Config) { c.DialRate = -1 }, "dial rate -1"},
		{"dial rate huge", func(c *Config) { c.DialRate = 2_000_000 }, "dial rate 2000000"},
		{"server pid negative", func(c *Config) { c.ServerPID = -1 }, "server pid -1"},
		{"client bad", func(c *Config) { c.Client = "io_uring" }, `client "io_uring": want net, epoll`},
		{"client Net", func(c *Config) { c.Client = "Net" }, `client "Net"`},
		{"client epoll stream", func(c *Config) { c.Client = ClientEpoll; c.Mode = Mode{Kind: Stream} }, "client epoll: drives closed-loop pingpong and pipeline:K only, not stream"},
		{"client epoll rate", func(c *Config) { c.Client = ClientEpoll; c.Rate = 100 }, "client epoll: drives closed loop only, not rate 100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := good
			c.edit(&cfg)
			res, err := Run(context.Background(), cfg)
			if err == nil || res != nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "load: ") {
				t.Errorf("error %q, want it to say %q", err, c.want)
			}
		})
	}
}

func TestDialRefused(t *testing.T) {
	checkFds(t)
	// A port nothing listens on: the one a server just gave back.
	s, err := netio.Listen("net", netio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr().String()
	s.Close()
	for _, client := range clients {
		_, err = Run(context.Background(), Config{
			Addr: addr, Conns: 10, Size: 64, Mode: mustMode(t, "pingpong"), Duration: time.Second, Client: client,
		})
		if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "after 4 tries") || !strings.Contains(err.Error(), "load: dial connection") {
			t.Fatalf("%s: dial to a closed port: %v", client, err)
		}
	}
}

func TestCancel(t *testing.T) {
	checkFds(t)
	addr := echoServer(t)
	for _, c := range []struct {
		client string
		mode   string
		warmup time.Duration
	}{
		{ClientNet, "pingpong", 0}, {ClientNet, "pipeline:16", 0}, {ClientNet, "stream", 0}, {ClientNet, "pingpong", time.Hour},
		{ClientEpoll, "pingpong", 0}, {ClientEpoll, "pipeline:16", 0}, {ClientEpoll, "pingpong", time.Hour},
	} {
		t.Run(fmt.Sprintf("%s/%s/warmup=%v", c.client, c.mode, c.warmup), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var start time.Time
			res, err := Run(ctx, Config{
				Addr: addr, Conns: 8, Size: 4096, Mode: mustMode(t, c.mode), Client: c.client,
				Duration: time.Hour, Warmup: c.warmup,
				// Cancel at the first report of the phase (200 ms in).
				Progress: func(phase string, done, total int) {
					if phase != "dial" && start.IsZero() {
						start = time.Now()
						cancel()
					}
				},
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			// Not a speed test: a run that ignored ctx would take an hour.
			if d := time.Since(start); d > 30*time.Second {
				t.Fatalf("returned %v after cancel", d)
			}
			if res == nil {
				t.Fatal("no partial result")
			}
			if e := res.Err(); e != nil {
				t.Errorf("a cancelled run blames the server: %v", e)
			}
			if c.warmup == 0 && (res.Requests == 0 || res.Elapsed <= 0 || res.Elapsed > time.Minute) {
				t.Errorf("partial window: %d requests in %v", res.Requests, res.Elapsed)
			}
			if c.warmup > 0 && (res.Requests != 0 || res.Elapsed != 0) {
				t.Errorf("cancelled in warmup but measured %d requests in %v", res.Requests, res.Elapsed)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Addr: addr, Conns: 1, Size: 1, Mode: mustMode(t, "stream"), Duration: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before the start: %v", err)
	}
}

// TestSmallServerBuffer runs against a server that holds only 1 KiB per
// connection, at the edge of a single goroutine's in-flight limit and past
// it: a write that waited on a read would show up as lost bytes.
func TestSmallServerBuffer(t *testing.T) {
	s, err := netio.Listen("net", netio.Config{BufSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, client := range clients {
		for _, c := range []struct {
			mode string
			size int
		}{{"pingpong", syncMax}, {"pipeline:32", 1024}, {"pipeline:33", 1024}, {"pipeline:4", 64 << 10}, {"pingpong", 256 << 10}, {"pingpong", 1 << 20}, {"stream", 64}} {
			if !drives(client, c.mode) {
				continue
			}
			// A 1 KiB buffer echoes a big message in a thousand
			// reads and writes: on a busy machine under -race a round
			// trip of 1 MiB took more than 150 ms, and a window with
			// no request completed measures nothing.
			window := 150 * time.Millisecond
			if c.size >= 256<<10 {
				window = time.Second
			}
			t.Run(fmt.Sprintf("%s/%s/%d", client, c.mode, c.size), func(t *testing.T) {
				res, err := measure(t, Config{
					Addr: s.Addr().String(), Conns: 4, Size: c.size, Mode: mustMode(t, c.mode), Client: client,
					// The longest drain: a client whose writes wait on
					// its reads never finishes it, and a busy machine
					// (which once took more than 1 s for 180 KB here)
					// does in less.
					Duration: window, Drain: 2 * time.Second,
				})
				clean(t, res, err)
			})
		}
	}
}

// A panic in Progress reaches Run's caller only once every goroutine of
// Run's has ended and every connection it opened is closed, whichever
// phase it comes in.
func TestProgressPanics(t *testing.T) {
	checkFds(t)
	addr := echoServer(t)
	for _, client := range clients {
		for _, phase := range []string{"dial", "run", "drain"} {
			t.Run(client+"/"+phase, func(t *testing.T) {
				func() {
					defer func() {
						if r := recover(); r != "stop at "+phase {
							t.Fatalf("recovered %v, want the Progress panic", r)
						}
					}()
					Run(context.Background(), Config{
						Addr: addr, Conns: 50, Size: 64, Mode: mustMode(t, "pingpong"), Client: client,
						Duration: 150 * time.Millisecond,
						Progress: func(p string, done, total int) {
							if p == phase {
								panic("stop at " + p)
							}
						},
					})
					t.Fatal("Run returned instead of panicking")
				}()
				if left := loadGoroutinesSettled(); len(left) > 0 {
					t.Errorf("goroutines of Run still running after the panic reached the caller:\n%s", strings.Join(left, "\n\n"))
				}
			})
		}
	}
}

// loadGoroutinesSettled is loadGoroutines once the list is empty, or
// after a second. A goroutine whose deferred WaitGroup.Done has let Run
// return is still on the stack for the few instructions of its return
// (CI once caught one "runnable" in the closure that called Done): it has
// done all it will do, so it is given time to go; one still there after a
// second is a leak.
func loadGoroutinesSettled() []string {
	deadline := time.Now().Add(time.Second)
	for {
		left := loadGoroutines()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// loadGoroutines lists the goroutines, other than the caller's, that are
// running this package's code.
func loadGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && strings.Contains(g, "iopath/netio/load.") && !strings.Contains(g, "load.Test") {
			left = append(left, g)
		}
	}
	return left
}

// Timeline counts the clean messages of each whole interval of the
// window, with both clients and in stream mode: no more than the window's
// requests, none in an interval cut short, and the window's start on the
// clock other processes read.
func TestTimeline(t *testing.T) {
	checkFds(t)
	addr := echoServer(t)
	for _, c := range []struct{ client, mode string }{{ClientEpoll, "pingpong"}, {ClientNet, "pingpong"}, {ClientNet, "stream"}} {
		t.Run(c.client+"/"+c.mode, func(t *testing.T) {
			before := metrics.Nanotime()
			res, err := Run(context.Background(), Config{
				Addr: addr, Conns: 4, Size: 64, Mode: mustMode(t, c.mode), Client: c.client,
				Duration: 250 * time.Millisecond, Timeline: 50 * time.Millisecond,
			})
			clean(t, res, err)
			if n := len(res.Timeline); n < 4 || n > 5 {
				t.Errorf("%d samples of 50ms in a window of %v, want 4 or 5", n, res.Elapsed)
			}
			var sum int64
			for _, k := range res.Timeline {
				sum += k
			}
			if sum <= 0 || sum > res.Requests {
				t.Errorf("timeline %v sums to %d, the window has %d requests", res.Timeline, sum, res.Requests)
			}
			if res.TimelineNs != 50*time.Millisecond || res.WindowStartNs < before || res.WindowStartNs > metrics.Nanotime() {
				t.Errorf("timeline every %v from %d (run began at %d)", res.TimelineNs, res.WindowStartNs, before)
			}
		})
	}
	// Without it, nothing is counted.
	res, err := Run(context.Background(), Config{Addr: addr, Conns: 2, Size: 64, Mode: mustMode(t, "pingpong"), Duration: 50 * time.Millisecond})
	clean(t, res, err)
	if res.Timeline != nil || res.WindowStartNs != 0 {
		t.Errorf("a run without Timeline has %v from %d", res.Timeline, res.WindowStartNs)
	}
	for _, bad := range []time.Duration{time.Millisecond, time.Second} {
		err := (&Config{Addr: addr, Conns: 1, Size: 64, Mode: mustMode(t, "pingpong"), Duration: 500 * time.Millisecond, Timeline: bad}).Validate()
		if err == nil || !strings.Contains(err.Error(), "want 0 (none) or 10ms to the duration") {
			t.Errorf("Timeline %v: %v", bad, err)
		}
	}
}
