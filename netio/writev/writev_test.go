package writev

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/netio/netresult"
)

func TestMain(m *testing.M) {
	// Start the runtime's netpoller (its epoll fd and eventfd live as
	// long as the process) before any test counts fds.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	goleak.VerifyTestMain(m)
}

func noFdLeak(t *testing.T) {
	before := testenv.OpenFDs(t)
	t.Cleanup(func() {
		if after := testenv.OpenFDs(t); after != before {
			t.Errorf("%d fds open before, %d after", before, after)
		}
	})
}

func testWays(t *testing.T) []string {
	if err := features.HaveOps(); err != nil {
		t.Logf("io_uring left out: %v", err)
		return []string{Writes, Coalesced, NetBuffers}
	}
	return Ways()
}

// TestWaysExact: every way delivers exactly the bytes of every response,
// in order, and the counts add up.
func TestWaysExact(t *testing.T) {
	noFdLeak(t)
	const n = 300
	ways := testWays(t)
	rs, err := Run(context.Background(), Config{Ways: ways, Responses: n})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(ways)*len(DefaultParts) {
		t.Fatalf("%d results, want %d", len(rs), len(ways)*len(DefaultParts))
	}
	sizes := map[int]int{}
	for _, r := range rs {
		if !r.Verified || r.Err != "" || r.Responses != n {
			t.Errorf("%s k=%d: verified %v, %d responses, err %q", r.Way, r.K, r.Verified, r.Responses, r.Err)
		}
		// The same response for every way.
		if s, ok := sizes[r.K]; ok && s != r.RespBytes {
			t.Errorf("%s k=%d: %d bytes per response, another way sent %d", r.Way, r.K, r.RespBytes, s)
		}
		sizes[r.K] = r.RespBytes
		if r.RespBytes < r.K*DefaultMinPart || r.RespBytes > r.K*DefaultMaxPart {
			t.Errorf("k=%d: %d bytes per response, out of range", r.K, r.RespBytes)
		}
		calls := int64(n)
		if r.Way == Writes {
			calls = int64(n * r.K)
		}
		if r.Calls != calls {
			t.Errorf("%s k=%d: %d calls, want %d", r.Way, r.K, r.Calls, calls)
		}
		// The kernel's count: at least one system call per call (more
		// when the socket was full).
		if r.Syscalls < calls {
			t.Errorf("%s k=%d: %d system calls for %d calls", r.Way, r.K, r.Syscalls, calls)
		}
		if r.CPU <= 0 || r.Elapsed <= 0 || r.CPUNsPerResp <= 0 {
			t.Errorf("%s k=%d: cpu %v, elapsed %v", r.Way, r.K, r.CPU, r.Elapsed)
		}
	}
}

// TestDrain checks the reader's verification: it must catch a wrong
// byte, a lost tail, a duplicated or reordered response.
func TestDrain(t *testing.T) {
	r := newResponse(Config{MinPart: 8, MaxPart: 40, Seed: 3}, 5)
	stream := func(seqs ...uint64) []byte {
		var b []byte
		for _, s := range seqs {
			x := slices.Clone(r.tmpl)
			binary.LittleEndian.PutUint64(x, s)
			b = append(b, x...)
		}
		return b
	}
	good := stream(0, 1, 2, 3)
	if n, err := drain(bytes.NewReader(good), r); err != nil || n != 4 {
		t.Fatalf("good stream: %d, %v", n, err)
	}
	bad := slices.Clone(good)
	bad[len(r.tmpl)+10]++
	for name, b := range map[string][]byte{
		"wrong byte": bad,
		"lost tail":  good[:len(good)-1],
		"duplicated": stream(0, 1, 1, 2),
		"reordered":  stream(0, 2, 1, 3),
	} {
		if _, err := drain(bytes.NewReader(b), r); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseSyscw(t *testing.T) {
	in := "rchar: 10\nwchar: 0\nsyscr: 7\nsyscw: 42\nread_bytes: 0\n"
	if n, err := parseSyscw([]byte(in)); err != nil || n != 42 {
		t.Errorf("parseSyscw = %d, %v", n, err)
	}
	if _, err := parseSyscw([]byte("rchar: 1\n")); err == nil {
		t.Error("no syscw line: no error")
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Ways: []string{"sendfile"}}, `unknown way "sendfile"`},
		{Config{Parts: []int{0}}, "0 parts"},
		{Config{Parts: []int{MaxParts + 1}}, "1025 parts"},
		{Config{MinPart: 4}, "part sizes 4"},
		{Config{MinPart: 100, MaxPart: 50}, "part sizes 100 to 50"},
		{Config{Responses: -1}, "responses -1"},
	} {
		if _, err := Run(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v) = %v; want an error with %q", tc.cfg, err, tc.want)
		}
	}
}

func TestIOURingDisabled(t *testing.T) {
	noFdLeak(t)
	t.Setenv(features.DisableEnv, "1")
	rs, err := Run(context.Background(), Config{Ways: []string{IOURing}, Parts: []int{2}, Responses: 10})
	if err != nil {
		t.Fatalf("Run = %v; an unsupported way is not an error", err)
	}
	if len(rs) != 1 || rs[0].Verified || !strings.Contains(rs[0].Err, "not supported") {
		t.Errorf("results %+v; want one unverified, not supported", rs)
	}
}

func TestCancel(t *testing.T) {
	noFdLeak(t)
	for _, way := range testWays(t) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := Run(ctx, Config{Ways: []string{way}, Parts: []int{4}, Duration: time.Hour})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Run = %v; want context.Canceled", way, err)
		}
	}
}

func TestDurationAndRounds(t *testing.T) {
	noFdLeak(t)
	rs, err := Run(context.Background(), Config{Ways: []string{Coalesced, NetBuffers}, Parts: []int{1, 8},
		Duration: 20 * time.Millisecond, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range rs {
		order = append(order, fmt.Sprintf("%s/%d", r.Way, r.K))
		if r.Responses <= 0 || !r.Verified {
			t.Errorf("%+v", r)
		}
	}
	want := "coalesced/1 net.Buffers/1 coalesced/8 net.Buffers/8 coalesced/1 net.Buffers/1 coalesced/8 net.Buffers/8"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("runs %q, want %q (interleaved)", got, want)
	}
	m := netresult.WritevMedians(rs)
	if len(m) != 4 || m[0].Runs != 2 || m[0].Responses != rs[0].Responses+rs[4].Responses {
		t.Errorf("median %+v", m)
	}
}

// TestShortWindow: a timed run measures from its first response, so even
// a window shorter than the sender's start (here 1 ns) sends and verifies
// some responses rather than none.
func TestShortWindow(t *testing.T) {
	noFdLeak(t)
	rs, err := Run(context.Background(), Config{Ways: []string{Writes, Coalesced}, Parts: []int{2}, Duration: time.Nanosecond, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Responses < 1 || !r.Verified {
			t.Errorf("%+v: want some responses, verified", r)
		}
	}
}

// BenchmarkWritev sends b.N responses of k parts one way; it reports the
// sending thread's CPU and system calls per response.
func BenchmarkWritev(b *testing.B) {
	ways := Ways()
	if err := features.HaveOps(); err != nil {
		ways = ways[:3]
	}
	for _, way := range ways {
		for _, k := range DefaultParts {
			b.Run(fmt.Sprintf("way=%s/k=%d", way, k), func(b *testing.B) {
				cfg, err := Config{Ways: []string{way}, Parts: []int{k}, Responses: b.N}.withDefaults()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				r, err := runOne(context.Background(), cfg, way, k)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(r.RespBytes))
				b.ReportMetric(r.SyscallsPerResp, "syscalls/op")
				b.ReportMetric(r.CPUNsPerResp, "cpu-ns/op")
			})
		}
	}
}
