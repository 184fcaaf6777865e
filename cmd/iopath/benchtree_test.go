package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/bench"
)

func TestBenchTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if _, errOut, code := runCLI("gen", "--tree", dir, "--files", "300", "--size", "1KiB-8KiB"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLI("bench", "--tree", dir, "--runs", "1", "--min-time", "0", "--cache", "warm,cold",
		"--engines", "readfile,raw,io_uring,archive", "--workers", "1,2", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if rep.Tree == nil || rep.Tree.Files != 300 { // gen's marker is not one of them
		t.Fatalf("tree %+v", rep.Tree)
	}
	// readfile and archive once, raw and io_uring at 1 and 2 workers, × 2 caches.
	if len(rep.Results) != 12 {
		t.Errorf("%d rows, want 12", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Error != "" && !strings.Contains(r.Error, "not supported") {
			t.Errorf("%s ×%d %s: %s", r.Engine, r.Workers, r.Cache, r.Error)
		}
	}
	// A temporary pack was made for the archive engine and removed.
	if rep.Tree.Archive == "" {
		t.Error("no archive for the archive engine")
	} else if _, err := os.Stat(rep.Tree.Archive); err == nil {
		t.Errorf("temporary pack %s left behind", rep.Tree.Archive)
	}

	// However DIR is spelled, the archive's member names match the files.
	if _, errOut, code := runCLI("bench", "--tree", dir+"/./", "--runs", "1", "--min-time", "0", "--cache", "warm",
		"--engines", "raw,archive"); code != 0 {
		t.Errorf("DIR/./: exit %d: %s", code, errOut)
	}
	// A bad --pack is refused before anything runs.
	if _, errOut, code := runCLI("bench", "--tree", dir, "--pack", dir, "--engines", "raw,archive"); code == 0 || !strings.Contains(errOut, "not a regular file") {
		t.Errorf("--pack DIR: exit %d: %s", code, errOut)
	}

	// raw makes 3 syscalls a file (openat, read, close), shown with --wide.
	table, errOut, code := runCLI("bench", "--tree", dir, "--runs", "1", "--min-time", "0", "--cache", "warm", "--engines", "raw", "--wide")
	if code != 0 || !strings.Contains(table, "files/s") || !strings.Contains(table, "syscalls/file") || !strings.Contains(table, " 3.0") {
		t.Errorf("table: exit %d (%s):\n%s", code, errOut, table)
	}
	// A tree speaks every format.
	for format, want := range map[string]string{"gobench": "BenchmarkTree/engine=raw/cache=warm \t1 \t", "csv": "\nraw,warm,", "markdown": "| raw | warm |"} {
		out, errOut, code := runCLI("bench", "--tree", dir, "--runs", "1", "--min-time", "0", "--cache", "warm", "--engines", "raw", "--format", format)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--format %s: exit %d (%s), output lacks %q:\n%s", format, code, errOut, want, out)
		}
	}
}

// bench --tree --html writes the tree's page beside the table; an
// --html that is also the --json, or in a missing directory, is refused
// before anything runs.
func TestBenchTreeHTML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if _, errOut, code := runCLI("gen", "--tree", dir, "--files", "50", "--size", "1KiB"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errOut)
	}
	html := filepath.Join(t.TempDir(), "tree.html")
	out, errOut, code := runCLI("bench", "--tree", dir, "--runs", "1", "--min-time", "0", "--cache", "warm", "--engines", "raw,readfile", "--html", html)
	if code != 0 || !strings.Contains(out, "files/s") || !strings.Contains(errOut, "wrote "+html) {
		t.Fatalf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", `data-chart="files-per-s" data-series="2"`, `data-chart="cpu-per-1k-files"`,
		"Content-Security-Policy", "<th>files/s</th>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, args := range [][]string{
		{"bench", "--tree", dir, "--html", html, "--json", html, "--force"},
		{"bench", "--tree", dir, "--html", filepath.Join(dir, "missing", "t.html")},
	} {
		if _, errOut, code := runCLI(args...); code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line", args, code, errOut)
		}
	}
}

func TestBenchTreeTemporary(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	out, errOut, code := runCLI("bench", "--tree", "--files", "200", "--dist", "2KiB", "--runs", "1", "--min-time", "0",
		"--cache", "warm", "--engines", "raw")
	if code != 0 || !strings.Contains(out, "temporary") || !strings.Contains(errOut, "temporary tree of 200 files") {
		t.Fatalf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
	if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestBenchTreeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"bench", "--tree", dir, "--fio"},
		{"bench", "--tree", dir, "--format", "html"},
		{"bench", "--tree", dir, "--files", "10"},
		{"bench", "--tree", "--files", "0"},
		{"bench", "--tree", "--dist", "huge"},
		{"bench", "--tree", dir, "--cache", "direct"},
		{"bench", "--tree", dir, "--engines", "nope"},
		{"bench", "--tree", dir, "--pool", "0"},
	} {
		_, errOut, code := runCLI(args...)
		if code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line", args, code, errOut)
		}
	}
	_, errOut, code := runCLI("bench", "--tree", filepath.Join(dir, "missing"))
	if code != 1 || !strings.Contains(errOut, "missing") {
		t.Errorf("missing DIR: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCLI("bench", "--tree", "/proc/self/net", "--runs", "1")
	if code != 1 || !strings.Contains(errOut, "/proc/self/net") || !strings.Contains(errOut, "no stable size to benchmark") {
		t.Errorf("a procfs DIR: exit %d, %q", code, errOut)
	}
}
