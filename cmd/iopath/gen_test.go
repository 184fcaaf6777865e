package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCLI runs iopath with args and returns its exit code, stdout and stderr.
func runGenCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	code = exitCode(err, &errb)
	return code, out.String(), errb.String()
}

func TestGenCLI(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	code, stdout, stderr := runGenCLI(t, "gen", path, "--size", "4k", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 4096 {
		t.Fatalf("stat: %v %v", st, err)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	// Not a terminal: no bar, one summary line.
	re := regexp.MustCompile(`^wrote 4KiB to ` + regexp.QuoteMeta(path) + ` in [0-9.]+(s|ms|µs)( \([0-9.]+ (GiB|MiB)/s\))?\n$`)
	if !re.MatchString(stderr) {
		t.Errorf("stderr %q does not match %s", stderr, re)
	}

	// An existing file: exit 1, one line, the file untouched.
	before, _ := os.ReadFile(path)
	code, _, stderr = runGenCLI(t, "gen", path, "--size", "8k")
	want := "iopath: gen " + path + ": already exists (use --force to overwrite)\n"
	if code != 1 || stderr != want {
		t.Errorf("existing file: exit %d, stderr %q; want exit 1, %q", code, stderr, want)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("existing file was changed")
	}

	code, _, stderr = runGenCLI(t, "gen", path, "--size", "8k", "--force")
	if st, _ := os.Stat(path); code != 0 || st.Size() != 8192 {
		t.Errorf("--force: exit %d, stderr %q", code, stderr)
	}

	// A directory is refused even with --force.
	code, _, stderr = runGenCLI(t, "gen", dir, "--size", "4k", "--force")
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "is a directory") {
		t.Errorf("directory: exit %d, stderr %q", code, stderr)
	}
}

func TestGenCLISizes(t *testing.T) {
	for _, tc := range []struct {
		size string
		want int64
	}{{"0", 0}, {"1", 1}, {"4097", 4097}, {"128KiB", 128 << 10}, {"1.5m", 3 << 19}} {
		t.Run(tc.size, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			code, _, stderr := runGenCLI(t, "gen", path, "--size", tc.size)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if st, err := os.Stat(path); err != nil || st.Size() != tc.want {
				t.Fatalf("size %v, want %d (%v)", st.Size(), tc.want, err)
			}
		})
	}
}

func TestGenCLIUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	for _, args := range [][]string{
		{"gen"},
		{"gen", path, "other"},
		{"gen", path, "--size", "-1"},
		{"gen", path, "--size", "lots"},
		{"gen", path, "--size", "1e30"},
		{"gen", path, "--size", "9999999TiB"},
		{"gen", path, "--seed", "-3"},
		{"gen", path, "--bogus"},
		{"gen", ""},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := runGenCLI(t, args...)
			if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "iopath: ") {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line", code, stderr)
			}
			if _, err := os.Stat(path); err == nil {
				t.Error("a file was written")
			}
		})
	}
}

func TestGenCLICancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	err := run(ctx, []string{"gen", path, "--size", "64MiB"}, strings.NewReader(""), &out, &errb)
	if code := exitCode(err, &errb); code != 1 || !strings.Contains(errb.String(), "partial file removed") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("partial file left: %v", err)
	}
}
