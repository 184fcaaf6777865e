package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/iopath/iopath/netio"
)

// Every file a command writes for the user follows one rule (output.go):
// an existing path is refused with one line and exit status 2 unless
// --force is given, and the file is written beside it and renamed into
// place only when complete.

// outputCase is one command that writes an output file.
type outputCase struct {
	name   string
	out    func(dir string) string                      // the output file, in dir
	args   func(t *testing.T, dir, out string) []string // the command, without --force
	inProc bool                                         // runs in this process (else a child process)
}

// outputCases are the commands that write files, each made as small and
// quick as it goes.
func outputCases() []outputCase {
	benchArgs := func(t *testing.T, dir string) []string {
		return []string{"bench", benchFile(t, 1<<20), "--runs", "1", "--cache", "warm", "--min-time", "0", "--engines", "pread"}
	}
	return []outputCase{
		{name: "pack -o", inProc: true,
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				tree, _ := packTestTree(t)
				return []string{"pack", tree, "-o", out, "--zstd"}
			}},
		{name: "bench --html", inProc: true,
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				return append(benchArgs(t, dir), "--html", out)
			}},
		{name: "bench --profile", inProc: true,
			out: func(dir string) string { return filepath.Join(dir, "prof", "pread-warm-seq-bs128KiB-w1-run1.pprof") },
			args: func(t *testing.T, dir, out string) []string {
				return append(benchArgs(t, dir), "--profile", filepath.Dir(out)+"/")
			}},
		{name: "compare --html", inProc: true,
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				oldPath, newPath := writeCompareReports(t, t.TempDir())
				return []string{"compare", oldPath, newPath, "--html", out}
			}},
		{name: "gen FILE", inProc: true,
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				return []string{"gen", out, "--size", "3MiB"}
			}},
		{name: "bench --json", inProc: true,
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				return append(benchArgs(t, dir), "--json", out)
			}},
		{name: "net load --json", inProc: true,
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				s, err := netio.Listen("epoll", netio.Config{Loops: 1})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return []string{"net", "load", "--addr", s.Addr().String(), "--conns", "2", "--duration", "100ms", "--warmup", "0s", "--json", out}
			}},
		{name: "net bench --writev --json",
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				return []string{"net", "bench", "--writev", "--parts", "2", "--runs", "1", "--json", out}
			}},
		{name: "net bench --json",
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				return []string{"net", "bench", "--engines", "net", "--conns", "2", "--sizes", "64", "--modes", "pingpong",
					"--duration", "100ms", "--warmup", "20ms", "--runs", "1", "--json", out}
			}},
		{name: "net bench --html",
			out: func(dir string) string { return filepath.Join(dir, "notes.txt") },
			args: func(t *testing.T, dir, out string) []string {
				return []string{"net", "bench", "--engines", "net", "--conns", "2", "--sizes", "64", "--modes", "pingpong",
					"--duration", "100ms", "--warmup", "20ms", "--runs", "1", "--html", out}
			}},
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// noTemps fails if dir holds a temporary file of outfile's (".NAME.*.tmp").
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// watchTemps records every path the commands register with the cleanup
// set, and calls then (if set) as each is registered.
func watchTemps(t *testing.T, then func(path string)) func() []string {
	var mu sync.Mutex
	var seen []string
	cleanups.mu.Lock()
	cleanups.added = func(p string) {
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
		if then != nil {
			then(p)
		}
	}
	cleanups.mu.Unlock()
	t.Cleanup(func() {
		cleanups.mu.Lock()
		cleanups.added = nil
		cleanups.mu.Unlock()
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestOutputFileRule(t *testing.T) {
	for _, tc := range outputCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := tc.out(dir)
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				t.Fatal(err)
			}
			const mine = "mine: notes nobody may overwrite\n"
			if err := os.WriteFile(out, []byte(mine), 0o644); err != nil {
				t.Fatal(err)
			}
			before := fileHash(t, out)
			args := tc.args(t, dir, out)
			runIt := func(args ...string) (string, int) {
				if tc.inProc {
					_, errOut, code := runCLI(args...)
					return errOut, code
				}
				_, errOut, code := runCLIProcess(t, nil, args...)
				return errOut, code
			}

			// Without --force: refused at once, one line, untouched.
			errOut, code := runIt(args...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "iopath: ") ||
				!strings.Contains(errOut, "already exists (use --force to overwrite)") || !strings.Contains(errOut, out) {
				t.Fatalf("over an existing file without --force: exit %d, stderr %q; want 2 and one line naming it", code, errOut)
			}
			if fileHash(t, out) != before {
				t.Fatal("the refused command changed the existing file")
			}
			noTemps(t, filepath.Dir(out))

			// With --force: replaced, by way of a temporary file beside it
			// that is gone afterwards.
			seen := watchTemps(t, nil)
			errOut, code = runIt(append(args, "--force")...)
			if code != 0 {
				t.Fatalf("with --force: exit %d: %s", code, errOut)
			}
			if b, _ := os.ReadFile(out); string(b) == mine || len(b) == 0 {
				t.Fatalf("with --force the file holds %q", b)
			}
			noTemps(t, filepath.Dir(out))
			if tc.inProc {
				beside := false
				for _, p := range seen() {
					beside = beside || (filepath.Dir(p) == filepath.Dir(out) && strings.HasPrefix(filepath.Base(p), "."+filepath.Base(out)+"."))
				}
				if !beside {
					t.Errorf("no temporary file beside %s was written (registered: %q)", out, seen())
				}
			}
		})
	}
}

// An interrupt while the output is being written leaves the old file as it
// was and no temporary file: the interrupt comes the moment the temporary
// file exists.
func TestOutputFileInterrupted(t *testing.T) {
	for _, tc := range outputCases() {
		switch tc.name {
		case "bench --html", "compare --html", "net bench --html",
			"bench --json", "net load --json", "net bench --json", "net bench --writev --json":
			// Written from a finished report in one go; the writer they
			// share is pack's.
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := tc.out(dir)
			os.MkdirAll(filepath.Dir(out), 0o755)
			os.WriteFile(out, []byte("mine\n"), 0o644)
			before := fileHash(t, out)
			args := append(tc.args(t, dir, out), "--force")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := watchTemps(t, func(p string) {
				if filepath.Dir(p) == filepath.Dir(out) {
					cancel()
				}
			})
			var stdout, stderr bytes.Buffer
			err := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
			if code := exitCode(err, &stderr); code == 0 {
				t.Fatalf("interrupted, yet exit 0: %s", stderr.String())
			}
			if ctx.Err() == nil {
				t.Fatalf("no temporary file beside %s was made (registered: %q)", out, seen())
			}
			if fileHash(t, out) != before {
				t.Error("the interrupted command changed the existing file")
			}
			noTemps(t, filepath.Dir(out))
		})
	}
}

// TestCheckOutputFileUnwritable: a file that cannot be made where it is
// named is refused before anything runs, naming the path and the cause,
// and the probe leaves nothing behind.
func TestCheckOutputFileUnwritable(t *testing.T) {
	err := checkOutputFile("/proc/iopath-x.json", false)
	if err == nil || !strings.Contains(err.Error(), "/proc/iopath-x.json: cannot be written in /proc") {
		t.Errorf("under /proc: %v", err)
	}
	dir := t.TempDir()
	if err := checkOutputFile(filepath.Join(dir, "r.json"), false); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the check left %d files in %s", len(ents), dir)
	}
}
