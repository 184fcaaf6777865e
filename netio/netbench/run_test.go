package netbench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/netresult"
)

func cmdFn(args ...string) *exec.Cmd { return exec.Command("true") }

func TestValidateDefaults(t *testing.T) {
	o := Options{Command: cmdFn}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Engines, netio.Engines()) || !slices.Equal(o.Conns, DefaultConns) ||
		!slices.Equal(o.Sizes, DefaultSizes) || len(o.Modes) != 3 || o.Duration != DefaultDuration ||
		o.Warmup != 0 || o.Runs != 1 {
		t.Errorf("defaults: %+v", o)
	}
}

func TestValidateErrors(t *testing.T) {
	for _, o := range []Options{
		{Engines: []string{"pigeon"}},
		{Conns: []int{0}},
		{Conns: []int{2_000_000}},
		{Sizes: []int{0}},
		{Sizes: []int{128 << 20}},
		{Modes: []string{"pipeline:0"}},
		{Duration: time.Nanosecond},
		{Duration: 2 * time.Hour},
		{Warmup: -time.Second},
		{Runs: -1},
		{Runs: 1000},
		{Engines: []string{"net", "net"}},
		{Conns: []int{10, 10}},
		{Sizes: []int{64, 64}},
		{Modes: []string{"stream", "stream"}},
	} {
		o.Command = cmdFn
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", o)
		}
	}
	if err := (&Options{}).Validate(); err == nil {
		t.Error("no Command accepted")
	}
}

// TestValidateNofile: an open-file limit too low for a process's own
// files and its connections is one error that says so, not a panic in
// sizing the process groups (a divide by zero once).
func TestValidateNofile(t *testing.T) {
	defer func(f func() (uint64, uint64, error)) { nofile = f }(nofile)
	nofile = func() (uint64, uint64, error) { return 150, 150, nil }
	o := Options{Command: cmdFn, Conns: []int{10}}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "open-file limit is 150") {
		t.Errorf("Validate at a limit of 150: %v", err)
	}
	for _, per := range []int{1, 2, 3} {
		if n := serverGroup(10, per); n < 1 {
			t.Errorf("serverGroup(10, %d) = %d", per, n)
		}
	}
}

// TestStartPinned: the child runs on the CPUs asked for, and the parent's
// own mask is left as it was.
func TestStartPinned(t *testing.T) {
	srv, cli, note := Pinning()
	if srv == nil {
		t.Skipf("no pinning here: %s", note)
	}
	cmd := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status")
	var out strings.Builder
	cmd.Stdout = &out
	if err := startPinned(cmd, srv); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(out.String()); len(f) != 2 || f[1] != itoa(srv[0]) {
		t.Errorf("child's CPUs %q, want %d", out.String(), srv[0])
	}
	cmd = exec.Command("grep", "Cpus_allowed_list", "/proc/self/status")
	out.Reset()
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\t"+itoa(srv[0])+"\n") && len(cli) > 0 {
		t.Errorf("the parent stayed pinned: %q", out.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 16}
	b.Write([]byte("first line\nsecond line that is long\n"))
	if got := b.last(); got != "t is long" && !strings.HasSuffix("second line that is long", got) {
		t.Errorf("last = %q", got)
	}
	if (&tailBuffer{max: 8}).last() != "it printed nothing" {
		t.Error("empty buffer")
	}
}

// TestRunLoadNothingCompleted: a window in which no request completed
// (a load generator that got no CPU) is measured again, longer, and after
// windowTries such windows it is an error for that run, not a row of
// zeros.
func TestRunLoadNothingCompleted(t *testing.T) {
	o := Options{Duration: 150 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Command: func(args ...string) *exec.Cmd {
			return exec.Command("echo", `{"requests":0,"bytes":0,"elapsed_ns":150000000}`)
		}}
	s := &server{engine: "net", addr: "127.0.0.1:1", pid: os.Getpid(), exited: make(chan struct{}), stderr: &tailBuffer{max: 64}}
	r, _, err := runLoad(context.Background(), &o, s, nil, 4, 64, "pingpong")
	if err == nil || !strings.Contains(err.Error(), "no request completed in 3 windows of 150ms to 2.4s") {
		t.Fatalf("run %+v, error %v: want an error saying no request completed in 3 windows", r, err)
	}
}

// TestRunLoadLongerWindow: after a window in which nothing completed, the
// next is four times as long, and its figures are the run's.
func TestRunLoadLongerWindow(t *testing.T) {
	var durations []string
	o := Options{Duration: 50 * time.Millisecond, Warmup: 0,
		Command: func(args ...string) *exec.Cmd {
			durations = append(durations, args[slices.Index(args, "--duration")+1])
			if len(durations) == 1 {
				return exec.Command("echo", `{"requests":0,"bytes":0,"elapsed_ns":50000000}`)
			}
			return exec.Command("echo", `{"requests":20,"bytes":1280,"elapsed_ns":200000000,"qps":100,"server_cpu_ns":1000000}`)
		}}
	s := &server{engine: "net", addr: "127.0.0.1:1", pid: os.Getpid(), exited: make(chan struct{}), stderr: &tailBuffer{max: 64}}
	r, _, err := runLoad(context.Background(), &o, s, nil, 1, 64, "pingpong")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(durations, " ") != "50ms 200ms" || r.Requests != 20 || r.QPS != 100 {
		t.Errorf("windows %v, run %+v: want 50ms then 200ms, and the second window's 20 requests at 100/s", durations, r)
	}
}

// soleRun checks that point p ran once without error, with every byte
// echoed and verified, no connection failed and some requests served; it
// returns the run, and false when there is none to look at.
func soleRun(t *testing.T, label string, p netresult.Point) (netresult.Run, bool) {
	t.Helper()
	if p.Err != "" || len(p.Runs) != 1 {
		t.Errorf("%s: %q, %d runs", label, p.Err, len(p.Runs))
		return netresult.Run{}, false
	}
	r := p.Runs[0]
	if r.Corrupted != 0 || r.Lost != 0 || r.ConnErrors != 0 || r.Requests == 0 {
		t.Errorf("%s: %d corrupted, %d lost bytes, %d failed connections, %d requests", label, r.Corrupted, r.Lost, r.ConnErrors, r.Requests)
	}
	return r, true
}

// TestServerGOMAXPROCS: a loop engine's server child runs with one P
// more than its loops, so that sysmon does not take a waiting loop's P;
// the net engine's with one P per loop.
func TestServerGOMAXPROCS(t *testing.T) {
	o := Options{Command: iopathCommand(t), Log: t.Logf}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cpus, _, _ := Pinning()
	loops := serverLoops(cpus)
	for _, e := range o.Engines {
		want := loops + 1
		if e == "net" {
			want = loops
		}
		// The child sees what this process sees: an engine this process
		// cannot use (io_uring disabled by the kernel, policy or
		// IOPATH_DISABLE_IO_URING) is left out, with the reason.
		srv, err := netio.Listen(e, netio.Config{Addr: "127.0.0.1:0", Loops: 1})
		if errors.Is(err, netio.ErrNotSupported) {
			t.Logf("%s left out: %v", e, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s in this process: %v", e, err)
		}
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		s, err := startServer(ctx, &o, e, cpus, 100)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(s.pid) + "/environ")
		s.stop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GOMAXPROCS="); ok {
				got = v // the last one is the one the child sees
			}
		}
		if got != strconv.Itoa(want) {
			t.Errorf("%s server with %d loops: GOMAXPROCS=%q, want %d", e, loops, got, want)
		}
	}
}
