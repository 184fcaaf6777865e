package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/bench"
)

// TestBenchAppend: a short run of every method with one and four
// writers: every row made durable records and read them all back, the
// os.File methods synced once a record and a Log at most once (never
// more commits than records); the JSON, the table, the HTML page and a
// comparison of two reports come from the one run, and nothing is left
// in --dir.
func TestBenchAppend(t *testing.T) {
	dir := t.TempDir()
	out := t.TempDir()
	js, page := filepath.Join(out, "a.json"), filepath.Join(out, "a.html")
	table, errOut, code := runCLI("bench", "--append", "--duration", "200ms", "--writers", "1,4", "--runs", "1",
		"--dir", dir, "--json", js, "--html", page)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "append", b)
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Kind() != bench.KindAppend || len(rep.Results) != 2*len(bench.AppendMethods()) {
		t.Fatalf("kind %q, %d rows", rep.Kind(), len(rep.Results))
	}
	for _, r := range rep.Results {
		name := r.Engine + " ×" + itoa(r.Workers)
		if r.Error != "" {
			if r.Engine == bench.AppendLogURing && strings.Contains(r.Error, "not supported") {
				t.Logf("%s: %s", name, r.Error)
				continue
			}
			t.Errorf("%s: %s", name, r.Error)
			continue
		}
		run := r.Runs[0]
		if run.Blocks <= 0 || r.IOPS <= 0 || r.ChecksumOK == nil || !*r.ChecksumOK {
			t.Errorf("%s: %d records, %.0f/s, checksum_ok %v", name, run.Blocks, r.IOPS, r.ChecksumOK)
		}
		switch r.Engine {
		case bench.AppendFileFsync, bench.AppendFileFdatasync:
			if r.SyncsPerRecord != 1 {
				t.Errorf("%s: %.3f syncs a record, want 1", name, r.SyncsPerRecord)
			}
		default:
			if r.SyncsPerRecord > 1 || run.Syncs > run.Blocks || run.Syncs < 1 {
				t.Errorf("%s: %d commits for %d records", name, run.Syncs, run.Blocks)
			}
		}
		if !strings.Contains(table, r.Engine) {
			t.Errorf("the table has no row %s:\n%s", r.Engine, table)
		}
	}
	for _, want := range []string{"1 writer", "4 writers", "records/s", "fsyncs/record", "CPU µs/record", "vs file+fsync", "P99.9"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table does not say %q:\n%s", want, table)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("left in --dir: %v", left)
	}
	h, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(h), `data-chart="append-records-per-s"`) {
		t.Errorf("the HTML page has no records/s chart (%v)", err)
	}
	// compare reads two append reports.
	js2 := filepath.Join(out, "b.json")
	if err := os.WriteFile(js2, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmp, errOut, code := runCLI("compare", js, js2)
	if code != 0 || !strings.Contains(cmp, "log/pwrite") {
		t.Errorf("compare: exit %d: %s\n%s", code, errOut, cmp)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestBenchAppendUsage: bad flags are one line and exit status 2,
// before anything runs.
func TestBenchAppendUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"writers 0", []string{"--writers", "0"}, "--writers 0"},
		{"writers not a number", []string{"--writers", "x"}, "not a whole number"},
		{"writers twice", []string{"--writers", "8,8"}, "named twice"},
		{"writers too many", []string{"--writers", "100000"}, "--writers 100000"},
		{"duration 0", []string{"--duration", "0"}, "--duration 0s"},
		{"duration negative", []string{"--duration", "-1s"}, "--duration -1s"},
		{"FILE", []string{file}, "takes no FILE"},
		{"rw write", []string{"--rw", "write"}, "--rw cannot be used with --append"},
		{"tree", []string{"--tree"}, "--tree cannot be used with --append"},
		{"workers", []string{"--workers", "4"}, "--writers, not --workers"},
		{"min-time", []string{"--min-time", "1s"}, "--duration, not --min-time"},
		{"record too small", []string{"--size", "8"}, "--size 8B"},
		{"record too large", []string{"--size", "1GiB"}, "--size 1GiB"},
		{"method", []string{"--engines", "pread"}, `unknown append method "pread"`},
		{"runs", []string{"--runs", "0"}, "--runs 0"},
		{"format", []string{"--format", "xml"}, "--format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--append", "--dir", t.TempDir()}, tc.args...)
			out, errOut, code := runCLI(args...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "iopath: ") || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q, want 2 and one line with %q", code, errOut, tc.want)
			}
			if out != "" {
				t.Errorf("stdout %q", out)
			}
		})
	}
	// --writers and --duration belong to --append.
	for flag, v := range map[string]string{"--writers": "1", "--duration": "1s"} {
		_, errOut, code := runCLI("bench", file, flag, v)
		if code != 2 || !strings.Contains(errOut, flag+" applies to --append") {
			t.Errorf("bench FILE %s: exit %d, %q", flag, code, errOut)
		}
	}
	// A missing --dir is an error of the operation, not of usage.
	_, errOut, code := runCLI("bench", "--append", "--dir", filepath.Join(t.TempDir(), "missing"))
	if code != 1 || strings.Count(errOut, "\n") != 1 {
		t.Errorf("missing --dir: exit %d, %q", code, errOut)
	}
}

// TestInterruptBenchAppend: Ctrl-C in the middle of an append run stops
// within a second and leaves no file in $TMPDIR (the default --dir).
func TestInterruptBenchAppend(t *testing.T) {
	p := startCLIProc(t, nil, nil, "bench", "--append", "--writers", "4", "--duration", "10s", "--runs", "100")
	p.waitFor("an append run's file", func() bool { return hasChild(p.cmd.Process.Pid) && len(listTree(p.tmp)) > 0 })
	p.checkInterrupted(p.interrupt(false), "interrupted")
}
