package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/iopath/iopath/gen"
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

	// An existing file: exit 2 (as for every output file), one line, the
	// file untouched.
	before, _ := os.ReadFile(path)
	code, _, stderr = runGenCLI(t, "gen", path, "--size", "8k")
	want := "iopath: gen " + path + ": already exists (use --force to overwrite)\n"
	if code != 2 || stderr != want {
		t.Errorf("existing file: exit %d, stderr %q; want exit 2, %q", code, stderr, want)
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
	if code := exitCode(err, &errb); code != 1 || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("partial file left: %v", err)
	}
}

func TestGenTreeCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	stdout, stderr, code := runCLI("gen", "--tree", dir, "--files", "2000", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	// Not a terminal: no bar, one summary line.
	re := regexp.MustCompile(`^wrote 2000 files \(7\.8MiB, sizes 4KiB\) in ` + regexp.QuoteMeta(dir) + ` in [0-9.]+(s|ms|µs)\n$`)
	if !re.MatchString(stderr) {
		t.Errorf("stderr %q does not match %s", stderr, re)
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != gen.TreeMarker {
			if st, _ := d.Info(); st.Size() != 4096 {
				t.Errorf("%s: %d bytes", path, st.Size())
			}
			files++
		}
		return err
	})
	if files != 2000 {
		t.Errorf("%d files", files)
	}
	sample := filepath.Join(dir, "17", "file-1742.dat")
	before, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}

	// Again with the same flags: rewritten, the same bytes.
	_, stderr, code = runCLI("gen", "--tree", dir, "--files", "2000", "--seed", "3", "--size", "4k")
	if code != 0 || !strings.HasPrefix(stderr, "rewrote 2000 files (7.8MiB, sizes 4KiB) in ") {
		t.Errorf("again: exit %d, stderr %q", code, stderr)
	}
	if after, _ := os.ReadFile(sample); !bytes.Equal(before, after) {
		t.Error("the same seed gave other bytes")
	}

	// Other flags: refused (exit 1, one line), nothing changed.
	_, stderr, code = runCLI("gen", "--tree", dir, "--files", "2000", "--seed", "4")
	want := "iopath: gen " + dir + ": holds a tree made with other parameters (files=2000 size=4KiB seed=3 fanout=100); use the same parameters to regenerate it, or another directory\n"
	if code != 1 || stderr != want {
		t.Errorf("other seed: exit %d, stderr\n%q, want\n%q", code, stderr, want)
	}
	if after, _ := os.ReadFile(sample); !bytes.Equal(before, after) {
		t.Error("a refused run changed the tree")
	}
}

func TestGenTreeCLIDistributions(t *testing.T) {
	for _, tc := range []struct {
		size, summary string
		lo, hi        int64
	}{
		{"1", "sizes 1B", 1, 1},
		{"4097", "sizes 4097B", 4097, 4097},
		{"1KiB-8KiB", "sizes 1KiB-8KiB", 1 << 10, 8 << 10},
		{"lognormal", "sizes lognormal:8KiB", 1, gen.MaxLogNormalSize},
		{"lognormal:2k", "sizes lognormal:2KiB", 1, gen.MaxLogNormalSize},
	} {
		t.Run(tc.size, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tree")
			_, stderr, code := runCLI("gen", "--tree", dir, "--files", "300", "--size", tc.size, "--fanout", "10")
			if code != 0 || !strings.Contains(stderr, tc.summary+") in "+dir) {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					if ents, _ := os.ReadDir(path); len(ents) > 10 {
						t.Errorf("%s: %d entries, --fanout 10", path, len(ents))
					}
				} else if d.Name() != gen.TreeMarker {
					if st, _ := d.Info(); st.Size() < tc.lo || st.Size() > tc.hi {
						t.Errorf("%s: %d bytes, want [%d, %d]", path, st.Size(), tc.lo, tc.hi)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestGenTreeCLIUsage(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "tree")
	file := filepath.Join(parent, "f")
	for _, args := range [][]string{
		{"gen", file, "--tree", dir},
		{"gen", "--tree", ""},
		{"gen", "--tree", dir, "--files", "0"},
		{"gen", "--tree", dir, "--files", "-5"},
		{"gen", "--tree", dir, "--files", "10000001"},
		{"gen", "--tree", dir, "--files", "many"},
		{"gen", "--tree", dir, "--size", "0"},
		{"gen", "--tree", dir, "--size", "lots"},
		{"gen", "--tree", dir, "--size", "lognormal:"},
		{"gen", "--tree", dir, "--size", "lognormal:1GiB"},
		{"gen", "--tree", dir, "--size", "64KiB-1KiB"},
		{"gen", "--tree", dir, "--size", "0-4k"},
		{"gen", "--tree", dir, "--size", "lognormalish"},
		{"gen", "--tree", dir, "--fanout", "1"},
		{"gen", "--tree", dir, "--force"},
		{"gen", "--tree", dir, "--sync"},
		{"gen", "--tree", dir, "--seed", "-1"},
		// Far more than any disk here holds.
		{"gen", "--tree", dir, "--files", "1000000", "--size", "1TiB"},
		{"gen", "--tree", dir, "--files", "10000000", "--size", "4TiB"},
		{"gen", "--tree", dir, "--size", "4k-"},
		{"gen", file, "--files", "10"},
		{"gen", file, "--fanout", "10"},
		{"gen", file, "--size", "1KiB-4KiB"},
		{"gen", file, "--size", "lognormal"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, stderr, code := runCLI(args...)
			if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "iopath: gen") {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line", code, stderr)
			}
			for _, p := range []string{dir, file} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was made", p)
				}
			}
		})
	}
}

func TestGenTreeCLIRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.txt")
	os.WriteFile(mine, []byte("keep"), 0o644)
	_, stderr, code := runCLI("gen", "--tree", dir, "--files", "10")
	want := "iopath: gen " + dir + ": not empty, and not a tree made by iopath gen --tree (.iopath-tree is missing); refusing to write into it\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr\n%q, want\n%q", code, stderr, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("entries %v", ents)
	}
	if b, _ := os.ReadFile(mine); string(b) != "keep" {
		t.Error("the user's file changed")
	}
	// A missing parent is an error too, and is not created.
	_, stderr, code = runCLI("gen", "--tree", filepath.Join(dir, "a", "b"), "--files", "10")
	if code != 1 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("missing parent: exit %d, stderr %q", code, stderr)
	}
}

func TestGenTreeCLICancel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	err := run(ctx, []string{"gen", "--tree", dir, "--files", "2000"}, strings.NewReader(""), &out, &errb)
	if code := exitCode(err, &errb); code != 1 || !strings.Contains(errb.String(), "context canceled") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a cancelled run made %s: %v", dir, err)
	}
}

func TestGenHelp(t *testing.T) {
	stdout, _, code := runCLI("gen", "--help")
	for _, want := range []string{"--tree DIR", "--files", "lognormal:11KiB", "iopath gen --tree /var/tmp/small --files 100000 --size 4KiB", "--fanout"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("exit %d; help lacks %q:\n%s", code, want, stdout)
		}
	}
}
