package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iopath/iopath/internal/netns"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/filesrv"
	"github.com/iopath/iopath/netio/load"
	"github.com/iopath/iopath/netio/netbench"
	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/report"
)

func init() { subcommands = append(subcommands, newNetCmd) }

// defaultNetAddr is where `net serve` listens and `net load` dials unless
// told otherwise: loopback only.
const defaultNetAddr = "127.0.0.1:7007"

func newNetCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Socket servers on net, epoll and io_uring, a load generator that checks every byte, and their benchmark",
		Long: `net runs echo servers on three engines — net (a goroutine per connection
on Go's netpoller), epoll (an event loop per core on raw epoll) and io_uring
(a completion loop per core, multishot accept and recv with a provided
buffer ring) — a load generator that verifies every echoed byte, and a
benchmark that compares the engines side by side with the server's CPU per
request as the headline figure.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newNetServeCmd(stdout, stderr), newNetLoadCmd(stdout, stderr), newNetBenchCmd(stdout, stderr),
		newNetFileServerCmd(stdout, stderr))
	return cmd
}

// newNetFileServerCmd is the child `net bench --serve-file` starts: one
// file server (package filesrv) on one method, until SIGTERM.
func newNetFileServerCmd(stdout, stderr io.Writer) *cobra.Command {
	var sc filesrv.ServerConfig
	var addr string
	cmd := &cobra.Command{
		Use:    "file-server",
		Short:  "Serve one file one way (the child of net bench --serve-file)",
		Hidden: true,
		Args:   argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ap, err := netio.ParseAddr(addr)
			if err != nil {
				return usagef("net file-server: --addr: %v", err)
			}
			ln, err := net.Listen("tcp", ap.String())
			if err != nil {
				return fmt.Errorf("net file-server: %w", err)
			}
			fmt.Fprintf(stdout, "iopath net file-server: %s of %s listening on %s\n", sc.Method, quotePath(sc.Path), ln.Addr())
			sc.Log = func(msg string) { fmt.Fprintf(stderr, "iopath net file-server: %s\n", msg) }
			if err := filesrv.Serve(cmd.Context(), ln, sc); err != nil {
				return fmt.Errorf("net file-server: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sc.Path, "path", "", "the file to serve")
	f.StringVar(&sc.Method, "method", filesrv.Sendfile, "how: "+strings.Join(filesrv.Methods(), ", "))
	f.IntVar(&sc.Chunk, "chunk", 0, "bytes per read, splice or io_uring buffer (0: default)")
	f.IntVar(&sc.Depth, "depth", 0, "io_uring read→send pairs per submission (0: default)")
	f.StringVar(&addr, "addr", "127.0.0.1:0", "host:port to listen on")
	return cmd
}

// maxNetDrain bounds net serve's --drain: every command stops within a
// second of the first SIGINT or SIGTERM, and main ends one that has not
// stopped stopGrace after the signal; the drain must end before that,
// with time left to close what is still open and print the summary.
const maxNetDrain = defaultStopGrace - 200*time.Millisecond

type netServeOptions struct {
	engine     string
	addr       string
	loops      int
	maxConns   int
	bufSize    int64
	sqpoll     bool
	fixedFiles bool
	sharePort  bool
	drain      time.Duration
}

func newNetServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var o netServeOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run an echo server on one engine until SIGINT or SIGTERM",
		Long: `serve runs an echo server: every byte a client sends comes back to it.
On SIGINT or SIGTERM it stops accepting, echoes what it has received,
half-closes every connection, waits up to --drain for the clients to close,
then closes everything and prints what it served: within a second of the
signal.

When accept fails for want of file descriptors (RLIMIT_NOFILE, "ulimit -n",
reached) or memory, new connections wait in the listen queue, unserved,
while the open ones are served: serve says so on stderr at once and then at
most once a second, counts the failed accepts in its summary, and warns at
the start when the limit allows fewer connections than --max-conns (or than
10,000, if that is less).`,
		Example: `  iopath net serve -e io_uring --addr 127.0.0.1:7007
  iopath net serve -e epoll --loops 2 --max-conns 20000`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNetServe(cmd.Context(), o, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.engine, "engine", "e", "epoll", "server engine: "+strings.Join(netio.Engines(), ", "))
	f.StringVar(&o.addr, "addr", defaultNetAddr, "host:port to listen on (port 0: any free port)")
	f.IntVar(&o.loops, "loops", 0, fmt.Sprintf("event loops for epoll and io_uring, 0 (one per CPU, GOMAXPROCS) to %d", netio.MaxLoops))
	f.IntVar(&o.maxConns, "max-conns", netio.DefaultMaxConns, fmt.Sprintf("most connections served at once, 1 to %d; more are closed at once", netio.MaxMaxConns))
	o.bufSize = netio.DefaultBufSize
	f.Var(sizeValue{&o.bufSize}, "buf-size", "most bytes a connection holds between receiving and echoing them (io_uring: twice that), 1B to "+units.FormatSize(netio.MaxBufSize))
	f.BoolVar(&o.sqpoll, "sqpoll", false, "io_uring: a kernel thread polls each ring's submissions (burns a core while busy)")
	f.BoolVar(&o.fixedFiles, "fixed-files", false, "io_uring: registered (direct) descriptors for connections")
	f.BoolVar(&o.sharePort, "share-port", false, "share --addr's port with other servers started with --share-port (SO_REUSEPORT): the kernel spreads connections over them all. epoll's and io_uring's loops share their port among themselves this way, so such a server of the same user admits a --share-port server beside it")
	f.DurationVar(&o.drain, "drain", 300*time.Millisecond, fmt.Sprintf("on SIGINT/SIGTERM, how long to wait for clients to close before closing them, 0 to %v", maxNetDrain))
	return cmd
}

// lockedWriter serialises writes to w: a server's loops log from their
// own threads.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func runNetServe(ctx context.Context, o netServeOptions, stdout, stderr io.Writer) error {
	if o.drain < 0 || o.drain > maxNetDrain {
		return usagef("net serve: --drain %v: want 0 to %v (the server exits within a second of the signal)", o.drain, maxNetDrain)
	}
	if o.maxConns < 1 || o.maxConns > netio.MaxMaxConns {
		return usagef("net serve: --max-conns %d: want 1 to %d", o.maxConns, netio.MaxMaxConns)
	}
	if !slices.Contains(netio.Engines(), o.engine) {
		return usagef("net serve: unknown engine %q (want one of %s)", o.engine, strings.Join(netio.Engines(), ", "))
	}
	if o.bufSize < 1 || o.bufSize > netio.MaxBufSize {
		return usagef("net serve: --buf-size %s: want 1B to %s", units.FormatSize(o.bufSize), units.FormatSize(netio.MaxBufSize))
	}
	if _, err := netio.ParseAddr(o.addr); err != nil {
		return usagef("net serve: --addr: %v", err)
	}
	if o.loops < 0 || o.loops > netio.MaxLoops {
		return usagef("net serve: --loops %d: want 0 (one per CPU) to %d", o.loops, netio.MaxLoops)
	}
	if o.engine != "io_uring" && (o.sqpoll || o.fixedFiles) {
		return usagef("net serve: --sqpoll and --fixed-files are for -e io_uring")
	}
	if o.engine == "net" && o.loops != 0 {
		return usagef("net serve: --loops is for -e epoll and io_uring (net runs a goroutine per connection on Go's poller)")
	}
	stderr = &lockedWriter{w: stderr}
	srv, err := netio.Listen(o.engine, netio.Config{
		Addr: o.addr, Loops: o.loops, MaxConns: o.maxConns, BufSize: int(o.bufSize),
		SQPoll: o.sqpoll, FixedFiles: o.fixedFiles, SharePort: o.sharePort,
		Log: func(msg string) { fmt.Fprintf(stderr, "iopath net serve: %s\n", msg) },
	})
	if err != nil {
		if errors.Is(err, netio.ErrNotSupported) {
			return fmt.Errorf("net serve: %w (try -e epoll)", err)
		}
		return fmt.Errorf("net serve: %w", err)
	}
	fmt.Fprintf(stdout, "iopath net serve: %s listening on %s (max %d connections, %s per connection); SIGINT or SIGTERM to stop\n",
		o.engine, srv.Addr(), o.maxConns, units.FormatSize(o.bufSize))
	// Besides its connections a server holds stdio, the runtime's poller
	// and, per loop, a listener, an epoll or io_uring instance and an
	// eventfd.
	loops := o.loops
	if loops == 0 {
		loops = runtime.GOMAXPROCS(0)
	}
	slack := uint64(8 + 3*loops)
	// Only a limit below what a load test commonly asks for (up to
	// 10,000 connections) is worth a word before anything fails: the
	// failed accepts are said when they happen anyway.
	if soft, hard, err := sys.Nofile(); err == nil && soft < uint64(min(o.maxConns, 10_000))+slack {
		fmt.Fprintf(stderr, "iopath net serve: RLIMIT_NOFILE is %d (hard limit %d): about %d connections can be open at once, not --max-conns %d; "+
			"more wait in the listen queue, unserved (raise the limit with ulimit -n)\n",
			soft, hard, max(int64(soft)-int64(slack), 0), o.maxConns)
	}
	<-ctx.Done()
	fmt.Fprintf(stderr, "iopath net serve: interrupted; draining %d connections (up to %v)\n", srv.Stats().Active, o.drain)
	dctx, cancel := context.WithTimeout(context.Background(), o.drain)
	defer cancel()
	serr := srv.Shutdown(dctx)
	st := srv.Stats()
	fmt.Fprintf(stderr, "iopath net serve: accepted %d connections, at most %d at once (%d refused, %d reset), %s in, %s out\n",
		st.Accepted, st.Peak, st.Refused, st.Resets, units.RoughSize(st.BytesIn), units.RoughSize(st.BytesOut))
	if st.AcceptErrors > 0 {
		fmt.Fprintf(stderr, "iopath net serve: %d accepts failed for want of file descriptors or memory: connections waited in the listen queue, unserved, meanwhile (see above)\n",
			st.AcceptErrors)
	}
	if errors.Is(serr, context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "iopath net serve: clients still open after %v were closed\n", o.drain)
		return nil
	}
	return serr
}

type netLoadOptions struct {
	addr      string
	conns     int
	size      int64
	duration  time.Duration
	warmup    time.Duration
	mode      string
	rate      float64
	dialRate  int
	serverPID int
	client    string
	format    string
	wide      bool
	json      string
	force     bool
	// windowSync: net bench records the server during the window
	// (netbench.WindowSyncFlag).
	windowSync bool
	// lossy: the network drops packets (net bench --loss; load.Config.Lossy).
	lossy bool
	// timeline: requests per interval into the JSON (load.Config.Timeline).
	timeline time.Duration
	// refusals, reset: load.Config.Refusals and ResetShare ("10%").
	refusals bool
	reset    string
	// source: the local address to connect from (load.Config.Source).
	source string
	// reconnect and its bounds (load.Config).
	reconnect                                    string
	connectTimeout, requestTimeout, reconnectFor time.Duration
}

func newNetLoadCmd(stdout, stderr io.Writer) *cobra.Command {
	var o netLoadOptions
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Drive an echo server with N connections and check every byte that comes back",
		Long: `load opens --conns connections to an echo server (ramping the dial up
within the file-descriptor limit), drives them for --warmup and then
--duration in one mode, and checks every echoed byte against what was sent.
It reports requests per second, latency percentiles, its own CPU and, with
--server-pid, the server's CPU per request. Corrupted or lost bytes, or
failed connections, make it exit with status 1. A connection that has had
no echo by the end of the warm-up (or 1 s from the start, if that is later;
a shorter run is not checked) has failed: the server left it unserved (out
of file descriptors, say), and the figures would come from the others alone. --server-pid must name the
process that listens on --addr: one that does not, or that used no CPU
while the requests went through, is an error.

Modes: pingpong (one message in flight per connection), pipeline:K (K in
flight), stream (write and read continuously). --rate R runs pingpong or
pipeline open loop at R messages per second in all, with latency counted
from when each message was meant to go.`,
		Example: `  iopath net load --conns 1000 --size 64 --duration 10s
  iopath net load --mode pipeline:16 --size 1KiB
  iopath net load --rate 50000 --conns 100 --server-pid $(pidof iopath)`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNetLoad(cmd.Context(), o, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", defaultNetAddr, "the echo server's host:port")
	f.IntVar(&o.conns, "conns", 100, fmt.Sprintf("connections, 1 to %d", load.MaxConns))
	o.size = 64
	f.Var(sizeValue{&o.size}, "size", "message size (64, 1KiB, 16KiB, ...), 1B to "+units.FormatSize(load.MaxSize))
	f.DurationVar(&o.duration, "duration", 5*time.Second, fmt.Sprintf("measured window, above 0 and at most %v", load.MaxDuration))
	f.DurationVar(&o.warmup, "warmup", time.Second, fmt.Sprintf("load before the window, not measured, 0 to %v", load.MaxDuration))
	f.StringVar(&o.mode, "mode", "pingpong", fmt.Sprintf("pingpong, pipeline:K (K from 1 to %d) or stream", load.MaxDepth))
	f.Float64Var(&o.rate, "rate", 0, fmt.Sprintf("open loop: messages per second across all connections, 0 (closed loop) to %g", float64(load.MaxRate)))
	f.IntVar(&o.dialRate, "dial-rate", 0, fmt.Sprintf("connections dialled per second while ramping up, 0 (as fast as the server takes them) to %d", load.MaxDialRate))
	f.IntVar(&o.serverPID, "server-pid", 0, "the process id of the server listening on --addr, to report its CPU per request (the kernel's process CPU clock: every thread); 0: none")
	f.StringVar(&o.client, "client", "auto", "client driver: epoll (closed-loop pingpong and pipeline), net (any mode), or auto")
	f.StringVar(&o.format, "format", "table", "output: "+strings.Join(report.KindFormats, ", "))
	f.BoolVar(&o.wide, "wide", false, "show the less-used columns too (P90, connections carried)")
	f.StringVar(&o.json, "json", "", "also write this run's JSON to this file, whatever --format prints")
	f.BoolVar(&o.force, "force", false, "overwrite the --json file if it exists")
	f.BoolVar(&o.windowSync, strings.TrimPrefix(netbench.WindowSyncFlag, "--"), false,
		"net bench's child: say where the measured window starts and ends on fd 3 and wait for an answer on stdin")
	f.MarkHidden(strings.TrimPrefix(netbench.WindowSyncFlag, "--"))
	f.StringVar(&o.reconnect, "reconnect", load.ReconnectNone, "when a connection fails (reset, closed, or no echo within --request-timeout): none (it has failed), immediate (dial again at once) or backoff (dial again after 10ms, doubling to 1s, with jitter); a reconnected connection sends again what was not echoed, and verifies it")
	f.DurationVar(&o.connectTimeout, "connect-timeout", load.DefaultConnectTimeout, fmt.Sprintf("with --reconnect: bound on each reconnect attempt, up to %v", load.MaxDuration))
	f.DurationVar(&o.requestTimeout, "request-timeout", 0, fmt.Sprintf("a connection whose echo has not come within this long has failed (0: none, up to %v); pingpong and pipeline:K", load.MaxDuration))
	f.DurationVar(&o.reconnectFor, "reconnect-for", load.DefaultReconnectFor, fmt.Sprintf("with --reconnect: how long a connection tries to reconnect before it has failed, up to %v", load.MaxDuration))
	f.StringVar(&o.source, "source", "", "local IP address to connect from (127.0.0.2, ...): each has its own ephemeral ports, so several load generators can hold more connections to one port")
	f.BoolVar(&o.refusals, "refusals", false, "count connections the server closes or resets before any echo (over its --max-conns) as refused, not failed")
	f.StringVar(&o.reset, "reset", "", "share of connections (0% to 100%) that reset themselves (SO_LINGER 0) once, mid-request, in the window; pingpong or pipeline:K")
	f.DurationVar(&o.timeline, "timeline", 0, fmt.Sprintf("also count the requests completed in each interval of this length (%v to the duration) into the JSON's timeline: QPS over time", load.MinTimeline))
	f.BoolVar(&o.lossy, strings.TrimPrefix(netbench.LossyFlag, "--"), false,
		"the network drops packets: wait for TCP's retransmissions (a drain of up to a minute, dials of up to a minute)")
	return cmd
}

func runNetLoad(ctx context.Context, o netLoadOptions, stdout, stderr io.Writer) error {
	if !slices.Contains(report.KindFormats, o.format) {
		return usagef("net load: --format %q: want one of %s", o.format, strings.Join(report.KindFormats, ", "))
	}
	if err := checkJSONFile("net load", o.json, "", o.force); err != nil {
		return err
	}
	mode, err := load.ParseMode(o.mode)
	if err != nil {
		return usagef("net load: --mode: %v", err)
	}
	client := o.client
	if client == "auto" {
		client = ""
	}
	cfg := load.Config{
		Addr: o.addr, Conns: o.conns, Size: int(o.size), Duration: o.duration, Warmup: o.warmup,
		Mode: mode, Rate: o.rate, DialRate: o.dialRate, ServerPID: o.serverPID, Client: client,
		Lossy: o.lossy, Timeline: o.timeline, Refusals: o.refusals, Source: o.source,
		Reconnect: o.reconnect, ConnectTimeout: o.connectTimeout, RequestTimeout: o.requestTimeout, ReconnectFor: o.reconnectFor,
	}
	if o.reset != "" {
		v, err := parsePercent(o.reset, 1)
		if err != nil {
			return usagef("net load: --reset %q: %v", o.reset, err)
		}
		cfg.ResetShare = v
	}
	if err := cfg.Validate(); err != nil {
		return usagef("net load: %v", err)
	}
	if o.format == "table" {
		p := newProgress(stderr)
		if step := p.steps(); step != nil {
			cfg.Progress = func(phase string, done, total int) { step(done, total, phase) }
		}
		defer p.done()
	}
	if o.windowSync {
		cfg.Progress = netbench.WindowSync(cfg.Warmup, cfg.Progress)
	}
	res, err := load.Run(ctx, cfg)
	if err != nil && res == nil {
		if ctx.Err() != nil {
			// Interrupted while dialling.
			return errors.New("net load: interrupted before the load began; nothing measured")
		}
		return fmt.Errorf("net load: %w", err)
	}
	if err != nil && ctx.Err() != nil && res.Elapsed == 0 {
		return errors.New("net load: interrupted before the measured window (in the warm-up); nothing measured")
	}
	l := report.Load{Result: res, Addr: o.addr, ServerPID: o.serverPID}
	if werr := report.WriteLoad(stdout, o.format, l, report.DocOptions{Wide: o.wide}); werr != nil {
		return werr
	}
	if err != nil && ctx.Err() != nil {
		// An interrupted window is shown, not filed.
		return errors.New("net load: interrupted; the figures above cover the window until then")
	}
	if werr := writeOutput(stderr, o.json, o.force, func(w io.Writer) error { return report.WriteLoad(w, "json", l, report.DocOptions{}) }); werr != nil {
		return fmt.Errorf("net load: --json: %w", werr)
	}
	if err != nil {
		return fmt.Errorf("net load: %w", err)
	}
	if ierr := res.Err(); ierr != nil {
		return fmt.Errorf("net load: %w", ierr)
	}
	return nil
}

type netBenchOptions struct {
	engines   []string
	conns     []int
	sizes     []int64
	modes     []string
	duration  time.Duration
	warmup    time.Duration
	runs      int
	format    string
	wide      bool
	html      string
	json      string
	force     bool           // overwrite the --html and --json files, and --perf's
	observe   observeOptions // --perf
	loss      []string       // --loss: shares of packets dropped, "10%"
	rtoMax    time.Duration  // --rto-max
	recovery  time.Duration  // --recovery
	maxConns  int            // --max-conns: the servers' limit
	heartbeat time.Duration  // --heartbeat
	restart   bool           // --restart
	reconnect string         // --reconnect
	reset     string         // --reset: share of connections reset mid-request, "10%"
	// The other two benchmarks.
	serveFile bool
	fileSizes []int64
	writev    bool
	parts     []int
}

func newNetBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	var o netBenchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Compare the server engines side by side: server CPU per request, QPS, P99",
		Long: `bench starts each server engine in a child process of its own, pinned to
one CPU when there are two or more, and runs the load generator in another
child pinned to the other CPUs. It goes over a matrix of connections ×
message sizes × modes, with the engines interleaved run by run, and checks
every echoed byte. The headline figure is the server's CPU time per
request, from the kernel's process CPU clock with every thread included
(io_uring's kernel workers too); QPS and latency sit beside it. An engine that cannot run here
(io_uring disabled, say) is skipped with the reason.

--serve-file measures serving a file from the page cache four ways instead
(read+write through a user buffer, sendfile, splice through a pipe, and
io_uring READ_FIXED then SEND), on 4 KiB, 64 KiB, 1 MiB and 64 MiB files,
each server in a pinned child: GB/s, the server's CPU-s per GB and its
syscalls per MB, every byte checked.

--writev measures sending a response of k parts (k = 1, 2, 4, 8, 16, 64 of
64 B to 1 KiB) four ways: k writes, one coalesced write, net.Buffers
(writev) and io_uring SENDMSG: the sending thread's syscalls and CPU per
response.

--perf DIR records the echo servers with perf (kernel and Go frames): the
server process only, every thread of it, and only during the measured
windows (not the dial ramp, the warm-up or the load generator). Each run's
profile goes to DIR/ENGINE-MODE-SIZE-cCONNS-runN.pb.gz (open it with go
tool pprof -http :8080 FILE), and the table gains where the server's CPU
went: shares of user code, the Go runtime, syscall entry/exit, kernel
copies, page faults, io_uring, the network stack and the rest of the
kernel. A profile that exists is not overwritten without --force. Not with
--serve-file or --writev.

Packet loss: --loss 0,1%,10%,30% runs the whole matrix once per loss level,
each in a network namespace of its own that net bench makes and always
removes (also on Ctrl-C and failure), its loopback dropping that share of
packets with an nftables rule (requests and echoes alike); the servers and
load generators run inside it, so nothing outside is touched. The table
gains retrans/1k, the TCP segments the namespace retransmitted per 1,000
requests, and every echoed byte is still verified. It needs root and the
ip (iproute2) and nft (nftables) commands. With --perf each level's
profiles are named for it (...-c1000-loss10pct-run1.pb.gz). In the
namespaces TCP's retransmission timeout is capped at --rto-max (1s;
120s is the kernel's default), so that a connection is not left waiting
minutes between tries, longer than a run can wait for its bytes.

Overload and resets: --max-conns 500 --conns 1000 gives the servers a
limit of 500 connections and offers them 1000: the servers refuse the
rest (accept and close them), the load generator counts them as refused,
not failed, and the table gains refused, resets, fds Δ (descriptors the
server still held once the run's connections had closed: above 0 is a
leak, and fails the run) and RSS Δ MB. --reset 10% makes a tenth of each
run's connections reset themselves (SO_LINGER 0) once, in the middle of a
request; the others' bytes are verified as ever.

Past one process: a point with more connections than one process may
hold (its hard RLIMIT_NOFILE, less 200) runs each engine as a group of
server processes sharing the port (net serve --share-port: SO_REUSEPORT)
and the load as several generators, each connecting from its own source
address (127.0.0.2, 127.0.0.3, ...: each address has its own ephemeral
ports), their measured windows started together; the server figures are
the group's. --conns 100000 --heartbeat 5s --duration 60s holds 100,000
connections for a minute.

Held connections: --heartbeat 3s --conns 1000,5000,10000,18000 --modes
pingpong holds each point's connections with one message each every 3s
(open loop) and reports what a held connection costs each server: CPU %
(per second of the window), RSS/conn KB (the server's resident memory
beyond what it was before the dial) and TCP KB/conn (the kernel's socket
buffers in its network namespace: add --loss 0 for a namespace of its
own, where no other socket counts).

Recovery: --loss 30% --recovery 5s runs each point with no loss for 3s,
30% loss for 5s, then no loss for 10s (twice the window when that is
longer), and reports the QPS before and during the loss and how long
after it QPS took to come back to 90% of its level before (over 500ms).

Restart: --restart --reconnect backoff stops each run's server 3s into a
13s window and starts it again on its port; the load generators
reconnect as --reconnect says (none, immediate, backoff) and send again
what was not echoed. The table gains the recovery, reconnects, resent
messages, and the connections that failed and requests lost with them
(the restart's cost, not integrity failures).`,
		Example: `  iopath net bench
  iopath net bench --conns 1000 --sizes 64 --modes pingpong --runs 5
  iopath net bench --conns 1000 --sizes 64 --modes pingpong --perf prof
  iopath net bench --conns 1000 --sizes 64 --modes pingpong --loss 0,1%,10%,30% --runs 3
  iopath net bench --conns 1000 --sizes 64 --modes pingpong --loss 30% --recovery 5s --runs 3
  iopath net bench --conns 1000 --sizes 64 --modes pingpong --max-conns 500 --reset 10%
  iopath net bench --conns 1000,5000,10000,18000 --sizes 64 --modes pingpong --heartbeat 3s --loss 0
  iopath net bench --conns 100000 --sizes 64 --modes pingpong --heartbeat 5s --duration 60s --engines epoll,io_uring
  iopath net bench --format json > net.json --html net.html
  iopath net bench --serve-file --runs 5
  iopath net bench --writev`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl := commandLine(cmd, args)
			kindErr := checkNetBenchKind(cmd.Flags(), o.serveFile, o.writev)
			switch {
			case o.serveFile && o.writev:
				return usagef("net bench: --serve-file and --writev are separate benchmarks: pick one")
			case len(o.loss) > 0 && (o.serveFile || o.writev):
				return usagef("net bench: --loss applies to the echo servers; it cannot be used with --serve-file or --writev")
			case cmd.Flags().Changed("rto-max") && len(o.loss) == 0:
				return usagef("net bench: --rto-max applies to the namespaces of --loss: give --loss too")
			case o.rtoMax < netbench.MinRTOMax || o.rtoMax > netbench.MaxRTOMax:
				// 0 would be the library's "the kernel's default".
				return usagef("net bench: --rto-max %v: want %v to %v", o.rtoMax, netbench.MinRTOMax, netbench.MaxRTOMax)
			case o.restart && cmd.Flags().Changed("duration"):
				return usagef("net bench: --restart sets each run's window itself (%v): drop --duration", netbench.RestartDuration)
			case o.recovery != 0 && cmd.Flags().Changed("duration"):
				return usagef("net bench: --recovery sets each run's window itself (%v for --recovery 5s): drop --duration", netbench.RecoveryDuration(5*time.Second))
			case o.observe.perf != "" && (o.serveFile || o.writev):
				return usagef("net bench: --perf records the echo servers only; it cannot be used with --serve-file or --writev")
			case kindErr != nil:
				return kindErr
			case o.serveFile:
				return runNetFileBench(cmd.Context(), o, cmd.Flags().Changed("runs"), cl, stdout, stderr)
			case o.writev:
				return runNetWritevBench(cmd.Context(), o, cmd.Flags().Changed("runs"), cl, stdout, stderr)
			}
			return runNetBench(cmd.Context(), o, cl, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.engines, "engines", nil, "server engines, comma-separated (default: "+strings.Join(netio.Engines(), ",")+")")
	f.Var(intListValue{&o.conns}, "conns", fmt.Sprintf("connection counts, comma-separated, each 1 to %d (default 1,100,1000,10000)", load.MaxConns))
	f.Var(sizeListValue{&o.sizes}, "sizes", "message sizes, comma-separated, each 1B to "+units.FormatSize(load.MaxSize)+" (default 64,1KiB,16KiB)")
	f.StringSliceVar(&o.modes, "modes", nil, "load modes, comma-separated (default pingpong,pipeline:16,stream)")
	f.DurationVar(&o.duration, "duration", netbench.DefaultDuration, fmt.Sprintf("measured window per run, %v to %v", netbench.MinDuration, netbench.MaxDuration))
	f.DurationVar(&o.warmup, "warmup", netbench.DefaultWarmup, fmt.Sprintf("load before each window, not measured, 0 to %v", netbench.MaxDuration))
	f.IntVar(&o.runs, "runs", 1, fmt.Sprintf("runs per engine and point, interleaved, 1 to %d", netbench.MaxRuns))
	f.StringVar(&o.format, "format", "table", "output on stdout: "+strings.Join(report.KindFormats, ", "))
	f.BoolVar(&o.wide, "wide", false, "show the less-used columns too (P50, P99.9, client CPU, MB/s, the integrity counts...)")
	f.StringVar(&o.html, "html", "", "also write a self-contained HTML report with charts to this file")
	f.StringVar(&o.json, "json", "", "also write this run's JSON report to this file, whatever --format prints")
	f.BoolVar(&o.force, "force", false, "overwrite the --html and --json files, and --perf's profiles, if they exist")
	o.observe.addPerfFlag(f, "the echo servers (the server process, during the measured windows)")
	f.StringSliceVar(&o.loss, "loss", nil, "shares of packets dropped, comma-separated (0, 1%, 10%, 30%): the matrix once per level, each in a network namespace of its own (root; ip and nft)")
	f.BoolVar(&o.restart, "restart", false, fmt.Sprintf("restart each run's server in the middle of its window (%v in) and measure how long QPS takes to come back, with --reconnect's strategy; pingpong and pipeline modes", netbench.RestartBefore))
	f.StringVar(&o.reconnect, "reconnect", load.ReconnectNone, "the load generators' answer to a failed connection: none, immediate or backoff (net load --reconnect)")
	f.DurationVar(&o.heartbeat, "heartbeat", 0, fmt.Sprintf("hold the connections with one message each every interval (%v to %v, pingpong, open loop) and report what a held connection costs the server: CPU %%, memory per connection", netbench.MinHeartbeat, netbench.MaxHeartbeat))
	f.IntVar(&o.maxConns, "max-conns", 0, fmt.Sprintf("the servers' connection limit, 1 to %d (0: the most --conns plus 100); a point with more connections is an overload point: the servers refuse the rest", netio.MaxMaxConns))
	f.StringVar(&o.reset, "reset", "", "share of each run's connections (0% to 100%) that reset themselves (SO_LINGER 0) once, mid-request; pingpong and pipeline modes")
	f.DurationVar(&o.recovery, "recovery", 0, fmt.Sprintf("with --loss: drop packets for this long in the middle of each run only (%v to %v), and measure how long QPS takes to come back", netbench.MinRecovery, netbench.MaxRecovery))
	f.DurationVar(&o.rtoMax, "rto-max", netbench.DefaultRTOMax, fmt.Sprintf("with --loss: cap on TCP's retransmission timeout in the namespaces, %v to %v (the kernel's default)", netbench.MinRTOMax, netbench.MaxRTOMax))
	f.BoolVar(&o.serveFile, "serve-file", false, "benchmark serving a file four ways instead (read+write, sendfile, splice, io_uring)")
	f.Var(sizeListValue{&o.fileSizes}, "file-sizes", "with --serve-file: file sizes, comma-separated, each 1B to "+units.FormatSize(maxServeFileSize)+" (default 4KiB,64KiB,1MiB,64MiB)")
	f.BoolVar(&o.writev, "writev", false, "benchmark k-part responses four ways instead (k writes, coalesced, net.Buffers, io_uring SENDMSG)")
	f.Var(intListValue{&o.parts}, "parts", fmt.Sprintf("with --writev: part counts k, comma-separated, each 1 to %d (default 1,2,4,8,16,64)", maxWritevParts))
	return cmd
}

// echoOnly are the net bench flags of the echo servers' benchmark, which
// --serve-file and --writev do not read (--loss and --perf have errors of
// their own).
var echoOnly = []string{"engines", "conns", "sizes", "modes", "warmup", "restart", "reconnect",
	"heartbeat", "max-conns", "reset", "recovery"}

// checkNetBenchKind refuses a flag that the benchmark asked for would
// ignore.
func checkNetBenchKind(fl *pflag.FlagSet, serveFile, writev bool) error {
	if serveFile || writev {
		kind := "--serve-file"
		if writev {
			kind = "--writev"
		}
		for _, name := range echoOnly {
			if fl.Changed(name) {
				return usagef("net bench: --%s applies to the echo servers; it cannot be used with %s", name, kind)
			}
		}
	}
	if fl.Changed("file-sizes") && !serveFile {
		return usagef("net bench: --file-sizes applies to --serve-file only")
	}
	if fl.Changed("parts") && !writev {
		return usagef("net bench: --parts applies to --writev only")
	}
	return nil
}

// Bounds of --file-sizes and --parts.
const (
	maxServeFileSize = 16 << 30
	maxWritevParts   = 1024
)

// checkRunsDuration checks --runs and --duration, which every net bench
// shares; 0 is no default here (the flags show theirs).
func checkRunsDuration(o netBenchOptions) error {
	if o.runs < 1 || o.runs > netbench.MaxRuns {
		return usagef("net bench: --runs %d: want 1 to %d", o.runs, netbench.MaxRuns)
	}
	if o.duration < netbench.MinDuration || o.duration > netbench.MaxDuration {
		return usagef("net bench: --duration %v: want %v to %v", o.duration, netbench.MinDuration, netbench.MaxDuration)
	}
	return nil
}

func checkSideBench(name string, o netBenchOptions) error {
	if !slices.Contains(report.KindFormats, o.format) {
		return usagef("net bench %s: --format %q: want one of %s", name, o.format, strings.Join(report.KindFormats, ", "))
	}
	if o.html != "" {
		if err := checkOutputFile(o.html, o.force); err != nil {
			return usagef("net bench: --html: %v", err)
		}
	}
	if err := checkJSONFile("net bench", o.json, o.html, o.force); err != nil {
		return err
	}
	return checkRunsDuration(o)
}

func runNetFileBench(ctx context.Context, o netBenchOptions, runsSet bool, cmdline string, stdout, stderr io.Writer) error {
	if err := checkSideBench("--serve-file", o); err != nil {
		return err
	}
	for _, s := range o.fileSizes {
		if s < 1 || s > maxServeFileSize {
			return usagef("net bench: --file-sizes %s: want 1B to %s", units.FormatSize(s), units.FormatSize(maxServeFileSize))
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("net bench: cannot find this program to start its children: %w", err)
	}
	fo := netbench.FileServeOptions{
		Sizes: o.fileSizes, Duration: o.duration, Dir: defaultTempDir(),
		Command: func(args ...string) *exec.Cmd { return exec.Command(exe, args...) },
		Log: func(format string, args ...any) {
			fmt.Fprintf(stderr, "iopath: net bench --serve-file: "+format+"\n", args...)
		},
	}
	if runsSet {
		fo.Rounds = o.runs
	}
	p := newProgress(stderr)
	fo.Progress = p.steps()
	rep, berr := netbench.FileServe(ctx, fo)
	p.done()
	if berr != nil && ctx.Err() != nil {
		// The runs so far are not a result: some sizes and methods
		// would be missing from every comparison.
		return errors.New("net bench --serve-file: interrupted; nothing written")
	}
	if rep == nil || (len(rep.Results) == 0 && berr != nil) {
		return fmt.Errorf("net bench --serve-file: %w", berr)
	}
	rep.Command, rep.Machine.IopathVersion = cmdline, version
	if err := report.WriteFileServe(stdout, o.format, rep, report.DocOptions{Wide: o.wide}); err != nil {
		return err
	}
	if o.html != "" {
		page := report.NetFilePage{Command: cmdline, Machine: rep.Machine, FileServe: rep}
		if err := writeFileAtomic(o.html, o.force, func(w io.Writer) error { return report.NetFileHTML(w, page) }); err != nil {
			return fmt.Errorf("net bench: --html: %w", err)
		}
		fmt.Fprintf(stderr, "iopath: wrote %s\n", o.html)
	}
	if err := writeOutput(stderr, o.json, o.force, func(w io.Writer) error { return report.FileServeJSON(w, rep) }); err != nil {
		return fmt.Errorf("net bench: --json: %w", err)
	}
	if berr != nil {
		return fmt.Errorf("net bench --serve-file: %w", berr)
	}
	for _, r := range rep.Results {
		if r.Err == "" && !r.Verified {
			return fmt.Errorf("net bench --serve-file: %s at %s: responses did not verify", r.Method, units.FormatSize(r.FileSize))
		}
	}
	return nil
}

func runNetWritevBench(ctx context.Context, o netBenchOptions, runsSet bool, cmdline string, stdout, stderr io.Writer) error {
	if err := checkSideBench("--writev", o); err != nil {
		return err
	}
	for _, k := range o.parts {
		if k < 1 || k > maxWritevParts {
			return usagef("net bench: --parts %d: want 1 to %d", k, maxWritevParts)
		}
	}
	wo := netbench.WritevOptions{Parts: o.parts}
	if runsSet {
		wo.Rounds = o.runs
	}
	rep, werr := netbench.Writev(ctx, wo)
	if werr != nil && ctx.Err() != nil {
		return errors.New("net bench --writev: interrupted; nothing written")
	}
	if rep == nil || (len(rep.Results) == 0 && werr != nil) {
		return fmt.Errorf("net bench --writev: %w", werr)
	}
	rep.Command, rep.Machine.IopathVersion = cmdline, version
	if err := report.WriteWritev(stdout, o.format, rep, report.DocOptions{Wide: o.wide}); err != nil {
		return err
	}
	if o.html != "" {
		page := report.NetFilePage{Command: cmdline, Machine: rep.Machine, Writev: rep}
		if err := writeFileAtomic(o.html, o.force, func(w io.Writer) error { return report.NetFileHTML(w, page) }); err != nil {
			return fmt.Errorf("net bench: --html: %w", err)
		}
		fmt.Fprintf(stderr, "iopath: wrote %s\n", o.html)
	}
	if err := writeOutput(stderr, o.json, o.force, func(w io.Writer) error { return report.WritevJSON(w, rep) }); err != nil {
		return fmt.Errorf("net bench: --json: %w", err)
	}
	if werr != nil {
		return fmt.Errorf("net bench --writev: %w", werr)
	}
	return nil
}

func runNetBench(ctx context.Context, o netBenchOptions, cmdline string, stdout, stderr io.Writer) error {
	if !slices.Contains(report.KindFormats, o.format) {
		return usagef("net bench: --format %q: want one of %s", o.format, strings.Join(report.KindFormats, ", "))
	}
	if o.html != "" {
		if err := checkOutputFile(o.html, o.force); err != nil {
			return usagef("net bench: --html: %v", err)
		}
	}
	if err := checkJSONFile("net bench", o.json, o.html, o.force); err != nil {
		return err
	}
	if err := checkRunsDuration(o); err != nil {
		return err
	}
	if o.warmup < 0 || o.warmup > netbench.MaxDuration {
		return usagef("net bench: --warmup %v: want 0 to %v", o.warmup, netbench.MaxDuration)
	}
	if err := o.observe.checkDirs("net bench"); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("net bench: cannot find this program to start its children: %w", err)
	}
	opts := netbench.Options{
		Engines: o.engines, Conns: o.conns, Modes: o.modes,
		Duration: o.duration, Warmup: o.warmup, Runs: o.runs,
		Command: func(args ...string) *exec.Cmd { return exec.Command(exe, args...) },
		Log:     func(format string, args ...any) { fmt.Fprintf(stderr, "iopath: "+format+"\n", args...) },

		PerfDir: o.observe.perf, PerfReplace: o.force, PerfFreq: o.observe.perfFreq,
		TrackTemp: cleanups.removeOnExit, TrackTempDir: cleanups.removeTreeOnExit,
		TrackNS: cleanups.removeNetnsOnExit,
	}
	for _, l := range o.loss {
		v, err := parseLoss(l)
		if err != nil {
			return usagef("net bench: --loss %q: %v", l, err)
		}
		opts.Loss = append(opts.Loss, v)
	}
	if len(opts.Loss) > 0 {
		opts.RTOMax = o.rtoMax
	}
	opts.Recovery = o.recovery
	opts.MaxConns = o.maxConns
	opts.Heartbeat = o.heartbeat
	opts.Restart = o.restart
	if o.reconnect != load.ReconnectNone {
		opts.Reconnect = o.reconnect
	}
	if o.reset != "" {
		v, err := parsePercent(o.reset, 1)
		if err != nil {
			return usagef("net bench: --reset %q: %v", o.reset, err)
		}
		opts.ResetShare = v
	}
	for _, s := range o.sizes {
		opts.Sizes = append(opts.Sizes, int(s))
	}
	if err := opts.Validate(); err != nil {
		return usagef("net bench: %v", err)
	}
	// The profiles' names are known now: none may be overwritten without
	// --force, and that is said before anything runs.
	for _, p := range opts.PerfFiles() {
		if _, err := os.Lstat(p); err == nil {
			if err := checkOutputFile(p, o.force); err != nil {
				return usagef("net bench: --perf: %v", err)
			}
		}
	}
	o.observe.probePerf(stderr)
	opts.PerfDir = o.observe.perf
	p := newProgress(stderr)
	opts.Progress = p.steps()
	rep, err := netbench.Bench(ctx, opts)
	p.done()
	if n := o.observe.perfNote(); n != "" && rep != nil {
		rep.Notes = append(rep.Notes, n)
	}
	if err != nil && ctx.Err() != nil {
		if rep == nil || !slices.ContainsFunc(rep.Points, func(p netresult.Point) bool { return len(p.Runs) > 0 }) {
			return errors.New("net bench: interrupted; nothing measured")
		}
		// What was measured is shown, on stdout only: an interrupted
		// run does not replace an --html file.
		rep.Command, rep.Version, rep.Machine.IopathVersion = cmdline, version, version
		if werr := report.WriteNet(stdout, o.format, rep, report.DocOptions{Wide: o.wide}); werr != nil {
			return werr
		}
		var unwritten []string
		for _, p := range []string{o.html, o.json} {
			if p != "" {
				unwritten = append(unwritten, quotePath(p))
			}
		}
		switch len(unwritten) {
		case 1:
			return fmt.Errorf("net bench: interrupted; the results above are incomplete, and %s is not written", unwritten[0])
		case 2:
			return fmt.Errorf("net bench: interrupted; the results above are incomplete, and %s are not written", strings.Join(unwritten, " and "))
		}
		return errors.New("net bench: interrupted; the results above are incomplete")
	}
	if rep == nil {
		return fmt.Errorf("net bench: %w", err)
	}
	rep.Command = cmdline
	rep.Version = version
	rep.Machine.IopathVersion = version
	if werr := report.WriteNet(stdout, o.format, rep, report.DocOptions{Wide: o.wide}); werr != nil {
		return werr
	}
	if o.html != "" {
		if herr := writeFileAtomic(o.html, o.force, func(w io.Writer) error { return report.NetHTML(w, rep) }); herr != nil {
			return fmt.Errorf("net bench: --html: %w", herr)
		}
		fmt.Fprintf(stderr, "iopath: wrote %s\n", o.html)
	}
	if jerr := writeOutput(stderr, o.json, o.force, func(w io.Writer) error { return report.NetJSON(w, rep) }); jerr != nil {
		return fmt.Errorf("net bench: --json: %w", jerr)
	}
	if err != nil {
		return fmt.Errorf("net bench: %w", err)
	}
	if bad := integrityFailures(rep); bad != "" {
		return fmt.Errorf("net bench: %s", bad)
	}
	if bad := perfFailures(rep); bad != "" {
		return fmt.Errorf("net bench: --perf: %s", bad)
	}
	return nil
}

// perfFailures says how many runs were measured but not recorded with
// perf, and the first one's reason: a profile asked for is missing.
func perfFailures(r *netresult.Report) string {
	n, first := 0, ""
	for _, p := range r.Points {
		for i, run := range p.Runs {
			if run.PerfError == "" {
				continue
			}
			if n == 0 {
				first = fmt.Sprintf("%s at %d conns × %d B %s, run %d: %s", p.Engine, p.Conns, p.Size, p.Mode, i+1, run.PerfError)
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d runs not recorded (first: %s)", n, first)
}

// integrityFailures names the points where bytes were corrupted or lost,
// connections failed, or no run could be measured.
func integrityFailures(r *netresult.Report) string {
	var bad, failed []string
	for _, p := range r.Points {
		at := fmt.Sprintf("%s at %d conns × %d B %s", p.Engine, p.Conns, p.Size, p.Mode)
		switch {
		case p.Corrupted != 0 || p.LeakedFDs != 0 || !p.Restart && (p.Lost != 0 || p.ConnErrors != 0):
			msg := fmt.Sprintf("%s: %d corrupted, %d lost bytes, %d failed connections", at, p.Corrupted, p.Lost, p.ConnErrors)
			if p.LeakedFDs > 0 {
				msg += fmt.Sprintf(", %d descriptors leaked by the server", p.LeakedFDs)
			}
			if p.NoEcho > 0 {
				msg += fmt.Sprintf(" (%d left unserved: no echo within the warm-up)", p.NoEcho)
			}
			bad = append(bad, msg)
		case p.Err != "":
			failed = append(failed, at+": "+p.Err)
		}
	}
	var msg []string
	if len(bad) > 0 {
		msg = append(msg, "integrity check failed: "+strings.Join(bad, "; "))
	}
	if len(failed) > 0 {
		msg = append(msg, fmt.Sprintf("%d points not measured (first: %s)", len(failed), failed[0]))
	}
	return strings.Join(msg, "; ")
}

// parseLoss reads a share of packets: "10%" (or "0"), returned as 0.1.
func parseLoss(s string) (float64, error) { return parsePercent(s, netns.MaxLoss) }

// parsePercent reads a share as a percentage, "10%" (or "0"), returned
// as 0.1, from 0 to max.
func parsePercent(s string, max float64) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	num, ok := strings.CutSuffix(t, "%")
	if !ok {
		return 0, errors.New("want a percentage, as 10%")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 100*max {
		return 0, fmt.Errorf("want 0%% to %v%%", 100*max)
	}
	return v / 100, nil
}
