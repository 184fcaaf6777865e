package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// walkRef is what the walk must produce, computed with filepath.WalkDir
// and the rules the walker documents: files in lexical order, special
// files (and symlinks to them) as ErrNotRegular, every other symlink
// handed to the engine, unreadable directories as errors.
func walkRef(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			out = append(out, "err "+path)
			return nil
		case d.IsDir():
			return nil
		}
		typ := d.Type()
		if typ&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(path); err == nil {
				typ = fi.Mode().Type()
			}
		}
		if typ&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			out = append(out, "notregular "+path)
			return nil
		}
		out = append(out, "file "+path)
		return nil
	})
	return out
}

func walkGot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	var w walker
	w.walk(root, func(it item) bool {
		switch {
		case it.err == nil:
			out = append(out, "file "+it.path)
		case errors.Is(it.err, ErrNotRegular):
			out = append(out, "notregular "+it.path)
		default:
			var pe *fs.PathError
			if !errors.As(it.err, &pe) || pe.Path != it.path {
				t.Errorf("%s: error %v is not an *fs.PathError naming the path", it.path, it.err)
			}
			out = append(out, "err "+it.path)
		}
		return true
	})
	return out
}

// oddTree makes a tree with names whose byte order differs from other
// orders, nested directories, symlinks of every kind and special files.
func oddTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, name := range []string{"B", "a", "a.b", "a-b", "a0", "é", "Z/z", "a_dir/x", "a_dir/deeper/y", "a_dir/deeper/deepest/z", "empty_dir/", "zz/.hidden"} {
		p := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"l_file": "a", "l_dir": "a_dir", "l_dangling": "nowhere", "l_loop": "l_loop", "l_fifo": "fifo"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A socket path must be short: make it under a short temp dir.
	l, err := net.Listen("unix", filepath.Join(root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return root
}

func TestWalkerMatchesWalkDir(t *testing.T) {
	root := oddTree(t)
	want := walkRef(t, root)
	for _, unknown := range []bool{false, true} {
		t.Run(fmt.Sprintf("unknown=%v", unknown), func(t *testing.T) {
			walkForceUnknown = unknown
			defer func() { walkForceUnknown = false }()
			got := walkGot(t, root)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("walk:\n%s\nwant (filepath.WalkDir):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// A root spelled with ./ or a trailing slash gives WalkDir's cleaned paths.
func TestWalkerRootSpelling(t *testing.T) {
	root := oddTree(t)
	want := walkRef(t, root)
	t.Chdir(filepath.Dir(root))
	base := filepath.Base(root)
	for _, spelling := range []string{"./" + base, base + "/", base + "//", root + "/."} {
		got := walkGot(t, spelling)
		if len(got) != len(want) {
			t.Fatalf("%q: %d entries, want %d", spelling, len(got), len(want))
		}
		for i := range got {
			g := strings.SplitN(got[i], " ", 2)
			w := strings.SplitN(want[i], " ", 2)
			abs, _ := filepath.Abs(g[1])
			if g[0] != w[0] || abs != w[1] || strings.Contains(g[1], "//") || strings.Contains(g[1], "/./") {
				t.Errorf("%q: entry %d is %q, want %q (cleaned)", spelling, i, got[i], want[i])
			}
		}
	}
}

// A symlink to a directory given as the root is followed (one found by
// the walk is not: see TestWalkerMatchesWalkDir).
func TestWalkerSymlinkRoot(t *testing.T) {
	root := oddTree(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(root, "a_dir"), link); err != nil {
		t.Fatal(err)
	}
	got := walkGot(t, link)
	want := []string{"file " + link + "/deeper/deepest/z", "file " + link + "/deeper/y", "file " + link + "/x"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("walk of a symlinked root:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A directory larger than the getdents buffer takes several calls; every
// entry is listed once.
func TestWalkerBigDirectory(t *testing.T) {
	dir := t.TempDir()
	const n = 3000
	long := strings.Repeat("n", 100)
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s%05d", long, i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := walkGot(t, dir)
	if len(got) != n {
		t.Fatalf("listed %d entries, want %d", len(got), n)
	}
	for i, g := range got {
		if want := fmt.Sprintf("file %s/%s%05d", dir, long, i); g != want {
			t.Fatalf("entry %d is %q, want %q", i, g, want)
		}
	}
}

// A root that is not there, or not a directory, is one error for the root.
func TestWalkerBadRoot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for _, root := range []string{filepath.Join(dir, "missing"), file} {
		got := walkGot(t, root)
		if len(got) != 1 || got[0] != "err "+root {
			t.Errorf("walk of %s: %q, want one error for the root", root, got)
		}
	}
}

// The walk stops as soon as emit says so.
func TestWalkerStops(t *testing.T) {
	root := oddTree(t)
	var w walker
	n := 0
	if w.walk(root, func(item) bool { n++; return n < 3 }) {
		t.Error("walk reported completion after emit returned false")
	}
	if n != 3 {
		t.Errorf("emit called %d times after returning false at the 3rd", n)
	}
}
