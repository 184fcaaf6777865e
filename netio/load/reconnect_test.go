package load

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flakyServer echoes, and resets each connection once it has echoed cut
// bytes: a server that drops its connections mid-request.
func flakyServer(t *testing.T, cut int) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 4096)
				done := 0
				for {
					n, err := c.Read(buf)
					if n > 0 {
						// Echo at most up to cut, then drop the
						// connection with a request half echoed.
						k := min(n, max(0, cut-done))
						if k > 0 {
							c.Write(buf[:k])
						}
						done += k
						if done >= cut {
							c.(*net.TCPConn).SetLinger(0)
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
	return ln.Addr().String(), accepted
}

// A server that resets every connection mid-request: without Reconnect
// the connections fail; with either strategy they reconnect, send again
// what was not echoed whole, and every echo is verified.
func TestReconnect(t *testing.T) {
	checkFds(t)
	// 64-byte messages, each connection cut after 100 bytes: the second
	// message is half echoed when the server drops it.
	for _, strategy := range []string{ReconnectNone, ReconnectImmediate, ReconnectBackoff} {
		t.Run(strategy, func(t *testing.T) {
			addr, accepted := flakyServer(t, 100)
			res, err := Run(context.Background(), Config{Addr: addr, Conns: 4, Size: 64, Mode: mustMode(t, "pingpong"),
				Duration: 300 * time.Millisecond, Reconnect: strategy})
			if err != nil {
				t.Fatal(err)
			}
			if strategy == ReconnectNone {
				if res.ConnErrors != 4 || res.Reconnects != 0 {
					t.Errorf("none: %d failed, %d reconnects; want 4 and 0", res.ConnErrors, res.Reconnects)
				}
				return
			}
			if res.Corrupted != 0 || res.Lost != 0 || res.ConnErrors != 0 {
				t.Fatalf("%d corrupted, %d lost, %d failed (%s)", res.Corrupted, res.Lost, res.ConnErrors, res.FirstError)
			}
			// Each connection is dropped every 100 bytes: after its
			// first echo, and with its second half echoed.
			if res.Reconnects < 4 || res.Resent < res.Reconnects || res.Requests == 0 || accepted.Load() != 4+res.Reconnects {
				t.Errorf("%d reconnects, %d resent, %d requests, %d accepted", res.Reconnects, res.Resent, res.Requests, accepted.Load())
			}
		})
	}
}

// A request without an echo within RequestTimeout fails its connection,
// or makes it reconnect.
func TestRequestTimeout(t *testing.T) {
	checkFds(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer func() { ln.Close(); wg.Wait() }()
	var conns sync.Map
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true) // never answers; closed at the end
		}
	})
	defer conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	res, err := Run(context.Background(), Config{Addr: ln.Addr().String(), Conns: 2, Size: 64, Mode: mustMode(t, "pingpong"),
		Duration: 200 * time.Millisecond, RequestTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ConnErrors != 2 || !strings.Contains(res.FirstError, "no echo within the request timeout of 50ms") {
		t.Errorf("%d failed: %s", res.ConnErrors, res.FirstError)
	}
	for _, c := range []Config{
		{Reconnect: "sometimes"},
		{Reconnect: ReconnectBackoff, Mode: mustMode(t, "stream")},
		{Reconnect: ReconnectBackoff, Client: ClientEpoll},
		{RequestTimeout: -1},
	} {
		c.Addr, c.Conns, c.Size, c.Duration = "127.0.0.1:1", 1, 64, time.Second
		if c.Mode.Kind == "" {
			c.Mode = mustMode(t, "pingpong")
		}
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// A server that goes away for good mid-run: connections that reconnect
// are still dialling when the drain ends, and their error says so, with
// the last dial's cause, not only that bytes were not echoed.
func TestReconnectServerGone(t *testing.T) {
	checkFds(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						c.Write(buf[:n])
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	time.AfterFunc(100*time.Millisecond, func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	})
	res, err := Run(context.Background(), Config{Addr: ln.Addr().String(), Conns: 2, Size: 64, Mode: mustMode(t, "pingpong"),
		Duration: 300 * time.Millisecond, Drain: 200 * time.Millisecond, Reconnect: ReconnectBackoff})
	if err != nil {
		t.Fatal(err)
	}
	if res.ConnErrors != 2 || !strings.Contains(res.FirstError, "was reconnecting") || !strings.Contains(res.FirstError, "connection refused") {
		t.Errorf("%d failed, first error %q", res.ConnErrors, res.FirstError)
	}
}
