package load

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Bounds on Config, so that a typo cannot ask for a million gigabytes.
const (
	MaxConns    = 1_000_000
	MaxSize     = 64 << 20
	MaxDuration = 24 * time.Hour
	// The strategies of Config.Reconnect.
	ReconnectNone      = "none"
	ReconnectImmediate = "immediate"
	ReconnectBackoff   = "backoff"
	// The defaults of Config.ConnectTimeout and ReconnectFor, and the
	// backoff's first and longest waits.
	DefaultConnectTimeout = time.Second
	DefaultReconnectFor   = 30 * time.Second
	backoffFirst          = 10 * time.Millisecond
	backoffMax            = time.Second
	// MinTimeline bounds Config.Timeline from below, and
	// maxTimelineSamples the samples of a window.
	MinTimeline        = 10 * time.Millisecond
	maxTimelineSamples = 1_000_000
	// MaxDrain bounds Config.Drain, and is its default.
	MaxDrain = 2 * time.Second
	// The bounds of a run with Config.Lossy.
	LossyDrain       = 60 * time.Second
	LossyDialTimeout = 60 * time.Second
	LossyEchoWait    = 30 * time.Second
	// MaxRate bounds Config.Rate (messages per second in all).
	MaxRate = 1e9
	// MaxDialRate bounds Config.DialRate (connections per second).
	MaxDialRate = 1_000_000
	// FdSlack is the number of file descriptors Run wants on top of one
	// per connection (the runtime's poller, stdio, the ServerPID reads,
	// the epoll client's epoll and eventfd descriptors).
	FdSlack = 200
)

// Client drivers (Config.Client, netresult.Load.Client).
const (
	// ClientNet drives each connection from goroutines on Go's net
	// package: every mode, open loop too.
	ClientNet = "net"
	// ClientEpoll drives the connections from event loops on raw epoll,
	// one per GOMAXPROCS: closed-loop pingpong and pipeline:K only, for
	// less client CPU per message than ClientNet, so that a core of load
	// generator can keep a faster server busy.
	ClientEpoll = "epoll"
)

// Config says what load to put on a server.
type Config struct {
	// Addr is the server's host:port; required. Callers default it to
	// 127.0.0.1:PORT.
	Addr string
	// Conns is the number of connections, 1 to MaxConns. Run first makes
	// sure RLIMIT_NOFILE allows Conns+FdSlack open files.
	Conns int
	// Size is the message size in bytes, 1 to MaxSize (64 MiB).
	Size int
	// Duration is the measured window, above 0 and at most MaxDuration.
	Duration time.Duration
	// Warmup runs the load before the window, unmeasured (0: none). A
	// connection that has had no byte echoed by its end (or 1 s from the
	// start, if that is later; a shorter run is not checked) fails: see
	// netresult.Load.NoEcho.
	Warmup time.Duration
	// Mode is pingpong, pipeline:K or stream (ParseMode).
	Mode Mode
	// Rate, when above 0, runs pingpong or pipeline open loop: Rate
	// messages per second across all connections, Rate/Conns on each,
	// each connection starting at a random phase of its interval.
	// 0 is closed loop. Stream has no rate.
	Rate float64
	// Source, when set, is the local IP address the connections are made
	// from (bound before connect): each address has its own range of
	// ephemeral ports, so several load generators on 127.0.0.2,
	// 127.0.0.3, ... together hold more connections to one server port
	// than one address allows.
	Source string
	// Reconnect is what a connection does when it fails (reset, closed
	// by the server, or RequestTimeout without an echo): ReconnectNone
	// (the default) counts it failed; ReconnectImmediate dials again at
	// once, and ReconnectBackoff after a wait that doubles from 10 ms to
	// 1 s with jitter; both give up, and count it failed, after
	// ReconnectFor. A connection that reconnects sends again every
	// message not yet echoed whole, and those echoes are verified as
	// ever (netresult.Load.Reconnects, Resent). Pingpong or pipeline:K
	// within 32 KiB in flight, on the net client.
	Reconnect string
	// ConnectTimeout bounds each reconnect attempt (0: 1 s).
	ConnectTimeout time.Duration
	// RequestTimeout, when above 0, is how long a connection waits for
	// an echo before it counts as failed (and reconnects, with
	// Reconnect).
	RequestTimeout time.Duration
	// ReconnectFor bounds a connection's attempts to reconnect after one
	// failure (0: 30 s).
	ReconnectFor time.Duration
	// Refusals says the server may refuse connections (accept and close
	// them at once, over its connection limit): a connection closed or
	// reset by the server before any byte came back is counted in
	// netresult.Load.Refused instead of failing the run. One closed
	// after an echo still fails it.
	Refusals bool
	// ResetShare, 0 to 1, is the share of connections that reset
	// themselves once, in the middle of a request, during the window:
	// the request sent, SO_LINGER set to 0 and the socket closed, so
	// that the server gets a RST with its echo owed (netresult.Load.Resets;
	// what they were owed is not lost). Closed-loop pingpong or pipeline
	// within 32 KiB in flight, on the net client.
	ResetShare float64
	// Timeline, when above 0, samples the clean messages completed in
	// the measured window every Timeline (at least MinTimeline) into
	// netresult.Load.Timeline: QPS over time, as while a network drops
	// packets for a while and recovers (net bench --recovery).
	Timeline time.Duration
	// DialRate is the number of connections dialled per second while
	// ramping up (0: as fast as the server's listen backlog takes them,
	// with at most 256 dials in flight).
	DialRate int
	// ServerPID, when above 0, is the server's process: Run first makes
	// sure it holds a socket listening on Addr's port (when it is in this
	// process's network namespace and its /proc entries are readable),
	// and fails after the window if it used no CPU time while many
	// requests went through (see netresult.Load.ServerCPUSource). Its CPU time
	// (every thread, exited ones too) is read at the start and the end
	// of the window from its CPU clock (metrics.ProcessCPUClock,
	// nanoseconds), or from /proc/PID/stat (10 ms ticks) when the kernel
	// refuses the clock (netresult.Load.ServerCPUSource says which). It must be
	// another process for the figure to mean anything: with a server
	// inside this process, ClientCPU holds both.
	ServerPID int
	// Drain is how long Run waits after the window for echoes still in
	// flight, and for the server's FIN once it has them (see Corrupted),
	// before it counts what is still owed as lost and closes the
	// connections (0: MaxDrain, 2 s; at most MaxDrain).
	Drain time.Duration
	// Lossy says the network drops packets (net bench --loss): TCP then
	// holds an echo or a handshake for seconds while it retransmits, with
	// its backoff doubling, which is slowness, not loss. Drain may then be
	// up to LossyDrain (and is LossyDrain when 0), a dial attempt waits up
	// to LossyDialTimeout, and a connection has LossyEchoWait for its first
	// echo before it is called unserved.
	Lossy bool
	// Progress, when set, is called during the dial ramp with phase
	// "dial" (done and total are connections), and during the run with
	// "warmup" and "run" (milliseconds elapsed and in all) and "drain"
	// (connections finished and in all); at most about 5 times a second
	// per phase, from one goroutine at a time, and once more at the end of
	// each phase with done == total. It must not block.
	Progress func(phase string, done, total int)
	// Client is the driver: ClientNet, ClientEpoll, or "" to choose:
	// epoll for closed-loop pingpong and pipeline:K whose bytes in flight
	// per connection (Depth × Size) are at most 32 KiB, where the
	// client's cost per message is mostly system calls and wakeups; net
	// otherwise (stream, open loop, big messages). Epoll cannot drive
	// stream or open loop.
	Client string
}

// client is the driver Run uses for c (c checked).
func (c *Config) client() string {
	if c.Client != "" {
		return c.Client
	}
	if c.Rate == 0 && c.ResetShare == 0 && !c.reconnects() && c.RequestTimeout == 0 && c.Mode.Kind != Stream && int64(c.Mode.Depth)*int64(c.Size) <= syncMax {
		return ClientEpoll
	}
	return ClientNet
}

// reconnects says a failed connection dials again.
func (c *Config) reconnects() bool {
	return c.Reconnect == ReconnectImmediate || c.Reconnect == ReconnectBackoff
}

// Validate checks every field of c, with an error naming the field, its
// value and what is wanted. Run calls it first.
func (c *Config) Validate() error {
	if c.Addr == "" {
		return errors.New("address not set: want host:port, such as 127.0.0.1:7000")
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("address %q: want host:port, such as 127.0.0.1:7000", c.Addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("address %q: port %q: want 1 to 65535", c.Addr, port)
	}
	if host == "" {
		return fmt.Errorf("address %q: no host: want host:port, such as 127.0.0.1:7000", c.Addr)
	}
	switch {
	case c.Conns < 1 || c.Conns > MaxConns:
		return fmt.Errorf("conns %d: want 1 to %d", c.Conns, MaxConns)
	case c.Size < 1 || c.Size > MaxSize:
		return fmt.Errorf("size %d: want 1 byte to %d bytes (64 MiB)", c.Size, MaxSize)
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return fmt.Errorf("duration %v: want above 0 and at most %v", c.Duration, MaxDuration)
	case c.Warmup < 0 || c.Warmup > MaxDuration:
		return fmt.Errorf("warmup %v: want 0 to %v", c.Warmup, MaxDuration)
	case c.Drain < 0 || c.Drain > MaxDrain && !c.Lossy:
		return fmt.Errorf("drain %v: want 0 (the default, %v) to %v", c.Drain, MaxDrain, MaxDrain)
	case c.Drain > LossyDrain:
		return fmt.Errorf("drain %v: want 0 (the default, %v) to %v", c.Drain, LossyDrain, LossyDrain)
	case c.Reconnect != "" && c.Reconnect != ReconnectNone && c.Reconnect != ReconnectImmediate && c.Reconnect != ReconnectBackoff:
		return fmt.Errorf("reconnect %q: want none, immediate or backoff", c.Reconnect)
	case c.reconnects() && (c.Mode.Kind == Stream || int64(c.Mode.Depth)*int64(c.Size) > syncMax):
		return fmt.Errorf("reconnect %s: a connection resends what was not echoed, in pingpong or pipeline:K with at most %d bytes in flight", c.Reconnect, syncMax)
	case c.reconnects() && c.Client == ClientEpoll:
		return errors.New("reconnect: the net client reconnects, not the epoll client; use client net (or leave it unset)")
	case c.ConnectTimeout < 0 || c.ConnectTimeout > MaxDuration:
		return fmt.Errorf("connect timeout %v: want 0 (the default, %v) to %v", c.ConnectTimeout, DefaultConnectTimeout, MaxDuration)
	case c.RequestTimeout < 0 || c.RequestTimeout > MaxDuration:
		return fmt.Errorf("request timeout %v: want 0 (none) to %v", c.RequestTimeout, MaxDuration)
	case c.RequestTimeout > 0 && (c.Mode.Kind == Stream || int64(c.Mode.Depth)*int64(c.Size) > syncMax || c.Client == ClientEpoll):
		return fmt.Errorf("request timeout: pingpong or pipeline:K with at most %d bytes in flight, on the net client", syncMax)
	case c.ReconnectFor < 0 || c.ReconnectFor > MaxDuration:
		return fmt.Errorf("reconnect for %v: want 0 (the default, %v) to %v", c.ReconnectFor, DefaultReconnectFor, MaxDuration)
	case c.Source != "" && net.ParseIP(c.Source) == nil:
		return fmt.Errorf("source %q: want an IP address, such as 127.0.0.2", c.Source)
	case math.IsNaN(c.ResetShare) || c.ResetShare < 0 || c.ResetShare > 1:
		return fmt.Errorf("reset share %v: want 0 to 1", c.ResetShare)
	case c.ResetShare > 0 && (c.Mode.Kind == Stream || c.Rate > 0 || int64(c.Mode.Depth)*int64(c.Size) > syncMax):
		return fmt.Errorf("reset share %v: resets mid-request need closed-loop pingpong or pipeline:K with at most %d bytes in flight", c.ResetShare, syncMax)
	case c.ResetShare > 0 && c.Client == ClientEpoll:
		return errors.New("reset share: the net client resets connections, not the epoll client; use client net (or leave it unset)")
	case c.Timeline != 0 && (c.Timeline < MinTimeline || c.Timeline > c.Duration || c.Duration/c.Timeline > maxTimelineSamples):
		return fmt.Errorf("timeline %v: want 0 (none) or %v to the duration, at most %d samples", c.Timeline, MinTimeline, maxTimelineSamples)
	case math.IsNaN(c.Rate) || c.Rate < 0 || c.Rate > MaxRate:
		return fmt.Errorf("rate %v: want 0 (closed loop) to %g messages per second", c.Rate, float64(MaxRate))
	case c.DialRate < 0 || c.DialRate > MaxDialRate:
		return fmt.Errorf("dial rate %d: want 0 (unpaced) to %d connections per second", c.DialRate, MaxDialRate)
	case c.ServerPID < 0:
		return fmt.Errorf("server pid %d: want a process id, or 0 for none", c.ServerPID)
	}
	if err := c.Mode.check(); err != nil {
		return err
	}
	if c.Source != "" {
		if err := checkSource(c.Source, host); err != nil {
			return err
		}
	}
	if c.Rate > 0 && c.Mode.Kind == Stream {
		return errors.New("rate: stream mode has no rate (its writers never wait); use pingpong or pipeline:K for open loop")
	}
	switch c.Client {
	case "", ClientNet:
	case ClientEpoll:
		if c.Mode.Kind == Stream {
			return errors.New("client epoll: drives closed-loop pingpong and pipeline:K only, not stream; use client net (or leave it unset)")
		}
		if c.Rate > 0 {
			return fmt.Errorf("client epoll: drives closed loop only, not rate %g (open loop); use client net (or leave it unset)", c.Rate)
		}
	default:
		return fmt.Errorf("client %q: want net, epoll, or empty to choose", c.Client)
	}
	return nil
}

// checkSource says why connections cannot be made from the address src to
// the server host: src is of another family than host (an IP address),
// or is not an address of this host (which dialing would report as
// EADDRNOTAVAIL, the error of running out of local ports).
func checkSource(src, host string) error {
	ip := net.ParseIP(src)
	if hip := net.ParseIP(host); hip != nil && (ip.To4() == nil) != (hip.To4() == nil) {
		return fmt.Errorf("source %s and server %s are of different IP versions", src, host)
	}
	l, err := net.ListenPacket("udp", net.JoinHostPort(src, "0"))
	if err != nil {
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			return fmt.Errorf("source %s: not an address of this host (of its network namespace)", src)
		}
		return fmt.Errorf("source %s: %w", src, err)
	}
	l.Close()
	return nil
}
