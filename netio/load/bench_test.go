package load

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPingPong is one connection's closed-loop ping-pong against the
// net engine in this process, b.N round trips, on the code path Run
// drives (runSync): it shows what a request costs end to end with the
// client's part in it (a write, a read, two netpoller waits, the check,
// the latency record), and that the steady state allocates nothing. The
// server runs in this process, so ns/op and allocs/op hold its share too.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			addr := echoServer(b)
			cfg := Config{Addr: addr, Conns: 1, Size: size, Mode: Mode{Kind: PingPong, Depth: 1}, Duration: time.Second}
			r := newRunner(cfg, 1)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			c := r.newConn(0, nc.(*net.TCPConn), size)
			c.live.Store(1)
			r.left.Store(1)
			r.phase.Store(phaseMeasure)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			c.runSync(int64(b.N)) // closes the connection when done
			b.StopTimer()
			if c.err != nil || c.corruptAll != 0 || c.reqs != int64(b.N) {
				b.Fatalf("err %v corrupted %d requests %d of %d", c.err, c.corruptAll, c.reqs, b.N)
			}
			h := r.shards[0].h
			b.ReportMetric(float64(h.Quantile(50)), "p50-ns")
			b.ReportMetric(float64(h.Quantile(99)), "p99-ns")
		})
	}
}

// BenchmarkCheck is the verifier's cost per echoed byte (a bytes.Equal
// against the pattern), for 64 KiB reads.
func BenchmarkCheck(b *testing.B) {
	r := newRunner(Config{Conns: 1, Size: 64 << 10, Mode: Mode{Kind: Stream}}, 1)
	c := r.newConn(7, nil, 0)
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		copy(buf, c.window(c.recv, int64(len(buf))))
		c.got(buf)
	}
	if c.corruptAll != 0 || c.recv != int64(b.N)*int64(len(buf)) {
		b.Fatalf("corrupted %d, checked %d bytes", c.corruptAll, c.recv)
	}
}
