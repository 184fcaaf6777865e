package netio_test

// Tests of the io_uring engine's own modes and mechanisms. The
// conformance suite (conformance_test.go) runs every engine with the
// default Config; here the key checks run again in each io_uring mode
// (fixed files, SQPOLL, backpressure by cancel, a tiny buffer ring), and
// the mechanisms behind them are checked directly.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/internal/uring"
	"github.com/iopath/iopath/netio"
)

// requireUring skips only when the feature probe says io_uring cannot be
// used here.
func requireUring(t *testing.T) {
	t.Helper()
	if r := features.Probe(); !r.IOURing.Available {
		t.Skipf("io_uring unavailable here: %s", r.IOURing.Reason)
	}
}

// TestUringDisabled: with IOPATH_DISABLE_IO_URING=1 Listen fails with
// ErrNotSupported and says why, before it binds anything.
func TestUringDisabled(t *testing.T) {
	testenv.CheckFDs(t)
	t.Setenv(features.DisableEnv, "1")
	s, err := netio.Listen("io_uring", netio.Config{})
	if err == nil {
		s.Close()
		t.Fatal("Listen succeeded with io_uring disabled")
	}
	if !errors.Is(err, netio.ErrNotSupported) {
		t.Errorf("error %v does not wrap ErrNotSupported", err)
	}
	if !strings.Contains(err.Error(), features.DisableEnv) {
		t.Errorf("error %q does not say io_uring was disabled by %s", err, features.DisableEnv)
	}
}

// uringMode is a way to run the engine.
type uringMode struct {
	name   string
	cfg    netio.Config
	params func() (restore func()) // nil: the defaults
}

func uringModes() []uringMode {
	return []uringMode{
		{name: "default"},
		{name: "fixed", cfg: netio.Config{FixedFiles: true}},
		{name: "sqpoll", cfg: netio.Config{SQPoll: true}},
		{name: "sqpoll-fixed", cfg: netio.Config{SQPoll: true, FixedFiles: true}},
		// Single RECVs, as on kernels without the multishot RECV limits.
		{name: "single", params: func() func() { return netio.SetUringTestParams(4096, 4096, 0, true) }},
		// Buffers smaller than a message and too few for the traffic: most
		// RECVs end with ENOBUFS and are re-armed.
		{name: "tinyring", params: func() func() { return netio.SetUringTestParams(8, 128, 0, false) }},
	}
}

// listenMode starts the engine in mode m with cfg laid over the mode's
// Config, and checks that the rings are set up as asked. Unlike startMode
// it leaves closing the server to the test.
func listenMode(t *testing.T, m uringMode, cfg netio.Config) netio.Server {
	t.Helper()
	requireUring(t)
	cfg.FixedFiles = m.cfg.FixedFiles
	cfg.SQPoll = m.cfg.SQPoll
	if m.params != nil {
		restore := m.params()
		defer restore()
	}
	s, err := netio.Listen("io_uring", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range netio.UringRingFlags(s) {
		if cfg.SQPoll && f&uring.SetupSQPoll == 0 {
			t.Fatalf("SQPoll asked, ring flags %s", uring.FlagString(f))
		}
		if !cfg.SQPoll && f&uring.SetupSQPoll != 0 {
			t.Fatalf("SQPoll not asked, ring flags %s", uring.FlagString(f))
		}
	}
	return s
}

// startMode is listenMode with the server closed when the test ends.
func startMode(t *testing.T, m uringMode, cfg netio.Config) netio.Server {
	t.Helper()
	s := listenMode(t, m, cfg)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// TestUringModes runs the key conformance checks in each mode.
func TestUringModes(t *testing.T) {
	for _, m := range uringModes() {
		t.Run(m.name, func(t *testing.T) {
			t.Run("echo", func(t *testing.T) { uringEcho(t, m) })
			t.Run("churn", func(t *testing.T) { uringChurn(t, m) })
			t.Run("limit", func(t *testing.T) { uringLimit(t, m) })
			t.Run("slowreader", func(t *testing.T) { uringSlowReader(t, m) })
			t.Run("shutdown", func(t *testing.T) { uringShutdown(t, m) })
			t.Run("deadline", func(t *testing.T) { uringDeadline(t, m) })
		})
	}
}

// uringEcho: byte-exact echo of streams written in random pieces, from 1
// byte to many buffers, on two loops, and a ping-pong.
func uringEcho(t *testing.T, m uringMode) {
	testenv.CheckFDs(t)
	s := startMode(t, m, netio.Config{Loops: 2})
	echoConns(t, s, 16, []int64{1, 63, 4097, 65537, 300_000, 1 << 20}, 11)
	c := dial(t, s)
	for i := range 300 {
		ping(t, c, i)
	}
	c.Close()
	waitIdle(t, s)
	if st := s.Stats(); st.BytesIn != st.BytesOut || st.Resets != 0 {
		t.Errorf("stats %+v: want in == out, no resets", st)
	}
}

// uringChurn: connections that end by close, reset and half-close.
func uringChurn(t *testing.T, m uringMode) {
	testenv.CheckFDs(t)
	churn(t, startMode(t, m, netio.Config{Loops: 2}), 600, 8)
}

// uringLimit: the connection over MaxConns is closed at once and counted,
// and a freed place is taken again.
func uringLimit(t *testing.T, m uringMode) {
	testenv.CheckFDs(t)
	connLimit(t, startMode(t, m, netio.Config{MaxConns: 3, Loops: 1}), 3)
}

// uringSlowReader: a writer that never reads stalls, and the server holds
// no more than its receive budget, twice BufSize, for it: exactly, with
// no receive buffer in flight beyond it.
func uringSlowReader(t *testing.T, m uringMode) {
	testenv.CheckFDs(t)
	const bufSize = 64 << 10
	slowReader(t, startMode(t, m, netio.Config{BufSize: bufSize, Loops: 1}), bufSize, 2*bufSize)
}

// uringShutdown: Shutdown with streams in flight echoes what it received,
// sends FIN and returns once the peers close.
func uringShutdown(t *testing.T, m uringMode) {
	testenv.CheckFDs(t)
	s := listenMode(t, m, netio.Config{Loops: 2})
	shutdownWhileStreaming(t, s, 4)
	if st := s.Stats(); st.Active != 0 || st.Resets != 0 {
		t.Errorf("stats %+v after Shutdown: want none active, no resets", st)
	}
}

// uringDeadline: a peer that never closes is cut off at the deadline.
func uringDeadline(t *testing.T, m uringMode) {
	testenv.CheckFDs(t)
	shutdownDeadline(t, listenMode(t, m, netio.Config{}))
}

// TestUringENOBUFS: with a buffer ring far too small for the traffic,
// RECVs end with ENOBUFS; each is re-armed when buffers come back, and
// every byte still comes back in order.
func TestUringENOBUFS(t *testing.T) {
	testenv.CheckFDs(t)
	requireUring(t)
	restore := netio.SetUringTestParams(4, 64, 0, false)
	s := start(t, "io_uring", netio.Config{Loops: 1})
	restore()
	echoConns(t, s, 6, []int64{200_000}, 5)
	enobufs, _ := netio.UringCounters(s)
	st := s.Stats()
	t.Logf("%d RECVs ended with ENOBUFS; stats %+v", enobufs, st)
	if enobufs == 0 {
		t.Error("no RECV ran out of buffers: the test did not test ENOBUFS")
	}
	if st.BytesIn != 6*200_000 {
		t.Errorf("stats %+v: want %d bytes in and out", st, 6*200_000)
	}
}

// TestUringFixedFilesUseNoFds: with FixedFiles the server's connections
// are direct descriptors, in no fd table; without, each takes an fd.
func TestUringFixedFilesUseNoFds(t *testing.T) {
	requireUring(t)
	const n = 40
	for _, fixed := range []bool{false, true} {
		t.Run("fixed="+strconv.FormatBool(fixed), func(t *testing.T) {
			testenv.CheckFDs(t)
			s := start(t, "io_uring", netio.Config{Loops: 1, FixedFiles: fixed})
			before := testenv.OpenFDs(t)
			pinged(t, s, n)
			grew := testenv.OpenFDs(t) - before
			want := 2 * n // the client's socket and the server's
			if fixed {
				want = n // the client's only
			}
			if grew != want {
				t.Errorf("%d connections took %d fds, want %d", n, grew, want)
			}
		})
	}
}

// TestUringFixedTableFull: with fixed files, a connection for which the
// file table has no slot is closed by the kernel (ACCEPT fails with
// ENFILE after taking it from the queue); it is counted as refused and as
// a failed accept, said so in the log, the loop backs off, and accepts
// again once a slot is free.
func TestUringFixedTableFull(t *testing.T) {
	testenv.CheckFDs(t)
	requireUring(t)
	restore := netio.SetUringTestParams(4096, 4096, 2, false)
	log := &logLines{}
	s := start(t, "io_uring", netio.Config{Loops: 1, FixedFiles: true, Log: log.add})
	restore()
	a, b := dial(t, s), dial(t, s)
	defer a.Close()
	defer b.Close()
	ping(t, a, 1)
	ping(t, b, 2)
	c := dial(t, s)
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("a connection beyond the file table read %d bytes", n)
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("a connection beyond the file table was left open")
	}
	// The kernel closes the connection before the loop sees the CQE, and
	// the loop counts the refusal before it logs it: wait for both.
	deadline := time.Now().Add(5 * time.Second)
	for (s.Stats().Refused == 0 || len(log.all()) == 0) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := s.Stats(); st.Refused != 1 || st.Active != 2 || st.AcceptErrors == 0 {
		t.Errorf("stats %+v: want 1 refused, 2 active, failed accepts counted", st)
	}
	if l := log.all(); len(l) == 0 || !strings.Contains(l[0], "fixed-file table is full (ENFILE: 2 slots") {
		t.Errorf("log %q: want a line about the full fixed-file table", l)
	}
	a.Close()
	waitActive(t, s, 1)
	d := dial(t, s)
	defer d.Close()
	ping(t, d, 4) // the freed slot is used again
}

// TestUringListenErrors: a port in use is an error naming the address, in
// fixed-file and SQPOLL modes too, and nothing is left open.
func TestUringListenErrors(t *testing.T) {
	testenv.CheckFDs(t)
	requireUring(t)
	s := start(t, "io_uring", netio.Config{})
	for _, cfg := range []netio.Config{{}, {FixedFiles: true}, {SQPoll: true}} {
		cfg.Addr = s.Addr().String()
		_, err := netio.Listen("io_uring", cfg)
		if err == nil || !strings.Contains(err.Error(), s.Addr().String()) {
			t.Errorf("Listen(%+v) on a port in use: %v, want an error naming the address", cfg, err)
		}
	}
}

// TestUringManyLoops: as many loops as asked, each with its own ring and
// listener; connections spread over them and all are served.
func TestUringManyLoops(t *testing.T) {
	testenv.CheckFDs(t)
	requireUring(t)
	s := start(t, "io_uring", netio.Config{Loops: 4})
	if n := len(netio.UringRingFlags(s)); n != 4 {
		t.Fatalf("%d loops, want 4", n)
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, s)
			defer c.Close()
			for j := range 20 {
				ping(t, c, i*100+j)
			}
		}()
	}
	wg.Wait()
	waitIdle(t, s)
	if st := s.Stats(); st.Accepted != 64 {
		t.Errorf("accepted %d, want 64", st.Accepted)
	}
	t.Log(fmt.Sprintf("ring flags %s", uring.FlagString(netio.UringRingFlags(s)[0])))
}

// TestUringFairness: streams that never pause share a buffer ring far too
// small for them, so that RECVs keep running out of buffers. Connections
// waiting for buffers take turns, each armed with a share of the buffers
// that came back, and a connection armed for its turn must get data
// before the ring runs dry again: nearly every turn is kept, where a loop
// that let the first in line take every buffer loses most of them. Every
// stream must also have 64 KiB echoed while the others keep writing.
func TestUringFairness(t *testing.T) {
	testenv.CheckFDs(t)
	requireUring(t)
	var turns, lost int64
	for round := range 10 {
		restore := netio.SetUringTestParams(8, 128, 0, false)
		s, err := netio.Listen("io_uring", netio.Config{Loops: 2})
		restore()
		if err != nil {
			t.Fatal(err)
		}
		const conns = 4
		started := make(chan struct{}, conns)
		errs := make(chan error, conns)
		for i := range conns {
			go func() {
				c := dial(t, s)
				defer c.Close()
				errs <- drainClient(c, i, started)
			}()
		}
		timeout := time.After(20 * time.Second)
		for range conns {
			select {
			case <-started:
			case <-timeout:
				t.Errorf("round %d: a stream had nothing echoed for 20 s", round)
			}
		}
		s.Close()
		for range conns {
			<-errs // the server's close ends each client, EOF or reset
		}
		tr, lo := netio.UringTurns(s)
		turns += tr
		lost += lo
		if t.Failed() {
			return
		}
	}
	t.Logf("%d turns, %d lost", turns, lost)
	if turns == 0 {
		t.Fatal("no connection waited for buffers: the test did not test the queue")
	}
	if lost > turns/20 {
		t.Errorf("%d of %d turns lost: connections armed for their turn find the ring dry", lost, turns)
	}
}

// TestUringFixedManyConns: thousands of connections as direct
// descriptors, each served, with the server taking no fd for any.
func TestUringFixedManyConns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: thousands of connections take a second or two")
	}
	testenv.CheckFDs(t)
	requireUring(t)
	const n = 3000
	if got, err := sys.RaiseNofile(n + 500); got < n+500 {
		t.Skipf("RLIMIT_NOFILE is %d and could not be raised to %d (%v)", got, n+500, err)
	}
	s := start(t, "io_uring", netio.Config{FixedFiles: true, Loops: 2})
	before := testenv.OpenFDs(t)
	conns := make([]*net.TCPConn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				c, err := dialRetry(s.Addr())
				if err != nil {
					t.Errorf("conn %d: %v", i, err)
					return
				}
				conns[i] = c
				ping(t, c, i)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if st := s.Stats(); st.Active != n || st.Accepted != n {
		t.Errorf("stats %+v: want %d accepted and active", st, n)
	}
	if grew := testenv.OpenFDs(t) - before; grew != n {
		t.Errorf("%d connections took %d fds in this process, want %d (the clients' only)", n, grew, n)
	}
}

// TestUringStalledPeerKeepsNoBuffers: the bytes of a connection whose
// peer does not read are copied out of the provided buffers, so that with
// a ring smaller than one connection's BufSize, another connection is
// still echoed. Without the copy the stalled connection would hold every
// buffer until its peer read.
func TestUringStalledPeerKeepsNoBuffers(t *testing.T) {
	testenv.CheckFDs(t)
	requireUring(t)
	restore := netio.SetUringTestParams(8, 4096, 0, false) // 32 KiB in all
	s := start(t, "io_uring", netio.Config{Loops: 1, BufSize: 64 << 10})
	restore()
	slow := dial(t, s)
	defer slow.Close()
	slow.SetReadBuffer(16 << 10)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := slow.Write(buf); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for netio.UringStalled(s) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the connection whose peer does not read never stalled")
		}
		time.Sleep(time.Millisecond)
	}
	c := dial(t, s)
	defer c.Close()
	msg := make([]byte, 1000)
	got := make([]byte, len(msg))
	for i := range 100 {
		pattern(msg, i, 0)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("round %d beside a stalled connection: %v", i, err)
		}
		if string(got) != string(msg) {
			t.Fatalf("round %d: wrong echo", i)
		}
	}
	slow.SetLinger(0)
	slow.Close()
	waitActive(t, s, 1)
}
