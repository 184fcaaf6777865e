package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/perf/perftest"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/netbench"
	"github.com/iopath/iopath/netio/netresult"
)

func TestNetBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // what the error says is wanted (the range), if anything
	}{
		{[]string{"net", "serve", "-e", "carrier-pigeon"}, ""},
		{[]string{"net", "serve", "--addr", "nonsense"}, ""},
		{[]string{"net", "serve", "--drain", "-1s"}, "want 0 to 500ms"},
		{[]string{"net", "serve", "--drain", "1s"}, "want 0 to 500ms"}, // beyond the second a stop may take
		{[]string{"net", "serve", "--max-conns", "0"}, "want 1 to 1000000"},
		{[]string{"net", "serve", "--max-conns", "1000001"}, "want 1 to 1000000"},
		{[]string{"net", "serve", "--buf-size", "1TiB"}, "want 1B to 64MiB"},
		{[]string{"net", "serve", "--buf-size", "0"}, "want 1B to 64MiB"},
		{[]string{"net", "serve", "--loops", "-1"}, "want 0 (one per CPU) to 1024"},
		{[]string{"net", "serve", "--loops", "1025"}, "want 0 (one per CPU) to 1024"},
		{[]string{"net", "serve", "-e", "epoll", "--sqpoll"}, ""},
		{[]string{"net", "serve", "extra"}, ""},
		{[]string{"net", "load", "--mode", "pipeline:0"}, "want an integer from 1 to 1024"},
		{[]string{"net", "load", "--mode", "pipeline:1025"}, "want an integer from 1 to 1024"},
		{[]string{"net", "load", "--mode", "sideways"}, ""},
		{[]string{"net", "load", "--addr", "nohost"}, ""},
		{[]string{"net", "load", "--conns", "0"}, "want 1 to 1000000"},
		{[]string{"net", "load", "--conns", "5000000"}, "want 1 to 1000000"},
		{[]string{"net", "load", "--size", "0"}, "want 1 byte to 67108864 bytes"},
		{[]string{"net", "load", "--size", "65MiB"}, "want 1 byte to 67108864 bytes"},
		{[]string{"net", "load", "--duration", "0s"}, "want above 0 and at most 24h"},
		{[]string{"net", "load", "--duration", "25h"}, "want above 0 and at most 24h"},
		{[]string{"net", "load", "--warmup", "-1s"}, "want 0 to 24h"},
		{[]string{"net", "load", "--rate", "-1"}, "want 0 (closed loop) to 1e+09"},
		{[]string{"net", "load", "--rate", "NaN"}, "want 0 (closed loop) to 1e+09"},
		{[]string{"net", "load", "--dial-rate", "-1"}, "want 0 (unpaced) to 1000000"},
		{[]string{"net", "load", "--server-pid", "-1"}, "want a process id, or 0 for none"},
		{[]string{"net", "load", "--format", "xml"}, ""},
		{[]string{"net", "load", "--client", "carrier-pigeon"}, ""},
		{[]string{"net", "load", "--client", "epoll", "--mode", "stream"}, ""},
		{[]string{"net", "bench", "--format", "xml"}, ""},
		{[]string{"net", "bench", "--engines", "carrier-pigeon"}, ""},
		{[]string{"net", "bench", "--conns", "0"}, "want 1 to 1000000"},
		{[]string{"net", "bench", "--sizes", "65MiB"}, "want 1 byte to 64 MiB"},
		{[]string{"net", "bench", "--modes", "pipeline:x"}, ""},
		{[]string{"net", "bench", "--runs", "0"}, "want 1 to 100"},
		{[]string{"net", "bench", "--runs", "101"}, "want 1 to 100"},
		{[]string{"net", "bench", "--duration", "1ns"}, "want 10ms to 1h"},
		{[]string{"net", "bench", "--duration", "2h"}, "want 10ms to 1h"},
		{[]string{"net", "bench", "--warmup", "-1s"}, "want 0 to 1h"},
		{[]string{"net", "bench", "--serve-file", "--writev"}, ""},
		{[]string{"net", "bench", "--serve-file", "--format", "xml"}, "want one of table, json, csv, markdown"},
		{[]string{"net", "bench", "--writev", "--format", "text"}, "want one of table, json, csv, markdown"},
		{[]string{"net", "bench", "--serve-file", "--file-sizes", "0"}, "want 1B to 16GiB"},
		{[]string{"net", "bench", "--serve-file", "--file-sizes", "17GiB"}, "want 1B to 16GiB"},
		{[]string{"net", "bench", "--serve-file", "--duration", "0s"}, "want 10ms to 1h"},
		{[]string{"net", "bench", "--writev", "--parts", "0"}, "want 1 to 1024"},
		{[]string{"net", "bench", "--writev", "--parts", "1025"}, "want 1 to 1024"},
		{[]string{"net", "bench", "--writev", "--runs", "0"}, "want 1 to 100"},
		{[]string{"net", "bench", "--loss", "10"}, "want a percentage, as 10%"},
		{[]string{"net", "bench", "--loss", "200%"}, "want 0% to 95%"},
		{[]string{"net", "bench", "--loss", "10%,10%"}, "given twice"},
		{[]string{"net", "bench", "--rto-max", "2s"}, "give --loss too"},
		{[]string{"net", "bench", "--loss", "10%", "--rto-max", "0"}, "want 1s to 2m0s"},
		{[]string{"net", "bench", "--loss", "10%", "--rto-max", "500ms"}, "want 1s to 2m0s"},
		{[]string{"net", "bench", "--loss", "10%", "--serve-file"}, "cannot be used with --serve-file"},
		{[]string{"net", "bench", "--loss", "10%", "--recovery", "5s", "--perf", "p"}, "--perf and --recovery"},
		{[]string{"net", "bench", "--recovery", "5s"}, "give --loss too"},
		{[]string{"net", "bench", "--loss", "0,30%", "--recovery", "5s"}, "nothing to recover from"},
		{[]string{"net", "bench", "--loss", "30%", "--recovery", "500ms"}, "want 1s to 1m0s"},
		{[]string{"net", "bench", "--loss", "30%", "--recovery", "5s", "--duration", "1s"}, "drop --duration"},
		{[]string{"net", "bench", "--restart", "--duration", "1s"}, "drop --duration"},
		{[]string{"net", "serve", "-e", "net", "--loops", "4"}, "--loops is for -e epoll and io_uring"},
		{[]string{"net", "bench", "--engines", "net,net"}, "engine net given twice"},
		{[]string{"net", "bench", "--serve-file", "--engines", "epoll"}, "--engines applies to the echo servers"},
		{[]string{"net", "bench", "--writev", "--modes", "stream"}, "cannot be used with --writev"},
		{[]string{"net", "bench", "--parts", "0"}, "--parts applies to --writev only"},
		{[]string{"net", "bench", "--file-sizes", "0"}, "--file-sizes applies to --serve-file only"},
		{[]string{"net", "bench", "--max-conns", "-1"}, "want 1 to 1000000"},
		{[]string{"net", "bench", "--heartbeat", "1ms"}, "want 100ms to 1m0s"},
		{[]string{"net", "bench", "--heartbeat", "1s", "--modes", "stream"}, "pingpong mode only"},
		{[]string{"net", "bench", "--max-conns", "1000001"}, "want 1 to 1000000"},
		{[]string{"net", "bench", "--reset", "150%"}, "want 0% to 100%"},
		{[]string{"net", "bench", "--reset", "10%", "--modes", "stream"}, "not in stream mode"},
		{[]string{"net", "load", "--timeline", "1ms"}, "want 0 (none) or 10ms to the duration"},
		{[]string{"net", "load", "--reset", "10"}, "want a percentage, as 10%"},
		{[]string{"net", "load", "--reconnect", "sometimes"}, "want none, immediate or backoff"},
		{[]string{"net", "load", "--addr", "127.0.0.1:7999", "--source", "192.0.2.1"}, "not an address of this host"},
		{[]string{"net", "load", "--addr", "127.0.0.1:7999", "--source", "::1"}, "different IP versions"},
		{[]string{"net", "load", "--reconnect", "backoff", "--mode", "stream"}, "resends what was not echoed"},
		{[]string{"net", "load", "--request-timeout", "-1s"}, "want 0 (none) to 24h0m0s"},
		{[]string{"net", "load", "--connect-timeout", "25h"}, "want 0 (the default, 1s) to 24h0m0s"},
		{[]string{"net", "load", "--reset", "101%"}, "want 0% to 100%"},
		{[]string{"net", "load", "--reset", "10%", "--mode", "stream"}, "resets mid-request need closed-loop"},
	} {
		args := c.args
		// A flag that should have been refused may start a server or a
		// run: the deadline ends it, and the test says so.
		if args[1] == "serve" && !slices.Contains(args, "--addr") {
			args = append(args, "--addr", "127.0.0.1:0")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var stdout, stderr bytes.Buffer
		code := exitCode(run(ctx, args, strings.NewReader(""), &stdout, &stderr), &stderr)
		cancel()
		errOut := stderr.String()
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
		if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines != 0 || !strings.HasPrefix(errOut, "iopath: ") {
			t.Errorf("%v: want one line starting \"iopath: \", got %q", args, errOut)
		}
		if !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %q does not say %q", args, errOut, c.want)
		}
	}
}

// TestNetHelpStatesRanges: each numeric flag's --help line gives its
// range, as the error for a value outside it does.
func TestNetHelpStatesRanges(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"serve": {"--loops", "--max-conns", "--buf-size", "--drain"},
		"load":  {"--conns", "--size", "--duration", "--warmup", "--mode", "--rate", "--dial-rate"},
		"bench": {"--conns", "--sizes", "--duration", "--warmup", "--runs", "--file-sizes", "--parts"},
	} {
		out, errOut, code := runCLI("net", cmd, "--help")
		if code != 0 {
			t.Fatalf("net %s --help: exit %d: %s", cmd, code, errOut)
		}
		for _, f := range flags {
			line := regexp.MustCompile(`(?m)^\s+(-\w, )?` + f + ` \S+\s+(.*)$`).FindString(out)
			if line == "" {
				t.Errorf("net %s --help: no %s", cmd, f)
				continue
			}
			if !regexp.MustCompile(` to \d|at most \d`).MatchString(line) {
				t.Errorf("net %s --help: %q states no range", cmd, strings.TrimSpace(line))
			}
		}
	}
}

// startServeProcess runs `iopath net serve` in a process of its own and
// returns it with the address it listens on.
func startServeProcess(t *testing.T, env []string, args ...string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"net", "serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), cliEnv+"=1"), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	re := regexp.MustCompile(`listening on (\S+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return cmd, m[1], stderr
		}
	}
	cmd.Wait()
	t.Fatalf("net serve %v did not start: %s", args, stderr.String())
	return nil, "", nil
}

// TestNetServeLoad runs each engine as `iopath net serve`, drives it with
// `iopath net load`, and stops it with SIGTERM: it must drain and exit 0.
func TestNetServeLoad(t *testing.T) {
	for _, e := range netio.Engines() {
		t.Run(e, func(t *testing.T) {
			if e == "io_uring" && !features.Probe().IOURing.Available {
				t.Skipf("io_uring unavailable here: %s", features.Probe().IOURing.Reason)
			}
			srv, addr, srvErr := startServeProcess(t, nil, "-e", e)
			out, errOut, code := runCLI("net", "load", "--addr", addr, "--conns", "20", "--size", "100",
				"--duration", "300ms", "--warmup", "0s", "--mode", "pipeline:4",
				"--server-pid", strconv.Itoa(srv.Process.Pid), "--format", "json")
			if code != 0 {
				t.Fatalf("net load: exit %d: %s", code, errOut)
			}
			var r netresult.Load
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("net load json: %v\n%s", err, out)
			}
			if r.Requests == 0 || r.Corrupted != 0 || r.Lost != 0 || r.ConnErrors != 0 || r.ServerCPU <= 0 {
				t.Errorf("load result %+v", r)
			}
			// The table form states the integrity check.
			out, errOut, code = runCLI("net", "load", "--addr", addr, "--conns", "3", "--duration", "100ms", "--warmup", "0s")
			if code != 0 || !strings.Contains(out, "every byte verified") {
				t.Errorf("net load table: exit %d: %s%s", code, out, errOut)
			}
			srv.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- srv.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("net serve after SIGTERM: %v: %s", err, srvErr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("net serve did not exit after SIGTERM")
			}
			if !strings.Contains(srvErr.String(), "accepted 23 connections") {
				t.Errorf("net serve printed no summary, or a wrong one: %q", srvErr.String())
			}
		})
	}
}

// TestNetLoadNoServer: a dial to a closed port is one line and exit 1.
func TestNetLoadNoServer(t *testing.T) {
	_, errOut, code := runCLI("net", "load", "--addr", "127.0.0.1:1", "--conns", "1", "--duration", "100ms")
	if code != 1 || !strings.Contains(errOut, "127.0.0.1:1") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, stderr %q: want 1 and one line naming the address", code, errOut)
	}
}

// TestNetServeIOURingDisabled: with io_uring off, -e io_uring says why and
// suggests epoll.
func TestNetServeIOURingDisabled(t *testing.T) {
	_, errOut, code := runCLIProcess(t, []string{features.DisableEnv + "=1"}, "net", "serve", "-e", "io_uring", "--addr", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errOut, "not supported") || !strings.Contains(errOut, "-e epoll") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestNetBenchSmoke runs a one-point bench with children, JSON and HTML.
func TestNetBenchSmoke(t *testing.T) {
	html := filepath.Join(t.TempDir(), "net.html")
	out, errOut, code := runCLIProcess(t, nil, "net", "bench", "--conns", "4", "--sizes", "64",
		"--modes", "pingpong,stream", "--duration", "300ms", "--warmup", "50ms", "--runs", "2",
		"--format", "json", "--html", html)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep netresult.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	want := len(netio.Engines()) - len(rep.Skipped)
	if len(rep.Points) != 2*want {
		t.Fatalf("%d points, want %d (skipped %+v)", len(rep.Points), 2*want, rep.Skipped)
	}
	for _, p := range rep.Points {
		if p.Err != "" || len(p.Runs) != 2 || p.QPS <= 0 || p.ServerCPUPerReqUs <= 0 || p.Corrupted+p.Lost+p.ConnErrors != 0 {
			t.Errorf("point %+v", p)
		}
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("html report: %v", err)
	}
}

// TestNetBenchServeFile serves two small files four ways through child
// file servers, every byte checked.
func TestNetBenchServeFile(t *testing.T) {
	html := filepath.Join(t.TempDir(), "file.html")
	out, errOut, code := runCLIProcess(t, nil, "net", "bench", "--serve-file", "--file-sizes", "4KiB,1MiB",
		"--runs", "1", "--duration", "100ms", "--format", "json", "--html", html)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Results []netresult.FileServe `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	rs := doc.Results
	want := len(netresult.FileServeMethods())
	if !features.Probe().IOURing.Available {
		want-- // skipped, and said so
		if !strings.Contains(errOut, "skipping io_uring") {
			t.Errorf("no word of io_uring being skipped: %q", errOut)
		}
	}
	if len(rs) != 2*want {
		t.Fatalf("%d results, want %d", len(rs), 2*want)
	}
	for _, r := range rs {
		if r.Err != "" {
			if r.Method == "io_uring" && !features.Probe().IOURing.Available {
				continue
			}
			t.Errorf("%s %d: %s", r.Method, r.FileSize, r.Err)
			continue
		}
		if !r.Verified || r.GBps <= 0 || r.CPUSecPerGB <= 0 || r.ProcessCPU <= 0 || len(r.PerRun) != r.Runs {
			t.Errorf("%+v", r)
		}
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("html report: %v", err)
	}
}

// TestNetBenchWritev sends 2-part responses four ways.
func TestNetBenchWritev(t *testing.T) {
	out, errOut, code := runCLI("net", "bench", "--writev", "--parts", "2", "--runs", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, way := range netresult.WritevWays() {
		if way == "io_uring" && !features.Probe().IOURing.Available {
			continue
		}
		if !strings.Contains(out, way) {
			t.Errorf("no %s row:\n%s", way, out)
		}
	}
	if strings.Count(out, " ok") < 3 {
		t.Errorf("rows not verified:\n%s", out)
	}
}

// TestNetServeInterrupt: SIGINT stops net serve within a second, a drain
// included, even with a client that never closes; it says so and prints
// what it served.
func TestNetServeInterrupt(t *testing.T) {
	for _, e := range netio.Engines() {
		t.Run(e, func(t *testing.T) {
			if e == "io_uring" && !features.Probe().IOURing.Available {
				t.Skipf("io_uring unavailable here: %s", features.Probe().IOURing.Reason)
			}
			p := startCLIPipe(t, nil, "net", "serve", "-e", e, "--addr", "127.0.0.1:0")
			p.alone = true
			var addr string
			re := regexp.MustCompile(`listening on (\S+)`)
			sc := bufio.NewReader(p.out)
			line, err := sc.ReadString('\n')
			if m := re.FindStringSubmatch(line); m != nil {
				addr = m[1]
			} else {
				t.Fatalf("no address: %q, %v: %s", line, err, p.stderr())
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close() // open through the drain: the drain's bound ends it
			c.Write([]byte("ping"))
			io.ReadFull(c, make([]byte, 4))
			p.checkStopped(p.interrupt(false), "interrupted; draining 1 connections (up to 300ms)")
			if p.err != nil {
				t.Errorf("exit: %v (a signal is net serve's way to stop)", p.err)
			}
			for _, want := range []string{"accepted 1 connections, at most 1 at once", "were closed"} {
				if !strings.Contains(p.stderr(), want) {
					t.Errorf("stderr %q does not say %q", p.stderr(), want)
				}
			}
		})
	}
}

// TestNetLoadInterrupt: SIGINT stops net load within a second, with the
// figures of the window so far and "interrupted", and a non-zero status.
func TestNetLoadInterrupt(t *testing.T) {
	s, err := netio.Listen("epoll", netio.Config{Loops: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, mode := range []string{"pingpong", "stream"} {
		t.Run(mode, func(t *testing.T) {
			before := s.Stats().BytesIn
			p := startCLIPipe(t, nil, "net", "load", "--addr", s.Addr().String(), "--conns", "10",
				"--mode", mode, "--duration", "1h", "--warmup", "0s")
			p.alone = true
			p.waitFor("load on the server", func() bool { return s.Stats().BytesIn > before+1<<20 })
			p.checkInterrupted(p.interrupt(false), "net load: interrupted; the figures above cover the window until then")
			if out := p.stdout(); !strings.Contains(out, "requests") {
				t.Errorf("stdout %q: want the window so far", out)
			}
		})
	}
	// In the warm-up nothing is measured yet: no table of zeros.
	t.Run("warmup", func(t *testing.T) {
		before := s.Stats().BytesIn
		p := startCLIPipe(t, nil, "net", "load", "--addr", s.Addr().String(), "--conns", "10",
			"--duration", "1s", "--warmup", "1h")
		p.alone = true
		p.waitFor("load on the server", func() bool { return s.Stats().BytesIn > before+1<<16 })
		p.checkInterrupted(p.interrupt(false), "net load: interrupted before the measured window (in the warm-up); nothing measured")
		if out := p.stdout(); out != "" {
			t.Errorf("stdout %q: want nothing", out)
		}
	})
}

// TestNetBenchInterrupt: SIGINT stops every net bench within a second,
// its children (servers, load generators) and temporary files gone.
func TestNetBenchInterrupt(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		kids int // children seen (in all) before the signal
		want string
		out  string // on stdout
	}{
		{"echo", []string{"--engines", "net,epoll", "--conns", "2", "--sizes", "64", "--modes", "pingpong", "--duration", "1h", "--warmup", "0s"},
			3, "net bench: interrupted; nothing measured", ""},
		// A run of the first point done, the second point not run.
		// (Windows of 300 ms: in 50 ms a busy machine may complete no
		// request, which fails the point instead.)
		{"echo-partial", []string{"--engines", "net", "--conns", "1,2", "--sizes", "64", "--modes", "pingpong", "--duration", "300ms", "--warmup", "0s", "--runs", "100"},
			4, "net bench: interrupted; the results above are incomplete, and ", "not run: interrupted"},
		{"serve-file", []string{"--serve-file", "--file-sizes", "4KiB", "--duration", "1h", "--runs", "1"},
			1, "net bench --serve-file: interrupted; nothing written", ""},
		{"writev", []string{"--writev", "--runs", "100", "--parts", "1,2,4,8,16,64"},
			0, "net bench --writev: interrupted; nothing written", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			html := filepath.Join(t.TempDir(), "net.html")
			p := startCLIPipe(t, nil, append([]string{"net", "bench", "--html", html}, c.args...)...)
			p.alone = true
			if c.kids > 0 {
				seen := map[int]bool{}
				p.waitFor(fmt.Sprintf("%d children", c.kids), func() bool {
					for _, pid := range groupPIDs(p.cmd.Process.Pid) {
						if pid != p.cmd.Process.Pid {
							seen[pid] = true
						}
					}
					return len(seen) >= c.kids
				})
			} else {
				// In process: its sockets are open once it runs (a
				// sleep was not enough on a busy machine, where the
				// signal came before the command had started).
				p.waitFor("a socket", func() bool { return hasSocket(p.cmd.Process.Pid) })
			}
			p.checkInterrupted(p.interrupt(false), c.want, filepath.Dir(html))
			if out := p.stdout(); !strings.Contains(out, c.out) {
				t.Errorf("stdout %q: want %q", out, c.out)
			}
		})
	}
}

// TestNetBenchHTMLForce: an existing --html file is refused without
// --force, before anything runs, and left byte for byte; with --force it
// is replaced by the report.
func TestNetBenchHTMLForce(t *testing.T) {
	html := filepath.Join(t.TempDir(), "notes.html")
	mine := []byte("mine, not a report\n")
	if err := os.WriteFile(html, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	echo := []string{"--engines", "net", "--conns", "1", "--sizes", "64", "--modes", "pingpong", "--warmup", "0s"}
	for _, side := range [][]string{echo, {"--serve-file", "--file-sizes", "4KiB"}, {"--writev", "--parts", "2"}} {
		args := append([]string{"net", "bench", "--duration", "50ms", "--html", html}, side...)
		_, errOut, code := runCLIProcess(t, nil, args...)
		if code != 2 || !strings.Contains(errOut, "already exists (use --force to overwrite)") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v without --force: exit %d, stderr %q: want 2 and one line", side, code, errOut)
		}
		if b, err := os.ReadFile(html); err != nil || !bytes.Equal(b, mine) {
			t.Fatalf("%v: the file changed: %q, %v", side, b, err)
		}
	}
	_, errOut, code := runCLIProcess(t, nil, append([]string{"net", "bench", "--duration", "50ms", "--html", html, "--force"}, echo...)...)
	if code != 0 {
		t.Fatalf("with --force: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("with --force the file is not the report: %.80q, %v", b, err)
	}
}

// TestNetBenchNothingMeasured: a bench in which no engine could run exits
// 1, saying why, rather than 0 with an empty table.
func TestNetBenchNothingMeasured(t *testing.T) {
	out, errOut, code := runCLIProcess(t, []string{features.DisableEnv + "=1"}, "net", "bench", "--engines", "io_uring",
		"--conns", "1", "--sizes", "64", "--modes", "pingpong", "--duration", "50ms")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != 1 || !strings.Contains(lines[len(lines)-1], "iopath: net bench: no server engine could start: io_uring: ") ||
		!strings.Contains(lines[len(lines)-1], "disabled by "+features.DisableEnv+"=1") {
		t.Errorf("exit %d, stderr %q: want 1 and why", code, errOut)
	}
	if !strings.Contains(out, "NO RUN WAS MEASURED") {
		t.Errorf("stdout %q: want the report to say nothing was measured", out)
	}
}

// TestNetServeStarved: net serve under a low RLIMIT_NOFILE (as after
// `ulimit -n 48`), loaded with more connections than that: the server
// warns at the start, says at once that accepts fail, and counts them in
// its summary; net load fails the connections left unserved and exits 1.
func TestNetServeStarved(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to lower the limit with")
	}
	cmd := exec.Command("sh", "-c", `ulimit -n 48 && exec "$0" "$@"`, os.Args[0], "net", "serve", "--addr", "127.0.0.1:0", "--loops", "1")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	srvErr := &syncBuffer{}
	cmd.Stderr = srvErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	m := regexp.MustCompile(`listening on (\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("net serve did not start: %q %s", line, srvErr.String())
	}
	out, errOut, code := runCLI("net", "load", "--addr", m[1], "--conns", "100", "--duration", "1100ms", "--warmup", "0s",
		"--server-pid", strconv.Itoa(cmd.Process.Pid))
	if code != 1 || !strings.Contains(errOut, "connections had no echo within the first") || !strings.Contains(out, "FAILED") {
		t.Errorf("net load: exit %d, stdout %q, stderr %q: want 1 and the unserved connections", code, out, errOut)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	for _, want := range []string{
		"RLIMIT_NOFILE is 48 (hard limit 48): about 37 connections can be open at once",
		"accept: too many open files (EMFILE: the process's RLIMIT_NOFILE of 48 is reached",
		"accepts failed for want of file descriptors",
	} {
		if !strings.Contains(srvErr.String(), want) {
			t.Errorf("net serve said %q; want %q", srvErr.String(), want)
		}
	}
}

// TestNetBenchChildrenDieWithIt: children never outlive a bench that is
// killed outright.
func TestNetBenchChildrenDieWithIt(t *testing.T) {
	cmd := exec.Command(os.Args[0], "net", "bench", "--engines", "net", "--conns", "2", "--sizes", "64",
		"--modes", "pingpong", "--duration", "1h", "--warmup", "0s")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	// Wait for the server and the load generator children.
	var kids []int
	deadline := time.Now().Add(20 * time.Second)
	for len(kids) < 2 && time.Now().Before(deadline) {
		kids = childrenOf(cmd.Process.Pid)
		time.Sleep(20 * time.Millisecond)
	}
	if len(kids) < 2 {
		t.Fatalf("children %v: want a server and a load generator", kids)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for _, pid := range kids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("child %d outlived the killed bench", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func childrenOf(pid int) []int {
	var kids []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				kids = append(kids, n)
			}
		}
	}
	return kids
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// syncBuffer is a bytes.Buffer that a child's stderr copier and the test
// may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNetBenchPerf: --perf refuses the other benchmarks, a directory that
// cannot be made and an existing profile without --force, each with one
// line and before anything runs; with --force it records the server: a
// profile per run in place of the old file, a breakdown in the JSON
// (valid against its schema) and columns in the table.
func TestNetBenchPerf(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prof")
	args := []string{"net", "bench", "--engines", "epoll", "--conns", "4", "--sizes", "64", "--modes", "pingpong",
		"--duration", "100ms", "--warmup", "0s", "--perf", dir}
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--serve-file"}, "--perf records the echo servers only; it cannot be used with --serve-file or --writev"},
		{[]string{"--writev"}, "--perf records the echo servers only"},
		{[]string{"--perf", filepath.Join(dir, "no", "such")}, "--perf: "},
	} {
		_, errOut, code := runCLIProcess(t, nil, append(slices.Clone(args), tc.extra...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q: want 2 and one line saying %q", tc.extra, code, errOut, tc.want)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, netbench.PerfName("epoll", "pingpong", 64, 4, 1))
	mine := []byte("mine, not a profile\n")
	if err := os.WriteFile(existing, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLIProcess(t, nil, args...)
	if code != 2 || !strings.Contains(errOut, existing+": already exists (use --force to overwrite)") ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("without --force: exit %d, stderr %q: want 2 and one line naming the file", code, errOut)
	}
	if b, err := os.ReadFile(existing); err != nil || !bytes.Equal(b, mine) {
		t.Fatalf("the file changed: %q, %v", b, err)
	}

	perftest.Need(t)
	out, errOut, code := runCLIProcess(t, nil, append(slices.Clone(args), "--force", "--format", "json")...)
	if code != 0 {
		t.Fatalf("with --force: exit %d: %s", code, errOut)
	}
	validate(t, "net-echo", []byte(out))
	var rep netresult.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 1 || len(rep.Points[0].Runs) != 1 {
		t.Fatalf("points %+v", rep.Points)
	}
	p := rep.Points[0]
	if r := p.Runs[0]; r.Perf == nil || r.Perf.Samples == 0 || r.PerfProfile != existing || p.Perf == nil || p.Flame == nil {
		t.Errorf("run %+v, point perf %+v: want a breakdown, a call tree and the profile %s", r, p.Perf, existing)
	}
	if b, err := os.ReadFile(existing); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("%s is not a gzipped profile: %.20q, %v", existing, b, err)
	}
	dir2 := filepath.Join(t.TempDir(), "prof2")
	out, errOut, code = runCLIProcess(t, nil, append(slices.Clone(args[:len(args)-1]), dir2)...)
	if code != 0 {
		t.Fatalf("table: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"net%", "kernel%", "recorded (--perf)", "server process only"} {
		if !strings.Contains(out, want) {
			t.Errorf("table without %q:\n%s", want, out)
		}
	}
}
