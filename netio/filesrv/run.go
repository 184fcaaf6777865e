package filesrv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/iopath/iopath/netio/netresult"
)

// Config says how Run measures.
type Config struct {
	// Path is the file: the client reads it (which also warms the page
	// cache) and checks every response against its content. An in-process
	// server serves it; a server at Addr must serve a file of the same
	// size (the same file, normally).
	Path string
	// Method is the way to serve. With Addr set it names the method the
	// server there must be running ("": any).
	Method string
	// Addr is a running server (Serve in a child process) to measure;
	// "": Run starts one in this process on 127.0.0.1, and stops it.
	Addr string
	// Conns is the number of connections, each with one request at a
	// time (0: 1).
	Conns int
	// Duration bounds the measured phase by time; when 0, each connection
	// makes Count requests (0: 10).
	Duration time.Duration
	Count    int
	// Warmup is the requests per connection before measuring (0: 1;
	// negative: none).
	Warmup int
	// Chunk and Depth configure an in-process server (ServerConfig).
	Chunk, Depth int
}

// acceptWait bounds the wait for the server to accept every connection.
const acceptWait = 5 * time.Second

// ErrCorrupted is wrapped by Run's error when a response differed from
// the file.
var ErrCorrupted = errors.New("corrupted bytes")

// Run measures one method on one file: it dials the connections, warms
// them up, takes the server's counters, makes the requests (verifying
// every byte), closes the connections, waits for the server to finish
// with them and takes the counters again.
//
// It returns an error naming the path when the file cannot be read, and
// an error when a response is cut short or wrong (with the result so far
// when there is one: Corrupted says how many bytes differed), when the
// server's counters do not add up with what the client saw, or when ctx
// ends.
func Run(ctx context.Context, cfg Config) (*netresult.FileServe, error) {
	if cfg.Conns == 0 {
		cfg.Conns = 1
	}
	if cfg.Count == 0 {
		cfg.Count = 10
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = 1
	}
	switch {
	case cfg.Conns < 0 || cfg.Conns > 10000:
		return nil, fmt.Errorf("filesrv: conns %d: want 1 to 10000", cfg.Conns)
	case cfg.Count < 0 || cfg.Duration < 0:
		return nil, fmt.Errorf("filesrv: count %d, duration %v: want positive", cfg.Count, cfg.Duration)
	case cfg.Method != "" && !slices.Contains(methods, cfg.Method):
		return nil, fmt.Errorf("filesrv: unknown method %q (want one of %v)", cfg.Method, methods)
	case cfg.Method == "" && cfg.Addr == "":
		return nil, errors.New("filesrv: no method for the in-process server")
	}
	content, err := os.ReadFile(cfg.Path)
	if err != nil {
		return nil, err
	}

	addr := cfg.Addr
	var stopServer func() error
	if addr == "" {
		s, err := newServer(ServerConfig{Path: cfg.Path, Method: cfg.Method, Chunk: cfg.Chunk, Depth: cfg.Depth})
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.closeFile()
			return nil, fmt.Errorf("filesrv: %w", err)
		}
		addr = ln.Addr().String()
		sctx, stop := context.WithCancel(context.Background())
		serveErr := make(chan error, 1)
		go func() { serveErr <- s.serve(sctx, ln) }()
		stopServer = func() error { stop(); return <-serveErr }
	}
	res, err := measure(ctx, cfg, addr, content)
	if stopServer != nil {
		// The server's error (a file that shrank) explains the client's.
		if serr := stopServer(); serr != nil {
			err = errors.Join(serr, err)
		}
	}
	if res != nil {
		res.InProcess = cfg.Addr == ""
		if res.InProcess {
			res.ProcessCPU, res.ProcCPUSecPerGB = 0, 0
		}
	}
	return res, err
}

// measure is Run's client side.
func measure(ctx context.Context, cfg Config, addr string, content []byte) (*netresult.FileServe, error) {
	ctl, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	// clients only grows while dialing, under mu, and is closed at most
	// once: by ctx's end or when the measured phase is over.
	var (
		mu      sync.Mutex
		closed  bool
		clients = make([]*Client, 0, cfg.Conns)
	)
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			closed = true
			for _, c := range clients {
				c.Close()
			}
		}
	}
	defer ctl.Close()
	defer closeAll()
	// A cancelled ctx closes the connections under the requests.
	stopWatch := context.AfterFunc(ctx, func() { ctl.Close(); closeAll() })
	defer stopWatch()
	fail := func(err error) (*netresult.FileServe, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}

	st0, err := ctl.Stats()
	if err != nil {
		return fail(err)
	}
	if cfg.Method != "" && st0.Method != cfg.Method {
		return nil, fmt.Errorf("filesrv: the server at %s serves with %s, not %s", addr, st0.Method, cfg.Method)
	}
	if st0.FileSize != int64(len(content)) {
		return nil, fmt.Errorf("filesrv: the server at %s serves %d bytes, but %s has %d", addr, st0.FileSize, cfg.Path, len(content))
	}
	for range cfg.Conns {
		c, err := Dial(ctx, addr)
		if err != nil {
			return fail(err)
		}
		mu.Lock()
		if closed {
			c.Close()
		} else {
			clients = append(clients, c)
		}
		mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Every data connection must have been accepted before the first
	// request: one left in the listen queue (the server out of
	// descriptors) would have its request wait for ever, since no
	// connection ends before the measurement does.
	for deadline := time.Now().Add(acceptWait); ; {
		st, err := ctl.Stats()
		if err != nil {
			return fail(err)
		}
		accepted := st.Conns - st0.Conns
		if accepted >= int64(len(clients)) {
			break
		}
		if failed := st.AcceptErrors - st0.AcceptErrors; failed > 0 || time.Now().After(deadline) {
			return nil, fmt.Errorf("filesrv: the server at %s accepted %d of %d connections (%d accepts failed for want of descriptors or memory; see its log)",
				addr, accepted, len(clients), failed)
		}
		time.Sleep(100 * time.Microsecond)
	}

	workers := make([]worker, len(clients))
	var wg sync.WaitGroup
	phase := func(count int, until time.Time) {
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				workers[i].run(clients[i], content, count, until)
			}()
		}
		wg.Wait()
	}
	if cfg.Warmup > 0 {
		phase(cfg.Warmup, time.Time{})
		if err := firstErr(workers); err != nil {
			return fail(err)
		}
		for i := range workers {
			if workers[i].corrupted > 0 {
				return nil, fmt.Errorf("filesrv: %s: %d bytes differed from %s during the warm-up: %w", st0.Method, workers[i].corrupted, cfg.Path, ErrCorrupted)
			}
		}
	}
	for i := range workers {
		workers[i] = worker{}
	}
	// Wait until the server has counted the warm-up responses: a handler
	// counts one after its last send returns, which may be after the
	// client has the bytes.
	var st1 Stats
	warm := st0.Responses + int64(max(cfg.Warmup, 0)*len(clients))
	for deadline := time.Now().Add(5 * time.Second); ; {
		if st1, err = ctl.Stats(); err != nil {
			return fail(err)
		}
		if st1.Responses >= warm {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("filesrv: the server counted %d warm-up responses of %d after 5s", st1.Responses-st0.Responses, warm-st0.Responses)
		}
		time.Sleep(100 * time.Microsecond)
	}
	t0 := time.Now()
	if cfg.Duration > 0 {
		phase(-1, t0.Add(cfg.Duration))
	} else {
		phase(cfg.Count, time.Time{})
	}
	elapsed := time.Since(t0)

	// Close the data connections and wait until the server has let go of
	// them: then every response it sent is counted (an io_uring
	// connection counts its last one when its chained RECV ends) and its
	// threads' CPU is final.
	closeAll()
	var st2 Stats
	for deadline := time.Now().Add(5 * time.Second); ; {
		if st2, err = ctl.Stats(); err != nil {
			return fail(err)
		}
		if st2.Live == 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("filesrv: the server still holds %d connections 5s after the client closed them", st2.Live)
		}
		time.Sleep(time.Millisecond)
	}

	r := &netresult.FileServe{Method: st2.Method, FileSize: int64(len(content)), Conns: cfg.Conns,
		Chunk: st2.Chunk, Depth: st2.Depth, Runs: 1, Elapsed: elapsed}
	var werr error
	for i := range workers {
		w := &workers[i]
		r.Responses += w.responses
		r.Bytes += w.bytes
		r.Corrupted += w.corrupted
		if werr == nil {
			werr = w.err
		}
	}
	d := st2.Sub(st1)
	r.ServerCPU = d.HandlerCPU + d.IOThreadCPU
	r.IOThreadCPU = d.IOThreadCPU
	r.ProcessCPU = d.ProcessCPU
	r.Syscalls = d.Syscalls
	r.SyscallRetries = d.Retries
	derive(r)
	r.Verified = werr == nil && r.Corrupted == 0
	if werr != nil {
		return r, werr
	}
	if r.Corrupted > 0 {
		return r, fmt.Errorf("filesrv: %s: %d bytes differed from %s: %w", r.Method, r.Corrupted, cfg.Path, ErrCorrupted)
	}
	if d.Responses != r.Responses {
		return r, fmt.Errorf("filesrv: the server counted %d responses, the client received %d", d.Responses, r.Responses)
	}
	if d.FileErrors > 0 {
		return r, fmt.Errorf("filesrv: the server cut %d responses short", d.FileErrors)
	}
	return r, nil
}

// derive computes the rates from the totals.
// derive computes r's rates from its counts; a single run is its own
// min and max.
func derive(r *netresult.FileServe) {
	per := func(num, den float64) float64 {
		if den <= 0 {
			return 0
		}
		return num / den
	}
	r.GBps = per(float64(r.Bytes)/1e9, r.Elapsed.Seconds())
	r.CPUSecPerGB = per(r.ServerCPU.Seconds(), float64(r.Bytes)/1e9)
	r.ProcCPUSecPerGB = per(r.ProcessCPU.Seconds(), float64(r.Bytes)/1e9)
	r.SyscallsPerMB = per(float64(r.Syscalls), float64(r.Bytes)/1e6)
	r.SyscallsPerResp = per(float64(r.Syscalls), float64(r.Responses))
	r.GBpsMin, r.GBpsMax = r.GBps, r.GBps
	r.CPUSecPerGBMin, r.CPUSecPerGBMax = r.CPUSecPerGB, r.CPUSecPerGB
}

// worker is one connection's share of a phase.
type worker struct {
	responses, bytes, corrupted int64
	err                         error
}

// run makes count requests (count < 0: until until) on c, checking every
// byte against content.
func (w *worker) run(c *Client, content []byte, count int, until time.Time) {
	check := func(off int64, b []byte) error {
		if off+int64(len(b)) > int64(len(content)) {
			return fmt.Errorf("filesrv: response longer than the file (%d bytes)", len(content))
		}
		want := content[off : off+int64(len(b))]
		if !bytes.Equal(b, want) {
			for i := range b {
				if b[i] != want[i] {
					w.corrupted++
				}
			}
		}
		return nil
	}
	for i := 0; count < 0 || i < count; i++ {
		if count < 0 && !time.Now().Before(until) {
			return
		}
		n, err := c.Get(check)
		if err != nil {
			w.err = err
			return
		}
		if n != int64(len(content)) {
			w.err = fmt.Errorf("filesrv: response of %d bytes, the file has %d", n, len(content))
			return
		}
		w.responses++
		w.bytes += n
	}
}

func firstErr(ws []worker) error {
	for i := range ws {
		if ws[i].err != nil {
			return ws[i].err
		}
	}
	return nil
}
