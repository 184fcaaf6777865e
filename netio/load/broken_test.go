package load

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// fault is what a brokenServer does wrong, on the first connection it
// accepts, when that connection's stream reaches byte at.
type fault struct {
	kind  string // corrupt, drop, dup, close, closefin, reset, stall, pause, extra
	at    int64
	pause time.Duration // for pause
}

// brokenServer is an echo server that gets one thing wrong, to show that
// the load generator catches it. It is deliberately plain: a goroutine
// per connection on package net.
type brokenServer struct {
	ln    net.Listener
	f     fault
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
	first bool
}

func startBroken(t *testing.T, f fault) *brokenServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &brokenServer{ln: ln, f: f, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *brokenServer) addr() string { return s.ln.Addr().String() }

func (s *brokenServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		faulty := !s.first
		s.first = true
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c, faulty)
	}
}

func (s *brokenServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *brokenServer) serve(c net.Conn, faulty bool) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	buf := make([]byte, 64<<10)
	var off int64 // stream offset of buf[0]
	done := !faulty
	stalled := false
	for {
		n, err := c.Read(buf)
		if n == 0 {
			return
		}
		b := buf[:n]
		if !done && off+int64(n) > s.f.at {
			done = true
			i := s.f.at - off
			switch s.f.kind {
			case "corrupt":
				b[i] ^= 0x5a
			case "drop":
				b = append(b[:i:i], b[i+1:]...)
			case "dup":
				b = append(b[:i+1:i+1], b[i:]...)
			case "extra":
				b = append(b[:n:n], 0xee)
			case "close":
				c.Write(b[:i])
				return
			case "closefin":
				// The last bytes and the FIN in one segment: a client
				// that stops reading at a short read never sees the end.
				corked(c)
				c.Write(b[:i])
				return
			case "reset":
				c.Write(b[:i])
				c.(*net.TCPConn).SetLinger(0)
				return
			case "stall":
				c.Write(b[:i])
				stalled = true
			case "pause":
				time.Sleep(s.f.pause)
			}
		}
		off += int64(n)
		if !stalled {
			if _, err := c.Write(b); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// corked sets TCP_CORK on c.
func corked(c net.Conn) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		panic(err)
	}
	rc.Control(func(fd uintptr) {
		if err := sys.SetCork(int(fd), true); err != nil {
			panic(err)
		}
	})
}

// TestBrokenServers runs every mode against each fault: the run must end
// on time and say what went wrong.
func TestBrokenServers(t *testing.T) {
	checkFds(t)
	for _, client := range clients {
		for _, mode := range []string{"pingpong", "pipeline:8", "stream"} {
			if drives(client, mode) {
				testBroken(t, client, mode)
			}
		}
	}
}

func testBroken(t *testing.T, client, mode string) {
	for _, c := range []struct {
		kind  string
		check func(t *testing.T, r *Result)
	}{
		{"corrupt", func(t *testing.T, r *Result) {
			if r.Corrupted != 1 || r.Lost != 0 || r.ConnErrors != 0 {
				t.Errorf("one flipped byte: corrupted %d lost %d conn errors %d", r.Corrupted, r.Lost, r.ConnErrors)
			}
		}},
		{"drop", func(t *testing.T, r *Result) {
			// The stream is one byte short: it never completes,
			// and every byte after the hole is out of place.
			if r.Lost < 1 || r.Corrupted < 1 || r.ConnErrors != 1 || !strings.Contains(r.FirstError, "not echoed within") {
				t.Errorf("one dropped byte: corrupted %d lost %d conn errors %d (%s)", r.Corrupted, r.Lost, r.ConnErrors, r.FirstError)
			}
		}},
		{"dup", func(t *testing.T, r *Result) {
			if r.Corrupted < 1 {
				t.Errorf("one duplicated byte: corrupted %d", r.Corrupted)
			}
		}},
		{"extra", func(t *testing.T, r *Result) {
			if r.Corrupted < 1 {
				t.Errorf("one byte never sent: corrupted %d", r.Corrupted)
			}
		}},
		{"close", func(t *testing.T, r *Result) {
			// A pipeline or stream writer may still be writing when
			// the close arrives, and a closed socket answers data
			// with a reset; a ping-pong client is waiting to read.
			if r.ConnErrors != 1 || !strings.Contains(r.FirstError, "EOF") && !(mode != "pingpong" && strings.Contains(r.FirstError, "reset")) {
				t.Errorf("server closed: conn errors %d (%s)", r.ConnErrors, r.FirstError)
			}
		}},
		{"closefin", func(t *testing.T, r *Result) {
			if r.ConnErrors != 1 || !strings.Contains(r.FirstError, "EOF") && !(mode != "pingpong" && strings.Contains(r.FirstError, "reset")) {
				t.Errorf("server closed: conn errors %d (%s)", r.ConnErrors, r.FirstError)
			}
		}},
		{"reset", func(t *testing.T, r *Result) {
			if r.ConnErrors != 1 || !strings.Contains(r.FirstError, "reset") {
				t.Errorf("server reset: conn errors %d (%s)", r.ConnErrors, r.FirstError)
			}
			if r.Lost < 1 && mode != "stream" {
				// the writer may not have got further than the echo
				t.Logf("lost %d", r.Lost)
			}
		}},
		{"stall", func(t *testing.T, r *Result) {
			if r.Lost < 1 || r.ConnErrors != 1 || !strings.Contains(r.FirstError, "not echoed within the 400ms drain") {
				t.Errorf("server stalled: lost %d conn errors %d (%s)", r.Lost, r.ConnErrors, r.FirstError)
			}
		}},
	} {
		t.Run(client+"/"+mode+"/"+c.kind, func(t *testing.T) {
			// The fault comes early, in the warmup, and the drain
			// is long enough for a loaded machine except where the
			// fault is that nothing comes back.
			drain := time.Second
			if c.kind == "stall" || c.kind == "drop" {
				drain = 400 * time.Millisecond
			}
			srv := startBroken(t, fault{kind: c.kind, at: 10_003})
			res, err := Run(context.Background(), Config{
				Addr: srv.addr(), Conns: 3, Size: 1000, Mode: mustMode(t, mode), Client: client,
				Warmup: 20 * time.Millisecond, Duration: 100 * time.Millisecond, Drain: drain,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Err() == nil {
				t.Fatalf("fault %q not caught: %+v", c.kind, res)
			}
			c.check(t, res)
			// The other two connections were served right.
			if res.Requests == 0 {
				t.Errorf("no requests from the healthy connections: %+v", res)
			}
			t.Logf("%v", res.Err())
		})
	}
}

// crossServer pairs the connections it accepts and sends each one's
// bytes to the other: every byte is right for some connection, at the
// right offset, but on the wrong connection.
func TestCrossedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		var pending net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			all = append(all, c)
			mu.Unlock()
			if pending == nil {
				pending = c
				continue
			}
			a, b := pending, c
			pending = nil
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				buf := make([]byte, 4096)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						dst.Write(buf[:n])
					}
					if err != nil {
						dst.Close()
						return
					}
				}
			}
			go pipe(a, b)
			go pipe(b, a)
		}
	}()
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range all {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for _, mode := range []string{"pingpong", "stream", "epoll"} {
		client := ClientNet
		if mode == "epoll" {
			mode, client = "pingpong", ClientEpoll
		}
		res, err := Run(context.Background(), Config{
			Addr: ln.Addr().String(), Conns: 2, Size: 64, Mode: mustMode(t, mode), Client: client,
			Duration: 100 * time.Millisecond, Drain: 100 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Corrupted == 0 || res.Requests != 0 {
			t.Errorf("%s/%s: crossed connections: corrupted %d, requests %d", client, mode, res.Corrupted, res.Requests)
		}
		if res.Err() == nil {
			t.Errorf("%s/%s: crossed connections not reported", client, mode)
		}
	}
}

// The verifier's promise in numbers: every connection starts at its own
// offset, and a message-sized shift never lines up with the pattern.
func TestPatternDistinct(t *testing.T) {
	seen := make(map[int64]int, MaxConns)
	for i := 0; i < MaxConns; i++ {
		b := connBase(i)
		if j, dup := seen[b]; dup {
			t.Fatalf("connections %d and %d start at the same offset %d", j, i, b)
		}
		seen[b] = i
	}
	pat := pattern()
	for _, size := range []int64{1, 64, 1000, 4096, 65536, 1 << 20} {
		a := expected(pat, connBase(0), 0, 64)
		b := expected(pat, connBase(0), size, 64)
		if string(a) == string(b) {
			t.Errorf("message %d bytes later the stream repeats", size)
		}
	}
}

// TestNeverAccepts: the kernel completes the handshakes of a listener
// that never accepts, so the dials succeed and nothing ever comes back.
func TestNeverAccepts(t *testing.T) {
	checkFds(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, mode := range []string{"pingpong", "stream", "pipeline:4"} {
		client := ClientNet
		if mode != "stream" {
			client = ClientEpoll
		}
		res, err := Run(context.Background(), Config{
			Addr: ln.Addr().String(), Conns: 3, Size: 100, Mode: mustMode(t, mode), Client: client,
			Duration: 100 * time.Millisecond, Drain: 100 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 0 || res.QPS != 0 || res.Lost < 300 || res.ConnErrors != 3 {
			t.Errorf("%s/%s: a server that never answers: %+v", client, mode, res)
		}
		if res.Err() == nil {
			t.Errorf("%s/%s: not reported", client, mode)
		}
	}
}
