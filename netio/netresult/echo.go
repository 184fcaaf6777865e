package netresult

import (
	"fmt"
	"math"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/perf"
)

// EchoSchemaVersion is the version of the JSON form of Report (the kind
// "net-echo", docs/schema/net-echo.schema.json). It changes when a key is
// renamed or removed or a field changes meaning.
//
// Version 2: the report starts with "kind"; machine.page_size is
// page_size_bytes. report.LoadNetJSON reads version 1 too.
const EchoSchemaVersion = 2

// EchoKind is the "kind" of the JSON form of Report.
const EchoKind = "net-echo"

// EchoTool is Report.Tool: it tells a net bench report from a file bench
// one.
const EchoTool = "iopath net bench"

// NotRun is the Err of a point that the bench did not get to because it
// was interrupted: a report never shows zeros for a figure it did not
// measure.
const NotRun = "not run: interrupted"

// Report is the result of one `iopath net bench` of the echo servers:
// every point of the matrix, for every server engine, with every run.
type Report struct {
	// SchemaVersion is the version of the format the report was read
	// from or is written in. report.NetJSON writes it, with Kind, as the
	// first keys ("schema_version", "kind").
	SchemaVersion int              `json:"-"`
	Tool          string           `json:"tool"` // EchoTool
	Version       string           `json:"version"`
	Command       string           `json:"command"`
	Started       time.Time        `json:"started"`
	Machine       features.Machine `json:"machine"`
	Config        Config           `json:"config"`
	Points        []Point          `json:"points"`
	// Skipped lists engines that could not run here, with the reason
	// (io_uring disabled, say). A skip is not a failure.
	Skipped []Skip   `json:"skipped,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Config is the matrix and how it was run.
type Config struct {
	Engines    []string `json:"engines"`
	Conns      []int    `json:"conns"`
	Sizes      []int    `json:"sizes_bytes"`
	Modes      []string `json:"modes"`
	DurationNs int64    `json:"duration_ns"`
	WarmupNs   int64    `json:"warmup_ns"`
	Runs       int      `json:"runs"`
	// ServerCPUs and ClientCPUs are the cores the server child and the
	// load generator were pinned to; empty when pinning was not possible
	// (then PinNote says why).
	ServerCPUs []int  `json:"server_cpus,omitempty"`
	ClientCPUs []int  `json:"client_cpus,omitempty"`
	PinNote    string `json:"pin_note,omitempty"`
	// ServerProcs is the GOMAXPROCS each engine's server ran with: one
	// more than its loops for epoll and io_uring (docs/net.md, "A spare
	// P for the loop engines"); absent from reports made before that.
	ServerProcs map[string]int `json:"server_gomaxprocs,omitempty"`
	Addr        string         `json:"addr"`
	// PerfDir is where the server's perf profiles went (--perf), one per
	// run; "" when the servers were not recorded.
	PerfDir string `json:"perf_dir,omitempty"`
	// Loss lists the shares of packets dropped (--loss, 0 to 1): each
	// level ran in a network namespace of its own with that loss on its
	// loopback; empty when the bench ran on the machine's loopback.
	Loss []float64 `json:"loss,omitempty"`
	// RTOMaxMs is the cap on TCP's retransmission timeout in those
	// namespaces, ms (--rto-max); 0 when it was the kernel's.
	RTOMaxMs int64 `json:"rto_max_ms,omitempty"`
	// MaxConns is the servers' connection limit when it was set
	// (--max-conns), ResetShare the share of connections that reset
	// themselves mid-request (--reset).
	MaxConns int `json:"max_conns,omitempty"`
	// HeartbeatNs is the interval of --heartbeat: each connection sent
	// one message every HeartbeatNs (open loop).
	HeartbeatNs int64 `json:"heartbeat_ns,omitempty"`
	// Reconnect is the load generators' reconnect strategy (--reconnect),
	// Restart says each run restarted the server (--restart).
	Reconnect  string  `json:"reconnect,omitempty"`
	Restart    bool    `json:"restart,omitempty"`
	ResetShare float64 `json:"reset_share,omitempty"`
}

// Skip is an engine that could not run, and why.
type Skip struct {
	Engine string `json:"engine"`
	Reason string `json:"reason"`
}

// Point is one engine at one point of the matrix: its runs and their
// medians.
type Point struct {
	Engine string `json:"engine"`
	Conns  int    `json:"conns"`
	Size   int    `json:"size_bytes"`
	Mode   string `json:"mode"`
	// Loss is the share of packets dropped in the point's namespace
	// (--loss), 0 to 1; LossSet says the point ran in one (0% included).
	Loss    float64 `json:"loss,omitempty"`
	LossSet bool    `json:"loss_set,omitempty"`
	// RetransPer1kReq is the TCP segments retransmitted in the
	// namespace per 1,000 requests, median over the runs (--loss).
	RetransPer1kReq float64 `json:"retrans_per_1k_req,omitempty"`
	// LossWindowNs, with --recovery, is how long the loss lasted in each
	// run (the rest of the run dropped nothing); RecoveryNs is the median
	// of the runs' recovery times, a run that did not recover counting
	// as the longest, and Recovered says that median recovered.
	LossWindowNs int64 `json:"loss_window_ns,omitempty"`
	// Restart says each run restarted the server mid-window (--restart),
	// the load generator reconnecting as Config.Reconnect says;
	// RecoveryNs and Recovered are then the recovery after the restart.
	Restart bool `json:"restart,omitempty"`
	// Refused and Resets are the runs' sums; LeakedFDs the descriptors
	// the server held after the runs that it did not before, summed
	// (more than 0 fails the point, as corrupted bytes do).
	Refused    int64 `json:"refused_conns,omitempty"`
	Resets     int64 `json:"resets,omitempty"`
	LeakedFDs  int64 `json:"leaked_fds,omitempty"`
	RecoveryNs int64 `json:"recovery_ns,omitempty"`
	Recovered  bool  `json:"recovered,omitempty"`
	Runs       []Run `json:"runs"`
	// Median over runs.
	QPS               float64 `json:"qps"`
	MBps              float64 `json:"mb_per_s"`
	ServerCPUPerReqUs float64 `json:"server_cpu_us_per_req"`
	ClientCPUPerReqUs float64 `json:"client_cpu_us_per_req"`
	P50Ns             int64   `json:"p50_ns"`
	P99Ns             int64   `json:"p99_ns"`
	P999Ns            int64   `json:"p999_ns"`
	MaxNs             int64   `json:"max_ns"`
	// Sums over runs: each must be 0.
	Corrupted  int64 `json:"corrupted_bytes"`
	Lost       int64 `json:"lost_bytes"`
	ConnErrors int64 `json:"conn_errors"`
	// NoEcho is the part of ConnErrors the server left unserved: no echo
	// within the warm-up (Load.NoEcho).
	NoEcho int64 `json:"no_echo_conns,omitempty"`
	// Perf is where the server's CPU went over the runs' measured windows
	// together (perf.Merge of the runs' Perf), and Flame their call tree,
	// pruned: set when the servers were recorded with perf (--perf).
	// PerfError says that some run's recording failed: how many, and the
	// first error.
	Perf      *perf.Breakdown `json:"perf,omitempty"`
	Flame     *perf.Flame     `json:"flame,omitempty"`
	PerfError string          `json:"perf_error,omitempty"`
	// Err is set when the point could not be measured (the server died,
	// the dial ramp failed); its figures are then 0.
	Err string `json:"error,omitempty"`
}

// Run is one measured window of one engine at one point.
type Run struct {
	Requests          int64   `json:"requests"`
	Bytes             int64   `json:"bytes"`
	ElapsedNs         int64   `json:"elapsed_ns"`
	QPS               float64 `json:"qps"`
	MBps              float64 `json:"mb_per_s"`
	ServerCPUNs       int64   `json:"server_cpu_ns"`
	ClientCPUNs       int64   `json:"client_cpu_ns"`
	ServerCPUPerReqUs float64 `json:"server_cpu_us_per_req"`
	ClientCPUPerReqUs float64 `json:"client_cpu_us_per_req"`
	P50Ns             int64   `json:"p50_ns"`
	P90Ns             int64   `json:"p90_ns"`
	P99Ns             int64   `json:"p99_ns"`
	P999Ns            int64   `json:"p999_ns"`
	MaxNs             int64   `json:"max_ns"`
	Corrupted         int64   `json:"corrupted_bytes"`
	Lost              int64   `json:"lost_bytes"`
	ConnErrors        int64   `json:"conn_errors"`
	NoEcho            int64   `json:"no_echo_conns,omitempty"`
	DialNs            int64   `json:"dial_ns"`
	// DialRetries counts connection attempts that failed and were tried
	// again (load.Load.DialRetries).
	DialRetries int64 `json:"dial_retries,omitempty"`
	// Retransmits is the TCP segments the namespace retransmitted during
	// the run (its dial and warm-up included), both directions (--loss).
	Retransmits int64 `json:"retransmits,omitempty"`
	// Refused counts the connections the server refused (over
	// --max-conns), Resets those that reset themselves mid-request
	// (--reset); neither is a failure. With either, the server's open
	// descriptors and resident memory (bytes) before the run and once it
	// had closed the run's connections (at most 2 s after).
	Refused int64 `json:"refused_conns,omitempty"`
	Resets  int64 `json:"resets,omitempty"`
	// Reconnects and Resent: the load generator's reconnects after
	// failed connections (--reconnect) and the messages it sent again.
	Reconnects      int64 `json:"reconnects,omitempty"`
	Resent          int64 `json:"resent,omitempty"`
	ServerFDsBefore int   `json:"server_fds_before,omitempty"`
	ServerFDsAfter  int   `json:"server_fds_after,omitempty"`
	ServerRSSBefore int64 `json:"server_rss_before_bytes,omitempty"`
	ServerRSSAfter  int64 `json:"server_rss_after_bytes,omitempty"`
	// With --heartbeat: the server's resident memory (bytes) before the
	// run's connections were dialled and while they were held (the
	// window's start and end averaged), and the same of the kernel's TCP
	// socket memory in the server's network namespace (sockstat's mem,
	// both ends of every connection on loopback), with the TCP sockets
	// in use there.
	ServerRSSIdle  int64 `json:"server_rss_idle_bytes,omitempty"`
	ServerRSSHeld  int64 `json:"server_rss_held_bytes,omitempty"`
	TCPMemIdle     int64 `json:"tcp_mem_idle_bytes,omitempty"`
	TCPMemHeld     int64 `json:"tcp_mem_held_bytes,omitempty"`
	TCPSocketsHeld int64 `json:"tcp_sockets_held,omitempty"`
	// With a disruption in the window (--recovery: a window of loss;
	// --restart: the server restarted): the QPS before it and during it,
	// and whether QPS came back to 90% of its level before, over 500 ms,
	// and how long after the disruption ended it did (RecoveryNs; 0 and
	// Recovered false when it did not by the window's end). Timeline is
	// the clean requests of each TimelineNs of the window; the
	// disruption began DisruptOnNs and ended DisruptOffNs after the
	// window's start.
	QPSBefore    float64 `json:"qps_before,omitempty"`
	QPSDuring    float64 `json:"qps_during,omitempty"`
	Recovered    bool    `json:"recovered,omitempty"`
	RecoveryNs   int64   `json:"recovery_ns,omitempty"`
	Timeline     []int64 `json:"timeline,omitempty"`
	TimelineNs   int64   `json:"timeline_ns,omitempty"`
	DisruptOnNs  int64   `json:"disrupt_on_ns,omitempty"`
	DisruptOffNs int64   `json:"disrupt_off_ns,omitempty"`
	// Client is the load generator's driver: epoll or net (netio/load).
	Client string `json:"client"`
	// Perf is where the server process's CPU went during the window, from
	// a perf recording of it (--perf), and PerfProfile the pprof profile
	// of the window written from it. PerfError is why the window has no
	// breakdown or no profile (perf died, its recording could not be
	// read, the file could not be written); the run's other figures stand.
	Perf        *perf.Breakdown `json:"perf,omitempty"`
	PerfProfile string          `json:"perf_profile,omitempty"`
	PerfError   string          `json:"perf_error,omitempty"`
}

// Summarize sets p's medians over its Runs and its integrity counts, the
// sums over them, and its CPU breakdown, the runs' merged (Perf,
// PerfError; Flame is left as it is). A point without runs gets zeros
// (and has Err set by whoever could not measure it).
func (p *Point) Summarize() {
	var qps, mbps, srv, cli, p50, p99, p999, mx, retrans []float64
	p.Corrupted, p.Lost, p.ConnErrors, p.NoEcho = 0, 0, 0, 0
	p.Refused, p.Resets, p.LeakedFDs = 0, 0, 0
	p.Perf, p.PerfError = nil, ""
	perfErrs, firstErr := 0, ""
	for i, r := range p.Runs {
		if r.Perf != nil {
			if p.Perf == nil {
				p.Perf = &perf.Breakdown{}
			}
			*p.Perf = perf.Merge(*p.Perf, *r.Perf)
		}
		if r.PerfError != "" {
			if perfErrs == 0 {
				firstErr = fmt.Sprintf("run %d: %s", i+1, r.PerfError)
			}
			perfErrs++
		}
		qps = append(qps, r.QPS)
		mbps = append(mbps, r.MBps)
		srv = append(srv, r.ServerCPUPerReqUs)
		cli = append(cli, r.ClientCPUPerReqUs)
		p50 = append(p50, float64(r.P50Ns))
		p99 = append(p99, float64(r.P99Ns))
		p999 = append(p999, float64(r.P999Ns))
		mx = append(mx, float64(r.MaxNs))
		if r.Requests > 0 {
			retrans = append(retrans, float64(r.Retransmits)*1000/float64(r.Requests))
		}
		p.Corrupted += r.Corrupted
		p.Lost += r.Lost
		p.Refused += r.Refused
		p.Resets += r.Resets
		if r.ServerFDsBefore > 0 {
			p.LeakedFDs += int64(max(0, r.ServerFDsAfter-r.ServerFDsBefore))
		}
		p.ConnErrors += r.ConnErrors
		p.NoEcho += r.NoEcho
	}
	switch {
	case perfErrs == 1:
		p.PerfError = firstErr
	case perfErrs > 1:
		p.PerfError = fmt.Sprintf("%d of %d runs; %s", perfErrs, len(p.Runs), firstErr)
	}
	p.QPS, p.MBps = stats.Median(qps), stats.Median(mbps)
	p.ServerCPUPerReqUs, p.ClientCPUPerReqUs = stats.Median(srv), stats.Median(cli)
	p.P50Ns, p.P99Ns = int64(stats.Median(p50)), int64(stats.Median(p99))
	p.P999Ns, p.MaxNs = int64(stats.Median(p999)), int64(stats.Median(mx))
	p.RetransPer1kReq = 0
	if p.LossSet {
		p.RetransPer1kReq = stats.Median(retrans)
	}
	p.RecoveryNs, p.Recovered = 0, false
	if (p.LossWindowNs > 0 || p.Restart) && len(p.Runs) > 0 {
		rec := make([]float64, 0, len(p.Runs))
		for _, r := range p.Runs {
			if r.Recovered {
				rec = append(rec, float64(r.RecoveryNs))
			} else {
				rec = append(rec, math.Inf(1))
			}
		}
		if m := stats.Median(rec); !math.IsInf(m, 1) {
			p.RecoveryNs, p.Recovered = int64(m), true
		}
	}
}
