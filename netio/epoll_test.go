package netio

// Tests of the epoll engine's own mechanisms; the conformance suite
// (conformance_test.go) checks the promises every engine keeps.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

func epollStart(t *testing.T, cfg Config) *epollServer {
	t.Helper()
	s, err := Listen("epoll", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s.(*epollServer)
}

func epollDial(t *testing.T, s Server) *net.TCPConn {
	t.Helper()
	c, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(s.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func epollPing(t *testing.T, c *net.TCPConn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("echo %q, want %q", got, msg)
	}
}

// fill returns len(b) bytes that depend on the connection and offset.
func fill(b []byte, conn, off int) {
	for i := range b {
		p := off + i
		b[i] = byte(p*131 ^ p>>7 ^ conn*17)
	}
}

// TestEpollSmallBuffers echoes streams through buffers of 1, 7 and 1000
// bytes, written whole and half-closed before the client reads: every
// read fills the buffer, so connections go round the ready list, and the
// peer's FIN is queued behind bytes the loop has not read yet, so the
// loop must remember EPOLLRDHUP past a short read to see it.
func TestEpollSmallBuffers(t *testing.T) {
	for _, bufSize := range []int{1, 7, 1000} {
		t.Run(strconv.Itoa(bufSize), func(t *testing.T) {
			s := epollStart(t, Config{Loops: 1, BufSize: bufSize})
			const conns = 4
			size := 20_001
			if bufSize == 1 {
				size = 3001
			}
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			for i := range conns {
				c := epollDial(t, s)
				wg.Add(1)
				go func() {
					defer wg.Done()
					msg := make([]byte, size)
					fill(msg, i, 0)
					if _, err := c.Write(msg); err != nil {
						errs <- err
						return
					}
					c.CloseWrite()
					c.SetReadDeadline(time.Now().Add(20 * time.Second))
					got, err := io.ReadAll(c)
					if err != nil {
						errs <- fmt.Errorf("conn %d: %d bytes, then %w", i, len(got), err)
						return
					}
					if !bytes.Equal(got, msg) {
						errs <- fmt.Errorf("conn %d: %d bytes echoed, want the %d sent", i, len(got), len(msg))
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			waitEpollIdle(t, s)
			st := s.Stats()
			if want := int64(conns * size); st.BytesIn != want || st.BytesOut != want || st.Resets != 0 {
				t.Errorf("stats %+v: want %d bytes in and out, no resets", st, want)
			}
		})
	}
}

func waitEpollIdle(t *testing.T, s Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Active != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still active", s.Stats().Active)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestEpollIdleConnsHoldNoBuffers: a connection whose echo went out whole
// holds no buffer of its own, so a thousand idle connections cost far less
// than a thousand times BufSize.
func TestEpollIdleConnsHoldNoBuffers(t *testing.T) {
	const n = 1000
	const bufSize = 64 << 10
	s := epollStart(t, Config{BufSize: bufSize})
	heap := func() uint64 {
		runtime.GC()
		runtime.GC() // and the pools' victim caches
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	conns := make([]*net.TCPConn, n)
	for i := range conns {
		conns[i] = epollDial(t, s)
		epollPing(t, conns[i], "ping "+strconv.Itoa(i))
	}
	after := heap()
	runtime.KeepAlive(conns)
	grew := int64(after) - int64(before)
	t.Logf("%d idle connections: heap grew by %d KiB (client side included)", n, grew>>10)
	if grew > n*bufSize/8 {
		t.Errorf("heap grew by %d bytes for %d idle connections: per-connection buffers?", grew, n)
	}
	if st := s.Stats(); st.Active != n {
		t.Errorf("active %d, want %d", st.Active, n)
	}
}

// TestEpollUrgentData: a TCP read stops short at an urgent mark with bytes
// still queued behind it, so a short read does not prove the queue empty
// there. The client corks "hello", an urgent "!" and "world" into one
// segment; the loop must read past the mark (EPOLLPRI says it is there)
// rather than wait for an edge that never comes. The urgent byte is out
// of band: a plain read skips it, as Go's net package does.
func TestEpollUrgentData(t *testing.T) {
	s := epollStart(t, Config{Loops: 1})
	c := epollDial(t, s)
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	cork := func(on int) {
		rc.Control(func(fd uintptr) {
			if err := syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, on); err != nil {
				t.Fatal(err)
			}
		})
	}
	cork(1)
	io.WriteString(c, "hello")
	var oobErr error
	rc.Write(func(fd uintptr) bool {
		oobErr = syscall.Sendto(int(fd), []byte("!"), syscall.MSG_OOB, nil)
		return true
	})
	if oobErr != nil {
		t.Fatal(oobErr)
	}
	io.WriteString(c, "world")
	cork(0)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len("helloworld"))
	if n, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("echo %q, then %v", got[:n], err)
	}
	if string(got) != "helloworld" {
		t.Fatalf("echo %q, want %q", got, "helloworld")
	}
	epollPing(t, c, "more") // and the connection goes on
}
