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
				// To the client's FIN, then ours. (Not io.Copy: its
				// splice keeps pipes in a pool, fds checkFds counts.)
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
		client string
		window time.Duration // the check at the end of a short window, or at 1 s
	}{{ClientNet, 300 * time.Millisecond}, {ClientEpoll, 300 * time.Millisecond}, {ClientNet, 1300 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%s/%v", c.client, c.window), func(t *testing.T) {
			checkFds(t)
			addr, _ := fewServer(t, 2)
			res, err := Run(context.Background(), Config{
				Addr: addr, Conns: 8, Size: 64, Mode: mustMode(t, "pingpong"), Client: c.client,
				Warmup: 200 * time.Millisecond, Duration: c.window,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.NoEcho != 6 || res.ConnErrors != 6 || res.Carried != 2 || res.Lost != 0 || res.Corrupted != 0 {
				t.Errorf("%d no echo, %d failed, %d carried, %d lost, %d corrupted: want 6, 6, 2, 0, 0", res.NoEcho, res.ConnErrors, res.Carried, res.Lost, res.Corrupted)
			}
			// A run shorter than a second is checked at its end, a
			// longer one at 1 s.
			if want := min(c.window+200*time.Millisecond, minEchoWait); res.NoEchoWait < want || res.NoEchoWait > want+time.Second {
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

// TestNoEchoOpenLoop: in open loop only connections whose first message
// was due in the first half of the time checked are held to it.
func TestNoEchoOpenLoop(t *testing.T) {
	r := &runner{open: true, began: 1000}
	for _, first := range []int64{1000, 1400, 1600} { // due at the start, before half, after
		r.conns = append(r.conns, &conn{first: first})
	}
	r.checkNoEcho(2000)
	for i, want := range []bool{true, true, false} {
		if got := r.conns[i].noEcho.Load(); got != want {
			t.Errorf("connection due at %d: no echo %v, want %v", r.conns[i].first, got, want)
		}
	}
	r.conns[1].noEcho.Store(false)
	r.checkNoEcho(4000) // only the first check counts
	if r.conns[1].noEcho.Load() || r.noEchoWait != 1000 {
		t.Errorf("a second check changed the first's verdict")
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
	res, err := Run(context.Background(), cfg)
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
