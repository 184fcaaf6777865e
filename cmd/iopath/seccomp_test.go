package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/seccomptest"
)

// runDenied runs the iopath command in a process of its own
// (runCLIProcess) under a seccomp filter that forbids call: TestMain
// installs it (seccomptest.Install) before the command runs.
func runDenied(t *testing.T, call string, args ...string) (string, string, int) {
	t.Helper()
	return runCLIProcess(t, []string{seccomptest.ChildEnv + "=1", seccomptest.DenyEnv + "=" + call}, args...)
}

// With a seccomp filter that forbids one of io_uring's three system
// calls, every command says io_uring is unavailable and names the call:
// features reports it, cat falls back to pread and says why, net serve
// fails with that reason (not a missing opcode).
func TestIOURingForbiddenCLI(t *testing.T) {
	if u := features.Probe().IOURing; !u.Available {
		t.Skipf("io_uring not supported here: %s", u.Reason)
	}
	path := filepath.Join(t.TempDir(), "data")
	data := bytes.Repeat([]byte("0123456789abcdef"), 20000)
	data = append(data, "tail"...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, call := range seccomptest.Calls() {
		t.Run(call, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := runDenied(t, call, "features")
			if code != 0 || !strings.Contains(out, "not available: EPERM: "+call) || !strings.Contains(out, "seccomp") {
				t.Errorf("features: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
			}
			out, errOut, code = runDenied(t, call, "features", "--format", "json")
			var rep features.Report
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.IOURing.Available || rep.IOURing.Syscall != call {
				t.Errorf("features --format json: exit %d, %s %s", code, out, errOut)
			}

			out, errOut, code = runDenied(t, call, "cat", "-e", "io_uring", "--bs", "4k", "--workers", "2", path)
			if code != 0 || out != string(data) {
				t.Errorf("cat -e io_uring: exit %d, %d bytes of %d; stderr %s", code, len(out), len(data), errOut)
			}
			if !strings.Contains(errOut, "falling back to pread") || !strings.Contains(errOut, call) {
				t.Errorf("cat -e io_uring does not say it fell back and why: %q", errOut)
			}

			out, errOut, code = runDenied(t, call, "net", "serve", "-e", "io_uring", "--addr", "127.0.0.1:0")
			if code != 1 || !strings.Contains(errOut, call) || strings.Contains(errOut, "lacks") ||
				strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("net serve -e io_uring: exit %d, stdout %q, stderr %q; want exit 1 and one line naming %s", code, out, errOut, call)
			}
		})
	}
}
