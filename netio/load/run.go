package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/netio/netresult"
)

// Run dials cfg.Conns connections to the echo server at cfg.Addr, drives
// them as cfg.Mode says for cfg.Warmup and then cfg.Duration, waits up to
// cfg.Drain for the echoes still in flight, closes every connection and
// returns what it measured.
//
// The error is for a run that could not happen (a bad Config, too few
// file descriptors, a failed dial, an unreadable ServerPID) or that ctx
// cut short; the server's faults (wrong bytes, lost bytes, failed
// connections) are counted in the netresult.Load, and netresult.Load.Err reports them.
// When ctx ends during the run, Run stops at once, closes the connections
// and returns the netresult.Load of the window so far together with ctx's error.
func Run(ctx context.Context, cfg Config) (*netresult.Load, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if cfg.Drain == 0 {
		cfg.Drain = MaxDrain
		if cfg.Lossy {
			cfg.Drain = LossyDrain
		}
	}
	var serverCPU func() (time.Duration, error)
	var cpuSource string
	if cfg.ServerPID > 0 {
		var err error
		serverCPU, cpuSource, err = serverCPUReader(cfg.ServerPID)
		if err != nil {
			return nil, fmt.Errorf("load: server pid %d: %w", cfg.ServerPID, err)
		}
		if err := checkListens(cfg.ServerPID, cfg.Addr); err != nil {
			return nil, fmt.Errorf("load: server pid %d: %w", cfg.ServerPID, err)
		}
	}
	if err := checkNofile(cfg.Conns); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	client := cfg.client()
	t0 := time.Now()
	var retries atomic.Int64
	ncs, fds, err := dialAll(ctx, cfg, client == ClientEpoll, &retries)
	if err != nil {
		return nil, err
	}
	res := &netresult.Load{
		Mode:            cfg.Mode.String(),
		Conns:           cfg.Conns,
		Size:            cfg.Size,
		OpenLoop:        cfg.Rate > 0,
		Rate:            cfg.Rate,
		Client:          client,
		DialTime:        time.Since(t0),
		DialRetries:     retries.Load(),
		ServerCPUSource: cpuSource,
	}
	r := newRunner(cfg, cfg.Conns)
	defer r.abortedFunc()
	r.serverCPU = serverCPU
	if client == ClientEpoll {
		ec, err := newEpollClient(r, fds)
		if err != nil {
			return nil, err
		}
		ec.start(0)
		func() {
			defer ec.wait() // its loops and descriptors, also after a panic in Progress
			err = r.drive(ctx, res, ec.abort)
		}()
		r.collect(res)
		return res, r.checkServerCPU(res, err)
	}
	r.start(ncs)
	err = r.drive(ctx, res, r.abort)
	r.collect(res)
	return res, r.checkServerCPU(res, err)
}

// minServerCPUReqs is how many requests a window must have answered
// before a server CPU time of 0 proves ServerPID is not the server: with
// the process CPU clock (nanoseconds) any work shows; /proc's 10 ms ticks
// need a window long enough for one whole tick at 0.1 µs a request.
var minServerCPUReqs = map[string]int64{"clock": 1000, "proc": 100_000}

// checkServerCPU turns a server CPU time of 0 over a window that many
// requests went through into an error (a pid that is not the server's,
// which no check before the run caught), rather than a figure of
// 0.00 µs per request; err is the run's error so far.
func (r *runner) checkServerCPU(res *netresult.Load, err error) error {
	if r.serverCPU == nil || err != nil || res.ServerCPU > 0 || res.Requests < minServerCPUReqs[res.ServerCPUSource] {
		return err
	}
	src := res.ServerCPUSource
	res.ServerCPUSource = "" // no figure of the server's
	return fmt.Errorf("load: server pid %d used no CPU time (%s) while the server at %s answered %d requests: it is not that server's process",
		r.cfg.ServerPID, src, r.cfg.Addr, res.Requests)
}

// startTimeline samples the clean messages completed every
// Config.Timeline from w0 (Nanotime) on, until the returned function is
// called; it returns the counts of the whole intervals (the last, cut
// short by the window's end, is left out), and nil on a second call.
func (r *runner) startTimeline(w0 int64) (stop func() []int64) {
	quit := make(chan struct{})
	out := make(chan []int64, 1)
	every := int64(r.cfg.Timeline)
	go func() {
		var samples []int64
		var last int64
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		for i := int64(1); ; i++ {
			// Deadlines from w0: a late wake-up shifts one sample, not
			// every one after it.
			t.Reset(time.Duration(w0 + i*every - metrics.Nanotime()))
			select {
			case <-quit:
				out <- samples
				return
			case <-t.C:
			}
			var n int64
			for s := range r.shards {
				n += r.shards[s].done.Load()
			}
			samples = append(samples, n-last)
			last = n
		}
	}()
	var once sync.Once
	return func() (s []int64) {
		once.Do(func() {
			close(quit)
			s = <-out
		})
		return s
	}
}

// newRunner prepares a run over n connections.
func newRunner(cfg Config, n int) *runner {
	r := &runner{
		cfg:   cfg,
		size:  int64(cfg.Size),
		depth: int64(cfg.Mode.Depth),
		open:  cfg.Rate > 0,
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	r.timeline = cfg.Timeline > 0
	r.aborted, r.abortedFunc = context.WithCancel(context.Background())
	r.period = periodFor(r.size)
	r.pat = pattern(r.period)
	r.split = r.depth == 0 || r.depth*r.size > syncMax || (r.open && r.depth > 1)
	if r.open {
		iv := float64(n) / cfg.Rate * 1e9
		r.interval = int64(min(max(iv, 1), float64(MaxDuration)))
	}
	r.window = min(max(flightBudget/int64(n), minFlight), maxFlight)
	r.shards = make([]shard, min(n, 4*runtime.GOMAXPROCS(0)))
	for i := range r.shards {
		r.shards[i].h = metrics.NewHistogram()
	}
	return r
}

// newConn sets up connection id over nc.
func (r *runner) newConn(id int, nc *net.TCPConn, bufLen int) *conn {
	c := &conn{
		r:     r,
		id:    id,
		nc:    nc,
		base:  connBase(id, r.period),
		buf:   make([]byte, bufLen),
		dead:  make(chan struct{}),
		shard: &r.shards[id%len(r.shards)],
	}
	if r.depth > 0 {
		c.stamps = make([]atomic.Int64, r.depth)
	}
	if r.split {
		c.wake = make(chan struct{}, 1)
	}
	if r.open {
		c.timer = time.NewTimer(time.Hour)
		c.timer.Stop()
	}
	return c
}

// start starts every connection's goroutines; the warmup (or the window)
// begins now.
func (r *runner) start(ncs []*net.TCPConn) {
	n := len(ncs)
	bufLen := int(r.depth * r.size) // sync: all that can be owed
	if r.split {
		bufLen = min(max(readBudget/n, minRead), maxRead)
	}
	r.conns = make([]*conn, n)
	for i, nc := range ncs {
		r.conns[i] = r.newConn(i, nc, bufLen)
	}
	r.left.Store(int64(n))
	now := metrics.Nanotime()
	share := r.cfg.ResetShare
	for i, c := range r.conns {
		if share > 0 && int(float64(i+1)*share) > int(float64(i)*share) {
			// Its reset comes in the middle three fifths of the window.
			w := int64(r.cfg.Duration)
			c.resetAt = now + int64(r.cfg.Warmup) + w/5 + rand.Int64N(max(1, 3*w/5))
		}
		if r.open {
			c.next = now + rand.Int64N(r.interval)
			c.first = c.next
		}
		if r.split {
			c.live.Store(2)
			r.exited.Add(2)
			go func() { defer r.exited.Done(); c.runWriter() }()
			go func() { defer r.exited.Done(); c.runReader() }()
		} else {
			c.live.Store(1)
			r.exited.Add(1)
			go func() { defer r.exited.Done(); c.runSync(0) }()
		}
	}
}

// drive runs the warmup, the window and the drain, and fills res's
// window figures; abort is the driver's way to close every connection
// (runner.abort, epollClient.abort). It returns ctx's error when ctx cut
// the run short.
func (r *runner) drive(ctx context.Context, res *netresult.Load, abort func()) error {
	cfg := r.cfg
	// A panic in Progress (the caller's function, called here while the
	// connections run) goes on once every connection is closed and its
	// goroutines have ended: nothing of Run's outlives the call.
	defer func() {
		if p := recover(); p != nil {
			abort()
			<-r.done
			r.exited.Wait() // the goroutines that closed done have returned
			panic(p)
		}
	}()
	var err error
	r.began = metrics.Nanotime()
	echoWait := max(cfg.Warmup, minEchoWait)
	if cfg.Lossy {
		echoWait = max(echoWait, LossyEchoWait)
	}
	noEcho := time.AfterFunc(echoWait, func() { r.checkNoEcho(metrics.Nanotime()) })
	defer noEcho.Stop()
	if cfg.Warmup > 0 {
		err = r.wait(ctx, cfg.Warmup, "warmup")
	}
	if err == nil {
		u0, _ := metrics.SelfUsage()
		s0, serr := r.readServerCPU()
		w0 := metrics.Nanotime()
		r.phase.Store(phaseMeasure)
		stopTimeline := func() []int64 { return nil }
		if cfg.Timeline > 0 {
			stopTimeline = r.startTimeline(w0)
			defer stopTimeline() // a panic in Progress: the sampler ends too
		}
		err = r.wait(ctx, cfg.Duration, "run")
		r.windowEnd = metrics.Nanotime()
		r.phase.Store(phaseStop)
		if cfg.Timeline > 0 {
			res.Timeline, res.TimelineNs, res.WindowStartNs = stopTimeline(), cfg.Timeline, w0
		}
		noEcho.Stop()
		if err == nil && time.Duration(r.windowEnd-r.began) >= echoWait {
			// The window ended as the check was due: its timer may
			// not have run yet. (A run shorter than the wait is not
			// checked, nor is an interrupted one: ctx is no server's
			// fault.)
			r.checkNoEcho(r.windowEnd)
		}
		res.Elapsed = time.Duration(r.windowEnd - w0) // the window, not the checks after it
		u1, _ := metrics.SelfUsage()
		d := u1.Sub(u0)
		res.ClientCPU = d.User + d.System
		s1, serr1 := r.readServerCPU()
		if serr == nil {
			serr = serr1
		}
		if serr != nil {
			err = errors.Join(err, fmt.Errorf("load: server pid %d: %w", cfg.ServerPID, serr))
		} else {
			res.ServerCPU = s1 - s0
		}
	}
	r.phase.Store(phaseStop)
	close(r.stop)
	if err != nil && ctx.Err() != nil {
		abort()
		<-r.done
		return err
	}
	// The drain: every connection reads what it is owed, then its tail
	// (our FIN, and reading to the server's), then closes.
	t := time.NewTimer(cfg.Drain)
	defer t.Stop()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	n := len(r.conns)
	for {
		select {
		case <-r.done:
			if cfg.Progress != nil {
				cfg.Progress("drain", n, n)
			}
			return err
		case <-tick.C:
			if cfg.Progress != nil {
				cfg.Progress("drain", n-int(r.left.Load()), n)
			}
			continue
		case <-t.C:
			r.timedOut = true
		case <-ctx.Done():
			err = errors.Join(err, ctx.Err())
		}
		abort()
		<-r.done
		return err
	}
}

// minEchoWait is the least time a connection has for its first echo
// before the no-echo check fails it (see checkNoEcho): on a busy machine
// hundreds of connections may wait a few hundred milliseconds for their
// first turn, which is no fault of the server's.
const minEchoWait = time.Second

// unservedFactor is how many times longer than most answered connections
// waited for their first echo an unanswered one must have waited to be
// called unserved (see checkNoEcho).
const unservedFactor = 10

// checkNoEcho marks, once, the connections the server has left unserved:
// a server that does not accept some connections (out of descriptors,
// say) would otherwise pass as one that serves fewer of them faster, its
// QPS from a few of them. It runs at the end of the warm-up, or
// minEchoWait after the start if that is later; a run that ends before
// then is not checked.
//
// A connection is unserved when it has had no echoed byte by now although
// it has waited, since its first message was sent (closed loop: the
// start; open loop: when it was due), at least half the time since the
// start and unservedFactor times as long as 90% of the answered
// connections waited for their first echo. The second bound tells a
// server that serves some connections and not others from one that is
// merely slow to give each its first turn (10,000 connections of 16 KiB
// messages can take more than a second): there the answered connections
// were answered all along the wait, and the others' turn is coming. No
// connection answered at all says nothing of the kind either: a server
// that answers none fails on the bytes it never echoes.
func (r *runner) checkNoEcho(now int64) {
	r.noEchoOnce.Do(func() {
		r.noEchoWait = time.Duration(now - r.began)
		sent := func(c *conn) int64 {
			if r.open {
				return c.first
			}
			return r.began
		}
		var waits []int64
		for _, c := range r.conns {
			if f := c.firstEcho.Load(); f != 0 {
				waits = append(waits, f-sent(c))
			}
		}
		if len(waits) == 0 {
			return
		}
		slices.Sort(waits)
		p90 := waits[(len(waits)*9)/10]
		if len(waits) < 10 {
			p90 = waits[len(waits)-1]
		}
		for _, c := range r.conns {
			w := now - sent(c)
			if c.firstEcho.Load() == 0 && w >= (now-r.began)/2 && w >= unservedFactor*p90 {
				c.noEcho.Store(true)
			}
		}
	})
}

// wait lets the run go on for d, calling Progress; it returns early, with
// nil, when every connection is gone, and with ctx's error when ctx ends.
func (r *runner) wait(ctx context.Context, d time.Duration, phase string) error {
	progress := r.cfg.Progress
	t := time.NewTimer(d)
	defer t.Stop()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-t.C:
			if progress != nil {
				progress(phase, int(d.Milliseconds()), int(d.Milliseconds()))
			}
			return nil
		case <-r.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if progress != nil {
				progress(phase, int(time.Since(start).Milliseconds()), int(d.Milliseconds()))
			}
		}
	}
}

// abort closes every connection of the net client under its goroutines,
// which then see an error that is not the server's fault.
func (r *runner) abort() {
	r.aborting.Store(true)
	r.abortedFunc()
	for _, c := range r.conns {
		c.closeNC()
	}
}

// collect adds up the connections' counts once they are all gone.
func (r *runner) collect(res *netresult.Load) {
	// The no-echo check's timer may have fired as the run ended, and
	// its check may be running still: wait for it, and keep a later
	// one from running at all.
	r.noEchoOnce.Do(func() {})
	cancelled := r.aborting.Load() && !r.timedOut
	res.NoEchoWait = r.noEchoWait
	var firstOther string // the first failure that is not a missing echo
	h := metrics.NewHistogram()
	for i := range r.shards {
		h.Merge(r.shards[i].h)
	}
	for _, c := range r.conns {
		res.Requests += c.reqs
		res.Bytes += c.okBytes
		res.Corrupted += c.corruptAll
		if c.okBytes > 0 {
			res.Carried++
		}
		res.Reconnects += c.reconnects
		res.Resent += c.resent
		if c.reset.Load() {
			res.Resets++ // what it was owed went with it
			continue
		}
		if r.cfg.Refusals && c.err != nil && c.recv == 0 && closedByPeer(c.err) {
			res.Refused++
			continue
		}
		owed := c.sent.Load() - c.recv
		var cerr error
		noEcho := false
		switch {
		case c.err != nil:
			cerr = c.err
		case c.noEcho.Load():
			noEcho = true
			cerr = fmt.Errorf("no echo within the first %v: the server left it unserved", r.noEchoWait.Round(10*time.Millisecond))
		case owed > 0 && r.timedOut && c.redialErr.Load() != nil:
			cerr = fmt.Errorf("%s not echoed within the %v drain: the connection was reconnecting (--reconnect), its last dial: %w", nBytes(owed), r.cfg.Drain, *c.redialErr.Load())
		case owed > 0 && r.timedOut:
			cerr = fmt.Errorf("%s not echoed within the %v drain", nBytes(owed), r.cfg.Drain)
		}
		if owed > 0 && (cerr != nil || !cancelled) {
			res.Lost += owed
		}
		if c.extra > 0 {
			// Bytes a split reader took in past the end were
			// checked, and counted where they differed, as the
			// start of a next message (readTail): only the rest
			// is added here.
			over := max(c.recv-c.sent.Load(), 0)
			res.Corrupted += c.extra - over
			tail := fmt.Errorf("%s after the last echo", nBytes(c.extra))
			if cerr != nil {
				tail = fmt.Errorf("%v, then %w", tail, cerr)
			}
			cerr = tail
		}
		if c.err == nil && r.open && r.windowEnd > 0 {
			res.Unfinished += c.unfinished(h, r.windowEnd)
		}
		if cerr != nil {
			res.ConnErrors++
			if noEcho {
				res.NoEcho++
			}
			msg := fmt.Sprintf("connection %d: %v", c.id+1, describe(cerr))
			if res.FirstError == "" {
				res.FirstError = msg
			}
			if firstOther == "" && !noEcho {
				firstOther = msg
			}
		}
	}
	if firstOther != "" {
		res.FirstError = firstOther
	}
	if res.Elapsed > 0 {
		s := res.Elapsed.Seconds()
		res.QPS = float64(res.Requests) / s
		res.MBps = float64(res.Bytes) / s / 1e6
	}
	if res.Requests > 0 {
		res.ClientCPUPerReqUs = float64(res.ClientCPU.Nanoseconds()) / 1e3 / float64(res.Requests)
		res.ServerCPUPerReqUs = float64(res.ServerCPU.Nanoseconds()) / 1e3 / float64(res.Requests)
	}
	res.Hist = h.Export()
	res.LatencyBuckets = h.Buckets()
	res.LatencyNs = netresult.Latency{
		P50:  h.Quantile(50),
		P90:  h.Quantile(90),
		P99:  h.Quantile(99),
		P999: h.Quantile(99.9),
		Max:  h.Max(),
		Mean: int64(h.Mean() + 0.5),
	}
}

// nBytes says "1 byte", "2 bytes".
func nBytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// describe words a connection error for netresult.Load.FirstError.
// closedByPeer says err is the server's closing or resetting the
// connection.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func describe(err error) string {
	if errors.Is(err, io.EOF) {
		return "the server closed the connection (EOF)"
	}
	return err.Error()
}

// unfinished records in h, for an open-loop connection, the messages due
// before the window ended at end that had not come back by then: never
// sent, because the server's backpressure held the connection back (a
// full pipeline, a full socket buffer, an echo it waits for), or sent
// and not yet echoed. Each goes in with the time it had waited at the
// window's end, end minus when it was due: a lower bound of its latency,
// which is what the window saw of it. Without them a server that stalls
// at the end of the window leaves no trace in the latency figures. It
// returns their number.
func (c *conn) unfinished(h *metrics.Histogram, end int64) int64 {
	iv := c.r.interval
	if end <= c.first {
		return 0
	}
	due := (end-c.first-1)/iv + 1 // messages k with first + k*iv < end
	n := due - c.msgsEnd
	if n <= 0 {
		return 0
	}
	// The latest due waited least: end - first - (due-1)*iv > 0.
	recordSeries(h, end-c.first-(due-1)*iv, iv, n)
	return n
}

// recordSeries records n latencies lo, lo+step, ... in h. Values within
// 1/2048 of each other share one of h's buckets (3 significant digits),
// so a run of them goes in at once, at its lowest, which keeps every
// figure a lower bound: a long stall at a high rate costs about 2048
// records per doubling of the latency, not one per message.
func recordSeries(h *metrics.Histogram, lo, step, n int64) {
	for n > 0 {
		k := min(n, max(1, lo/(2048*step)))
		h.RecordN(lo, k)
		lo += k * step
		n -= k
	}
}

// processCPUClock is metrics.ProcessCPUClock; tests stand in a kernel
// that refuses the clock.
var processCPUClock = metrics.ProcessCPUClock

// serverCPUReader returns a function that reads pid's user+system CPU
// time so far, and where it reads it: "clock", the process's CPU clock
// (nanoseconds), or "proc", /proc/PID/stat (10 ms ticks), only when the
// kernel refuses the clock. It fails when pid is no process.
func serverCPUReader(pid int) (func() (time.Duration, error), string, error) {
	_, err := processCPUClock(pid)
	if err == nil {
		return func() (time.Duration, error) { return processCPUClock(pid) }, "clock", nil
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		return nil, "", err
	}
	proc := func() (time.Duration, error) {
		u, s, err := metrics.ProcessCPU(pid)
		return u + s, err
	}
	if _, err := proc(); err != nil {
		return nil, "", err
	}
	return proc, "proc", nil
}

// ProcessCPU is the CPU time process pid has used so far, every thread,
// exited ones included: the kernel's process CPU clock (nanoseconds), or
// /proc/PID/stat's ticks (10 ms) where the clock cannot be read.
func ProcessCPU(pid int) (time.Duration, error) {
	read, _, err := serverCPUReader(pid)
	if err != nil {
		return 0, err
	}
	return read()
}

// readServerCPU reads the server's CPU time so far (0 without ServerPID).
func (r *runner) readServerCPU() (time.Duration, error) {
	if r.serverCPU == nil {
		return 0, nil
	}
	return r.serverCPU()
}
