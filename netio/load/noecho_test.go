package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/netio/netresult"
)

// fewServer is an echo server that serves at most k connections at once
// and accepts the next only when one has closed, as a server out of file
// descriptors does: the rest wait in its listen queue. It returns the
// address and the listener.
func fewServer(t *testing.T, k int) (string, *net.TCPListener) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		slots := make(chan struct{}, k)
		for {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer func() { <-slots }()
				defer c.Close()
				echoToEOF(c) // to the client's FIN, then ours
			})
		}
	})
	t.Cleanup(func() {
		close(stop)
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String(), ln
}

// TestNoEcho: connections a server leaves unserved through the warm-up
// fail the run, and say so, even though the server serves them later
// (in the drain, once the first ones close); Carried counts the ones
// the window's figures come from.
func TestNoEcho(t *testing.T) {
	for _, c := range []struct {
		client         string
		warmup, window time.Duration
	}{
		{ClientNet, 0, 1300 * time.Millisecond},                      // checked at 1 s
		{ClientEpoll, 0, 1300 * time.Millisecond},                    // checked at 1 s
		{ClientNet, 1200 * time.Millisecond, 300 * time.Millisecond}, // at the end of the warm-up
	} {
		t.Run(fmt.Sprintf("%s/%v+%v", c.client, c.warmup, c.window), func(t *testing.T) {
			checkFds(t)
			addr, _ := fewServer(t, 2)
			res, err := Run(context.Background(), Config{
				Addr: addr, Conns: 8, Size: 64, Mode: mustMode(t, "pingpong"), Client: c.client,
				Warmup: c.warmup, Duration: c.window,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.NoEcho != 6 || res.ConnErrors != 6 || res.Carried != 2 || res.Lost != 0 || res.Corrupted != 0 {
				t.Errorf("%d no echo, %d failed, %d carried, %d lost, %d corrupted: want 6, 6, 2, 0, 0", res.NoEcho, res.ConnErrors, res.Carried, res.Lost, res.Corrupted)
			}
			if want := max(c.warmup, minEchoWait); res.NoEchoWait < want || res.NoEchoWait > want+time.Second {
				t.Errorf("no-echo wait %v, want about %v", res.NoEchoWait, want)
			}
			e := res.Err()
			if e == nil || !strings.Contains(e.Error(), "6 of 8 connections had no echo within the first ") ||
				!strings.Contains(e.Error(), "the server left them unserved") {
				t.Errorf("Err() = %v", e)
			}
			if !strings.Contains(res.FirstError, "no echo within the first") {
				t.Errorf("first error %q", res.FirstError)
			}
		})
	}
}

// TestNoEchoShortRun: a run shorter than the check's wait is not checked
// (on a busy machine many connections may wait that long for a first
// turn): the unserved connections, served in the drain, pass.
func TestNoEchoShortRun(t *testing.T) {
	checkFds(t)
	addr, _ := fewServer(t, 2)
	res, err := Run(context.Background(), Config{
		Addr: addr, Conns: 8, Size: 64, Mode: mustMode(t, "pingpong"), Duration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoEcho != 0 || res.NoEchoWait != 0 || res.Err() != nil || res.Carried != 2 {
		t.Errorf("%d no echo after %v, %d carried, %v: want no check, 2 carried", res.NoEcho, res.NoEchoWait, res.Carried, res.Err())
	}
}

// TestNoEchoSlowServer: a server that gives each connection its first
// turn late, all along the wait, is slow, not starving any: connections
// still waiting at the check are not failed (10,000 connections of 16 KiB
// messages can take more than a second to get their first echo).
func TestNoEchoSlowServer(t *testing.T) {
	checkFds(t)
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer func() { ln.Close(); wg.Wait() }()
	wg.Go(func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				time.Sleep(time.Duration(i) * 40 * time.Millisecond) // the i-th first turn
				echoToEOF(c)
			})
		}
	})
	res, err := Run(context.Background(), Config{
		Addr: ln.Addr().String(), Conns: 40, Size: 64, Mode: mustMode(t, "pingpong"), Duration: 1200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoEchoWait < minEchoWait || res.NoEcho != 0 || res.Err() != nil {
		t.Errorf("checked at %v: %d no echo, %v: want the check and no failure", res.NoEchoWait, res.NoEcho, res.Err())
	}
}

// TestNoEchoRule: which connections the check fails, closed and open
// loop (times in ns from the start).
func TestNoEchoRule(t *testing.T) {
	for _, c := range []struct {
		name  string
		open  bool
		first []int64 // when each connection's first message went (open loop)
		echo  []int64 // when its first echo came (0: none)
		want  []bool
	}{
		// Two answered within 10 ns; the others waited the whole
		// 1000 ns, 100 times as long.
		{"closed, starving", false, nil, []int64{10, 8, 0, 0}, []bool{false, false, true, true}},
		// Answered all along the wait: slow, not starving.
		{"closed, slow", false, nil, []int64{100, 300, 500, 700, 900, 0, 0}, []bool{false, false, false, false, false, false, false}},
		// None answered: nothing to compare with.
		{"closed, none answered", false, nil, []int64{0, 0}, []bool{false, false}},
		// Open loop: due at the start or before half the time are held
		// to it, due after half are not.
		{"open", true, []int64{0, 0, 400, 600}, []int64{10, 0, 0, 0}, []bool{false, true, true, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const began = 1000
			r := &runner{open: c.open, began: began}
			for i, e := range c.echo {
				cn := &conn{}
				if c.open {
					cn.first = began + c.first[i]
				}
				if e != 0 {
					cn.firstEcho.Store(began + e)
					if c.open {
						cn.firstEcho.Store(cn.first + e)
					}
				}
				r.conns = append(r.conns, cn)
			}
			r.checkNoEcho(began + 1000)
			for i, want := range c.want {
				if got := r.conns[i].noEcho.Load(); got != want {
					t.Errorf("connection %d: unserved %v, want %v", i, got, want)
				}
			}
			r.checkNoEcho(began + 5000) // only the first check counts
			if r.noEchoWait != 1000 {
				t.Errorf("a second check ran")
			}
		})
	}
}

// TestServerPIDNotTheServer: a ServerPID that holds no socket listening
// on the port is an error before the run; one that holds the listening
// socket but does none of the work (a process that inherited it and
// sleeps) is an error after it, not a CPU figure of 0 per request.
func TestServerPIDNotTheServer(t *testing.T) {
	addr, ln := fewServer(t, 100)
	sleeper := func(t *testing.T, files ...*os.File) int {
		cmd := exec.Command("sleep", "60")
		cmd.ExtraFiles = files
		if err := cmd.Start(); err != nil {
			t.Skipf("no sleep(1) to stand in for another process: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// Wait until it sleeps: the CPU it spends starting must not
		// fall in the window.
		stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if b, err := os.ReadFile(stat); err == nil && strings.Contains(string(b), "(sleep) S ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sleep(1) not asleep after 10 s")
			}
		}
		return cmd.Process.Pid
	}
	cfg := Config{Addr: addr, Conns: 4, Size: 64, Mode: mustMode(t, "pingpong"), Duration: 300 * time.Millisecond}

	cfg.ServerPID = sleeper(t)
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "(sleep) holds no socket listening on port") || !strings.Contains(err.Error(), "it is not the server at "+addr) {
		t.Errorf("a pid that does not listen: %v", err)
	}

	// A process that holds the listening socket but never accepts: the
	// connections go to this process's server, which shares the socket.
	// (Not ln.File: that makes the socket blocking, and this process's
	// accept then never wakes up to the listener's close.)
	rc, err := ln.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var f *os.File
	rc.Control(func(fd uintptr) {
		if d, err := sys.DupCloexec(int(fd)); err == nil {
			f = os.NewFile(uintptr(d), "listener")
		}
	})
	if f == nil {
		t.Fatal("cannot dup the listener")
	}
	cfg.ServerPID = sleeper(t, f)
	f.Close()
	res, err := runUntil(t, &cfg, func(res *netresult.Load, err error) bool {
		return err != nil || res.Requests >= minServerCPUReqs["clock"]
	})
	if err == nil || !strings.Contains(err.Error(), "used no CPU time (clock)") || !strings.Contains(err.Error(), "it is not that server's process") {
		t.Errorf("a pid that does no work: %v", err)
	}
	if res == nil || res.ServerCPUSource != "" || res.Requests < minServerCPUReqs["clock"] {
		t.Errorf("result %+v: want the requests and no server CPU source", res)
	}
	if errors.Is(err, context.Canceled) {
		t.Error("not an interruption")
	}
}

// TestFlightBudget: the bytes a run keeps in flight stay within
// flightBudget up to 16,384 connections, so that the kernel's TCP memory
// never reaches the pressure where it starves some connections of any
// byte (10,000 connections once had 1.25 GiB in flight).
func TestFlightBudget(t *testing.T) {
	for _, n := range []int{1, 100, 1000, 10_000, 16_384} {
		r := newRunner(Config{Conns: n, Size: 16 << 10, Mode: mustMode(t, "pipeline:16"), Duration: time.Second}, n)
		if total := r.window * int64(n); total > flightBudget {
			t.Errorf("%d connections: %d bytes each in flight, %d MiB in all, over the budget of %d MiB", n, r.window, total>>20, flightBudget>>20)
		}
		if r.window < minFlight {
			t.Errorf("%d connections: a window of %d bytes", n, r.window)
		}
	}
}

// echoToEOF echoes what c reads until the client's FIN or an error.
// (Not io.Copy: its splice keeps pipes in a pool, fds checkFds counts.)
func echoToEOF(c net.Conn) {
	b := make([]byte, 4096)
	for {
		n, err := c.Read(b)
		if n > 0 {
			if _, err := c.Write(b[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
