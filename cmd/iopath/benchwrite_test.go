package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
)

func TestBenchWriteJSON(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "new.dat")
	out, errOut, code := runCLI("bench", "--rw", "randwrite", "--write-file", target, "--size", "2MiB", "--bs", "64k",
		"--sync", "every:8", "--runs", "1", "--qd", "4", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(rep.Results) != 5 {
		t.Fatalf("%d rows, want one per write engine", len(rep.Results))
	}
	uringOK := features.Probe().IOURing
	for _, r := range rep.Results {
		if r.Engine == "io_uring" && !uringOK.Available {
			// The row must say why, and the others must still run.
			if !strings.Contains(r.Error, uringOK.Reason) {
				t.Errorf("io_uring unavailable (%s) but its row says %q", uringOK.Reason, r.Error)
			}
			continue
		}
		if r.Error != "" || r.Pattern != "randwrite" || r.Sync != "every:8" || r.Cache != "warm" {
			t.Errorf("%s: error %q pattern %q sync %q cache %q", r.Engine, r.Error, r.Pattern, r.Sync, r.Cache)
		}
		if r.ChecksumOK == nil || !*r.ChecksumOK || r.SyncsPerPass != 4 {
			t.Errorf("%s: verified %v, %d syncs per pass (want 4)", r.Engine, r.ChecksumOK, r.SyncsPerPass)
		}
	}
	// The file the benchmark made is gone, and nothing else is left.
	if left := listTree(dir); len(left) > 0 {
		t.Errorf("left in %s: %v", dir, left)
	}
}

func TestBenchWriteTable(t *testing.T) {
	out, errOut, code := runCLI("bench", "--rw", "write", "--size", "1MiB", "--sync", "end", "--runs", "1",
		"--engines", "pwrite,io_uring", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	words := strings.Join(strings.Fields(out), " ") // the notes wrap where they like
	for _, want := range []string{"pwrite", "io_uring", "sync end", "syncs", "sync P99", "ok",
		"durability (--sync end", "back from the device"} {
		if !strings.Contains(words, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchWriteSafety: bench writes only to files it makes.
func TestBenchWriteSafety(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	os.WriteFile(mine, []byte("precious"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench", "--rw", "write", mine}, 2, "never to FILE"},
		{[]string{"bench", "--rw", "write", "--write-file", mine}, 2, "exists"},
		{[]string{"bench", "--rw", "write", "--write-file", fifo, "--force"}, 1, "regular files only"},
		{[]string{"bench", "--rw", "write", "--write-file", dir, "--force"}, 1, "regular files only"},
		{[]string{"bench", "--rw", "write", "--write-file", "/dev/null", "--force"}, 1, "regular files only"},
		{[]string{"bench", "--rw", "write", "--tree"}, 2, "does not write"},
		{[]string{"bench", "--sync", "end"}, 2, "writes only"},
		{[]string{"bench", "--write-file", filepath.Join(dir, "x")}, 2, "writes only"},
		{[]string{"bench", "--rw", "sideways"}, 2, "--rw"},
		{[]string{"bench", "--rw", "write", "--sync", "every:0"}, 2, "--sync"},
		{[]string{"bench", "--rw", "write", "--sync", "sometimes"}, 2, "--sync"},
		{[]string{"bench", "--rw", "write", "--pattern", "rand"}, 2, "not both"},
		{[]string{"bench", "--rw", "write", "--consume", "none"}, 2, "--consume"},
		{[]string{"bench", "--rw", "write", "--sync", "direct", "--cache", "warm"}, 2, "direct"},
		{[]string{"bench", "--rw", "write", "--engines", "readv"}, 2, "unknown write engine"},
		{[]string{"bench", "--rw", "write", "--size", "1000TiB", "--dir", dir}, 1, "no space"},
	} {
		t.Run(strings.Join(c.args[1:], " "), func(t *testing.T) {
			_, errOut, code := runCLI(c.args...)
			if code != c.code || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and one line saying %q", code, errOut, c.code, c.want)
			}
		})
	}
	if b, _ := os.ReadFile(mine); string(b) != "precious" {
		t.Errorf("the existing file was changed: %q", b)
	}
	if left := listTree(dir); len(left) != 2 {
		t.Errorf("files appeared in %s: %v", dir, left)
	}
}

// TestBenchWriteForce: --force lets --write-file name an existing file,
// which is written over and kept.
func TestBenchWriteForce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old")
	os.WriteFile(path, make([]byte, 1<<20), 0o644)
	_, errOut, code := runCLI("bench", "--rw", "write", "--write-file", path, "--force", "--runs", "1", "--engines", "pwrite")
	if code != 0 || !strings.Contains(errOut, "overwriting") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 1<<20 {
		t.Errorf("the file after: %v %v", st, err)
	}
}

// TestInterruptBenchWrite: SIGINT during a write benchmark removes the
// file it made and ends its children.
func TestInterruptBenchWrite(t *testing.T) {
	dir := t.TempDir()
	p := startCLIProc(t, nil, nil, "bench", "--rw", "write", "--size", "32MiB", "--runs", "100",
		"--engines", "pwrite,mmap", "--sync", "dsync", "--write-file", filepath.Join(dir, "w.dat"))
	p.waitFor("a benchmark child", func() bool { return hasChild(p.cmd.Process.Pid) })
	p.checkInterrupted(p.interrupt(false), "interrupted", dir)
}
