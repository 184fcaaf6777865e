package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/bench"
)

// An interrupted bench prints every row it planned: those it did not run
// say so (table) or carry "error": "interrupted" (JSON), never zeros, and
// the exit status is not 0.
func TestBenchInterrupted(t *testing.T) {
	path := benchFile(t, 1<<20)
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			// Each run's profile is registered as it is made: the
			// interrupt comes as the second run starts.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			watchTemps(t, func(p string) {
				if strings.HasSuffix(p, ".tmp") && strings.Contains(p, "pprof") {
					if n++; n == 2 {
						cancel()
					}
				}
			})
			var stdout, stderr bytes.Buffer
			err := run(ctx, []string{"bench", path, "--runs", "1", "--min-time", "0", "--engines", "pread,read",
				"--cache", "warm,cold", "--profile", filepath.Join(t.TempDir(), "prof"), "--format", format},
				strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err, &stderr); code == 0 || !strings.Contains(stderr.String(), "interrupted") {
				t.Fatalf("exit %d, stderr %q; want a failure saying it was interrupted", code, stderr.String())
			}
			out := stdout.String()
			if format == "table" {
				if c := strings.Count(out, "not run (interrupted)"); c != 3 || strings.Contains(out, " 0.00 ") {
					t.Errorf("%d rows say not run (want 3 of 4), or a row shows zeros:\n%s", c, out)
				}
				return
			}
			var rep bench.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if !rep.Interrupted || len(rep.Results) != 4 {
				t.Fatalf("interrupted %v, %d rows; want true and 4", rep.Interrupted, len(rep.Results))
			}
			for i, r := range rep.Results[1:] {
				if r.Error != "interrupted" || len(r.Runs) != 0 {
					t.Errorf("row %d: error %q, %d runs", i+1, r.Error, len(r.Runs))
				}
			}
		})
	}
}

// A run in which nothing could be measured fails, and says why.
func TestBenchNothingMeasured(t *testing.T) {
	path := benchFile(t, 1<<20)
	t.Setenv("IOPATH_DISABLE_IO_URING", "1")
	_, errOut, code := runCLI("bench", path, "--engines", "io_uring", "--runs", "1", "--min-time", "0")
	if code != 1 || !strings.HasSuffix(errOut, "nothing could be measured: io_uring: io_uring is not supported: disabled by IOPATH_DISABLE_IO_URING=1\n") {
		t.Errorf("exit %d, stderr %q; want 1 and why", code, errOut)
	}
	dir := filepath.Join(t.TempDir(), "tree")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644)
	_, errOut, code = runCLI("bench", "--tree", dir, "--engines", "io_uring", "--runs", "1", "--min-time", "0")
	if code != 1 || !strings.Contains(errOut, "nothing could be measured: io_uring: ") {
		t.Errorf("--tree: exit %d, stderr %q; want 1 and why", code, errOut)
	}
}
