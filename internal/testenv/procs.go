package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ChildrenNamed lists the live processes whose command name (comm) is
// name and whose parent is this process: what a test checks is gone once
// the code under test stopped its tools (a perf record it started).
func ChildrenNamed(name string) []int {
	var out []int
	forProcs(func(pid int, stat []byte) {
		open, close := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || close < open || string(stat[open+1:close]) != name {
			return
		}
		f := strings.Fields(string(stat[close+1:]))
		if len(f) >= 2 && f[0] != "Z" {
			if ppid, _ := strconv.Atoi(f[1]); ppid == os.Getpid() {
				out = append(out, pid)
			}
		}
	})
	return out
}

// ProcsMentioning lists the live processes whose command line or
// environment holds s (a test's private TMPDIR, say), as "PID: ARGV".
func ProcsMentioning(s string) []string {
	var out []string
	forProcs(func(pid int, stat []byte) {
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && bytes.HasPrefix(stat[i+1:], []byte(" Z")) {
			return // a zombie: gone, waiting to be reaped
		}
		dir := filepath.Join("/proc", strconv.Itoa(pid))
		cl, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		env, _ := os.ReadFile(filepath.Join(dir, "environ"))
		if bytes.Contains(cl, []byte(s)) || bytes.Contains(env, []byte(s)) {
			out = append(out, strconv.Itoa(pid)+": "+strings.ReplaceAll(string(cl), "\x00", " "))
		}
	})
	return out
}

// WaitNoProcs fails t when a process mentioning s (ProcsMentioning) is
// still alive after a grace of two seconds (a killed process takes a
// moment to go).
func WaitNoProcs(t testing.TB, s string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := ProcsMentioning(s)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forProcs calls fn with each process's pid and /proc/PID/stat.
func forProcs(fn func(pid int, stat []byte)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			fn(pid, stat)
		}
	}
}
