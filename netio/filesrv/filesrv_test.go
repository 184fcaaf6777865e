package filesrv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/netio/internal/starve"
	"github.com/iopath/iopath/netio/netresult"
)

const childEnv = "FILESRV_TEST_CHILD" // "method:path": be a server child

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(child(v))
	}
	// Start the runtime's netpoller (its epoll fd and eventfd live as
	// long as the process) before any test counts fds.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	goleak.VerifyTestMain(m)
}

// child serves on the listener inherited as fd 3 until SIGTERM, as
// `iopath net bench` runs Serve in a child process.
func child(v string) int {
	method, path, _ := strings.Cut(v, ":")
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, ln, ServerConfig{Path: path, Method: method}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// testFile writes size pseudo-random bytes to a new file in dir.
func testFile(t testing.TB, dir string, size int) (string, []byte) {
	t.Helper()
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, fmt.Sprintf("f%d", size))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// noFdLeak fails the test if it ends with more fds open than it began.
func noFdLeak(t *testing.T) {
	before := testenv.OpenFDs(t)
	t.Cleanup(func() {
		if after := testenv.OpenFDs(t); after != before {
			t.Errorf("%d fds open before, %d after", before, after)
		}
	})
}

// needMethod skips io_uring when this process cannot use it, saying why.
func needMethod(t *testing.T, m string) {
	t.Helper()
	if m != IOURing {
		return
	}
	if err := features.HaveOps(); err != nil {
		t.Skipf("%s: %v", m, err)
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// wantSyscalls is what one response costs each method, the request's recv
// included, retries of calls a signal cut short left out (see
// Stats.Retries: Go's runtime signals its threads to preempt them, and a
// blocking call the signal lands in returns EINTR or short).
func wantSyscalls(m string, size int) int {
	chunks := ceilDiv(size, DefaultChunk)
	switch m {
	case ReadWrite:
		if size == 0 {
			return 2 // recv, send header
		}
		return 1 + 2*chunks // recv, (pread, send)×chunks
	case Sendfile:
		if size == 0 {
			return 2
		}
		return 3 // recv, send header, sendfile
	case Splice:
		return 2 + 2*chunks // recv, send header, (splice in, splice out)×chunks
	default: // io_uring: one io_uring_enter per Depth pairs, the next RECV in the last
		return max(ceilDiv(chunks, DefaultDepth), 1)
	}
}

func TestByteExact(t *testing.T) {
	noFdLeak(t)
	dir := t.TempDir()
	for _, size := range []int{0, 1, 4096, 1<<20 + 1} {
		path, _ := testFile(t, dir, size)
		for _, m := range Methods() {
			t.Run(fmt.Sprintf("%s/%d", m, size), func(t *testing.T) {
				needMethod(t, m)
				const conns, count = 2, 3
				r, err := Run(context.Background(), Config{Path: path, Method: m, Conns: conns, Count: count})
				if err != nil {
					t.Fatal(err)
				}
				if !r.Verified || r.Corrupted != 0 || r.Responses != conns*count || r.Bytes != int64(conns*count*size) {
					t.Fatalf("verified %v, corrupted %d, %d responses, %d bytes; want %d responses of %d bytes",
						r.Verified, r.Corrupted, r.Responses, r.Bytes, conns*count, size)
				}
				if want := int64(conns * count * wantSyscalls(m, size)); r.Syscalls-r.SyscallRetries != want || r.SyscallRetries < 0 {
					t.Errorf("%d system calls, %d of them retries, want %d besides the retries (%d per response)",
						r.Syscalls, r.SyscallRetries, want, wantSyscalls(m, size))
				} else if r.SyscallRetries > 0 {
					t.Logf("%d system calls, %d of them retries of calls a signal cut short", r.Syscalls, r.SyscallRetries)
				}
				if r.Method != m || r.FileSize != int64(size) || !r.InProcess || r.ServerCPU <= 0 {
					t.Errorf("result %+v", r)
				}
			})
		}
	}
}

// TestEmptyFile pins down what serving an empty file means: a response
// of length 0, the header alone, and the connection stays usable.
func TestEmptyFile(t *testing.T) {
	noFdLeak(t)
	path, _ := testFile(t, t.TempDir(), 0)
	for _, m := range Methods() {
		t.Run(m, func(t *testing.T) {
			needMethod(t, m)
			addr, stop := serveTest(t, path, m)
			defer stop()
			c, err := Dial(context.Background(), addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for range 3 {
				n, err := c.Get(func(off int64, b []byte) error {
					return fmt.Errorf("body of an empty file: %d bytes at %d", len(b), off)
				})
				if err != nil || n != 0 {
					t.Fatalf("Get = %d, %v; want 0, nil", n, err)
				}
			}
		})
	}
}

// serveTest runs Serve on a loopback listener until stop, which returns
// Serve's error.
func serveTest(t *testing.T, path, method string) (string, func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, ServerConfig{Path: path, Method: method}) }()
	var once sync.Once
	var serr error
	stop := func() error {
		once.Do(func() { cancel(); serr = <-done })
		return serr
	}
	t.Cleanup(func() { stop() })
	return ln.Addr().String(), stop
}

// threadIO reads a handler thread's own counters from
// /proc/thread-self/io: one pread per reading, on an fd opened once.
type threadIO struct{ fd int }

func (t threadIO) read() (syscr, syscw int64) {
	var b [512]byte
	n, e := sys.PreadOnce(t.fd, b[:], 0)
	if e != 0 {
		return -1, -1
	}
	for _, line := range strings.Split(string(b[:n]), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr:"); ok {
			syscr, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			syscw, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return syscr, syscw
}

// TestPipelined sends several requests in one segment (the server reads
// them in one recv) with chunks and depths that do not divide the file,
// and reads the responses back to back.
func TestPipelined(t *testing.T) {
	noFdLeak(t)
	path, content := testFile(t, t.TempDir(), 3*4096+7)
	for _, m := range Methods() {
		for _, depth := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/depth%d", m, depth), func(t *testing.T) {
				needMethod(t, m)
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- Serve(ctx, ln, ServerConfig{Path: path, Method: m, Chunk: 4096, Depth: depth}) }()
				defer func() {
					cancel()
					if err := <-done; err != nil {
						t.Error(err)
					}
				}()
				nc, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				const n = 5
				if _, err := nc.Write([]byte(strings.Repeat("G", n))); err != nil {
					t.Fatal(err)
				}
				want := binaryLE(int64(len(content)))
				buf := make([]byte, n*(8+len(content)))
				if _, err := io.ReadFull(nc, buf); err != nil {
					t.Fatal(err)
				}
				for i := range n {
					r := buf[i*(8+len(content)):][:8+len(content)]
					if string(r[:8]) != string(want) || string(r[8:]) != string(content) {
						t.Fatalf("response %d differs", i)
					}
				}
			})
		}
	}
}

func binaryLE(v int64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}

// TestThroughUserSpace checks with the kernel's own per-thread counters
// that readwrite moves every byte with pread(2) into user space (and
// never calls sendfile or splice behind our back, which Go's io.Copy
// would), and that sendfile really calls sendfile(2). syscr counts
// read-family calls (pread, and sendfile), syscw write-family calls
// (write, writev, and sendfile; not send(2), nor splice).
func TestThroughUserSpace(t *testing.T) {
	noFdLeak(t)
	const size = 1<<20 + 1
	path, _ := testFile(t, t.TempDir(), size)
	type delta struct{ r, w int64 }
	var (
		mu     sync.Mutex
		start  = map[*conn][3]int64{}
		deltas []delta
	)
	testHookThread = func(c *conn, end bool) {
		mu.Lock()
		defer mu.Unlock()
		if !end {
			fd, err := sys.Open("/proc/thread-self/io", sys.O_RDONLY)
			if err != nil {
				t.Error(err)
				return
			}
			r, w := threadIO{fd}.read()
			start[c] = [3]int64{int64(fd), r, w}
			return
		}
		s := start[c]
		r, w := threadIO{int(s[0])}.read()
		sys.Close(int(s[0]))
		if !c.control {
			deltas = append(deltas, delta{r - s[1], w - s[2]})
		}
	}
	defer func() { testHookThread = nil }()
	const count = 3 // + 1 warmup response
	chunks := int64(ceilDiv(size, DefaultChunk))
	for _, tc := range []struct {
		method       string
		syscr, syscw int64 // per connection; syscr includes the hook's first reading
	}{
		{ReadWrite, (count+1)*chunks + 1, 0},
		{Sendfile, (count + 1) + 1, count + 1},
	} {
		deltas = nil
		if _, err := Run(context.Background(), Config{Path: path, Method: tc.method, Count: count}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := deltas
		mu.Unlock()
		if len(got) != 1 || got[0] != (delta{tc.syscr, tc.syscw}) {
			t.Errorf("%s: data connection threads made (syscr, syscw) %v, want [{%d %d}]", tc.method, got, tc.syscr, tc.syscw)
		}
	}
}

func TestShrinkWhileServing(t *testing.T) {
	noFdLeak(t)
	const size = 24 << 20 // more than the socket buffers hold
	for _, m := range Methods() {
		for _, to := range []int64{0, 9<<20 + 123} {
			t.Run(fmt.Sprintf("%s/to%d", m, to), func(t *testing.T) {
				needMethod(t, m)
				path, _ := testFile(t, t.TempDir(), size)
				addr, stop := serveTest(t, path, m)
				c, err := Dial(context.Background(), addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				// A hang would be a failure: close the client if the
				// response has not ended in a long while.
				timer := time.AfterFunc(60*time.Second, func() { c.Close() })
				defer timer.Stop()
				truncated := false
				n, err := c.Get(func(off int64, b []byte) error {
					if !truncated {
						truncated = true
						if err := os.Truncate(path, to); err != nil {
							t.Error(err)
						}
					}
					return nil
				})
				if n != size || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("Get = %d, %v; want %d and a response cut short", n, err, size)
				}
				serr := stop()
				var pe *fs.PathError
				if !errors.Is(serr, ErrShrank) || !errors.As(serr, &pe) || pe.Path != path {
					t.Fatalf("Serve = %v; want a *fs.PathError on %s wrapping ErrShrank", serr, path)
				}
			})
		}
	}
}

func TestMissingPath(t *testing.T) {
	noFdLeak(t)
	path := filepath.Join(t.TempDir(), "no-such-file")
	for _, m := range Methods() {
		_, err := Run(context.Background(), Config{Path: path, Method: m})
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("Run %s: %v; want an error naming %s", m, err, path)
		}
		ln, lerr := net.Listen("tcp", "127.0.0.1:0")
		if lerr != nil {
			t.Fatal(lerr)
		}
		err = Serve(context.Background(), ln, ServerConfig{Path: path, Method: m})
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Serve %s: %v; want an *fs.PathError naming %s", m, err, path)
		}
		if _, aerr := ln.Accept(); aerr == nil {
			t.Errorf("Serve %s left its listener open", m)
		}
	}
}

func TestBadInput(t *testing.T) {
	noFdLeak(t)
	dir := t.TempDir()
	path, _ := testFile(t, dir, 10)
	for _, tc := range []struct {
		cfg  ServerConfig
		want string
	}{
		{ServerConfig{Path: path, Method: "mmap"}, `unknown method "mmap"`},
		{ServerConfig{Path: path, Method: ReadWrite, Chunk: 100}, "chunk 100"},
		{ServerConfig{Path: path, Method: IOURing, Depth: -1}, "depth -1"},
		{ServerConfig{Method: Sendfile}, "no file"},
		{ServerConfig{Path: dir, Method: Sendfile}, dir + ": not a regular file"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		err = Serve(context.Background(), ln, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Serve(%+v) = %v; want an error with %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := Run(context.Background(), Config{Path: path}); err == nil {
		t.Error("Run with no method and no server: no error")
	}
	if _, err := Run(context.Background(), Config{Path: path, Method: ReadWrite, Conns: -1}); err == nil {
		t.Error("Run with -1 conns: no error")
	}
}

func TestIOURingDisabled(t *testing.T) {
	noFdLeak(t)
	t.Setenv(features.DisableEnv, "1")
	path, _ := testFile(t, t.TempDir(), 10)
	_, err := Run(context.Background(), Config{Path: path, Method: IOURing})
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Run io_uring with io_uring disabled: %v; want ErrNotSupported", err)
	}
}

// TestCancel: a long run ends soon after its context is cancelled, with
// the context's error, and leaves nothing behind.
func TestCancel(t *testing.T) {
	noFdLeak(t)
	path, _ := testFile(t, t.TempDir(), 1<<20)
	for _, m := range Methods() {
		t.Run(m, func(t *testing.T) {
			needMethod(t, m)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := Run(ctx, Config{Path: path, Method: m, Conns: 2, Duration: time.Hour})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v; want context.Canceled", err)
			}
		})
	}
}

// TestShutdownIdle: Serve stops with connections open and idle (their
// handlers blocked waiting for a request) and returns nil.
func TestShutdownIdle(t *testing.T) {
	noFdLeak(t)
	path, content := testFile(t, t.TempDir(), 5000)
	for _, m := range Methods() {
		t.Run(m, func(t *testing.T) {
			needMethod(t, m)
			addr, stop := serveTest(t, path, m)
			var cs []*Client
			for range 3 {
				c, err := Dial(context.Background(), addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if n, err := c.Get(func(int64, []byte) error { return nil }); err != nil || n != int64(len(content)) {
					t.Fatalf("Get = %d, %v", n, err)
				}
				cs = append(cs, c)
			}
			if err := stop(); err != nil {
				t.Fatalf("Serve = %v; want nil", err)
			}
			if _, err := cs[0].Get(func(int64, []byte) error { return nil }); err == nil {
				t.Error("Get after Serve returned: no error")
			}
		})
	}
}

// TestChildProcess runs the server the way `iopath net bench` does: in a
// child process on an inherited listener, measured over the wire.
func TestChildProcess(t *testing.T) {
	noFdLeak(t)
	path, _ := testFile(t, t.TempDir(), 256<<10)
	for _, m := range []string{Sendfile, IOURing} {
		t.Run(m, func(t *testing.T) {
			needMethod(t, m)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			f, err := ln.(*net.TCPListener).File()
			ln.Close()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+m+":"+path)
			cmd.ExtraFiles = []*os.File{f}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				f.Close()
				t.Fatal(err)
			}
			f.Close()
			defer func() {
				cmd.Process.Signal(syscall.SIGTERM)
				if err := cmd.Wait(); err != nil {
					t.Errorf("child: %v: %s", err, stderr.String())
				}
			}()
			addr := ln.Addr().String()
			r, err := Run(context.Background(), Config{Path: path, Addr: addr, Method: m, Count: 20})
			if err != nil {
				t.Fatal(err)
			}
			if r.InProcess || r.Method != m || r.ProcessCPU <= 0 || r.ServerCPU <= 0 || !r.Verified || r.Responses != 20 {
				t.Errorf("result %+v", r)
			}
			other := ReadWrite
			if _, err := Run(context.Background(), Config{Path: path, Addr: addr, Method: other}); err == nil || !strings.Contains(err.Error(), "not "+other) {
				t.Errorf("Run asking for %s of a %s server: %v", other, m, err)
			}
		})
	}
}

// TestAcceptStarved: a file server out of descriptors counts each failed
// accept, says so through ServerConfig.Log, keeps trying, and serves the
// waiting connection once descriptors are free; and Run against a server
// that cannot accept all its connections fails at once, saying why,
// instead of waiting for ever for a response on a connection in the
// listen queue.
func TestAcceptStarved(t *testing.T) {
	noFdLeak(t)
	path, content := testFile(t, t.TempDir(), 4096)
	t.Run("server", func(t *testing.T) {
		var mu sync.Mutex
		var lines []string
		fds := starve.LowerNofile(t)
		s, err := newServer(ServerConfig{Path: path, Method: ReadWrite, Log: func(m string) {
			mu.Lock()
			lines = append(lines, m)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.closeFile()
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.serve(ctx, ln) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}()
		fds.FillAllButOne() // for the client's socket; none for the accept
		c, err := Dial(context.Background(), ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The count comes before the log line: wait for both.
		logged := func() bool { mu.Lock(); defer mu.Unlock(); return len(lines) > 0 }
		for deadline := time.Now().Add(10 * time.Second); s.acceptErrs.Load() == 0 || !logged(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s: %d failed accepts counted, and logged: %v", s.acceptErrs.Load(), logged())
			}
		}
		mu.Lock()
		if len(lines) == 0 || !strings.Contains(lines[0], "file server (readwrite): accept: too many open files (EMFILE") {
			t.Errorf("log %q: want a line about EMFILE", lines)
		}
		mu.Unlock()
		fds.Restore()
		var got []byte
		if _, err := c.Get(func(_ int64, b []byte) error { got = append(got, b...); return nil }); err != nil || !bytes.Equal(got, content) {
			t.Errorf("after the descriptors came back: %d bytes, %v", len(got), err)
		}
		if st := s.stats(); st.AcceptErrors == 0 || st.AcceptErrors > 2000 {
			t.Errorf("%d failed accepts counted", st.AcceptErrors)
		}
	})
	t.Run("run", func(t *testing.T) {
		fds := starve.LowerNofile(t)
		// The served file, the listener, the control connection's two
		// ends (and the dup the server takes of its end) fit; the data
		// connection's client end is the last, and the server's accept
		// of it fails.
		fds.FillAllBut(5)
		t0 := time.Now()
		_, err := Run(context.Background(), Config{Path: path, Method: ReadWrite, Conns: 1, Count: 1})
		if err == nil || !strings.Contains(err.Error(), "accepted 0 of 1 connections") || !strings.Contains(err.Error(), "accepts failed for want of descriptors") {
			t.Errorf("Run against a starved server: %v", err)
		}
		if d := time.Since(t0); d > acceptWait/2 {
			t.Errorf("Run took %v to give up", d)
		}
	})
}

func TestStatsRecord(t *testing.T) {
	in := Stats{Method: Splice, FileSize: 123, Chunk: 4096, Depth: 3, Conns: 4, Live: 2, Responses: 5, Bytes: 6,
		Syscalls: 7, HandlerCPU: 8, IOThreadCPU: 9, ProcessCPU: 10, FileErrors: 11, ConnErrors: 12, Retries: 13, AcceptErrors: 14}
	var b [statsLen]byte
	in.encode(b[:])
	var out Stats
	if err := out.decode(b[:]); err != nil || out != in {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", in, out, err)
	}
	b[0] = 99
	if err := out.decode(b[:]); err == nil {
		t.Error("decode of an unknown method: no error")
	}
	if err := out.decode(b[:10]); err == nil {
		t.Error("decode of a short record: no error")
	}
}

func TestBench(t *testing.T) {
	noFdLeak(t)
	var seen []string
	rs, err := Bench(context.Background(), BenchConfig{
		Dir: t.TempDir(), Sizes: []int64{4096, 100_000}, Methods: []string{ReadWrite, Sendfile},
		Rounds: 2, Count: 3,
		Progress: func(r netresult.FileServe) { seen = append(seen, fmt.Sprintf("%s/%d", r.Method, r.FileSize)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "readwrite/4096 sendfile/4096 readwrite/100000 sendfile/100000 readwrite/4096 sendfile/4096 readwrite/100000 sendfile/100000"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("runs in order %q, want %q (interleaved)", got, want)
	}
	for _, r := range rs {
		if !r.Verified || r.Err != "" || r.Responses != 3 {
			t.Errorf("run %+v", r)
		}
	}
}

// BenchmarkServe serves a page-cached file b.N times over one loopback
// connection, with the server in this process (its CPU is its threads'
// own). `iopath net bench --serve-file` runs the interleaved, child
// process version of this.
func BenchmarkServe(b *testing.B) {
	dir := b.TempDir()
	paths := map[int64]string{}
	for _, size := range DefaultSizes {
		p, _ := testFile(b, dir, int(size))
		paths[size] = p
	}
	for _, size := range DefaultSizes {
		for _, m := range Methods() {
			b.Run(fmt.Sprintf("method=%s/size=%d", m, size), func(b *testing.B) {
				if m == IOURing {
					if err := features.HaveOps(); err != nil {
						b.Skip(err)
					}
				}
				b.SetBytes(size)
				r, err := Run(context.Background(), Config{Path: paths[size], Method: m, Count: b.N})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.CPUSecPerGB, "cpu-s/GB")
				b.ReportMetric(r.SyscallsPerMB, "syscalls/MB")
				b.ReportMetric(r.SyscallsPerResp, "syscalls/op")
			})
		}
	}
}
