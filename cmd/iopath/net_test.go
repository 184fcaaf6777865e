package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/filesrv"
	"github.com/iopath/iopath/netio/load"
	"github.com/iopath/iopath/netio/netbench"
	"github.com/iopath/iopath/netio/writev"
)

func TestNetBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"net", "serve", "-e", "carrier-pigeon"},
		{"net", "serve", "--addr", "nonsense"},
		{"net", "serve", "--drain", "-1s"},
		{"net", "serve", "--max-conns", "0"},
		{"net", "serve", "--buf-size", "1TiB"},
		{"net", "serve", "-e", "epoll", "--sqpoll"},
		{"net", "serve", "extra"},
		{"net", "load", "--mode", "pipeline:0"},
		{"net", "load", "--mode", "sideways"},
		{"net", "load", "--addr", "nohost"},
		{"net", "load", "--conns", "0"},
		{"net", "load", "--conns", "5000000"},
		{"net", "load", "--size", "0"},
		{"net", "load", "--duration", "0s"},
		{"net", "load", "--format", "xml"},
		{"net", "bench", "--format", "xml"},
		{"net", "bench", "--engines", "carrier-pigeon"},
		{"net", "bench", "--conns", "0"},
		{"net", "bench", "--modes", "pipeline:x"},
		{"net", "bench", "--runs", "0"},
		{"net", "bench", "--duration", "1ns"},
		{"net", "bench", "--serve-file", "--writev"},
		{"net", "bench", "--serve-file", "--format", "csv"},
		{"net", "bench", "--serve-file", "--file-sizes", "0"},
		{"net", "bench", "--writev", "--parts", "0"},
		{"net", "bench", "--writev", "--runs", "0"},
		{"net", "load", "--client", "carrier-pigeon"},
		{"net", "load", "--client", "epoll", "--mode", "stream"},
	} {
		_, errOut, code := runCLI(args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
		if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines != 0 || !strings.HasPrefix(errOut, "iopath: ") {
			t.Errorf("%v: want one line starting \"iopath: \", got %q", args, errOut)
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
			var r load.Result
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
			if !strings.Contains(srvErr.String(), "served ") {
				t.Errorf("net serve printed no summary: %q", srvErr.String())
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
		"--modes", "pingpong,stream", "--duration", "150ms", "--warmup", "50ms", "--runs", "2",
		"--format", "json", "--html", html)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep netbench.Report
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
	var rs []filesrv.Result
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	want := len(filesrv.Methods())
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
		if !r.Verified || r.GBps <= 0 || r.CPUSecPerGB <= 0 || r.ProcessCPU <= 0 {
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
	for _, way := range writev.Ways() {
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

// TestNetServeSecondSignal: a second SIGTERM cuts a long drain short.
func TestNetServeSecondSignal(t *testing.T) {
	srv, addr, srvErr := startServeProcess(t, nil, "-e", "net", "--drain", "1h")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // open through the drain: only the second signal ends it
	srv.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(srvErr.String(), "draining") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	srv.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v: %s", err, srvErr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a second SIGTERM did not end the drain")
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
