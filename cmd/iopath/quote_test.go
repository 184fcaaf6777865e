package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPathsQuoted: a file name with a newline or an escape byte, printed
// raw, splits a line of output in two or drives the terminal. Every
// command prints such a name Go-quoted, as ls does, on one line.
func TestPathsQuoted(t *testing.T) {
	const weird = "a\nb\x1b[31m"
	dir := filepath.Join(t.TempDir(), weird)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "data")
	tree := filepath.Join(dir, "tree")
	quoted := func(p string) string { return strconv.Quote(p) }

	check := func(t *testing.T, what, out string, want ...string) {
		t.Helper()
		if strings.Contains(out, weird) || strings.Contains(out, "\x1b") {
			t.Errorf("%s prints the name raw:\n%s", what, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s does not print %s:\n%s", what, w, out)
			}
		}
	}

	_, errOut, code := runCLI("gen", file, "--size", "1MiB")
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errOut)
	}
	check(t, "gen", errOut, "wrote 1MiB to "+quoted(file))

	_, errOut, code = runCLI("gen", "--tree", tree, "--files", "3", "--size", "1KiB")
	if code != 0 {
		t.Fatalf("gen --tree: exit %d: %s", code, errOut)
	}
	check(t, "gen --tree", errOut, "in "+quoted(tree))

	html := filepath.Join(dir, "r.html")
	out, errOut, code := runCLI("bench", file, "--runs", "1", "--engines", "pread", "--cache", "warm",
		"--min-time", "0", "--html", html)
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errOut)
	}
	check(t, "bench", out, "file      "+quoted(file)+" (1MiB)")
	check(t, "bench's stderr", errOut, "wrote "+quoted(html))
	out, _, code = runCLI("bench", file, "--runs", "1", "--engines", "pread", "--cache", "warm",
		"--min-time", "0", "--format", "markdown")
	if code != 0 {
		t.Fatalf("bench --format markdown: exit %d", code)
	}
	check(t, "bench --format markdown", out)

	out, errOut, code = runCLI("bench", "--tree", tree, "--runs", "1", "--engines", "readfile", "--cache", "warm",
		"--min-time", "0")
	if code != 0 {
		t.Fatalf("bench --tree: exit %d: %s", code, errOut)
	}
	check(t, "bench --tree", out, "tree      "+quoted(tree))

	pack := filepath.Join(dir, "t.tar")
	_, errOut, code = runCLI("pack", tree, "-o", pack)
	if code != 0 {
		t.Fatalf("pack: exit %d: %s", code, errOut)
	}
	check(t, "pack", errOut, "into "+quoted(pack))

	out, errOut, code = runCLI("advise", "--budget", adviseTestBudget, file)
	if code != 0 {
		t.Fatalf("advise: exit %d: %s", code, errOut)
	}
	check(t, "advise", out, quoted(file)+": one file")
}
