package netbench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/netns"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/load"
	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/perf"
)

// Options say what to run. The zero value of a field takes the default,
// but for Warmup, where 0 is none.
type Options struct {
	Engines  []string      // server engines (default: netio.Engines())
	Conns    []int         // default 1, 100, 1000, 10000
	Sizes    []int         // message sizes in bytes; default 64, 1024, 16384
	Modes    []string      // load modes; default pingpong, pipeline:16, stream
	Duration time.Duration // measured window per run; default 1 s
	Warmup   time.Duration // load before each window, unmeasured; 0 is none (the CLI's default is DefaultWarmup)
	Runs     int           // runs per engine and point, interleaved; default 1

	// Command builds the command line of a child: the iopath binary with
	// args (the CLI passes os.Executable). Required.
	Command func(args ...string) *exec.Cmd
	// Progress, when set, is told of each run as it starts.
	Progress func(done, total int, what string)
	// Log, when set, receives one line per notable event (an engine
	// skipped, a server restarted).
	Log func(format string, args ...any)

	// PerfDir, when set, records each server child with perf (kernel and
	// Go frames; perf.Probe must allow it) during the measured windows
	// only: a pprof profile per run, written into PerfDir (made when
	// missing) under the name PerfFiles lists, a breakdown of the
	// server's CPU per run and per point, and a call tree per point
	// (netresult.Run.Perf, Point.Perf, Point.Flame). Bench refuses to
	// start when one of the files exists, unless PerfReplace is set. The
	// load generator's CPU is not recorded.
	PerfDir     string
	PerfReplace bool
	// PerfFreq is perf's sampling frequency, Hz; 0 is perf.DefaultFreq.
	PerfFreq int
	// Loss, when set, runs the whole matrix once per share of packets
	// dropped (0 to netns.MaxLoss), each level in a network namespace of
	// its own that Bench makes and always removes, with that loss on its
	// loopback (package internal/netns: root, ip and nft are needed):
	// the servers and load generators run inside it, and each run counts
	// the namespace's TCP retransmissions. TrackNS, when set, is told each
	// namespace as it is made and returns the function that forgets it:
	// a caller that can be stopped at once removes what is still tracked.
	Loss    []float64
	TrackNS func(name string) (forget func())
	// RTOMax, with Loss, caps TCP's retransmission timeout in each
	// namespace (net.ipv4.tcp_rto_max_ms, Linux 6.15 and later), from
	// 1 s to 120 s (the kernel's default); 0 leaves the kernel's. Under
	// heavy loss the default backoff leaves a few connections in 1,000
	// waiting minutes between tries, longer than a run can wait to
	// verify their bytes.
	RTOMax time.Duration
	// Recovery, with Loss, makes each run a recovery measurement: no
	// packet dropped for a few seconds, each level's share dropped for
	// Recovery (MinRecovery to MaxRecovery), then none again; each run
	// reports the QPS before and during the loss and how long QPS took
	// to come back to 90% of its level before (RecoveryDuration is the
	// window; Duration is not used). Every level must be above 0.
	Recovery time.Duration
	// MaxConns is the servers' connection limit (net serve --max-conns;
	// 0: the most connections of the matrix plus 100). A point with more
	// connections than it is an overload point: the servers refuse the
	// rest (accept and close them), the load generator counts them as
	// refused, and the servers' descriptors and memory are read before
	// and after each run.
	MaxConns int
	// ResetShare, 0 to 1, is the share of each run's connections that
	// reset themselves mid-request (load.Config.ResetShare); the servers'
	// descriptors and memory are read before and after each run.
	ResetShare float64
	// Heartbeat, when above 0, holds each point's connections with a
	// heartbeat: pingpong open loop, one 64-byte (Sizes) message per
	// connection every Heartbeat (MinHeartbeat to MaxHeartbeat), and
	// reads what the held connections cost the server: its resident
	// memory and the kernel's TCP memory beyond what they were before
	// the dial, and its CPU per second.
	Heartbeat time.Duration
	// Restart, with Reconnect, restarts each run's server in the middle of
	// its window (restart.go) and measures how fast QPS comes back with
	// the load generator's reconnect strategy (load.Config.Reconnect:
	// none, immediate or backoff). Pingpong or pipeline modes; not with
	// --loss, --perf, --heartbeat, --reset or --max-conns. Its window is
	// RestartDuration: Validate sets Duration to it.
	Restart   bool
	Reconnect string
	// perProcess, when set (tests), is the most connections one process
	// holds (processConns); sources counts the source addresses group
	// runs have taken (scale.go).
	perProcess int
	sources    int
	// serverCPUs are the CPUs the servers are pinned to.
	serverCPUs []int
	// perfTag tells the profiles of one --loss level from another's
	// (lossTag).
	perfTag string
	// ns is the namespace this matrix runs in (one level of Loss),
	// level that level's loss, recovery the Recovery it runs with.
	ns       *netns.NS
	level    float64
	recovery time.Duration
	// TrackTemp, when set, is told each temporary file Bench makes (a
	// profile being written, renamed into place when whole) and returns
	// the function that forgets it again; TrackTempDir the same for a
	// temporary directory (a perf recording's). A caller that can be
	// stopped at once removes what is still tracked then.
	TrackTemp    func(path string) (forget func())
	TrackTempDir func(dir string) (forget func())
}

// Defaults for Options.
var (
	DefaultConns = []int{1, 100, 1000, 10000}
	DefaultSizes = []int{64, 1024, 16 << 10}
	DefaultModes = []string{"pingpong", "pipeline:16", "stream"}
)

const (
	DefaultDuration = time.Second
	DefaultWarmup   = 300 * time.Millisecond
	// Bounds of Options.Duration (and of Warmup, from 0), and of Runs.
	MinDuration = 10 * time.Millisecond
	MaxDuration = time.Hour
	MaxRuns     = 100
)

// Validate fills defaults and checks every field, with one error per bad
// value that says what is wanted.
// once refuses a list that holds a value twice.
func once[T comparable](what string, list []T) error {
	for i, v := range list {
		if slices.Contains(list[:i], v) {
			return fmt.Errorf("%s %v given twice", what, v)
		}
	}
	return nil
}

func (o *Options) Validate() error {
	if len(o.Engines) == 0 {
		o.Engines = netio.Engines()
	}
	for _, e := range o.Engines {
		if !slices.Contains(netio.Engines(), e) {
			return fmt.Errorf("unknown server engine %q (have %s)", e, strings.Join(netio.Engines(), ", "))
		}
	}
	if len(o.Conns) == 0 {
		o.Conns = slices.Clone(DefaultConns)
	}
	for _, c := range o.Conns {
		if c < 1 || c > load.MaxConns {
			return fmt.Errorf("conns %d: want 1 to %d", c, load.MaxConns)
		}
	}
	if len(o.Sizes) == 0 {
		o.Sizes = slices.Clone(DefaultSizes)
	}
	for _, s := range o.Sizes {
		if s < 1 || s > load.MaxSize {
			return fmt.Errorf("size %d: want 1 byte to 64 MiB", s)
		}
	}
	if len(o.Modes) == 0 {
		o.Modes = slices.Clone(DefaultModes)
	}
	for i, m := range o.Modes {
		pm, err := load.ParseMode(m)
		if err != nil {
			return err
		}
		o.Modes[i] = pm.String()
	}
	// A value given twice would measure its points twice, shown as rows
	// that look like two points.
	if err := once("engine", o.Engines); err != nil {
		return err
	}
	if err := once("conns", o.Conns); err != nil {
		return err
	}
	if err := once("size", o.Sizes); err != nil {
		return err
	}
	if err := once("mode", o.Modes); err != nil {
		return err
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Restart {
		o.Duration = RestartDuration // what the report says each window was
	}
	if o.Duration < MinDuration || o.Duration > MaxDuration {
		return fmt.Errorf("duration %v: want %v to %v", o.Duration, MinDuration, MaxDuration)
	}
	if o.Warmup < 0 || o.Warmup > MaxDuration {
		return fmt.Errorf("warmup %v: want 0 to %v", o.Warmup, MaxDuration)
	}
	if o.Runs == 0 {
		o.Runs = 1
	}
	if o.Runs < 1 || o.Runs > MaxRuns {
		return fmt.Errorf("runs %d: want 1 to %d", o.Runs, MaxRuns)
	}
	if o.Command == nil {
		return errors.New("netbench: no Command to start children with")
	}
	for i, l := range o.Loss {
		if l < 0 || l > netns.MaxLoss || math.IsNaN(l) {
			return fmt.Errorf("loss %v%%: want 0%% to %v%%", 100*l, 100*netns.MaxLoss)
		}
		if slices.Contains(o.Loss[:i], l) {
			return fmt.Errorf("loss %v%% given twice", 100*l)
		}
	}
	if o.RTOMax != 0 && (o.RTOMax < MinRTOMax || o.RTOMax > MaxRTOMax) {
		return fmt.Errorf("rto-max %v: want %v to %v", o.RTOMax, MinRTOMax, MaxRTOMax)
	}
	if o.MaxConns < 0 || o.MaxConns > netio.MaxMaxConns {
		return fmt.Errorf("max conns %d: want 1 to %d (0: the most connections of the matrix plus 100)", o.MaxConns, netio.MaxMaxConns)
	}
	if math.IsNaN(o.ResetShare) || o.ResetShare < 0 || o.ResetShare > 1 {
		return fmt.Errorf("reset share %v: want 0 to 1", o.ResetShare)
	}
	if o.ResetShare > 0 {
		for _, m := range o.Modes {
			if md, _ := load.ParseMode(m); md.Kind == load.Stream {
				return fmt.Errorf("--reset: connections reset mid-request in pingpong or pipeline:K, not in %s mode", m)
			}
		}
	}
	if _, hard, err := nofile(); err == nil && hard < minNofile {
		return fmt.Errorf("the open-file limit is %d (ulimit -Hn): net bench needs at least %d, %d for each process's own files and the rest for connections", hard, minNofile, load.FdSlack)
	}
	if per := o.perProcessConns(); slices.Max(o.Conns) > per {
		switch {
		case o.PerfDir != "" || o.Recovery != 0 || o.ResetShare != 0 || o.MaxConns != 0:
			return fmt.Errorf("conns %d: past %d connections (one process's RLIMIT_NOFILE) the servers and load generators run as groups of processes, "+
				"which --perf, --recovery, --reset and --max-conns do not support", slices.Max(o.Conns), per)
		case slices.Max(o.Conns) > maxGroup*per*3/4:
			return fmt.Errorf("conns %d: at most %d (%d processes of %d connections)", slices.Max(o.Conns), maxGroup*per*3/4, maxGroup, per*3/4)
		}
	}
	if o.Reconnect != "" && o.Reconnect != load.ReconnectNone && o.Reconnect != load.ReconnectImmediate && o.Reconnect != load.ReconnectBackoff {
		return fmt.Errorf("reconnect %q: want none, immediate or backoff", o.Reconnect)
	}
	if o.Restart {
		switch {
		case len(o.Loss) > 0 || o.PerfDir != "" || o.Heartbeat != 0 || o.ResetShare != 0 || o.MaxConns != 0 || o.Recovery != 0:
			return errors.New("--restart measures a server restart alone: not with --loss, --perf, --heartbeat, --reset or --max-conns")
		case slices.ContainsFunc(o.Modes, func(m string) bool { md, _ := load.ParseMode(m); return md.Kind == load.Stream }):
			return errors.New("--restart: reconnected connections send again what was not echoed, in pingpong or pipeline:K, not in stream mode")
		}
	}
	if o.Heartbeat != 0 {
		switch {
		case o.Heartbeat < MinHeartbeat || o.Heartbeat > MaxHeartbeat:
			return fmt.Errorf("heartbeat %v: want %v to %v", o.Heartbeat, MinHeartbeat, MaxHeartbeat)
		case slices.ContainsFunc(o.Modes, func(m string) bool { return m != "pingpong" }):
			return errors.New("--heartbeat holds connections with one message each every interval: pingpong mode only (--modes pingpong)")
		case o.Recovery != 0 || o.ResetShare != 0 || o.PerfDir != "":
			return errors.New("--heartbeat measures held connections alone: not with --recovery, --reset or --perf")
		}
	}
	if o.Recovery != 0 {
		switch {
		case len(o.Loss) == 0:
			return errors.New("--recovery measures a window of --loss: give --loss too")
		case o.Recovery < MinRecovery || o.Recovery > MaxRecovery:
			return fmt.Errorf("recovery %v: want %v to %v", o.Recovery, MinRecovery, MaxRecovery)
		case slices.Contains(o.Loss, 0):
			return errors.New("--recovery: a loss level of 0% has nothing to recover from: give levels above 0")
		}
	}
	if o.RTOMax != 0 && len(o.Loss) == 0 {
		return errors.New("--rto-max applies to the namespaces of --loss: give --loss too")
	}
	if o.Recovery != 0 && o.PerfDir != "" {
		return errors.New("--perf and --recovery cannot be used together: both use the load generator's window")
	}
	return nil
}

// Pinning splits the CPUs this process may use: the last one for the
// server, the others for the load generator. With one CPU nothing is
// pinned and the note says so.
func Pinning() (server, client []int, note string) {
	cpus, err := sys.Affinity()
	if err != nil {
		return nil, nil, fmt.Sprintf("not pinned: sched_getaffinity: %v", err)
	}
	if len(cpus) < 2 {
		return nil, nil, fmt.Sprintf("not pinned: only %d CPU available, so the server and the load generator share it", len(cpus))
	}
	return cpus[len(cpus)-1:], cpus[:len(cpus)-1], ""
}

// server is one running server child.
type server struct {
	engine string
	cmd    *exec.Cmd
	addr   string
	pid    int
	exited chan struct{}
	// waitErr is how the child ended, once exited is closed.
	waitErr error
	stderr  *tailBuffer
	// perf is the child's perf recording (Options.PerfDir), else nil.
	perf *recording
	// maxConns is its connection limit (--max-conns; 0: not an echo
	// server), per process of its group.
	maxConns int
	// peers are the other processes of its group, sharing its port
	// (points past one process's connections: scale.go).
	peers []*server
	// runs counts the runs made against it (with Heartbeat each run has
	// a fresh server).
	runs int
}

// over says conns connections overload the server: it refuses some. (A
// group has room for its points: Validate.)
func (s *server) over(conns int) bool {
	return s.maxConns > 0 && len(s.peers) == 0 && conns > s.maxConns
}

var listeningRE = regexp.MustCompile(`listening on (\S+)`)

// serverLoops is the event loops of a server pinned to cpus: one per CPU
// (with none, one per CPU of the machine).
func serverLoops(cpus []int) int {
	if len(cpus) == 0 {
		return runtime.NumCPU()
	}
	return len(cpus)
}

// serverEnv is the environment of a server child with loops event loops.
// The loop engines (epoll, io_uring) get one P more than they have loops:
// a loop waits for events in a system call on its locked thread, and
// with no idle P the Go runtime's sysmon takes the waiting loop's P away
// at its next 20 µs tick and is woken again when the loop returns, two
// context switches for every wait. At one connection ping-pong, where a
// server waits once per request, that was a fifth to a third of either
// engine's CPU per request, and it varied with when sysmon happened to
// look (AMD EPYC, docs/net.md). The spare P costs nothing: the child is pinned to its
// CPUs all the same. The net engine waits in the netpoller, without a P,
// and gets one P per loop.
func serverEnv(engine string, loops int) []string {
	return append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(serverProcs(engine, loops)))
}

// serverProcs is the GOMAXPROCS of engine's server with loops event
// loops (see serverEnv).
func serverProcs(engine string, loops int) int {
	if engine == "net" {
		return loops
	}
	return loops + 1
}

// loopsArgs is net serve's --loops for engine: none for net, whose
// goroutines are not loops (GOMAXPROCS bounds it, serverEnv).
func loopsArgs(engine string, loops int) []string {
	if engine == "net" {
		return nil
	}
	return []string{"--loops", strconv.Itoa(loops)}
}

// startServer starts engine in a child pinned to cpus and waits for its
// "listening on ADDR" line.
func startServer(ctx context.Context, o *Options, engine string, cpus []int, maxConns int) (*server, error) {
	loops := serverLoops(cpus)
	// Past one process's descriptors, a group of processes shares the
	// port (scale.go).
	n := 1
	args := append([]string{"net", "serve", "-e", engine, "--addr", "127.0.0.1:0"}, loopsArgs(engine, loops)...)
	if per := o.perProcessConns(); maxConns > per {
		n = serverGroup(maxConns, per)
		maxConns = per
		args = append(args, "--share-port")
	}
	cmd := o.Command(append(args, "--max-conns", strconv.Itoa(maxConns))...)
	cmd.Env = serverEnv(engine, loops)
	s, err := launch(ctx, cmd, engine, engine+" server", cpus)
	if err != nil {
		return nil, err
	}
	s.maxConns = maxConns
	if err := startPeers(ctx, o, s, n, cpus, maxConns); err != nil {
		s.stop(ctx)
		return nil, err
	}
	return s, nil
}

// launch starts cmd, a server child (what, in errors), pinned to cpus,
// and waits for its "listening on ADDR" line.
func launch(ctx context.Context, cmd *exec.Cmd, engine, what string, cpus []int) (*server, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &server{engine: engine, cmd: cmd, exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = s.stderr
	if err := startPinned(cmd, cpus); err != nil {
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	s.pid = cmd.Process.Pid
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case lines <- m[1]:
				default:
				}
			}
		}
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.addr = <-lines:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("%s exited at start: %s", what, s.stderr.last())
	case <-time.After(10 * time.Second):
		s.stop(ctx)
		return nil, fmt.Errorf("%s did not start listening in 10 s: %s", what, s.stderr.last())
	case <-ctx.Done():
		s.stop(ctx)
		return nil, ctx.Err()
	}
}

// stop asks the server to drain (SIGTERM) and kills it if it takes more
// than a few seconds; when ctx has ended (the bench is interrupted) it
// kills it at once: there is nothing left to measure, and the bench must
// be gone within a second.
func (s *server) stop(ctx context.Context) {
	for _, p := range s.peers {
		p.stop(ctx)
	}
	if ctx.Err() != nil {
		s.cmd.Process.Kill()
		<-s.exited
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *server) alive() bool {
	for _, p := range s.peers {
		if !p.alive() {
			return false
		}
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// startPinned starts cmd with the CPU affinity cpus (none: unchanged).
// The child inherits the mask of the thread that forks it, so the fork
// happens on a locked thread that holds the mask for that moment; every
// thread of the child is then pinned again, in case one was made first.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	// A child must not outlive the bench: if this process dies without
	// running its defers (SIGKILL, a crash), the kernel kills the child.
	// Pdeathsig follows the thread that forks, and Go never ends a thread
	// that was only locked and unlocked.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	err := onCPUs(cpus, cmd.Start)
	if err == nil && len(cpus) > 0 {
		sys.SetProcessAffinity(cmd.Process.Pid, cpus)
	}
	return err
}

// onCPUs runs start, which forks a child, on a thread pinned to cpus for
// that moment, so that the child starts with that mask (none: as it is).
func onCPUs(cpus []int, start func() error) error {
	if len(cpus) == 0 {
		return start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := sys.Affinity()
	if err == nil {
		err = sys.SetAffinity(cpus)
	}
	if err != nil {
		return start()
	}
	defer sys.SetAffinity(old)
	return start()
}

// tailBuffer keeps the last max bytes written to it (a child's stderr).
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// last is the last non-empty line written.
func (t *tailBuffer) last() string {
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	if s := strings.TrimSpace(lines[len(lines)-1]); s != "" {
		return s
	}
	return "it printed nothing"
}

// Bench runs the whole matrix and returns the report. A failed run is
// recorded in its point (Err) and the bench goes on; Bench fails only on
// bad options (PerfDir's included: perf cannot record here, a profile
// exists), or when ctx ends (with the report so far; no profile is
// written then, and no perf process or recording is left).
func Bench(ctx context.Context, o Options) (*netresult.Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(o.Loss) > 0 {
		return benchLoss(ctx, o)
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var perfNote string
	if o.PerfDir != "" {
		var err error
		if perfNote, err = o.preparePerf(); err != nil {
			return nil, err
		}
	}
	srvCPUs, cliCPUs, note := Pinning()
	o.serverCPUs = srvCPUs
	procs := make(map[string]int, len(o.Engines))
	for _, e := range o.Engines {
		procs[e] = serverProcs(e, serverLoops(srvCPUs)) // as startServer will start it
	}
	rep := &netresult.Report{
		SchemaVersion: netresult.EchoSchemaVersion,
		Tool:          netresult.EchoTool,
		Started:       time.Now().UTC(),
		Machine:       features.DescribeMachine("", ""),
		Config: netresult.Config{
			Engines: o.Engines, Conns: o.Conns, Sizes: o.Sizes, Modes: o.Modes,
			DurationNs: int64(o.Duration), WarmupNs: int64(o.Warmup), Runs: o.Runs,
			ServerCPUs: srvCPUs, ClientCPUs: cliCPUs, PinNote: note, ServerProcs: procs, Addr: "127.0.0.1",
			PerfDir: o.PerfDir, MaxConns: o.MaxConns, ResetShare: o.ResetShare, HeartbeatNs: int64(o.Heartbeat),
			Reconnect: o.Reconnect, Restart: o.Restart,
		},
	}
	if o.MaxConns > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("--max-conns %d: the servers served at most %d connections at once and refused (accepted and closed) the rest; "+
			"the load generator counted those as refused, not failed", o.MaxConns, o.MaxConns))
	}
	if per := o.perProcessConns(); slices.Max(o.Conns) > per {
		var parts []string
		for _, c := range o.Conns {
			if c > per {
				m := loadGroup(c, per)
				parts = append(parts, fmt.Sprintf("%d conns: %d load generators", c, m))
			}
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("past %d connections a process (RLIMIT_NOFILE), each engine ran as %d server processes sharing the port (SO_REUSEPORT), "+
			"and the load as several generators of at most %d connections, each from a source address of its own (127.0.0.2 on, fresh addresses for each run), their windows started together: %s",
			per, serverGroup(slices.Max(o.Conns), per), maxPerSource, strings.Join(parts, "; ")))
	}
	if o.Restart {
		rep.Notes = append(rep.Notes, fmt.Sprintf("--restart: each run's server was stopped %v into the window (SIGTERM: it drains and closes its connections) and started again on its port; "+
			"the load generators' reconnect strategy was %s. Failed connections and lost requests are the restart's cost, shown in their columns, not integrity failures; "+
			"a corrupted byte still is. The server's CPU is not measured: the run spans two processes", RestartBefore, cmp.Or(o.Reconnect, load.ReconnectNone)))
	}
	if o.Heartbeat > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("--heartbeat %v: each connection sent one message every %v (open loop), and the servers' memory was read "+
			"before the dial and while the connections were held; TCP memory is the kernel's socket buffers (sockstat's mem) for both ends of each loopback connection", o.Heartbeat, o.Heartbeat))
	}
	if o.ResetShare > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("--reset: %g%% of each run's connections reset themselves (SO_LINGER 0) once, mid-request, on the net client; "+
			"what they were owed is not counted lost", 100*o.ResetShare))
	}
	if perfNote != "" {
		rep.Notes = append(rep.Notes, perfNote)
	}
	ps := &perfState{o: &o, flames: map[key]*perf.Flame{}, logf: logf}
	maxConn := slices.Max(o.Conns) + 100
	if o.MaxConns > 0 {
		maxConn = o.MaxConns
	}
	servers := map[string]*server{}
	defer func() {
		// Whatever ended the bench, no server, perf process or recording
		// outlives it.
		for _, s := range servers {
			s.stop(ctx)
			s.closePerf()
		}
	}()
	start := func(e string) (*server, error) {
		s, err := startServer(ctx, &o, e, srvCPUs, maxConn)
		if err != nil || o.PerfDir == "" {
			return s, err
		}
		attachPerf(ctx, &o, s, cliCPUs)
		if s.perf.err != nil {
			logf("%s server: %v; its runs are not recorded", e, s.perf.err)
		}
		return s, nil
	}
	var engines []string
	for _, e := range o.Engines {
		s, err := start(e)
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			rep.Skipped = append(rep.Skipped, netresult.Skip{Engine: e, Reason: err.Error()})
			logf("skipping %s: %v", e, err)
			continue
		}
		servers[e] = s
		engines = append(engines, e)
	}
	rep.Config.Engines = engines
	for _, sk := range rep.Skipped {
		delete(rep.Config.ServerProcs, sk.Engine)
	}
	if len(engines) == 0 {
		return rep, errors.New("no server engine could start: " + skipReasons(rep.Skipped))
	}

	points := map[key]*netresult.Point{}
	var order []key
	for _, m := range o.Modes {
		for _, c := range o.Conns {
			for _, sz := range o.Sizes {
				for _, e := range engines {
					k := key{e, m, c, sz}
					points[k] = &netresult.Point{Engine: e, Conns: c, Size: sz, Mode: m, Restart: o.Restart}
					order = append(order, k)
				}
			}
		}
	}
	interrupted := func() (*netresult.Report, error) {
		rep.Points = collect(points, order)
		for i := range rep.Points {
			if p := &rep.Points[i]; len(p.Runs) == 0 && p.Err == "" {
				p.Err = netresult.NotRun
			}
		}
		return rep, ctx.Err()
	}
	total := len(order) * o.Runs
	done := 0
	for _, m := range o.Modes {
		for _, c := range o.Conns {
			for _, sz := range o.Sizes {
				for run := 0; run < o.Runs; run++ {
					// Rotate the engine order run by run, so no engine
					// always goes first (or last) at a point.
					for i := range engines {
						e := engines[(i+run)%len(engines)]
						k := key{e, m, c, sz}
						p := points[k]
						if o.Progress != nil {
							o.Progress(done, total, fmt.Sprintf("%s %d conns × %s %s", e, c, sizeName(sz), m))
						}
						done++
						if p.Err != "" {
							continue
						}
						s := servers[e]
						if o.Heartbeat > 0 && s.alive() && s.runs > 0 {
							// What held connections cost is read off a
							// fresh server: one that served a point
							// before keeps what it grew to (the Go heap,
							// its tables) and hides the next point's.
							s.stop(ctx)
							if ctx.Err() != nil {
								return interrupted()
							}
						}
						if !s.alive() && s.runs > 0 && o.Heartbeat > 0 {
							ns, err := start(e)
							if err != nil {
								if ctx.Err() != nil {
									return interrupted()
								}
								p.Err = "could not start a fresh server: " + err.Error()
								continue
							}
							servers[e] = ns
							s = ns
						}
						s.runs++
						if !s.alive() {
							logf("%s server died (%s); restarting it", e, s.stderr.last())
							// Its recording holds the windows of the runs
							// before: they are kept.
							ps.finish(ctx, s, points)
							if ctx.Err() != nil {
								return interrupted()
							}
							ns, err := start(e)
							if err != nil {
								if ctx.Err() != nil {
									return interrupted()
								}
								p.Err = "server died and could not restart: " + err.Error()
								continue
							}
							servers[e] = ns
							s = ns
						}
						r, span, err := runLoad(ctx, &o, s, cliCPUs, c, sz, m)
						if ctx.Err() != nil {
							return interrupted()
						}
						if err != nil {
							p.Err = err.Error()
							logf("%s, %d conns × %d B %s: %v", e, c, sz, m, err)
							continue
						}
						if s.perf != nil {
							switch {
							case span.err != nil:
								r.PerfError = "not recorded: " + span.err.Error()
								if span.perfFailed {
									// perf itself failed: the runs after
									// this one are not tried.
									s.perf.err = span.err
								}
								logf("%s, %d conns × %d B %s: perf: %v", e, c, sz, m, span.err)
							case !span.on:
								r.PerfError = s.perf.perfError()
							default:
								s.perf.windows = append(s.perf.windows, window{k: k, run: run, idx: len(p.Runs), t0: span.t0, t1: span.t1})
							}
						}
						p.Runs = append(p.Runs, *r)
					}
				}
			}
		}
	}
	// Each recording ends before its server does, and its windows are
	// turned into profiles.
	for _, e := range engines {
		ps.finish(ctx, servers[e], points)
		if ctx.Err() != nil {
			return interrupted()
		}
	}
	ps.setFlames(points)
	rep.Points = collect(points, order)
	return rep, nil
}

func skipReasons(s []netresult.Skip) string {
	var parts []string
	for _, k := range s {
		parts = append(parts, k.Engine+": "+k.Reason)
	}
	return strings.Join(parts, "; ")
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// windowTries is how many windows runLoad measures, each four times as
// long as the one before, while none completes a request: a window of
// 50 ms in which the load generator never ran (on a machine busy with
// other work) measured nothing, and says nothing about the server.
const windowTries = 3

// runLoad runs one measured window in a load-generator child. A window
// in which no request completed is measured again, four times as long
// (windowTries in all), before it counts as an error: the figures are
// per second of the window that ran, whatever its length.
//
// When s is recorded (Options.PerfDir), the span is when perf sampled
// the window whose figures are the run's.
func runLoad(ctx context.Context, o *Options, s *server, cpus []int, conns, size int, mode string) (*netresult.Run, span, error) {
	d := o.Duration
	if o.recovery > 0 {
		d = RecoveryDuration(o.recovery)
	}
	if o.Restart {
		d = RestartDuration
	}
	var retrans0 int64
	if o.ns != nil {
		retrans0, _ = netns.Retransmits(s.pid)
	}
	// Overload and resets: what the server holds before and after.
	checkUse := s.over(conns) || o.ResetShare > 0
	var use0 serverUse
	if checkUse {
		var err error
		if use0, err = readUse(s.pid); err != nil {
			return nil, span{}, fmt.Errorf("the %s server's descriptors and memory: %w", s.engine, err)
		}
	}
	for try := 1; ; try++ {
		var res *netresult.Load
		var sp span
		var err error
		if per := o.perProcessConns(); conns > per || len(s.peers) > 0 {
			// Past one process, or a smaller point against a group
			// (whose CPU is every process's).
			var h *heldUse
			res, h, err = runGroupLoad(ctx, o, s, cpus, conns, size, mode, d, loadGroup(conns, per))
			sp.held = h
		} else {
			res, sp, err = loadWindow(ctx, o, s, cpus, conns, size, mode, d)
		}
		if err != nil {
			return nil, span{}, err
		}
		if res.Requests > 0 {
			r := toRun(res)
			if o.ns != nil {
				if n, err := netns.Retransmits(s.pid); err == nil {
					r.Retransmits = n - retrans0
				}
			}
			if o.recovery > 0 || o.Restart {
				if err := recoveryOf(r, res, sp.lossOn, sp.lossOff); err != nil {
					return nil, span{}, err
				}
			}
			if sp.held != nil {
				if err := sp.held.fill(r); err != nil {
					return nil, span{}, err
				}
			}
			if checkUse {
				use1, err := settledUse(ctx, s.pid, use0.fds)
				if err != nil {
					return nil, span{}, fmt.Errorf("the %s server's descriptors and memory: %w", s.engine, err)
				}
				r.ServerFDsBefore, r.ServerFDsAfter = use0.fds, use1.fds
				r.ServerRSSBefore, r.ServerRSSAfter = use0.rss, use1.rss
			}
			return r, sp, nil
		}
		if sp.perfFailed {
			// The next window would not be recorded either.
			s.perf.err = sp.err
		}
		if try == windowTries {
			// Nothing completed in any window: an error, not a row of
			// zeros.
			return nil, span{}, fmt.Errorf("no request completed in %d windows of %v to %v (the machine too busy, or the server stalled)", windowTries, o.Duration, d)
		}
		d *= 4
	}
}

// span is when perf sampled a measured window, CLOCK_MONOTONIC ns: on
// says it did, err why not. perfFailed says that the fault was perf's
// (switching it on or off failed), not the load generator's.
type span struct {
	on         bool
	t0, t1     int64
	err        error
	perfFailed bool
	// With recovery: when the loss began and ended (CLOCK_MONOTONIC ns,
	// 0 if it did not).
	lossOn, lossOff int64
	// With heartbeats: what the server held.
	held *heldUse
}

// loadWindow runs one window of d in a load-generator child; when s's
// recording is usable, sampling is on during the window (the span).
func loadWindow(ctx context.Context, o *Options, s *server, cpus []int, conns, size int, mode string, d time.Duration) (*netresult.Load, span, error) {
	gmp := len(cpus)
	if gmp == 0 {
		gmp = runtime.NumCPU()
	}
	args := []string{"net", "load", "--addr", s.addr, "--conns", strconv.Itoa(conns),
		"--size", strconv.Itoa(size), "--mode", mode,
		"--duration", d.String(), "--warmup", o.Warmup.String(), "--format", "json"}
	if !o.Restart {
		// A restarted server is another process: its CPU is not the
		// run's to read.
		args = append(args, "--server-pid", strconv.Itoa(s.pid))
	}
	if o.Reconnect != "" {
		args = append(args, "--reconnect", o.Reconnect)
	}
	if o.Restart {
		args = append(args, "--timeline", recoveryTimeline.String())
	}
	if s.perf.usable() || o.recovery > 0 || o.Heartbeat > 0 || o.Restart {
		args = append(args, WindowSyncFlag)
	}
	if o.Heartbeat > 0 {
		rate := float64(conns) / o.Heartbeat.Seconds()
		args = append(args, "--rate", strconv.FormatFloat(rate, 'g', -1, 64))
	}
	if o.level > 0 {
		args = append(args, LossyFlag)
	}
	if o.recovery > 0 {
		args = append(args, "--timeline", recoveryTimeline.String())
	}
	if s.over(conns) {
		args = append(args, "--refusals")
	}
	if o.ResetShare > 0 {
		args = append(args, "--reset", strconv.FormatFloat(100*o.ResetShare, 'f', -1, 64)+"%")
	}
	cmd := o.Command(args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(gmp))
	var out strings.Builder
	errb := &tailBuffer{max: 4096}
	cmd.Stdout = &out
	cmd.Stderr = errb
	var sync *windowSync
	var lw *lossWindow
	var held *heldUse
	var rw *restartWindow
	if s.perf.usable() || o.recovery > 0 || o.Heartbeat > 0 || o.Restart {
		var on, off func() (int64, error)
		switch {
		case o.Restart:
			rw = &restartWindow{o: o, s: s, cpus: o.serverCPUs, before: RestartBefore}
			on, off = rw.start, rw.stop
			defer rw.stop()
		case o.Heartbeat > 0:
			// Not with --perf or --recovery (Validate).
			var err error
			if held, err = newHeldUse(s.pid); err != nil {
				return nil, span{}, fmt.Errorf("the %s server's memory before the run: %w", s.engine, err)
			}
			on, off = held.on, held.off
		case o.recovery > 0:
			// --perf and --recovery do not go together (Validate).
			lw = &lossWindow{ns: o.ns, loss: o.level, before: recoveryBefore, window: o.recovery}
			on, off = lw.start, lw.stop
			defer lw.stop() // the loss is off, whatever happened
		default:
			on, off = s.perf.rec.Enable, s.perf.rec.Disable
		}
		var err error
		if sync, err = newWindowSync(cmd, on, off); err != nil {
			return nil, span{}, fmt.Errorf("start load generator: %w", err)
		}
	}
	if err := startPinned(cmd, cpus); err != nil {
		if sync != nil {
			sync.abort()
		}
		return nil, span{}, fmt.Errorf("start load generator: %w", err)
	}
	if sync != nil {
		sync.started()
		if s.perf.usable() && lw == nil && held == nil && rw == nil {
			// Interrupted, the bench keeps nothing of the recording:
			// it is closed at once, which also ends a switch that
			// waits for a perf already stopping (on ctx) to answer.
			defer context.AfterFunc(ctx, s.closePerf)()
		}
	}
	res, err := waitLoad(ctx, o, s, cmd, &out, errb, d, !o.Restart)
	var sp span
	if sync != nil {
		// The child has exited: sampling (or the loss) is off whatever
		// happened.
		sp = sync.wait()
	}
	if lw != nil {
		if _, lerr := lw.stop(); lerr != nil && err == nil {
			err = fmt.Errorf("--recovery: %w", lerr)
		}
		// The span is perf's; the loss's errors are the run's.
		sp = span{lossOn: lw.on, lossOff: lw.off}
	}
	if held != nil {
		sp = span{held: held}
	}
	if rw != nil {
		if _, rerr := rw.stop(); rerr != nil && err == nil {
			err = fmt.Errorf("--restart: %w", rerr)
		}
		if rw.next != nil {
			// The bench goes on with the new process.
			*s = *rw.next
		}
		sp = span{lossOn: rw.down, lossOff: rw.up}
	}
	return res, sp, err
}

// waitLoad waits for the load-generator child cmd (started) to exit, and
// reads its result.
//
// serverCPU says the child measured the server's CPU (--server-pid): a
// window with requests and no server CPU means the server died. (A
// group's children do not: the bench reads the group's.)
func waitLoad(ctx context.Context, o *Options, s *server, cmd *exec.Cmd, out *strings.Builder, errb *tailBuffer, d time.Duration, serverCPU bool) (*netresult.Load, error) {
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	// The child bounds itself; this is a backstop for a hung child. On a
	// lossy network the child's own bounds are minutes: dials tried
	// again after TCP's SYN retransmissions ran out, and the drain.
	limit := o.Warmup + d + time.Minute
	if o.level > 0 {
		limit = o.Warmup + d + load.LossyDrain + lossyDialBound
	}
	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		cmd.Process.Kill()
		<-waited
		return nil, ctx.Err()
	case <-time.After(limit):
		cmd.Process.Kill()
		<-waited
		return nil, fmt.Errorf("load generator did not finish within %v", limit)
	}
	var res netresult.Load
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		if werr != nil {
			return nil, fmt.Errorf("load generator: %v: %s", werr, errb.last())
		}
		return nil, fmt.Errorf("load generator printed no result: %v", err)
	}
	if werr != nil && res.Corrupted == 0 && res.Lost == 0 && res.ConnErrors == 0 {
		// It failed for another reason than the server's faults (which
		// the Result counts): the window is not to be trusted.
		return nil, fmt.Errorf("load generator: %v: %s", werr, errb.last())
	}
	if o.Restart {
		// The server is being restarted; loadWindow looks at it once
		// the restart is over.
		return &res, nil
	}
	if !s.alive() || (serverCPU && res.Requests > 0 && res.ServerCPU <= 0) {
		return nil, fmt.Errorf("the %s server exited during the run: %s", s.engine, s.stderr.last())
	}
	return &res, nil
}

func toRun(r *netresult.Load) *netresult.Run {
	run := &netresult.Run{
		Requests:    r.Requests,
		Bytes:       r.Bytes,
		ElapsedNs:   int64(r.Elapsed),
		QPS:         r.QPS,
		MBps:        r.MBps,
		ServerCPUNs: int64(r.ServerCPU),
		ClientCPUNs: int64(r.ClientCPU),
		P50Ns:       r.LatencyNs.P50,
		P90Ns:       r.LatencyNs.P90,
		P99Ns:       r.LatencyNs.P99,
		P999Ns:      r.LatencyNs.P999,
		MaxNs:       r.LatencyNs.Max,
		Corrupted:   r.Corrupted,
		Lost:        r.Lost,
		ConnErrors:  r.ConnErrors,
		NoEcho:      r.NoEcho,
		DialNs:      int64(r.DialTime),
		DialRetries: r.DialRetries,
		Refused:     r.Refused,
		Resets:      r.Resets,
		Reconnects:  r.Reconnects,
		Resent:      r.Resent,
		Client:      r.Client,
	}
	if r.Requests > 0 {
		run.ServerCPUPerReqUs = float64(r.ServerCPU) / 1e3 / float64(r.Requests)
		run.ClientCPUPerReqUs = float64(r.ClientCPU) / 1e3 / float64(r.Requests)
	}
	return run
}

// key names one engine at one point of the matrix.
type key struct {
	engine, mode string
	conns, size  int
}

// collect fills every point's medians and sums (Point.Summarize), in
// matrix order.
func collect(points map[key]*netresult.Point, order []key) []netresult.Point {
	out := make([]netresult.Point, 0, len(order))
	for _, k := range order {
		p := *points[k]
		p.Summarize()
		out = append(out, p)
	}
	return out
}

// closePerf ends s's perf recording, if any, and removes it.
func (s *server) closePerf() {
	if s.perf != nil && s.perf.rec != nil {
		s.perf.rec.Close()
	}
}
