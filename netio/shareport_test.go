package netio_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/iopath/iopath/netio"
)

// With SharePort, servers of every engine share one port and the kernel
// spreads the connections over them; without it, a port in use is
// refused.
func TestSharePort(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		a := start(t, engine, netio.Config{Addr: "127.0.0.1:0", Loops: 1, SharePort: true})
		b := start(t, engine, netio.Config{Addr: a.Addr().String(), Loops: 1, SharePort: true})
		if b.Addr() != a.Addr() {
			t.Fatalf("the second server listens on %s, the first on %s", b.Addr(), a.Addr())
		}
		if s, err := netio.Listen(engine, netio.Config{Addr: a.Addr().String(), Loops: 1}); err == nil {
			s.Close()
			t.Fatal("a server without SharePort joined the port")
		}
		const n = 64
		for i := range n {
			c := dial(t, a)
			msg := []byte(fmt.Sprintf("conn %d", i))
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(msg))
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := readFull(c, got); err != nil || string(got) != string(msg) {
				t.Fatalf("echo %q, %v", got, err)
			}
			c.Close()
		}
		// 64 connections hashed over two listeners: each gets some (all
		// on one would happen once in 2^63).
		if sa, sb := a.Stats().Accepted, b.Stats().Accepted; sa == 0 || sb == 0 || sa+sb != n {
			t.Errorf("accepted %d and %d of %d", sa, sb, n)
		}
	})
}

func readFull(c *net.TCPConn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
