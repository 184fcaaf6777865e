package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/iopath/iopath/batch"
)

// packTestTree makes a small tree with a symlink pack must skip, and
// returns it and its files by relative name.
func packTestTree(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{
		"a":          []byte("alpha\n"),
		"empty":      nil,
		"sub/b":      bytes.Repeat([]byte("beta "), 1000),
		"sub/deep/c": bytes.Repeat([]byte{0, 1, 2, 3}, 40000),
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

// packReadBack reads an archive through the archive engine.
func packReadBack(t *testing.T, path string) map[string][]byte {
	t.Helper()
	e, err := batch.Lookup("archive")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	_, err = batch.Read(context.Background(), e, batch.Job{Archive: path}, func(f *batch.File) error {
		got[f.Path] = bytes.Clone(f.Data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// packNoTemp fails if a temporary file was left in dir.
func packNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestPackCLI(t *testing.T) {
	dir, files := packTestTree(t)
	for _, tc := range []struct {
		out  string
		args []string
		kind string
	}{
		{"x.tar", nil, "tar"},
		{"x.tar.zst", nil, "tar.zst"},
		{"x.tzst", []string{"--level", "fastest"}, "tar.zst"},
		{"x.pack", []string{"--zstd", "--level", "better"}, "tar.zst"},
		{"x.pack", nil, "tar"},
	} {
		t.Run(tc.out+strings.Join(tc.args, ""), func(t *testing.T) {
			outDir := t.TempDir()
			out := filepath.Join(outDir, tc.out)
			stdout, stderr, code := runCLI(append([]string{"pack", dir, "-o", out}, tc.args...)...)
			if code != 0 || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			re := regexp.MustCompile(`^packed 4 files \(161\.1KiB\) into ` + regexp.QuoteMeta(out) +
				` \(` + regexp.QuoteMeta(tc.kind) + `, [0-9.]+(B|KiB)\) in [0-9.]+(s|ms|µs); skipped 1 symlink\n$`)
			if !re.MatchString(stderr) {
				t.Errorf("summary %q, want %s", stderr, re)
			}
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if isZstd := bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd}); isZstd != (tc.kind == "tar.zst") {
				t.Errorf("zstd magic %v, want %s", isZstd, tc.kind)
			}
			if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o644 {
				t.Errorf("mode %v", fi.Mode())
			}
			got := packReadBack(t, out)
			if len(got) != len(files) {
				t.Fatalf("read back %d files, want %d", len(got), len(files))
			}
			for name, want := range files {
				if !bytes.Equal(got[name], want) {
					t.Errorf("%s: %d bytes, want %d", name, len(got[name]), len(want))
				}
			}
			packNoTemp(t, outDir)

			// Again, over the old archive: refused without --force, the
			// archive untouched; replaced with it.
			before, _ := os.ReadFile(out)
			if _, stderr, code := runCLI(append([]string{"pack", dir, "-o", out}, tc.args...)...); code != 2 || !strings.Contains(stderr, "already exists (use --force to overwrite)") {
				t.Fatalf("over an existing archive without --force: exit %d, %q; want 2 and a refusal", code, stderr)
			}
			if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
				t.Fatal("the refused pack changed the existing archive")
			}
			if _, stderr, code := runCLI(append([]string{"pack", dir, "-o", out, "--force"}, tc.args...)...); code != 0 {
				t.Fatalf("overwriting with --force: exit %d: %s", code, stderr)
			}
			packNoTemp(t, outDir)
		})
	}
}

func TestPackCLIErrors(t *testing.T) {
	dir, _ := packTestTree(t)
	other := t.TempDir()
	out := filepath.Join(other, "x.tar")
	link := filepath.Join(other, "link-into-dir")
	if err := os.Symlink(filepath.Join(dir, "sub"), link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(other, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no args", []string{"pack"}, 2, "accepts 1 arg"},
		{"two dirs", []string{"pack", dir, dir, "-o", out}, 2, "accepts 1 arg"},
		{"no -o", []string{"pack", dir}, 2, "-o FILE"},
		{"bad flag", []string{"pack", dir, "-o", out, "--nope"}, 2, "unknown flag"},
		{"bad level", []string{"pack", dir, "-o", out + ".zst", "--level", "max"}, 2, "want fastest, default or better"},
		{"level without zstd", []string{"pack", dir, "-o", out, "--level", "better"}, 2, "--level is for zstd"},
		{"zstd with .tar", []string{"pack", dir, "-o", out, "--zstd"}, 2, "name it x.tar.zst"},
		{"gzip name", []string{"pack", dir, "-o", out + ".gz"}, 2, "not .gz"},
		{"into DIR", []string{"pack", dir, "-o", filepath.Join(dir, "x.tar")}, 2, "it would pack itself"},
		{"into a subdirectory", []string{"pack", dir, "-o", filepath.Join(dir, "sub", "deep", "x.tar")}, 2, "it would pack itself"},
		{"into DIR through a symlink", []string{"pack", dir, "-o", filepath.Join(link, "x.tar")}, 2, "it would pack itself"},
		{"into DIR through ..", []string{"pack", dir, "-o", filepath.Join(dir, "sub", "..", "x.tar")}, 2, "it would pack itself"},
		{"-o is a directory", []string{"pack", dir, "-o", filepath.Join(other, "adir")}, 2, "is a directory"},
		{"-o is DIR", []string{"pack", dir, "-o", dir}, 2, "is a directory"},
		{"-o in a missing directory", []string{"pack", dir, "-o", filepath.Join(other, "missing", "x.tar")}, 2, "missing"},
		{"missing DIR", []string{"pack", filepath.Join(other, "nope"), "-o", out}, 1, "no such file or directory"},
		{"DIR is a file", []string{"pack", filepath.Join(dir, "a"), "-o", out}, 1, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(tc.args...)
			if code != tc.code || stdout != "" {
				t.Errorf("exit %d (want %d), stdout %q", code, tc.code, stdout)
			}
			if !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "iopath: pack") {
				t.Errorf("stderr %q, want one line with %q", stderr, tc.want)
			}
		})
	}
	for _, p := range []string{out, filepath.Join(dir, "x.tar"), filepath.Join(dir, "sub", "x.tar")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	packNoTemp(t, other)
	packNoTemp(t, dir)
}

func TestPackCLIInterrupted(t *testing.T) {
	dir, _ := packTestTree(t)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "x.tar.zst")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"pack", dir, "-o", out}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("archive written despite the interrupt")
	}
	packNoTemp(t, outDir)
}
