package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/perf/perftest"

	"github.com/iopath/iopath/perf"
)

// bench --perf DIR: a recording per run, the breakdown in the JSON, and
// the same names refused the second time without --force.
func TestBenchPerf(t *testing.T) {
	perftest.Need(t)
	path := benchFile(t, 4<<20)
	dir := filepath.Join(t.TempDir(), "perf")
	args := []string{"bench", path, "--engines", "pread", "--cache", "warm", "--runs", "1", "--min-time", "100ms", "--perf", dir, "--perf-freq", "2000", "--format", "json"}
	out, errOut, code := runCLIProcess(t, nil, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Notes   []string `json:"notes"`
		Results []struct {
			Perf *perf.Breakdown `json:"perf"`
			Runs []struct {
				PerfProfile string `json:"perf_profile"`
			} `json:"runs"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "pread-warm-seq-bs128KiB-w1-run1.pb.gz")
	if r := rep.Results[0]; r.Perf == nil || r.Perf.Samples == 0 || r.Runs[0].PerfProfile != want {
		t.Fatalf("result %+v", r)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "recorded (--perf): perf ") || !strings.Contains(strings.Join(rep.Notes, "\n"), "cpu-clock at 2000 Hz") {
		t.Errorf("notes %q", rep.Notes)
	}
	_, errOut, code = runCLIProcess(t, nil, args...)
	if code != 2 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--force") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("over an existing recording: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCLIProcess(t, nil, append(args, "--force")...)
	if code != 0 {
		t.Errorf("with --force: exit %d, %q", code, errOut)
	}
}

// Without perf, --perf says why and how to get it, and the benchmark
// goes on without recordings.
func TestBenchPerfUnavailable(t *testing.T) {
	path := benchFile(t, 1<<20)
	dir := filepath.Join(t.TempDir(), "perf")
	out, errOut, code := runCLIProcess(t, []string{"PATH=" + t.TempDir()}, "bench", path, "--engines", "pread", "--cache", "warm", "--runs", "1",
		"--min-time", "0", "--perf", dir, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "iopath: --perf: perf cannot record here: perf is not installed (Debian: apt-get install linux-perf); going on without it") {
		t.Errorf("stderr %q", errOut)
	}
	if !strings.Contains(out, "--perf: no recordings: perf cannot record here") || strings.Contains(out, `"perf_profile"`) {
		t.Errorf("the report does not say why it has no recordings, or has some:\n%s", out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the directory %s was made, with nothing to put in it", dir)
	}
}

func TestBenchObserveFlagsBad(t *testing.T) {
	file := benchFile(t, 1<<20)
	for _, flag := range []string{"--perf", "--trace", "--profile"} {
		_, errOut, code := runCLI("bench", file, flag, filepath.Join(file, "sub"))
		if code != 2 || !strings.Contains(errOut, flag) || !strings.Contains(errOut, "not a directory") && !strings.Contains(errOut, "does not exist") {
			t.Errorf("%s under a file: exit %d, %q", flag, code, errOut)
		}
	}
	for _, f := range []string{"0", "-5", "100000000"} {
		_, errOut, code := runCLI("bench", file, "--perf", t.TempDir(), "--perf-freq", f)
		if code != 2 || !strings.Contains(errOut, "--perf-freq "+f+": want 1 to") {
			t.Errorf("--perf-freq %s: exit %d, %q", f, code, errOut)
		}
	}
	_, errOut, code := runCLI("bench", "--append", "--perf", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "--perf") {
		t.Errorf("--append --perf: exit %d, %q", code, errOut)
	}
}

// Ctrl-C during bench --perf: the command stops within a second and
// leaves no perf process, no recorded child, no temporary directory and
// no partial file; so does a second Ctrl-C that ends it at once.
func TestBenchPerfInterrupted(t *testing.T) {
	perftest.Need(t)
	path := benchFile(t, 8<<20)
	for _, signals := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d signals", signals), func(t *testing.T) {
			tmp := t.TempDir() // the recordings' TMPDIR, this test's alone
			dir := filepath.Join(t.TempDir(), "perf")
			cmd := exec.Command(os.Args[0], "bench", path, "--engines", "pread", "--cache", "warm", "--runs", "3",
				"--min-time", "10s", "--perf", dir)
			cmd.Env = append(os.Environ(), cliEnv+"=1", "TMPDIR="+tmp)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			deadline := time.Now().Add(20 * time.Second)
			for len(testenv.ProcsMentioning(filepath.Join(tmp, "iopath-perf-"))) < 2 { // perf and the recorded child
				if time.Now().After(deadline) {
					t.Fatalf("no recording started: %s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			for range signals {
				cmd.Process.Signal(syscall.SIGINT)
				time.Sleep(150 * time.Millisecond) // past signalEcho
			}
			cmd.Wait()
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("stopping took %v", d)
			}
			checkNoPerfLeft(t, tmp, dir)
		})
	}
}

// checkNoPerfLeft fails t when a recording outlived its command: a perf
// or a recorded child whose recording is in tmp (the command's TMPDIR),
// a file in tmp, or a file in the --perf directory dir.
func checkNoPerfLeft(t *testing.T, tmp, dir string) {
	t.Helper()
	testenv.WaitNoProcs(t, filepath.Join(tmp, "iopath-perf-"))
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("temporary files left in TMPDIR: %v", ents)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left in the --perf directory: %v", ents)
	}
}
