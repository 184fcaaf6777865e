package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/enginetest"
	"github.com/iopath/iopath/fio"
	"github.com/iopath/iopath/gen"
)

// faultyEnv makes the test binary register an engine that fails half-way
// through every run. Only processes started with it set (see
// runCLIProcess) have the engine, so it never shows among the default
// engines of the other tests.
const faultyEnv = "IOPATH_TEST_FAULTY"

// cliEnv makes the test binary act as the iopath command (see TestMain).
const cliEnv = "IOPATH_TEST_CLI"

func init() {
	if os.Getenv(faultyEnv) == "1" {
		pread, _ := engine.Lookup("pread")
		engine.Register(enginetest.FailAfter(pread, "test-midway", 256<<10, errors.New("injected failure midway")))
	}
}

// runCLIProcess runs the iopath command in a process of its own, with env
// added to its environment.
func runCLIProcess(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), cliEnv+"=1"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func benchFile(t *testing.T, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := gen.File(context.Background(), path, size, gen.Options{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// An engine that breaks mid-run: the JSON on stdout is still whole and
// valid, its row carries the error, and the exit status says it failed.
func TestBenchJSONWhenAnEngineFails(t *testing.T) {
	path := benchFile(t, 1<<20)
	out, errOut, code := runCLIProcess(t, []string{faultyEnv + "=1"}, "bench", path, "--runs", "1", "--cache", "warm", "--min-time", "0",
		"--engines", "pread,test-midway,mmap", "--format", "json")
	if code != 1 || !strings.Contains(errOut, "injected failure midway") {
		t.Errorf("exit %d, stderr %q: want 1 naming the failure", code, errOut)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not valid JSON: %v\n%s", err, out)
	}
	if len(rep.Results) != 3 || !strings.Contains(rep.Results[1].Error, "injected failure midway") ||
		rep.Results[0].Error != "" || rep.Results[2].Error != "" {
		t.Errorf("rows: %+v", rep.Results)
	}
}

func TestBenchSweepFormats(t *testing.T) {
	path := benchFile(t, 1<<20)
	args := []string{"bench", path, "--runs", "1", "--cache", "warm", "--min-time", "0",
		"--engines", "pread,io_uring", "--bs", "4k,64k", "--qd", "1,8", "--consume", "none"}
	html := filepath.Join(t.TempDir(), "r.html")
	out, errOut, code := runCLI(append(args, "--format", "csv", "--html", html)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("csv: %v\n%s", err, out)
	}
	// pread: 2 block sizes; io_uring: 2 × 2.
	if len(recs) != 1+6 {
		t.Errorf("%d csv lines, want a header and 6 rows:\n%s", len(recs), out)
	}
	page, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(page, []byte("<svg")) || !strings.Contains(errOut, "wrote "+html) {
		t.Errorf("--html: %v, stderr %q", err, errOut)
	}
	for _, f := range []struct{ format, want string }{
		{"markdown", "| engine"},
		{"gobench", "BenchmarkFile/engine=pread/cache=warm/pattern=seq/bs=64KiB/"},
		{"table", "io_uring qd8"},
		{"table --wide", " syscalls "},
	} {
		format, wide := strings.CutSuffix(f.format, " --wide")
		a := append(slices.Clip(args), "--format", format)
		if wide {
			a = append(a, "--wide")
		}
		out, errOut, code := runCLI(a...)
		if code != 0 || !strings.Contains(out, f.want) {
			t.Errorf("--format %s: exit %d (%s), output lacks %q:\n%s", f.format, code, errOut, f.want, out)
		}
	}
}

func TestBenchFio(t *testing.T) {
	if _, err := fio.Find(); err != nil {
		t.Skipf("%v (CI installs it)", err)
	}
	path := benchFile(t, 2<<20)
	out, errOut, code := runCLI("bench", path, "--runs", "1", "--cache", "warm", "--min-time", "0",
		"--engines", "pread", "--consume", "none", "--fio")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"fio psync", "vs fio", "fio-3"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchFioMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	path := benchFile(t, 1<<20)
	out, errOut, code := runCLI("bench", path, "--runs", "1", "--cache", "warm", "--min-time", "0",
		"--engines", "pread", "--fio")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "install") || !strings.Contains(errOut, "going on without fio") {
		t.Errorf("stderr does not say how to install fio: %q", errOut)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "apt-get install fio") || strings.Contains(out, "fio psync") {
		t.Errorf("report:\n%s", out)
	}
}

func TestBenchProfile(t *testing.T) {
	path := benchFile(t, 1<<20)
	// "prof/" as the README and --help write it: the directory is made.
	dir := filepath.Join(t.TempDir(), "prof")
	out, errOut, code := runCLI("bench", path, "--runs", "1", "--cache", "warm", "--min-time", "0",
		"--engines", "pread", "--profile", dir+"/", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || !strings.HasSuffix(ents[0].Name(), ".pprof") {
		t.Fatalf("profiles: %v %v", ents, err)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0].Runs[0].Profile; got != filepath.Join(dir, ents[0].Name()) {
		t.Errorf("the report names the profile %q, want %q", got, filepath.Join(dir, ents[0].Name()))
	}
	// Only a directory's own parent is required: a missing one is said.
	_, errOut, code = runCLI("bench", path, "--runs", "1", "--engines", "pread", "--profile", filepath.Join(dir, "a", "b"))
	if code != 2 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("--profile under a missing directory: exit %d, %q", code, errOut)
	}
}

func TestBenchReportUsageErrors(t *testing.T) {
	dir := t.TempDir()
	data := benchFile(t, 1<<20)
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)
	for _, args := range [][]string{
		{"bench", data, "--html", data}, // would destroy the file measured
		{"bench", data, "--profile", notDir},
		{"bench", data, "--fio", "--consume", "checksum"},
		{"bench", "--bs", "4k,4k"},
		{"bench", "--bs", ","},
		{"bench", "--qd", "1,x"},
		{"bench", "--workers", "1,-2"},
		{"bench", "--format", "html"},
		{"bench", "--html", dir},
		{"bench", "--html", filepath.Join(dir, "missing", "r.html")},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, errOut, code := runCLI(args...)
			if code != 2 || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line", code, errOut)
			}
		})
	}
	if b, err := os.ReadFile(data); err != nil || len(b) != 1<<20 {
		t.Errorf("the measured file was touched: %d bytes, %v", len(b), err)
	}
}
