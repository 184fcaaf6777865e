package netresult

import (
	"fmt"
	"strings"
	"time"

	"github.com/iopath/iopath/metrics"
)

// LoadKind is the "kind" of the JSON form of Load.
const LoadKind = "net-load"

// LoadSchemaVersion is the schema_version of the JSON form of Load
// (`iopath net load --format json`, docs/schema/net-load.schema.json).
const LoadSchemaVersion = 1

// Latency is a latency summary in nanoseconds.
type Latency = struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
	Mean int64 `json:"mean"`
}

// Load is what a run of the load generator (package netio/load)
// measured. Requests, Bytes, QPS, MBps, the latencies
// and the CPU times cover the measured window only; Corrupted, Lost and
// ConnErrors cover the whole run.
type Load struct {
	Mode     string  `json:"mode"`       // load.Mode.String()
	Conns    int     `json:"conns"`      // connections dialled
	Size     int     `json:"size_bytes"` // message size in bytes
	OpenLoop bool    `json:"open_loop"`  // load.Config.Rate > 0
	Rate     float64 `json:"rate_per_s"` // the load.Config.Rate asked for (messages per second), 0 for closed loop
	Client   string  `json:"client"`     // the driver that ran: load.ClientNet or load.ClientEpoll

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
	// reads to the server's FIN (within load.Config.Drain), and any byte on the way
	// is one no message asked for (a last message echoed twice, junk).
	Corrupted int64 `json:"corrupted_bytes"`
	// Lost counts bytes sent but never echoed back before the end of the
	// drain (bytes in flight when ctx ended the run are not counted).
	Lost int64 `json:"lost_bytes"`
	// ConnErrors counts connections that failed: reset, closed by the
	// server, still owing bytes when the drain ran out, sent bytes
	// after the last echo, or got no echo in time (NoEcho). A server that
	// never answers the FIN fails no connection (nothing was owed), but
	// holds load.Run for all of Drain.
	ConnErrors int64 `json:"conn_errors"`
	// NoEcho counts the connections of ConnErrors that had no byte echoed
	// within NoEchoWait from the start, though they had sent a message
	// early enough (closed loop: at the start): a server that leaves
	// connections unserved (in its listen queue when it is out of
	// descriptors, say) fails them, even if it serves them later, rather
	// than pass with its QPS from the few it served.
	NoEcho int64 `json:"no_echo_conns"`
	// Refused counts, with load.Config.Refusals, the connections the
	// server closed or reset before echoing any byte: refused over its
	// connection limit. Not in ConnErrors.
	Refused int64 `json:"refused_conns,omitempty"`
	// Resets counts the connections that reset themselves mid-request
	// (load.Config.ResetShare). Not in ConnErrors; what they were owed
	// is not in Lost.
	Resets int64 `json:"resets,omitempty"`
	// Reconnects counts the connections' reconnects (load.Config.Reconnect),
	// Resent the messages sent again on a new connection because the old
	// one failed before their echo came whole (each still verified).
	Reconnects int64 `json:"reconnects,omitempty"`
	Resent     int64 `json:"resent,omitempty"`
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
	// ServerCPU is load.Config.ServerPID's user+system CPU over the window, 0
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
	// DialRetries counts the connection attempts of the dial ramp that
	// failed and were tried again: refused or reset by a server whose
	// accept queue was full, or, on a lossy network (net bench --loss),
	// timed out.
	DialRetries int64 `json:"dial_retries,omitempty"`
	// Timeline, with load.Config.Timeline, counts the clean messages
	// completed in each interval of TimelineNs of the window, from
	// WindowStartNs (CLOCK_MONOTONIC, comparable with other processes'
	// clocks on the machine); the last interval, cut short, is left out.
	Timeline      []int64       `json:"timeline,omitempty"`
	TimelineNs    time.Duration `json:"timeline_ns,omitempty"`
	WindowStartNs int64         `json:"window_start_ns,omitempty"`
}

// Err says what went wrong in the run, or nil when every byte came back
// as sent on every connection.
func (r *Load) Err() error {
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
