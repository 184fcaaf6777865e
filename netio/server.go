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
)

// ErrNotSupported is wrapped by Listen's error when an engine cannot run on
// this kernel or under this policy (io_uring disabled, an opcode missing).
// It is features.ErrNotSupported, the one sentinel every package wraps.
var ErrNotSupported = features.ErrNotSupported

// Defaults for the zero Config.
const (
	DefaultAddr     = "127.0.0.1:0"
	DefaultMaxConns = 100_000
	DefaultBufSize  = 64 << 10
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
	Loops int
	// MaxConns is the most connections served at once (0:
	// DefaultMaxConns). One more is accepted and closed at once.
	MaxConns int
	// BufSize bounds the bytes each connection holds between receiving
	// and echoing them (0: DefaultBufSize).
	BufSize int
	// SQPoll asks io_uring for a kernel submission-polling thread per
	// ring (opt-in: it burns a core while busy).
	SQPoll bool
	// FixedFiles makes io_uring use registered (direct) descriptors for
	// connections.
	FixedFiles bool
}

func (c Config) withDefaults() (Config, netip.AddrPort, error) {
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
	switch {
	case c.Loops < 0 || c.Loops > 1024:
		return c, netip.AddrPort{}, fmt.Errorf("loops %d: want 1 to 1024", c.Loops)
	case c.MaxConns < 0:
		return c, netip.AddrPort{}, fmt.Errorf("max conns %d: want at least 1", c.MaxConns)
	case c.BufSize < 0 || c.BufSize > MaxBufSize:
		return c, netip.AddrPort{}, fmt.Errorf("buffer size %d: want 1 to %d bytes", c.BufSize, MaxBufSize)
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
	Resets   int64 // connections ended by an error (reset, broken pipe)
	BytesIn  int64 // bytes received
	BytesOut int64 // bytes sent
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
	accepted, refused, active, resets, bytesIn, bytesOut atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Accepted: c.accepted.Load(),
		Refused:  c.refused.Load(),
		Active:   c.active.Load(),
		Resets:   c.resets.Load(),
		BytesIn:  c.bytesIn.Load(),
		BytesOut: c.bytesOut.Load(),
	}
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
