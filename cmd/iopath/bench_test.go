package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/testenv"
)

func TestMain(m *testing.M) {
	if !bench.IsChild() && os.Getenv(cliEnv) != "1" {
		// The test process itself; its children (the command, bench's
		// children) inherit the setting, or the one a test gives them.
		testenv.NoMachineProfile()
	}
	testenv.NoRaceExitSleep()
	// Started under a seccomp filter by a test (seccomp_test.go): forbid
	// what it says before anything runs.
	seccomptest.Install()
	if bench.IsChild() || os.Getenv(cliEnv) == "1" {
		// This test binary was started as the iopath command (by
		// runCLIProcess) or as its benchmark child (by `iopath bench`):
		// it runs as main does, signals and exit status included.
		if d, err := time.ParseDuration(os.Getenv(stopGraceEnv)); err == nil {
			stopGrace = d
		}
		os.Exit(mainCode(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

func TestBenchJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	if err := gen.File(context.Background(), path, 4<<20+3, gen.Options{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI("bench", path, "--runs", "2", "--cache", "warm,cold", "--min-time", "0",
		"--engines", "read,pread,readv,mmap,io_uring,null", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if !strings.HasPrefix(rep.Command, "iopath bench "+path+" ") || !strings.Contains(rep.Command, "--runs=2") {
		t.Errorf("command %q does not say what was run", rep.Command)
	}
	if rep.Machine.Kernel == "" || rep.File.SizeBytes != 4<<20+3 {
		t.Errorf("header: %+v", rep)
	}
	if len(rep.Results) != 12 {
		t.Fatalf("%d results, want 12", len(rep.Results))
	}
	uringOK := features.Probe().IOURing
	for _, r := range rep.Results {
		if r.Engine == "io_uring" && !uringOK.Available {
			// The row must say why, and the others must still run.
			if !strings.Contains(r.Error, uringOK.Reason) {
				t.Errorf("io_uring unavailable (%s) but its row says %q", uringOK.Reason, r.Error)
			}
			continue
		}
		if r.Error != "" {
			t.Errorf("%s %s: %s", r.Engine, r.Cache, r.Error)
			continue
		}
		if r.Engine != "null" && (r.ChecksumOK == nil || !*r.ChecksumOK) {
			t.Errorf("%s %s: checksum %v", r.Engine, r.Cache, r.ChecksumOK)
		}
		if len(r.Runs) != 2 || r.BytesPerS <= 0 || r.LatP99Ns <= 0 {
			t.Errorf("%s %s: figures missing: %+v", r.Engine, r.Cache, r)
		}
	}
}

func TestBenchTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	if err := gen.File(context.Background(), path, 1<<20, gen.Options{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI("bench", path, "--runs", "1", "--cache", "warm", "--min-time", "0", "--engines", "pread,mmap")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"pread", "mmap", "warm", "GiB/s", "checksum", "ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if errOut != "" {
		t.Errorf("stderr not empty without a terminal: %q", errOut)
	}
}

func TestBenchUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"bench", "--workers", "0"},
		{"bench", "--runs", "0"},
		{"bench", "--qd", "0"},
		{"bench", "--bs", "3"},
		{"bench", "--bs", "1x"},
		{"bench", "--engines", "nope"},
		{"bench", "--engines", ","},
		{"bench", "--cache", "hot"},
		{"bench", "--consume", "eat"},
		{"bench", "--pattern", "zig"},
		{"bench", "--format", "xml"},
		{"bench", "--min-time", "-1s"},
		{"bench", "a", "b"},
		{"bench", dir, "--size", "1GiB"},
		{"bench", "--qd", "4096", "--bs", "64MiB"}, // 256GiB of buffers
		{"cat", "--bs", "0", "/etc/hostname"},
		{"cat", "--qd", "4096", "--bs", "64MiB", "-e", "io_uring", "/etc/hostname"},
		{"nosuch"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, errOut, code := runCLI(args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errOut)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "iopath: ") {
				t.Errorf("want one line starting with iopath:, got %q", errOut)
			}
		})
	}
}

// TestBenchFlagsNamed: a flag out of range, or one that does not apply
// to the kind of bench asked for, is named in the error.
func TestBenchFlagsNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--qd", "100000"}, "--qd 100000: want 1 to 4096"},
		{[]string{"bench", "--runs", "1001"}, "--runs 1001: want 1 to 1000"},
		{[]string{"bench", "--pool", "3"}, "--pool applies to --tree only"},
		{[]string{"bench", "--pack", "x.tar"}, "--pack applies to --tree only"},
		{[]string{"bench", "--files", "10"}, "--files applies to --tree only"},
		{[]string{"bench", "--tree", "--pool", "2000"}, "pool workers 2000 out of range"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, errOut, code := runCLI(tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}

func TestBenchBadFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "no such file"},
		{dir, "is a directory"},
		{empty, "empty"},
		{"/dev/null", "not a regular file: a device"},
		{fifo, "not a regular file: a named pipe"},
		// Pseudo-files: no stable size to benchmark.
		{"/proc/self/status", "no stable size to benchmark"},
		{"/proc/cpuinfo", "no stable size to benchmark"},
		{"/sys/kernel/mm/transparent_hugepage/enabled", "no stable size to benchmark"},
	} {
		_, errOut, code := runCLI("bench", tc.path, "--runs", "1")
		if code != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, tc.path) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("bench %s: exit %d, stderr %q; want exit 1 and one line naming the path and %q", tc.path, code, errOut, tc.want)
		}
	}
}

// TestBenchErrorsNameTheCommand: an error from below (a missing file)
// reads "iopath: bench: ...", like the usage errors.
func TestBenchErrorsNameTheCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, errOut, code := runCLI("bench", missing)
	if code != 1 || !strings.HasPrefix(errOut, "iopath: bench: ") || !strings.Contains(errOut, missing) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
