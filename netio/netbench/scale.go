package netbench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/netio/load"
	"github.com/iopath/iopath/netio/netresult"
)

// Past one process: a point with more connections than one process may
// hold (its hard RLIMIT_NOFILE) runs against a group of server processes
// sharing the port (net serve --share-port: SO_REUSEPORT, the kernel
// spreads the connections over them) and a group of load generators,
// each on a source address of its own (127.0.0.2, 127.0.0.3, ...: each
// address has its own ephemeral ports). The load generators start their
// measured windows together: each says where its window starts and waits
// until all have (the window handshake), and the bench reads the servers'
// CPU, memory and the kernel's TCP memory then and at the windows' end.

// maxGroup bounds a group's processes, and so the connections a point
// may have: maxGroup × processConns.
const maxGroup = 64

// groupWait bounds how long the load generators of a group wait for each
// other at the start and the end of their windows (the slowest dial ramp
// of 100,000 connections took 40 s here).
const groupWait = 5 * time.Minute

// processConns is how many connections one process may hold: its hard
// RLIMIT_NOFILE, less what the process needs besides (load.FdSlack).
func processConns() int {
	_, hard, err := nofile()
	if err != nil || hard > 1<<30 {
		return 1 << 20
	}
	return max(1, int(hard)-load.FdSlack)
}

// perProcess is o's connections per process: Options.perProcess (tests)
// or processConns.
func (o *Options) perProcessConns() int {
	if o.perProcess > 0 {
		return o.perProcess
	}
	return processConns()
}

// minNofile is the least hard RLIMIT_NOFILE net bench runs with: a
// process's own files (load.FdSlack) and a few hundred connections, so
// that a group of at most maxGroup processes has room for a point.
const minNofile = load.FdSlack + 300

// nofile is sys.Nofile (tests set it).
var nofile = sys.Nofile

// serverGroup is how many server processes hold conns connections, each
// with room for a quarter more than its share: SO_REUSEPORT spreads
// connections by a hash, not evenly.
func serverGroup(conns, per int) int {
	share := max(1, per*3/4)
	return max(1, (conns+share-1)/share)
}

// maxPerSource is the most connections a load generator of a group makes
// from its source address. One fresh address held 19,000 connections to
// one port here; but an address whose last connections are still in
// TIME_WAIT (60 s) ran out of ports at about 13,000, even with the port
// chosen at connect. So a group's generators hold at most 12,000 each,
// and each group run takes addresses no run of this bench used before
// (Options.sources).
const maxPerSource = 12_000

// loadGroup is how many load generators hold conns connections.
func loadGroup(conns, per int) int {
	per = min(per, maxPerSource)
	return max(1, (conns+per-1)/per)
}

// sourceAddr is the i-th source address a group's load generators use:
// 127.0.0.2, 127.0.0.3, ..., 127.0.1.0, ... (all of 127/8 is loopback).
func sourceAddr(i int) string {
	n := i + 2
	return netip.AddrFrom4([4]byte{127, byte(n >> 16), byte(n >> 8), byte(n)}).String()
}

// startPeers starts the n-1 other processes of s's group, sharing its
// port; s itself was started with --share-port.
func startPeers(ctx context.Context, o *Options, s *server, n int, cpus []int, maxConns int) error {
	loops := serverLoops(cpus)
	for i := 1; i < n; i++ {
		args := append([]string{"net", "serve", "-e", s.engine, "--addr", s.addr, "--share-port",
			"--max-conns", strconv.Itoa(maxConns)}, loopsArgs(s.engine, loops)...)
		cmd := o.Command(args...)
		cmd.Env = serverEnv(s.engine, loops)
		p, err := launch(ctx, cmd, s.engine, fmt.Sprintf("%s server %d of %d", s.engine, i+1, n), cpus)
		if err != nil {
			return err
		}
		s.peers = append(s.peers, p)
	}
	return nil
}

// groupPIDs is the processes of s's group.
func (s *server) groupPIDs() []int {
	pids := []int{s.pid}
	for _, p := range s.peers {
		pids = append(pids, p.pid)
	}
	return pids
}

// groupReading is what the bench reads of a server group at a window's
// start or end.
type groupReading struct {
	cpu  time.Duration // every process's CPU time so far
	rss  int64
	sock sockstat
}

func readGroup(s *server) (groupReading, error) {
	var g groupReading
	for _, pid := range s.groupPIDs() {
		cpu, err := load.ProcessCPU(pid)
		if err != nil {
			return g, err
		}
		use, err := readUse(pid)
		if err != nil {
			return g, err
		}
		g.cpu += cpu
		g.rss += use.rss
	}
	var err error
	g.sock, err = readSockstat(s.pid)
	return g, err
}

// barrier lets n callers through together, once all have come, and
// reads the server group as it does; it gives up after wait, or when
// done is closed (a load generator failed, or the bench was stopped).
type barrier struct {
	mu      sync.Mutex
	n, came int
	open    chan struct{}
	done    <-chan struct{}
	wait    time.Duration
	read    func() error
	err     error
	t       int64
}

func newBarrier(n int, wait time.Duration, done <-chan struct{}, read func() error) *barrier {
	return &barrier{n: n, open: make(chan struct{}), done: done, wait: wait, read: read}
}

// pass waits for the others, and returns the time all went through.
func (b *barrier) pass() (int64, error) {
	b.mu.Lock()
	b.came++
	if b.came == b.n {
		b.err = b.read()
		b.t = metrics.Nanotime()
		close(b.open)
	}
	b.mu.Unlock()
	t := time.NewTimer(b.wait)
	defer t.Stop()
	select {
	case <-b.open:
		return b.t, b.err
	case <-b.done:
		return 0, errors.New("another load generator of the group failed")
	case <-t.C:
		return 0, fmt.Errorf("the load generators did not all reach their windows within %v", b.wait)
	}
}

// runGroupLoad is loadWindow for a point past one process: m load
// generators, each with its share of conns from its own source address,
// against s's group; their results are merged into one.
func runGroupLoad(ctx context.Context, o *Options, s *server, cpus []int, conns, size int, mode string, d time.Duration, m int) (*netresult.Load, *heldUse, error) {
	gmp := len(cpus)
	if gmp == 0 {
		gmp = runtime.NumCPU()
	}
	var r0, r1 groupReading
	var h *heldUse
	if o.Heartbeat > 0 {
		var err error
		if h, err = newHeldUse(s.pid); err != nil {
			return nil, nil, err
		}
		g, err := readGroup(s)
		if err != nil {
			return nil, nil, err
		}
		h.before.rss = g.rss
	}
	// A load generator that fails, or the bench stopped, lets the others'
	// handshakes go.
	failed := make(chan struct{})
	var failOnce sync.Once
	fail := func() { failOnce.Do(func() { close(failed) }) }
	defer context.AfterFunc(ctx, fail)()
	// A child that cannot start stops the others (waitLoad kills its
	// child when gctx ends).
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	startB := newBarrier(m, groupWait, failed, func() (err error) { r0, err = readGroup(s); return err })
	endB := newBarrier(m, groupWait, failed, func() (err error) { r1, err = readGroup(s); return err })
	type child struct {
		res  *netresult.Load
		err  error
		sync *windowSync
	}
	kids := make([]child, m)
	var wg sync.WaitGroup
	defer func() { o.sources += m }() // the next group run takes fresh addresses
	startErr := func(err error) (*netresult.Load, *heldUse, error) {
		fail()
		cancel()
		wg.Wait()
		for i := range kids {
			if kids[i].sync != nil {
				kids[i].sync.wait()
			}
		}
		return nil, nil, err
	}
	for i := range m {
		share := conns / m
		if i < conns%m {
			share++
		}
		src := sourceAddr(o.sources + i)
		args := []string{"net", "load", "--addr", s.addr, "--conns", strconv.Itoa(share),
			"--size", strconv.Itoa(size), "--mode", mode, "--source", src,
			"--duration", d.String(), "--warmup", o.Warmup.String(), "--format", "json", WindowSyncFlag}
		if o.level > 0 {
			args = append(args, LossyFlag)
		}
		if o.Heartbeat > 0 {
			args = append(args, "--rate", strconv.FormatFloat(float64(share)/o.Heartbeat.Seconds(), 'g', -1, 64))
		}
		cmd := o.Command(args...)
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(gmp))
		out := &strings.Builder{}
		errb := &tailBuffer{max: 4096}
		cmd.Stdout, cmd.Stderr = out, errb
		ws, err := newWindowSync(cmd, startB.pass, endB.pass)
		if err != nil {
			return startErr(fmt.Errorf("start load generator %d of %d: %w", i+1, m, err))
		}
		if err := startPinned(cmd, cpus); err != nil {
			ws.abort()
			return startErr(fmt.Errorf("start load generator %d of %d: %w", i+1, m, err))
		}
		ws.started()
		kids[i].sync = ws
		wg.Go(func() {
			res, err := waitLoad(gctx, o, s, cmd, out, errb, d+groupWait, false)
			if err != nil {
				err = fmt.Errorf("load generator %d of %d (%s): %w", i+1, m, src, err)
				fail()
			}
			kids[i].res, kids[i].err = res, err
		})
	}
	wg.Wait()
	var errs []error
	var parts []*netresult.Load
	for i := range kids {
		sp := kids[i].sync.wait()
		if kids[i].err != nil {
			errs = append(errs, kids[i].err)
			continue
		}
		if sp.err != nil {
			errs = append(errs, fmt.Errorf("load generator %d of %d: %w", i+1, m, sp.err))
			continue
		}
		parts = append(parts, kids[i].res)
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	res := mergeLoads(parts)
	res.ServerCPU = r1.cpu - r0.cpu
	if res.Requests > 0 {
		res.ServerCPUPerReqUs = float64(res.ServerCPU.Nanoseconds()) / 1e3 / float64(res.Requests)
	}
	if h != nil {
		h.start.rss, h.end.rss = r0.rss, r1.rss
		h.sockStart, h.sockEnd = r0.sock, r1.sock
		h.n = 2
	}
	return res, h, nil
}

// mergeLoads adds up the load generators' results of one window: counts
// summed, QPS summed, latencies merged, the longest window and dial.
func mergeLoads(parts []*netresult.Load) *netresult.Load {
	out := *parts[0]
	out.Requests, out.Bytes, out.Corrupted, out.Lost, out.ConnErrors, out.NoEcho = 0, 0, 0, 0, 0, 0
	out.Conns, out.Carried, out.DialRetries, out.Refused, out.Resets, out.Unfinished = 0, 0, 0, 0, 0, 0
	out.QPS, out.MBps, out.ClientCPU, out.FirstError = 0, 0, 0, ""
	h := metrics.NewHistogram()
	for _, p := range parts {
		out.Requests += p.Requests
		out.Bytes += p.Bytes
		out.Corrupted += p.Corrupted
		out.Lost += p.Lost
		out.ConnErrors += p.ConnErrors
		out.NoEcho += p.NoEcho
		out.Conns += p.Conns
		out.Carried += p.Carried
		out.DialRetries += p.DialRetries
		out.Refused += p.Refused
		out.Resets += p.Resets
		out.Unfinished += p.Unfinished
		out.QPS += p.QPS
		out.MBps += p.MBps
		out.ClientCPU += p.ClientCPU
		out.Elapsed = max(out.Elapsed, p.Elapsed)
		out.DialTime = max(out.DialTime, p.DialTime)
		if out.FirstError == "" {
			out.FirstError = p.FirstError
		}
		h.AddBuckets(p.LatencyBuckets)
	}
	out.LatencyBuckets = h.Buckets()
	out.LatencyNs = netresult.Latency{P50: h.Quantile(50), P90: h.Quantile(90), P99: h.Quantile(99), P999: h.Quantile(99.9),
		Max: h.Max(), Mean: int64(h.Mean() + 0.5)}
	out.Hist = nil
	if out.Requests > 0 {
		out.ClientCPUPerReqUs = float64(out.ClientCPU.Nanoseconds()) / 1e3 / float64(out.Requests)
	}
	return &out
}
