package load

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/metrics"
)

// Bounds on Config, so that a typo cannot ask for a million gigabytes.
const (
	MaxConns    = 1_000_000
	MaxSize     = 64 << 20
	MaxDuration = 24 * time.Hour
	// MaxDrain bounds Config.Drain, and is its default.
	MaxDrain = 2 * time.Second
	// MaxRate bounds Config.Rate (messages per second in all).
	MaxRate = 1e9
	// MaxDialRate bounds Config.DialRate (connections per second).
	MaxDialRate = 1_000_000
	// FdSlack is the number of file descriptors Run wants on top of one
	// per connection (the runtime's poller, stdio, the ServerPID reads,
	// the epoll client's epoll and eventfd descriptors).
	FdSlack = 200
)

// Client drivers (Config.Client, Result.Client).
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
	// Result.NoEcho.
	Warmup time.Duration
	// Mode is pingpong, pipeline:K or stream (ParseMode).
	Mode Mode
	// Rate, when above 0, runs pingpong or pipeline open loop: Rate
	// messages per second across all connections, Rate/Conns on each,
	// each connection starting at a random phase of its interval.
	// 0 is closed loop. Stream has no rate.
	Rate float64
	// DialRate is the number of connections dialled per second while
	// ramping up (0: as fast as the server's listen backlog takes them,
	// with at most 256 dials in flight).
	DialRate int
	// ServerPID, when above 0, is the server's process: Run first makes
	// sure it holds a socket listening on Addr's port (when it is in this
	// process's network namespace and its /proc entries are readable),
	// and fails after the window if it used no CPU time while many
	// requests went through (see Result.ServerCPUSource). Its CPU time
	// (every thread, exited ones too) is read at the start and the end
	// of the window from its CPU clock (metrics.ProcessCPUClock,
	// nanoseconds), or from /proc/PID/stat (10 ms ticks) when the kernel
	// refuses the clock (Result.ServerCPUSource says which). It must be
	// another process for the figure to mean anything: with a server
	// inside this process, ClientCPU holds both.
	ServerPID int
	// Drain is how long Run waits after the window for echoes still in
	// flight, and for the server's FIN once it has them (see Corrupted),
	// before it counts what is still owed as lost and closes the
	// connections (0: MaxDrain, 2 s; at most MaxDrain).
	Drain time.Duration
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
	if c.Rate == 0 && c.Mode.Kind != Stream && int64(c.Mode.Depth)*int64(c.Size) <= syncMax {
		return ClientEpoll
	}
	return ClientNet
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
	case c.Drain < 0 || c.Drain > MaxDrain:
		return fmt.Errorf("drain %v: want 0 (the default, %v) to %v", c.Drain, MaxDrain, MaxDrain)
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

// Latency is a latency summary in nanoseconds.
type Latency = struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
	Mean int64 `json:"mean"`
}

// Result is what a run measured. Requests, Bytes, QPS, MBps, the latencies
// and the CPU times cover the measured window only; Corrupted, Lost and
// ConnErrors cover the whole run.
type Result struct {
	Mode     string  `json:"mode"`       // Mode.String()
	Conns    int     `json:"conns"`      // connections dialled
	Size     int     `json:"size_bytes"` // message size in bytes
	OpenLoop bool    `json:"open_loop"`  // Rate > 0
	Rate     float64 `json:"rate_per_s"` // the Rate asked for (messages per second), 0 for closed loop
	Client   string  `json:"client"`     // the driver that ran: ClientNet or ClientEpoll

	// Elapsed is the measured window as it actually ran (shorter than
	// Duration when ctx ended it, or every connection failed).
	Elapsed time.Duration `json:"elapsed_ns"`
	// Requests counts the messages that came back whole and verified
	// within the window (stream: every Size bytes echoed).
	Requests int64 `json:"requests"`
	// Bytes counts the echoed bytes verified within the window (one
	// direction: bytes the server sent back).
	Bytes int64 `json:"bytes"`
	// Corrupted counts echoed bytes that differ from what was sent,
	// and bytes the server sent after the last echo: once a
	// connection has everything back, Run half-closes it (its FIN) and
	// reads to the server's FIN (within Drain), and any byte on the way
	// is one no message asked for (a last message echoed twice, junk).
	Corrupted int64 `json:"corrupted_bytes"`
	// Lost counts bytes sent but never echoed back before the end of the
	// drain (bytes in flight when ctx ended the run are not counted).
	Lost int64 `json:"lost_bytes"`
	// ConnErrors counts connections that failed: reset, closed by the
	// server, still owing bytes when the drain ran out, sent bytes
	// after the last echo, or got no echo in time (NoEcho). A server that
	// never answers the FIN fails no connection (nothing was owed), but
	// holds Run for all of Drain.
	ConnErrors int64 `json:"conn_errors"`
	// NoEcho counts the connections of ConnErrors that had no byte echoed
	// within NoEchoWait from the start, though they had sent a message
	// early enough (closed loop: at the start): a server that leaves
	// connections unserved (in its listen queue when it is out of
	// descriptors, say) fails them, even if it serves them later, rather
	// than pass with its QPS from the few it served.
	NoEcho int64 `json:"no_echo_conns"`
	// NoEchoWait is the time the no-echo check allowed: the warm-up, or
	// 1 s from the start if that is later (0: the run was shorter, and
	// not checked).
	NoEchoWait time.Duration `json:"no_echo_wait_ns"`
	// FirstError is the error of the lowest-numbered connection that
	// failed, for messages ("" when none did); a connection that failed
	// otherwise comes before one that got no echo.
	FirstError string `json:"first_error,omitempty"`
	// Carried counts the connections that had bytes echoed within the
	// window: the ones the window's figures come from.
	Carried int `json:"carried_conns"`

	QPS  float64 `json:"qps"`      // Requests per second of Elapsed
	MBps float64 `json:"mb_per_s"` // Bytes per second of Elapsed, in 10^6 bytes

	// LatencyNs summarises Hist: per message, from the time it was sent
	// (closed loop) or meant to be sent (open loop) to the time its last
	// byte came back. Open loop adds the Unfinished messages, each with
	// the time it had waited by the window's end. Stream mode measures
	// no latency (all zero).
	LatencyNs Latency `json:"latency_ns"`
	// Hist is the latency histogram of the window: Requests values
	// (Requests + Unfinished in open loop).
	// It is carried in JSON as LatencyBuckets.
	Hist *metrics.Snapshot `json:"-"`
	// LatencyBuckets is Hist's non-empty buckets, as (lowest value in ns,
	// count) pairs (metrics.Histogram.Buckets).
	LatencyBuckets [][2]int64 `json:"latency_buckets_ns"`
	// Unfinished counts, in open loop, the messages due before the
	// window's end that had not come back by then: never sent because
	// the server's backpressure held the connection back (a full
	// pipeline or socket buffer, an echo it waited for), or sent and not
	// yet echoed. Each is in Hist with the window's end minus the time it
	// was due, a lower bound of its latency, so that a server that
	// stalls at the end of the window shows in the tail instead of
	// leaving no trace. Connections that failed are left out (their
	// fault is in ConnErrors). Closed loop: 0.
	Unfinished int64 `json:"unfinished"`

	// ClientCPU is this process's user+system CPU over the window.
	ClientCPU time.Duration `json:"client_cpu_ns"`
	// ServerCPU is ServerPID's user+system CPU over the window, 0
	// without ServerPID.
	ServerCPU time.Duration `json:"server_cpu_ns"`
	// ServerCPUSource says where ServerCPU was read: "clock", the
	// process's CPU clock (nanoseconds); "proc", /proc/PID/stat, only
	// when the kernel refused the clock (10 ms ticks: ±20 ms); "" without
	// ServerPID.
	ServerCPUSource string `json:"server_cpu_source,omitempty"`
	// ClientCPUPerReqUs is ClientCPU per request in microseconds.
	ClientCPUPerReqUs float64 `json:"client_cpu_us_per_req"`
	// ServerCPUPerReqUs is ServerCPU per request in microseconds (0
	// without ServerPID).
	ServerCPUPerReqUs float64 `json:"server_cpu_us_per_req"`
	// DialTime is how long the dial ramp took.
	DialTime time.Duration `json:"dial_ns"`
}

// Err says what went wrong in the run, or nil when every byte came back
// as sent on every connection.
func (r *Result) Err() error {
	if r.Corrupted == 0 && r.Lost == 0 && r.ConnErrors == 0 {
		return nil
	}
	var parts []string
	if r.Corrupted > 0 {
		parts = append(parts, fmt.Sprintf("%d echoed bytes corrupted", r.Corrupted))
	}
	if r.Lost > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes never echoed", r.Lost))
	}
	if r.NoEcho > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d connections had no echo within the first %v: the server left them unserved (out of file descriptors? see its log)",
			r.NoEcho, r.Conns, r.NoEchoWait.Round(10*time.Millisecond)))
	}
	if n := r.ConnErrors - r.NoEcho; n > 0 {
		s := fmt.Sprintf("%d of %d connections failed", n, r.Conns)
		if r.NoEcho > 0 {
			s = fmt.Sprintf("%d more failed", n)
		}
		if r.FirstError != "" {
			s += " (first: " + r.FirstError + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Errorf("load %s: %s", r.Mode, strings.Join(parts, "; "))
}
