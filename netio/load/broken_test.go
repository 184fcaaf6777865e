package load

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/netio/netresult"
)

// fault is what a brokenServer does wrong, on the first connection it
// accepts, when that connection's stream reaches byte at; or, for the
// kinds that end in "after", "last" or "nofin", once the client's FIN
// came (every byte echoed).
type fault struct {
	// corrupt, drop, dup, close, closefin, reset, stall, pause, extra;
	// replay: echo the stream's first at bytes again in place of the
	// next at;
	// dup-last: echo the last n bytes again after the client's FIN;
	// junk-after: send n junk bytes after the client's FIN;
	// nofin: never answer the client's FIN (hold the connection open
	// until the server closes); junk-nofin: junk-after, then nofin.
	kind  string
	at    int64
	n     int           // for dup-last, junk-after, junk-nofin
	pause time.Duration // for pause
}

// brokenServer is an echo server that gets one thing wrong, to show that
// the load generator catches it. It is deliberately plain: a goroutine
// per connection on package net.
type brokenServer struct {
	ln     net.Listener
	f      fault
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	first  bool
	closed chan struct{} // closed by close: nofin connections let go
}

func startBroken(t *testing.T, f fault) *brokenServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &brokenServer{ln: ln, f: f, conns: map[net.Conn]bool{}, closed: make(chan struct{})}
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
	close(s.closed)
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
	var kept []byte // replay: the stream's first at bytes; dup-last: its last n
	for {
		n, err := c.Read(buf)
		if n == 0 {
			if faulty && errors.Is(err, io.EOF) {
				s.afterFIN(c, kept)
			}
			return
		}
		b := buf[:n]
		if faulty && s.f.kind == "replay" {
			// b holds stream bytes [off, end).
			at, end := s.f.at, off+int64(n)
			if off < at {
				kept = append(kept, b[:min(end, at)-off]...)
			}
			if from, to := max(off, at), min(end, 2*at); from < to {
				copy(b[from-off:to-off], kept[from-at:to-at])
			}
		}
		if faulty && s.f.kind == "dup-last" {
			kept = append(kept, b...)
			kept = kept[max(len(kept)-s.f.n, 0):]
		}
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

// afterFIN does the faults that come after the client's FIN, once every
// byte it sent was echoed; the connection closes on return.
func (s *brokenServer) afterFIN(c net.Conn, kept []byte) {
	junk := make([]byte, s.f.n)
	for i := range junk {
		junk[i] = byte(0xa5 + i)
	}
	switch s.f.kind {
	case "dup-last":
		c.Write(kept)
	case "junk-after":
		c.Write(junk)
	case "junk-nofin":
		c.Write(junk)
		<-s.closed
	case "nofin":
		<-s.closed
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
		check func(t *testing.T, r *netresult.Load)
	}{
		{"corrupt", func(t *testing.T, r *netresult.Load) {
			if r.Corrupted != 1 || r.Lost != 0 || r.ConnErrors != 0 {
				t.Errorf("one flipped byte: corrupted %d lost %d conn errors %d", r.Corrupted, r.Lost, r.ConnErrors)
			}
		}},
		{"drop", func(t *testing.T, r *netresult.Load) {
			// The stream is one byte short: it never completes,
			// and every byte after the hole is out of place.
			if r.Lost < 1 || r.Corrupted < 1 || r.ConnErrors != 1 || !strings.Contains(r.FirstError, "not echoed within") {
				t.Errorf("one dropped byte: corrupted %d lost %d conn errors %d (%s)", r.Corrupted, r.Lost, r.ConnErrors, r.FirstError)
			}
		}},
		{"dup", func(t *testing.T, r *netresult.Load) {
			if r.Corrupted < 1 {
				t.Errorf("one duplicated byte: corrupted %d", r.Corrupted)
			}
		}},
		{"extra", func(t *testing.T, r *netresult.Load) {
			if r.Corrupted < 1 {
				t.Errorf("one byte never sent: corrupted %d", r.Corrupted)
			}
		}},
		{"close", func(t *testing.T, r *netresult.Load) {
			if r.ConnErrors != 1 || !serverClosed(mode, r.FirstError) {
				t.Errorf("server closed: conn errors %d (%s)", r.ConnErrors, r.FirstError)
			}
		}},
		{"closefin", func(t *testing.T, r *netresult.Load) {
			if r.ConnErrors != 1 || !serverClosed(mode, r.FirstError) {
				t.Errorf("server closed: conn errors %d (%s)", r.ConnErrors, r.FirstError)
			}
		}},
		{"dup-last", func(t *testing.T, r *netresult.Load) {
			// The last 1000 bytes once more after the client's FIN.
			if r.Corrupted != 1000 || r.Lost != 0 || r.ConnErrors != 1 || !strings.Contains(r.FirstError, ": 1000 bytes after the last echo") {
				t.Errorf("last message echoed twice: corrupted %d lost %d conn errors %d (%s)", r.Corrupted, r.Lost, r.ConnErrors, r.FirstError)
			}
		}},
		{"junk-after", func(t *testing.T, r *netresult.Load) {
			if r.Corrupted != 7 || r.Lost != 0 || r.ConnErrors != 1 || !strings.Contains(r.FirstError, ": 7 bytes after the last echo") {
				t.Errorf("junk after the last echo: corrupted %d lost %d conn errors %d (%s)", r.Corrupted, r.Lost, r.ConnErrors, r.FirstError)
			}
		}},
		{"junk-nofin", func(t *testing.T, r *netresult.Load) {
			// The junk arrives; the FIN never does, and the drain
			// ends the wait without calling anything lost.
			if r.Corrupted != 7 || r.Lost != 0 || r.ConnErrors != 1 || !strings.Contains(r.FirstError, ": 7 bytes after the last echo") {
				t.Errorf("junk after the last echo, no FIN: corrupted %d lost %d conn errors %d (%s)", r.Corrupted, r.Lost, r.ConnErrors, r.FirstError)
			}
		}},
		{"reset", func(t *testing.T, r *netresult.Load) {
			// The kernel reports a reset once, to the first call on
			// the socket; a split connection's other half (pipeline,
			// stream) then sees EOF or a broken pipe, and may record
			// its failure first.
			reset := strings.Contains(r.FirstError, "reset") || mode != "pingpong" && serverClosed(mode, r.FirstError)
			if r.ConnErrors != 1 || !reset {
				t.Errorf("server reset: conn errors %d (%s)", r.ConnErrors, r.FirstError)
			}
			if r.Lost < 1 && mode != "stream" {
				// the writer may not have got further than the echo
				t.Logf("lost %d", r.Lost)
			}
		}},
		{"stall", func(t *testing.T, r *netresult.Load) {
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
			if c.kind == "stall" || c.kind == "drop" || c.kind == "junk-nofin" {
				drain = 400 * time.Millisecond
			}
			n := 7
			if c.kind == "dup-last" {
				n = 1000
			}
			srv := startBroken(t, fault{kind: c.kind, at: 10_003, n: n})
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

// serverClosed reports whether a connection error says the server closed
// the connection: EOF; or, for a pipeline or stream, whose writer may
// still be writing when the close arrives, the reset a closed socket
// answers data with, or EPIPE when the writer sees that reset first. A
// ping-pong client is waiting to read.
func serverClosed(mode, msg string) bool {
	return strings.Contains(msg, "EOF") ||
		mode != "pingpong" && (strings.Contains(msg, "reset") || strings.Contains(msg, "broken pipe"))
}

// TestServerKeepsHalfOpen: a server that echoes everything but never
// answers the client's FIN holds the run for the drain, and no more, and
// is not blamed: every byte came back.
func TestServerKeepsHalfOpen(t *testing.T) {
	checkFds(t)
	for _, client := range clients {
		for _, mode := range []string{"pingpong", "pipeline:8", "stream"} {
			if !drives(client, mode) {
				continue
			}
			t.Run(client+"/"+mode, func(t *testing.T) {
				srv := startBroken(t, fault{kind: "nofin"})
				res, err := measure(t, Config{
					Addr: srv.addr(), Conns: 3, Size: 1000, Mode: mustMode(t, mode), Client: client,
					Duration: 100 * time.Millisecond, Drain: time.Second,
				})
				clean(t, res, err)
			})
		}
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
// offset, whatever the period, and a message-sized shift never lines up
// with the pattern, whatever the size.
func TestPatternDistinct(t *testing.T) {
	for _, period := range []int64{patternLen, altPatternLen} {
		seen := make([]int32, period) // connection+1 starting there
		for i := 0; i < MaxConns; i++ {
			b := connBase(i, period)
			if j := seen[b]; j != 0 {
				t.Fatalf("period %d: connections %d and %d start at the same offset %d", period, j-1, i, b)
			}
			seen[b] = int32(i + 1)
		}
	}
	// Every multiple of either period up to MaxSize, and sizes no
	// period divides.
	sizes := []int64{1, 64, 1000, 4096, 65536, 1 << 20, MaxSize}
	for _, p := range []int64{patternLen, altPatternLen} {
		for s := p; s <= MaxSize; s += p {
			sizes = append(sizes, s)
		}
	}
	for _, size := range sizes {
		period := periodFor(size)
		if size%period == 0 {
			t.Fatalf("size %d: period %d divides it", size, period)
		}
		pat := pattern(period)
		if int64(len(pat)) != period+maxWindow {
			t.Fatalf("period %d: block of %d bytes", period, len(pat))
		}
		base := connBase(3, period)
		for _, d := range []int64{1, 2, 7} { // message 0 and message d
			a := expected(pat, period, base, 0, 64)
			b := expected(pat, period, base, (d*size)%period, 64)
			if string(a) == string(b) {
				t.Errorf("size %d: the stream repeats %d messages later", size, d)
			}
		}
	}
}

// TestReplayedMessage: a server that echoes an earlier message in place
// of the next is caught for a message size the first period divides,
// where every message would otherwise be the same bytes.
func TestReplayedMessage(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			const size = patternLen
			// Message 1 must be sent within the window: on a busy
			// machine that may take longer than the first window, and
			// the server replays on its first connection only, so each
			// try has a server of its own.
			cfg := Config{Conns: 1, Size: size, Mode: mustMode(t, "pingpong"), Client: client,
				Duration: 300 * time.Millisecond, Drain: time.Second}
			var res *netresult.Load
			var err error
			for {
				cfg.Addr = startBroken(t, fault{kind: "replay", at: size}).addr()
				res, err = Run(context.Background(), cfg)
				if err != nil || res.Corrupted > 0 || res.Requests >= 2 || cfg.Duration >= 5*time.Second {
					break
				}
				cfg.Duration *= 2
				t.Logf("%d requests: again for %v", res.Requests, cfg.Duration)
			}
			if err != nil {
				t.Fatal(err)
			}
			// Message 1 came back as message 0's bytes: nearly all
			// of them differ from message 1's.
			if res.Corrupted < size/2 || res.Lost != 0 || res.ConnErrors != 0 {
				t.Errorf("message 0 replayed as message 1: corrupted %d lost %d conn errors %d (%s), %d requests",
					res.Corrupted, res.Lost, res.ConnErrors, res.FirstError, res.Requests)
			}
		})
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
