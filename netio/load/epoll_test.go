package load

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

// TestClientChoice: an empty Config.Client picks epoll exactly where the
// net client would drive a connection from one goroutine in closed loop,
// and netresult.Load.Client says which ran.
func TestClientChoice(t *testing.T) {
	for _, c := range []struct {
		mode string
		size int
		rate float64
		want string
	}{
		{"pingpong", 1, 0, ClientEpoll},
		{"pingpong", syncMax, 0, ClientEpoll},
		{"pingpong", syncMax + 1, 0, ClientNet},
		{"pipeline:32", 1024, 0, ClientEpoll},
		{"pipeline:33", 1024, 0, ClientNet},
		{"pipeline:1024", 32, 0, ClientEpoll},
		{"pingpong", 64, 100, ClientNet},
		{"pipeline:4", 64, 100, ClientNet},
		{"stream", 64, 0, ClientNet},
	} {
		cfg := Config{Mode: mustMode(t, c.mode), Size: c.size, Rate: c.rate}
		if got := cfg.client(); got != c.want {
			t.Errorf("%s × %d B rate %v: client %s, want %s", c.mode, c.size, c.rate, got, c.want)
		}
		for _, asked := range clients {
			cfg.Client = asked
			if got := cfg.client(); got != asked {
				t.Errorf("%s × %d B, client %s asked: got %s", c.mode, c.size, asked, got)
			}
		}
	}
	addr := echoServer(t)
	for mode, want := range map[string]string{"pingpong": ClientEpoll, "stream": ClientNet} {
		res, err := measure(t, Config{
			Addr: addr, Conns: 2, Size: 64, Mode: mustMode(t, mode), Duration: 50 * time.Millisecond,
		})
		clean(t, res, err)
		if res.Client != want {
			t.Errorf("%s: ran client %q, want %q", mode, res.Client, want)
		}
	}
}

// TestEpollLoops runs more loops than cores, over a number of connections
// they do not divide, under the race detector in CI.
func TestEpollLoops(t *testing.T) {
	checkFds(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(5))
	addr := echoServer(t)
	for _, conns := range []int{1, 4, 7, 23} {
		t.Run(strconv.Itoa(conns), func(t *testing.T) {
			res, err := measure(t, Config{
				Addr: addr, Conns: conns, Size: 100, Mode: mustMode(t, "pipeline:3"), Client: ClientEpoll,
				Duration: 100 * time.Millisecond, Warmup: 10 * time.Millisecond,
			})
			clean(t, res, err)
		})
	}
}

// TestTakeOver: the epoll client holds one descriptor per connection, not
// blocking, connected to the server, and none of Go's.
func TestTakeOver(t *testing.T) {
	checkFds(t)
	// A listener that accepts only once the count is taken: until then
	// the server's ends hold no descriptor of this process.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	before := testenv.OpenFDs(t)
	const n = 20
	ncs, fds, err := dialAll(context.Background(), Config{Addr: ln.Addr().String(), Conns: n}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFds(fds)
	if ncs != nil || len(fds) != n {
		t.Fatalf("%d net.Conns and %d fds for %d connections", len(ncs), len(fds), n)
	}
	if got := testenv.OpenFDs(t) - before; got != n {
		t.Errorf("%d connections hold %d descriptors", n, got)
	}
	buf := make([]byte, 8)
	for i, fd := range fds {
		// Nothing was sent, so nothing comes: a blocking socket would
		// hang here.
		if _, e := sys.SockRead(fd, buf); e != sys.EAGAIN {
			t.Fatalf("connection %d: read with nothing sent: errno %v, want EAGAIN", i, e)
		}
	}
	// Each descriptor is a connection to the listener.
	for range n {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, fd := range fds {
		var got []byte
		for len(got) < 5 && time.Now().Before(deadline) {
			m, e := sys.SockRead(fd, buf)
			if e == sys.EAGAIN {
				time.Sleep(time.Millisecond)
				continue
			}
			if e != 0 || m == 0 {
				t.Fatalf("connection %d: read: %d, %v", i, m, e)
			}
			got = append(got, buf[:m]...)
		}
		if string(got) != "hello" {
			t.Errorf("connection %d: read %q", i, got)
		}
	}
}

// BenchmarkPingPongEpoll is BenchmarkPingPong on the epoll client: one
// connection, b.N round trips, through the loop Run drives. The server
// runs in this process, so ns/op holds its share too.
func BenchmarkPingPongEpoll(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			addr := echoServer(b)
			cfg := Config{Addr: addr, Conns: 1, Size: size, Mode: Mode{Kind: PingPong, Depth: 1}, Duration: time.Second}
			_, fds, err := dialAll(context.Background(), cfg, true, nil)
			if err != nil {
				b.Fatal(err)
			}
			r := newRunner(cfg, 1)
			ec, err := newEpollClient(r, fds)
			if err != nil {
				b.Fatal(err)
			}
			r.phase.Store(phaseMeasure)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			ec.start(int64(b.N)) // closes the connection when done
			<-r.done
			b.StopTimer()
			ec.wait()
			c := r.conns[0]
			if c.err != nil || c.corruptAll != 0 || c.reqs != int64(b.N) {
				b.Fatalf("err %v corrupted %d requests %d of %d", c.err, c.corruptAll, c.reqs, b.N)
			}
			h := r.shards[0].h
			b.ReportMetric(float64(h.Quantile(50)), "p50-ns")
			b.ReportMetric(float64(h.Quantile(99)), "p99-ns")
		})
	}
}
