package netio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/netio/internal/accepts"
)

// ErrNotSupported is wrapped by Listen's error when an engine cannot run on
// this kernel or under this policy (io_uring disabled, an opcode missing).
// It is features.ErrNotSupported, the one sentinel every package wraps.
var ErrNotSupported = features.ErrNotSupported

// Defaults for the zero Config, and the bounds Validate checks.
const (
	DefaultAddr     = "127.0.0.1:0"
	DefaultMaxConns = 100_000
	DefaultBufSize  = 64 << 10
	// MaxLoops bounds Config.Loops.
	MaxLoops = 1024
	// MaxMaxConns bounds Config.MaxConns: a million connections is more
	// than a process gets descriptors for on most systems.
	MaxMaxConns = 1_000_000
	// MaxBufSize bounds Config.BufSize, so that a typo cannot ask for
	// gigabytes per connection.
	MaxBufSize = 64 << 20
	// Backlog is the listen(2) backlog; the kernel caps it at somaxconn.
	Backlog = 4096
)

// Config says how to run a server. The zero value is valid.
type Config struct {
	// Addr is host:port to listen on; "" is DefaultAddr (loopback, any
	// free port).
	Addr string
	// Loops is the number of event loops for epoll and io_uring (0:
	// GOMAXPROCS). The net engine ignores it.
	//
	// A loop waits for events in a system call on its locked thread.
	// When no P is idle then (Loops equal to GOMAXPROCS, as by default,
	// or every other P busy), the runtime's sysmon takes the waiting
	// loop's P at its next 20 µs tick and is woken again when the loop
	// returns: two context switches per wait, which cost a fifth to a
	// third of a server's CPU per request at one connection ping-pong
	// (AMD EPYC, docs/net.md) and nothing once the loops are busy. A
	// server that often waits spares that with one P more than it has
	// loops (GOMAXPROCS = Loops + 1), as `iopath net bench` runs its
	// servers.
	Loops int
	// MaxConns is the most connections served at once (0:
	// DefaultMaxConns). One more is accepted and closed at once.
	MaxConns int
	// BufSize bounds the bytes each connection holds between receiving
	// and echoing them (0: DefaultBufSize): net and epoll hold at most
	// BufSize, io_uring at most twice that (what a loop pass receives
	// counts until the next pass's send completes).
	BufSize int
	// SharePort makes the server's listeners join the SO_REUSEPORT group
	// on Addr's port, which other processes of the same user share (a
	// group of server processes, as net bench runs past one process's
	// descriptors): the kernel spreads connections over every listener
	// of the group. Without it a port in use is an error, so that no
	// server shares its connections with another by accident.
	SharePort bool
	// SQPoll asks io_uring for a kernel submission-polling thread per
	// ring (opt-in: it burns a core while busy).
	SQPoll bool
	// FixedFiles makes io_uring use registered (direct) descriptors for
	// connections.
	FixedFiles bool
	// Log, when set, is told of trouble the server works around rather
	// than fails on, one line (no newline) at a time: accepts failing for
	// want of descriptors or memory (see Stats.AcceptErrors), at most once
	// a second. It is called from the server's loops and must not block
	// for long.
	Log func(msg string)
}

// Validate checks c as Listen will, with an error naming the field, its
// value and the range it must be in; 0 stands for the default in every
// numeric field.
func (c Config) Validate() error {
	_, _, err := c.withDefaults()
	return err
}

func (c Config) withDefaults() (Config, netip.AddrPort, error) {
	switch {
	case c.Loops < 0 || c.Loops > MaxLoops:
		return c, netip.AddrPort{}, fmt.Errorf("loops %d: want 1 to %d (0: GOMAXPROCS)", c.Loops, MaxLoops)
	case c.MaxConns < 0 || c.MaxConns > MaxMaxConns:
		return c, netip.AddrPort{}, fmt.Errorf("max conns %d: want 1 to %d (0: %d)", c.MaxConns, MaxMaxConns, DefaultMaxConns)
	case c.BufSize < 0 || c.BufSize > MaxBufSize:
		return c, netip.AddrPort{}, fmt.Errorf("buffer size %d: want 1 to %d bytes (0: %d)", c.BufSize, MaxBufSize, DefaultBufSize)
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Loops == 0 {
		c.Loops = runtime.GOMAXPROCS(0)
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.BufSize == 0 {
		c.BufSize = DefaultBufSize
	}
	ap, err := ParseAddr(c.Addr)
	if err != nil {
		return c, netip.AddrPort{}, err
	}
	return c, ap, nil
}

// ParseAddr parses host:port, where host is an IP address or "localhost"
// (which is 127.0.0.1: the engines bind one address, not a name) and an
// empty host is 127.0.0.1.
func ParseAddr(s string) (netip.AddrPort, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return netip.AddrPort{}, fmt.Errorf("address %q: want host:port, such as 127.0.0.1:7000", s)
	}
	host, port := s[:i], s[i+1:]
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	ap, err := netip.ParseAddrPort(bracket(host) + ":" + port)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: want host:port with an IP address and a port from 0 to 65535", s)
	}
	return ap, nil
}

func bracket(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// Stats counts what a server has done since it started. Every engine fills
// every field.
type Stats struct {
	Accepted int64 // connections accepted and served
	Refused  int64 // connections accepted and closed at once (over MaxConns)
	Active   int64 // connections open now
	Peak     int64 // the most connections open at once
	Resets   int64 // connections ended by an error (reset, broken pipe)
	BytesIn  int64 // bytes received
	BytesOut int64 // bytes sent
	// AcceptErrors counts accepts that failed, nearly always for want of
	// descriptors (EMFILE: RLIMIT_NOFILE; ENFILE: the system's limit, or
	// a full io_uring fixed-file table) or memory (ENOBUFS, ENOMEM).
	// While accepts fail, new connections wait in the listen queue,
	// unserved: the engine stops accepting for AcceptPause at a time,
	// serves the connections it has (whose closing frees descriptors),
	// and says so through Config.Log.
	AcceptErrors int64
}

// Server is a running echo server.
type Server interface {
	// Engine is the engine's name ("net", "epoll", "io_uring").
	Engine() string
	// Addr is the address the server listens on (with the port the kernel
	// chose when Config.Addr had port 0).
	Addr() netip.AddrPort
	// Stats returns the counters; it is safe to call at any time.
	Stats() Stats
	// Shutdown stops accepting, echoes what every connection has already
	// received, half-closes it and waits for the peer to close. When ctx
	// ends first it closes every remaining connection at once and returns
	// ctx.Err(). Either way every fd and goroutine of the server is gone
	// when it returns. Calling it again returns the first result.
	Shutdown(ctx context.Context) error
	// Close is Shutdown with no grace: every connection is closed now.
	Close() error
}

// listenFunc starts one engine with a Config that has its defaults set.
type listenFunc func(cfg Config, addr netip.AddrPort) (Server, error)

var (
	registryMu sync.Mutex
	registry   = map[string]listenFunc{}
)

// order is the canonical order of the engines in listings and reports.
var order = []string{"net", "epoll", "io_uring"}

func register(name string, fn listenFunc) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[name] = fn
}

// Engines lists the engine names, baseline first.
func Engines() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for _, n := range order {
		if registry[n] != nil {
			names = append(names, n)
		}
	}
	for n := range registry {
		if !slices.Contains(order, n) {
			names = append(names, n)
		}
	}
	return names
}

// Listen starts the named engine on cfg.Addr and returns once it is
// accepting connections.
func Listen(engine string, cfg Config) (Server, error) {
	registryMu.Lock()
	fn := registry[engine]
	registryMu.Unlock()
	if fn == nil {
		return nil, fmt.Errorf("unknown server engine %q (have %s)", engine, strings.Join(Engines(), ", "))
	}
	cfg, ap, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", engine, err)
	}
	return fn(cfg, ap)
}

// counters are a server's Stats, updated atomically by its loops.
type counters struct {
	accepted, refused, active, resets, bytesIn, bytesOut, acceptErrs atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Accepted:     c.accepted.Load(),
		Refused:      c.refused.Load(),
		Active:       c.active.Load(),
		Resets:       c.resets.Load(),
		BytesIn:      c.bytesIn.Load(),
		BytesOut:     c.bytesOut.Load(),
		AcceptErrors: c.acceptErrs.Load(),
	}
}

// connCount enforces Config.MaxConns over a server's loops and keeps
// Stats.Peak.
type connCount struct {
	open, peak atomic.Int64
	max        int64
}

// reserve takes a slot under the limit, or reports that none is free.
func (c *connCount) reserve() bool {
	for {
		n := c.open.Load()
		if n >= c.max {
			return false
		}
		if c.open.CompareAndSwap(n, n+1) {
			for p := c.peak.Load(); n+1 > p && !c.peak.CompareAndSwap(p, n+1); p = c.peak.Load() {
			}
			return true
		}
	}
}

// release gives a slot back.
func (c *connCount) release() { c.open.Add(-1) }

// AcceptPause is how long an engine stops accepting after an accept
// failed (EMFILE and friends, see Stats.AcceptErrors): the listener stays
// readable, so accepting again at once would fail again at once, and
// spin. The connections open meanwhile are served, and may free
// descriptors.
const AcceptPause = accepts.Pause

// newAcceptLog is the rate-limited word of a server's failed accepts.
func newAcceptLog(cfg Config, engine string, addr netip.AddrPort, open func() int64) *accepts.Log {
	return accepts.NewLog(cfg.Log, fmt.Sprintf("%s server on %s", engine, addr), open)
}

// onceErr runs a shutdown once and hands its result to every caller.
type onceErr struct {
	once sync.Once
	done chan struct{}
	err  error
}

func (o *onceErr) do(fn func() error) error {
	o.once.Do(func() {
		o.done = make(chan struct{})
		o.err = fn()
		close(o.done)
	})
	<-o.done
	return o.err
}

// add adds o's counters to s (a server's total over its loops).
func (s *Stats) add(o Stats) {
	s.Accepted += o.Accepted
	s.Refused += o.Refused
	s.Active += o.Active
	s.Resets += o.Resets
	s.BytesIn += o.BytesIn
	s.BytesOut += o.BytesOut
	s.AcceptErrors += o.AcceptErrors
}

// Modes of a server made of loops, which Shutdown raises and nothing
// lowers: run; drain (stop accepting, echo what each connection holds,
// half-close it and wait for the peer to close); force (close everything
// at once).
const (
	modeRun int32 = iota
	modeDrain
	modeForce
)

// shell is the part of a server made of loops that does not depend on how
// a loop waits: the epoll and io_uring engines each embed one and add
// their loops. Each loop has an SO_REUSEPORT listener, an eventfd by which
// Shutdown wakes it, and counters of its own; the shell holds what they
// share: the connection count that enforces MaxConns, the log of failed
// accepts, the mode Shutdown sets, and the first error a loop failed with.
type shell struct {
	engine string
	cfg    Config
	addr   netip.AddrPort

	// count counts the connections served by all loops, for MaxConns.
	count connCount
	alog  *accepts.Log
	// mode is what Shutdown asks of the loops: modeRun, then modeDrain,
	// then modeForce; it only grows. Each change is followed by a write
	// to every loop's eventfd.
	mode atomic.Int32
	// efds are the loops' eventfds, -1 once closed. The shell owns them
	// and closes them only after every loop has exited, so that command
	// never writes to a reused fd number.
	efds []int
	// stats are the loops' counters, each in a cache line of its loop's
	// own, so that two loops never contend for one on every request.
	stats []*counters

	wg       sync.WaitGroup // one per loop
	shutdown onceErr

	errMu   sync.Mutex
	loopErr error // the first loop that failed, if any
}

// listen opens the loops' listeners, one SO_REUSEPORT socket per
// cfg.Loops on ap, and sets the shell up for them.
func (s *shell) listen(engine string, cfg Config, ap netip.AddrPort) ([]int, error) {
	lfds, bound, err := sys.ListenTCPGroup(ap, cfg.Loops, Backlog, cfg.SharePort)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", engine, err)
	}
	s.engine, s.cfg, s.addr = engine, cfg, bound
	s.count.max = int64(cfg.MaxConns)
	s.alog = newAcceptLog(cfg, engine, bound, s.count.open.Load)
	return lfds, nil
}

// addLoop takes a loop's eventfd (from now on the shell's to close) and
// its counters, before the loop starts.
func (s *shell) addLoop(efd int, st *counters) {
	s.efds = append(s.efds, efd)
	s.stats = append(s.stats, st)
}

func (s *shell) Engine() string       { return s.engine }
func (s *shell) Addr() netip.AddrPort { return s.addr }

// Stats sums the loops' counters.
func (s *shell) Stats() Stats {
	var t Stats
	for _, st := range s.stats {
		t.add(st.snapshot())
	}
	t.Peak = s.count.peak.Load()
	return t
}

// Shutdown tells every loop to stop accepting and drain its connections
// (echo what each holds, half-close it, wait for the peer to close), and,
// if ctx ends first, to close everything at once. It returns when every
// loop has exited: with ctx.Err() if the drain was cut short, else with
// the error a loop failed with, if any.
func (s *shell) Shutdown(ctx context.Context) error {
	return s.shutdown.do(func() error {
		err := drainThenForce(ctx, &s.wg, func() { s.command(modeDrain) }, func() { s.command(modeForce) })
		s.closeEventfds()
		if err == nil {
			s.errMu.Lock()
			err = s.loopErr
			s.errMu.Unlock()
		}
		return err
	})
}

// Close is Shutdown with no grace.
func (s *shell) Close() error { return closeNow(s.Shutdown) }

// command raises the mode and wakes every loop to act on it.
func (s *shell) command(m int32) {
	s.mode.Store(m)
	for _, efd := range s.efds {
		if efd >= 0 {
			wake(efd)
		}
	}
}

// closeEventfds closes the loops' eventfds; every loop must have exited
// (and an io_uring loop reaped its READ on its eventfd).
func (s *shell) closeEventfds() {
	for i, efd := range s.efds {
		if efd >= 0 {
			sys.Close(efd)
			s.efds[i] = -1
		}
	}
}

// fail records why a loop gave up; Shutdown returns the first such error.
func (s *shell) fail(err error) {
	s.errMu.Lock()
	if s.loopErr == nil {
		s.loopErr = err
	}
	s.errMu.Unlock()
}

// drainThenForce is the shutdown of a server made of loops: it asks them
// to drain, and when ctx ends first (or has already ended) to close
// everything at once; it returns when every loop has exited (wg), with
// ctx.Err() if the drain was cut short.
func drainThenForce(ctx context.Context, wg *sync.WaitGroup, drain, force func()) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	if ctx.Err() != nil {
		force()
		<-done
		return ctx.Err()
	}
	drain()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		force()
		<-done
		return ctx.Err()
	}
}

// closeNow is Close for every engine: Shutdown with no grace, where the
// cancelled context's own error is not a failure.
func closeNow(shutdown func(context.Context) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := shutdown(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// wake adds one to the eventfd efd, waking the loop waiting on it. EAGAIN
// (the counter is full) is fine: the loop is woken anyway.
func wake(efd int) {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	sys.Write(efd, one[:])
}
