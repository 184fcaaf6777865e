package netio_test

// The conformance suite: every engine in netio.Engines() must pass every
// test here. A new engine gets the whole suite by registering itself.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/internal/starve"
)

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	goleak.VerifyTestMain(m)
}

// forEachEngine runs fn as a subtest per engine, skipping io_uring only
// when the feature probe says this kernel or policy forbids it.
func forEachEngine(t *testing.T, fn func(t *testing.T, engine string)) {
	t.Helper()
	for _, e := range netio.Engines() {
		t.Run(e, func(t *testing.T) {
			if e == "io_uring" {
				if r := features.Probe(); !r.IOURing.Available {
					t.Skipf("io_uring unavailable here: %s", r.IOURing.Reason)
				}
			}
			fn(t, e)
		})
	}
}

func start(t *testing.T, engine string, cfg netio.Config) netio.Server {
	t.Helper()
	s, err := netio.Listen(engine, cfg)
	if err != nil {
		t.Fatalf("Listen(%s): %v", engine, err)
	}
	if s.Engine() != engine {
		t.Errorf("Engine() = %q, want %q", s.Engine(), engine)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func dial(t testing.TB, s netio.Server) *net.TCPConn {
	t.Helper()
	c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(s.Addr()))
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr(), err)
	}
	return c
}

// pattern fills b with bytes that depend on the connection and offset, so
// a byte echoed to the wrong connection or place is caught.
func pattern(b []byte, conn int, off int64) {
	x := uint64(conn)*0x9E3779B97F4A7C15 + 1
	for i := range b {
		p := uint64(off) + uint64(i)
		b[i] = byte((p*2654435761 ^ x ^ p>>8) >> 3)
	}
}

// echoStream writes total bytes to c in chunks of random size (so the
// server sees partial messages) while reading the echo concurrently, and
// checks every byte. It half-closes when done and expects EOF after the
// last byte.
func echoStream(c *net.TCPConn, id int, total int64, rng *rand.Rand) error {
	werr := make(chan error, 1)
	maxChunk := 1 + rng.IntN(200_000)
	seed := rng.Uint64()
	go func() {
		r := rand.New(rand.NewPCG(seed, 1))
		buf := make([]byte, maxChunk)
		var off int64
		for off < total {
			n := int(min(int64(1+r.IntN(maxChunk)), total-off))
			pattern(buf[:n], id, off)
			if _, err := c.Write(buf[:n]); err != nil {
				werr <- fmt.Errorf("conn %d: write at %d: %w", id, off, err)
				return
			}
			off += int64(n)
		}
		werr <- c.CloseWrite()
	}()
	got := make([]byte, 64<<10)
	want := make([]byte, len(got))
	var off int64
	for {
		n, err := c.Read(got[:1+rng.IntN(len(got))])
		if n > 0 {
			if off+int64(n) > total {
				return fmt.Errorf("conn %d: %d bytes echoed, sent %d", id, off+int64(n), total)
			}
			pattern(want[:n], id, off)
			if !bytes.Equal(got[:n], want[:n]) {
				return fmt.Errorf("conn %d: wrong bytes at offset %d", id, off)
			}
			off += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("conn %d: read at %d: %w", id, off, err)
		}
	}
	if err := <-werr; err != nil {
		return err
	}
	if off != total {
		return fmt.Errorf("conn %d: EOF after %d of %d bytes", id, off, total)
	}
	return nil
}

// TestEcho: byte-exact echo under concurrency, from a 1-byte message to
// messages many times a provided buffer, written in random pieces.
func TestEcho(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		s := start(t, engine, netio.Config{Loops: 2})
		echoConns(t, s, 48, []int64{1, 2, 63, 64, 1000, 4096, 4097, 65536, 65537, 300_000, 3 << 20}, 7)
	})
}

// echoConns checks byte-exact echo on conns connections at once, the ith
// writing a stream of sizes[i%len(sizes)] bytes in random pieces (seeded
// by seed), and the stats once they have closed.
func echoConns(t *testing.T, s netio.Server, conns int, sizes []int64, seed uint64) {
	t.Helper()
	goConns(t, s, conns, func(c *net.TCPConn, i int) error {
		return echoStream(c, i, sizes[i%len(sizes)], rand.New(rand.NewPCG(uint64(i), seed)))
	})()
	waitIdle(t, s)
	st := s.Stats()
	if st.Accepted != int64(conns) || st.BytesIn != st.BytesOut || st.Resets != 0 {
		t.Errorf("stats %+v: want %d accepted, in == out, no resets", st, conns)
	}
}

// TestPingPong: many small request/response rounds on one connection, the
// load generator's pattern, with a 1-byte message.
func TestPingPong(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		s := start(t, engine, netio.Config{})
		for _, size := range []int{1, 64, 1024} {
			c := dial(t, s)
			msg := make([]byte, size)
			got := make([]byte, size)
			for i := range 2000 {
				pattern(msg, i, 0)
				if _, err := c.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(c, got); err != nil {
					t.Fatalf("round %d, size %d: %v", i, size, err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("round %d, size %d: wrong echo", i, size)
				}
			}
			c.Close()
		}
	})
}

func waitIdle(t *testing.T, s netio.Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Active != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d connections still active after clients closed", s.Engine(), s.Stats().Active)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAccepted waits, up to 10 s, until s has accepted n connections: a
// client that resets right after its write needs no answer, and its
// connection may still wait in the listen queue when the client is done.
func waitAccepted(t *testing.T, s netio.Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Accepted < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d connections accepted of %d, 10 s after the clients were done", s.Engine(), s.Stats().Accepted, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestChurn opens and ends thousands of connections, a third by a normal
// close after a round trip, a third by reset, a third by half-close.
func TestChurn(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		s := start(t, engine, netio.Config{Loops: 2})
		churn(t, s, 3000, 16)
	})
}

// churn opens and ends n connections (churnOne) from workers goroutines.
func churn(t *testing.T, s netio.Server, n, workers int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	work := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := churnOne(s, i); err != nil && failed.Add(1) < 5 {
					t.Error(err)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	waitAccepted(t, s, int64(n))
	waitIdle(t, s)
	st := s.Stats()
	if st.Accepted != int64(n) {
		t.Errorf("accepted %d, want %d", st.Accepted, n)
	}
	// The reset third need not have been seen as resets: a reset that
	// arrives after the echo can look like a plain close.
	if st.Resets > int64(n/3) {
		t.Errorf("resets %d, want at most %d", st.Resets, n/3)
	}
}

func churnOne(s netio.Server, i int) error {
	c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(s.Addr()))
	if err != nil {
		return err
	}
	defer c.Close()
	msg := make([]byte, 1+i%300)
	pattern(msg, i, 0)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	switch i % 3 {
	case 0:
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil {
			return fmt.Errorf("conn %d: %w", i, err)
		}
		if !bytes.Equal(got, msg) {
			return fmt.Errorf("conn %d: wrong echo", i)
		}
	case 1:
		c.SetLinger(0) // close sends RST
	case 2:
		c.CloseWrite()
		got, err := io.ReadAll(c)
		if err != nil {
			return fmt.Errorf("conn %d after half-close: %w", i, err)
		}
		if !bytes.Equal(got, msg) {
			return fmt.Errorf("conn %d after half-close: %d bytes, want %d", i, len(got), len(msg))
		}
	}
	return nil
}

// TestConnLimit: one connection over MaxConns is closed at once and
// counted; the others are served.
func TestConnLimit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		connLimit(t, start(t, engine, netio.Config{MaxConns: 5, Loops: 1}), 5)
	})
}

// connLimit checks a server started with MaxConns max: the connection
// over it is closed at once and counted, and a freed place is taken
// again.
func connLimit(t *testing.T, s netio.Server, max int) {
	t.Helper()
	conns := pinged(t, s, max)
	extra := dial(t, s)
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	extra.Write([]byte("x"))
	if n, err := extra.Read(make([]byte, 1)); err == nil {
		t.Fatalf("connection over the limit got %d bytes echoed", n)
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("connection over the limit was left open")
	}
	if st := s.Stats(); st.Refused != 1 || st.Active != int64(max) {
		t.Errorf("stats %+v: want 1 refused, %d active", st, max)
	}
	conns[0].Close()
	waitActive(t, s, int64(max-1))
	c := dial(t, s)
	defer c.Close()
	ping(t, c, 99) // a freed slot is reused
}

// logLines collects what a server says through Config.Log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, msg)
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// TestAcceptStarved: a server out of descriptors (RLIMIT_NOFILE reached,
// as under `ulimit -n 64` with more clients than that) counts each failed
// accept in Stats.AcceptErrors and says so through Config.Log, naming
// EMFILE and the limit; it backs off rather than spin, serves the
// connections it has meanwhile, and accepts the waiting one once
// descriptors are free.
func TestAcceptStarved(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		// The server starts under the lowered limit: an io_uring ACCEPT
		// takes the limit in force when it is armed, not when it runs.
		fds := starve.LowerNofile(t)
		log := &logLines{}
		s := start(t, engine, netio.Config{Loops: 1, Log: log.add})
		a := dial(t, s)
		defer a.Close()
		ping(t, a, 1)

		fds.FillAllButOne() // the server's next accept has no descriptor
		b, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(s.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		deadline := time.Now().Add(10 * time.Second)
		for s.Stats().AcceptErrors == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no failed accept counted: stats %+v", s.Stats())
			}
			time.Sleep(time.Millisecond)
		}
		first := time.Now()
		ping(t, a, 2) // open connections are still served
		time.Sleep(300 * time.Millisecond)
		// A retry every AcceptPause (10 ms) makes about 30 in 300 ms; a
		// loop that spun on the readable listener would make thousands.
		st := s.Stats()
		if st.AcceptErrors > 150 {
			t.Errorf("%d failed accepts in about 300 ms: the server spins on EMFILE", st.AcceptErrors)
		}
		if st.Accepted != 1 || st.Refused != 0 || st.Resets != 0 || st.Active != 1 {
			t.Errorf("stats %+v during EMFILE: want 1 accepted and active, nothing else counted", st)
		}
		lines := log.all()
		if len(lines) == 0 {
			t.Fatal("nothing logged about the failed accepts")
		}
		t.Logf("logged: %s", lines[0])
		// At most a line a second (the first at once), whatever the
		// number of failures.
		if max := 2 + int(time.Since(first)/time.Second); len(lines) > max {
			t.Errorf("%d lines logged in %v: want at most one a second:\n%s", len(lines), time.Since(first), strings.Join(lines, "\n"))
		}
		for _, want := range []string{engine + " server on " + s.Addr().String(), "accept: too many open files (EMFILE",
			"RLIMIT_NOFILE", "wait in the listen queue, unserved, while the 1 open are served"} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("log line %q does not say %q", lines[0], want)
			}
		}

		fds.Restore()
		ping(t, b, 3) // accepted once descriptors are free
		if st := s.Stats(); st.Accepted != 2 || st.Active != 2 || st.Peak != 2 {
			t.Errorf("stats %+v: want 2 accepted, 2 active, a peak of 2", st)
		}
	})
}

// TestShutdownWhileStarved: Shutdown does not wait out an accept pause.
func TestShutdownWhileStarved(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		fds := starve.LowerNofile(t)
		s, err := netio.Listen(engine, netio.Config{Loops: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// One connection served and gone first: the server has run its
		// accept, which reserves a descriptor for a moment, before the
		// fill.
		a := dial(t, s)
		ping(t, a, 1)
		a.Close()
		waitActive(t, s, 0)
		fds.FillAllButOne()
		b, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(s.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		deadline := time.Now().Add(10 * time.Second)
		for s.Stats().AcceptErrors < 3 {
			if time.Now().After(deadline) {
				t.Fatalf("no failed accepts counted: stats %+v", s.Stats())
			}
			time.Sleep(time.Millisecond)
		}
		if st := s.Stats(); st.Accepted != 1 {
			// b was served: Shutdown would wait for it to close.
			t.Fatalf("stats %+v: the server accepted under the lowered limit", st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t0 := time.Now()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if d := time.Since(t0); d > 500*time.Millisecond {
			t.Errorf("Shutdown took %v while accepts were failing: want it at once", d)
		}
	})
}

// TestPeak: Stats.Peak is the most connections open at once, not the
// number accepted.
func TestPeak(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, netio.Config{Loops: 2})
		var conns []*net.TCPConn
		for i := range 3 {
			c := dial(t, s)
			ping(t, c, i)
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
		waitActive(t, s, 0)
		for i := range 2 {
			c := dial(t, s)
			ping(t, c, 10+i)
			c.Close()
			waitActive(t, s, 0)
		}
		if st := s.Stats(); st.Accepted != 5 || st.Peak != 3 {
			t.Errorf("stats %+v: want 5 accepted, a peak of 3", st)
		}
	})
}

func waitActive(t *testing.T, s netio.Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().Active != n {
		if time.Now().After(deadline) {
			t.Fatalf("active %d, want %d", s.Stats().Active, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func ping(t testing.TB, c *net.TCPConn, id int) {
	t.Helper()
	msg := make([]byte, 100)
	pattern(msg, id, 0)
	if _, err := c.Write(msg); err != nil {
		t.Fatalf("conn %d: %v", id, err)
	}
	got := make([]byte, len(msg))
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("conn %d: %v", id, err)
	}
	c.SetReadDeadline(time.Time{})
	if !bytes.Equal(got, msg) {
		t.Fatalf("conn %d: wrong echo", id)
	}
}

// TestManyConns holds 10,000 connections open at once, each checked with a
// round trip after all are open. The clients run in a child process (this
// test binary again), since server and client ends together need more
// than the 20,000 fds a process may have here.
func TestManyConns(t *testing.T) {
	const n = 10_000
	if testing.Short() {
		t.Skip("-short: 10,000 connections take a few seconds")
	}
	if got, err := sys.RaiseNofile(n + 500); got < n+500 {
		t.Skipf("RLIMIT_NOFILE is %d and could not be raised to %d (%v): raise the hard limit (ulimit -Hn)", got, n+500, err)
	}
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		s := start(t, engine, netio.Config{})
		cmd := exec.Command(os.Args[0], "-test.run=^TestManyConnsClient$")
		cmd.Env = append(os.Environ(), "IOPATH_NETIO_CLIENT="+s.Addr().String()+","+strconv.Itoa(n))
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		defer stdin.Close()
		lines := bufio.NewScanner(stdout)
		if !waitLine(lines, "held") {
			t.Fatalf("client did not hold %d connections", n)
		}
		if st := s.Stats(); st.Active != n {
			t.Errorf("active %d while the client holds %d", st.Active, n)
		}
		stdin.Write([]byte("go\n"))
		if !waitLine(lines, "ok") {
			t.Fatalf("the second round trip on %d held connections failed", n)
		}
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("client: %v", err)
		}
		waitIdle(t, s)
	})
}

func waitLine(sc *bufio.Scanner, want string) bool {
	for sc.Scan() {
		if sc.Text() == want {
			return true
		}
	}
	return false
}

// TestManyConnsClient is TestManyConns's client, run in a child process:
// it dials, pings every connection, says "held", waits for a line, pings
// every connection again while all are still open, and says "ok".
func TestManyConnsClient(t *testing.T) {
	spec := os.Getenv("IOPATH_NETIO_CLIENT")
	if spec == "" {
		t.Skip("the child half of TestManyConns")
	}
	addr, ns, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(ns)
	if got, err := sys.RaiseNofile(uint64(n) + 500); got < uint64(n)+500 {
		t.Fatalf("RLIMIT_NOFILE %d: %v", got, err)
	}
	ap := netip.MustParseAddrPort(addr)
	conns := make([]*net.TCPConn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	round := func(dialFirst bool) {
		var wg sync.WaitGroup
		var failed atomic.Int64
		for w := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 32 {
					if dialFirst {
						c, err := dialRetry(ap)
						if err != nil {
							if failed.Add(1) < 5 {
								t.Errorf("conn %d: %v", i, err)
							}
							continue
						}
						conns[i] = c
					}
					ping(t, conns[i], i)
				}
			}()
		}
		wg.Wait()
		if failed.Load() > 0 {
			t.FailNow()
		}
	}
	round(true)
	fmt.Println("held")
	bufio.NewReader(os.Stdin).ReadString('\n')
	round(false)
	fmt.Println("ok")
}

// dialRetry dials, retrying briefly when the listen backlog overflows.
func dialRetry(ap netip.AddrPort) (*net.TCPConn, error) {
	var err error
	for range 50 {
		var c *net.TCPConn
		c, err = net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(ap))
		if err == nil {
			return c, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, err
}

// TestSlowReader: a client that writes and never reads must stall, and
// the server must not hold more than its bound for it.
func TestSlowReader(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		const bufSize = 64 << 10
		s := start(t, engine, netio.Config{BufSize: bufSize, Loops: 1})
		// At most the bound, plus one receive buffer already in flight.
		slowReader(t, s, bufSize, 2*bufSize)
	})
}

// slowReader checks that a client that writes and never reads stalls,
// and that the server, started with BufSize bufSize, holds at most bound
// bytes for it.
func slowReader(t *testing.T, s netio.Server, bufSize, bound int64) {
	t.Helper()
	c := dial(t, s)
	defer c.Close()
	c.SetReadBuffer(64 << 10)
	var written atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 256<<10)
		for written.Load() < 1<<30 {
			n, err := c.Write(buf)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	// Wait until the writer has stopped making progress.
	var last int64 = -1
	for range 200 {
		time.Sleep(50 * time.Millisecond)
		w := written.Load()
		if w == last {
			break
		}
		last = w
	}
	st := s.Stats()
	held := st.BytesIn - st.BytesOut
	t.Logf("client wrote %d KiB before stalling; server received %d KiB, holds %d KiB (bound %d KiB)", written.Load()>>10, st.BytesIn>>10, held>>10, bound>>10)
	if written.Load() >= 1<<30 {
		t.Fatal("the writer never stalled: the server reads without bound")
	}
	if held > bound {
		t.Errorf("server holds %d bytes for one connection, bufSize %d, bound %d", held, bufSize, bound)
	}
	c.SetLinger(0)
	c.Close()
	<-done
	waitIdle(t, s)
}

// TestHalfClose: the peer half-closes after sending; every byte comes back,
// then EOF.
func TestHalfClose(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		s := start(t, engine, netio.Config{})
		c := dial(t, s)
		defer c.Close()
		msg := make([]byte, 200_000)
		pattern(msg, 1, 0)
		go func() {
			c.Write(msg)
			c.CloseWrite()
		}()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("got %d bytes back, want %d", len(got), len(msg))
		}
	})
}

// TestShutdownDrains: Shutdown while data is in flight echoes what the
// server has received, half-closes, and returns once the client closes.
func TestShutdownDrains(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		s, err := netio.Listen(engine, netio.Config{Loops: 2})
		if err != nil {
			t.Fatal(err)
		}
		ctx := shutdownWhileStreaming(t, s, 8)
		if _, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(s.Addr())); err == nil {
			t.Error("dial after Shutdown succeeded")
		}
		if st := s.Stats(); st.Active != 0 {
			t.Errorf("active %d after Shutdown", st.Active)
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("second Shutdown: %v", err)
		}
	})
}

// shutdownWhileStreaming streams on conns connections (drainClient), and
// once each has had an echo shuts s down with a 10 s deadline; it returns
// when every client has seen its EOF, with that deadline's context.
func shutdownWhileStreaming(t *testing.T, s netio.Server, conns int) context.Context {
	t.Helper()
	started := make(chan struct{}, conns)
	wait := goConns(t, s, conns, func(c *net.TCPConn, i int) error { return drainClient(c, i, started) })
	for range conns {
		<-started
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	wait()
	return ctx
}

// goConns dials n connections to s and runs fn on each, the ith with i,
// in a goroutine of its own, failing the test with fn's error; wait
// returns when every fn has returned and its connection is closed.
func goConns(t *testing.T, s netio.Server, n int, fn func(c *net.TCPConn, i int) error) (wait func()) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, s)
			defer c.Close()
			if err := fn(c, i); err != nil {
				t.Error(err)
			}
		}()
	}
	return wg.Wait
}

// pinged dials n connections to s, each answering a ping, closed when the
// test ends.
func pinged(t *testing.T, s netio.Server, n int) []*net.TCPConn {
	t.Helper()
	conns := make([]*net.TCPConn, n)
	for i := range conns {
		c := dial(t, s)
		t.Cleanup(func() { c.Close() })
		ping(t, c, i)
		conns[i] = c
	}
	return conns
}

// drainClient writes a stream until the server's FIN, reading the echo
// concurrently; what comes back must be a prefix of what was sent and end
// in EOF, not a reset.
func drainClient(c *net.TCPConn, id int, started chan<- struct{}) error {
	stop := make(chan struct{})
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		buf := make([]byte, 4096)
		var off int64
		for {
			select {
			case <-stop:
				return
			default:
			}
			pattern(buf, id, off)
			n, err := c.Write(buf)
			off += int64(n)
			if err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-wdone }()
	got := make([]byte, 32<<10)
	want := make([]byte, len(got))
	var off int64
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	once := false
	for {
		n, err := c.Read(got)
		if n > 0 {
			pattern(want[:n], id, off)
			if !bytes.Equal(got[:n], want[:n]) {
				return fmt.Errorf("conn %d: wrong bytes at %d", id, off)
			}
			off += int64(n)
			if !once && off > 64<<10 {
				once = true
				started <- struct{}{}
			}
		}
		if err == io.EOF {
			if !once {
				return fmt.Errorf("conn %d: EOF before any echo", id)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("conn %d: after %d bytes: %w (want EOF)", id, off, err)
		}
	}
}

// TestShutdownDeadline: a peer that never closes is cut off when the
// context ends, and every fd is closed all the same.
func TestShutdownDeadline(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		s, err := netio.Listen(engine, netio.Config{})
		if err != nil {
			t.Fatal(err)
		}
		shutdownDeadline(t, s)
	})
}

// shutdownDeadline checks that Shutdown cuts off a peer that never
// closes when its context ends; s must not be shut down yet.
func shutdownDeadline(t *testing.T, s netio.Server) {
	t.Helper()
	c := dial(t, s)
	defer c.Close()
	ping(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Shutdown took %v past a 200ms deadline", d)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error("the connection is still open after Shutdown's deadline")
	}
}

// TestListenErrors: bad addresses and a port in use are errors that name
// the address.
func TestListenErrors(t *testing.T) {
	for _, e := range netio.Engines() {
		for _, cfg := range []netio.Config{
			{Addr: "nonsense"},
			{Addr: "127.0.0.1:99999"},
			{Addr: "example.com:80"},
			{BufSize: -1},
			{BufSize: 1 << 40},
			{Loops: -1},
			{Loops: netio.MaxLoops + 1},
			{MaxConns: -1},
			{MaxConns: netio.MaxMaxConns + 1},
		} {
			if cfg.Validate() == nil {
				t.Errorf("Validate(%+v) = nil", cfg)
			}
			if s, err := netio.Listen(e, cfg); err == nil {
				s.Close()
				t.Errorf("%s: Listen(%+v) succeeded", e, cfg)
			}
		}
	}
	if _, err := netio.Listen("carrier-pigeon", netio.Config{}); err == nil {
		t.Error("unknown engine accepted")
	}
	forEachEngine(t, func(t *testing.T, engine string) {
		testenv.CheckFDs(t)
		s := start(t, engine, netio.Config{})
		_, err := netio.Listen(engine, netio.Config{Addr: s.Addr().String()})
		if err == nil {
			t.Fatal("second Listen on a port in use succeeded")
		}
		if want := s.Addr().String(); !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("error %q does not name %s", err, want)
		}
	})
}

// TestConcurrentStats reads Stats while loops update them (for -race).
func TestConcurrentStats(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		s := start(t, engine, netio.Config{})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = s.Stats()
					runtime.Gosched()
				}
			}
		}()
		c := dial(t, s)
		for i := range 200 {
			ping(t, c, i)
		}
		c.Close()
		close(stop)
		wg.Wait()
	})
}
